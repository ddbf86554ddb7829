/**
 * Attack (issue #20 item 9): `TextEncoder` turns every lone UTF-16 surrogate into U+FFFD, so two
 * different strings — e.g. a destination address or a transfer id with `\uD800` and the same with
 * `\uDBFF` or with U+FFFD itself — would encode, and hash, identically: an approval of one would be
 * an approval of the other. `canonicalEncode` must reject non-well-formed strings instead.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalEncode } from '../src/encoding.js';

const loneSurrogates = ['\uD800', '\uDBFF', '\uDC00', '\uDFFF'];

describe('canonicalEncode and lone surrogates', () => {
  it('refuses a string with a lone surrogate (no collision with U+FFFD or another surrogate)', () => {
    for (const s of loneSurrogates) {
      expect(() => canonicalEncode(`0xabc${s}`)).toThrow(TypeError);
      expect(() => canonicalEncode({ destination_address: `T${s}` })).toThrow(TypeError);
      expect(() => canonicalEncode([`x${s}y`])).toThrow(TypeError);
      // as a record key too
      expect(() => canonicalEncode({ [`k${s}`]: 1 })).toThrow(TypeError);
    }
    // the replacement character itself is a well-formed string and still encodes
    expect(() => canonicalEncode('0xabc\uFFFD')).not.toThrow();
  });

  it('keeps encoding well-formed strings, surrogate pairs included', () => {
    expect(canonicalEncode('🔑')).toEqual(canonicalEncode('\uD83D\uDD11'));
    expect(canonicalEncode('a🔑b')).not.toEqual(canonicalEncode('a\uFFFDb'));
  });

  it('never encodes two different strings to the same bytes (property)', () => {
    // fast-check's full-unicode strings include lone surrogates; collisions must be impossible:
    // either both encode and differ, or the ill-formed one is refused
    const encodeOrNull = (s: string) => {
      try {
        return Buffer.from(canonicalEncode(s)).toString('hex');
      } catch {
        return null;
      }
    };
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        fc.pre(a !== b);
        const ea = encodeOrNull(a);
        const eb = encodeOrNull(b);
        if (ea !== null && eb !== null) expect(ea).not.toBe(eb);
      }),
      { numRuns: 2000 },
    );
    // and the targeted pair the shrinker might not find
    const pairs = [
      ['a\uD800', 'a\uDBFF'],
      ['a\uD800', 'a\uFFFD'],
    ] as const;
    for (const [a, b] of pairs) {
      const ea = encodeOrNull(a);
      const eb = encodeOrNull(b);
      expect(ea === null || eb === null || ea !== eb).toBe(true);
    }
  });
});
