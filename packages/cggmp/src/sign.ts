/**
 * CGGMP21 signing from a presignature (one round), with HD tweak, presignature re-randomisation,
 * single use, low-s normalisation, recovery id and identifiable abort.
 *
 * Implements the LFDT-Lockness cggmp21 specification §4.4 "Signing" (CGGMP21 ePrint 2021/060
 * Fig. 8) with two additions:
 *
 * 1. Re-randomisation (Groth–Shoup, "On the security of ECDSA with additive key derivation and
 *    presignatures", ePrint 2021/1330): with ρ = H(R, Y', m, δ) a public nonzero scalar, the
 *    signature uses R' = ρ·R, i.e. the nonce k/ρ, so an adversary who sees R cannot choose the
 *    message or the derived key after the fact to exploit related-key signatures. Shares are
 *    σ_i = k_i·m + r·(χ_i + δ·k_i), r = x(R') mod q, for the child key Y' = Y + δ·G (δ = the
 *    additive HD tweak, 0 for the master key), and s = ρ⁻¹·Σ σ_j (the public factor ρ⁻¹ is applied
 *    once by the combiner, whose single inversion of ρ·Σσ_j yields both ρ⁻¹ and s⁻¹).
 * 2. Identification: the combined signature is verified before it is returned; if it fails, each
 *    σ_j is checked against public presigning values, σ_j·Γ = m·Δ_j + r·(S_j + δ·Δ_j), and a
 *    share that fails names its sender. If every share passes, ρ⁻¹·Σ σ_j is a valid signature (the
 *    presigning checked Σ Δ_j = δ·G and Σ S_j = δ·Y), so a failure is always attributable.
 *
 * Single use: a presignature is an opaque one-shot `Presignature` handle (presignature.ts) that
 * signing consumes; no public function takes its secret in any other form.
 *
 * Messages are raw 32-byte digests (callers hash: keccak-256 for Ethereum, BIP143/341 sighash for
 * Bitcoin, sha256 for TRON); m = int(digest) mod q (SEC 1 §4.1.3 step 5 for a 256-bit order).
 *
 * Longer than 400 lines because it holds the signing round, its identifiable-abort checks and the
 * share-combination math the coordinator's fast path shares, each next to the equation it
 * implements.
 */

import {
  abytes,
  bigintToBytes,
  bytesToBigint,
  CryptoError,
  canonicalEncode,
  secp256k1Group as G,
  ProtocolAbort,
  type ProtocolSpec,
  type Secp256k1Point,
} from '@custodian/crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { equalBytes } from '@noble/curves/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { record, scalarField } from './codec.js';
import { consumePresignature, type Presignature, type PresignaturePublic } from './presignature.js';

export const SIGN_TAG = 'custodian.cggmp.sign.v1';

/** Options of signing. */
export interface SignOptions {
  /** Additive HD tweak δ (from `deriveSecp256k1(...).tweak`); 0 or absent signs under the master key. */
  readonly tweak?: bigint;
  /**
   * The child key Y' = Y + δ·G of this tweak when the caller has it already (a
   * `ckdPubSecp256k1` node of `@custodian/crypto`: `point` and its 33-byte SEC1 `publicKey`), which
   * saves one multiplication. It must be exactly that point: ρ commits to it and the signature
   * reports it (verification itself uses Y and δ). Ignored when δ = 0.
   */
  readonly derived?: { readonly point: Secp256k1Point; readonly publicKey: Uint8Array };
}

/** A finished ECDSA signature. */
export interface EcdsaSignature {
  /** r ∈ [1, q). */
  readonly r: bigint;
  /** s ∈ [1, q/2] (low-s, BIP 62 / EIP-2). */
  readonly s: bigint;
  /** Recovery id 0–3 (bit 0: R'.y odd after low-s; bit 1: R'.x ≥ q). Ethereum v = 27 + recovery (legacy) or y-parity. */
  readonly recovery: number;
  /** r ‖ s, 64 bytes big-endian. */
  readonly compact: Uint8Array;
  /** ASN.1 DER encoding (Bitcoin, OpenSSL), computed on first access. */
  readonly der: Uint8Array;
  /** The public key the signature verifies under (33-byte compressed): Y + δ·G. */
  readonly publicKey: Uint8Array;
}

/**
 * m = int(digest) mod q for a 32-byte digest.
 * @throws RangeError when the digest is not exactly 32 bytes
 */
export function messageScalar(digest: Uint8Array): bigint {
  abytes(digest, 'digest', 32);
  return G.mod(bytesToBigint(digest));
}

function tweakOf(opts: SignOptions): bigint {
  const d = opts.tweak ?? 0n;
  if (typeof d !== 'bigint' || d < 0n || d >= G.order) throw new RangeError('tweak: must be a scalar in [0, q)');
  return d;
}

/** Child public key Y' = Y + δ·G (δ is public: variable time, on G's table). @throws RangeError if it is the identity */
export function tweakedPublicKey(Y: Secp256k1Point, tweak: bigint): Secp256k1Point {
  const Yc = Y.add(G.mulBasePublic(tweak));
  if (Yc.is0()) throw new RangeError('tweak: child key is the identity');
  return Yc;
}

/** Values every party derives for one signature. */
export interface SigningContext {
  /** m = int(digest) mod q */
  readonly m: bigint;
  /** additive HD tweak δ */
  readonly delta: bigint;
  /** re-randomiser ρ */
  readonly rho: bigint;
  /** R' = ρ·R */
  readonly Rp: Secp256k1Point;
  /** r = x(R') mod q */
  readonly r: bigint;
  /** child public key Y' = Y + δ·G */
  readonly Yc: Secp256k1Point;
  /** Y' SEC1-compressed (33 bytes) */
  readonly YcEncoded: Uint8Array;
}

/**
 * Fixed-base tables for the points that online signing multiplies (so that the online round costs
 * fixed-base multiplications only). A key's public key Y gets one table per process (bounded cache,
 * keyed by its encoding; ≈ 85 ms once); a presignature kept in a pool gets a table on its R from
 * {@link prepareSigning} (the signer's pool does this when it stores or reloads presignatures).
 */
interface KeyEntry {
  /** Y with a fixed-base table attached. */
  readonly Y: Secp256k1Point;
  /** SEC1-compressed Y (33 bytes). */
  readonly encoded: Uint8Array;
}
const KEY_CACHE_LIMIT = 16;
/** Window of the tables of long-lived points (keys; G's is the group's `mulBasePublic`): 27 additions per multiplication, ≈ 85 ms and ≈ 1.5 MB once. */
const KEY_WINDOW = 10;
/** Window of a presignature's R (built per presignature: 33 additions per multiplication, ≈ 25 ms, ≈ 0.43 MB). */
export const PRESIGNATURE_WINDOW = 8;
const keysByInstance = new WeakMap<Secp256k1Point, KeyEntry>();
const keysByEncoding = new Map<string, KeyEntry>();
const encodings = new WeakMap<Secp256k1Point, Uint8Array>();

function keyEntry(Y: Secp256k1Point): KeyEntry {
  const hit = keysByInstance.get(Y);
  if (hit) return hit;
  const encoded = G.encodePoint(Y);
  const hex = Buffer.from(encoded).toString('hex');
  let entry = keysByEncoding.get(hex);
  if (entry) {
    keysByEncoding.delete(hex); // most recently used last
  } else {
    entry = { Y: G.withTable(G.decodePoint(encoded, 'publicKey'), KEY_WINDOW), encoded };
    if (keysByEncoding.size >= KEY_CACHE_LIMIT) keysByEncoding.delete(keysByEncoding.keys().next().value as string);
  }
  keysByEncoding.set(hex, entry);
  keysByInstance.set(Y, entry);
  return entry;
}

/** SEC1-compressed encoding of a point, memoised per instance (R is encoded by every signing). */
function encodeOnce(P: Secp256k1Point): Uint8Array {
  let e = encodings.get(P);
  if (!e) {
    e = G.encodePoint(P);
    encodings.set(P, e);
  }
  return e;
}

/**
 * Build the fixed-base tables one signing with this presignature uses (R's, ≈ 25 ms, and the key's
 * and the generator's if not built yet, ≈ 85 ms each once per process), so that the online round costs ≈ 3 fixed-base multiplications per party.
 * Call it for presignatures kept for later (a pool), ahead of the request; a presignature used at
 * once is cheaper without it. Optional: signing without it is correct, only slower (≈ 0.5 ms).
 */
export function prepareSigning(pub: Pick<PresignaturePublic, 'R' | 'publicKey'>): void {
  G.withTable(pub.R, PRESIGNATURE_WINDOW);
  encodeOnce(pub.R);
  keyEntry(pub.publicKey);
  G.prepareBase();
}

/** Values every party derives for one signature: m, δ, ρ, R' and r. */
export function signingContext(pub: PresignaturePublic, digest: Uint8Array, opts: SignOptions = {}): SigningContext {
  const m = messageScalar(digest);
  const delta = tweakOf(opts);
  const key = keyEntry(pub.publicKey);
  const Yc = delta === 0n ? key.Y : (opts.derived?.point ?? tweakedPublicKey(key.Y, delta));
  const YcEncoded = delta === 0n ? key.encoded : (opts.derived?.publicKey ?? G.encodePoint(Yc));
  const h = sha256(
    canonicalEncode([
      `${SIGN_TAG}.rerandomise`,
      encodeOnce(pub.R),
      YcEncoded,
      digest,
      G.encodeScalar(delta),
      pub.signers.map((s) => BigInt(s)),
    ]),
  );
  let rho = G.mod(bytesToBigint(h));
  if (rho === 0n) rho = 1n;
  // affine once: r, the share's encoding of R' and the recovery id all read it
  const Rp = G.normalize(G.mulPublic(pub.R, rho));
  const r = G.mod(Rp.toAffine().x);
  if (r === 0n) throw new RangeError('signing: r = 0 (negligible); use another presignature');
  return { m, delta, rho, Rp, r, Yc, YcEncoded };
}

/**
 * ECDSA verification (SEC 1 v2 §4.1.4 steps 4–6) of (r, s) on m = int(digest) mod q under the child
 * key Y' = Y + δ·G, computed over noble's points with fixed-base tables:
 * X = (u₁ + u₂·δ)·G + u₂·Y with u₁ = m·s⁻¹, u₂ = r·s⁻¹ (so X = u₁·G + u₂·Y'); valid iff X ≠ O and
 * x(X) ≡ r (mod q). With `expectedR` (the signing R', negated when s was flipped to low s) the check
 * is the stricter X = expectedR, which also fixes the recovery id.
 * @returns false for r or s outside [1, q) or a failed check; never throws
 */
export function verifyEcdsa(
  publicKey: Secp256k1Point,
  tweak: bigint,
  m: bigint,
  r: bigint,
  s: bigint,
  expectedR?: Secp256k1Point,
): boolean {
  if (!G.isScalar(r) || !G.isScalar(s) || r === 0n || s === 0n || !G.isScalar(tweak) || !G.isScalar(m)) return false;
  return verifyWithInverse(publicKey, tweak, m, r, G.inv(s), expectedR);
}

/** {@link verifyEcdsa} given w = s⁻¹ mod q (checked scalars). */
function verifyWithInverse(
  publicKey: Secp256k1Point,
  tweak: bigint,
  m: bigint,
  r: bigint,
  w: bigint,
  expectedR?: Secp256k1Point,
): boolean {
  const key = keyEntry(publicKey);
  const u1 = G.mod(m * w);
  const u2 = G.mod(r * w);
  const X = G.mulBasePublic(G.mod(u1 + u2 * tweak)).add(G.mulPublic(key.Y, u2));
  if (X.is0()) return false;
  if (expectedR) return X.equals(expectedR);
  return G.mod(X.toAffine().x) === r;
}

/**
 * This party's signature share σ_i = k_i·m + r·(χ_i + δ·k_i) (spec §4.4, Fig. 8, with R' = ρ·R).
 * Consumes the presignature before computing: the process registry marks it spent (presignature.ts),
 * so no handle of it signs again in this process.
 * @throws PresignatureSpentError on reuse; PresignatureUseError `PRESIGNATURE_SEALED` for an
 *   exported or discarded handle; TypeError for anything but a `Presignature` handle (a copy);
 *   RangeError for a bad digest or tweak (checked before the presignature is consumed)
 */
export function signShare(
  presignature: Presignature,
  digest: Uint8Array,
  opts: SignOptions = {},
  ctx: SigningContext = signingContext(presignature.public, digest, opts),
): bigint {
  const { k, chi } = consumePresignature(presignature);
  return G.mod(k * ctx.m + ctx.r * (chi + ctx.delta * k));
}

/** Check σ_j against public presigning values: σ_j·Γ = m·Δ_j + r·(S_j + δ·Δ_j). */
export function verifySignatureShare(
  pub: PresignaturePublic,
  j: number,
  sigma: bigint,
  digest: Uint8Array,
  opts: SignOptions = {},
  ctx: SigningContext = signingContext(pub, digest, opts),
): boolean {
  if (!G.isScalar(sigma) || j < 0 || j >= pub.signers.length) return false;
  const { m, delta, r } = ctx;
  const Dj = pub.Delta[j] as Secp256k1Point;
  const Sj = pub.S[j] as Secp256k1Point;
  const lhs = G.mulPublic(pub.Gamma, sigma);
  const rhs = G.mulPublic(Dj, G.mod(m + r * delta)).add(G.mulPublic(Sj, r));
  return lhs.equals(rhs);
}

/** Thrown by {@link combineSignature} when shares are bad; `culprits` are signer positions. */
export class SignatureShareError extends CryptoError {
  readonly culprits: readonly number[];
  constructor(culprits: readonly number[], message: string) {
    super('SIGNATURE_SHARE_INVALID', message);
    this.culprits = culprits;
  }
}

/**
 * Combine σ_j of every signer position into a low-s signature with recovery id, verified under Y'
 * ({@link verifyEcdsa}, the SEC 1 equation on noble's points, stricter: u₁·G + u₂·Y' must be ±R')
 * before it is returned. The combined signature is checked first; only if it fails is
 * every share checked against the public presigning values, which names the bad ones (so the
 * honest path costs one verification, and identification is kept).
 * @param shares σ_j by signer position (exactly `pub.signers.length` entries)
 * @throws SignatureShareError naming positions with invalid, missing or foreign shares
 */
export function combineSignature(
  pub: PresignaturePublic,
  digest: Uint8Array,
  shares: ReadonlyMap<number, bigint>,
  opts: SignOptions = {},
  ctx: SigningContext = signingContext(pub, digest, opts),
): EcdsaSignature {
  const missing = pub.signers.map((_, j) => j).filter((j) => !shares.has(j));
  if (missing.length) throw new SignatureShareError(missing, 'missing signature shares');
  const extra = [...shares.keys()].filter((j) => !Number.isSafeInteger(j) || j < 0 || j >= pub.signers.length);
  if (extra.length) throw new SignatureShareError(extra, 'shares from parties outside the presignature’s signing set');
  const sum = G.mod([...shares.values()].reduce((a, b) => a + (G.isScalar(b) ? b : 0n), 0n));
  // one inversion gives both s = ρ⁻¹·Σσ_j and w = s⁻¹: with t = (ρ·Σσ_j)⁻¹, s = (Σσ_j)²·t, w = ρ²·t
  const t = sum === 0n ? 0n : G.inv(G.mod(ctx.rho * sum));
  const signature = finishSignature(pub.publicKey, ctx, G.mod(sum * sum * t), G.mod(ctx.rho * ctx.rho * t));
  if (signature) return signature;
  const bad = [...shares]
    .filter(([j, sigma]) => !verifySignatureShare(pub, j, sigma, digest, opts, ctx))
    .map(([j]) => j);
  if (bad.length) throw new SignatureShareError(bad, 'invalid signature shares');
  // every share checks out, so the sum is valid (presigning checked ΣΔ_j = δ·G, ΣS_j = δ·Y)
  throw new Error('signing: combined signature does not verify although every share does (bug)');
}

/**
 * Low-s normalisation, recovery id, encoding and verification of (r, s) with w = s⁻¹ (both from
 * the caller's one inversion). @returns the signature, or undefined when s = 0 or it does not verify
 */
function finishSignature(
  Y: Secp256k1Point,
  ctx: Pick<SigningContext, 'm' | 'delta' | 'r' | 'Rp' | 'YcEncoded'>,
  s0: bigint,
  w0: bigint,
): EcdsaSignature | undefined {
  let s = s0;
  let w = w0;
  const affine = ctx.Rp.toAffine();
  let recovery = (affine.y & 1n ? 1 : 0) | (affine.x >= G.order ? 2 : 0);
  const high = s > G.order >> 1n;
  if (high) {
    s = G.order - s;
    w = G.order - w;
    recovery ^= 1;
  }
  if (s === 0n || !verifyWithInverse(Y, ctx.delta, ctx.m, ctx.r, w, high ? ctx.Rp.negate() : ctx.Rp)) return undefined;
  const compact = new Uint8Array(64);
  compact.set(bigintToBytes(ctx.r, 32), 0);
  compact.set(bigintToBytes(s, 32), 32);
  const r = ctx.r;
  let der: Uint8Array | undefined;
  return {
    r,
    s,
    recovery,
    compact,
    // encoded on first use (most callers want `compact`)
    get der() {
      der ??= new secp256k1.Signature(r, s).toBytes('der');
      return der;
    },
    publicKey: ctx.YcEncoded,
  };
}

/**
 * A party's contribution to a combiner that holds no presigning values (the coordinator, which
 * then needs no third message from the signers: `@custodian/signer-client` share-combiner.ts): R' = ρ·R
 * and s_i = ρ⁻¹·σ_i mod q, so that Σ s_j = s before low-s normalisation. ρ is public, so s_i
 * reveals exactly what σ_i does, which every co-signer receives anyway (the round's broadcast).
 */
export interface CombinerShare {
  /** R' = ρ·R, 33 bytes SEC1-compressed (the same at every party of one signature). */
  readonly Rp: Uint8Array;
  /** s_i = ρ⁻¹·σ_i mod q, in [0, q). */
  readonly s: bigint;
}

/** This party's {@link CombinerShare} for σ_i computed in `ctx` (one inversion mod q). */
export function combinerShare(sigma: bigint, ctx: SigningContext): CombinerShare {
  return { Rp: G.encodePoint(ctx.Rp), s: G.mod(sigma * G.inv(ctx.rho)) };
}

/**
 * What a combiner without presigning values fixes for one signature before the shares are summed:
 * m, δ, R' (decoded and checked on the curve) with r = x(R') mod q, and Y' = Y + δ·G. Made from
 * the first share that arrives ({@link combinationContext}), so that the last one costs only the
 * sum, one inversion and the verification ({@link finishCombination}).
 */
export interface CombinationContext {
  /** The master key Y. */
  readonly publicKey: Secp256k1Point;
  readonly m: bigint;
  readonly delta: bigint;
  readonly r: bigint;
  readonly Rp: Secp256k1Point;
  /** R' as every share must give it, 33 bytes SEC1-compressed. */
  readonly RpEncoded: Uint8Array;
  /** Y', 33 bytes SEC1-compressed. */
  readonly YcEncoded: Uint8Array;
}

/**
 * The {@link CombinationContext} of one signature from the R' of a first share.
 * @param publicKey the master key Y (validated point)
 * @param digest the 32-byte digest the signers sign
 * @param Rp R' as the share gives it (33 bytes)
 * @param opts δ and, optionally, the child key (as for signing)
 * @returns the context, or undefined when R' is not a valid point or r = 0
 * @throws RangeError for a digest that is not 32 bytes or a bad tweak (caller errors)
 */
export function combinationContext(
  publicKey: Secp256k1Point,
  digest: Uint8Array,
  Rp: Uint8Array,
  opts: SignOptions = {},
): CombinationContext | undefined {
  const m = messageScalar(digest);
  const delta = tweakOf(opts);
  if (Rp.length !== G.pointLength) return undefined;
  let point: Secp256k1Point;
  try {
    point = G.decodePoint(Rp, 'Rp');
  } catch {
    return undefined;
  }
  const r = G.mod(point.toAffine().x);
  if (r === 0n) return undefined;
  const key = keyEntry(publicKey);
  const YcEncoded =
    delta === 0n ? key.encoded : (opts.derived?.publicKey ?? G.encodePoint(tweakedPublicKey(key.Y, delta)));
  return { publicKey, m, delta, r, Rp: point, RpEncoded: Uint8Array.from(Rp), YcEncoded };
}

/**
 * Sum every signer's {@link CombinerShare} into a low-s signature verified under the child key
 * Y' = Y + δ·G that the combiner derives itself (SEC 1 v2 §4.1.4, the strict form of
 * {@link verifyEcdsa}: u₁·G + u₂·Y' must be ±R'). A signature that verifies under the combiner's
 * own Y' is a valid signature on the digest whatever the shares' origin, so the combiner trusts
 * none of them; it cannot say which share is bad (the parties' own {@link combineSignature} names
 * the culprit). The first call for a key builds its fixed-base table (≈ 85 ms, cached).
 * @param shares one per signer of the signature (any order)
 * @returns the signature (its `publicKey` is Y', 33 bytes), or undefined when a share names another
 *   R' than the context's, a share is not a scalar, or the sum does not verify
 */
export function finishCombination(
  ctx: CombinationContext,
  shares: readonly CombinerShare[],
): EcdsaSignature | undefined {
  if (shares.length === 0 || shares.some((x) => !G.isScalar(x.s))) return undefined;
  if (shares.some((x) => x.Rp !== ctx.RpEncoded && !equalBytes(x.Rp, ctx.RpEncoded))) return undefined;
  const s = G.mod(shares.reduce((a, x) => a + x.s, 0n));
  if (s === 0n) return undefined;
  return finishSignature(ctx.publicKey, ctx, s, G.inv(s));
}

/**
 * {@link combinationContext} from the first share, then {@link finishCombination}: the signature of
 * every signer's share, or undefined (see both).
 * @param publicKey the master key Y (validated point)
 * @param digest the 32-byte digest the signers signed
 * @throws RangeError for a digest that is not 32 bytes or a bad tweak (caller errors)
 */
export function combineSignerShares(
  publicKey: Secp256k1Point,
  digest: Uint8Array,
  shares: readonly CombinerShare[],
  opts: SignOptions = {},
): EcdsaSignature | undefined {
  const first = shares[0];
  const ctx = first ? combinationContext(publicKey, digest, first.Rp, opts) : undefined;
  return ctx ? finishCombination(ctx, shares) : undefined;
}

interface SignState {
  readonly sigma: bigint;
  readonly ctx: SigningContext;
}

/** Parameters of the signing protocol. */
export interface SignParams extends SignOptions {
  readonly presignature: Presignature;
  /** 32-byte message digest. */
  readonly digest: Uint8Array;
  /**
   * Called with σ_i and its signing context as soon as σ_i is computed (in `start`, before the
   * runtime sends it): e.g. to hand the coordinator a {@link combinerShare}, once σ_i is released.
   */
  readonly onShare?: (sigma: bigint, ctx: SigningContext) => void;
}

/**
 * One-round signing for the runtime (`n` = size of the presignature's signing set, `self` = its
 * position). Every party broadcasts σ_i, combines and verifies the signature; only when it does
 * not verify are the σ_j checked one by one, naming the bad ones. The presignature is consumed at
 * start, before σ_i leaves.
 */
export function signProtocol(params: SignParams): ProtocolSpec<SignState, EcdsaSignature> {
  return {
    name: SIGN_TAG,
    echoFinalRound: false,
    start(ctx) {
      const pub = params.presignature.public;
      if (params.presignature.i !== ctx.self || pub.signers.length !== ctx.n) {
        throw new RangeError('presignature: made for another party set or position');
      }
      const sctx = signingContext(pub, params.digest, params);
      const sigma = signShare(params.presignature, params.digest, params, sctx);
      params.onShare?.(sigma, sctx);
      return { state: { sigma, ctx: sctx }, send: { broadcast: { sigma: G.encodeScalar(sigma) } } };
    },
    rounds: [
      {
        name: `${SIGN_TAG}.round1`,
        broadcast: (body) => scalarField(record(body, 'share').sigma, 'sigma', true),
        process(state, received, rctx) {
          const pub = params.presignature.public;
          const shares = new Map<number, bigint>([[rctx.self, state.sigma]]);
          for (const [j, m] of received) shares.set(j, m.broadcast as bigint);
          try {
            return { output: combineSignature(pub, params.digest, shares, params, state.ctx) };
          } catch (e) {
            if (e instanceof SignatureShareError) {
              throw new ProtocolAbort(
                e.culprits.map((party) => ({
                  party,
                  reason: 'invalid signature share σ_j',
                  check: 'sign.signature-share',
                })),
              );
            }
            throw e;
          }
        },
      },
    ],
  };
}
