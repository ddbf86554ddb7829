/**
 * Idempotency records of the REST API (`idempotency_keys`, seed §4): peek, claim inside the
 * creating transaction, complete with the response to replay, purge expired. The request-level
 * logic is `idempotency.ts`.
 */
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../db/db.js';
import type { Clock } from '../util.js';

/** Outcome of {@link IdempotencyStore.peekIdempotent}: a completed record to replay, a conflicting one, or none. */
export type IdempotencyPeek =
  | { kind: 'absent' }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'mismatch' };

/** Outcome of {@link IdempotencyStore.claimIdempotent}. */
export type IdempotencyClaim =
  | { kind: 'started'; claimId: string }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'mismatch' }
  | { kind: 'in_flight' };

/** Dependencies of {@link IdempotencyStore}. */
export interface IdempotencyStoreComponents {
  readonly db: Db;
  readonly clock: Clock;
}

/** Idempotency records. */
export class IdempotencyStore {
  constructor(private readonly c: IdempotencyStoreComponents) {}

  /** The database (the creating transaction of {@link claimIdempotent} is opened on it). */
  get db(): Db {
    return this.c.db;
  }

  /**
   * Look up a completed, unexpired idempotency record without claiming the key (no lock, no
   * transaction): `replay` when it matches the request (method, lowercased path, SHA-256 of the
   * canonical body), `mismatch` when it does not, `absent` otherwise.
   */
  async peekIdempotent(
    profileId: string,
    key: string,
    method: string,
    path: string,
    requestHash: string,
  ): Promise<IdempotencyPeek> {
    const row = (
      await this.c.db.query<IdempotencyRow>(
        `SELECT method, path, request_hash, state, status_code, response_body FROM idempotency_keys
         WHERE profile_id = $1 AND idempotency_key = $2 AND state = 'DONE' AND expires_at > $3`,
        [profileId, key, this.c.clock()],
      )
    )[0];
    if (row === undefined) return { kind: 'absent' };
    return matchIdempotent(row, method, path, requestHash);
  }

  /**
   * Claim an idempotency key inside the caller's transaction `q` — the one that then creates the
   * resource and {@link completeIdempotent completes} the record, so a claim is never committed
   * on its own: a crash or error before the commit rolls back the claim with the resource, and a
   * retry finds the key free. The primary key (profile_id, idempotency_key) makes the claim
   * atomic: a concurrent request with the same key waits on the uncommitted claim, then sees the
   * completed record (`replay`/`mismatch`) or, after a rollback, claims the key itself; it waits at
   * most `waitMs` (PostgreSQL `lock_timeout`), then gets `in_flight` and must roll back. Deleted
   * first: an expired record (the key may be reused after the retention window) and an IN_FLIGHT
   * record left committed by an earlier version, which completed records outside the creating
   * transaction.
   * @param retentionMs how long the completed record is kept
   * @param waitMs longest wait for a concurrent claim of the same key (ms)
   */
  async claimIdempotent(
    q: Queryable,
    profileId: string,
    key: string,
    method: string,
    path: string,
    requestHash: string,
    retentionMs: number,
    waitMs: number,
  ): Promise<IdempotencyClaim> {
    const now = this.c.clock();
    const prev = (await q.query<{ v: string }>(`SELECT current_setting('lock_timeout') AS v`))[0]?.v ?? '0';
    await q.query(`SELECT set_config('lock_timeout', $1, true)`, [`${Math.max(1, Math.ceil(waitMs))}ms`]);
    const claimId = randomUUID();
    let inserted: boolean;
    try {
      await q.query(
        `DELETE FROM idempotency_keys WHERE profile_id = $1 AND idempotency_key = $2
           AND (expires_at <= $3 OR state = 'IN_FLIGHT')`,
        [profileId, key, now],
      );
      const ins = await q.query(
        `INSERT INTO idempotency_keys (profile_id, idempotency_key, claim_id, method, path, request_hash, state,
           created_at, expires_at)
         VALUES ($1,$2,$3,$4,$5,$6,'IN_FLIGHT',$7,$8) ON CONFLICT (profile_id, idempotency_key) DO NOTHING RETURNING 1`,
        [profileId, key, claimId, method, path, requestHash, now, new Date(now.getTime() + retentionMs)],
      );
      inserted = ins.length === 1;
    } catch (e) {
      // lock_not_available: the first request with this key is still running.
      if ((e as { code?: unknown }).code === '55P03') return { kind: 'in_flight' };
      throw e;
    }
    await q.query(`SELECT set_config('lock_timeout', $1, true)`, [prev]);
    if (inserted) return { kind: 'started', claimId };
    const row = (
      await q.query<IdempotencyRow>(
        `SELECT method, path, request_hash, state, status_code, response_body FROM idempotency_keys
         WHERE profile_id = $1 AND idempotency_key = $2`,
        [profileId, key],
      )
    )[0];
    // Gone again between our INSERT and SELECT (expired and purged): the client retries.
    if (row === undefined || row.state !== 'DONE') return { kind: 'in_flight' };
    return matchIdempotent(row, method, path, requestHash);
  }

  /**
   * Complete a claim with the response to replay (status, JSON body), in the transaction `q` of
   * its {@link claimIdempotent claim} — committed together with the resource it describes.
   */
  async completeIdempotent(
    q: Queryable,
    profileId: string,
    key: string,
    claimId: string,
    status: number,
    body: unknown,
  ): Promise<void> {
    await q.query(
      `UPDATE idempotency_keys SET state = 'DONE', status_code = $4, response_body = $5::jsonb
       WHERE profile_id = $1 AND idempotency_key = $2 AND claim_id = $3`,
      [profileId, key, claimId, status, JSON.stringify(body)],
    );
  }

  /** Delete expired idempotency records; returns how many. */
  async purgeIdempotency(): Promise<number> {
    const r = await this.c.db.query('DELETE FROM idempotency_keys WHERE expires_at <= $1 RETURNING 1', [
      this.c.clock(),
    ]);
    return r.length;
  }
}

interface IdempotencyRow {
  method: string;
  path: string;
  request_hash: string;
  state: string;
  status_code: number | null;
  response_body: unknown;
}

function matchIdempotent(
  row: IdempotencyRow,
  method: string,
  path: string,
  requestHash: string,
): { kind: 'replay'; status: number; body: unknown } | { kind: 'mismatch' } {
  if (row.method !== method || row.path !== path || row.request_hash !== requestHash) return { kind: 'mismatch' };
  return { kind: 'replay', status: row.status_code ?? 200, body: row.response_body };
}
