/**
 * Threshold HD (hierarchical deterministic) derivation from a master PUBLIC key and chain code.
 *
 * The DKG ceremony produces a master public key and a jointly random 32-byte chain code (DESIGN.md
 * §3, "Master key and HD wallets"). Wallet and address creation derive child public keys from
 * those public values alone, so no ceremony is needed. Each derivation also returns the
 * accumulated additive tweak δ with `childSecret = parentSecret + δ (mod group order)`; at signing
 * time δ is applied to the shared key (for additive shares: added to exactly one party's share;
 * for Shamir shares: added to every share, since the Lagrange coefficients sum to 1). This
 * module never sees, and never reconstructs, a secret key.
 *
 * Two schemes, both non-hardened only (hardened derivation needs the secret key):
 *
 * - {@link deriveSecp256k1}: BIP32 §"Public parent key → public child key" (CKDpub), bit for bit.
 * - {@link deriveEd25519}: an additive Ed25519 scheme (the "Edwards" scheme of
 *   LFDT-Lockness/hd-wallet). It is NOT SLIP-0010: SLIP-0010 defines only hardened derivation for
 *   Ed25519, which cannot be done from a public key.
 *
 * Curve arithmetic comes from `@noble/curves` (through {@link secp256k1Group} and
 * {@link ed25519Group}); HMAC-SHA512 from `@noble/hashes`.
 */

import { hmac } from '@noble/hashes/hmac.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { abytes, bytesToBigint, bytesToHex, concatBytes, u32be } from './bytes.js';
import { CryptoError } from './errors.js';
import { ed25519Group, type Secp256k1Point, secp256k1Group } from './group.js';

/** First hardened child index, 2^31 (BIP32 §"Child key derivation (CKD) functions"). */
export const HARDENED_OFFSET = 0x8000_0000;

/**
 * Longest accepted path. BIP32 serialises the depth of an extended key in one byte, so no
 * extended key is deeper than 255.
 */
export const MAX_DERIVATION_DEPTH = 255;

/**
 * Result of a non-hardened derivation.
 *
 * - `publicKey`: the child public key — 33 bytes SEC1-compressed (secp256k1) or 32 bytes RFC 8032
 *   §5.1.2 encoding (Ed25519).
 * - `chainCode`: the child chain code, 32 bytes.
 * - `tweak`: the accumulated additive tweak δ, 0 ≤ δ < group order (n for secp256k1, ℓ for
 *   Ed25519), such that `childSecret ≡ parentSecret + δ` and `childPublic = parentPublic + δ·G`.
 *   It is derived from public data only and is itself public.
 * - `path`: the parsed path (child indices, each in [0, 2^31)).
 */
export interface DerivedChildKey {
  readonly publicKey: Uint8Array;
  readonly chainCode: Uint8Array;
  readonly tweak: bigint;
  readonly path: number[];
}

/** Why a child index has no valid key. */
export type InvalidChildReason = 'tweak-out-of-range' | 'point-at-infinity';

/**
 * The child key at one index of the path is invalid: for secp256k1, BIP32's
 * `parse256(IL) ≥ n` or `Ki` is the point at infinity (probability below 2^-127 per index);
 * for Ed25519, the child public key is the identity (probability about 2^-252).
 *
 * BIP32 says "proceed with the next value for i"; a library deriving wallet addresses cannot
 * silently change the index it was asked for, so it throws this error and the caller decides
 * (normally: mark the index unusable and allocate the next one). Not a `RangeError`: the input
 * was well formed.
 */
export class Bip32InvalidChildError extends CryptoError {
  /**
   * @param curve the curve of the derivation
   * @param index the child index that has no valid key
   * @param depth 1-based position of `index` in the path
   * @param reason which validity condition failed
   */
  constructor(
    readonly curve: 'secp256k1' | 'ed25519',
    readonly index: number,
    readonly depth: number,
    readonly reason: InvalidChildReason,
  ) {
    super(
      'BIP32_INVALID_CHILD',
      `Bip32InvalidChildError: ${curve} child index ${index} (path position ${depth}) has no valid key ` +
        `(${reason === 'tweak-out-of-range' ? 'IL >= group order' : 'child is the point at infinity'}); ` +
        'skip this index and use the next one',
    );
  }
}

const SEGMENT = /^(0|[1-9][0-9]*)$/;
const HARDENED_SEGMENT = /^(0|[1-9][0-9]*)['hH]$/;

function checkIndex(index: unknown, position: number): number {
  if (typeof index !== 'number') {
    throw new TypeError(`derivation path: element ${position} is not a number (${typeof index})`);
  }
  if (!Number.isInteger(index) || index < 0 || index > 0xffff_ffff) {
    throw new RangeError(
      `derivation path: index ${String(index)} at position ${position} is not an integer in [0, 2^31)`,
    );
  }
  if (index >= HARDENED_OFFSET) {
    throw new RangeError(
      `derivation path: hardened index ${index} (${index - HARDENED_OFFSET}') at position ${position} ` +
        'cannot be derived from a public key; only non-hardened indices in [0, 2^31) are supported',
    );
  }
  return index;
}

/**
 * Parse and validate a non-hardened derivation path.
 *
 * Accepted forms:
 * - an array of child indices, each an integer in [0, 2^31);
 * - a string in BIP32 notation `"m"` or `"m/44/60/0/0/5"`: a lowercase `m`, then `/`-separated
 *   decimal indices without leading zeros, signs or whitespace.
 *
 * At most {@link MAX_DERIVATION_DEPTH} (255) indices. The empty path (`[]` or `"m"`) is allowed.
 *
 * @param path the path, as indices or BIP32 string notation
 * @returns a fresh array of child indices
 * @throws RangeError naming the index for a hardened index (≥ 2^31, or a `'`, `h` or `H` suffix);
 *   RangeError for an index that is not an integer in [0, 2^31), for a malformed string, or for
 *   a path longer than 255; TypeError when `path` is neither an array nor a string, or an array
 *   element is not a number.
 */
export function parseDerivationPath(path: readonly number[] | string): number[] {
  let out: number[];
  if (typeof path === 'string') {
    const parts = path.split('/');
    if (parts[0] !== 'm') {
      throw new RangeError(`derivation path ${JSON.stringify(path)}: must start with "m"`);
    }
    out = parts.slice(1).map((segment, k) => {
      const position = k + 1;
      if (HARDENED_SEGMENT.test(segment)) {
        throw new RangeError(
          `derivation path: hardened index ${segment} at position ${position} cannot be derived from a public key; ` +
            'only non-hardened indices in [0, 2^31) are supported',
        );
      }
      if (!SEGMENT.test(segment)) {
        throw new RangeError(
          `derivation path ${JSON.stringify(path)}: malformed segment ${JSON.stringify(segment)} at position ${position}`,
        );
      }
      return checkIndex(Number(segment), position);
    });
  } else if (Array.isArray(path)) {
    out = path.map((index, k) => checkIndex(index, k + 1));
  } else {
    throw new TypeError('derivation path: expected an array of indices or a string like "m/44/60/0/0/5"');
  }
  if (out.length > MAX_DERIVATION_DEPTH) {
    throw new RangeError(`derivation path: depth ${out.length} exceeds ${MAX_DERIVATION_DEPTH}`);
  }
  return out;
}

/** I = HMAC-SHA512(key = chain code, data); returns (IL, IR). */
function hmacSplit(chainCode: Uint8Array, data: Uint8Array): [Uint8Array, Uint8Array] {
  const i = hmac(sha512, chainCode, data);
  return [i.slice(0, 32), i.slice(32, 64)];
}

/**
 * BIP32 public child key derivation on secp256k1, BIP32 §"Public parent key → public child key"
 * (`CKDpub((Kpar, cpar), i) → (Ki, ci)`), applied once per path element. For non-hardened `i`:
 * `I = HMAC-SHA512(Key = cpar, Data = serP(Kpar) || ser32(i))`, `Ki = point(parse256(IL)) + Kpar`,
 * `ci = IR`. The tweak is the sum of the `parse256(IL)` values modulo n, so the child private key
 * is `kpar + δ mod n` (BIP32 §"Private parent key → private child key" gives the same key).
 *
 * @param publicKey parent public key, 33 bytes SEC1-compressed (`02`/`03` prefix); the identity
 *   and off-curve points are rejected
 * @param chainCode parent chain code, 32 bytes
 * @param path non-hardened path; see {@link parseDerivationPath}
 * @returns child public key (33 bytes compressed), child chain code (32 bytes), tweak δ mod n, path
 * @throws TypeError / RangeError for wrong types or lengths, and for paths as in
 *   {@link parseDerivationPath} (a hardened index is a RangeError naming it); Error for an
 *   invalid public key encoding; {@link Bip32InvalidChildError} when `parse256(IL) ≥ n` or the
 *   child is the point at infinity at some index (BIP32 would skip to the next index).
 */
export function deriveSecp256k1(
  publicKey: Uint8Array,
  chainCode: Uint8Array,
  path: readonly number[] | string,
): DerivedChildKey {
  const indices = parseDerivationPath(path);
  let node: Secp256k1ChildNode = {
    point: secp256k1Group.decodePoint(publicKey, 'publicKey'),
    publicKey: Uint8Array.from(publicKey),
    chainCode: Uint8Array.from(abytes(chainCode, 'chainCode', 32)),
    tweak: 0n,
  };
  indices.forEach((index, k) => {
    node = ckdPubSecp256k1(node, index, k + 1);
  });
  return { publicKey: node.publicKey, chainCode: node.chainCode, tweak: node.tweak, path: indices };
}

/** A node of a secp256k1 derivation: the point, its encoding, chain code and tweak from the root. */
export interface Secp256k1ChildNode {
  /** The public key as a point (validated). */
  readonly point: Secp256k1Point;
  /** Its SEC1-compressed encoding (33 bytes). */
  readonly publicKey: Uint8Array;
  /** Chain code, 32 bytes. */
  readonly chainCode: Uint8Array;
  /** Additive tweak δ mod n from the root this node was derived from (0 for a root). */
  readonly tweak: bigint;
}

/**
 * One BIP32 CKDpub step (see {@link deriveSecp256k1}) from an already decoded parent, for callers
 * that walk and memoise paths (a signer deriving under the same prefixes for every request): no
 * point decoding, one variable-time multiplication on the generator's width-10 table
 * (`mulBasePublic`; I_L is public), one addition and one encoding.
 * @param parent a node from {@link deriveSecp256k1}'s walk or built from a decoded key (its
 *   `publicKey` must be the encoding of `point`: it is what the HMAC commits to)
 * @param index non-hardened child index in [0, 2^31)
 * @param position 1-based position of `index` in its path (named in errors)
 * @returns the child node, with tweak = parent.tweak + I_L mod n
 * @throws RangeError for a hardened or malformed index; {@link Bip32InvalidChildError} when
 *   parse256(I_L) ≥ n or the child is the point at infinity
 */
export function ckdPubSecp256k1(parent: Secp256k1ChildNode, index: number, position = 1): Secp256k1ChildNode {
  const G = secp256k1Group;
  checkIndex(index, position);
  const [il, ir] = hmacSplit(parent.chainCode, concatBytes(parent.publicKey, u32be(index)));
  const t = bytesToBigint(il);
  if (t >= G.order) throw new Bip32InvalidChildError('secp256k1', index, position, 'tweak-out-of-range');
  // t = I_L is computed from public data only (parent key, chain code, index): variable time is fine
  const sum = parent.point.add(G.mulBasePublic(t));
  if (sum.is0()) throw new Bip32InvalidChildError('secp256k1', index, position, 'point-at-infinity');
  // affine once: its encoding here and the next level's addition or a verification reuse it
  const point = G.normalize(sum);
  return { point, publicKey: G.encodePoint(point), chainCode: ir, tweak: G.mod(parent.tweak + t) };
}

/** Entries of {@link derivedChild}'s memo (≈ 300 bytes each). */
const DERIVATION_CACHE_LIMIT = 4096;
const derivations = new Map<string, Secp256k1ChildNode>();
const rootIds = new WeakMap<Secp256k1Point, { hex: string; encoded: Uint8Array }>();

/**
 * The child key of a non-hardened BIP32 path on secp256k1 ({@link deriveSecp256k1}'s walk: point,
 * encoding, chain code and additive tweak δ), memoised per key and path prefix: derivation is
 * public data, each level costs a multiplication, an HMAC and an encoding (≈ 0.2 ms), and a wallet
 * signs under the same few prefixes (and hot addresses) again and again. The path is derived one
 * level at a time ({@link ckdPubSecp256k1}) from its longest memoised prefix, which gives the same
 * child (CKDpub composes: the tweaks add up); the master point is used as it is, never decoded
 * again. The memo is process-wide, holds at most 4096 nodes and drops the oldest first.
 * @param publicKey the master key (a validated point, e.g. a key share's Y)
 * @param chainCode its chain code, 32 bytes
 * @param path non-hardened indices (< 2^31)
 * @throws as {@link ckdPubSecp256k1} (a hardened index, an invalid child)
 */
export function derivedChild(
  publicKey: Secp256k1Point,
  chainCode: Uint8Array,
  path: readonly number[],
): Secp256k1ChildNode {
  let id = rootIds.get(publicKey);
  if (!id) {
    const encoded = secp256k1Group.encodePoint(publicKey);
    id = { hex: bytesToHex(encoded), encoded };
    rootIds.set(publicKey, id);
  }
  const root = `${id.hex}.${bytesToHex(chainCode)}`;
  let k = path.length;
  let node: Secp256k1ChildNode | undefined;
  for (; k > 0 && !node; k--) node = derivations.get(`${root}/${path.slice(0, k).join('/')}`);
  if (node) k++;
  let cur: Secp256k1ChildNode = node ?? { point: publicKey, publicKey: id.encoded, chainCode, tweak: 0n };
  for (let j = k; j < path.length; j++) {
    cur = ckdPubSecp256k1(cur, path[j] as number, j + 1);
    if (derivations.size >= DERIVATION_CACHE_LIMIT) derivations.delete(derivations.keys().next().value as string);
    derivations.set(`${root}/${path.slice(0, j + 1).join('/')}`, cur);
  }
  return cur;
}

/**
 * Non-hardened additive child key derivation on Ed25519 — the scheme restated in
 * `test-vectors/hd-ed25519/additive-nonhardened.json` (the "Edwards" scheme of
 * LFDT-Lockness/hd-wallet). It is NOT SLIP-0010, which defines only hardened derivation for
 * Ed25519. For each path element `i`:
 * `I = HMAC-SHA512(key = chain code, data = A || 0x00 || ser32(i))` where `A` is the 32-byte
 * encoding of the parent public key; `t = int_be(I[0..32]) mod ℓ`; child public key `A + t·G`;
 * child chain code `I[32..64]`; child secret scalar `parent scalar + t mod ℓ`.
 *
 * The secret here is the signing SCALAR (as FROST shares it), not an RFC 8032 seed: a child key
 * signs with `childScalar = parentScalar + δ`, which RFC 8032 seed-based signing APIs cannot
 * express. Verification of the resulting signatures is ordinary RFC 8032 verification.
 *
 * @param publicKey parent public key, 32 bytes (RFC 8032 §5.1.2); non-canonical encodings, the
 *   identity and points outside the prime-order subgroup are rejected
 * @param chainCode parent chain code, 32 bytes
 * @param path non-hardened path; see {@link parseDerivationPath}
 * @returns child public key (32 bytes), child chain code (32 bytes), tweak δ mod ℓ, path
 * @throws TypeError / RangeError for wrong types or lengths, and for paths as in
 *   {@link parseDerivationPath} (a hardened index is a RangeError naming it); Error for an
 *   invalid public key; {@link Bip32InvalidChildError} if a child public key is the identity.
 */
export function deriveEd25519(
  publicKey: Uint8Array,
  chainCode: Uint8Array,
  path: readonly number[] | string,
): DerivedChildKey {
  const G = ed25519Group;
  const indices = parseDerivationPath(path);
  let point = G.decodePoint(publicKey, 'publicKey');
  let c: Uint8Array = Uint8Array.from(abytes(chainCode, 'chainCode', 32));
  let tweak = 0n;
  indices.forEach((index, k) => {
    const data = concatBytes(G.encodePoint(point), Uint8Array.of(0x00), u32be(index));
    const [il, ir] = hmacSplit(c, data);
    const t = G.mod(bytesToBigint(il));
    const child = point.add(G.mulPublic(G.G, t)); // public t, as above
    if (child.is0()) throw new Bip32InvalidChildError('ed25519', index, k + 1, 'point-at-infinity');
    point = child;
    c = ir;
    tweak = G.mod(tweak + t);
  });
  return { publicKey: G.encodePoint(point), chainCode: c, tweak, path: indices };
}
