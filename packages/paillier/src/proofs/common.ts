/**
 * Shared plumbing of the CGGMP21 proofs: the proof context (session-bound transcript, prover and
 * verifier ids), the verification result type, and the shape checkers used by the proof decoders.
 *
 * Conventions (all proofs):
 * - `prove*` throws `RangeError` when the witness is outside the range the paper requires (a bug in
 *   the caller); it never produces a proof that our own verifier would reject.
 * - `verify*` never throws: it returns {@link VerifyResult}, `{ ok: false, reason }` for any
 *   failed check. Cheap checks (sizes, ranges, units, vector lengths) run before any exponentiation.
 *   `reason` names the failed check and never contains secret values.
 * - `decode*Proof(value)` validates the *shape* of an untrusted message body (record keys, bigint
 *   and byte-array types, exact vector lengths) and throws `TypeError` (wrong type) or `RangeError`
 *   (wrong length); the protocol rounds use them as body parsers.
 */
import type { Canonical, Transcript } from '@custodian/crypto';
import type { SecurityLevel } from '../levels.js';
import type { RingPedersen } from '../ring-pedersen.js';

/** A party identifier as the transcript binds it. */
export type PartyId = string | bigint | number;

/** Where a proof lives: the session transcript and who proves to whom. */
export interface ProofContext {
  /**
   * The session-bound transcript (`Transcript.create(tag, { sessionId, parties, round })`). Not
   * mutated: each proof forks it with its own tag.
   */
  readonly transcript: Transcript;
  /** The prover's id (bound into the challenge, so a proof cannot be replayed as another party's). */
  readonly prover: PartyId;
  /**
   * The verifier's id where the paper binds it (point-to-point proofs: Πfac, Πenc, Πaff-g, Πlog*);
   * omit or null for broadcast proofs (Πmod, Πprm).
   */
  readonly verifier?: PartyId | null;
}

/** Result of a `verify*` call. */
export type VerifyResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export const OK: VerifyResult = Object.freeze({ ok: true });

/** A failed verification naming the check. */
export function fail(reason: string): VerifyResult {
  return { ok: false, reason };
}

function idValue(id: PartyId): bigint | string {
  if (typeof id === 'number') {
    if (!Number.isSafeInteger(id) || id < 0) throw new TypeError('party id: non-negative integer expected');
    return BigInt(id);
  }
  if (typeof id !== 'bigint' && typeof id !== 'string')
    throw new TypeError('party id: string, bigint or number expected');
  return id;
}

/** Fork the session transcript for one proof and bind tag, level, prover and verifier. */
export function proofTranscript(tag: string, ctx: ProofContext, level: SecurityLevel): Transcript {
  return ctx.transcript.fork(tag).append('binding', {
    level: level.name,
    prover: idValue(ctx.prover),
    verifier: ctx.verifier === undefined || ctx.verifier === null ? null : idValue(ctx.verifier),
  });
}

/** Bind auxiliary ring-Pedersen parameters R_j = (N̂, s, t). */
export function auxCanonical(aux: RingPedersen): Canonical {
  return { N: aux.params.N, s: aux.params.s, t: aux.params.t };
}

/**
 * Does lhs ≡ A·B^e (mod m) hold, for a unit B ∈ Z*_m and lhs, A ∈ [0, m)? For e < 0 it checks the
 * equivalent lhs·B^|e| ≡ A (multiply both sides by B^|e|), which avoids inverting B modulo m (an
 * extended Euclid on up to 6144-bit numbers costs more than the short exponentiation itself).
 * @param pow b^x mod m for x ≥ 0 (e.g. {@link modPow} or the owner's CRT exponentiation)
 */
export function eqTimesPow(
  lhs: bigint,
  A: bigint,
  B: bigint,
  e: bigint,
  m: bigint,
  pow: (base: bigint, exp: bigint) => bigint,
): boolean {
  return e >= 0n ? lhs === (A * pow(B, e)) % m : (lhs * pow(B, -e)) % m === A;
}

/** Run a verification body; any thrown error (malformed input reaching math) becomes a failure. */
export function guarded(body: () => VerifyResult): VerifyResult {
  try {
    return body();
  } catch (e) {
    return fail(`malformed input: ${e instanceof Error ? e.message : 'error'}`);
  }
}

// ---- shape checks for decoders ----

/** Assert `value` is a plain record with exactly `keys`. */
export function record(value: unknown, field: string, keys: readonly string[]): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Uint8Array) {
    throw new TypeError(`${field}: expected a record`);
  }
  const r = value as Record<string, unknown>;
  const actual = Object.keys(r).filter((k) => r[k] !== undefined);
  for (const k of keys) if (!(k in r) || r[k] === undefined) throw new TypeError(`${field}.${k}: missing`);
  for (const k of actual) if (!keys.includes(k)) throw new TypeError(`${field}.${k}: unexpected field`);
  return r;
}

/** Assert a bigint field. */
export function big(value: unknown, field: string): bigint {
  if (typeof value !== 'bigint') throw new TypeError(`${field}: expected bigint`);
  return value;
}

/** Assert a byte-array field of an exact length. */
export function bytesOf(value: unknown, field: string, length: number): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new TypeError(`${field}: expected Uint8Array`);
  if (value.length !== length) throw new RangeError(`${field}: expected ${length} bytes, got ${value.length}`);
  return value;
}

/** Assert an array of exactly `length` items, each checked by `item`. */
export function vector<T>(value: unknown, field: string, length: number, item: (v: unknown, f: string) => T): T[] {
  if (!Array.isArray(value)) throw new TypeError(`${field}: expected an array`);
  if (value.length !== length) throw new RangeError(`${field}: expected exactly ${length} items, got ${value.length}`);
  return value.map((v, i) => item(v, `${field}[${i}]`));
}

/** Assert a boolean. */
export function bool(value: unknown, field: string): boolean {
  if (typeof value !== 'boolean') throw new TypeError(`${field}: expected boolean`);
  return value;
}
