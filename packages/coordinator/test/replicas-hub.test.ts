/**
 * Issue #25: phones on any replica. Two coordinators (signing on) on ONE PostgreSQL schema, sharing
 * one coordinator identity (`coordinator-p2p.key` copied into the second data folder), each its own
 * pool, HTTP server and device hub; phones over real WebSockets — real {@link MobileSigner}s, and
 * for the relay order a raw `ws` client speaking the device protocol. Must hold:
 *
 * - an approval request created on B reaches the phone connected to A, and its answer is verified
 *   and decided (A's hub, the transfer service's `decided`);
 * - a revocation on B cuts the phone connected to A (4403, DEVICE_REVOKED) and it stops;
 * - a ceremony (FROST Ed25519 DKG) started on B with a phone on A and a phone on B completes: the
 *   invitation and the answer cross the bus, and so do the device-to-device relay frames;
 * - relay frames for the phone on A that reach B (a signer's relay stream on B) arrive, in order;
 * - a server signer registered through B is known to A without a restart: a phone's relay frame to
 *   it on A goes to the signer relay (before: "relay: unknown destination", dropped), and a phone
 *   presenting its peer id is refused at hello;
 * - B sees the phone on A online (the gateway's availability), and a ceremony B sends to the
 *   phone on A ends when that phone disconnects there.
 */
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DeviceFrame, encodeDeviceFrame, fingerprint } from '@custodian/signer-client';
import { KeyAlgorithm, type TransferIntent } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import pg from 'pg';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { MobileSigner } from '../../mobile/src/device.js';
import { enrollDevice } from '../../mobile/src/enroll.js';
import { type Coordinator, createCoordinator } from '../src/coordinator.js';
import { openPostgres } from '../src/db/db.js';
import { COORDINATOR_KEY_FILE } from '../src/signing/services.js';
import { connectPhone, enrollmentBody, type Phone, phoneKeys } from './device-fixtures.js';
import { PG_URL, postgresReachable } from './helpers.js';

process.env.CUSTODIAN_SIGNING_LOG ??= 'silent';

const KDF = { N: 1024, r: 8, p: 1 };
const PIN = '482916';
const pgUp = await postgresReachable();

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function waitFor(pred: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await pred()) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function intent(id: string): TransferIntent {
  return {
    transfer_id: id,
    profile_id: 'p',
    wallet_id: 'w',
    blockchain: 'test',
    asset_id: 'a',
    asset_symbol: 'TST',
    asset_decimals: 0,
    asset_contract: null,
    source_address: 's',
    destination_address: 'd',
    amount: '1',
    derivation_path: [0, 7],
    key_algorithm: 'ED25519',
    key_id: 'k',
    created_at: new Date().toISOString(),
    max_fee: '1',
  };
}

interface Pair {
  a: Coordinator;
  b: Coordinator;
  urlA: string;
  urlB: string;
  dir: string;
}

/** Two replicas on one fresh schema, one identity; both started. */
async function twoReplicas(label: string): Promise<Pair> {
  const dir = await mkdtemp(join(tmpdir(), `custodian-${label}-`));
  const schema = `t_hub_${Math.random().toString(16).slice(2, 12)}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  cleanups.push(async () => {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA ${schema} CASCADE`);
    await c.end();
    await rm(dir, { recursive: true, force: true });
  });
  const make = async (name: string) =>
    createCoordinator({
      db: await openPostgres(PG_URL, { schema, max: 10 }),
      mode: 'development',
      dataDir: join(dir, name),
      logger: false,
      listen: { host: '127.0.0.1', port: 0 },
      signing: {
        enabled: true,
        algorithms: [KeyAlgorithm.ED25519, KeyAlgorithm.SECP256K1_TAPROOT],
        presignaturePool: 0,
      },
      transfers: { runPipeline: false },
      webhooks: { runWorker: false },
      replicas: { heartbeatMs: 500, ttlMs: 5000, busPollMs: 200 },
    });
  const a = await make('a');
  const urlA = await a.start();
  cleanups.push(() => a.stop());
  // the second replica runs with the first one's identity and webhook KEK (operator guide: copy
  // coordinator-p2p.key and webhook-kek.key)
  await mkdir(join(dir, 'b'), { recursive: true, mode: 0o700 });
  await copyFile(join(dir, 'a', COORDINATOR_KEY_FILE), join(dir, 'b', COORDINATOR_KEY_FILE));
  await copyFile(join(dir, 'a', 'webhook-kek.key'), join(dir, 'b', 'webhook-kek.key'));
  const b = await make('b');
  const urlB = await b.start();
  cleanups.push(() => b.stop());
  expect(b.signing?.peerId).toBe(a.signing?.peerId);
  return { a, b, urlA, urlB, dir };
}

/** A {@link MobileSigner} enrolled at `url` (so it connects there), approved in the shared database. */
async function phoneAt(p: Pair, url: string, name: string, decide = async (_i: TransferIntent) => 'APPROVE' as const) {
  const dataDir = join(p.dir, name);
  await mkdir(dataDir, { recursive: true });
  const e = await enrollDevice({ url, dataDir, pin: PIN, name, kdf: KDF });
  await p.a.db.query(`UPDATE devices SET status = 'APPROVED', decided_at = now() WHERE device_id = $1`, [e.device_id]);
  const revoked: string[] = [];
  const phone = await MobileSigner.start(
    {
      dataDir,
      pin: PIN,
      decide,
      log: pino({ level: 'silent' }),
      storeScrypt: KDF,
      allowUnenforcedSigning: true,
      reconnectMs: 50,
      reconnectMaxMs: 200,
    },
    { onRevoked: (reason) => revoked.push(reason) },
  );
  cleanups.push(() => phone.stop());
  await phone.ready;
  return { phone, deviceId: e.device_id, fingerprint: e.fingerprint, mpcPeerId: e.mpc_peer_id, revoked };
}

/** A raw device-protocol client enrolled and approved, connected to `url`. */
async function rawPhoneAt(p: Pair, url: string): Promise<{ phone: Phone; deviceId: string; mpcPeerId: string }> {
  const keys = await phoneKeys();
  const r = await fetch(`${url}/devices/v1/enrollments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(enrollmentBody(keys, 'raw phone')),
  });
  const body = (await r.json()) as { device_id: string };
  expect(r.status).toBe(201);
  await p.a.db.query(`UPDATE devices SET status = 'APPROVED', decided_at = now() WHERE device_id = $1`, [
    body.device_id,
  ]);
  const phone = connectPhone({ url } as never, body.device_id, keys);
  cleanups.push(async () => {
    phone.ws.close();
  });
  expect(await phone.welcomed).toBe(true);
  return { phone, deviceId: body.device_id, mpcPeerId: keys.mpcPeerId };
}

describe.skipIf(!pgUp)('device hub across replicas (PostgreSQL, two coordinators, one identity)', () => {
  it('an approval request created on B reaches the phone on A; its answer is verified and decided', async () => {
    const p = await twoReplicas('hub-approval');
    const asked: string[] = [];
    const { deviceId } = await phoneAt(p, p.urlA, 'phone-a', async (i) => {
      asked.push(i.transfer_id);
      return 'APPROVE';
    });
    const decided: { requestId: string; decision: string }[] = [];
    p.a.signing?.hub.onApproval((e) => decided.push({ requestId: e.requestId, decision: e.approval.decision }));
    // what the transfer service's approval signal does on the replica that created the request
    p.b.signing?.hub.notifyApprovalRequest(deviceId, intent('t-from-b'), 't-from-b:0');
    await waitFor(() => decided.length > 0, 10_000, 'the approval answer');
    expect(asked).toEqual(['t-from-b']);
    expect(decided).toEqual([{ requestId: 't-from-b:0', decision: 'APPROVE' }]);
  });

  it('a withdrawal on B drops the request on A: a late answer to it is not decided', async () => {
    const p = await twoReplicas('hub-withdrawal');
    const asked: string[] = [];
    const answers = new Map<string, (d: 'APPROVE') => void>();
    const { deviceId } = await phoneAt(
      p,
      p.urlA,
      'phone-w',
      (i) =>
        new Promise<'APPROVE'>((r) => {
          asked.push(i.transfer_id);
          answers.set(i.transfer_id, r);
        }),
    );
    const decided: string[] = [];
    p.a.signing?.hub.onApproval((e) => decided.push(e.requestId));
    const hubB = p.b.signing?.hub;
    hubB?.notifyApprovalRequest(deviceId, intent('t-w1'), 't-w1:0');
    await waitFor(() => asked.includes('t-w1'), 10_000, 'the first request');
    hubB?.cancelApprovalRequest(deviceId, 't-w1:0');
    // the withdrawal is on its way to A; a second request, sent after it, arrives after it
    hubB?.notifyApprovalRequest(deviceId, intent('t-w2'), 't-w2:0');
    await waitFor(() => asked.includes('t-w2'), 10_000, 'the second request');
    answers.get('t-w1')?.('APPROVE');
    answers.get('t-w2')?.('APPROVE');
    // A handles one phone's frames in order: once the second answer is decided the first was seen
    await waitFor(() => decided.includes('t-w2:0'), 10_000, 'the second answer');
    expect(decided).toEqual(['t-w2:0']);
  });

  it('a revocation on B cuts the phone on A (4403 DEVICE_REVOKED) and it stops reconnecting', async () => {
    const p = await twoReplicas('hub-revoke');
    const { deviceId, revoked } = await phoneAt(p, p.urlA, 'phone-r');
    expect(p.a.signing?.hub.online()).toEqual([deviceId]);
    await p.b.db.query(`UPDATE devices SET status = 'REMOVED' WHERE device_id = $1`, [deviceId]);
    // what B's devices room does after an administrator removed the device there
    p.b.signing?.hub.revokeDevice(deviceId, 'REMOVED');
    await waitFor(() => revoked.length > 0, 10_000, 'the revocation');
    expect(revoked[0]).toMatch(/REMOVED/);
    await waitFor(() => p.a.signing?.hub.online().length === 0, 5_000, 'A to drop the connection');
    // the route is gone with it
    await waitFor(
      async () =>
        (await p.b.db.query('SELECT 1 FROM device_connections WHERE device_id = $1', [deviceId])).length === 0,
      5_000,
      'the route to be deleted',
    );
  });

  it('B sees the phone on A online; a DKG started on B with a phone on A and one on B completes', async () => {
    const p = await twoReplicas('hub-dkg');
    const onA = await phoneAt(p, p.urlA, 'phone-dkg-a');
    const onB = await phoneAt(p, p.urlB, 'phone-dkg-b');
    const gw = p.b.signing?.gateway;
    expect(await gw?.availability?.({ kind: 'device', id: onA.deviceId })).toBe('up');
    expect(await gw?.availability?.({ kind: 'device', id: onB.deviceId })).toBe('up');
    const relayedOnB: { direction: string; to: string }[] = [];
    p.b.signing?.hub.onRelayed((e) => relayedOnB.push({ direction: e.direction, to: e.to }));
    const client = p.b.signing?.ceremonyClient;
    if (!client) throw new Error('no ceremony client');
    const outcome = await client.runDkg({
      ceremonyId: crypto.randomUUID(),
      threshold: 2,
      parties: [onA, onB].map((m) => ({
        kind: 'device' as const,
        id: m.deviceId,
        peer: m.fingerprint,
        address: null,
      })),
      deadline: new Date(Date.now() + 45_000),
      signal: new AbortController().signal,
      onProgress: () => undefined,
    });
    expect(outcome.ed25519.publicKey).toHaveLength(32);
    expect(outcome.transcriptHash).toMatch(/^[0-9a-f]{64}$/);
    // the phone on B's frames for the phone on A crossed to A through the bus
    expect(relayedOnB).toContainEqual({ direction: 'device-to-device', to: onA.mpcPeerId });
  }, 60_000);

  it('a ceremony B sends to the phone on A ends ABORTED at once when that phone disconnects there', async () => {
    const p = await twoReplicas('hub-gone');
    const raw = await rawPhoneAt(p, p.urlA);
    const hubB = p.b.signing?.hub;
    if (!hubB) throw new Error('no hub');
    const deadline = Date.now() + 60_000;
    const run = hubB.startCeremony(raw.deviceId, {
      ceremonyId: new Uint8Array(24).fill(7),
      kind: 1,
      parties: [{ peerId: raw.mpcPeerId }],
      threshold: 1,
      deadlineUnixMs: deadline,
    });
    run.catch(() => undefined);
    // the invitation reaches the phone on A through the bus
    await waitFor(() => raw.phone.frames.some((f) => f.invitation), 10_000, 'the invitation');
    raw.phone.ws.close();
    await expect(run).rejects.toThrow(/disconnected during the ceremony/);
  });

  it('the replica holding the phone stops mid-ceremony: the ceremony started on B ends at once', async () => {
    const p = await twoReplicas('hub-holder-dies');
    const raw = await rawPhoneAt(p, p.urlA);
    const hubB = p.b.signing?.hub;
    if (!hubB) throw new Error('no hub');
    const run = hubB.startCeremony(raw.deviceId, {
      ceremonyId: new Uint8Array(24).fill(8),
      kind: 1,
      parties: [{ peerId: raw.mpcPeerId }],
      threshold: 1,
      deadlineUnixMs: Date.now() + 60_000,
    });
    run.catch(() => undefined);
    await waitFor(() => raw.phone.frames.some((f) => f.invitation), 10_000, 'the invitation');
    // A leaves the replica set without a word (its bus and heartbeat stop; the socket stays open)
    await p.a.replicas.bus.stop();
    await p.a.replicas.registry.stop();
    await expect(run).rejects.toThrow(/replica .* holding device .* (stopped|died)/);
  });

  it('a phone on A that never answers: the ceremony started on B ends at its deadline', async () => {
    const p = await twoReplicas('hub-silent');
    const raw = await rawPhoneAt(p, p.urlA);
    const hubB = p.b.signing?.hub;
    if (!hubB) throw new Error('no hub');
    const run = hubB.startCeremony(raw.deviceId, {
      ceremonyId: new Uint8Array(24).fill(9),
      kind: 1,
      parties: [{ peerId: raw.mpcPeerId }],
      threshold: 1,
      deadlineUnixMs: Date.now() + 3000,
    });
    await expect(run).rejects.toThrow(/no answer .* by the ceremony deadline/);
  });

  it('relay frames for the phone on A that reach B arrive on A, in order', async () => {
    const p = await twoReplicas('hub-relay');
    const raw = await rawPhoneAt(p, p.urlA);
    const hubB = p.b.signing?.hub;
    if (!hubB) throw new Error('no hub');
    const from = '12D3KooWFakeSignerPeerForRelayOrder';
    const n = 40;
    // a server signer's frames that came in over B's relay stream (signer-relay.ts: the newest stream)
    for (let i = 0; i < n; i++) hubB.fromSigner(from, { peerId: raw.mpcPeerId, envelope: Uint8Array.of(i, 1, 2, 3) });
    const relays = () => raw.phone.frames.filter((f): f is DeviceFrame & { relay: object } => f.relay !== undefined);
    await waitFor(() => relays().length >= n, 10_000, 'the relayed frames');
    expect(relays().map((f) => f.relay?.envelope[0])).toEqual([...Array(n).keys()]);
    expect(relays().every((f) => f.relay?.peerId === from)).toBe(true);
  });

  it('a server signer registered through B: the phone on A relays to it and cannot take its peer id', async () => {
    const p = await twoReplicas('hub-signer');
    const raw = await rawPhoneAt(p, p.urlA);
    const hubA = p.a.signing?.hub;
    if (!hubA) throw new Error('no hub');
    const key = await generateKeyPair('Ed25519');
    const signerPeer = peerIdFromPrivateKey(key).toString();
    // registered through B after A read its list of signers (at its start): the row SignerService.add commits
    await p.b.db.query(
      `INSERT INTO server_signers (signer_id, name, peer_id, address, fingerprint, created_at)
       VALUES (gen_random_uuid(), 'late signer', $1, '/ip4/127.0.0.1/tcp/9', $2, now())`,
      [signerPeer, fingerprint(key.publicKey.raw)],
    );
    const relayed: { direction: string; to: string }[] = [];
    hubA.onRelayed((e) => relayed.push({ direction: e.direction, to: e.to }));
    raw.phone.ws.send(encodeDeviceFrame({ relay: { peerId: signerPeer, envelope: Uint8Array.of(7, 7, 7) } }));
    await waitFor(() => relayed.length > 0, 10_000, 'the frame relayed to the signer');
    expect(relayed).toEqual([{ direction: 'device-to-signer', to: signerPeer }]);
    // and a device presenting the new signer's peer id is refused at hello on A (issue #26 item 7)
    const keys = await phoneKeys();
    const r = await fetch(`${p.urlA}/devices/v1/enrollments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(enrollmentBody(keys, 'impostor')),
    });
    const { device_id } = (await r.json()) as { device_id: string };
    await p.a.db.query(
      `UPDATE devices SET status = 'APPROVED', decided_at = now(), mpc_peer_id = NULL WHERE device_id = $1`,
      [device_id],
    );
    const impostor = connectPhone({ url: p.urlA } as never, device_id, keys, signerPeer);
    cleanups.push(async () => impostor.ws.close());
    expect(await impostor.welcomed).toBe(false);
    expect((await impostor.closed).reason).toBe("mpc_peer_id is a server signer's");
  });
});
