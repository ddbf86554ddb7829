/**
 * Issue #25 [ha]: several coordinator replicas share ONE libp2p identity (the same
 * `coordinator-p2p.key`) and each dials every server signer itself, so a signer sees several
 * connections — and several `/custodian/relay/1` streams — from the same coordinator peer id.
 *
 * Real libp2p hosts on 127.0.0.1 (TCP, noise, yamux): a signer daemon (`startSigner`, encrypted
 * LevelDB store) and two coordinator hosts built from the SAME private key; for the relay, a signer
 * host with {@link attachSignerRelay} and two coordinator relay ends (`createCoordinatorRelay`).
 *
 * Must hold:
 * - both coordinator hosts keep their own connection: control requests of both, concurrent and
 *   repeated, are answered; the signer's connection manager neither prunes nor dedupes one of
 *   them; stopping one leaves the other working;
 * - the signer sends device frames on the newest live relay stream of the coordinator identity and,
 *   when that stream ends, on the next newest, in order (it used to keep only the newest and fail
 *   every send once that one ended, though an older replica's stream was still open).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  type CoordinatorRelay,
  createCoordinatorRelay,
  createHost,
  type Host,
  type RelayFrame,
} from '@custodian/signer-client';
import { CONTROL_VERSION, decodeControlResponse, signControlRequest } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { type Logger, pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { attachSignerRelay, createIdentity, type SignerDaemon, startSigner } from '../src/index.js';
import { freePort, tempDir, waitFor } from './cluster.js';

const PASS_ENV = 'CUSTODIAN_SHARED_IDENTITY_TEST_PASS';
process.env[PASS_ENV] = 'shared coordinator identity test passphrase';
const SCRYPT = { N: 1 << 10, r: 8, p: 1 };
const MAX_FRAME = 1024 * 1024;
const silent: Logger = pino({ level: 'silent' });

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** A dial-only coordinator host with `key`, pinned to the signer `peerId` at `addr`. */
async function coordinatorHost(key: PrivateKey, peerId: string, addr: string): Promise<Host> {
  const host = await createHost({
    privateKey: key,
    listen: [],
    peers: new Map([[peerId, [addr]]]),
    maxFrameBytes: MAX_FRAME,
    log: silent,
  });
  cleanups.push(() => host.stop());
  return host;
}

describe('two coordinator replicas with one libp2p identity dial one signer', () => {
  it('both run control requests concurrently and repeatedly; stopping one leaves the other working', async () => {
    const dir = tempDir('shared-coordinator-identity');
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const coordKey = await generateKeyPair('Ed25519');
    const dataDir = join(dir, 'signer');
    const id = await createIdentity(dataDir, process.env[PASS_ENV] as string, SCRYPT);
    const listen = `/ip4/127.0.0.1/tcp/${await freePort()}`;
    const daemon: SignerDaemon = await startSigner(
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
    const seed = Uint8Array.from(coordKey.raw.subarray(0, 32));
    // each request gets its own issuedUnixMs: two byte-identical signed requests (same body, same
    // millisecond) are one request replayed for the signer (see the report: a wire nonce is needed)
    let issued = Date.now();
    /** A status request on `host`'s control stream; resolves with the signer's peer id. */
    const status = async (host: Host): Promise<string> => {
      issued += 1;
      const signed = signControlRequest({ version: CONTROL_VERSION, issuedUnixMs: issued, status: {} }, seed);
      const res = decodeControlResponse(await host.request(id.peerId, signed, 10_000));
      if (!res.ok) throw new Error(res.rejection.reason);
      if (!res.value.status) throw new Error(`no status: ${res.value.result?.error}`);
      return res.value.status.peerId;
    };
    const a = { host: await coordinatorHost(coordKey, id.peerId, listen) };
    const b = { host: await coordinatorHost(coordKey, id.peerId, listen) };

    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all([status(a.host), status(b.host), status(a.host), status(b.host)]);
      expect(answers).toEqual([id.peerId, id.peerId, id.peerId, id.peerId]);
    }
    // the signer holds two open connections from the one coordinator peer id: none pruned or deduped
    const coordinator = peerIdFromPrivateKey(coordKey).toString();
    const fromCoordinator = () =>
      daemon.host.node.getConnections().filter((c) => c.remotePeer.toString() === coordinator && c.status === 'open');
    expect(fromCoordinator().length).toBe(2);
    expect(a.host.node.getConnections().length).toBe(1);
    expect(b.host.node.getConnections().length).toBe(1);

    // replica A goes away: B's connection and control stream carry on
    await a.host.stop();
    await waitFor(() => fromCoordinator().length === 1, 5000, 'the signer to see A gone');
    for (let round = 0; round < 3; round++) {
      expect(await Promise.all([status(b.host), status(b.host)])).toEqual([id.peerId, id.peerId]);
    }
    expect(b.host.node.getConnections().length).toBe(1);
  }, 60_000);

  it('device frames go out on the newest relay stream, then on the next newest when it ends, in order', async () => {
    const coordKey = await generateKeyPair('Ed25519');
    const coordinator = peerIdFromPrivateKey(coordKey).toString();
    const signerKey = await generateKeyPair('Ed25519');
    const signerPeer = peerIdFromPrivateKey(signerKey).toString();
    const signerHost = await createHost({
      privateKey: signerKey,
      listen: ['/ip4/127.0.0.1/tcp/0'],
      peers: new Map([[coordinator, []]]),
      maxFrameBytes: MAX_FRAME,
      log: silent,
    });
    cleanups.push(() => signerHost.stop());
    const fromDevices: string[] = [];
    const relay = await attachSignerRelay(signerHost, {
      coordinatorPeerId: coordinator,
      maxFrameBytes: MAX_FRAME,
      log: silent,
      onEnvelope: (from) => fromDevices.push(from),
    });
    const addr = signerHost.addrs()[0] as string;
    const addrNoPeer = addr.replace(/\/p2p\/.*$/, '');
    /** One replica's relay end; frames from the signer land in `got` (envelope text). */
    const replica = async (): Promise<{ host: Host; relay: CoordinatorRelay; got: string[] }> => {
      const host = await coordinatorHost(coordKey, signerPeer, addrNoPeer);
      const got: string[] = [];
      const end = createCoordinatorRelay(host, {
        addrs: () => [addrNoPeer],
        maxFrameBytes: MAX_FRAME,
        log: silent,
        onFrame: (_from: string, f: RelayFrame) => got.push(new TextDecoder().decode(f.envelope)),
      });
      cleanups.push(async () => end.close());
      return { host, relay: end, got };
    };
    const frame = (n: number) => new TextEncoder().encode(`frame-${n}`);
    const device = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString();

    const a = await replica();
    await a.relay.ensure(signerPeer);
    // the signer registered A's stream: a frame from the coordinator reached it
    await a.relay.send(signerPeer, { peerId: device, envelope: frame(0) });
    await waitFor(() => fromDevices.length === 1, 5000, 'the frame through A');
    const b = await replica();
    await b.relay.ensure(signerPeer);
    await b.relay.send(signerPeer, { peerId: device, envelope: frame(0) });
    await waitFor(() => fromDevices.length === 2, 5000, 'the frame through B');

    // B's stream is the newest: frames 1..5 go there
    for (let n = 1; n <= 5; n++) await relay.send(device, frame(n));
    await waitFor(() => b.got.length === 5, 5000, 'frames 1..5 on B');
    expect(b.got).toEqual(['frame-1', 'frame-2', 'frame-3', 'frame-4', 'frame-5']);
    expect(a.got).toEqual([]);

    // replica B dies mid-flow: the frames queued behind and after it continue on A, in order
    const sends: Promise<void>[] = [];
    const stopping = b.host.stop();
    for (let n = 6; n <= 15; n++) sends.push(relay.send(device, frame(n)));
    await stopping;
    for (let n = 16; n <= 20; n++) sends.push(relay.send(device, frame(n)));
    const settled = await Promise.allSettled(sends);
    await waitFor(() => a.got.includes('frame-20'), 5000, 'frame 20 on A');
    // from the first frame on A on, every frame is on A, once and in order (no gap, no reordering);
    // frames the signer wrote onto B's dying stream before it saw it end are lost with B (the
    // relay is best effort: the coordinator aborts a ceremony whose frames went missing)
    const numbers = (xs: string[]) => xs.map((x) => Number(x.slice('frame-'.length)));
    const onA = numbers(a.got);
    const first = onA[0] as number;
    expect(first).toBeGreaterThanOrEqual(6);
    expect(onA).toEqual(Array.from({ length: 21 - first }, (_, i) => first + i));
    // B got 1..5 and maybe some that followed, in order, none of them again on A
    const onB = numbers(b.got);
    expect(onB).toEqual(Array.from({ length: onB.length }, (_, i) => i + 1));
    expect(onB.at(-1) as number).toBeLessThan(first);
    // every send after B's stop completed went out (on A) and succeeded
    expect(settled.slice(10).every((s) => s.status === 'fulfilled')).toBe(true);
    expect(relay.openStreams()).toBe(1);
  }, 60_000);
});
