/**
 * Issue #25 [ha]: coordinator replicas share one coordinator key. Ed25519 is deterministic and
 * `issuedUnixMs` has millisecond resolution, so two replicas sending the same body (a status, a
 * policy sync, a revocation) in the same millisecond used to send byte-identical SignedControls,
 * and the signer refused the second as a replay (CONTROL_REQUEST_REJECTED) although it was a
 * distinct, legitimate request. Each signed request now carries a random nonce.
 *
 * A real signer daemon (`startSigner`, encrypted LevelDB store) and real coordinator libp2p hosts
 * (TCP, noise, yamux) on 127.0.0.1. Must hold:
 * - two replicas' control clients sending the same bodies with the same clock reading are both
 *   answered;
 * - a captured request replayed byte for byte is still refused, and so is the same signed request
 *   re-wrapped in a re-encoded SignedControl (fields reordered, an unknown field added): the replay
 *   window keys on the signed request bytes, not on the outer encoding;
 * - a request without a nonce (a coordinator of an older release) is answered once, its replay refused.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ControlClient, createHost, type Host } from '@custodian/signer-client';
import {
  CONTROL_VERSION,
  type ControlResponse,
  decodeControlResponse,
  messageType,
  Outcome,
  refusalOf,
  signControlRequest,
} from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { type Logger, pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createIdentity, startSigner } from '../src/index.js';
import { freePort, tempDir } from './cluster.js';

const PASS_ENV = 'CUSTODIAN_CONTROL_NONCE_TEST_PASS';
process.env[PASS_ENV] = 'control nonce test passphrase';
const SCRYPT = { N: 1 << 10, r: 8, p: 1 };
const MAX_FRAME = 1024 * 1024;
const silent: Logger = pino({ level: 'silent' });

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** A signer daemon pinned to the coordinator key `coordKey`; its peer id and listen address. */
async function signer(coordKey: PrivateKey): Promise<{ peerId: string; listen: string }> {
  const dir = tempDir('control-nonce');
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'signer');
  const id = await createIdentity(dataDir, process.env[PASS_ENV] as string, SCRYPT);
  const listen = `/ip4/127.0.0.1/tcp/${await freePort()}`;
  const daemon = await startSigner(
    {
      listen,
      dataDir,
      peers: [],
      coordinator: { peerId: peerIdFromPrivateKey(coordKey).toString() },
      passphrase: { env: PASS_ENV },
      logLevel: 'warn',
      scrypt: SCRYPT,
    },
    silent,
  );
  cleanups.push(() => daemon.stop());
  return { peerId: id.peerId, listen };
}

/** A dial-only coordinator host (one replica) with `key`, pinned to the signer. */
async function replicaHost(key: PrivateKey, s: { peerId: string; listen: string }): Promise<Host> {
  const host = await createHost({
    privateKey: key,
    listen: [],
    peers: new Map([[s.peerId, [s.listen]]]),
    maxFrameBytes: MAX_FRAME,
    log: silent,
  });
  cleanups.push(() => host.stop());
  return host;
}

/** What the signer made of a request: 'answered', or the refusal's error text. */
function verdict(res: ControlResponse): string {
  if (res.result?.outcome === Outcome.REFUSED)
    return `${refusalOf(res.result.refusal)}: ${res.result.error ?? ''}`.trim();
  return 'answered';
}

/** A length-delimited protobuf field (`field` < 16, `bytes` shorter than 2^21). */
function lengthDelimited(field: number, bytes: Uint8Array): Uint8Array {
  const len: number[] = [];
  for (let n = bytes.length; ; n >>>= 7) {
    if (n < 0x80) {
      len.push(n);
      break;
    }
    len.push((n & 0x7f) | 0x80);
  }
  return Uint8Array.from([(field << 3) | 2, ...len, ...bytes]);
}

async function exchange(host: Host, peerId: string, signed: Uint8Array): Promise<string> {
  const res = decodeControlResponse(await host.request(peerId, signed, 10_000));
  if (!res.ok) throw new Error(res.rejection.reason);
  return verdict(res.value);
}

describe('control requests of coordinator replicas sharing one key', () => {
  it('two replicas send the same bodies in the same millisecond: the signer answers both', async () => {
    const coordKey = await generateKeyPair('Ed25519');
    const s = await signer(coordKey);
    const seed = Uint8Array.from(coordKey.raw.subarray(0, 32));
    const a = ControlClient.fromHost(await replicaHost(coordKey, s), seed);
    const b = ControlClient.fromHost(await replicaHost(coordKey, s), seed);
    // both streams up before the clock is fixed
    await Promise.all([a.status(s.peerId), b.status(s.peerId)]);

    const bodies = [
      { status: {} },
      { policySync: { signedPoliciesJson: [] } },
      { revokeApprover: { deviceId: 'device-gone' } },
    ];
    for (const body of bodies) {
      // one clock reading for both replicas: the requests are signed synchronously in send()
      const now = Date.now();
      const clock = vi.spyOn(Date, 'now').mockReturnValue(now);
      const pending = [a.send(s.peerId, body, 10_000), b.send(s.peerId, body, 10_000)];
      clock.mockRestore();
      const answers = (await Promise.all(pending)).map(verdict);
      expect(answers, Object.keys(body)[0]).toEqual(['answered', 'answered']);
    }
  }, 60_000);

  it('a captured request replayed byte for byte, or re-wrapped around the same signature, is refused', async () => {
    const coordKey = await generateKeyPair('Ed25519');
    const s = await signer(coordKey);
    const seed = Uint8Array.from(coordKey.raw.subarray(0, 32));
    const host = await replicaHost(coordKey, s);
    const signed = signControlRequest(
      { version: CONTROL_VERSION, issuedUnixMs: Date.now(), revokeApprover: { deviceId: 'device-gone' } },
      seed,
    );
    expect(await exchange(host, s.peerId, signed)).toBe('answered');
    expect(await exchange(host, s.peerId, signed)).toBe('CONTROL_REQUEST_REJECTED: replayed request');

    // the same request and signature in a SignedControl encoded otherwise: the signature still
    // verifies, the outer bytes differ from the first ones
    const { request, signature } = messageType('custodian.v1.SignedControl').decode(signed) as unknown as {
      request: Uint8Array;
      signature: Uint8Array;
    };
    const reordered = Buffer.concat([lengthDelimited(2, signature), lengthDelimited(1, request)]);
    // plus an unknown varint field 15 = 7
    const extended = Buffer.concat([
      lengthDelimited(1, request),
      lengthDelimited(2, signature),
      Uint8Array.of(15 << 3, 7),
    ]);
    for (const rewrapped of [reordered, extended]) {
      expect(Buffer.from(rewrapped).equals(Buffer.from(signed))).toBe(false);
      expect(await exchange(host, s.peerId, rewrapped)).toBe('CONTROL_REQUEST_REJECTED: replayed request');
    }
  }, 60_000);

  it('a request without a nonce (an older coordinator) is answered once; its replay is refused', async () => {
    const coordKey = await generateKeyPair('Ed25519');
    const s = await signer(coordKey);
    const seed = Uint8Array.from(coordKey.raw.subarray(0, 32));
    const host = await replicaHost(coordKey, s);
    // an empty nonce is not encoded (proto3): these are the bytes a coordinator without the field signs
    const legacy = signControlRequest(
      { version: CONTROL_VERSION, issuedUnixMs: Date.now(), status: {}, nonce: new Uint8Array(0) },
      seed,
    );
    expect(await exchange(host, s.peerId, legacy)).toBe('answered');
    expect(await exchange(host, s.peerId, legacy)).toBe('CONTROL_REQUEST_REJECTED: replayed request');
  }, 60_000);
});
