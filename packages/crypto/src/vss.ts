/**
 * Feldman verifiable secret sharing and Lagrange interpolation over a prime-order group
 * (Feldman 1987; the form used by CGGMP21's threshold key generation and RFC 9591 §C).
 *
 * A dealer samples f(X) = a_0 + a_1·X + … + a_{t−1}·X^{t−1} with a_0 the secret, publishes
 * A_k = a_k·G and sends f(id_j) to party j. Party identifiers are nonzero scalars, distinct modulo q.
 */
import { aint, type RandomSource } from './bytes.js';
import type { Group, GroupPoint } from './group.js';

/** A dealing: public commitments (t points) and one share per identifier (same order as `ids`). */
export interface VssDealing<P> {
  /** A_k = a_k·G for k = 0…t−1; A_0 is the public value of the secret. */
  readonly commitments: readonly P[];
  /** f(id_j) for each identifier, in the order given to {@link vssDeal}. Secret. */
  readonly shares: readonly bigint[];
}

/**
 * Validate party identifiers: each a bigint, nonzero and distinct modulo q.
 * @throws TypeError for a non-bigint; RangeError for zero, ≡ 0 mod q, or a duplicate.
 */
export function validateIdentifiers<P extends GroupPoint<P>>(group: Group<P>, ids: readonly bigint[]): void {
  const seen = new Set<bigint>();
  for (const [k, id] of ids.entries()) {
    if (typeof id !== 'bigint') throw new TypeError(`identifier ${k}: expected bigint`);
    const r = group.mod(id);
    if (r === 0n) throw new RangeError(`identifier ${k}: zero (mod group order) not allowed`);
    if (seen.has(r)) throw new RangeError(`identifier ${k}: duplicate`);
    seen.add(r);
  }
}

/** Evaluate a polynomial (coefficients a_0…a_{t−1}) at x modulo q (Horner). */
export function evalPolynomial<P extends GroupPoint<P>>(
  group: Group<P>,
  coefficients: readonly bigint[],
  x: bigint,
): bigint {
  let acc = 0n;
  for (let k = coefficients.length - 1; k >= 0; k--) acc = group.mod(acc * x + (coefficients[k] as bigint));
  return acc;
}

/** Random polynomial of degree t−1 with the given constant term (which may be 0, for refresh). */
export function randomPolynomial<P extends GroupPoint<P>>(
  group: Group<P>,
  constant: bigint,
  threshold: number,
  rng: RandomSource,
): bigint[] {
  aint(threshold, 'threshold', 1, 1 << 16);
  return [group.mod(constant), ...Array.from({ length: threshold - 1 }, () => group.randomScalar(rng))];
}

/**
 * Deal a secret with threshold t (any t shares reconstruct; t−1 reveal nothing).
 * @param secret the secret a_0 (0 allowed: zero-constant re-sharing for refresh)
 * @param threshold t, 1 ≤ t ≤ ids.length
 * @param ids party identifiers (see {@link validateIdentifiers})
 * @throws RangeError on a bad threshold or identifiers
 */
export function vssDeal<P extends GroupPoint<P>>(
  group: Group<P>,
  secret: bigint,
  threshold: number,
  ids: readonly bigint[],
  rng: RandomSource,
): VssDealing<P> & { readonly coefficients: readonly bigint[] } {
  validateIdentifiers(group, ids);
  aint(threshold, 'threshold', 1, ids.length);
  const coefficients = randomPolynomial(group, secret, threshold, rng);
  return {
    coefficients,
    commitments: coefficients.map((a) => group.mulBase(a)),
    shares: ids.map((id) => evalPolynomial(group, coefficients, id)),
  };
}

/** Σ_k id^k·A_k: the public image f(id)·G of the share of `id` (Feldman's check value). */
export function vssEvaluateCommitments<P extends GroupPoint<P>>(
  group: Group<P>,
  commitments: readonly P[],
  id: bigint,
): P {
  let acc = group.identity;
  for (let k = commitments.length - 1; k >= 0; k--) {
    acc = group.mulPublic(acc, id).add(commitments[k] as P);
  }
  return acc;
}

/** Feldman's check: f(id)·G == Σ_k id^k·A_k. Returns false for an out-of-range share. */
export function vssVerifyShare<P extends GroupPoint<P>>(
  group: Group<P>,
  commitments: readonly P[],
  id: bigint,
  share: bigint,
): boolean {
  if (!group.isScalar(share) || commitments.length === 0) return false;
  return group.mulBase(share).equals(vssEvaluateCommitments(group, commitments, id));
}

/** Pointwise sum of several parties' commitment vectors (all of length t). @throws RangeError on length mismatch */
export function sumCommitments<P extends GroupPoint<P>>(group: Group<P>, vectors: readonly (readonly P[])[]): P[] {
  const t = vectors[0]?.length ?? 0;
  return Array.from({ length: t }, (_, k) =>
    group.sum(
      vectors.map((v) => {
        if (v.length !== t) throw new RangeError('sumCommitments: vectors of different lengths');
        return v[k] as P;
      }),
    ),
  );
}

/**
 * Lagrange coefficient λ_i at 0 for identifier `id` within the set `ids`:
 * λ_i = Π_{j≠i} id_j / (id_j − id_i) mod q.
 * @throws RangeError when `id` is not in `ids` or identifiers are invalid
 */
export function lagrangeAtZero<P extends GroupPoint<P>>(group: Group<P>, ids: readonly bigint[], id: bigint): bigint {
  validateIdentifiers(group, ids);
  if (!ids.some((x) => group.mod(x) === group.mod(id))) throw new RangeError('lagrange: id not in the set');
  let num = 1n;
  let den = 1n;
  for (const j of ids) {
    if (group.mod(j) === group.mod(id)) continue;
    num = group.mod(num * j);
    den = group.mod(den * (j - id));
  }
  return group.mod(num * group.inv(den));
}

/** Σ λ_i·P_i over a set of identifiers: interpolates public shares to the group public key. */
export function interpolatePoints<P extends GroupPoint<P>>(
  group: Group<P>,
  ids: readonly bigint[],
  points: readonly P[],
): P {
  if (ids.length !== points.length) throw new RangeError('interpolatePoints: ids and points differ in length');
  return group.sum(ids.map((id, k) => group.mulPublic(points[k] as P, lagrangeAtZero(group, ids, id))));
}
