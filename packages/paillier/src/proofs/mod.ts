/**
 * Πmod — Paillier–Blum modulus proof, CGGMP21 ePrint 2021/060 rev. §6.3 Figure 16 (spec §3
 * "Πmod: Paillier-Blum Modulus"), non-interactive with m challenges y₁…y_m ∈ Z_N derived from the
 * transcript.
 *
 * Statement N. Witness p, q ≡ 3 (mod 4) primes with N = p·q.
 * Proof: w ∈ Z*_N with Jacobi (w/N) = −1, and for i = 1…m: aᵢ, bᵢ ∈ {0,1}, xᵢ the principal 4th
 * root of yᵢ' = (−1)^aᵢ·w^bᵢ·yᵢ, zᵢ = yᵢ^(N⁻¹ mod φ(N)).
 * Verifier: N odd, ≥ the level's size, not a perfect square, not prime (Fermat base 2 — a prime
 * always passes, so a prime is always rejected); w, xᵢ, zᵢ ∈ Z*_N (the 2025 tss-lib gcd fix) and
 * (w/N) = −1; exactly m entries; zᵢ^N = yᵢ and xᵢ⁴ = (−1)^aᵢ·w^bᵢ·yᵢ (mod N).
 * The prover computes roots by CRT modulo p and q.
 */
import { type RandomSource, systemRandom } from '@custodian/crypto';
import { allUnits, gcd, invertMod, jacobi, mod, randomUnit } from '../arith.js';
import type { SecurityLevel } from '../levels.js';
import { CrtExp, modPow } from '../modexp.js';
import { assertModulus } from '../paillier.js';
import {
  big,
  bool,
  fail,
  guarded,
  OK,
  type ProofContext,
  proofTranscript,
  record,
  type VerifyResult,
  vector,
} from './common.js';

const TAG = 'custodian.paillier.mod';

/** Πmod statement: the modulus N. */
export interface ModStatement {
  readonly N: bigint;
}

/** Πmod witness: the factors. */
export interface ModWitness {
  readonly p: bigint;
  readonly q: bigint;
}

/** Πmod proof (a `Canonical` record). Every vector has exactly m entries. */
export interface ModProof {
  readonly w: bigint;
  readonly x: readonly bigint[];
  readonly a: readonly boolean[];
  readonly b: readonly boolean[];
  readonly z: readonly bigint[];
}

/** The m Fiat–Shamir challenges yᵢ ∈ Z_N (exported for attack regression tests; not in the package entry). */
export function modChallenges(ctx: ProofContext, level: SecurityLevel, N: bigint, w: bigint): bigint[] {
  return proofTranscript(TAG, ctx, level).append('N', N).append('w', w).challengeVectorBelow('y', N, level.m);
}

/**
 * Prove that N = p·q is a Paillier–Blum modulus (Fig. 16).
 * @throws RangeError when p·q ≠ N or p, q ≢ 3 (mod 4)
 */
export function proveMod(
  ctx: ProofContext,
  level: SecurityLevel,
  statement: ModStatement,
  witness: ModWitness,
  rng: RandomSource = systemRandom,
): ModProof {
  const { N } = statement;
  const { p, q } = witness;
  if (p * q !== N) throw new RangeError('Πmod witness: p·q ≠ N');
  if ((p & 3n) !== 3n || (q & 3n) !== 3n) throw new RangeError('Πmod witness: p, q must be ≡ 3 mod 4');
  const crt = new CrtExp(p, p - 1n, q, q - 1n);
  let w: bigint;
  do w = randomUnit(rng, N);
  while (jacobi(w, N) !== -1);
  const wp = jacobi(w, p);
  // 4th root exponents ((p+1)/4)² mod (p−1), and N⁻¹ mod (p−1), likewise for q
  const rootP = mod(((p + 1n) / 4n) ** 2n, p - 1n);
  const rootQ = mod(((q + 1n) / 4n) ** 2n, q - 1n);
  const ninvP = invertMod(N % (p - 1n), p - 1n);
  const ninvQ = invertMod(N % (q - 1n), q - 1n);
  const ys = modChallenges(ctx, level, N, w);
  const x: bigint[] = [];
  const a: boolean[] = [];
  const b: boolean[] = [];
  const z: bigint[] = [];
  for (const y of ys) {
    if (gcd(y, N) !== 1n) throw new RangeError('Πmod: challenge not a unit (negligible event)');
    const lp = jacobi(y, p);
    const lq = jacobi(y, q);
    // (w/p)·(w/q) = −1; multiplying by w flips exactly one of the two Legendre symbols
    const bi = lp !== lq;
    const lpAfter = bi ? lp * wp : lp;
    const ai = lpAfter === -1;
    let yp = bi ? (y * w) % N : y;
    if (ai) yp = N - yp;
    x.push(crt.combine(modPow(yp % p, rootP, p), modPow(yp % q, rootQ, q)));
    z.push(crt.combine(modPow(y % p, ninvP, p), modPow(y % q, ninvQ, q)));
    a.push(ai);
    b.push(bi);
  }
  return { w, x, a, b, z };
}

/**
 * Verify a Πmod proof for N (Fig. 16 verifier, with the checks listed in the module docs).
 * Never throws.
 */
export function verifyMod(
  ctx: ProofContext,
  level: SecurityLevel,
  statement: ModStatement,
  proof: ModProof,
): VerifyResult {
  return guarded(() => {
    const { N } = statement;
    try {
      assertModulus(N, level, 'N');
    } catch (e) {
      return fail(`Πmod: ${(e as Error).message}`);
    }
    const m = level.m;
    const { w, x, a, b, z } = proof;
    for (const [v, f] of [
      [x, 'x'],
      [a, 'a'],
      [b, 'b'],
      [z, 'z'],
    ] as const) {
      if (!Array.isArray(v) || v.length !== m) return fail(`Πmod: ${f} must have exactly m = ${m} entries`);
    }
    if (!a.every((v) => typeof v === 'boolean') || !b.every((v) => typeof v === 'boolean'))
      return fail('Πmod: a, b must be booleans');
    if (!allUnits([w], N)) return fail('Πmod: w ∉ Z*_N');
    if (!allUnits(x, N)) return fail('Πmod: some xᵢ ∉ Z*_N');
    if (!allUnits(z, N)) return fail('Πmod: some zᵢ ∉ Z*_N');
    if (jacobi(w, N) !== -1) return fail('Πmod: Jacobi symbol (w/N) ≠ −1');
    if (modPow(2n, N - 1n, N) === 1n) return fail('Πmod: N is (probably) prime');
    const ys = modChallenges(ctx, level, N, w);
    for (let i = 0; i < m; i++) {
      const y = ys[i] as bigint;
      if (gcd(y, N) !== 1n) return fail('Πmod: challenge not a unit');
      if (modPow(z[i] as bigint, N, N) !== y) return fail(`Πmod: z[${i}]^N ≠ y[${i}]`);
      let rhs = b[i] ? (y * w) % N : y;
      if (a[i]) rhs = N - rhs;
      const xi = x[i] as bigint;
      const x2 = (xi * xi) % N;
      if ((x2 * x2) % N !== rhs) return fail(`Πmod: x[${i}]^4 ≠ (−1)^a·w^b·y`);
    }
    return OK;
  });
}

/**
 * Decode an untrusted Πmod proof body: record {w, x, a, b, z}, bigints and booleans, vectors of
 * exactly m entries. @throws TypeError / RangeError naming the field
 */
export function decodeModProof(value: unknown, level: SecurityLevel): ModProof {
  const r = record(value, 'Πmod proof', ['w', 'x', 'a', 'b', 'z']);
  return {
    w: big(r.w, 'Πmod proof.w'),
    x: vector(r.x, 'Πmod proof.x', level.m, big),
    a: vector(r.a, 'Πmod proof.a', level.m, bool),
    b: vector(r.b, 'Πmod proof.b', level.m, bool),
    z: vector(r.z, 'Πmod proof.z', level.m, big),
  };
}
