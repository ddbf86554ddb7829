/**
 * Idempotency for the routes the seed marks (idem): header `Idempotency-Key` or its alias
 * `Idempotency_key` (UUID), the first successful response replayed (same status and body),
 * conflicts per the documented rules.
 *
 * Crash safety (#27 item 5): the key is claimed, the resource created and the record completed in
 * ONE database transaction, so a claim is never committed alone. A crash or error at any point
 * before the commit leaves neither the resource nor a record (a retry creates it once); after the
 * commit a retry replays the stored response. There is no lease to expire: a concurrent request
 * with the same key waits on the uncommitted claim (at most {@link IdempotencyOptions.inFlightWaitMs},
 * then 409 `IDEMPOTENCY_REQUEST_IN_PROGRESS`) and then replays the first response.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import { canonicalJson, sha256Hex, UUID_RE } from '../util.js';
import type { IdempotencyStore } from './idempotency-store.js';

/** Idempotency settings. */
export interface IdempotencyOptions {
  /** How long a completed key is remembered (ms). Default 24 h. */
  retentionMs: number;
  /**
   * How long a request waits for a concurrent first request with the same key to commit or roll
   * back before it gets 409 IDEMPOTENCY_REQUEST_IN_PROGRESS (ms; PostgreSQL `lock_timeout`; PGlite
   * runs one transaction at a time and never waits on a claim). Default 5000.
   */
  inFlightWaitMs?: number;
}

/** What an idempotent creation returns: the response body, and work to run once it is committed. */
export interface IdempotentResult<T> {
  /** The response body (stored and replayed as JSON). */
  body: T;
  /** Runs after the commit, never on a replay (e.g. pushing approval requests). */
  afterCommit?: () => void;
}

/**
 * The idempotency key of a request, lowercased.
 * @throws ApiError IDEMPOTENCY_KEY_MISSING (400) / IDEMPOTENCY_KEY_INVALID (400); the latter also
 *   when both headers are present with different values
 */
export function idempotencyKeyOf(req: FastifyRequest): string {
  const a = req.headers['idempotency-key'];
  const b = req.headers.idempotency_key;
  const values = [a, b].flatMap((v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]));
  if (values.length === 0) {
    throw new ApiError('IDEMPOTENCY_KEY_MISSING', 'send the Idempotency-Key (or Idempotency_key) header with a UUID', [
      { field: 'header.idempotency-key', message: 'required' },
    ]);
  }
  const keys = new Set(values.map((v) => v.trim().toLowerCase()));
  const [key] = keys;
  if (keys.size !== 1 || key === undefined || !UUID_RE.test(key)) {
    throw new ApiError('IDEMPOTENCY_KEY_INVALID', 'the idempotency key must be one UUID', [
      { field: 'header.idempotency-key', message: 'must be a UUID' },
    ]);
  }
  return key;
}

/**
 * Run `create` at most once per (profile, idempotency key), in the transaction that claims the key
 * and completes its record (see the module comment): `create` must do all its writes through `q`.
 * @param successStatus status of a successful first response (replays reuse the stored one)
 * @throws ApiError IDEMPOTENCY_KEY_MISSING / IDEMPOTENCY_KEY_INVALID (400), IDEMPOTENCY_KEY_REUSED
 *   (422), IDEMPOTENCY_REQUEST_IN_PROGRESS (409, `Retry-After: 1`), and whatever `create` throws
 *   (the transaction then rolls back and the key stays free)
 */
export async function runIdempotent<T>(
  store: IdempotencyStore,
  opts: IdempotencyOptions,
  req: FastifyRequest,
  reply: FastifyReply,
  profileId: string,
  successStatus: number,
  create: (q: Queryable) => Promise<IdempotentResult<T>>,
): Promise<unknown> {
  const r = requestOf(req);
  // Fast path: a completed record is replayed without opening a transaction.
  const peek = await store.peekIdempotent(profileId, r.key, r.method, r.path, r.hash);
  if (peek.kind === 'mismatch') throw reused();
  if (peek.kind === 'replay') return replay(reply, peek.status, peek.body);
  const out = await store.db.tx(async (q) => {
    const claim = await store.claimIdempotent(
      q,
      profileId,
      r.key,
      r.method,
      r.path,
      r.hash,
      opts.retentionMs,
      opts.inFlightWaitMs ?? 5000,
    );
    switch (claim.kind) {
      case 'mismatch':
        throw reused();
      case 'in_flight':
        throw new ApiError(
          'IDEMPOTENCY_REQUEST_IN_PROGRESS',
          'retry after the first request with this key completes',
          undefined,
          { 'retry-after': '1' },
        );
      case 'replay':
        return { replayed: true, status: claim.status, body: claim.body } as const;
      case 'started':
        break;
    }
    const created = await create(q);
    await store.completeIdempotent(q, profileId, r.key, claim.claimId, successStatus, created.body);
    return { replayed: false, created } as const;
  });
  if (out.replayed) return replay(reply, out.status, out.body);
  try {
    out.created.afterCommit?.();
  } catch (err) {
    // Committed and recorded: the client must get its 201 (a retry would replay it anyway).
    req.log.error({ err }, 'after-commit work of an idempotent request failed');
  }
  reply.code(successStatus);
  return out.created.body;
}

/**
 * {@link runIdempotent} for a route that creates nothing but answers from outside the database
 * (the fee estimate asks a blockchain node): `compute` runs outside any transaction — a node call
 * must not hold a database transaction open — and its answer is recorded afterwards; when a
 * concurrent request with the same key recorded its answer first, that one is replayed.
 */
export async function runIdempotentAnswer<T>(
  store: IdempotencyStore,
  opts: IdempotencyOptions,
  req: FastifyRequest,
  reply: FastifyReply,
  profileId: string,
  successStatus: number,
  compute: () => Promise<T>,
): Promise<unknown> {
  const r = requestOf(req);
  const peek = await store.peekIdempotent(profileId, r.key, r.method, r.path, r.hash);
  if (peek.kind === 'mismatch') throw reused();
  if (peek.kind === 'replay') return replay(reply, peek.status, peek.body);
  const body = await compute();
  return runIdempotent(store, opts, req, reply, profileId, successStatus, async () => ({ body }));
}

function requestOf(req: FastifyRequest) {
  const key = idempotencyKeyOf(req);
  const path = (req.url.split('?')[0] ?? req.url).toLowerCase();
  return { key, method: req.method, path, hash: sha256Hex(canonicalJson(req.body ?? null)) };
}

function reused(): ApiError {
  return new ApiError(
    'IDEMPOTENCY_KEY_REUSED',
    'this idempotency key was used with a different request body or path; use a new key',
  );
}

function replay(reply: FastifyReply, status: number, body: unknown): unknown {
  reply.header('idempotent-replayed', 'true');
  reply.code(status);
  return body;
}
