/**
 * Πlog* — knowledge of exponent vs Paillier encryption, CGGMP21 ePrint 2021/060 rev. §C.2
 * Figure 25 (spec §3 "Πlog*: Group Element vs. Paillier Encryption in Range"), on secp256k1,
 * against the verifier's ring-Pedersen parameters R_j = (N̂, s, t).
 *
 * Statement (N₀, C, X, B): N₀ the prover's Paillier modulus, C ∈ Z*_N₀², X and the base B
 * secp256k1 points (33-byte SEC1 compressed; B = G unless the protocol uses another base, e.g. Γ
 * in presigning). Witness x ∈ ±2^ℓ, ρ ∈ Z*_N₀ with C = Enc_N₀(x; ρ), X = x·B.
 * Prover: α ← ±2^(ℓ+ε), μ ← ±2^ℓ·N̂, r ← Z*_N₀, γ ← ±2^(ℓ+ε)·N̂; S = s^x t^μ, A = Enc_N₀(α; r),
 * Y = α·B, D = s^α t^γ; e ← ±2^logQ; z₁ = α + e·x, z₂ = r·ρ^e mod N₀, z₃ = γ + e·μ.
 * Verifier: N₀ valid; C, A ∈ Z*_N₀²; S, D ∈ Z*_N̂; X, B, Y valid non-identity points;
 * z₁ ∈ ±2^(ℓ+ε); z₂ ∈ Z*_N₀; z₃ ∈ ±2^(ℓ+ε+1)·N̂ (size cap); Enc_N₀(z₁; z₂) = A·C^e,
 * z₁·B = Y + e·X, s^z₁ t^z₃ = D·S^e.
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

const TAG = 'custodian.paillier.log-star';
const G = secp256k1Group;

/** Πlog* statement. */
export interface LogStarStatement {
  /** prover's Paillier modulus N₀ */
  readonly N0: bigint;
  readonly C: bigint;
  /** X = x·B, 33-byte compressed point */
  readonly X: Uint8Array;
  /** base point B, 33-byte compressed (the generator G when omitted) */
  readonly B?: Uint8Array;
}

/** Πlog* witness. */
export interface LogStarWitness {
  readonly x: bigint;
  readonly rho: bigint;
}

/** Πlog* proof (a `Canonical` record: bigints and the 33-byte point Y). */
export interface LogStarProof {
  readonly S: bigint;
  readonly A: bigint;
  readonly Y: Uint8Array;
  readonly D: bigint;
  readonly z1: bigint;
  readonly z2: bigint;
  readonly z3: bigint;
}

const BIG_FIELDS = ['S', 'A', 'D', 'z1', 'z2', 'z3'] as const;

function baseBytes(st: LogStarStatement): Uint8Array {
  return st.B ?? G.encodePoint(G.G);
}

function challenge(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  st: LogStarStatement,
  pr: Pick<LogStarProof, 'S' | 'A' | 'Y' | 'D'>,
): bigint {
  return proofTranscript(TAG, ctx, level)
    .append('aux', auxCanonical(aux))
    .append('curve', G.name)
    .append('statement', { N0: st.N0, C: st.C, X: st.X, B: baseBytes(st) })
    .append('commitment', { S: pr.S, A: pr.A, Y: pr.Y, D: pr.D })
    .challengeSigned('e', rangeBounds(level).Q);
}

/**
 * Prove knowledge of x ∈ ±2^ℓ with C = Enc(x; ρ) and X = x·B (Fig. 25).
 * @param opts.secretKey the prover's own Paillier secret key for N₀ (CRT)
 * @throws RangeError when x ∉ ±2^ℓ
 */
export function proveLogStar(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: LogStarStatement,
  witness: LogStarWitness,
  rng: RandomSource = systemRandom,
  opts: { secretKey?: PaillierSecretKey } = {},
): LogStarProof {
  if (!inSigned(witness.x, rangeBounds(level).ell)) throw new RangeError('Πlog* witness: x ∉ ±2^ℓ');
  return proveLogStarUnchecked(ctx, level, aux, statement, witness, rng, opts);
}

/** Fig. 25 prover without the witness range check: for attack regression tests only (not in the package entry). */
export function proveLogStarUnchecked(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: LogStarStatement,
  witness: LogStarWitness,
  rng: RandomSource = systemRandom,
  opts: { secretKey?: PaillierSecretKey } = {},
): LogStarProof {
  const b = rangeBounds(level);
  const N0 = statement.N0;
  const sk = opts.secretKey && opts.secretKey.N === N0 ? opts.secretKey : undefined;
  const pk = sk ? sk.publicKey : PaillierPublicKey.unchecked(N0);
  const B = G.decodePoint(baseBytes(statement), 'B');
  const alpha = randomSigned(rng, b.ellEps);
  const mu = randomSigned(rng, b.ell * aux.N);
  const r = randomUnit(rng, N0);
  const gamma = randomSigned(rng, b.ellEps * aux.N);
  const S = aux.commit(witness.x, mu);
  const A = sk ? sk.encryptWithNonce(alpha, r) : pk.encryptWithNonce(alpha, r);
  const Y = G.encodePoint(G.mul(B, G.mod(alpha)));
  const D = aux.commit(alpha, gamma);
  const e = challenge(ctx, level, aux, statement, { S, A, Y, D });
  const z2 = sk ? (r * sk.crtN.pow(witness.rho, e)) % N0 : (r * modPow(witness.rho, e, N0)) % N0;
  return { S, A, Y, D, z1: alpha + e * witness.x, z2, z3: gamma + e * mu };
}

/**
 * Verify a Πlog* proof (Fig. 25 verifier, checks in the module docs). Never throws.
 * @param aux the verifier's own ring-Pedersen parameters (attach the secret for CRT speed)
 */
export function verifyLogStar(
  ctx: ProofContext,
  level: SecurityLevel,
  aux: RingPedersen,
  statement: LogStarStatement,
  proof: LogStarProof,
): VerifyResult {
  return guarded(() => {
    let pk: PaillierPublicKey;
    try {
      pk = PaillierPublicKey.fromModulus(statement.N0, level);
    } catch (e) {
      return fail(`Πlog*: ${(e as Error).message}`);
    }
    for (const f of BIG_FIELDS) if (typeof proof[f] !== 'bigint') return fail(`Πlog*: ${f} must be a bigint`);
    const b = rangeBounds(level);
    const { S, A, D, z1, z2, z3 } = proof;
    // one gcd for C, A, z2 together; the individual checks below run only when it fails
    const units0 = pk.allCiphertexts([statement.C, A], [z2]);
    if (!units0 && !pk.isCiphertext(statement.C)) return fail('Πlog*: C ∉ Z*_N₀²');
    if (!units0 && !pk.isCiphertext(A)) return fail('Πlog*: A ∉ Z*_N₀²');
    if (!allUnits([S, D], aux.N)) return fail('Πlog*: S, D must lie in Z*_N̂');
    if (!inSigned(z1, b.ellEps)) return fail('Πlog*: z1 ∉ ±2^(ℓ+ε)');
    if (!units0 && !allUnits([z2], pk.N)) return fail('Πlog*: z2 ∉ Z*_N₀');
    if (!inSigned(z3, 2n * b.ellEps * aux.N)) return fail('Πlog*: z3 too large');
    let X: ReturnType<typeof G.decodePoint>;
    let B: ReturnType<typeof G.decodePoint>;
    let Y: ReturnType<typeof G.decodePoint>;
    try {
      X = G.decodePoint(statement.X, 'X');
      B = G.decodePoint(baseBytes(statement), 'B');
      Y = G.decodePoint(proof.Y, 'Y');
    } catch (e) {
      return fail(`Πlog*: ${(e as Error).message}`);
    }
    const e = challenge(ctx, level, aux, statement, proof);
    const lhs = (pk.gammaPow(z1) * modPow(z2, pk.N, pk.N2)) % pk.N2;
    const powN2 = (x: bigint, y: bigint) => modPow(x, y, pk.N2);
    if (!eqTimesPow(lhs, A, statement.C, e, pk.N2, powN2)) return fail('Πlog*: Enc(z1; z2) ≠ A·C^e');
    if (!G.mulPublic(B, G.mod(z1)).equals(Y.add(G.mulPublic(X, G.mod(e))))) return fail('Πlog*: z1·B ≠ Y + e·X');
    const powNh = (x: bigint, y: bigint) => aux.pow(x, y);
    if (!eqTimesPow(aux.commit(z1, z3), D, S, e, aux.N, powNh)) return fail('Πlog*: s^z1·t^z3 ≠ D·S^e');
    return OK;
  });
}

/** Decode an untrusted Πlog* proof body (6 bigint fields and the 33-byte point Y). @throws TypeError / RangeError */
export function decodeLogStarProof(value: unknown): LogStarProof {
  const r = record(value, 'Πlog* proof', [...BIG_FIELDS, 'Y']);
  const out: Record<string, unknown> = Object.fromEntries(BIG_FIELDS.map((f) => [f, big(r[f], `Πlog* proof.${f}`)]));
  out.Y = bytesOf(r.Y, 'Πlog* proof.Y', G.pointLength);
  return out as unknown as LogStarProof;
}
