/** Small validation helpers for round-body parsers (STYLE.md item 8). Internal. */
import { abytes } from '@custodian/crypto';
import type { Suite } from './suites.js';

/** Assert a message body is a plain record. @throws TypeError */
export function asRecord(body: unknown, field: string): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || body instanceof Uint8Array) {
    throw new TypeError(`${field}: expected a record`);
  }
  return body as Record<string, unknown>;
}

/** Assert a body field is bytes (of the given length). @throws TypeError / RangeError */
export function bytesField(value: unknown, field: string, length?: number): Uint8Array {
  return length === undefined ? abytes(value, field) : abytes(value, field, length);
}

/** Default identifiers 1…n for runtime indices 0…n−1. */
export function defaultIdentifiers(n: number): bigint[] {
  return Array.from({ length: n }, (_, i) => BigInt(i + 1));
}

/**
 * Validate an identifier list for a session of n parties: n entries, each a bigint in [1, q),
 * distinct. @throws TypeError / RangeError
 */
export function validateIdentifierList(suite: Suite, ids: readonly bigint[], n: number): void {
  if (!Array.isArray(ids)) throw new TypeError('identifiers: expected an array');
  if (ids.length !== n) throw new RangeError(`identifiers: expected ${n}, got ${ids.length}`);
  const seen = new Set<bigint>();
  ids.forEach((id, k) => {
    if (typeof id !== 'bigint') throw new TypeError(`identifiers[${k}]: expected bigint`);
    if (id <= 0n || id >= suite.group.order) throw new RangeError(`identifiers[${k}]: not in [1, q)`);
    if (seen.has(id)) throw new RangeError(`identifiers[${k}]: duplicate`);
    seen.add(id);
  });
}
