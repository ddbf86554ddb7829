/**
 * Body parsers shared by the CGGMP21 rounds: each validates the shape of one field of a received
 * message (type, byte length, canonical encoding) and names it in the error, before any math.
 * Thrown TypeError/RangeError/Error become "malformed message" aborts naming the sender.
 */
import { secp256k1Group as G, type Secp256k1Point } from '@custodian/crypto';

/** Assert a record body and return it. */
export function record(body: unknown, field: string): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || body instanceof Uint8Array) {
    throw new TypeError(`${field}: expected a record`);
  }
  return body as Record<string, unknown>;
}

/** Exactly `length` bytes. */
export function bytesField(value: unknown, field: string, length: number): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new TypeError(`${field}: expected bytes`);
  if (value.length !== length) throw new RangeError(`${field}: expected ${length} bytes, got ${value.length}`);
  return value;
}

/** A secp256k1 point, 33-byte compressed SEC1, not the identity. */
export function pointField(value: unknown, field: string): Secp256k1Point {
  if (!(value instanceof Uint8Array)) throw new TypeError(`${field}: expected bytes`);
  return G.decodePoint(value, field);
}

/** A scalar, 32 bytes big-endian, < q (zero allowed only if `allowZero`). */
export function scalarField(value: unknown, field: string, allowZero = false): bigint {
  if (!(value instanceof Uint8Array)) throw new TypeError(`${field}: expected bytes`);
  return G.decodeScalar(value, field, { allowZero });
}

/** A list of exactly `length` items, each parsed by `item`. */
export function listField<T>(value: unknown, field: string, length: number, item: (v: unknown, f: string) => T): T[] {
  if (!Array.isArray(value)) throw new TypeError(`${field}: expected a list`);
  if (value.length !== length) throw new RangeError(`${field}: expected ${length} items, got ${value.length}`);
  return value.map((v, k) => item(v, `${field}[${k}]`));
}

/** A bigint (Paillier-size integers travel as bigints in runtime bodies). */
export function bigintField(value: unknown, field: string): bigint {
  if (typeof value !== 'bigint') throw new TypeError(`${field}: expected an integer`);
  return value;
}

/** XOR of equal-length byte strings. */
export function xorAll(parts: readonly Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (const p of parts) for (let k = 0; k < length; k++) out[k] = (out[k] as number) ^ (p[k] as number);
  return out;
}
