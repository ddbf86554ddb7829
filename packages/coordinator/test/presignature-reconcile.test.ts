/**
 * Reconciliation of the coordinator's presignature pool with the signers (issue #27 [faults]
 * item 7; signing/presignature-pool.ts `reconcile`), with 3 real signer processes
 * (packages/signer/test/cluster.ts, SECURITY_112 with the committed TEST-ONLY safe primes), the
 * real gateway and control client over libp2p, and a private schema on the real PostgreSQL server.
 * The signing set of the 2-of-3 key is signers 0 and 1.
 *
 * - Orphans after a crash: a signer restarted (it discards every presignature at start), a PRESIGN
 *   ceremony whose ids the coordinator never recorded, a PRESIGN ceremony one party lost: after a
 *   reconciliation the pool and both parties hold exactly the ids common to all of them.
 * - In flight: ids of a PRESIGN ceremony younger than the grace age, and a pooled id taken by
 *   `begin` for a SIGN not finished yet, are left alone (and reconciled once that is over).
 * - A restarted coordinator reconciles at start, before its first refill.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { hexToBytes } from '@custodian/crypto';
import { CeremonyKind, type CeremonyResult, KeyAlgorithm, Outcome, type StartCeremony } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildSigner,
  type NodeSpec,
  startNode,
  startSeededNodes,
  stopNode,
  tempDir,
} from '../../signer/test/cluster.js';
import type { Db } from '../src/db/db.js';
import { migrate } from '../src/db/migrations.js';
import { DeviceStore } from '../src/devices/store.js';
import { MasterKeyStore, ServerSignerStore } from '../src/signers/store.js';
import { presignCeremony, type SignParty } from '../src/signing/gateway.js';
import { signingSetKey } from '../src/signing/presignature-pool.js';
import { createSigningServices, type SigningServices } from '../src/signing/services.js';
import { signingParties } from '../src/transfers/pipeline.js';
import { openTestDb } from './helpers.js';

let root = '';
let nodes: NodeSpec[] = [];
let coordinatorKey: PrivateKey;
let db: Db | undefined;
let drop: (() => Promise<void>) | undefined;
let services: SigningServices | undefined;
let keyId = '';
let parties: SignParty[] = [];
/** Peer ids of the signing set (signers 0 and 1). */
let setPeers: string[] = [];

const svc = () => services as SigningServices;

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Ids held by each party of the set (the signers' own answer), sorted. */
async function held(): Promise<string[][]> {
  return Promise.all(
    setPeers.map(async (p) => (await svc().control.presignatureInventory(p, keyId, setPeers)).map((h) => h.id).sort()),
  );
}

async function pooledIds(): Promise<string[]> {
  return (
    await (db as Db).query<{ presignature_id: string }>(
      'SELECT presignature_id FROM presignatures WHERE key_id = $1 AND signing_set = $2 ORDER BY presignature_id',
      [keyId, signingSetKey(parties)],
    )
  ).map((r) => r.presignature_id);
}

/** A PRESIGN ceremony of the set whose ids the coordinator does not record (as if it crashed first). */
async function unrecordedPresign(count: number): Promise<string[]> {
  const s = svc();
  const r = await presignCeremony(
    {
      control: s.control,
      directory: {
        async peerIdOf(p) {
          return setPeers[parties.findIndex((q) => q.id === p.id)] as string;
        },
      },
    },
    keyId,
    parties,
    count,
    new Date(Date.now() + 120_000),
  );
  if (!r.ok) throw new Error(r.error);
  return [...r.ids].sort();
}

/** Start from an empty pool and no presignature at the signers, then fill the pool (the pool's own refill). */
async function fresh(): Promise<string[]> {
  await (db as Db).query('DELETE FROM presignatures');
  await (db as Db).query('DELETE FROM presignature_refills');
  for (const [i, p] of setPeers.entries()) {
    const ids = (await held())[i] as string[];
    if (ids.length > 0) await svc().control.deletePresignatures(p, keyId, setPeers, ids);
  }
  expect(await held()).toEqual([[], []]);
  await svc().presignatures.refill(keyId, parties);
  const pool = await pooledIds();
  expect(pool).toHaveLength(2);
  expect(await held()).toEqual([pool, pool]);
  return pool;
}

beforeAll(async () => {
  buildSigner();
  root = tempDir('presig-reconcile');
  coordinatorKey = await generateKeyPair('Ed25519');
  // raw digests without transfer evidence: enforcement explicitly off (TEST ONLY)
  nodes = await startSeededNodes(root, 3, peerIdFromPrivateKey(coordinatorKey).toString(), {
    allowUnenforcedSigning: true,
  });
  ({ db, drop } = await openTestDb('postgres'));
  await migrate(db);
  const servers: { kind: 'server'; id: string }[] = [];
  for (const node of nodes) {
    const id = randomUUID();
    servers.push({ kind: 'server', id });
    await db.query(
      `INSERT INTO server_signers (signer_id, name, peer_id, address, fingerprint, created_at)
       VALUES ($1, $2, $3, $4, 'test', now())`,
      [id, node.name, node.peerId, `/ip4/127.0.0.1/tcp/${node.port}`],
    );
  }
  // the pool refills only when a test asks (scan every hour); reconciliations only when a test asks
  services = await createSigningServices({
    db,
    ...stores(db),
    privateKey: coordinatorKey,
    presignaturePool: { target: 2, batch: 2, scanMs: 3_600_000, retryMs: 1000, reconcileMs: 0 },
  });
  await services.start();
  const uuid = randomUUID();
  const start: StartCeremony = {
    ceremonyId: hexToBytes(uuid.replaceAll('-', '')),
    kind: CeremonyKind.MASTER_KEY,
    parties: nodes.map((node) => ({ peerId: node.peerId })),
    threshold: 2,
    deadlineUnixMs: Date.now() + 300_000,
    algorithms: [KeyAlgorithm.SECP256K1_ECDSA],
  };
  const results = await Promise.all(nodes.map((node) => svc().control.startCeremony(node.peerId, start)));
  for (const r of results) expect(r.outcome, r.error).toBe(Outcome.OK);
  const key = (results[0] as CeremonyResult).publicKeys?.find((k) => k.algorithm === KeyAlgorithm.SECP256K1_ECDSA);
  if (!key) throw new Error('no ECDSA key');
  keyId = uuid.replaceAll('-', '');
  await db.query(
    `INSERT INTO master_keys (master_key_id, ceremony_id, threshold, parties, secp256k1_public_key,
       secp256k1_chain_code, ed25519_public_key, ed25519_chain_code, created_at)
     VALUES ($1, NULL, 2, $2::jsonb, $3, $4, $5, $6, now())`,
    [
      uuid,
      JSON.stringify(servers),
      Buffer.from(key.publicKey).toString('hex'),
      Buffer.from(key.chainCode).toString('hex'),
      '00'.repeat(32),
      '00'.repeat(32),
    ],
  );
  parties = signingParties(servers, 2);
  setPeers = [nodes[0]?.peerId as string, nodes[1]?.peerId as string];
}, 300_000);

afterAll(async () => {
  await services?.stop();
  await db?.close();
  await drop?.();
  await Promise.all(nodes.map((node) => stopNode(node)));
  if (root && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(root, { recursive: true, force: true });
}, 60_000);

describe('presignature reconciliation (3 signer processes, libp2p, PostgreSQL)', () => {
  it('after a signer restart and unrecorded or half-lost PRESIGN ceremonies, the pool and the signers keep exactly the common ids', async () => {
    const lost = await fresh(); // pooled, then lost by signer 1's restart
    // signer 1 restarts: it discards every presignature of its earlier lifetime
    await stopNode(nodes[1] as NodeSpec);
    await startNode(nodes[1] as NodeSpec);
    const [onlyAt0] = (await held()) as [string[], string[]];
    expect(onlyAt0).toEqual(lost);
    // a pair both hold, pooled (rows inserted as the pool's refill does: the pool is full, it does not refill)
    const common = await unrecordedPresign(2);
    for (const id of common)
      await (db as Db).query(
        'INSERT INTO presignatures (presignature_id, key_id, signing_set, created_at) VALUES ($1, $2, $3, now())',
        [id, keyId, signingSetKey(parties)],
      );
    // a PRESIGN ceremony the coordinator never recorded (it crashed before the insert)
    const unrecorded = await unrecordedPresign(3);
    // a PRESIGN ceremony one party lost part of (signer 1 holds 1 of its 3)
    const half = await unrecordedPresign(3);
    await svc().control.deletePresignatures(setPeers[1] as string, keyId, setPeers, half.slice(1));
    const [at0, at1] = (await held()) as [string[], string[]];
    expect(at0).toEqual([...lost, ...common, ...unrecorded, ...half].sort());
    expect(at1).toEqual([...common, ...unrecorded, half[0] as string].sort());
    expect(await pooledIds()).toEqual([...lost, ...common].sort());

    const report = await svc().presignatures.reconcile({ graceMs: 0 });
    const set = report.sets.find((s) => s.keyId === keyId && s.signingSet === signingSetKey(parties));
    expect(set).toEqual({
      keyId,
      signingSet: signingSetKey(parties),
      common: 2,
      kept: 0,
      droppedFromPool: 2,
      deletedAtSigners: {
        [`server:${parties[0]?.id}`]: lost.length + unrecorded.length + half.length,
        [`server:${parties[1]?.id}`]: unrecorded.length + 1,
      },
      inUse: 0,
    });
    expect(await pooledIds()).toEqual([...common].sort());
    expect(await held()).toEqual([[...common].sort(), [...common].sort()]);
    expect(svc().presignatures.lastReconciliation?.sets).toContainEqual(set);
    // a second pass finds nothing to do
    const again = await svc().presignatures.reconcile({ graceMs: 0 });
    expect(again.sets.find((s) => s.keyId === keyId)).toMatchObject({
      common: 2,
      droppedFromPool: 0,
      deletedAtSigners: {},
    });
  }, 300_000);

  it('leaves alone the ids of a PRESIGN ceremony younger than the grace age and a pooled id a SIGN has taken', async () => {
    const pool = await fresh();
    // a signer answers for its own signing sets only, and deletes only well-formed ids
    await expect(svc().control.presignatureInventory(nodes[2]?.peerId as string, keyId, setPeers)).rejects.toThrow(
      /not in the party set/,
    );
    await expect(
      svc().control.deletePresignatures(setPeers[0] as string, keyId, setPeers, ['../shares/x']),
    ).rejects.toThrow(/not a presignature id/);
    // a PRESIGN ceremony the coordinator has not recorded YET (its ids reach the signers first)
    const young = await unrecordedPresign(2);
    // a SIGN ceremony under way: `begin` took a pooled id, the signers still hold it
    const attempt = {
      ceremonyId: 'cd'.repeat(24),
      keyId,
      algorithm: 'SECP256K1_ECDSA' as const,
      parties,
      transferId: null,
      pooled: true,
    };
    const taken = (await svc().presignatures.begin(attempt)) as string;
    expect(pool).toContain(taken);
    const rest = pool.filter((id) => id !== taken);
    expect(await pooledIds()).toEqual(rest);

    // the default grace age (15 minutes): nothing in flight is touched
    const r1 = await svc().presignatures.reconcile({ graceMs: 900_000 });
    expect(r1.sets.find((s) => s.keyId === keyId)).toMatchObject({
      common: 1,
      kept: young.length + 1,
      droppedFromPool: 0,
      deletedAtSigners: {},
    });
    const all = [...pool, ...young].sort();
    expect(await held()).toEqual([all, all]);
    // no grace age: the young ids go (no ceremony is running here), the SIGN's id stays while unfinished
    const r2 = await svc().presignatures.reconcile({ graceMs: 0 });
    expect(r2.sets.find((s) => s.keyId === keyId)).toMatchObject({ kept: 1 });
    expect(await held()).toEqual([[...pool].sort(), [...pool].sort()]);
    // the SIGN ends without using it (e.g. refused by policy at every signer): an orphan now
    await svc().presignatures.finish(attempt, 'REFUSED:POLICY');
    // finish() started a refill (the pool is one short): while it runs, nothing outside the pool goes
    await svc().presignatures.refill(keyId, parties);
    const refilled = await pooledIds();
    expect(refilled).toHaveLength(2);
    expect(refilled).not.toContain(taken);
    const r3 = await svc().presignatures.reconcile({ graceMs: 0 });
    expect(r3.sets.find((s) => s.keyId === keyId)).toMatchObject({
      common: 2,
      kept: 0,
      deletedAtSigners: { [`server:${parties[0]?.id}`]: 1, [`server:${parties[1]?.id}`]: 1 },
    });
    expect(await held()).toEqual([refilled, refilled]);
  }, 300_000);

  it('a restarted coordinator reconciles at start, before its first refill', async () => {
    const lost = await fresh();
    const orphans = await unrecordedPresign(1);
    await stopNode(nodes[1] as NodeSpec);
    await startNode(nodes[1] as NodeSpec);
    expect(await held()).toEqual([[...lost, ...orphans].sort(), []]);
    await services?.stop();
    services = undefined;
    services = await createSigningServices({
      db: db as Db,
      ...stores(db as Db),
      privateKey: coordinatorKey,
      presignaturePool: {
        target: 2,
        batch: 2,
        scanMs: 3_600_000,
        retryMs: 1000,
        reconcileMs: 3_600_000,
        reconcileGraceMs: 0,
      },
    });
    await services.start();
    const first = await until('the reconciliation at start', async () => svc().presignatures.lastReconciliation);
    expect(first.sets.find((s) => s.keyId === keyId)).toMatchObject({
      common: 0,
      droppedFromPool: 2,
      deletedAtSigners: { [`server:${parties[0]?.id}`]: 3 },
    });
    // then the first scan refills the pool, from presignatures both hold
    const pool = await until('the refill after it', async () => {
      const ids = await pooledIds();
      return ids.length === 2 ? ids : undefined;
    });
    expect(pool.some((id) => lost.includes(id))).toBe(false);
    expect(await held()).toEqual([pool, pool]);
  }, 300_000);
});

/** The rooms' stores the signing services read, over `db`. */
function stores(db: Db) {
  return {
    masterKeys: new MasterKeyStore({ db, clock: () => new Date() }),
    signers: new ServerSignerStore({ db }),
    devices: new DeviceStore({ db }),
  };
}
