/**
 * Πprm — ring-Pedersen parameters proof, CGGMP21 ePrint 2021/060 rev. §6.4 Figure 17 (spec §3
 * "Πprm: Ring-Pedersen Parameters"): proof of knowledge of λ with s = t^λ mod N̂, i.e. s ∈ ⟨t⟩,
 * m parallel repetitions with binary challenges eᵢ.
 *
 * Prover: aᵢ ← Z_φ(N̂), Aᵢ = t^aᵢ (CRT); eᵢ ∈ {0,1} from the transcript; zᵢ = aᵢ + eᵢ·λ mod φ(N̂).
 * Verifier: (N̂, s, t) pass {@link assertRingPedersenParams} (size, odd, s ≠ t, s, t ∉ {0, 1, N̂−1},
 * units); exactly m entries; Aᵢ ∈ Z*_N̂; 0 ≤ zᵢ < N̂; t^zᵢ = Aᵢ·s^eᵢ (mod N̂), t^zᵢ from a
 * precomputed fixed-base table of t.
 */
import { type RandomSource, systemRandom } from '@custodian/crypto';
import { allUnits, randomBelow } from '../arith.js';
import type { SecurityLevel } from '../levels.js';
import {
  assertRingPedersenParams,
  RingPedersen,
  type RingPedersenParams,
  type RingPedersenSecret,
} from '../ring-pedersen.js';
import {
  big,
  fail,
  guarded,
  OK,
  type ProofContext,
  proofTranscript,
  record,
  type VerifyResult,
  vector,
} from './common.js';

const TAG = 'custodian.paillier.prm';

/** Πprm statement: the public parameters (N̂, s, t). */
export type PrmStatement = RingPedersenParams;
/** Πprm witness: the factorisation of N̂ and λ. */
export type PrmWitness = RingPedersenSecret;

/** Πprm proof (a `Canonical` record): exactly m commitments Aᵢ and responses zᵢ. */
export interface PrmProof {
  readonly A: readonly bigint[];
  readonly z: readonly bigint[];
}

/** The m Fiat–Shamir challenge bits (exported for attack regression tests; not in the package entry). */
export function prmChallenges(
  ctx: ProofContext,
  level: SecurityLevel,
  st: PrmStatement,
  A: readonly bigint[],
): boolean[] {
  return proofTranscript(TAG, ctx, level)
    .append('statement', { N: st.N, s: st.s, t: st.t })
    .append('A', A)
    .challengeBits('e', level.m);
}

/**
 * Prove s ∈ ⟨t⟩ (Fig. 17).
 * @throws RangeError when the secret does not match the parameters
 */
export function provePrm(
  ctx: ProofContext,
  level: SecurityLevel,
  statement: PrmStatement,
  witness: PrmWitness,
  rng: RandomSource = systemRandom,
): PrmProof {
  const rp = RingPedersen.fromSecret(statement, witness);
  const phi = rp.phi as bigint;
  const a = Array.from({ length: level.m }, () => randomBelow(rng, phi));
  const A = a.map((ai) => rp.powT(ai));
  const e = prmChallenges(ctx, level, statement, A);
  const z = a.map((ai, i) => (e[i] ? (ai + witness.lambda) % phi : ai));
  return { A, z };
}

/** Verify a Πprm proof (Fig. 17 verifier, with the checks in the module docs). Never throws. */
export function verifyPrm(
  ctx: ProofContext,
  level: SecurityLevel,
  statement: PrmStatement,
  proof: PrmProof,
): VerifyResult {
  return guarded(() => {
    try {
      assertRingPedersenParams(statement, level);
    } catch (e) {
      return fail(`Πprm: ${(e as Error).message}`);
    }
    const { N, s } = statement;
    const m = level.m;
    if (!Array.isArray(proof.A) || proof.A.length !== m) return fail(`Πprm: A must have exactly m = ${m} entries`);
    if (!Array.isArray(proof.z) || proof.z.length !== m) return fail(`Πprm: z must have exactly m = ${m} entries`);
    if (!allUnits(proof.A, N)) return fail('Πprm: some Aᵢ ∉ Z*_N̂');
    if (!proof.z.every((zi) => typeof zi === 'bigint' && zi >= 0n && zi < N)) return fail('Πprm: some zᵢ ∉ [0, N̂)');
    const rp = RingPedersen.fromParams(statement, level);
    const e = prmChallenges(ctx, level, statement, proof.A);
    for (let i = 0; i < m; i++) {
      const Ai = proof.A[i] as bigint;
      const rhs = e[i] ? (Ai * s) % N : Ai;
      if (rp.powT(proof.z[i] as bigint) !== rhs) return fail(`Πprm: t^z[${i}] ≠ A[${i}]·s^e[${i}]`);
    }
    return OK;
  });
}

/** Decode an untrusted Πprm proof body: {A, z}, bigint vectors of exactly m entries. @throws TypeError / RangeError */
export function decodePrmProof(value: unknown, level: SecurityLevel): PrmProof {
  const r = record(value, 'Πprm proof', ['A', 'z']);
  return { A: vector(r.A, 'Πprm proof.A', level.m, big), z: vector(r.z, 'Πprm proof.z', level.m, big) };
}
