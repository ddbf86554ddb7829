import { bytesToHex, ed25519Group, hexToBytes, invertMod, secp256k1Group } from '@custodian/crypto';
import { seededRandom } from '@custodian/crypto/testing';
import { ed25519 } from '@noble/curves/ed25519.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

describe.each([secp256k1Group, ed25519Group] as const)('$name group', (g) => {
  const rng = seededRandom(`group-${g.name}`);

  it('round-trips points and scalars', () => {
    for (let i = 0; i < 10; i++) {
      const k = g.randomScalar(rng);
      const P = g.mulBase(k);
      // biome-ignore lint/suspicious/noExplicitAny: generic over both groups
      expect((g as any).decodePoint(g.encodePoint(P as any), 'P').equals(P)).toBe(true);
      expect(g.decodeScalar(g.encodeScalar(k), 'k')).toBe(k);
    }
  });

  it('rejects the identity, wrong lengths, off-curve and unreduced values, naming the field', () => {
    expect(() => g.encodePoint(g.identity as never)).toThrow(RangeError);
    const P = g.encodePoint(g.G as never);
    expect(() => g.decodePoint(P.subarray(1), 'X_i')).toThrow(/X_i/);
    const bad = Uint8Array.from(P);
    bad[bad.length - 2] = (bad[bad.length - 2] as number) ^ 0xff;
    bad[1] = (bad[1] as number) ^ 0x55;
    let threw = 0;
    for (let i = 0; i < 8; i++) {
      bad[2] = i;
      try {
        g.decodePoint(bad, 'X_i');
      } catch (e) {
        expect(String(e)).toMatch(/X_i/);
        threw++;
      }
    }
    expect(threw).toBeGreaterThan(0);
    const qBytes =
      g.name === 'secp256k1'
        ? hexToBytes(g.order.toString(16).padStart(64, '0'))
        : Uint8Array.from(hexToBytes(g.order.toString(16).padStart(64, '0'))).reverse();
    expect(() => g.decodeScalar(qBytes, 'z')).toThrow(/z: scalar not reduced/);
    expect(() => g.decodeScalar(new Uint8Array(32), 'z')).toThrow(/zero/);
    expect(g.decodeScalar(new Uint8Array(32), 'z', { allowZero: true })).toBe(0n);
    expect(() => g.decodeScalar(new Uint8Array(31), 'z')).toThrow(RangeError);
    expect(() => g.encodeScalar(g.order)).toThrow(RangeError);
  });

  it('mul handles 0 and the identity; inv is an inverse', () => {
    expect(g.mulBase(0n).is0()).toBe(true);
    expect(g.mul(g.identity as never, 5n).is0()).toBe(true);
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: g.order - 1n }), (a) => g.mod(a * g.inv(a)) === 1n),
      { numRuns: 50 },
    );
    expect(() => g.inv(0n)).toThrow(RangeError);
  });

  it('withTable: multiplications on a point with a fixed-base table equal those without', () => {
    const plain = g.mulBase(g.randomScalar(rng));
    // biome-ignore lint/suspicious/noExplicitAny: generic over both groups
    const tabled = (g as any).withTable((g as any).decodePoint(g.encodePoint(plain as never), 'P'), 5);
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: g.order - 1n }), (k) => {
        expect(g.mulPublic(tabled, k).equals(g.mulPublic(plain as never, k) as never)).toBe(true);
        expect(g.mul(tabled, k).equals(g.mul(plain as never, k) as never)).toBe(true);
      }),
      { numRuns: 40 },
    );
    expect(() => g.withTable(plain as never, 1)).toThrow(RangeError);
    expect(g.withTable(g.identity as never).is0()).toBe(true);
  });

  it("mulBasePublic (the generator on the group's width-10 table) equals mulBase, 0 and q − 1 included", () => {
    g.prepareBase();
    g.prepareBase(); // idempotent
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: g.order - 1n }), (k) => {
        expect(g.mulBasePublic(k).equals(g.mulBase(k) as never)).toBe(true);
      }),
      { numRuns: 40, examples: [[0n], [1n], [g.order - 1n]] },
    );
    expect(g.mulBasePublic(g.order + 2n).equals(g.mulBase(2n) as never)).toBe(true);
  });

  it('normalize gives the same point with Z = 1, encoding as noble encodes the projective one', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: g.order - 1n }), fc.bigInt({ min: 1n, max: g.order - 1n }), (a, b) => {
        // a sum of two multiples is projective (Z ≠ 1) but for negligible chance
        // biome-ignore lint/suspicious/noExplicitAny: generic over both groups
        const P = (g.mulBase(a) as any).add(g.mulBase(b));
        fc.pre(!P.is0());
        const N = g.normalize(P as never) as typeof P;
        expect(N.Z).toBe(1n);
        expect(N.equals(P)).toBe(true);
        expect(bytesToHex(g.encodePoint(P))).toBe(bytesToHex(P.toBytes(true)));
        expect(g.normalize(N as never)).toBe(N);
      }),
      { numRuns: 30 },
    );
    expect(g.normalize(g.identity as never).is0()).toBe(true);
  });
});

describe('ed25519 specifics', () => {
  it('rejects points with a torsion component and non-canonical encodings', () => {
    // a small-order point (order 8) added to G is on the curve but outside the prime-order subgroup
    const torsion = ed25519.Point.fromHex('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa');
    const P = ed25519.Point.BASE.add(torsion);
    expect(() => ed25519Group.decodePoint(P.toBytes(), 'R')).toThrow(/prime-order subgroup/);
    // y = p + 1 (non-canonical encoding of y = 1... rejected by noble or by our re-encoding check)
    const nonCanonical = hexToBytes('eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f');
    expect(() => ed25519Group.decodePoint(nonCanonical, 'R')).toThrow(/R/);
    expect(bytesToHex(ed25519Group.encodeScalar(1n))).toBe(`01${'00'.repeat(31)}`);
  });
});

describe('invertMod', () => {
  it('inverts and rejects non-invertible values', () => {
    expect(invertMod(3n, 11n)).toBe(4n);
    expect(() => invertMod(6n, 9n)).toThrow(RangeError);
  });
});
