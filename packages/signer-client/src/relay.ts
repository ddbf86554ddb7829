/**
 * Relay of MPC envelopes for parties that are mobile devices (DESIGN §1, §5; proto
 * `custodian/v1/relay.proto`). Devices connect out to the coordinator over WebSocket; server
 * signers talk to the coordinator over libp2p. The coordinator opens one `/custodian/relay/1`
 * stream to each server signer of a ceremony that has device parties; both directions then carry
 * length-prefixed `RelayFrame { peer_id, envelope }` frames:
 * - signer → coordinator: `peer_id` = the destination device's MPC peer id;
 * - coordinator → signer: `peer_id` = the source device's MPC peer id (informational only).
 *
 * The relay is untrusted: `envelope` is a SignedEnvelope whose point-to-point payloads are
 * encrypted to the receiver (X25519 + ChaCha20-Poly1305, `@custodian/wire` envelope.ts) and which
 * is signed by its sender's Ed25519 identity; the runner authenticates it (`deliver(undefined, …)`).
 *
 * This module holds the frames of both ends and the coordinator's end ({@link createCoordinatorRelay});
 * the signer's end is `attachSignerRelay` of `@custodian/signer` (signer-relay.ts). It also holds the
 * codecs of the device WebSocket protocol (`DeviceFrame`), shared by the coordinator's device hub and
 * `@custodian/mobile`.
 */

import { canonicalEncode } from '@custodian/crypto';
import { DEFAULT_LIMITS, decodeMessage, encodeMessage, messageType, type WireLimits } from '@custodian/wire';
import type { Stream } from '@libp2p/interface';
import { lpStream } from '@libp2p/utils';
import { multiaddr } from '@multiformats/multiaddr';
import { sha256 } from '@noble/hashes/sha2.js';
import type { Logger } from 'pino';
import { type Host, writeDeadline } from './host.js';

export const RELAY_PROTOCOL = '/custodian/relay/1';

const RelayFrameType = messageType('custodian.v1.RelayFrame');
const DeviceFrameType = messageType('custodian.v1.DeviceFrame');

/** `custodian.v1.RelayFrame`. */
export interface RelayFrame {
  /** MPC peer id (libp2p Ed25519 peer id string) of the device at the other end. */
  peerId: string;
  /** SignedEnvelope bytes (opaque to the relay). */
  envelope: Uint8Array;
}

/** `custodian.v1.DeviceFrame` (exactly one member set). */
export interface DeviceFrame {
  challenge?: { nonce: Uint8Array; coordinatorPeerId: string };
  hello?: { deviceId: string; mpcPeerId: string; signature: Uint8Array };
  /** `pendingApprovals`: approval requests pending for the device, sent right after (absent: 0). */
  welcome?: { pendingApprovals?: number };
  relay?: RelayFrame;
  invitation?: { signedControl: Uint8Array };
  answer?: { ceremonyId: Uint8Array; response: Uint8Array };
  approvalRequest?: { requestId: string; intentJson: string };
  approvalAnswer?: { requestId: string; approvalJson: string };
  error?: { code: string; message: string };
}

const MEMBERS = [
  'challenge',
  'hello',
  'welcome',
  'relay',
  'invitation',
  'answer',
  'approvalRequest',
  'approvalAnswer',
  'error',
] as const;

/** Encode a RelayFrame. @throws WireSchemaError on a wrong field type */
export function encodeRelayFrame(f: RelayFrame): Uint8Array {
  return encodeMessage(RelayFrameType, { peerId: f.peerId, envelope: f.envelope });
}

/** Decode a RelayFrame; undefined when malformed, oversized, or missing a field. Never throws. */
export function decodeRelayFrame(bytes: unknown, limits: WireLimits = DEFAULT_LIMITS): RelayFrame | undefined {
  const r = decodeMessage(RelayFrameType, bytes, limits);
  if (!r.ok) return undefined;
  const v = r.value as unknown as { peerId?: string; envelope?: Uint8Array };
  if (typeof v.peerId !== 'string' || v.peerId === '' || !(v.envelope instanceof Uint8Array) || v.envelope.length === 0)
    return undefined;
  return { peerId: v.peerId, envelope: v.envelope };
}

/** Encode a DeviceFrame. @throws WireSchemaError on a wrong field type */
export function encodeDeviceFrame(f: DeviceFrame): Uint8Array {
  return encodeMessage(DeviceFrameType, f as Record<string, unknown>);
}

/**
 * Decode a DeviceFrame (WebSocket binary message). Never throws.
 * @returns the frame with exactly one member, or a reason
 */
export function decodeDeviceFrame(
  bytes: unknown,
  limits: WireLimits = DEFAULT_LIMITS,
): { ok: true; frame: DeviceFrame } | { ok: false; reason: string } {
  const r = decodeMessage(DeviceFrameType, bytes, limits);
  if (!r.ok) return { ok: false, reason: r.rejection.reason };
  let obj: Record<string, unknown>;
  try {
    obj = DeviceFrameType.toObject(r.value, { longs: Number, defaults: false, arrays: true, oneofs: false });
  } catch (e) {
    return { ok: false, reason: `DeviceFrame: ${e instanceof Error ? e.message.slice(0, 120) : 'conversion'}` };
  }
  const present = MEMBERS.filter((m) => obj[m] !== undefined && obj[m] !== null);
  if (present.length !== 1) return { ok: false, reason: 'DeviceFrame: exactly one member expected' };
  const m = present[0] as (typeof MEMBERS)[number];
  // Fill proto3 defaults of the chosen member so callers see complete records.
  const v = { ...(obj[m] as Record<string, unknown>) };
  const fields = (DeviceFrameType.fields[m]?.resolvedType as { fields?: Record<string, { type: string }> } | null)
    ?.fields;
  for (const [name, f] of Object.entries(fields ?? {})) {
    if (v[name] === undefined) v[name] = f.type === 'bytes' ? new Uint8Array(0) : f.type === 'string' ? '' : undefined;
  }
  if (m === 'relay' && v.peerId === '') return { ok: false, reason: 'RelayFrame: peer_id missing' };
  return { ok: true, frame: { [m]: v } as DeviceFrame };
}

/**
 * Digest a device signs (P-256, 64-byte r‖s, `deviceSign` of `@custodian/wire`) to answer the
 * coordinator's challenge: SHA-256(canonicalEncode(["custodian/v1/device-hello", nonce,
 * coordinatorPeerId, deviceId, mpcPeerId])). Binding the coordinator's peer id and the device's MPC
 * peer id stops a relay of the answer to another coordinator or for another MPC identity.
 */
export function deviceHelloDigest(
  nonce: Uint8Array,
  coordinatorPeerId: string,
  deviceId: string,
  mpcPeerId: string,
): Uint8Array {
  return sha256(canonicalEncode(['custodian/v1/device-hello', nonce, coordinatorPeerId, deviceId, mpcPeerId]));
}

/** Coordinator side of the relay: one stream per server signer, opened on demand. */
export interface CoordinatorRelay {
  /** Open (or reuse) the relay stream to a signer. @throws Error when it cannot be dialled */
  ensure(signerPeerId: string): Promise<void>;
  /** Forward a device's envelope to a signer. */
  send(signerPeerId: string, frame: RelayFrame): Promise<void>;
  close(): void;
}

/**
 * Open relay streams from the coordinator's host. `addrs(peerId)` gives a signer's dial addresses;
 * frames the signer sends (to devices) are handed to `onFrame(fromSignerPeerId, frame)`.
 */
export function createCoordinatorRelay(
  host: Host,
  opts: {
    addrs: (peerId: string) => readonly string[];
    maxFrameBytes: number;
    log: Logger;
    onFrame: (fromSignerPeerId: string, frame: RelayFrame) => void;
  },
): CoordinatorRelay {
  const streams = new Map<string, Promise<{ lp: ReturnType<typeof lpStream>; stream: Stream }>>();
  const chains = new Map<string, Promise<void>>();
  const open = (peerId: string) => {
    const existing = streams.get(peerId);
    if (existing) return existing;
    type Open = { lp: ReturnType<typeof lpStream>; stream: Stream };
    let p: Promise<Open> | undefined;
    p = (async (): Promise<Open> => {
      const addrs = opts.addrs(peerId);
      if (addrs.length === 0) throw new Error(`signer ${peerId} has no address`);
      const stream = await host.node.dialProtocol(
        addrs.map((a) => multiaddr(`${a}/p2p/${peerId}`)),
        RELAY_PROTOCOL,
        { signal: AbortSignal.timeout(5000) },
      );
      const lp = lpStream(stream, { maxDataLength: opts.maxFrameBytes });
      void (async () => {
        try {
          for (;;) {
            const bytes = (await lp.read()).subarray();
            const f = decodeRelayFrame(bytes, { ...DEFAULT_LIMITS, maxMessageBytes: opts.maxFrameBytes });
            if (!f) {
              opts.log.warn({ peer: peerId, code: 'malformed' }, 'relay frame from signer rejected');
              continue;
            }
            opts.onFrame(peerId, f);
          }
        } catch {
          // stream ended
        } finally {
          if (streams.get(peerId) === p) streams.delete(peerId);
        }
      })();
      return { lp, stream };
    })();
    const opened = p;
    streams.set(peerId, opened);
    opened.catch(() => {
      if (streams.get(peerId) === opened) streams.delete(peerId);
    });
    return opened;
  };
  return {
    async ensure(peerId) {
      await open(peerId);
    },
    send(peerId, frame) {
      const prev = chains.get(peerId) ?? Promise.resolve();
      const next = prev.then(async () => {
        const s = await open(peerId);
        await s.lp.write(encodeRelayFrame(frame), { signal: writeDeadline() });
      });
      chains.set(
        peerId,
        next.catch(() => undefined),
      );
      return next;
    },
    close() {
      for (const p of streams.values()) void p.then((s) => s.stream.abort(new Error('closed'))).catch(() => undefined);
      streams.clear();
    },
  };
}
