/**
 * The one-time bootstrap token of instance initialisation (issue #29): `POST /admin/v1/init` is
 * not first-come-first-served. While the instance has no Admin, `start()` makes sure a token
 * exists: 32 random bytes (`cbt_` + base64url), of which only the SHA-256 is stored (table
 * `bootstrap_token`, one row), the token itself written to the token file (default
 * `<dataDir>/bootstrap-token`, mode 0600, folder 0700; atomically: temporary file, then rename)
 * and never logged — the log names the file. A restart keeps a token whose file still matches the
 * stored hash and otherwise makes a new one (a lost file is replaced by restarting). The init
 * consumes it in its transaction ({@link BootstrapTokens.consume}: constant-time comparison of
 * the hashes, row deleted) and the file is deleted after the commit; once initialised, a start
 * deletes a file left behind (e.g. by another replica).
 *
 * Several replicas (issue #25): the row records its writer (replica id, host, token file). A
 * replica never replaces a token another replica wrote while that writer is alive (heartbeat,
 * replicas/registry.ts): it deletes a stale token file of its own and logs the host and file where
 * the valid token is; `admin init` with it works through any replica (the hash is in the
 * database). It makes a new token only when none is stored, when the stored one was written to
 * its own token file (same host and path: the lost-file recovery above), or when its writer is
 * gone (stopped, or no heartbeat within the TTL). The decision runs under an advisory lock, so two
 * replicas starting together make one token.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { safeEqual } from '../admin/passwords.js';
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { Startable } from '../lifecycle.js';
import { isReplicaAlive } from '../replicas/registry.js';
import { type Clock, randomToken, sha256Hex } from '../util.js';

/** Dependencies of {@link BootstrapTokens}. */
export interface BootstrapComponents {
  readonly db: Db;
  readonly clock: Clock;
  /** The token file; undefined: no token is ever made and init is refused. */
  readonly file: string | undefined;
  readonly log: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
  /**
   * This process as a replica (id, liveness TTL in ms): a token written by another live replica is
   * kept. Undefined: every other writer counts as gone (one process on its database).
   */
  readonly replica?: { readonly id: string; readonly ttlMs: number };
}

interface TokenRow {
  token_hash: string;
  writer_replica: string | null;
  writer_host: string | null;
  writer_file: string | null;
}

/** The bootstrap token: made at start while uninitialised, consumed by the init. */
export class BootstrapTokens implements Startable {
  constructor(private readonly c: BootstrapComponents) {}

  private async initialised(q: Queryable): Promise<boolean> {
    return (await q.query('SELECT 1 FROM instance')).length > 0;
  }

  /** Make (or keep) the token while the instance has no Admin; delete a stale file otherwise. */
  async start(): Promise<void> {
    const file = this.c.file;
    if (await this.initialised(this.c.db)) {
      if (file !== undefined) await rm(file, { force: true });
      return;
    }
    if (file === undefined) {
      this.c.log('warn', 'instance not initialised and no bootstrap token file (no data folder): init is refused');
      return;
    }
    const host = hostname();
    const existing = await readFile(file, 'utf8').then(
      (s) => s.trim(),
      () => undefined,
    );
    const token = `cbt_${randomToken(32)}`;
    const tmp = `${file}.${process.pid}.tmp`;
    const replica = this.c.replica;
    const decision = await this.c.db.tx(
      async (q): Promise<{ kind: 'mine' | 'new' } | { kind: 'other'; row: TokenRow }> => {
        await q.query('SELECT pg_advisory_xact_lock(7261864211)');
        const stored = (
          await q.query<TokenRow>('SELECT token_hash, writer_replica, writer_host, writer_file FROM bootstrap_token')
        )[0];
        if (stored !== undefined && existing !== undefined && safeEqual(sha256Hex(existing), stored.token_hash)) {
          // our file holds the valid token: we are its writer now (this start's replica id)
          await q.query('UPDATE bootstrap_token SET writer_replica = $1, writer_host = $2, writer_file = $3', [
            replica?.id ?? null,
            host,
            file,
          ]);
          return { kind: 'mine' };
        }
        const ownFile = stored?.writer_host === host && stored.writer_file === file;
        const writerAlive =
          stored?.writer_replica != null && replica !== undefined
            ? await isReplicaAlive(q, stored.writer_replica, replica.ttlMs)
            : false;
        if (stored !== undefined && !ownFile && writerAlive) return { kind: 'other', row: stored };
        await mkdir(dirname(file), { recursive: true, mode: 0o700 });
        await writeFile(tmp, `${token}\n`, { mode: 0o600 });
        await q.query(
          `INSERT INTO bootstrap_token (id, token_hash, created_at, writer_replica, writer_host, writer_file)
         VALUES (1, $1, $2, $3, $4, $5)
         ON CONFLICT (id) DO UPDATE SET token_hash = EXCLUDED.token_hash, created_at = EXCLUDED.created_at,
           writer_replica = EXCLUDED.writer_replica, writer_host = EXCLUDED.writer_host, writer_file = EXCLUDED.writer_file`,
          [sha256Hex(token), this.c.clock(), replica?.id ?? null, host, file],
        );
        return { kind: 'new' };
      },
    );
    if (decision.kind === 'other') {
      // a token file of ours that no longer matches would only mislead the operator
      if (existing !== undefined) await rm(file, { force: true });
      this.c.log(
        'info',
        'instance not initialised: the one-time bootstrap token for `custodian admin init` is in a file another ' +
          'replica wrote (init works through any replica)',
        {
          bootstrap_token_file: decision.row.writer_file,
          bootstrap_token_host: decision.row.writer_host,
          bootstrap_token_replica: decision.row.writer_replica,
        },
      );
      return;
    }
    if (decision.kind === 'new') await rename(tmp, file);
    this.c.log(
      'info',
      'instance not initialised: the one-time bootstrap token for `custodian admin init` is in a file',
      {
        bootstrap_token_file: file,
      },
    );
  }

  async stop(): Promise<void> {}

  /**
   * Check `token` against the stored hash without consuming it (before the costly password hash).
   * @throws ApiError BOOTSTRAP_TOKEN_INVALID (401) when it is missing, wrong, or none is stored
   */
  async check(token: string | undefined, q: Queryable = this.c.db, lock = false): Promise<void> {
    const row = (
      await q.query<{ token_hash: string }>(`SELECT token_hash FROM bootstrap_token${lock ? ' FOR UPDATE' : ''}`)
    )[0];
    // both sides hashed: equal length, compared in constant time
    const ok = token !== undefined && row !== undefined && safeEqual(sha256Hex(token.trim()), row.token_hash);
    if (!ok) {
      throw new ApiError(
        'BOOTSTRAP_TOKEN_INVALID',
        'send the one-time bootstrap token the coordinator wrote to <data-dir>/bootstrap-token at its first start ' +
          '(custodian admin init --bootstrap-token-file PATH); restart the coordinator to make a new one',
      );
    }
  }

  /**
   * Consume the token inside the init's transaction `q` (row locked, checked, deleted).
   * @throws ApiError BOOTSTRAP_TOKEN_INVALID (401) as {@link check}
   */
  async consume(token: string | undefined, q: Queryable): Promise<void> {
    await this.check(token, q, true);
    await q.query('DELETE FROM bootstrap_token');
  }

  /** Delete the token file after a committed init (idempotent). */
  async removeFile(): Promise<void> {
    if (this.c.file !== undefined) await rm(this.c.file, { force: true });
  }
}
