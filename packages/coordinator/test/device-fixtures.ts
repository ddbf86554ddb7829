/**
 * Test fixtures for mobile signer devices: a phone's two keys (P-256 device key, Ed25519 MPC
 * identity), the enrollment request body with its proof of possession (`signEnrollmentProof` of
 * @custodian/wire), enrollment + approval bound to a user, and a raw `ws` client speaking the
 * device protocol (challenge → P-256-signed hello → welcome).
 */

import { type DeviceFrame, decodeDeviceFrame, deviceHelloDigest, encodeDeviceFrame } from '@custodian/signer-client';
import { DEFAULT_LIMITS, deviceSign, signEnrollmentProof } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { p256 } from '@noble/curves/nist.js';
import { WebSocket } from 'ws';
import { DEVICE_MAX_FRAME_BYTES, DEVICE_WS_PATH } from '../src/devices/hub.js';
import type { Harness, Json } from './helpers.js';

/** A phone's keys. SECRET (test keys only). */
export interface PhoneKeys {
  /** P-256 device secret key (32 bytes). */
  sk: Uint8Array;
  /** Compressed P-256 device public key, hex. */
  publicKey: string;
  /** Ed25519 seed of the MPC identity (32 bytes). */
  mpcSecretKey: Uint8Array;
  /** libp2p peer id of the MPC identity. */
  mpcPeerId: string;
}

/** Fresh phone keys; `sk` reuses a given P-256 device key. */
export async function phoneKeys(sk: Uint8Array = p256.utils.randomSecretKey()): Promise<PhoneKeys> {
  const mpc = await generateKeyPair('Ed25519');
  return {
    sk,
    publicKey: Buffer.from(p256.getPublicKey(sk, true)).toString('hex'),
    mpcSecretKey: Uint8Array.from(mpc.raw.subarray(0, 32)),
    mpcPeerId: peerIdFromPrivateKey(mpc).toString(),
  };
}

/** `POST /devices/v1/enrollments` body for `keys` (Android 14, hardware-backed key storage). */
export function enrollmentBody(keys: PhoneKeys, name: string, extra: Record<string, unknown> = {}): Json {
  return {
    name,
    platform: 'android',
    os_version: '14',
    hardware_backed_keystore: true,
    public_key: keys.publicKey,
    mpc_peer_id: keys.mpcPeerId,
    mpc_peer_proof: signEnrollmentProof(p256.getPublicKey(keys.sk, true), keys.mpcPeerId, keys.mpcSecretKey),
    ...extra,
  };
}

/** The user id of `email` (admin API, Admin session `token`). */
export async function userIdOf(h: Harness, email: string, token = h.adminToken): Promise<string> {
  const r = await h.req('GET', '/admin/v1/users?page_size=200', { token });
  const u = r.body.data.find((x: Json) => String(x.email).toLowerCase() === email.toLowerCase());
  if (u === undefined) throw new Error(`no user ${email}`);
  return u.user_id;
}

/**
 * Enrol `keys` and (unless `approve` is false) approve the device for `userId` with the Admin
 * session `token`; returns the device id.
 */
export async function enrollPhone(
  h: Harness,
  keys: PhoneKeys,
  name: string,
  o: { userId: string; approve?: boolean; token?: string },
): Promise<string> {
  const e = await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(keys, name) });
  if (e.status !== 201) throw new Error(`enrollment failed: ${e.status} ${JSON.stringify(e.body)}`);
  if (o.approve !== false) {
    const a = await h.req('POST', `/admin/v1/devices/${e.body.device_id}/approve`, {
      token: o.token ?? h.adminToken,
      body: { fingerprint: e.body.fingerprint, user_id: o.userId },
    });
    if (a.status !== 200) throw new Error(`approval failed: ${a.status} ${JSON.stringify(a.body)}`);
  }
  return e.body.device_id;
}

/** A phone as the hub sees it: a raw `ws` client speaking the device protocol. */
export interface Phone {
  ws: WebSocket;
  frames: DeviceFrame[];
  closed: Promise<{ code: number; reason: string }>;
  /** true at `Welcome`, false when the socket closes first. */
  welcomed: Promise<boolean>;
}

/**
 * Connect `deviceId` over a real WebSocket and answer the challenge with a hello naming
 * `mpcPeerId` (default: the phone's own), signed with the device key.
 */
export function connectPhone(h: Harness, deviceId: string, keys: PhoneKeys, mpcPeerId = keys.mpcPeerId): Phone {
  const ws = new WebSocket(`${h.url.replace(/^http/, 'ws')}${DEVICE_WS_PATH}`, { maxPayload: DEVICE_MAX_FRAME_BYTES });
  const frames: DeviceFrame[] = [];
  let welcome!: (ok: boolean) => void;
  const welcomed = new Promise<boolean>((r) => {
    welcome = r;
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.on('close', (code, reason) => {
      welcome(false);
      resolve({ code, reason: reason.toString() });
    });
  });
  ws.on('error', () => undefined);
  ws.on('message', (data: Buffer) => {
    const d = decodeDeviceFrame(new Uint8Array(data), { ...DEFAULT_LIMITS, maxMessageBytes: DEVICE_MAX_FRAME_BYTES });
    if (!d.ok) throw new Error(`undecodable frame from the hub: ${d.reason}`);
    frames.push(d.frame);
    const c = d.frame.challenge;
    if (c) {
      const digest = deviceHelloDigest(c.nonce, c.coordinatorPeerId, deviceId, mpcPeerId);
      ws.send(encodeDeviceFrame({ hello: { deviceId, mpcPeerId, signature: deviceSign(digest, keys.sk) } }));
    }
    if (d.frame.welcome) welcome(true);
  });
  return { ws, frames, closed, welcomed };
}
