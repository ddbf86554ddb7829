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
  /** Release the connection(s) and, for PGlite, flush the data folder. */
  close(): Promise<void>;
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
    close: () => pool.end(),
  };
}
