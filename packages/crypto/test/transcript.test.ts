import { type Canonical, canonicalEncode, equalBytes, secp256k1Group, Transcript } from '@custodian/crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const sid = new Uint8Array(32).fill(7);
const canonical: fc.Arbitrary<Canonical> = fc.letrec<{ v: Canonical }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.uint8Array({ maxLength: 8 }),
    fc.bigInt({ min: -(1n << 70n), max: 1n << 70n }),
    fc.string({ maxLength: 6 }),
    fc.nat(1000),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 3 }), tie('v'), { maxKeys: 3 }),
  ),
})).v;

describe('canonical encoding is injective (TSSHOCK α-shuffle class)', () => {
  it('distinct values never encode alike (fast-check)', () => {
    fc.assert(
      fc.property(canonical, canonical, (a, b) => {
        const same = equalBytes(canonicalEncode(a), canonicalEncode(b));
        // equal encodings only for structurally equal values
        if (same) expect(canonicalEncode([a])).toEqual(canonicalEncode([b]));
        return same === (JSON.stringify(a, replacer) === JSON.stringify(b, replacer));
      }),
      { numRuns: 500 },
    );
  });

  it('concatenation tricks do not collide', () => {
    const pairs: [Canonical, Canonical][] = [
      [
        ['ab', 'c'],
        ['a', 'bc'],
      ],
      [
        [new Uint8Array([1, 2]), new Uint8Array([3])],
        [new Uint8Array([1]), new Uint8Array([2, 3])],
      ],
      [
        [1n, 23n],
        [12n, 3n],
      ],
      [
        ['a', ['b']],
        [['a'], 'b'],
      ],
      [{ a: 'bc' }, { ab: 'c' }],
      [5n, -5n],
      [new Uint8Array([0x61]), 'a'],
      [0, 0n],
      [null, new Uint8Array(0)],
    ];
    for (const [a, b] of pairs) expect(equalBytes(canonicalEncode(a), canonicalEncode(b))).toBe(false);
  });

  it('rejects values it cannot encode injectively', () => {
    expect(() => canonicalEncode(1.5)).toThrow(TypeError);
    expect(() => canonicalEncode(-1)).toThrow(TypeError);
    expect(() => canonicalEncode((() => 1) as unknown as Canonical)).toThrow(TypeError);
  });
});

function replacer(_k: string, v: unknown) {
  if (typeof v === 'bigint') return `big:${v}`;
  if (v instanceof Uint8Array) return `bytes:${Array.from(v).join(',')}`;
  if (typeof v === 'number') return `num:${v}`;
  if (typeof v === 'string') return `str:${v}`;
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    return Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }
  return v;
}

describe('Transcript', () => {
  const q = secp256k1Group.order;
  const base = () => Transcript.create('custodian.test', { sessionId: sid, parties: [1n, 2n, 3n], round: 1 });

  it('is deterministic', () => {
    expect(base().append('x', 1n).challengeScalar('e', q)).toBe(base().append('x', 1n).challengeScalar('e', q));
  });

  it('binds tag, session, parties (and their order), round, labels and values', () => {
    const e = base().append('x', 1n).challengeScalar('e', q);
    const variants = [
      Transcript.create('custodian.test2', { sessionId: sid, parties: [1n, 2n, 3n], round: 1 }),
      Transcript.create('custodian.test', { sessionId: new Uint8Array(32).fill(8), parties: [1n, 2n, 3n], round: 1 }),
      Transcript.create('custodian.test', { sessionId: sid, parties: [1n, 3n, 2n], round: 1 }),
      Transcript.create('custodian.test', { sessionId: sid, parties: [1n, 2n], round: 1 }),
      Transcript.create('custodian.test', { sessionId: sid, parties: [1n, 2n, 3n], round: 2 }),
      Transcript.create('custodian.test', { sessionId: sid, parties: [1n, 2n, 3n] }),
    ].map((t) => t.append('x', 1n).challengeScalar('e', q));
    variants.push(base().append('y', 1n).challengeScalar('e', q));
    variants.push(base().append('x', 2n).challengeScalar('e', q));
    variants.push(base().append('x', 1n).challengeScalar('f', q));
    for (const v of variants) expect(v).not.toBe(e);
    expect(new Set(variants).size).toBe(variants.length);
  });

  it('successive challenges differ and fork does not disturb the parent', () => {
    const t = base();
    const f = t.fork('sub').challengeScalar('e', q);
    const a = t.challengeScalar('e', q);
    const b = t.challengeScalar('e', q);
    expect(a).not.toBe(b);
    expect(f).not.toBe(a);
    expect(base().challengeScalar('e', q)).toBe(a);
  });

  it('challenges lie in their ranges', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 1n << 300n }),
        fc.uint8Array({ minLength: 1, maxLength: 8 }),
        (bound, salt) => {
          const t = base().append('salt', salt);
          const below = t.challengeBelow('b', bound);
          const signed = t.challengeSigned('s', bound);
          const vec = t.challengeVectorBelow('v', bound, 4);
          return (
            below >= 0n &&
            below < bound &&
            signed >= -bound &&
            signed <= bound &&
            vec.length === 4 &&
            vec.every((v) => v >= 0n && v < bound)
          );
        },
      ),
      { numRuns: 200 },
    );
    expect(base().challengeBits('bits', 128)).toHaveLength(128);
    expect(base().challengeBytes('bytes', 77)).toHaveLength(77);
  });

  it('signed challenges take both signs', () => {
    const signs = new Set(
      Array.from({ length: 64 }, (_, i) => Math.sign(Number(base().append('i', i).challengeSigned('s', q)))),
    );
    expect(signs.has(1) && signs.has(-1)).toBe(true);
  });

  it('rejects bad parameters', () => {
    expect(() => Transcript.create('', { sessionId: sid, parties: [] })).toThrow(RangeError);
    expect(() => Transcript.create('t', { sessionId: new Uint8Array(8), parties: [] })).toThrow(RangeError);
    expect(() => base().challengeBelow('b', 0n)).toThrow(RangeError);
    expect(() => base().challengeSigned('b', -1n)).toThrow(RangeError);
    expect(() => base().challengeScalar('b', 1n)).toThrow(RangeError);
    expect(() => base().challengeBytes('b', 0)).toThrow(RangeError);
  });
});
