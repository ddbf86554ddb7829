/**
 * The coordinator's database boundary: one {@link Db} interface, two implementations speaking the
 * same PostgreSQL SQL (DESIGN.md §6):
 *
 * - {@link openPglite}: embedded PostgreSQL (PGlite, WASM) persisted in a data folder, or in memory;
 * - {@link openPostgres}: a PostgreSQL server through a `pg` connection pool (`DATABASE_URL`).
 *
 * Value conventions, identical on both: parameters are `$1…` placeholders; money is
 * `numeric(78,0)` base units read back as decimal strings (never floats); 64-bit integers are
 * cast to `text` or `int` in SQL so both drivers return the same JS type; JSON is passed as a
 * string and cast with `::jsonb`, and read back parsed.
 *
 * Over 400 lines: both implementations and the PGlite folder lock share the one interface and its
 * conventions here, so that the two stay side by side (a split would separate what must agree).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { link, mkdir, readFile, realpath, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { CoordinatorError } from '../errors.js';

/** Something that runs SQL: the database itself or an open transaction. */
export interface Queryable {
  /** Run one parameterised statement and return its rows. */
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Run a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/** A database handle. */
export interface Db extends Queryable {
  readonly dialect: 'pglite' | 'postgres';
  /**
   * Run `fn` in one transaction (READ COMMITTED): committed when `fn` resolves, rolled back when
   * it throws (the error is rethrown). Every multi-row change of the coordinator goes through here.
   */
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  /**
   * Run `fn` holding the exclusive lock `name` across EVERY process on this database (replicas,
   * issue #25), released when `fn` settles (or when the holding process dies: PostgreSQL ends its
   * session). PostgreSQL: a session-level advisory lock keyed by the schema and `name`
   * (`hashtextextended(current_schema() || '/' || name, 0)`: two instances in two schemas of one
   * database never contend) on a connection held for the duration — at most half the pool's
   * connections are held by locks at once (further lockers wait), so the holders' own queries always
   * find a connection; a waiter first queues behind the other
   * waiters of this process (in-process, per name), then polls (25 → 250 ms) without holding a
   * connection, so waiters never exhaust the pool. PGlite (one process): the in-process queue only.
   * `signal` aborts when the lock is lost while `fn` runs (PostgreSQL: the holding connection
   * dropped, so another process may now hold it): `fn` should stop changing what the lock guards.
   * Not re-entrant. `fn` may use the pool (other connections) freely.
   * @returns what `fn` resolves (also when the lock was lost meanwhile)
   * @throws what `fn` throws; the database's error when the lock cannot be tried
   */
  lock<T>(name: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T>;
  /**
   * PostgreSQL only: `LISTEN channel` on a dedicated connection, calling `onNotify(payload)` for
   * each notification (`pg_notify`), re-listening after the connection drops (each reconnect calls
   * `onNotify('')` once, so a listener re-reads what it may have missed). Resolves with the stop
   * function. Undefined on PGlite (a single process has nobody to hear from).
   */
  readonly listen?: (channel: string, onNotify: (payload: string) => void) => Promise<() => Promise<void>>;
  /** Release the connection(s) and, for PGlite, flush the data folder. */
  close(): Promise<void>;
}

/** An in-process lock queue per name (PGlite: one process holds the database; PostgreSQL: before the advisory lock). */
function localLocks(): Db['lock'] {
  const tails = new Map<string, Promise<unknown>>();
  const never = new AbortController().signal;
  return <T>(name: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> => {
    const prev = tails.get(name) ?? Promise.resolve();
    const go = () => fn(never);
    const run = prev.then(go, go);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    tails.set(name, tail);
    void tail.then(() => {
      if (tails.get(name) === tail) tails.delete(name);
    });
    return run;
  };
}

/** A counting semaphore: `acquire()` resolves with the release function once one of `n` slots is free. */
function semaphore(n: number): () => Promise<() => void> {
  let free = n;
  const waiting: (() => void)[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else free++;
  };
  return () => {
    if (free > 0) {
      free--;
      return Promise.resolve(once(release));
    }
    return new Promise((resolve) => waiting.push(() => resolve(once(release))));
  };
}

/** `f` callable once (later calls do nothing). */
function once(f: () => void): () => void {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      f();
    }
  };
}

/**
 * The lock file of a PGlite data folder: `<pid>\n<hostname>\n<process token>\n<lock nonce>\n` of the
 * process holding it (the token: random per process, so a file left by an earlier process that had
 * the same pid — a container restarted as pid 1 — is told from one this process wrote; the nonce:
 * random per lock, so a release removes only the file it created).
 */
export const PGLITE_LOCK_FILE = 'custodian.lock';

/**
 * This process's folder-lock state, shared by every copy of this module loaded in the process
 * (a global symbol): its token, the lock files it holds (real paths: a second open in this process
 * is refused too, through a symlink as well), and those it released.
 */
const folderLocks = ((globalThis as Record<symbol, unknown>)[Symbol.for('custodian.pglite-folder-locks')] ??= {
  token: randomBytes(8).toString('hex'),
  held: new Set<string>(),
  released: new Set<string>(),
}) as { token: string; held: Set<string>; released: Set<string> };

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

interface LockHolder {
  pid: number;
  host: string;
  token: string;
  raw: string;
}

async function readHolder(path: string): Promise<LockHolder | undefined> {
  try {
    const raw = await readFile(path, 'utf8');
    const [pid, host, token] = raw.split('\n');
    const n = Number(pid);
    return Number.isSafeInteger(n) && n > 0 ? { pid: n, host: host ?? '', token: token ?? '', raw } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a lock file found on the folder may be taken over: unreadable; or written on this host by
 * a process that is dead; or naming this very pid but written by an earlier process (another
 * token: the pid was reused) — or by this process, which released it since (its unlink failed).
 * A file this process wrote and still holds, or did not release, is HELD.
 */
function staleLock(holder: LockHolder | undefined, path: string, me: { pid: number; host: string }): boolean {
  if (holder === undefined) return true;
  if (holder.host !== me.host) return false;
  if (holder.pid !== me.pid) return !processAlive(holder.pid);
  if (holder.token !== folderLocks.token) return true;
  return folderLocks.released.has(path) && !folderLocks.held.has(path);
}

/**
 * Take the lock file of a PGlite data folder: PGlite is one process, and a second process on the
 * same folder would corrupt it. Keyed by the folder's real path (symbolic links resolved; the
 * folder must exist). Created atomically (written under a temporary name, then `link`ed: fails
 * when it exists); a stale lock ({@link staleLock}: its process is dead, same host) is taken over.
 * Residual race: two processes taking over the same STALE lock at the same instant.
 * @returns the release (removes the file only when it is still the one this call created)
 * @throws CoordinatorError REPLICA_NEEDS_POSTGRES when a live process (this one included, or one on
 *   another host) holds the folder
 */
async function lockFolder(dir: string): Promise<() => Promise<void>> {
  const real = await realpath(dir);
  const path = join(real, PGLITE_LOCK_FILE);
  const me = { pid: process.pid, host: hostname() };
  const refuse = (holder: { pid: number; host: string }) =>
    new CoordinatorError(
      'REPLICA_NEEDS_POSTGRES',
      `REPLICA_NEEDS_POSTGRES: the data folder ${real} is held by pid ${holder.pid}` +
        `${holder.host !== me.host ? ` on ${holder.host}` : ''} (lock file ${path}): PGlite is single-process, ` +
        'so a second coordinator cannot open it; run several coordinator replicas on PostgreSQL with ' +
        '--database-url / DATABASE_URL (docs/operator-guide.md "Several coordinator replicas"). ' +
        'If that process is not a coordinator, remove the lock file.',
    );
  if (folderLocks.held.has(path)) throw refuse(me);
  const mine = `${me.pid}\n${me.host}\n${folderLocks.token}\n${randomBytes(8).toString('hex')}\n`;
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(tmp, mine, { mode: 0o600 });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await link(tmp, path);
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      const holder = await readHolder(path);
      if (!staleLock(holder, path, me) || attempt >= 3) throw refuse(holder ?? { pid: 0, host: '?' });
      await unlink(path).catch(() => undefined);
    }
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  folderLocks.held.add(path);
  folderLocks.released.delete(path);
  const onExit = () => {
    try {
      if (readFileSync(path, 'utf8') === mine) unlinkSync(path);
    } catch {}
  };
  process.once('exit', onExit);
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    process.off('exit', onExit);
    folderLocks.held.delete(path);
    folderLocks.released.add(path);
    const holder = await readHolder(path);
    if (holder?.raw === mine) await unlink(path).catch(() => undefined);
  };
}

/**
 * Open an embedded PGlite database.
 * @param dataDir folder holding the database files (created when missing), locked for this process
 *   until `close()` (its lock file {@link PGLITE_LOCK_FILE}); `undefined` = in memory
 * @throws CoordinatorError REPLICA_NEEDS_POSTGRES when another live process holds `dataDir`
 */
export async function openPglite(dataDir?: string): Promise<Db> {
  const { PGlite } = await import('@electric-sql/pglite');
  if (dataDir !== undefined) await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const unlock = dataDir !== undefined ? await lockFolder(dataDir) : async () => {};
  let lite: InstanceType<typeof PGlite>;
  try {
    lite = dataDir === undefined ? await PGlite.create() : await PGlite.create(dataDir);
  } catch (e) {
    await unlock();
    throw e;
  }
  const wrap = (q: {
    query: (s: string, p?: unknown[]) => Promise<{ rows: unknown[] }>;
    exec: (s: string) => Promise<unknown>;
  }): Queryable => ({
    async query<T>(sql: string, params: readonly unknown[] = []) {
      const r = await q.query(sql, [...params]);
      return r.rows as T[];
    },
    async exec(sql: string) {
      await q.exec(sql);
    },
  });
  const base = wrap(lite);
  let closing: Promise<void> | undefined;
  return {
    dialect: 'pglite',
    ...base,
    tx: (fn) => lite.transaction((t) => fn(wrap(t))),
    lock: localLocks(),
    close: () => {
      closing ??= lite.close().finally(unlock);
      return closing;
    },
  };
}

/** Options of {@link openPostgres}. */
export interface PostgresOptions {
  /** `search_path` of every connection (a schema name, e.g. a test's private schema). */
  schema?: string;
  /** Maximum pool size (default 10). */
  max?: number;
}

/**
 * Open a pool on a PostgreSQL server.
 * @param connectionString a `postgres://` URL (the `DATABASE_URL`)
 * @throws RangeError when `schema` is not a plain identifier
 */
export async function openPostgres(connectionString: string, opts: PostgresOptions = {}): Promise<Db> {
  if (opts.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(opts.schema)) {
    throw new RangeError('schema must be a lowercase SQL identifier');
  }
  const { default: pgModule } = await import('pg');
  const pool = new pgModule.Pool({
    connectionString,
    max: opts.max ?? 10,
    ...(opts.schema !== undefined ? { options: `-c search_path=${opts.schema}` } : {}),
  });
  // An idle client that loses its connection emits 'error' on the pool; without a listener Node
  // would crash the process. The next query gets a fresh connection.
  pool.on('error', () => {});
  const local = localLocks();
  // Connections held by advisory locks at once in this process: at most half the pool, so the
  // holders' own queries (their `fn`s use the pool) always find a connection — never a deadlock of
  // holders waiting for connections other holders hold.
  const slots = semaphore(Math.max(1, Math.floor((opts.max ?? 10) / 2)));
  const wrap = (c: pg.Pool | pg.PoolClient): Queryable => ({
    async query<T>(sql: string, params: readonly unknown[] = []) {
      const r = await c.query(sql, [...params]);
      return r.rows as T[];
    },
    async exec(sql: string) {
      await c.query(sql);
    },
  });
  return {
    dialect: 'postgres',
    ...wrap(pool),
    async tx(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const out = await fn(wrap(client));
        await client.query('COMMIT');
        return out;
      } catch (e) {
        await client.query('ROLLBACK').catch(() => {});
        throw e;
      } finally {
        client.release();
      }
    },
    lock: <T>(name: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> =>
      local(name, async () => {
        let wait = 25;
        for (;;) {
          const freeSlot = await slots();
          let client: pg.PoolClient;
          try {
            client = await pool.connect();
          } catch (e) {
            freeSlot();
            throw e;
          }
          let got: boolean;
          try {
            const r = await client.query<{ ok: boolean }>(
              `SELECT pg_try_advisory_lock(hashtextextended(coalesce(current_schema(), '') || '/' || $1, 0)) AS ok`,
              [name],
            );
            got = r.rows[0]?.ok === true;
          } catch (e) {
            client.release(true);
            freeSlot();
            throw e;
          }
          if (!got) {
            client.release();
            freeSlot();
            await new Promise((r) => setTimeout(r, wait));
            wait = Math.min(250, wait * 2);
            continue;
          }
          // held: the lock lives as long as this session; tell fn when it ends
          const lost = new AbortController();
          const onLost = () => lost.abort(new Error(`lock ${name}: the database session holding it ended`));
          client.on('error', onLost);
          client.on('end', onLost);
          try {
            return await fn(lost.signal);
          } finally {
            client.off('error', onLost);
            client.off('end', onLost);
            let broken = lost.signal.aborted;
            if (!broken) {
              // a failed unlock means the connection is gone, and its lock with it: never pooled again
              await client
                .query(`SELECT pg_advisory_unlock(hashtextextended(coalesce(current_schema(), '') || '/' || $1, 0))`, [
                  name,
                ])
                .catch(() => {
                  broken = true;
                });
            }
            client.release(broken ? true : undefined);
            freeSlot();
          }
        }
      }),
    async listen(channel, onNotify) {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new RangeError('channel must be a lowercase SQL identifier');
      let stopped = false;
      let client: pg.Client | undefined;
      let retry: NodeJS.Timeout | undefined;
      // one reconnect attempt at a time, every 500 ms until one succeeds or the listener stops
      const reconnect = () => {
        if (stopped || retry !== undefined) return;
        retry = setTimeout(() => {
          retry = undefined;
          connect().catch(reconnect);
        }, 500);
        retry.unref();
      };
      const connect = async (): Promise<void> => {
        const c = new pgModule.Client({ connectionString, keepAlive: true });
        c.on('error', () => {}); // 'end' follows
        c.on('notification', (n) => {
          if (client === c) onNotify(n.payload ?? '');
        });
        c.on('end', () => {
          if (client !== c) return;
          client = undefined;
          reconnect();
        });
        try {
          await c.connect();
          await c.query(`LISTEN ${channel}`);
        } catch (e) {
          await c.end().catch(() => {});
          throw e;
        }
        if (stopped) {
          await c.end().catch(() => {});
          return;
        }
        client = c;
        onNotify('');
      };
      await connect();
      return async () => {
        stopped = true;
        clearTimeout(retry);
        const c = client;
        client = undefined;
        await c?.end().catch(() => {});
      };
    },
    close: () => pool.end(),
  };
}
