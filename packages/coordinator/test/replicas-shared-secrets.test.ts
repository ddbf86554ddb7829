/**
 * Issue #25 (coordinator replicas), shared secrets and one-time state on a REAL PostgreSQL server —
 * several coordinators (each its own `Db` pool and data folder) on ONE private schema:
 *
 * - webhook KEK: a replica whose KEK cannot open the active signing key refuses to start
 *   (WEBHOOK_KEK_MISMATCH) and retires nothing (before: each replica retired the other's key and
 *   made its own, over and over); a single coordinator whose `webhook-kek.key` was lost likewise;
 *   `webhooks.replaceUnreadableKeys` is the explicit way out when the KEK is gone for good.
 * - bootstrap token: a second replica starting on an uninitialised instance keeps the token the
 *   first one wrote (before: it overwrote the hash, so the first file stopped working), logs where
 *   it is, and `admin init` with it works through either replica.
 * - deposit watcher cursor: `PgWatcherStore.commit` is a compare-and-set on the cursor row it read;
 *   of two watchers of one chain that read the same cursor, the second commit is refused
 *   (WATCHER_CURSOR_MOVED) and leaves nothing; after a re-read it commits.
 */
import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type CoordinatorOptions, createCoordinator } from '../src/coordinator.js';
import { type Db, openPostgres } from '../src/db/db.js';
import { migrate } from '../src/db/migrations.js';
import { PgWatcherStore } from '../src/transfers/watcher-store.js';
import { PG_URL, postgresReachable } from './helpers.js';

const pgUp = await postgresReachable();

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** `n` Db handles (own pools) on one fresh migrated schema, dropped after the test. */
async function shared(n: number): Promise<Db[]> {
  const schema = `t_${randomBytes(8).toString('hex')}`;
  const a = new pg.Client({ connectionString: PG_URL });
  await a.connect();
  cleanups.push(() => a.end());
  await a.query(`CREATE SCHEMA ${schema}`);
  cleanups.push(() => a.query(`DROP SCHEMA ${schema} CASCADE`));
  const dbs: Db[] = [];
  for (let i = 0; i < n; i++) {
    const db = await openPostgres(PG_URL, { schema, max: 5 });
    cleanups.push(() => db.close());
    dbs.push(db);
  }
  await migrate(dbs[0] as Db);
  return dbs;
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'custodian-secrets-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A coordinator on `db` with data folder `dir` (built, not started); `logs` collects its log lines. */
async function make(db: Db, dir: string, extra: Partial<CoordinatorOptions> = {}) {
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const c = await createCoordinator({
    db,
    dataDir: dir,
    mode: 'development',
    listen: { port: 0 },
    logger: { level: 'info', stream },
    transfers: { runPipeline: false },
    admin: { scrypt: { N: 1 << 10, r: 8, p: 1 } },
    replicas: { heartbeatMs: 200, ttlMs: 5000, leaseMs: 1000, busPollMs: 200 },
    ...extra,
    webhooks: { runWorker: false, ...extra.webhooks },
  });
  cleanups.push(() => c.stop());
  return { c, logs };
}

type KeyRow = { kid: string; retires_at: Date | null };
const keyRows = (db: Db) =>
  db.query<KeyRow>('SELECT kid, retires_at FROM webhook_signing_keys ORDER BY created_at, kid');

describe.skipIf(!pgUp)('webhook KEK shared by the replicas', () => {
  it('a replica with another KEK refuses to start and retires nothing; with the file copied it signs with the same key', async () => {
    const dbs = await shared(3);
    const dirs = [await tempDir(), await tempDir(), await tempDir()];
    const first = await make(dbs[0]!, dirs[0]!);
    const kid = (await first.c.webhooks.keys.signingKey()).kid;
    const kekBytes = await readFile(join(dirs[0]!, 'webhook-kek.key'));

    const refused = await make(dbs[1]!, dirs[1]!).then(
      () => undefined,
      (e: unknown) => e as { code?: string; message: string },
    );
    expect(refused?.code).toBe('WEBHOOK_KEK_MISMATCH');
    expect(refused?.message).toContain('webhook-kek.key');
    expect(refused?.message).toContain('CUSTODIAN_WEBHOOK_KEK');
    expect(refused?.message).not.toContain(kekBytes.toString('hex'));
    expect(refused?.message).not.toContain(kekBytes.toString('base64'));
    // nothing retired, no second key: the first replica keeps signing with its key
    expect(await keyRows(dbs[0]!)).toEqual([{ kid, retires_at: null }]);
    expect((await first.c.webhooks.keys.signingKey()).kid).toBe(kid);

    await copyFile(join(dirs[0]!, 'webhook-kek.key'), join(dirs[2]!, 'webhook-kek.key'));
    const third = await make(dbs[2]!, dirs[2]!);
    expect((await third.c.webhooks.keys.signingKey()).kid).toBe(kid);
    expect(await keyRows(dbs[0]!)).toEqual([{ kid, retires_at: null }]);
  });

  it('CUSTODIAN_WEBHOOK_KEK-style option: two different KEKs refuse, the same one starts', async () => {
    const dbs = await shared(3);
    const kek = new Uint8Array(randomBytes(32));
    const first = await make(dbs[0]!, await tempDir(), { webhooks: { keyEncryptionKey: kek } });
    const kid = (await first.c.webhooks.keys.signingKey()).kid;
    await expect(
      make(dbs[1]!, await tempDir(), { webhooks: { keyEncryptionKey: new Uint8Array(randomBytes(32)) } }),
    ).rejects.toMatchObject({ code: 'WEBHOOK_KEK_MISMATCH' });
    const same = await make(dbs[2]!, await tempDir(), { webhooks: { keyEncryptionKey: kek } });
    expect((await same.c.webhooks.keys.signingKey()).kid).toBe(kid);
    expect(await keyRows(dbs[0]!)).toEqual([{ kid, retires_at: null }]);
  });

  it('a single coordinator whose webhook-kek.key was lost gets the same error; replaceUnreadableKeys makes a new key', async () => {
    // one handle per start (a stopped coordinator closes its database)
    const dbs = await shared(3);
    const dir = await tempDir();
    const one = await make(dbs[0]!, dir);
    const kid = (await one.c.webhooks.keys.signingKey()).kid;
    await one.c.stop();
    await unlink(join(dir, 'webhook-kek.key'));
    await expect(make(dbs[1]!, dir)).rejects.toMatchObject({ code: 'WEBHOOK_KEK_MISMATCH' });
    expect(await keyRows(dbs[2]!)).toEqual([{ kid, retires_at: null }]);
    // the KEK is gone for good: the operator says so explicitly
    const again = await make(dbs[2]!, dir, { webhooks: { replaceUnreadableKeys: true } });
    const next = (await again.c.webhooks.keys.signingKey()).kid;
    expect(next).not.toBe(kid);
    const rows = await keyRows(dbs[2]!);
    expect(rows.find((r) => r.kid === kid)?.retires_at).not.toBeNull();
    expect(rows.find((r) => r.kid === next)?.retires_at).toBeNull();
  });
});

async function init(url: string, token: string, email: string) {
  const r = await fetch(`${url}/admin/v1/init`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      email,
      name: 'First Admin',
      password: 'correct horse battery staple',
      bootstrap_token: token,
    }),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

/** The replicas of the bootstrap tests share one webhook KEK (as the operator guide requires). */
const SAME_KEK = { webhooks: { keyEncryptionKey: new Uint8Array(32).fill(4) } };

describe.skipIf(!pgUp)('bootstrap token with several replicas', () => {
  it("a second replica keeps the first replica's token, logs where it is, and init with it works through either", async () => {
    const dbs = await shared(2);
    const dirs = [await tempDir(), await tempDir()];
    const a = await make(dbs[0]!, dirs[0]!, SAME_KEK);
    await a.c.start();
    const fileA = join(dirs[0]!, 'bootstrap-token');
    const token = (await readFile(fileA, 'utf8')).trim();

    const b = await make(dbs[1]!, dirs[1]!, SAME_KEK);
    const urlB = await b.c.start();
    // B wrote no token of its own, and named A's file (never the token)
    await expect(stat(join(dirs[1]!, 'bootstrap-token'))).rejects.toThrow(/ENOENT/);
    expect(b.logs.join('')).toContain(fileA);
    expect(b.logs.join('')).not.toContain(token);
    expect((await readFile(fileA, 'utf8')).trim()).toBe(token);

    const ok = await init(urlB, token, 'first@example.com');
    expect(ok.status).toBe(201);
    expect(await a.c.users.initialised()).toBe(true);
  });

  it('a replica restarting after another took over keeps the live writer’s token (and drops its stale file)', async () => {
    const dbs = await shared(3);
    const dirs = [await tempDir(), await tempDir()];
    const a = await make(dbs[0]!, dirs[0]!, SAME_KEK);
    await a.c.start();
    const fileA = join(dirs[0]!, 'bootstrap-token');
    const tokenA = (await readFile(fileA, 'utf8')).trim();
    // A stops for good (no live writer): B, starting, makes its own token
    await a.c.stop();
    const b = await make(dbs[1]!, dirs[1]!, SAME_KEK);
    const urlB = await b.c.start();
    const fileB = join(dirs[1]!, 'bootstrap-token');
    const tokenB = (await readFile(fileB, 'utf8')).trim();
    expect(tokenB).not.toBe(tokenA);
    // A comes back while B is alive: it keeps B's token and removes its own stale file
    const a2 = await make(dbs[2]!, dirs[0]!, SAME_KEK);
    const urlA = await a2.c.start();
    await expect(stat(fileA)).rejects.toThrow(/ENOENT/);
    expect(a2.logs.join('')).toContain(fileB);
    expect((await init(urlA, tokenA, 'x@example.com')).body.code).toBe('BOOTSTRAP_TOKEN_INVALID');
    expect((await init(urlA, tokenB, 'first@example.com')).status).toBe(201);
    expect(urlB).toBeTruthy();
  });
});

describe.skipIf(!pgUp)('deposit watcher cursor: compare-and-set', () => {
  const commitOf = (height: number, balance: string) => ({
    cursor: { height, hash: height.toString(16).padStart(64, '0') },
    seen: [`t${height}:addr:native`],
    balances: [{ address: 'addr', asset: 'native', balance }],
    utxosAdded: [],
    utxosSpent: [],
    events: [],
  });
  const balance = async (db: Db) =>
    (await db.query<{ balance: string }>("SELECT balance::text AS balance FROM watcher_balances WHERE chain = 'c'"))[0]
      ?.balance;

  it('two watchers that read the same cursor: the second commit is refused and leaves nothing', async () => {
    const dbs = await shared(2);
    const clock = () => new Date();
    const w1 = new PgWatcherStore(dbs[0]!, clock);
    const w2 = new PgWatcherStore(dbs[1]!, clock);
    // first cursor: both read "none"
    expect(await w1.getCursor('c')).toBeNull();
    expect(await w2.getCursor('c')).toBeNull();
    await w1.commit('c', commitOf(100, '5'));
    await expect(w2.commit('c', commitOf(100, '7'))).rejects.toMatchObject({ code: 'WATCHER_CURSOR_MOVED' });
    expect(await balance(dbs[0]!)).toBe('5');
    // both read cursor 100; the first advances, the second (a stale batch) is dropped
    expect(await w1.getCursor('c')).toMatchObject({ height: 100 });
    expect(await w2.getCursor('c')).toMatchObject({ height: 100 });
    await w1.commit('c', commitOf(101, '6'));
    await expect(w2.commit('c', commitOf(101, '8'))).rejects.toMatchObject({ code: 'WATCHER_CURSOR_MOVED' });
    expect(await balance(dbs[0]!)).toBe('6');
    // a commit that keeps the cursor (mempool only) also moves the version: a racing one is refused
    expect(await w1.getCursor('c')).toMatchObject({ height: 101 });
    expect(await w2.getCursor('c')).toMatchObject({ height: 101 });
    await w1.commit('c', commitOf(101, '6'));
    await expect(w2.commit('c', commitOf(101, '9'))).rejects.toMatchObject({ code: 'WATCHER_CURSOR_MOVED' });
    expect(await w2.seen('c', ['t101:addr:native'])).toEqual(new Set(['t101:addr:native']));
    // after a re-read the second watcher commits; its own commits chain without re-reading
    expect(await w2.getCursor('c')).toMatchObject({ height: 101 });
    await w2.commit('c', commitOf(102, '10'));
    await w2.commit('c', commitOf(103, '11'));
    expect(await w2.getCursor('c')).toEqual({ height: 103, hash: (103).toString(16).padStart(64, '0') });
    expect(await balance(dbs[0]!)).toBe('11');
    await expect(w1.commit('c', commitOf(102, '12'))).rejects.toMatchObject({ code: 'WATCHER_CURSOR_MOVED' });
    expect(await balance(dbs[0]!)).toBe('11');
  });
});
