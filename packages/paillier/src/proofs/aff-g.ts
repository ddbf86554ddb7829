/**
 * Πaff-g — Paillier affine operation with group commitment in range, CGGMP21 ePrint 2021/060 rev.
 * §6.2 Figure 15 (spec §3 "Πaff-g"), on secp256k1, against the verifier's ring-Pedersen
 * parameters R_j = (N̂, s, t).
 *
 * Statement (N₀, N₁, C, D, Y, X): N₀ the verifier's Paillier modulus, N₁ the prover's; C, D ∈
 * Z*_N₀², Y ∈ Z*_N₁², X a secp256k1 point (33-byte SEC1 compressed). Witness x ∈ ±2^ℓ, y ∈ ±2^ℓ',
 * ρ ∈ Z*_N₀, ρ_y ∈ Z*_N₁ with D = C^x·Enc_N₀(y; ρ), Y = Enc_N₁(y; ρ_y), X = x·G.
 * Prover: α ← ±2^(ℓ+ε), β ← ±2^(ℓ'+ε), r ← Z*_N₀, r_y ← Z*_N₁, γ, δ ← ±2^(ℓ+ε)·N̂, m, μ ← ±2^ℓ·N̂;
 * A = C^α·Enc_N₀(β; r), B_x = α·G, B_y = Enc_N₁(β; r_y), E = s^α t^γ, S = s^x t^m, F = s^β t^δ,
 * T = s^y t^μ; e ← ±2^logQ; z₁ = α + e·x, z₂ = β + e·y, z₃ = γ + e·m, z₄ = δ + e·μ,
 * w = r·ρ^e mod N₀, w_y = r_y·ρ_y^e mod N₁.
 * Verifier: both moduli valid; C, D, A ∈ Z*_N₀²; Y, B_y ∈ Z*_N₁²; E, S, F, T ∈ Z*_N̂; X, B_x valid
 * non-identity points; z₁ ∈ ±2^(ℓ+ε), z₂ ∈ ±2^(ℓ'+ε) (Alpha-Rays range checks); w ∈ Z*_N₀,
 * w_y ∈ Z*_N₁; z₃, z₄ ∈ ±2^(ℓ+ε+1)·N̂ (size caps); then
 * C^z₁·Enc_N₀(z₂; w) = A·D^e, z₁·G = B_x + e·X, Enc_N₁(z₂; w_y) = B_y·Y^e, s^z₁ t^z₃ = E·S^e,
 * s^z₂ t^z₄ = F·T^e.
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
  bytesOf,
  eqTimesPow,
  fail,
  guarded,
  OK,
  type ProofContext,
  proofTranscript,
  record,
  type VerifyResult,
} from './common.js';

const TAG = 'custodian.paillier.aff-g';
const G = secp256k1Group;

/** Πaff-g statement. */
export interface AffGStatement {
  /** verifier's Paillier modulus N₀ (= N_j) */
  readonly N0: bigint;
  /** prover's Paillier modulus N₁ (= N_i) */
  readonly N1: bigint;
  readonly C: bigint;
  readonly D: bigint;
  readonly Y: bigint;
  /** X = x·G, 33-byte compressed secp256k1 point */
  readonly X: Uint8Array;
}

/** Πaff-g witness. */
export interface AffGWitness {
  readonly x: bigint;
  readonly y: bigint;
  readonly rho: bigint;
  readonly rhoY: bigint;
}

/** Πaff-g proof (a `Canonical` record: bigints and the 33-byte point Bx). */
export interface AffGProof {
  readonly A: bigint;
  readonly Bx: Uint8Array;
  readonly By: bigint;
  readonly E: bigint;
  readonly S: bigint;
  readonly F: bigint;
  readonly T: bigint;
  readonly z1: bigint;
  readonly z2: bigint;
  readonly z3: bigint;
  readonly z4: bigint;
  readonly w: bigint;
  readonly wy: bigint;
}

const BIG_FIELDS = ['A', 'By', 'E', 'S', 'F', 'T', 'z1', 'z2', 'z3', 'z4', 'w', 'wy'] as const;

function challenge(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  st: AffGStatement,
  pr: Pick<AffGProof, 'A' | 'Bx' | 'By' | 'E' | 'S' | 'F' | 'T'>,
): bigint {
  return proofTranscript(TAG, ctx, level)
    .append('aux', auxCanonical(aux))
    .append('curve', G.name)
    .append('statement', { N0: st.N0, N1: st.N1, C: st.C, D: st.D, Y: st.Y, X: st.X })
    .append('commitment', { A: pr.A, Bx: pr.Bx, By: pr.By, E: pr.E, S: pr.S, F: pr.F, T: pr.T })
    .challengeSigned('e', rangeBounds(level).Q);
}

/**
 * Prove the affine relation (Fig. 15).
 * @param aux the verifier's ring-Pedersen parameters
 * @param opts.secretKey the prover's own Paillier secret key for N₁ (CRT for B_y and w_y)
 * @throws RangeError when x ∉ ±2^ℓ or y ∉ ±2^ℓ'
 */
export function proveAffG(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: AffGStatement,
  witness: AffGWitness,
  rng: RandomSource = systemRandom,
  opts: { secretKey?: PaillierSecretKey } = {},
): AffGProof {
  const b = rangeBounds(level);
  if (!inSigned(witness.x, b.ell)) throw new RangeError('Πaff-g witness: x ∉ ±2^ℓ');
  if (!inSigned(witness.y, b.ellPrime)) throw new RangeError("Πaff-g witness: y ∉ ±2^ℓ'");
  return proveAffGUnchecked(ctx, level, aux, statement, witness, rng, opts);
}

/** Fig. 15 prover without the witness range checks: for attack regression tests only (not in the package entry). */
export function proveAffGUnchecked(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: AffGStatement,
  witness: AffGWitness,
  rng: RandomSource = systemRandom,
  opts: { secretKey?: PaillierSecretKey } = {},
): AffGProof {
  const b = rangeBounds(level);
  const pk0 = PaillierPublicKey.unchecked(statement.N0);
  const sk1 = opts.secretKey && opts.secretKey.N === statement.N1 ? opts.secretKey : undefined;
  const pk1 = sk1 ? sk1.publicKey : PaillierPublicKey.unchecked(statement.N1);
  const Nh = aux.N;
  const alpha = randomSigned(rng, b.ellEps);
  const beta = randomSigned(rng, b.ellPrimeEps);
  const r = randomUnit(rng, pk0.N);
  const ry = randomUnit(rng, pk1.N);
  const gamma = randomSigned(rng, b.ellEps * Nh);
  const delta = randomSigned(rng, b.ellEps * Nh);
  const m = randomSigned(rng, b.ell * Nh);
  const mu = randomSigned(rng, b.ell * Nh);
  const A = (modPow(statement.C, alpha, pk0.N2) * pk0.encryptWithNonce(beta, r)) % pk0.N2;
  const BxPoint = G.mulBase(G.mod(alpha));
  const Bx = G.encodePoint(BxPoint);
  const By = sk1 ? sk1.encryptWithNonce(beta, ry) : pk1.encryptWithNonce(beta, ry);
  const E = aux.commit(alpha, gamma);
  const S = aux.commit(witness.x, m);
  const F = aux.commit(beta, delta);
  const T = aux.commit(witness.y, mu);
  const e = challenge(ctx, level, aux, statement, { A, Bx, By, E, S, F, T });
  const wy = sk1 ? (ry * sk1.crtN.pow(witness.rhoY, e)) % pk1.N : (ry * modPow(witness.rhoY, e, pk1.N)) % pk1.N;
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
    w: (r * modPow(witness.rho, e, pk0.N)) % pk0.N,
    wy,
  };
}

/**
 * Verify a Πaff-g proof (Fig. 15 verifier, checks in the module docs). Never throws.
 * @param aux the verifier's own ring-Pedersen parameters (attach the secret for CRT speed)
 * @param opts.secretKey the verifier's own Paillier secret key for N₀ (CRT for the first equation)
 */
export function verifyAffG(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: AffGStatement,
  proof: AffGProof,
  opts: { secretKey?: PaillierSecretKey } = {},
): VerifyResult {
  return guarded(() => {
    let pk0: PaillierPublicKey;
    let pk1: PaillierPublicKey;
    try {
      pk0 = PaillierPublicKey.fromModulus(statement.N0, level);
      pk1 = PaillierPublicKey.fromModulus(statement.N1, level);
    } catch (e) {
      return fail(`Πaff-g: ${(e as Error).message}`);
    }
    for (const f of BIG_FIELDS) if (typeof proof[f] !== 'bigint') return fail(`Πaff-g: ${f} must be a bigint`);
    const b = rangeBounds(level);
    const Nh = aux.N;
    const { A, By, E, S, F, T, z1, z2, z3, z4, w, wy } = proof;
    // one gcd per modulus (C, D, A, w with N₀; Y, B_y, w_y with N₁); the individual checks below
    // run only when the batched one fails, so the reported reason is unchanged
    const units0 = pk0.allCiphertexts([statement.C, statement.D, A], [w]);
    const units1 = pk1.allCiphertexts([statement.Y, By], [wy]);
    if (!units0 && (!pk0.isCiphertext(statement.C) || !pk0.isCiphertext(statement.D)))
      return fail('Πaff-g: C, D ∉ Z*_N₀²');
    if (!units0 && !pk0.isCiphertext(A)) return fail('Πaff-g: A ∉ Z*_N₀²');
    if (!units1 && (!pk1.isCiphertext(statement.Y) || !pk1.isCiphertext(By))) return fail('Πaff-g: Y, B_y ∉ Z*_N₁²');
    if (!allUnits([E, S, F, T], Nh)) return fail('Πaff-g: E, S, F, T must lie in Z*_N̂');
    if (!inSigned(z1, b.ellEps)) return fail('Πaff-g: z1 ∉ ±2^(ℓ+ε)');
    if (!inSigned(z2, b.ellPrimeEps)) return fail("Πaff-g: z2 ∉ ±2^(ℓ'+ε)");
    if (!units0 && !allUnits([w], pk0.N)) return fail('Πaff-g: w ∉ Z*_N₀');
    if (!units1 && !allUnits([wy], pk1.N)) return fail('Πaff-g: w_y ∉ Z*_N₁');
    if (!inSigned(z3, 2n * b.ellEps * Nh) || !inSigned(z4, 2n * b.ellEps * Nh)) return fail('Πaff-g: z3, z4 too large');
    let X: ReturnType<typeof G.decodePoint>;
    let Bx: ReturnType<typeof G.decodePoint>;
    try {
      X = G.decodePoint(statement.X, 'X');
      Bx = G.decodePoint(proof.Bx, 'Bx');
    } catch (e) {
      return fail(`Πaff-g: ${(e as Error).message}`);
    }
    const e = challenge(ctx, level, aux, statement, proof);
    // 1. C^z1 · (1+N₀)^z2 · w^N₀ = A · D^e  (mod N₀²)
    const sk0 = opts.secretKey && opts.secretKey.N === pk0.N ? opts.secretKey : undefined;
    const pow0 = (base: bigint, exp: bigint) => (sk0 ? sk0.crtN2.pow(base, exp) : modPow(base, exp, pk0.N2));
    const wN = sk0 ? sk0.powN(w) : modPow(w, pk0.N, pk0.N2);
    const lhs1 = (((pow0(statement.C, z1) * pk0.gammaPow(z2)) % pk0.N2) * wN) % pk0.N2;
    if (!eqTimesPow(lhs1, A, statement.D, e, pk0.N2, pow0)) return fail('Πaff-g: C^z1·Enc(z2; w) ≠ A·D^e');
    // 2. z1·G = B_x + e·X
    if (!G.mulBase(G.mod(z1)).equals(Bx.add(G.mulPublic(X, G.mod(e))))) return fail('Πaff-g: z1·G ≠ B_x + e·X');
    // 3. Enc_N₁(z2; w_y) = B_y · Y^e  (mod N₁²)
    const lhs3 = (pk1.gammaPow(z2) * modPow(wy, pk1.N, pk1.N2)) % pk1.N2;
    const pow1 = (x: bigint, y: bigint) => modPow(x, y, pk1.N2);
    if (!eqTimesPow(lhs3, By, statement.Y, e, pk1.N2, pow1)) return fail('Πaff-g: Enc(z2; w_y) ≠ B_y·Y^e');
    // 4, 5. ring-Pedersen
    const powNh = (x: bigint, y: bigint) => aux.pow(x, y);
    if (!eqTimesPow(aux.commit(z1, z3), E, S, e, Nh, powNh)) return fail('Πaff-g: s^z1·t^z3 ≠ E·S^e');
    if (!eqTimesPow(aux.commit(z2, z4), F, T, e, Nh, powNh)) return fail('Πaff-g: s^z2·t^z4 ≠ F·T^e');
    return OK;
  });
}

/** Decode an untrusted Πaff-g proof body (12 bigint fields and the 33-byte point Bx). @throws TypeError / RangeError */
export function decodeAffGProof(value: unknown): AffGProof {
  const r = record(value, 'Πaff-g proof', [...BIG_FIELDS, 'Bx']);
  const out: Record<string, unknown> = Object.fromEntries(BIG_FIELDS.map((f) => [f, big(r[f], `Πaff-g proof.${f}`)]));
  out.Bx = bytesOf(r.Bx, 'Πaff-g proof.Bx', G.pointLength);
  return out as unknown as AffGProof;
}
