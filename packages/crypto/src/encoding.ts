/**
 * Canonical, injective encoding of structured values for hashing (transcripts, commitments,
 * broadcast echoes). Every item is typed and length-prefixed, so two different values can never
 * encode to the same bytes — concatenation ambiguities (the root of TSSHOCK's α-shuffle attack,
 * Verichains 2023) are impossible by construction.
 *
 * Format (all lengths u64 big-endian):
 *   bytes   0x01 ‖ len ‖ data
 *   uint    0x02 ‖ len ‖ minimal big-endian magnitude            (bigint ≥ 0)
 *   nint    0x03 ‖ len ‖ minimal big-endian magnitude of −value  (bigint < 0)
 *   string  0x04 ‖ len ‖ UTF-8 (well-formed strings only: a lone UTF-16 surrogate is refused,
 *                              since UTF-8 would turn every one of them into U+FFFD)
 *   number  0x05 ‖ 8   ‖ u64 (non-negative safe integers only)
 *   bool    0x06 ‖ 1   ‖ 0x00 | 0x01
 *   null    0x07 ‖ 0
 *   list    0x08 ‖ count ‖ item…
 *   record  0x09 ‖ count ‖ (string key, value)… with keys sorted by UTF-16 code units
 */
import { bigintToMinimalBytes, concatBytes, u64be } from './bytes.js';

/** A value that {@link canonicalEncode} accepts. `undefined` record fields are skipped. */
export type Canonical =
  | Uint8Array
  | bigint
  | string
  | number
  | boolean
  | null
  | readonly Canonical[]
  | { readonly [key: string]: Canonical | undefined };

const textEncoder = new TextEncoder();

/** A UTF-16 code unit in U+D800..U+DFFF that is not half of a pair (in `u` mode a pair is one code point). */
const LONE_SURROGATE = /\p{Surrogate}/u;

function item(tag: number, payload: Uint8Array): Uint8Array {
  return concatBytes(Uint8Array.of(tag), u64be(payload.length), payload);
}

/**
 * Encode a value canonically (see module docs).
 * @throws TypeError for unsupported types (functions, symbols, non-integer or negative numbers)
 *   and for strings (values or record keys) that are not well-formed UTF-16 (a lone surrogate):
 *   they have no UTF-8 encoding, and replacing them would let two different strings collide.
 */
export function canonicalEncode(value: Canonical): Uint8Array {
  if (value instanceof Uint8Array) return item(0x01, value);
  switch (typeof value) {
    case 'bigint':
      return value >= 0n ? item(0x02, bigintToMinimalBytes(value)) : item(0x03, bigintToMinimalBytes(-value));
    case 'string':
      if (LONE_SURROGATE.test(value)) {
        throw new TypeError('canonicalEncode: string is not well-formed UTF-16 (lone surrogate)');
      }
      return item(0x04, textEncoder.encode(value));
    case 'number':
      if (!Number.isSafeInteger(value) || value < 0) {
        throw new TypeError('canonicalEncode: numbers must be non-negative safe integers; use bigint');
      }
      return item(0x05, u64be(value));
    case 'boolean':
      return item(0x06, Uint8Array.of(value ? 1 : 0));
    case 'object': {
      if (value === null) return item(0x07, new Uint8Array(0));
      if (Array.isArray(value)) {
        const parts = (value as readonly Canonical[]).map(canonicalEncode);
        return concatBytes(Uint8Array.of(0x08), u64be(parts.length), ...parts);
      }
      const record = value as { readonly [key: string]: Canonical | undefined };
      const keys = Object.keys(record)
        .filter((k) => record[k] !== undefined)
        .sort();
      const parts = keys.flatMap((k) => [canonicalEncode(k), canonicalEncode(record[k] as Canonical)]);
      return concatBytes(Uint8Array.of(0x09), u64be(keys.length), ...parts);
    }
    default:
      throw new TypeError(`canonicalEncode: unsupported type ${typeof value}`);
  }
}
