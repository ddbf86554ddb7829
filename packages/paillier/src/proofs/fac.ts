/**
 * Πfac — no small factor proof, CGGMP21 ePrint 2021/060 rev. §C.5 Figure 28 (spec §3 "Πfac: No
 * Small Factor Proof"), against the verifier's ring-Pedersen parameters R_j = (N̂, s, t).
 *
 * Statement N₀ (the prover's Paillier modulus). Witness p, q with N₀ = p·q, 2^ℓ < p, q.
 * Prover samples α, β ← ±2^(ℓ+ε)·√N₀; μ, ν ← ±2^ℓ·N̂; σ ← ±2^ℓ·N₀·N̂; r ← ±2^(ℓ+ε)·N₀·N̂;
 * x, y ← ±2^(ℓ+ε)·N̂, sends P = s^p t^μ, Q = s^q t^ν, A = s^α t^x, B = s^β t^y, T = Q^α t^r, σ;
 * e ← ±2^logQ from the transcript; z₁ = α + e·p, z₂ = β + e·q, w₁ = x + e·μ, w₂ = y + e·ν,
 * v = r + e·(σ − ν·p).
 * Verifier: N₀ valid modulus; P, Q, A, B, T ∈ Z*_N̂; σ ∈ ±2^ℓ·N₀·N̂; z₁, z₂ ∈ ±2^(ℓ+ε)·√N₀ (the
 * range check that defeats BitForge); w₁, w₂ ∈ ±2^(ℓ+ε+1)·N̂ and v ∈ ±2^(ℓ+ε+2)·N₀·N̂ (size caps
 * honest proofs always meet); s^z₁ t^w₁ = A·P^e, s^z₂ t^w₂ = B·Q^e, Q^z₁ t^v = T·(s^N₀ t^σ)^e (mod N̂).
 * The verifier owns R_j, so with its secret attached every exponentiation is CRT.
 */
import { type RandomSource, systemRandom } from '@custodian/crypto';
import { allUnits, inSigned, isqrt, mod, randomSigned } from '../arith.js';
import { rangeBounds, type SecurityLevel } from '../levels.js';
import { assertModulus } from '../paillier.js';
import type { RingPedersen } from '../ring-pedersen.js';
import {
  auxCanonical,
  big,
  fail,
  guarded,
  OK,
  type ProofContext,
  proofTranscript,
  record,
  type VerifyResult,
} from './common.js';

const TAG = 'custodian.paillier.fac';

/** Πfac statement: the prover's modulus N₀. */
export interface FacStatement {
  readonly N: bigint;
}

/** Πfac witness. */
export interface FacWitness {
  readonly p: bigint;
  readonly q: bigint;
}

/** Πfac proof (a `Canonical` record of bigints). */
export interface FacProof {
  readonly P: bigint;
  readonly Q: bigint;
  readonly A: bigint;
  readonly B: bigint;
  readonly T: bigint;
  readonly sigma: bigint;
  readonly z1: bigint;
  readonly z2: bigint;
  readonly w1: bigint;
  readonly w2: bigint;
  readonly v: bigint;
}

const FIELDS = ['P', 'Q', 'A', 'B', 'T', 'sigma', 'z1', 'z2', 'w1', 'w2', 'v'] as const;

function challenge(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  N: bigint,
  pr: Omit<FacProof, 'z1' | 'z2' | 'w1' | 'w2' | 'v'>,
): bigint {
  return proofTranscript(TAG, ctx, level)
    .append('aux', auxCanonical(aux))
    .append('N', N)
    .append('commitment', { P: pr.P, Q: pr.Q, A: pr.A, B: pr.B, T: pr.T, sigma: pr.sigma })
    .challengeSigned('e', rangeBounds(level).Q);
}

/**
 * Prove that N₀ = p·q has no factor below ≈2^ℓ (Fig. 28).
 * @param aux the verifier's ring-Pedersen parameters (public view)
 * @throws RangeError when p·q ≠ N₀ or p, q ≤ 2^ℓ
 */
export function proveFac(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: FacStatement,
  witness: FacWitness,
  rng: RandomSource = systemRandom,
): FacProof {
  const { ell } = rangeBounds(level);
  if (witness.p <= ell || witness.q <= ell) throw new RangeError('Πfac witness: factor not above 2^ℓ');
  return proveFacUnchecked(ctx, level, aux, statement, witness, rng);
}

/**
 * The Fig. 28 prover without the witness size check. Exported for attack regression tests only
 * (a BitForge prover with a small factor); not re-exported from the package entry.
 * @throws RangeError when p·q ≠ N₀
 */
export function proveFacUnchecked(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: FacStatement,
  witness: FacWitness,
  rng: RandomSource = systemRandom,
): FacProof {
  const N0 = statement.N;
  const { p, q } = witness;
  if (p * q !== N0) throw new RangeError('Πfac witness: p·q ≠ N');
  const b = rangeBounds(level);
  const Nh = aux.N;
  const sqrtN0 = isqrt(N0);
  const alpha = randomSigned(rng, b.ellEps * sqrtN0);
  const beta = randomSigned(rng, b.ellEps * sqrtN0);
  const mu = randomSigned(rng, b.ell * Nh);
  const nu = randomSigned(rng, b.ell * Nh);
  const sigma = randomSigned(rng, b.ell * N0 * Nh);
  const r = randomSigned(rng, b.ellEps * N0 * Nh);
  const x = randomSigned(rng, b.ellEps * Nh);
  const y = randomSigned(rng, b.ellEps * Nh);
  const P = aux.commit(p, mu);
  const Q = aux.commit(q, nu);
  const A = aux.commit(alpha, x);
  const B = aux.commit(beta, y);
  const T = (aux.pow(Q, alpha) * aux.powT(r)) % Nh;
  const e = challenge(ctx, level, aux, N0, { P, Q, A, B, T, sigma });
  return {
    P,
    Q,
    A,
    B,
    T,
    sigma,
    z1: alpha + e * p,
    z2: beta + e * q,
    w1: x + e * mu,
    w2: y + e * nu,
    v: r + e * (sigma - nu * p),
  };
}

/**
 * Verify a Πfac proof (Fig. 28 verifier, checks in the module docs). Never throws.
 * @param aux the verifier's own ring-Pedersen parameters (attach the secret for CRT speed)
 */
export function verifyFac(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: FacStatement,
  proof: FacProof,
): VerifyResult {
  return guarded(() => {
    const N0 = statement.N;
    try {
      assertModulus(N0, level, 'N');
    } catch (e) {
      return fail(`Πfac: ${(e as Error).message}`);
    }
    for (const f of FIELDS) if (typeof proof[f] !== 'bigint') return fail(`Πfac: ${f} must be a bigint`);
    const b = rangeBounds(level);
    const Nh = aux.N;
    const { P, Q, A, B, T, sigma, z1, z2, w1, w2, v } = proof;
    if (!allUnits([P, Q, A, B, T], Nh)) return fail('Πfac: P, Q, A, B, T must lie in Z*_N̂');
    const zBound = b.ellEps * isqrt(N0);
    if (!inSigned(z1, zBound)) return fail('Πfac: z1 ∉ ±2^(ℓ+ε)·√N');
    if (!inSigned(z2, zBound)) return fail('Πfac: z2 ∉ ±2^(ℓ+ε)·√N');
    if (!inSigned(sigma, b.ell * N0 * Nh)) return fail('Πfac: σ ∉ ±2^ℓ·N·N̂');
    if (!inSigned(w1, 2n * b.ellEps * Nh) || !inSigned(w2, 2n * b.ellEps * Nh)) return fail('Πfac: w1, w2 too large');
    if (!inSigned(v, 4n * b.ellEps * N0 * Nh)) return fail('Πfac: v too large');
    const e = challenge(ctx, level, aux, N0, proof);
    if (aux.commit(z1, w1) !== (A * aux.pow(P, e)) % Nh) return fail('Πfac: s^z1·t^w1 ≠ A·P^e');
    if (aux.commit(z2, w2) !== (B * aux.pow(Q, e)) % Nh) return fail('Πfac: s^z2·t^w2 ≠ B·Q^e');
    const R = aux.commit(N0, sigma);
    if (mod(aux.pow(Q, z1) * aux.powT(v), Nh) !== (T * aux.pow(R, e)) % Nh) return fail('Πfac: Q^z1·t^v ≠ T·R^e');
    return OK;
  });
}

/** Decode an untrusted Πfac proof body (record of exactly the 11 bigint fields). @throws TypeError */
export function decodeFacProof(value: unknown): FacProof {
  const r = record(value, 'Πfac proof', FIELDS);
  const out = Object.fromEntries(FIELDS.map((f) => [f, big(r[f], `Πfac proof.${f}`)]));
  return out as unknown as FacProof;
}
