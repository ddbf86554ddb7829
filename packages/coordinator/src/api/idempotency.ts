/**
 * Idempotency for the routes the seed marks (idem): header `Idempotency-Key` or its alias
 * `Idempotency_key` (UUID), claimed atomically in the store, the first successful response
 * replayed (same status and body), conflicts per the documented rules.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import type { Store } from '../store.js';
import { canonicalJson, sha256Hex, UUID_RE } from '../util.js';

/** Idempotency settings. */
export interface IdempotencyOptions {
  /** How long a completed key is remembered (ms). Default 24 h. */
  retentionMs: number;
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
 * Run `handler` at most once per (profile, idempotency key).
 * @param successStatus status of a successful first response (replays reuse the stored one)
 */
export async function runIdempotent<T>(
  store: Store,
  opts: IdempotencyOptions,
  req: FastifyRequest,
  reply: FastifyReply,
  profileId: string,
  successStatus: number,
  handler: () => Promise<T>,
): Promise<unknown> {
  const key = idempotencyKeyOf(req);
  const path = req.url.split('?')[0] ?? req.url;
  const hash = sha256Hex(canonicalJson(req.body ?? null));
  const claim = await store.beginIdempotent(profileId, key, req.method, path.toLowerCase(), hash, opts.retentionMs);
  switch (claim.kind) {
    case 'mismatch':
      throw new ApiError(
        'IDEMPOTENCY_KEY_REUSED',
        'this idempotency key was used with a different request body or path; use a new key',
      );
    case 'in_flight':
      throw new ApiError(
        'IDEMPOTENCY_REQUEST_IN_PROGRESS',
        'retry after the first request with this key completes',
        undefined,
        {
          'retry-after': '1',
        },
      );
    case 'replay':
      reply.header('idempotent-replayed', 'true');
      reply.code(claim.status);
      return claim.body;
    case 'started':
      break;
  }
  let result: T;
  try {
    result = await handler();
  } catch (e) {
    await store.releaseIdempotent(profileId, key, claim.claimId);
    throw e;
  }
  await store.completeIdempotent(profileId, key, claim.claimId, successStatus, result);
  reply.code(successStatus);
  return result;
}
