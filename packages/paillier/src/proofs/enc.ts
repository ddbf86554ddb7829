/**
 * Πenc — Paillier encryption in range, CGGMP21 ePrint 2021/060 rev. §6.1 Figure 14 (spec §3 "Πenc:
 * Paillier Encryption in Range"), against the verifier's ring-Pedersen parameters R_j = (N̂, s, t).
 *
 * Statement (N₀, K): the prover's Paillier modulus and a ciphertext. Witness k ∈ ±2^ℓ, ρ ∈ Z*_N₀
 * with K = Enc_N₀(k; ρ).
 * Prover: α ← ±2^(ℓ+ε), μ ← ±2^ℓ·N̂, r ← Z*_N₀, γ ← ±2^(ℓ+ε)·N̂; S = s^k t^μ, A = Enc_N₀(α; r),
 * C = s^α t^γ; e ← ±2^logQ; z₁ = α + e·k, z₂ = r·ρ^e mod N₀, z₃ = γ + e·μ.
 * Verifier: N₀ valid modulus; K, A ∈ Z*_N₀²; S, C ∈ Z*_N̂; z₁ ∈ ±2^(ℓ+ε) (the Alpha-Rays range
 * check); z₂ ∈ Z*_N₀; z₃ ∈ ±2^(ℓ+ε+1)·N̂ (size cap); Enc_N₀(z₁; z₂) = A·K^e (mod N₀²) and
 * s^z₁ t^z₃ = C·S^e (mod N̂).
 */
import { type RandomSource, systemRandom } from '@custodian/crypto';
import { allUnits, inSigned, randomSigned, randomUnit } from '../arith.js';
import { rangeBounds, type SecurityLevel } from '../levels.js';
import { modPow } from '../modexp.js';
import { PaillierPublicKey, type PaillierSecretKey } from '../paillier.js';
import type { RingPedersen } from '../ring-pedersen.js';
import {
  auxCanonical,
  big,
  eqTimesPow,
  fail,
  guarded,
  OK,
  type ProofContext,
  proofTranscript,
  record,
  type VerifyResult,
} from './common.js';

const TAG = 'custodian.paillier.enc';

/** Πenc statement: prover's Paillier modulus N₀ and ciphertext K. */
export interface EncStatement {
  readonly N0: bigint;
  readonly K: bigint;
}

/** Πenc witness: plaintext k ∈ ±2^ℓ and nonce ρ. */
export interface EncWitness {
  readonly k: bigint;
  readonly rho: bigint;
}

/** Πenc proof (a `Canonical` record of bigints). */
export interface EncProof {
  readonly S: bigint;
  readonly A: bigint;
  readonly C: bigint;
  readonly z1: bigint;
  readonly z2: bigint;
  readonly z3: bigint;
}

const FIELDS = ['S', 'A', 'C', 'z1', 'z2', 'z3'] as const;

function challenge(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  st: EncStatement,
  S: bigint,
  A: bigint,
  C: bigint,
): bigint {
  return proofTranscript(TAG, ctx, level)
    .append('aux', auxCanonical(aux))
    .append('statement', { N0: st.N0, K: st.K })
    .append('commitment', { S, A, C })
    .challengeSigned('e', rangeBounds(level).Q);
}

/**
 * Prove K encrypts k ∈ ±2^ℓ (Fig. 14).
 * @param aux the verifier's ring-Pedersen parameters
 * @param opts.secretKey the prover's own Paillier secret key for N₀ (CRT encryption of A)
 * @throws RangeError when k ∉ ±2^ℓ
 */
export function proveEnc(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: EncStatement,
  witness: EncWitness,
  rng: RandomSource = systemRandom,
  opts: { secretKey?: PaillierSecretKey } = {},
): EncProof {
  if (!inSigned(witness.k, rangeBounds(level).ell)) throw new RangeError('Πenc witness: k ∉ ±2^ℓ');
  return proveEncUnchecked(ctx, level, aux, statement, witness, rng, opts);
}

/** Fig. 14 prover without the witness range check: for attack regression tests only (not in the package entry). */
export function proveEncUnchecked(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: EncStatement,
  witness: EncWitness,
  rng: RandomSource = systemRandom,
  opts: { secretKey?: PaillierSecretKey } = {},
): EncProof {
  const b = rangeBounds(level);
  const N0 = statement.N0;
  const sk = opts.secretKey && opts.secretKey.N === N0 ? opts.secretKey : undefined;
  const pk = sk ? sk.publicKey : PaillierPublicKey.unchecked(N0);
  const alpha = randomSigned(rng, b.ellEps);
  const mu = randomSigned(rng, b.ell * aux.N);
  const r = randomUnit(rng, N0);
  const gamma = randomSigned(rng, b.ellEps * aux.N);
  const S = aux.commit(witness.k, mu);
  const A = sk ? sk.encryptWithNonce(alpha, r) : pk.encryptWithNonce(alpha, r);
  const C = aux.commit(alpha, gamma);
  const e = challenge(ctx, level, aux, statement, S, A, C);
  const z2 = sk ? (r * sk.crtN.pow(witness.rho, e)) % N0 : (r * modPow(witness.rho, e, N0)) % N0;
  return { S, A, C, z1: alpha + e * witness.k, z2, z3: gamma + e * mu };
}

/**
 * Verify a Πenc proof (Fig. 14 verifier, checks in the module docs). Never throws.
 * @param aux the verifier's own ring-Pedersen parameters (attach the secret for CRT speed)
 */
export function verifyEnc(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: EncStatement,
  proof: EncProof,
): VerifyResult {
  return guarded(() => {
    let pk: PaillierPublicKey;
    try {
      pk = PaillierPublicKey.fromModulus(statement.N0, level);
    } catch (e) {
      return fail(`Πenc: ${(e as Error).message}`);
    }
    for (const f of FIELDS) if (typeof proof[f] !== 'bigint') return fail(`Πenc: ${f} must be a bigint`);
    const b = rangeBounds(level);
    const { S, A, C, z1, z2, z3 } = proof;
    // one gcd for K, A, z2 together; the individual checks below run only when it fails
    const units0 = pk.allCiphertexts([statement.K, A], [z2]);
    if (!units0 && !pk.isCiphertext(statement.K)) return fail('Πenc: K ∉ Z*_N₀²');
    if (!units0 && !pk.isCiphertext(A)) return fail('Πenc: A ∉ Z*_N₀²');
    if (!allUnits([S, C], aux.N)) return fail('Πenc: S, C must lie in Z*_N̂');
    if (!inSigned(z1, b.ellEps)) return fail('Πenc: z1 ∉ ±2^(ℓ+ε)');
    if (!units0 && !allUnits([z2], pk.N)) return fail('Πenc: z2 ∉ Z*_N₀');
    if (!inSigned(z3, 2n * b.ellEps * aux.N)) return fail('Πenc: z3 too large');
    const e = challenge(ctx, level, aux, statement, S, A, C);
    const lhs = (pk.gammaPow(z1) * modPow(z2, pk.N, pk.N2)) % pk.N2;
    const powN2 = (x: bigint, y: bigint) => modPow(x, y, pk.N2);
    if (!eqTimesPow(lhs, A, statement.K, e, pk.N2, powN2)) return fail('Πenc: Enc(z1; z2) ≠ A·K^e');
    const powNh = (x: bigint, y: bigint) => aux.pow(x, y);
    if (!eqTimesPow(aux.commit(z1, z3), C, S, e, aux.N, powNh)) return fail('Πenc: s^z1·t^z3 ≠ C·S^e');
    return OK;
  });
}

/** Decode an untrusted Πenc proof body (record of exactly the 6 bigint fields). @throws TypeError */
export function decodeEncProof(value: unknown): EncProof {
  const r = record(value, 'Πenc proof', FIELDS);
  return Object.fromEntries(FIELDS.map((f) => [f, big(r[f], `Πenc proof.${f}`)])) as unknown as EncProof;
}
