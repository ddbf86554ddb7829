/**
 * Πaff-p — Paillier affine operation with Paillier commitment in range, CGGMP21 ePrint 2021/060 rev.
 * Appendix C, Figure "Paillier Affine Operation with Paillier Commitment ZK-Proof" (the Πaff-g of
 * §6.2 Fig. 15 with X = x·G replaced by a Paillier encryption X = Enc_N₁(x; ρ_x)), against the
 * verifier's ring-Pedersen parameters R_j = (N̂, s, t).
 *
 * Statement (N₀, N₁, C, D, Y, X): N₀, N₁ Paillier moduli (N₀ = N₁ allowed); C, D ∈ Z*_N₀²;
 * Y, X ∈ Z*_N₁². Witness x ∈ ±2^ℓ, y ∈ ±2^ℓ', ρ ∈ Z*_N₀, ρ_x, ρ_y ∈ Z*_N₁ with
 * D = C^x·Enc_N₀(y; ρ), Y = Enc_N₁(y; ρ_y), X = Enc_N₁(x; ρ_x). With N₀ = N₁ = N_i, C = K_i,
 * X = G_i, Y = Enc_i(0) it proves H_i = K_i^γᵢ·Enc_i(0; ρ) (the role of Πmul).
 * Prover: α ← ±2^(ℓ+ε), β ← ±2^(ℓ'+ε), r ← Z*_N₀, r_x, r_y ← Z*_N₁, γ, δ ← ±2^(ℓ+ε)·N̂,
 * m, μ ← ±2^ℓ·N̂; A = C^α·Enc_N₀(β; r), B_x = Enc_N₁(α; r_x), B_y = Enc_N₁(β; r_y), E = s^α t^γ,
 * S = s^x t^m, F = s^β t^δ, T = s^y t^μ; e ← ±2^logQ; z₁ = α + e·x, z₂ = β + e·y, z₃ = γ + e·m,
 * z₄ = δ + e·μ, w = r·ρ^e mod N₀, w_x = r_x·ρ_x^e mod N₁, w_y = r_y·ρ_y^e mod N₁.
 * Verifier: both moduli valid; C, D, A ∈ Z*_N₀²; X, Y, B_x, B_y ∈ Z*_N₁²; E, S, F, T ∈ Z*_N̂;
 * z₁ ∈ ±2^(ℓ+ε), z₂ ∈ ±2^(ℓ'+ε) (Alpha-Rays range checks); w ∈ Z*_N₀; w_x, w_y ∈ Z*_N₁;
 * z₃, z₄ ∈ ±2^(ℓ+ε+1)·N̂ (size caps); then C^z₁·Enc_N₀(z₂; w) = A·D^e,
 * Enc_N₁(z₁; w_x) = B_x·X^e, Enc_N₁(z₂; w_y) = B_y·Y^e, s^z₁ t^z₃ = E·S^e, s^z₂ t^z₄ = F·T^e.
 * The challenge range is ±Q = ±2^logQ (the paper's ±q; spec §3), as in every proof here.
 */
import { type RandomSource, secp256k1Group, systemRandom } from '@custodian/crypto';
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

const TAG = 'custodian.paillier.aff-p';
const G = secp256k1Group;

/** Πaff-p statement. */
export interface AffPStatement {
  /** Paillier modulus N₀ of C and D (the verifier's N_j; or the prover's own when N₀ = N₁) */
  readonly N0: bigint;
  /** prover's Paillier modulus N₁ (= N_i) of X and Y */
  readonly N1: bigint;
  /** C ∈ Z*_N₀² */
  readonly C: bigint;
  /** D = C^x·Enc_N₀(y; ρ) ∈ Z*_N₀² */
  readonly D: bigint;
  /** Y = Enc_N₁(y; ρ_y) ∈ Z*_N₁² */
  readonly Y: bigint;
  /** X = Enc_N₁(x; ρ_x) ∈ Z*_N₁² */
  readonly X: bigint;
}

/** Πaff-p witness: x ∈ ±2^ℓ, y ∈ ±2^ℓ', ρ ∈ Z*_N₀, ρ_x, ρ_y ∈ Z*_N₁. */
export interface AffPWitness {
  readonly x: bigint;
  readonly y: bigint;
  readonly rho: bigint;
  readonly rhoX: bigint;
  readonly rhoY: bigint;
}

/** Πaff-p proof (a `Canonical` record of 14 bigints). */
export interface AffPProof {
  /** A = C^α·Enc_N₀(β; r) ∈ Z*_N₀² */
  readonly A: bigint;
  /** B_x = Enc_N₁(α; r_x) ∈ Z*_N₁² */
  readonly Bx: bigint;
  /** B_y = Enc_N₁(β; r_y) ∈ Z*_N₁² */
  readonly By: bigint;
  /** E = s^α t^γ, S = s^x t^m, F = s^β t^δ, T = s^y t^μ ∈ Z*_N̂ */
  readonly E: bigint;
  readonly S: bigint;
  readonly F: bigint;
  readonly T: bigint;
  /** z₁ = α + e·x ∈ ±2^(ℓ+ε) */
  readonly z1: bigint;
  /** z₂ = β + e·y ∈ ±2^(ℓ'+ε) */
  readonly z2: bigint;
  readonly z3: bigint;
  readonly z4: bigint;
  /** w = r·ρ^e mod N₀ */
  readonly w: bigint;
  /** w_x = r_x·ρ_x^e mod N₁ */
  readonly wx: bigint;
  /** w_y = r_y·ρ_y^e mod N₁ */
  readonly wy: bigint;
}

const FIELDS = ['A', 'Bx', 'By', 'E', 'S', 'F', 'T', 'z1', 'z2', 'z3', 'z4', 'w', 'wx', 'wy'] as const;

function challenge(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  st: AffPStatement,
  pr: Pick<AffPProof, 'A' | 'Bx' | 'By' | 'E' | 'S' | 'F' | 'T'>,
): bigint {
  return proofTranscript(TAG, ctx, level)
    .append('aux', auxCanonical(aux))
    .append('curve', G.name)
    .append('statement', { N0: st.N0, N1: st.N1, C: st.C, D: st.D, Y: st.Y, X: st.X })
    .append('commitment', { A: pr.A, Bx: pr.Bx, By: pr.By, E: pr.E, S: pr.S, F: pr.F, T: pr.T })
    .challengeSigned('e', rangeBounds(level).Q);
}

/** The key among `sk` that owns modulus N, if any. */
function owner(sk: PaillierSecretKey | undefined, N: bigint): PaillierSecretKey | undefined {
  return sk && sk.N === N ? sk : undefined;
}

/**
 * Prove the affine relation with Paillier commitments (Πaff-p).
 * @param aux the verifier's ring-Pedersen parameters
 * @param opts.secretKey the prover's own Paillier secret key: CRT for B_x, B_y, w_x, w_y when it is
 *   N₁'s key, and also for A and w when N₀ = N₁
 * @throws RangeError when x ∉ ±2^ℓ or y ∉ ±2^ℓ'
 */
export function proveAffP(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: AffPStatement,
  witness: AffPWitness,
  rng: RandomSource = systemRandom,
  opts: { secretKey?: PaillierSecretKey } = {},
): AffPProof {
  const b = rangeBounds(level);
  if (!inSigned(witness.x, b.ell)) throw new RangeError('Πaff-p witness: x ∉ ±2^ℓ');
  if (!inSigned(witness.y, b.ellPrime)) throw new RangeError("Πaff-p witness: y ∉ ±2^ℓ'");
  return proveAffPUnchecked(ctx, level, aux, statement, witness, rng, opts);
}

/** Πaff-p prover without the witness range checks: for attack regression tests only (not in the package entry). */
export function proveAffPUnchecked(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: AffPStatement,
  witness: AffPWitness,
  rng: RandomSource = systemRandom,
  opts: { secretKey?: PaillierSecretKey } = {},
): AffPProof {
  const b = rangeBounds(level);
  const sk0 = owner(opts.secretKey, statement.N0);
  const sk1 = owner(opts.secretKey, statement.N1);
  const pk0 = sk0 ? sk0.publicKey : PaillierPublicKey.unchecked(statement.N0);
  const pk1 = sk1 ? sk1.publicKey : PaillierPublicKey.unchecked(statement.N1);
  const enc0 = (m: bigint, r: bigint) => (sk0 ? sk0.encryptWithNonce(m, r) : pk0.encryptWithNonce(m, r));
  const enc1 = (m: bigint, r: bigint) => (sk1 ? sk1.encryptWithNonce(m, r) : pk1.encryptWithNonce(m, r));
  const powN0 = (x: bigint, e: bigint) => (sk0 ? sk0.crtN.pow(x, e) : modPow(x, e, pk0.N));
  const powN1 = (x: bigint, e: bigint) => (sk1 ? sk1.crtN.pow(x, e) : modPow(x, e, pk1.N));
  const Cpow = (e: bigint) => (sk0 ? sk0.crtN2.pow(statement.C, e) : modPow(statement.C, e, pk0.N2));
  const Nh = aux.N;
  const alpha = randomSigned(rng, b.ellEps);
  const beta = randomSigned(rng, b.ellPrimeEps);
  const r = randomUnit(rng, pk0.N);
  const rx = randomUnit(rng, pk1.N);
  const ry = randomUnit(rng, pk1.N);
  const gamma = randomSigned(rng, b.ellEps * Nh);
  const delta = randomSigned(rng, b.ellEps * Nh);
  const m = randomSigned(rng, b.ell * Nh);
  const mu = randomSigned(rng, b.ell * Nh);
  const A = (Cpow(alpha) * enc0(beta, r)) % pk0.N2;
  const Bx = enc1(alpha, rx);
  const By = enc1(beta, ry);
  const E = aux.commit(alpha, gamma);
  const S = aux.commit(witness.x, m);
  const F = aux.commit(beta, delta);
  const T = aux.commit(witness.y, mu);
  const e = challenge(ctx, level, aux, statement, { A, Bx, By, E, S, F, T });
  return {
    A,
    Bx,
    By,
    E,
    S,
    F,
    T,
    z1: alpha + e * witness.x,
    z2: beta + e * witness.y,
    z3: gamma + e * m,
    z4: delta + e * mu,
    w: (r * powN0(witness.rho, e)) % pk0.N,
    wx: (rx * powN1(witness.rhoX, e)) % pk1.N,
    wy: (ry * powN1(witness.rhoY, e)) % pk1.N,
  };
}

/**
 * Verify a Πaff-p proof (checks in the module docs). Never throws.
 * @param aux the verifier's own ring-Pedersen parameters (attach the secret for CRT speed)
 * @param opts.secretKey the verifier's own Paillier secret key: CRT for the equations modulo N₀²
 *   and/or N₁² whose modulus it owns
 */
export function verifyAffP(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: AffPStatement,
  proof: AffPProof,
  opts: { secretKey?: PaillierSecretKey } = {},
): VerifyResult {
  return guarded(() => {
    let pk0: PaillierPublicKey;
    let pk1: PaillierPublicKey;
    try {
      pk0 = PaillierPublicKey.fromModulus(statement.N0, level);
      pk1 = PaillierPublicKey.fromModulus(statement.N1, level);
    } catch (e) {
      return fail(`Πaff-p: ${(e as Error).message}`);
    }
    for (const f of FIELDS) if (typeof proof[f] !== 'bigint') return fail(`Πaff-p: ${f} must be a bigint`);
    const b = rangeBounds(level);
    const Nh = aux.N;
    const { A, Bx, By, E, S, F, T, z1, z2, z3, z4, w, wx, wy } = proof;
    // one gcd per modulus (C, D, A, w with N₀; X, Y, B_x, B_y, w_x, w_y with N₁); the individual
    // checks below run only when the batched one fails, so the reported reason names the value
    const units0 = pk0.allCiphertexts([statement.C, statement.D, A], [w]);
    const units1 = pk1.allCiphertexts([statement.X, statement.Y, Bx, By], [wx, wy]);
    if (!units0 && (!pk0.isCiphertext(statement.C) || !pk0.isCiphertext(statement.D)))
      return fail('Πaff-p: C, D ∉ Z*_N₀²');
    if (!units0 && !pk0.isCiphertext(A)) return fail('Πaff-p: A ∉ Z*_N₀²');
    if (!units1 && (!pk1.isCiphertext(statement.X) || !pk1.isCiphertext(statement.Y)))
      return fail('Πaff-p: X, Y ∉ Z*_N₁²');
    if (!units1 && (!pk1.isCiphertext(Bx) || !pk1.isCiphertext(By))) return fail('Πaff-p: B_x, B_y ∉ Z*_N₁²');
    if (!allUnits([E, S, F, T], Nh)) return fail('Πaff-p: E, S, F, T must lie in Z*_N̂');
    if (!inSigned(z1, b.ellEps)) return fail('Πaff-p: z1 ∉ ±2^(ℓ+ε)');
    if (!inSigned(z2, b.ellPrimeEps)) return fail("Πaff-p: z2 ∉ ±2^(ℓ'+ε)");
    if (!units0 && !allUnits([w], pk0.N)) return fail('Πaff-p: w ∉ Z*_N₀');
    if (!units1 && !allUnits([wx, wy], pk1.N)) return fail('Πaff-p: w_x, w_y ∉ Z*_N₁');
    if (!inSigned(z3, 2n * b.ellEps * Nh) || !inSigned(z4, 2n * b.ellEps * Nh)) return fail('Πaff-p: z3, z4 too large');
    const e = challenge(ctx, level, aux, statement, proof);
    const sk0 = owner(opts.secretKey, pk0.N);
    const sk1 = owner(opts.secretKey, pk1.N);
    const pow0 = (x: bigint, y: bigint) => (sk0 ? sk0.crtN2.pow(x, y) : modPow(x, y, pk0.N2));
    const pow1 = (x: bigint, y: bigint) => (sk1 ? sk1.crtN2.pow(x, y) : modPow(x, y, pk1.N2));
    const powN0 = (x: bigint) => (sk0 ? sk0.powN(x) : modPow(x, pk0.N, pk0.N2));
    const powN1 = (x: bigint) => (sk1 ? sk1.powN(x) : modPow(x, pk1.N, pk1.N2));
    // 1. C^z1 · (1+N₀)^z2 · w^N₀ = A · D^e  (mod N₀²)
    const lhs1 = (((pow0(statement.C, z1) * pk0.gammaPow(z2)) % pk0.N2) * powN0(w)) % pk0.N2;
    if (!eqTimesPow(lhs1, A, statement.D, e, pk0.N2, pow0)) return fail('Πaff-p: C^z1·Enc(z2; w) ≠ A·D^e');
    // 2. (1+N₁)^z1 · w_x^N₁ = B_x · X^e  (mod N₁²)
    const lhs2 = (pk1.gammaPow(z1) * powN1(wx)) % pk1.N2;
    if (!eqTimesPow(lhs2, Bx, statement.X, e, pk1.N2, pow1)) return fail('Πaff-p: Enc(z1; w_x) ≠ B_x·X^e');
    // 3. (1+N₁)^z2 · w_y^N₁ = B_y · Y^e  (mod N₁²)
    const lhs3 = (pk1.gammaPow(z2) * powN1(wy)) % pk1.N2;
    if (!eqTimesPow(lhs3, By, statement.Y, e, pk1.N2, pow1)) return fail('Πaff-p: Enc(z2; w_y) ≠ B_y·Y^e');
    // 4, 5. ring-Pedersen
    const powNh = (x: bigint, y: bigint) => aux.pow(x, y);
    if (!eqTimesPow(aux.commit(z1, z3), E, S, e, Nh, powNh)) return fail('Πaff-p: s^z1·t^z3 ≠ E·S^e');
    if (!eqTimesPow(aux.commit(z2, z4), F, T, e, Nh, powNh)) return fail('Πaff-p: s^z2·t^z4 ≠ F·T^e');
    return OK;
  });
}

/** Decode an untrusted Πaff-p proof body (record of exactly the 14 bigint fields). @throws TypeError */
export function decodeAffPProof(value: unknown): AffPProof {
  const r = record(value, 'Πaff-p proof', FIELDS);
  return Object.fromEntries(FIELDS.map((f) => [f, big(r[f], `Πaff-p proof.${f}`)])) as unknown as AffPProof;
}
