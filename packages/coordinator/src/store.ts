/**
 * What every room's store shares: the page request and envelope of the list endpoints, and the
 * not-found problem. The data itself lives with its room (`wallets/`, `api-keys/`, `signers/`,
 * `users/`, `api/idempotency-store.ts`); `transferKeyId` is the signers room's, re-exported here
 * for the transfer modules that import it from this path.
 */
import { ApiError } from './errors.js';

export { transferKeyId } from './signers/store.js';

/** Page request: `page` ≥ 1, `page_size` in [1, 200]. */
export interface PageRequest {
  readonly page: number;
  readonly page_size: number;
}

/** Paginated envelope of every list endpoint. `total` counts all matching items. */
export interface Page<T> {
  data: T[];
  page: number;
  page_size: number;
  total: number;
}

/** SQL OFFSET of a page. */
export const pageOffset = (p: PageRequest): number => (p.page - 1) * p.page_size;

/** 404 RESOURCE_NOT_FOUND "no such <what>". */
export const notFound = (what: string): ApiError => new ApiError('RESOURCE_NOT_FOUND', `no such ${what}`);
