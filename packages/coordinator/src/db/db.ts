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
 */
import { mkdir } from 'node:fs/promises';
import type pg from 'pg';

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
   * session). PostgreSQL: a session-level advisory lock (`pg_try_advisory_lock(hashtext(name))`) on
   * a connection held for the duration; a waiter polls (25 → 250 ms) without holding a connection,
   * so waiters never exhaust the pool. PGlite (one process): an in-process queue per name.
   * Not re-entrant. `fn` may use the pool (other connections) freely.
   */
  lock<T>(name: string, fn: () => Promise<T>): Promise<T>;
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

/** An in-process lock queue per name (PGlite: one process holds the database). */
function localLocks(): Db['lock'] {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const prev = tails.get(name) ?? Promise.resolve();
    const run = prev.then(fn, fn);
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

/**
 * Open an embedded PGlite database.
 * @param dataDir folder holding the database files (created when missing); `undefined` = in memory
 */
export async function openPglite(dataDir?: string): Promise<Db> {
  const { PGlite } = await import('@electric-sql/pglite');
  if (dataDir !== undefined) await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const lite = dataDir === undefined ? await PGlite.create() : await PGlite.create(dataDir);
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
  return {
    dialect: 'pglite',
    ...base,
    tx: (fn) => lite.transaction((t) => fn(wrap(t))),
    lock: localLocks(),
    close: () => lite.close(),
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
    async lock<T>(name: string, fn: () => Promise<T>): Promise<T> {
      let wait = 25;
      for (;;) {
        const client = await pool.connect();
        let broken = false;
        try {
          const r = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [name]);
          if (r.rows[0]?.ok === true) {
            try {
              return await fn();
            } finally {
              // a failed unlock means the connection is gone, and its lock with it: never pooled again
              await client.query('SELECT pg_advisory_unlock(hashtext($1))', [name]).catch(() => {
                broken = true;
              });
            }
          }
        } catch (e) {
          broken = true;
          throw e;
        } finally {
          client.release(broken ? true : undefined);
        }
        await new Promise((r) => setTimeout(r, wait));
        wait = Math.min(250, wait * 2);
      }
    },
    async listen(channel, onNotify) {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new RangeError('channel must be a lowercase SQL identifier');
      let stopped = false;
      let client: pg.Client | undefined;
      let retry: NodeJS.Timeout | undefined;
      const connect = async (): Promise<void> => {
        const c = new pgModule.Client({ connectionString });
        c.on('error', () => {}); // 'end' follows; reconnect there
        c.on('notification', (n) => onNotify(n.payload ?? ''));
        c.on('end', () => {
          if (client === c) client = undefined;
          if (!stopped) retry = setTimeout(() => void connect().catch(() => {}), 500);
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
        await client?.end().catch(() => {});
      };
    },
    close: () => pool.end(),
  };
}
