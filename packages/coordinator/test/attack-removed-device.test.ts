/**
 * Attack (issue #26 item 6): a removed device keeps its WebSocket open and keeps receiving transfer
 * intents (amounts, destinations). A real coordinator (PGlite, signing services with the device hub
 * on its real HTTP socket), approved devices connected over a real WebSocket speaking the device
 * protocol (challenge → P-256-signed hello → welcome), the admin API to remove / reject devices,
 * and the REST API to create transfers that need approval.
 *
 * Must hold: removing or rejecting a device closes its socket at once (close code 4403 with a reason)
 * and drops its approval queue; approval requests and ceremony invitations go only to devices whose
 * status is APPROVED at send time (a status changed behind the hub — another replica — counts too);
 * a removed device reconnecting is refused at hello.
 */

import { randomBytes } from 'node:crypto';
import { type DeviceFrame, decodeDeviceFrame, deviceHelloDigest, encodeDeviceFrame } from '@custodian/signer-client';
import { DEFAULT_LIMITS, deviceSign, Outcome, openControlRequest, signPolicy } from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { DEVICE_MAX_FRAME_BYTES, DEVICE_WS_PATH } from '../src/devices/hub.js';
import { enrollmentBody, type PhoneKeys, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, type Json, startHarness } from './helpers.js';

const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const ETH = 10n ** 18n;

/** A phone as the hub sees it: a raw `ws` client speaking the device protocol. */
interface Phone {
  ws: WebSocket;
  frames: DeviceFrame[];
  closed: Promise<{ code: number; reason: string }>;
  welcomed: Promise<boolean>;
}

describe('a removed or rejected device loses its socket and every approval request', () => {
  let h: Harness;
  let assetId = '';
  let blockchainId = '';
  const adminDevice = p256.utils.randomSecretKey();
  let adminDeviceId = '';
  const phones: Phone[] = [];

  const P = () => `/admin/v1/profiles/${h.profileId}`;
  const A = () => `/api/v1/profiles/${h.profileId}`;

  /** The phone keys (MPC peer id pinned at enrollment) of each device key. */
  const keysOf = new Map<Uint8Array, PhoneKeys>();

  async function enroll(sk: Uint8Array, name: string, approve = true): Promise<string> {
    const keys = await phoneKeys(sk);
    keysOf.set(sk, keys);
    const e = await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(keys, name) });
    expect(e.status).toBe(201);
    if (approve) {
      const a = await h.req('POST', `/admin/v1/devices/${e.body.device_id}/approve`, {
        token: h.adminToken,
        body: { fingerprint: e.body.fingerprint, user_id: await userIdOf(h, ADMIN_EMAIL) },
      });
      expect(a.status).toBe(200);
    }
    return e.body.device_id;
  }

  /** A fresh master key whose approvers are `deviceIds`, and a funded wallet on it. */
  async function walletFor(deviceIds: string[]): Promise<string> {
    await h.c.signers.masterKeys.insertMasterKey({
      ceremonyId: null,
      threshold: 2,
      parties: [
        { kind: 'server', id: crypto.randomUUID(), peer: 'x', address: null },
        ...deviceIds.map((id, i) => ({ kind: 'device' as const, id, peer: `d${i}`, address: null })),
      ],
      secp256k1: {
        publicKey: secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true),
        chainCode: randomBytes(32),
      },
      ed25519: { publicKey: ed25519.getPublicKey(ed25519.utils.randomSecretKey()), chainCode: randomBytes(32) },
    });
    const w = await h.req('POST', `${A()}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: { blockchain_ids: [blockchainId], name: 'ops' },
    });
    expect(w.status).toBe(201);
    await h.c.wallets.balances.setBalance(w.body.wallet_id, assetId, (1000n * ETH).toString());
    return w.body.wallet_id;
  }

  async function transfer(walletId: string, amount = '1') {
    const t = await h.req('POST', `${A()}/transfers`, {
      key: h.apiKey,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: { wallet_id: walletId, asset_id: assetId, destination_address: DEST, amount },
    });
    expect(t.status).toBe(201);
    expect(t.body.status).toBe('PENDING_APPROVAL');
    return t.body;
  }

  /** Connect `deviceId` with its key over a real WebSocket and answer the hub's challenge. */
  async function connect(deviceId: string, sk: Uint8Array): Promise<Phone> {
    const mpcPeerId = keysOf.get(sk)?.mpcPeerId;
    if (mpcPeerId === undefined) throw new Error('connect: enrol the device first');
    const url = `${h.url.replace(/^http/, 'ws')}${DEVICE_WS_PATH}`;
    const ws = new WebSocket(url, { maxPayload: DEVICE_MAX_FRAME_BYTES });
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
        ws.send(encodeDeviceFrame({ hello: { deviceId, mpcPeerId, signature: deviceSign(digest, sk) } }));
      }
      if (d.frame.welcome) welcome(true);
    });
    const phone = { ws, frames, closed, welcomed };
    phones.push(phone);
    return phone;
  }

  const requestsOf = (p: Phone) => p.frames.filter((f) => f.approvalRequest).map((f) => f.approvalRequest!);
  /** Ceremony invitations (a StartCeremony); the hub also pushes signed policy versions and revocations (#22) in invitation frames. */
  const invitationsOf = (p: Phone) =>
    p.frames.filter((f) => {
      if (!f.invitation) return false;
      const key = peerIdFromString(h.c.signing?.peerId as string).publicKey?.raw as Uint8Array;
      const o = openControlRequest(f.invitation.signedControl, key);
      return !o.ok || (o.value.policySync === undefined && o.value.revokeApprover === undefined);
    });
  const isOpen = (p: Phone) => p.ws.readyState === WebSocket.OPEN;

  async function until(cond: () => boolean, ms = 5000): Promise<boolean> {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end) return false;
      await new Promise((r) => setTimeout(r, 20));
    }
    return true;
  }

  beforeAll(async () => {
    h = await startHarness({
      masterKey: false,
      coordinator: {
        signing: { enabled: true, presignaturePool: 0 },
        transfers: { runPipeline: false, approvalWindowMs: 3600_000 },
      },
    });
    adminDeviceId = await enroll(adminDevice, 'admin phone');
    const chains = await h.req('GET', `${A()}/blockchains?page_size=200`, { key: h.apiKey });
    blockchainId = chains.body.data.find((b: Json) => b.key === 'ethereum-local').blockchain_id;
    const assets = await h.req('GET', `${A()}/assets?page_size=200`, { key: h.apiKey });
    assetId = assets.body.data.find((a: Json) => a.blockchain === 'ethereum-local' && a.symbol === 'ETH').asset_id;
    // every transfer above 0 needs one approval (any wallet of the profile)
    const c = await h.req('POST', `${P()}/policies`, {
      token: h.adminToken,
      body: {
        name: 'ETH approvals',
        scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: assetId },
        whitelist: [DEST],
        per_transaction_limit: (100n * ETH).toString(),
        daily_limit: (100_000n * ETH).toString(),
        approvals: { quorum: 1, above_amount: '0' },
      },
    });
    expect(c.status).toBe(201);
    const signed = signPolicy(c.body.versions[0].document, adminDeviceId, adminDevice);
    const s = await h.req('POST', `${P()}/policies/${c.body.policy_id}/versions/1/signature`, {
      token: h.adminToken,
      body: { device_id: adminDeviceId, signature: signed.signature },
    });
    expect(s.status).toBe(200);
  }, 90_000);

  afterAll(async () => {
    for (const p of phones) p.ws.terminate();
    await h?.close();
  });

  it('removing a connected approver closes its socket at once, and a new transfer intent never reaches it', async () => {
    const sk = p256.utils.randomSecretKey();
    const victim = await enroll(sk, 'lost phone');
    const other = p256.utils.randomSecretKey();
    const otherId = await enroll(other, 'approver');
    const walletId = await walletFor([victim, otherId]);
    const phone = await connect(victim, sk);
    expect(await phone.welcomed).toBe(true);
    const honest = await connect(otherId, other);
    expect(await honest.welcomed).toBe(true);
    // while approved it is an approver like any other
    const before = await transfer(walletId);
    expect(await until(() => requestsOf(phone).some((r) => r.requestId.startsWith(before.transfer_id)))).toBe(true);

    const rm = await h.req('DELETE', `/admin/v1/devices/${victim}`, { token: h.adminToken });
    expect(rm.status).toBe(200);
    expect(rm.body.status).toBe('REMOVED');
    // closed at once, with a code and a reason the phone can log
    expect(await until(() => !isOpen(phone), 2000)).toBe(true);
    expect(await phone.closed).toMatchObject({ code: 4403, reason: expect.stringMatching(/REMOVED/) });
    expect(phone.frames.some((f) => f.error?.code === 'DEVICE_REVOKED')).toBe(true);

    const seen = requestsOf(phone).length;
    const after = await transfer(walletId, '2');
    // the honest approver gets it; the removed device gets nothing
    expect(await until(() => requestsOf(honest).some((r) => r.requestId.startsWith(after.transfer_id)))).toBe(true);
    expect(requestsOf(phone).length).toBe(seen);
    expect(JSON.stringify(requestsOf(phone))).not.toContain(after.transfer_id);
  });

  it('a removed device reconnecting is refused at hello and is sent no queued intent', async () => {
    const sk = p256.utils.randomSecretKey();
    const victim = await enroll(sk, 'stolen phone');
    const walletId = await walletFor([victim]);
    const t = await transfer(walletId);
    const rm = await h.req('DELETE', `/admin/v1/devices/${victim}`, { token: h.adminToken });
    expect(rm.status).toBe(200);
    const again = await connect(victim, sk);
    expect(await again.welcomed).toBe(false);
    expect((await again.closed).code).toBe(4401);
    expect(requestsOf(again).length).toBe(0);
    expect(JSON.stringify(again.frames.map((f) => f.approvalRequest ?? null))).not.toContain(t.transfer_id);
  });

  it('a status changed behind the hub (another replica) is checked at send time: no intent, socket closed', async () => {
    const sk = p256.utils.randomSecretKey();
    const victim = await enroll(sk, 'phone on replica B');
    const walletId = await walletFor([victim]);
    const phone = await connect(victim, sk);
    expect(await phone.welcomed).toBe(true);
    // another coordinator replica sharing the database removes the device; this hub is not told
    await h.c.db.query(`UPDATE devices SET status = 'REMOVED' WHERE device_id = $1`, [victim]);
    const t = await transfer(walletId);
    expect(await until(() => !isOpen(phone), 3000)).toBe(true);
    expect((await phone.closed).code).toBe(4403);
    expect(JSON.stringify(requestsOf(phone))).not.toContain(t.transfer_id);
    expect(requestsOf(phone).length).toBe(0);
  });

  it('a ceremony invitation is not sent to a device that is no longer APPROVED', async () => {
    const sk = p256.utils.randomSecretKey();
    const victim = await enroll(sk, 'phone in a drawer');
    const phone = await connect(victim, sk);
    expect(await phone.welcomed).toBe(true);
    await h.c.db.query(`UPDATE devices SET status = 'REMOVED' WHERE device_id = $1`, [victim]);
    const hub = h.c.signing!.hub;
    const answer = hub.startCeremony(victim, {
      ceremonyId: randomBytes(16),
      kind: 1,
      parties: [{ peerId: 'x' }],
      threshold: 1,
      deadlineUnixMs: Date.now() + 3000,
    });
    const res = await Promise.race([answer, new Promise<undefined>((r) => setTimeout(() => r(undefined), 1500))]);
    expect(invitationsOf(phone).length).toBe(0);
    expect(res).toMatchObject({ outcome: Outcome.REFUSED, error: expect.stringMatching(/not APPROVED/) });
    expect(await until(() => !isOpen(phone), 3000)).toBe(true);
  });

  it('a rejected device is refused at hello', async () => {
    const sk = p256.utils.randomSecretKey();
    const pending = await enroll(sk, 'unknown phone', false);
    const rj = await h.req('POST', `/admin/v1/devices/${pending}/reject`, { token: h.adminToken });
    expect(rj.status).toBe(200);
    expect(rj.body.status).toBe('REJECTED');
    const phone = await connect(pending, sk);
    expect(await phone.welcomed).toBe(false);
    expect((await phone.closed).code).toBe(4401);
  });
});
