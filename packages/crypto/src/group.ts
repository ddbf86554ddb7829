/**
 * Prime-order groups used by Custodian's protocols, as thin validated wrappers over `@noble/curves`
 * (no curve arithmetic of our own).
 *
 * - `secp256k1`: SEC 2 §2.4.1; points encoded SEC1-compressed (33 bytes), scalars 32 bytes big-endian.
 * - `ed25519`: RFC 8032 §5.1; points encoded as 32 bytes (RFC 8032 §5.1.2), scalars 32 bytes
 *   little-endian. Only points of the prime-order subgroup are accepted (no torsion).
 *
 * Secret scalars are multiplied with noble's constant-time `multiply`; public ones may use
 * `multiplyUnsafe`.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { abytes, bigintToBytes, bytesToBigint, equalBytes, type RandomSource } from './bytes.js';

export type Secp256k1Point = InstanceType<typeof secp256k1.Point>;
export type Ed25519Point = InstanceType<typeof ed25519.Point>;
export type CurveName = 'secp256k1' | 'ed25519';

/** Operations on a point of a prime-order group `P`. */
export interface GroupPoint<P> {
  add(other: P): P;
  subtract(other: P): P;
  negate(): P;
  equals(other: P): boolean;
  multiply(scalar: bigint): P;
  multiplyUnsafe(scalar: bigint): P;
  is0(): boolean;
  toBytes(compressed?: boolean): Uint8Array;
  toAffine(): { x: bigint; y: bigint };
  /** Projective Z coordinate (1 for an affine point). */
  readonly Z: bigint;
  precompute(windowSize?: number, isLazy?: boolean): P;
}

/**
 * A prime-order group with validated encodings.
 * @typeParam P noble's point class for the curve
 */
export interface Group<P extends GroupPoint<P>> {
  readonly name: CurveName;
  /** Group order q (prime). */
  readonly order: bigint;
  /** Encoded scalar length: 32 bytes. */
  readonly scalarLength: number;
  /** Encoded point length: 33 (secp256k1, compressed) or 32 (ed25519). */
  readonly pointLength: number;
  /** Generator G. */
  readonly G: P;
  /** Identity element. */
  readonly identity: P;
  /** k·G for any scalar k (0 ≤ k < q; 0 gives the identity). Constant-time for k ≠ 0. */
  mulBase(k: bigint): P;
  /** k·P for any scalar k (0 ≤ k < q). Constant-time for k ≠ 0. Use for secret k. */
  mul(point: P, k: bigint): P;
  /** k·P with variable time; only for public k. Uses the point's fixed-base table if it has one. */
  mulPublic(point: P, k: bigint): P;
  /**
   * k·G with variable time, for public k only (HD tweaks, verification): on a width-10 table of
   * the generator kept by the group (secp256k1: ≈ 0.11 ms instead of ≈ 0.17 ms on noble's own
   * width-6 table; ≈ 85 ms and 1.5 MB to build, on the first call or {@link Group.prepareBase}).
   */
  mulBasePublic(k: bigint): P;
  /** Build the table of {@link Group.mulBasePublic} now (idempotent), e.g. when a daemon starts. */
  prepareBase(): void;
  /**
   * Give `point` (this very instance) a fixed-base table: noble's signed wNAF precomputes with
   * `window` bits (default 6: 44 windows × 32 points, ≈ 8 ms to build and ≈ 0.26 MB on secp256k1; width 8: ≈ 25 ms, 0.43 MB; width 10: ≈ 85 ms, 1.5 MB).
   * Later `mulPublic`/`mul` on the same instance use it (≈ 0.17 ms instead of ≈ 0.64 ms for
   * `mulPublic` on secp256k1 here). For points that are multiplied many times (a key's public key,
   * a presignature's R). Returns the same instance; a second call with the same window does nothing.
   */
  withTable(point: P, window?: number): P;
  /** Sum of points (identity for the empty list). */
  sum(points: readonly P[]): P;
  /**
   * The same point in affine form (Z = 1), at the cost of one field inversion, so that the
   * encodings and affine reads that follow cost none (noble's `toBytes` inverts Z twice per call
   * for a projective point: its validity check and its encoder each take the affine form). Returns
   * `point` itself when it is already affine or the identity.
   */
  normalize(point: P): P;
  /** Encode a point (via {@link Group.normalize}); the identity has no encoding and throws RangeError. */
  encodePoint(point: P): Uint8Array;
  /**
   * Decode and validate a point. Rejects wrong length (RangeError), off-curve or non-canonical
   * encodings, the identity (unless `allowIdentity`), and for ed25519 points outside the prime-order
   * subgroup (Error). The message names `field`.
   */
  decodePoint(bytes: Uint8Array, field: string, opts?: { allowIdentity?: boolean }): P;
  /** Encode a scalar 0 ≤ k < q in 32 bytes (big-endian for secp256k1, little-endian for ed25519). */
  encodeScalar(k: bigint): Uint8Array;
  /** Decode a canonical scalar (< q); zero is rejected unless `allowZero`. */
  decodeScalar(bytes: Uint8Array, field: string, opts?: { allowZero?: boolean }): bigint;
  /** Reduce modulo q. */
  mod(a: bigint): bigint;
  /** Multiplicative inverse modulo q; throws RangeError for 0. */
  inv(a: bigint): bigint;
  /** Uniform nonzero scalar from 64 random bytes (wide reduction, bias < 2^-256). */
  randomScalar(rng: RandomSource): bigint;
  /** Reduce a wide (≥ 48 byte) big-endian byte string to a scalar modulo q. */
  scalarFromWide(bytes: Uint8Array): bigint;
  /** Is `a` a canonical scalar 0 ≤ a < q? */
  isScalar(a: unknown): a is bigint;
}

function modq(a: bigint, q: bigint): bigint {
  const r = a % q;
  return r >= 0n ? r : r + q;
}

/** Modular inverse by the extended Euclidean algorithm. @throws RangeError if not invertible. */
export function invertMod(a: bigint, m: bigint): bigint {
  let [oldR, r] = [modq(a, m), m];
  let [oldS, s] = [1n, 0n];
  while (r !== 0n) {
    const quotient = oldR / r;
    [oldR, r] = [r, oldR - quotient * r];
    [oldS, s] = [s, oldS - quotient * s];
  }
  if (oldR !== 1n) throw new RangeError('invertMod: value is not invertible');
  return modq(oldS, m);
}

interface PointCons<P> {
  BASE: P;
  ZERO: P;
  fromBytes(bytes: Uint8Array): P;
  fromAffine(p: { x: bigint; y: bigint }): P;
  Fn: { ORDER: bigint };
}

/** Window of the generator's table of `mulBasePublic`: 27 additions per multiplication on secp256k1. */
const BASE_WINDOW = 10;
/** Window of the table built by `withTable` per point instance (so a second call does not rebuild it). */
const tables = new WeakMap<object, number>();

function makeGroup<P extends GroupPoint<P>>(
  name: CurveName,
  Point: PointCons<P>,
  pointLength: number,
  littleEndian: boolean,
  extraCheck: (p: P) => boolean,
): Group<P> {
  const q = Point.Fn.ORDER;
  const scalarLength = 32;
  let base: P | undefined;
  const baseTable = (): P => {
    // our own instance of the generator: noble's BASE keeps its own width-6 (constant-time) table
    if (!base) base = group.withTable(Point.fromBytes(Point.BASE.toBytes(true)), BASE_WINDOW);
    return base;
  };
  const group: Group<P> = {
    name,
    order: q,
    scalarLength,
    pointLength,
    G: Point.BASE,
    identity: Point.ZERO,
    mulBase(k) {
      const r = modq(k, q);
      return r === 0n ? Point.ZERO : Point.BASE.multiply(r);
    },
    mul(point, k) {
      const r = modq(k, q);
      if (r === 0n || point.is0()) return Point.ZERO;
      return point.multiply(r);
    },
    mulPublic(point, k) {
      return point.multiplyUnsafe(modq(k, q));
    },
    mulBasePublic(k) {
      return baseTable().multiplyUnsafe(modq(k, q));
    },
    prepareBase() {
      baseTable();
    },
    withTable(point, window = 6) {
      if (!Number.isSafeInteger(window) || window < 2 || window > 16)
        throw new RangeError('withTable: window must be 2–16');
      if (point.is0() || tables.get(point) === window) return point;
      tables.set(point, window);
      point.precompute(window, true);
      point.multiplyUnsafe(3n); // builds the variable-time table now (noble keeps a separate one for constant-time use)
      return point;
    },
    sum(points) {
      let acc = Point.ZERO;
      for (const p of points) acc = acc.add(p);
      return acc;
    },
    normalize(point) {
      if (point.Z === 1n || point.is0()) return point;
      return Point.fromAffine(point.toAffine());
    },
    encodePoint(point) {
      if (point.is0()) throw new RangeError(`${name}: the identity point has no encoding`);
      return group.normalize(point).toBytes(true);
    },
    decodePoint(bytes, field, opts) {
      abytes(bytes, field, pointLength);
      let p: P;
      try {
        p = Point.fromBytes(bytes);
      } catch {
        throw new Error(`${field}: not a valid ${name} point encoding`);
      }
      if (p.is0()) {
        if (opts?.allowIdentity) return p;
        throw new Error(`${field}: identity point not allowed`);
      }
      if (!equalBytes(p.toBytes(true), bytes)) throw new Error(`${field}: non-canonical point encoding`);
      if (!extraCheck(p)) throw new Error(`${field}: point outside the prime-order subgroup`);
      return p;
    },
    encodeScalar(k) {
      if (k < 0n || k >= q) throw new RangeError(`${name}: scalar out of range`);
      const be = bigintToBytes(k, scalarLength);
      return littleEndian ? be.reverse() : be;
    },
    decodeScalar(bytes, field, opts) {
      abytes(bytes, field, scalarLength);
      const k = bytesToBigint(littleEndian ? Uint8Array.from(bytes).reverse() : bytes);
      if (k >= q) throw new RangeError(`${field}: scalar not reduced modulo the group order`);
      if (k === 0n && !opts?.allowZero) throw new RangeError(`${field}: zero scalar not allowed`);
      return k;
    },
    mod: (a) => modq(a, q),
    inv(a) {
      const r = modq(a, q);
      if (r === 0n) throw new RangeError(`${name}: zero has no inverse`);
      return invertMod(r, q);
    },
    randomScalar(rng) {
      for (;;) {
        const k = modq(bytesToBigint(abytes(rng(64), 'rng output', 64)), q);
        if (k !== 0n) return k;
      }
    },
    scalarFromWide(bytes) {
      if (bytes.length < 48) throw new RangeError('scalarFromWide: need at least 48 bytes');
      return modq(bytesToBigint(bytes), q);
    },
    isScalar(a): a is bigint {
      return typeof a === 'bigint' && a >= 0n && a < q;
    },
  };
  return Object.freeze(group);
}

/** secp256k1 (SEC 2), compressed SEC1 point encoding, big-endian scalars. */
export const secp256k1Group: Group<Secp256k1Point> = makeGroup<Secp256k1Point>(
  'secp256k1',
  secp256k1.Point as unknown as PointCons<Secp256k1Point>,
  33,
  false,
  () => true,
);

/** Ed25519 (RFC 8032) prime-order subgroup, little-endian scalars. */
export const ed25519Group: Group<Ed25519Point> = makeGroup<Ed25519Point>(
  'ed25519',
  ed25519.Point as unknown as PointCons<Ed25519Point>,
  32,
  true,
  (p) => (p as unknown as { isTorsionFree(): boolean }).isTorsionFree(),
);

/** Look a group up by name. @throws RangeError for an unknown name. */
export function groupByName(name: CurveName): Group<Secp256k1Point> | Group<Ed25519Point> {
  if (name === 'secp256k1') return secp256k1Group;
  if (name === 'ed25519') return ed25519Group;
  throw new RangeError(`unknown curve ${String(name)}`);
}
