/**
 * Πdec — Paillier decryption modulo q, CGGMP21 ePrint 2021/060 rev. Appendix C, Figure "Paillier
 * Decryption modulo q ZK-Proof" (Πdec), in group form, on secp256k1, against the verifier's
 * ring-Pedersen parameters R_j = (N̂, s, t).
 *
 * Statement (N₀, C, X, B): N₀ the prover's Paillier modulus, C ∈ Z*_N₀², X and the base B
 * secp256k1 points (33-byte SEC1 compressed). Witness: an INTEGER y with |y| ≤ 2^(ℓ'+ε+8)
 * ({@link decWitnessBound}: room for a sum of up to 256 MtA terms of ±2^(ℓ'+ε) each) and
 * ρ ∈ Z*_N₀ with C = Enc_N₀(y; ρ) and X = (y mod q)·B. With B = G this is the paper's Πdec with
 * its public x = y mod q given as X = x·G; the paper's scalar commitment γ = α mod q becomes the
 * point Γ = α·B, and its check z₁ ≡ γ + e·x (mod q) becomes z₁·B = Γ + e·X, so nothing about
 * y mod q is revealed beyond X.
 *
 * Masking: the paper samples α ← ±2^(ℓ+ε), which hides e·y only for |y| ≤ 2^ℓ. Here y may be far
 * larger, so α ← ±2^(ℓ'+2ε+8) = ±2^ε·(y bound): z₁ = α + e·y is then within statistical distance
 * 2^(logQ−ε) (= 2^−102 at both levels) of α. The ring-Pedersen randomness keeps the paper's ranges
 * (μ ← ±2^ℓ·N̂, ν ← ±2^(ℓ+ε)·N̂: t^μ hides s^y whatever the size of y).
 *
 * Prover: α ← ±2^(ℓ'+2ε+8), μ ← ±2^ℓ·N̂, ν ← ±2^(ℓ+ε)·N̂, r ← Z*_N₀; S = s^y t^μ, T = s^α t^ν,
 * A = Enc_N₀(α; r), Γ = α·B; e ← ±2^logQ; z₁ = α + e·y, z₂ = ν + e·μ, w = r·ρ^e mod N₀.
 * Verifier: N₀ valid; C, A ∈ Z*_N₀²; S, T ∈ Z*_N̂; X, B, Γ valid non-identity points;
 * z₁ ∈ ±2^(ℓ'+2ε+9) (size cap: honest |z₁| < 2^(ℓ'+2ε+8) + 2^(ℓ'+ε+8+logQ); it also keeps the
 * extracted y, |y| ≤ 2^(ℓ'+2ε+10), below N₀/2, so y is the signed decryption of C and
 * "y mod q" is well defined); w ∈ Z*_N₀; z₂ ∈ ±2^(ℓ+ε+1)·N̂ (size cap); then
 * Enc_N₀(z₁; w) = A·C^e (mod N₀²), z₁·B = Γ + e·X, s^z₁ t^z₂ = T·S^e (mod N̂).
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

const TAG = 'custodian.paillier.dec';
const G = secp256k1Group;

/** Πdec statement. */
export interface DecStatement {
  /** prover's Paillier modulus N₀ */
  readonly N0: bigint;
  /** C = Enc_N₀(y; ρ) ∈ Z*_N₀² */
  readonly C: bigint;
  /** X = (y mod q)·B, 33-byte compressed secp256k1 point */
  readonly X: Uint8Array;
  /** base point B, 33-byte compressed (G for the paper's Πdec) */
  readonly B: Uint8Array;
}

/** Πdec witness: the integer y, |y| ≤ 2^(ℓ'+ε+8), and the nonce ρ ∈ Z*_N₀ of C. */
export interface DecWitness {
  readonly y: bigint;
  readonly rho: bigint;
}

/** Πdec proof (a `Canonical` record: bigints and the 33-byte point Γ). */
export interface DecProof {
  /** S = s^y t^μ ∈ Z*_N̂ */
  readonly S: bigint;
  /** T = s^α t^ν ∈ Z*_N̂ */
  readonly T: bigint;
  /** A = Enc_N₀(α; r) ∈ Z*_N₀² */
  readonly A: bigint;
  /** Γ = α·B, 33-byte compressed point */
  readonly Gamma: Uint8Array;
  /** z₁ = α + e·y ∈ ±2^(ℓ'+2ε+9) */
  readonly z1: bigint;
  /** z₂ = ν + e·μ */
  readonly z2: bigint;
  /** w = r·ρ^e mod N₀ */
  readonly w: bigint;
}

const BIG_FIELDS = ['S', 'T', 'A', 'z1', 'z2', 'w'] as const;

/**
 * The witness bound 2^(ℓ'+ε+8) of Πdec: |y| may not exceed it (256 terms of ±2^(ℓ'+ε)).
 * At both levels 2^1086.
 */
export function decWitnessBound(level: SecurityLevel): bigint {
  return 1n << BigInt(level.ellPrime + level.epsilon + 8);
}

/** α's range 2^(ℓ'+2ε+8) = 2^ε·{@link decWitnessBound}. */
function alphaBound(level: SecurityLevel): bigint {
  return decWitnessBound(level) << BigInt(level.epsilon);
}

function challenge(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  st: DecStatement,
  pr: Pick<DecProof, 'S' | 'T' | 'A' | 'Gamma'>,
): bigint {
  return proofTranscript(TAG, ctx, level)
    .append('aux', auxCanonical(aux))
    .append('curve', G.name)
    .append('statement', { N0: st.N0, C: st.C, X: st.X, B: st.B })
    .append('commitment', { S: pr.S, T: pr.T, A: pr.A, Gamma: pr.Gamma })
    .challengeSigned('e', rangeBounds(level).Q);
}

/**
 * Prove C = Enc_N₀(y; ρ) and X = (y mod q)·B for an integer |y| ≤ 2^(ℓ'+ε+8) (Πdec, group form).
 * The nonce of a homomorphically combined ciphertext comes from
 * {@link PaillierSecretKey.decryptWithNonce}.
 * @param aux the verifier's ring-Pedersen parameters
 * @param opts.secretKey the prover's own Paillier secret key for N₀ (CRT for A and w)
 * @throws RangeError when |y| > 2^(ℓ'+ε+8)
 */
export function proveDec(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: DecStatement,
  witness: DecWitness,
  rng: RandomSource = systemRandom,
  opts: { secretKey?: PaillierSecretKey } = {},
): DecProof {
  if (!inSigned(witness.y, decWitnessBound(level))) throw new RangeError("Πdec witness: y ∉ ±2^(ℓ'+ε+8)");
  return proveDecUnchecked(ctx, level, aux, statement, witness, rng, opts);
}

/** Πdec prover without the witness range check: for attack regression tests only (not in the package entry). */
export function proveDecUnchecked(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: DecStatement,
  witness: DecWitness,
  rng: RandomSource = systemRandom,
  opts: { secretKey?: PaillierSecretKey } = {},
): DecProof {
  const b = rangeBounds(level);
  const N0 = statement.N0;
  const sk = opts.secretKey && opts.secretKey.N === N0 ? opts.secretKey : undefined;
  const pk = sk ? sk.publicKey : PaillierPublicKey.unchecked(N0);
  const B = G.decodePoint(statement.B, 'B');
  const alpha = randomSigned(rng, alphaBound(level));
  const mu = randomSigned(rng, b.ell * aux.N);
  const nu = randomSigned(rng, b.ellEps * aux.N);
  const r = randomUnit(rng, N0);
  const S = aux.commit(witness.y, mu);
  const T = aux.commit(alpha, nu);
  const A = sk ? sk.encryptWithNonce(alpha, r) : pk.encryptWithNonce(alpha, r);
  const Gamma = G.encodePoint(G.mul(B, G.mod(alpha)));
  const e = challenge(ctx, level, aux, statement, { S, T, A, Gamma });
  const w = sk ? (r * sk.crtN.pow(witness.rho, e)) % N0 : (r * modPow(witness.rho, e, N0)) % N0;
  return { S, T, A, Gamma, z1: alpha + e * witness.y, z2: nu + e * mu, w };
}

/**
 * Verify a Πdec proof (checks in the module docs). Never throws.
 * @param aux the verifier's own ring-Pedersen parameters (attach the secret for CRT speed)
 * @param opts.secretKey a Paillier secret key of the verifier: used (CRT) only if it is N₀'s
 */
export function verifyDec(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: DecStatement,
  proof: DecProof,
  opts: { secretKey?: PaillierSecretKey } = {},
): VerifyResult {
  return guarded(() => {
    let pk: PaillierPublicKey;
    try {
      pk = PaillierPublicKey.fromModulus(statement.N0, level);
    } catch (e) {
      return fail(`Πdec: ${(e as Error).message}`);
    }
    for (const f of BIG_FIELDS) if (typeof proof[f] !== 'bigint') return fail(`Πdec: ${f} must be a bigint`);
    const b = rangeBounds(level);
    const { S, T, A, z1, z2, w } = proof;
    // one gcd for C, A, w together; the individual checks below run only when it fails
    const units0 = pk.allCiphertexts([statement.C, A], [w]);
    if (!units0 && !pk.isCiphertext(statement.C)) return fail('Πdec: C ∉ Z*_N₀²');
    if (!units0 && !pk.isCiphertext(A)) return fail('Πdec: A ∉ Z*_N₀²');
    if (!allUnits([S, T], aux.N)) return fail('Πdec: S, T must lie in Z*_N̂');
    if (!inSigned(z1, 2n * alphaBound(level))) return fail("Πdec: z1 ∉ ±2^(ℓ'+2ε+9)");
    if (!units0 && !allUnits([w], pk.N)) return fail('Πdec: w ∉ Z*_N₀');
    if (!inSigned(z2, 2n * b.ellEps * aux.N)) return fail('Πdec: z2 too large');
    let X: ReturnType<typeof G.decodePoint>;
    let B: ReturnType<typeof G.decodePoint>;
    let Gamma: ReturnType<typeof G.decodePoint>;
    try {
      X = G.decodePoint(statement.X, 'X');
      B = G.decodePoint(statement.B, 'B');
      Gamma = G.decodePoint(proof.Gamma, 'Gamma');
    } catch (e) {
      return fail(`Πdec: ${(e as Error).message}`);
    }
    const e = challenge(ctx, level, aux, statement, proof);
    const sk = opts.secretKey && opts.secretKey.N === pk.N ? opts.secretKey : undefined;
    const powN2 = (x: bigint, y: bigint) => (sk ? sk.crtN2.pow(x, y) : modPow(x, y, pk.N2));
    // 1. (1+N₀)^z1 · w^N₀ = A · C^e  (mod N₀²)
    const lhs = (pk.gammaPow(z1) * (sk ? sk.powN(w) : modPow(w, pk.N, pk.N2))) % pk.N2;
    if (!eqTimesPow(lhs, A, statement.C, e, pk.N2, powN2)) return fail('Πdec: Enc(z1; w) ≠ A·C^e');
    // 2. z1·B = Γ + e·X  (the paper's z1 ≡ γ + e·x mod q)
    if (!G.mulPublic(B, G.mod(z1)).equals(Gamma.add(G.mulPublic(X, G.mod(e))))) return fail('Πdec: z1·B ≠ Γ + e·X');
    // 3. s^z1 · t^z2 = T · S^e  (mod N̂)
    const powNh = (x: bigint, y: bigint) => aux.pow(x, y);
    if (!eqTimesPow(aux.commit(z1, z2), T, S, e, aux.N, powNh)) return fail('Πdec: s^z1·t^z2 ≠ T·S^e');
    return OK;
  });
}

/** Decode an untrusted Πdec proof body (6 bigint fields and the 33-byte point Gamma). @throws TypeError / RangeError */
export function decodeDecProof(value: unknown): DecProof {
  const r = record(value, 'Πdec proof', [...BIG_FIELDS, 'Gamma']);
  const out: Record<string, unknown> = Object.fromEntries(BIG_FIELDS.map((f) => [f, big(r[f], `Πdec proof.${f}`)]));
  out.Gamma = bytesOf(r.Gamma, 'Πdec proof.Gamma', G.pointLength);
  return out as unknown as DecProof;
}
