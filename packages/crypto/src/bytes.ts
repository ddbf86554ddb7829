/**
 * Byte and integer helpers shared by every protocol package, plus the small assertion helpers used
 * at trust boundaries (STYLE.md item 8): `TypeError` for a wrong type, `RangeError` for a wrong
 * length or range. Every message names the offending field.
 */
import { bytesToHex, concatBytes, hexToBytes, randomBytes } from '@noble/hashes/utils.js';

export { bytesToHex, concatBytes, hexToBytes };

/**
 * A source of uniformly random bytes. Protocol code never calls a global RNG: it takes one of these
 * (sans-IO), so tests can inject a deterministic source.
 * @param length number of bytes wanted (non-negative integer)
 * @returns a fresh `Uint8Array` of exactly `length` bytes
 */
export type RandomSource = (length: number) => Uint8Array;

/** The default {@link RandomSource}: the platform CSPRNG (`crypto.getRandomValues`) via noble. */
export const systemRandom: RandomSource = (length) => randomBytes(length);

/**
 * Assert `value` is a `Uint8Array`, optionally of one of the given lengths.
 * @throws TypeError when not a Uint8Array; RangeError when the length is not allowed.
 */
export function abytes(value: unknown, field: string, ...lengths: number[]): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new TypeError(`${field}: expected Uint8Array`);
  if (lengths.length > 0 && !lengths.includes(value.length)) {
    throw new RangeError(`${field}: expected ${lengths.join(' or ')} bytes, got ${value.length}`);
  }
  return value;
}

/**
 * Assert `value` is a bigint, optionally in the inclusive range [min, max].
 * @throws TypeError when not a bigint; RangeError when outside the range.
 */
export function abigint(value: unknown, field: string, min?: bigint, max?: bigint): bigint {
  if (typeof value !== 'bigint') throw new TypeError(`${field}: expected bigint`);
  if (min !== undefined && value < min) throw new RangeError(`${field}: below the allowed range`);
  if (max !== undefined && value > max) throw new RangeError(`${field}: above the allowed range`);
  return value;
}

/**
 * Assert `value` is a safe integer in the inclusive range [min, max].
 * @throws TypeError when not an integer; RangeError when outside the range.
 */
export function aint(value: unknown, field: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new TypeError(`${field}: expected an integer`);
  }
  if (value < min || value > max) throw new RangeError(`${field}: ${value} outside [${min}, ${max}]`);
  return value;
}

/** Constant-time equality of two byte arrays (length is not secret). */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}

/**
 * Big-endian unsigned encoding of a non-negative bigint into exactly `length` bytes.
 * @throws RangeError when negative or too large for `length` bytes.
 */
export function bigintToBytes(value: bigint, length: number): Uint8Array {
  if (value < 0n) throw new RangeError('bigintToBytes: negative value');
  const hex = value.toString(16);
  if (hex.length > length * 2) throw new RangeError(`bigintToBytes: value does not fit ${length} bytes`);
  return hexToBytes(hex.padStart(length * 2, '0'));
}

/** Big-endian unsigned decoding; the empty array decodes to 0n. */
export function bytesToBigint(bytes: Uint8Array): bigint {
  if (bytes.length === 0) return 0n;
  return BigInt(`0x${bytesToHex(bytes)}`);
}

/** Minimal big-endian unsigned encoding (0n encodes to a single zero byte). */
export function bigintToMinimalBytes(value: bigint): Uint8Array {
  if (value < 0n) throw new RangeError('bigintToMinimalBytes: negative value');
  let hex = value.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  return hexToBytes(hex);
}

/** Number of bits of a non-negative bigint (0n has 0 bits). */
export function bitLength(value: bigint): number {
  if (value < 0n) value = -value;
  return value === 0n ? 0 : value.toString(2).length;
}

/** 32-bit big-endian encoding of an unsigned integer. */
export function u32be(value: number): Uint8Array {
  aint(value, 'u32', 0, 0xffffffff);
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value, false);
  return out;
}

/** 64-bit big-endian encoding of a non-negative safe integer. */
export function u64be(value: number): Uint8Array {
  aint(value, 'u64');
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(value), false);
  return out;
}

/** Overwrite a secret buffer with zeros (best effort: JS cannot guarantee no copies exist). */
export function wipe(...buffers: (Uint8Array | undefined)[]): void {
  for (const b of buffers) b?.fill(0);
}
