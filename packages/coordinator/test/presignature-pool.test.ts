/**
 * The coordinator's CGGMP21 presignature pool (signing/presignature-pool.ts) with the real signer
 * gateway over libp2p and 3 real signer processes (packages/signer/test/cluster.ts, SECURITY_112 with the
 * committed TEST-ONLY safe primes; raw digests signed with `allowUnenforcedSigning`, TEST ONLY),
 * on a PGlite database persisted in a folder: the pool fills in the background; an ECDSA signature
 * uses a pooled id (one-round signing, the id leaves the table in the attempt's transaction); an
 * id is never used twice (re-inserting a used id makes the signers refuse it, and the gateway falls
 * back to cold signing); a restarted coordinator (new services, database reopened) signs from the
 * ids it pooled before; an empty pool signs cold.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bytesToHex, deriveSecp256k1, hexToBytes } from '@custodian/crypto';
import {
  CeremonyKind,
  type CeremonyResult,
  KeyAlgorithm,
  Outcome,
  type StartCeremony,
  type TransferIntent,
} from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildSigner,
  freePort,
  initNode,
  type NodeSpec,
  ROOT,
  startNode,
  stopNode,
  tempDir,
  writeConfig,
} from '../../signer/test/cluster.js';
import { type Db, openPglite } from '../src/db/db.js';
import { migrate } from '../src/db/migrations.js';
import { DeviceStore } from '../src/devices/store.js';
import { MasterKeyStore, ServerSignerStore } from '../src/signers/store.js';
import type { GatewaySignResult, SignParty } from '../src/signing/gateway.js';
import { REFILL_LEASE_MS, signingSetKey } from '../src/signing/presignature-pool.js';
import { createSigningServices, type SigningServices } from '../src/signing/services.js';
import { signingParties } from '../src/transfers/pipeline.js';

/** The test's temporary folder (signers, database), removed at the end. */
let root = '';
let nodes: NodeSpec[] = [];
let coordinatorKey: PrivateKey;
let db: Db | undefined;
let services: SigningServices | undefined;
let keyId = '';
let parties: SignParty[] = [];
let ecdsaKey: { publicKey: Uint8Array; chainCode: Uint8Array };
let n = 0;

async function startServices(): Promise<SigningServices> {
  const s = await createSigningServices({
    db: db as Db,
    ...stores(db as Db),
    privateKey: coordinatorKey,
    presignaturePool: { target: 2, batch: 2, scanMs: 250, retryMs: 1000 },
  });
  await s.start();
  return s;
}

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const pooledIds = async () =>
  (
    await (db as Db).query<{ presignature_id: string }>(
      'SELECT presignature_id FROM presignatures WHERE key_id = $1 AND signing_set = $2 ORDER BY presignature_id',
      [keyId, signingSetKey(parties)],
    )
  ).map((r) => r.presignature_id);

/**
 * Sign one digest under m/0/7 and check the signature with noble against the derived key;
 * `fastPathKey` is given to the gateway as the master ECDSA key (the fast path).
 */
async function signOnce(fastPathKey?: {
  publicKey: Uint8Array;
  chainCode: Uint8Array;
}): Promise<Extract<GatewaySignResult, { ok: true }>> {
  const transferId = `test-${++n}`;
  const digest = sha256(new TextEncoder().encode(transferId));
  const intent = {
    transfer_id: transferId,
    blockchain: 'ethereum-local',
    asset_id: 'eth',
    source_address: '0x0',
    destination_address: '0x1',
    amount: '1',
  } as unknown as TransferIntent;
  const r = await (services as SigningServices).gateway.sign({
    keyId,
    algorithm: 'SECP256K1_ECDSA',
    parties,
    derivationPath: [0, 7],
    digests: [digest],
    evidence: { intent, policy: null, approvals: [], chainContext: '{}' },
    deadline: new Date(Date.now() + 120_000),
    ...(fastPathKey ? { ecdsaKey: fastPathKey } : {}),
  });
  if (!r.ok) throw new Error(`signing failed: ${JSON.stringify(r)}`);
  const child = deriveSecp256k1(ecdsaKey.publicKey, ecdsaKey.chainCode, [0, 7]).publicKey;
  const sig = r.signatures[0];
  expect(bytesToHex(sig?.publicKey as Uint8Array)).toBe(bytesToHex(child));
  expect(secp256k1.verify(sig?.signature as Uint8Array, digest, child, { prehash: false })).toBe(true);
  return r;
}

const attemptsOf = async (transferId: string) =>
  (db as Db).query<{ presignature_id: string | null; outcome: string }>(
    'SELECT presignature_id, outcome FROM signing_attempts WHERE transfer_id = $1 ORDER BY started_at',
    [transferId],
  );

beforeAll(async () => {
  buildSigner();
  root = tempDir('presig-pool');
  const fixture = JSON.parse(
    readFileSync(join(ROOT, 'packages/paillier/test/fixtures/test-only-safe-primes.json'), 'utf8'),
  ) as { safePrimes1024: string[] };
  coordinatorKey = await generateKeyPair('Ed25519');
  const ports = [await freePort(), await freePort(), await freePort()];
  nodes = ports.map((port, i) => initNode(root, `signer${i}`, port));
  for (const [i, node] of nodes.entries()) {
    const seed = join(root, `primes${i}.json`);
    writeFileSync(seed, JSON.stringify({ safePrimes: fixture.safePrimes1024.slice(2 * i, 2 * i + 2) }));
    // raw digests without transfer evidence: enforcement explicitly off (TEST ONLY)
    writeConfig(
      node,
      nodes,
      { peerId: peerIdFromPrivateKey(coordinatorKey).toString() },
      { ecdsa: { level: 'SECURITY_112', primePool: 0, primeSeedFile: seed }, allowUnenforcedSigning: true },
    );
  }
  await Promise.all(nodes.map((node) => startNode(node)));

  db = await openPglite(join(root, 'pg'));
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
  services = await startServices();
  // the master key (ECDSA only), 2-of-3, driven straight over the control protocol
  const uuid = randomUUID();
  const start: StartCeremony = {
    ceremonyId: hexToBytes(uuid.replaceAll('-', '')),
    kind: CeremonyKind.MASTER_KEY,
    parties: nodes.map((node) => ({ peerId: node.peerId })),
    threshold: 2,
    deadlineUnixMs: Date.now() + 300_000,
    algorithms: [KeyAlgorithm.SECP256K1_ECDSA],
  };
  const control = services.control;
  const results = await Promise.all(nodes.map((node) => control.startCeremony(node.peerId, start)));
  for (const r of results) expect(r.outcome, r.error).toBe(Outcome.OK);
  const key = (results[0] as CeremonyResult).publicKeys?.find((k) => k.algorithm === KeyAlgorithm.SECP256K1_ECDSA);
  if (!key) throw new Error('no ECDSA key');
  ecdsaKey = { publicKey: key.publicKey, chainCode: key.chainCode };
  keyId = uuid.replaceAll('-', '');
  expect(results[0]?.keyId).toBe(keyId);
  // the pool picks the new master key up with its next scan
  await db.query(
    `INSERT INTO master_keys (master_key_id, ceremony_id, threshold, parties, secp256k1_public_key,
       secp256k1_chain_code, ed25519_public_key, ed25519_chain_code, created_at)
     VALUES ($1, NULL, 2, $2::jsonb, $3, $4, $5, $6, now())`,
    [
      uuid,
      JSON.stringify(servers),
      bytesToHex(key.publicKey),
      bytesToHex(key.chainCode),
      '00'.repeat(32),
      '00'.repeat(32),
    ],
  );
  parties = signingParties(servers, 2);
}, 300_000);

afterAll(async () => {
  await services?.stop();
  await db?.close();
  await Promise.all(nodes.map((node) => stopNode(node)));
  if (root && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(root, { recursive: true, force: true });
}, 60_000);

describe('presignature pool (3 signer processes, libp2p, PGlite)', () => {
  it('fills the pool of the master key signing set in the background', async () => {
    const ids = await until('a full pool', async () => {
      const ids = await pooledIds();
      return ids.length === 2 ? ids : undefined;
    });
    expect(ids.every((id) => /^[0-9a-f]{48}\.\d+$/.test(id))).toBe(true);
    expect(await services?.presignatures.size(keyId, parties)).toBe(2);
  }, 180_000);

  it('signs from a pooled presignature (one round), taking the id out of the pool in the attempt transaction', async () => {
    const before = await pooledIds();
    const r = await signOnce();
    expect(before).toContain(r.presignatureId);
    expect(await pooledIds()).not.toContain(r.presignatureId);
    expect(await attemptsOf(`test-${n}`)).toEqual([{ presignature_id: r.presignatureId, outcome: 'OK' }]);
    // the use triggers a refill back to the target
    await until('the refill', async () => ((await pooledIds()).length === 2 ? true : undefined));
  }, 180_000);

  it('never hands an id out twice; an id the signers no longer hold falls back to cold signing', async () => {
    const [a, b] = await Promise.all([
      services?.presignatures.begin({
        ceremonyId: 'aa'.repeat(24),
        keyId,
        algorithm: 'SECP256K1_ECDSA',
        parties,
        transferId: 'race',
        pooled: true,
      }),
      services?.presignatures.begin({
        ceremonyId: 'bb'.repeat(24),
        keyId,
        algorithm: 'SECP256K1_ECDSA',
        parties,
        transferId: 'race',
        pooled: true,
      }),
    ]);
    expect(a).toBeDefined();
    expect(b).toBeDefined();
    expect(a).not.toBe(b);
    // `a` was handed out and is still held by the signers; put a USED id back at the head of the pool
    const used = (
      await (db as Db).query<{ presignature_id: string }>(
        `SELECT presignature_id FROM signing_attempts WHERE outcome = 'OK' AND presignature_id IS NOT NULL`,
      )
    )[0]?.presignature_id as string;
    await (db as Db).query(
      `INSERT INTO presignatures (presignature_id, key_id, signing_set, created_at) VALUES ($1, $2, $3, '2000-01-01')`,
      [used, keyId, signingSetKey(parties)],
    );
    const r = await signOnce();
    expect(r.presignatureId).toBeUndefined();
    expect(await attemptsOf(`test-${n}`)).toEqual([
      { presignature_id: used, outcome: 'PRESIGNATURE_UNAVAILABLE' },
      { presignature_id: null, outcome: 'OK' },
    ]);
  }, 180_000);

  it('a restarted coordinator signs from the presignatures it pooled before', async () => {
    await until('a full pool', async () => ((await pooledIds()).length === 2 ? true : undefined));
    await services?.stop();
    services = undefined;
    await db?.close();
    db = await openPglite(join(root, 'pg'));
    await migrate(db);
    const before = await pooledIds();
    expect(before).toHaveLength(2);
    services = await startServices();
    const r = await signOnce();
    expect(before).toContain(r.presignatureId);
  }, 180_000);

  it('given the master key, the gateway combines the signers’ shares itself (fast path); another key only turns it off', async () => {
    await until('a full pool', async () => ((await pooledIds()).length === 2 ? true : undefined));
    const fast = await signOnce(ecdsaKey);
    expect(fast.combinedByCoordinator).toBe(true);
    expect(fast.presignatureId).toBeDefined();
    expect(await attemptsOf(`test-${n}`)).toEqual([{ presignature_id: fast.presignatureId, outcome: 'OK' }]);
    // a key that is not the master key: the shares never verify under it, the signers' results sign
    const other = {
      publicKey: secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true),
      chainCode: ecdsaKey.chainCode,
    };
    const slow = await signOnce(other);
    expect(slow.combinedByCoordinator).toBeUndefined();
    expect(slow.presignatureId).toBeDefined();
    // the signers answered the fast one too (its ceremony completed at every signer)
    await until('the signers’ sessions to end', async () => {
      const st = await Promise.all(nodes.map((node) => services?.control.status(node.peerId)));
      return st.every((x) => x?.activeCeremonies === 0) ? true : undefined;
    });
  }, 180_000);

  it('a refill holds its set with a short lease renewed while the PRESIGN runs: a crashed coordinator blocks it for 15 s at most (#27)', async () => {
    // every signer frozen (SIGSTOP): the refill's PRESIGN ceremony hangs, as it would when its
    // coordinator is killed mid-ceremony; what another process sees is the lease left in the table
    for (const node of nodes) node.proc?.kill('SIGSTOP');
    try {
      await (db as Db).query('DELETE FROM presignatures');
      const leaseAhead = async () => {
        const r = await (db as Db).query<{ lease_until: Date | null }>(
          'SELECT lease_until FROM presignature_refills WHERE key_id = $1 AND signing_set = $2',
          [keyId, signingSetKey(parties)],
        );
        const until = r[0]?.lease_until;
        return until ? new Date(until).getTime() - Date.now() : undefined;
      };
      const first = await until('the refill to claim its set', async () => {
        const ms = await leaseAhead();
        return ms !== undefined && ms > 0 ? ms : undefined;
      });
      expect(first).toBeLessThanOrEqual(REFILL_LEASE_MS + 1000);
      // two renewal periods later the ceremony still runs: the lease was renewed, still short
      await new Promise((r) => setTimeout(r, (2 * REFILL_LEASE_MS) / 3 + 1000));
      const later = (await leaseAhead()) ?? 0;
      expect(later).toBeGreaterThan(0);
      expect(later).toBeLessThanOrEqual(REFILL_LEASE_MS + 1000);
    } finally {
      for (const node of nodes) node.proc?.kill('SIGCONT');
    }
    await until('the pool to fill again', async () =>
      (await services?.presignatures.size(keyId, parties)) === 2 ? true : undefined,
    );
  }, 300_000);

  it('an empty pool signs cold (the fast path too)', async () => {
    await services?.presignatures.stop(); // no refill from here on
    await (db as Db).query('DELETE FROM presignatures');
    const r = await signOnce(ecdsaKey);
    expect(r.presignatureId).toBeUndefined();
    expect(r.combinedByCoordinator).toBe(true);
    expect(await attemptsOf(`test-${n}`)).toEqual([{ presignature_id: null, outcome: 'OK' }]);
  }, 180_000);
});

/** The rooms' stores the signing services read, over `db`. */
function stores(db: Db) {
  return {
    masterKeys: new MasterKeyStore({ db, clock: () => new Date() }),
    signers: new ServerSignerStore({ db }),
    devices: new DeviceStore({ db }),
  };
}
