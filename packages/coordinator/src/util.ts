/** Small helpers shared by the coordinator's modules. */
import { createHash, randomBytes } from 'node:crypto';

/** Lowercase hex SHA-256 of a UTF-8 string (FIPS 180-4). */
export function sha256Hex(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

/** `n` random bytes from the OS CSPRNG, base64url without padding (RFC 4648 §5). */
export function randomToken(n = 32): string {
  return randomBytes(n).toString('base64url');
}

/**
 * JSON with object keys sorted recursively: a canonical form used to compare request bodies for
 * idempotency (two bodies that differ only in key order or whitespace are the same request).
 */
export function canonicalJson(v: unknown): string {
  return JSON.stringify(sortKeys(v));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(o)
        .sort()
        .map((k) => [k, sortKeys(o[k])]),
    );
  }
  return v;
}

/** A source of the current time (injectable for tests). */
export type Clock = () => Date;

/** The system clock. */
export const systemClock: Clock = () => new Date();

/** RFC 4122/9562 UUID text form (any version), case-insensitive. */
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** ISO 8601 UTC text of a timestamp read from the database (Date on both drivers). */
export function iso(d: Date | string | null | undefined): string | null {
  if (d === null || d === undefined) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

/**
 * A minimal synchronous event emitter. The composition root uses one where two components need
 * each other (a genuine construction cycle): it is built first and handed to both at
 * construction, one emitting and one subscribing. A listener that throws is skipped (the others
 * still run).
 */
export class Emitter<A extends unknown[]> {
  readonly #listeners = new Set<(...args: A) => void>();

  /** Subscribe; returns the unsubscribe function. */
  on(listener: (...args: A) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Whether anyone listens (lets an emitter skip work whose only use is the event). */
  get listening(): boolean {
    return this.#listeners.size > 0;
  }

  /** Call every listener with `args`, in subscription order. */
  emit(...args: A): void {
    for (const l of this.#listeners) {
      try {
        l(...args);
      } catch {
        // one listener's failure is not the emitter's
      }
    }
  }
}
