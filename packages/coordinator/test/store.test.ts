/**
 * Store compliance suite: the same tests on both `Db` implementations — PGlite (embedded,
 * persisted in a data folder) always, and the PostgreSQL server when reachable (a private schema
 * per run, dropped afterwards).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyStore } from '../src/api/idempotency-store.js';
import { AuditLog } from '../src/audit/service.js';
import { type Db, openPglite } from '../src/db/db.js';
import { MIGRATIONS, migrate } from '../src/db/migrations.js';
import { blockchainId, syncDirectory } from '../src/directory.js';
import { MasterKeyStore } from '../src/signers/store.js';
import { WalletService } from '../src/wallets/service.js';
import { openTestDb, postgresReachable, testMasterKey } from './helpers.js';

const pgUp = await postgresReachable();

describe.each(['pglite', 'postgres'] as const)('store on %s', (kind) => {
  let db: Db;
  let drop: () => Promise<void> = async () => {};
  let dir = '';
  let wallets: WalletService;
  let masterKeys: MasterKeyStore;
  let idempotency: IdempotencyStore;
  let now = new Date('2026-01-01T00:00:00Z');

  beforeAll(async () => {
    if (kind === 'postgres' && !pgUp) return;
    if (kind === 'pglite') {
      dir = await mkdtemp(join(tmpdir(), 'custodian-store-'));
      db = await openPglite(join(dir, 'pgdata'));
    } else {
      ({ db, drop } = await openTestDb('postgres'));
    }
    const c = { db, clock: () => now };
    wallets = new WalletService({ ...c, audit: new AuditLog(c) });
    masterKeys = new MasterKeyStore(c);
    idempotency = new IdempotencyStore(c);
    // each test below runs alone (-t): the schema and the directory are set up here
    await migrate(db);
    await db.tx((q) => syncDirectory(q, true));
  });
  afterAll(async () => {
    if (db === undefined) return;
    await db.close().catch(() => {});
    await drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const maybe = kind === 'postgres' && !pgUp ? it.skip : it;

  maybe('applies migrations once and records them in schema_migrations', async () => {
    const fresh = await openTestDb(kind);
    try {
      const f = fresh.db;
      expect(await migrate(f)).toEqual(MIGRATIONS.map((m) => m.version));
      expect(await migrate(f)).toEqual([]);
      const rows = await f.query<{ version: number; name: string }>(
        'SELECT version, name FROM schema_migrations ORDER BY version',
      );
      expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
      await f.tx((q) => syncDirectory(q, true));
      await f.tx((q) => syncDirectory(q, true));
      expect((await f.query<{ n: number }>('SELECT count(*)::int AS n FROM blockchains'))[0]!.n).toBe(11);
    } finally {
      await fresh.db.close().catch(() => {});
      await fresh.drop();
    }
  });

  maybe('refuses a database with a migration this release does not know', async () => {
    await expect(migrate(db, MIGRATIONS.slice(0, 0))).rejects.toThrow(/unknown to this release/);
  });

  maybe('commits a transaction when it resolves and rolls it back when it throws', async () => {
    const id = randomUUID();
    await expect(
      db.tx(async (q) => {
        await q.query('INSERT INTO profiles (profile_id, name, created_at) VALUES ($1, $2, now())', [
          id,
          'rolled back',
        ]);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await db.query('SELECT 1 FROM profiles WHERE profile_id = $1', [id])).toHaveLength(0);
    await db.tx((q) =>
      q.query('INSERT INTO profiles (profile_id, name, created_at) VALUES ($1, $2, now())', [id, 'kept']),
    );
    expect(await db.query('SELECT 1 FROM profiles WHERE profile_id = $1', [id])).toHaveLength(1);
  });

  maybe('stores money as numeric(78,0): exact up to 2^256 − 1, never negative', async () => {
    const p = await wallets.profiles.createProfile('money');
    await masterKeys.insertMasterKey(testMasterKey());
    const w = await wallets.store.createWallet(p.profile_id, { blockchain_ids: [blockchainId('ethereum-mainnet')] });
    const asset = (
      await db.query<{ asset_id: string }>(`SELECT asset_id FROM assets WHERE symbol = 'ETH' AND blockchain_id = $1`, [
        blockchainId('ethereum-mainnet'),
      ])
    )[0]!.asset_id;
    const max = (2n ** 256n - 1n).toString();
    await wallets.balances.setBalance(w.wallet_id, asset, max);
    const b = await wallets.balances.getBalance(p.profile_id, w.wallet_id, asset);
    expect(b.amount_base_units).toBe(max);
    expect(b.amount).toBe(`${max.slice(0, -18)}.${max.slice(-18)}`);
    await expect(wallets.balances.setBalance(w.wallet_id, asset, '1.5')).rejects.toThrow(RangeError);
    await expect(db.query('UPDATE balances SET amount = -1 WHERE wallet_id = $1', [w.wallet_id])).rejects.toThrow();
  });

  maybe('validates master key points before storing them', async () => {
    const mk = testMasterKey();
    await expect(
      masterKeys.insertMasterKey({ ...mk, secp256k1: { ...mk.secp256k1, publicKey: new Uint8Array(33) } }),
    ).rejects.toThrow();
    await expect(
      masterKeys.insertMasterKey({ ...mk, ed25519: { ...mk.ed25519, chainCode: new Uint8Array(31) } }),
    ).rejects.toThrow(RangeError);
  });

  maybe('claims idempotency keys inside the creating transaction; mismatch, replay, rollback and expiry', async () => {
    const p = await wallets.profiles.createProfile('idem');
    const key = randomUUID();
    const claim = (
      q: Parameters<IdempotencyStore['completeIdempotent']>[0],
      hash = 'h1',
      path = '/x',
      id = p.profile_id,
    ) => idempotency.claimIdempotent(q, id, key, 'POST', path, hash, 1000, 2000);
    // Concurrent claims of one key: exactly one creates, the others replay its committed record.
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        db.tx(async (q) => {
          const c = await claim(q);
          if (c.kind === 'started')
            await idempotency.completeIdempotent(q, p.profile_id, key, c.claimId, 201, { a: 1 });
          return c.kind;
        }),
      ),
    );
    expect(results.filter((k) => k === 'started')).toHaveLength(1);
    expect(results.filter((k) => k === 'replay')).toHaveLength(19);
    expect(await idempotency.peekIdempotent(p.profile_id, key, 'POST', '/x', 'h1')).toEqual({
      kind: 'replay',
      status: 201,
      body: { a: 1 },
    });
    expect((await idempotency.peekIdempotent(p.profile_id, key, 'POST', '/x', 'h2')).kind).toBe('mismatch');
    expect((await db.tx((q) => claim(q, 'h1', '/y'))).kind).toBe('mismatch');
    // A transaction that dies after claiming (a crash, an error) leaves the key free.
    const other = await wallets.profiles.createProfile('other');
    await expect(
      db.tx(async (q) => {
        const c = await claim(q, 'h9', '/x', other.profile_id);
        expect(c.kind).toBe('started');
        throw new Error('crash before commit');
      }),
    ).rejects.toThrow('crash before commit');
    expect((await idempotency.peekIdempotent(other.profile_id, key, 'POST', '/x', 'h9')).kind).toBe('absent');
    // Another profile's identical key is independent.
    expect((await db.tx((q) => claim(q, 'h9', '/x', other.profile_id))).kind).toBe('started');
    // An IN_FLIGHT record committed by an earlier version (claims used to commit alone) is taken over.
    const legacy = randomUUID();
    await db.query(
      `INSERT INTO idempotency_keys (profile_id, idempotency_key, claim_id, method, path, request_hash, state, created_at,
         expires_at) VALUES ($1,$2,$3,'POST','/x','h1','IN_FLIGHT',$4,$5)`,
      [p.profile_id, legacy, randomUUID(), now, new Date(now.getTime() + 60_000)],
    );
    expect((await idempotency.peekIdempotent(p.profile_id, legacy, 'POST', '/x', 'h1')).kind).toBe('absent');
    expect(
      (await db.tx((q) => idempotency.claimIdempotent(q, p.profile_id, legacy, 'POST', '/x', 'h1', 1000, 2000))).kind,
    ).toBe('started');
    // After the retention window the key is forgotten: purged, and free again.
    now = new Date(now.getTime() + 1001);
    expect((await idempotency.peekIdempotent(p.profile_id, key, 'POST', '/x', 'h1')).kind).toBe('absent');
    expect(await idempotency.purgeIdempotency()).toBeGreaterThanOrEqual(1);
    expect((await db.tx((q) => claim(q, 'h2'))).kind).toBe('started');
  });

  maybe('keeps the audit log append-only', async () => {
    await db.query(`INSERT INTO audit_log (audit_id, at, action, details) VALUES ($1, now(), 'test', '{}'::jsonb)`, [
      randomUUID(),
    ]);
    await expect(db.query(`UPDATE audit_log SET action = 'x'`)).rejects.toThrow(/append-only/);
    await expect(db.query('DELETE FROM audit_log')).rejects.toThrow(/append-only/);
    await expect(db.exec('TRUNCATE audit_log')).rejects.toThrow(/append-only/);
  });

  if (kind === 'pglite') {
    it('persists in the data folder across restarts', async () => {
      const before = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM profiles');
      await db.close();
      db = await openPglite(join(dir, 'pgdata'));
      expect(await migrate(db)).toEqual([]);
      expect(await db.query<{ n: number }>('SELECT count(*)::int AS n FROM profiles')).toEqual(before);
    });
  }
});
