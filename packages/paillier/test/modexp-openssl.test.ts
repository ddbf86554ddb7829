/**
 * The OpenSSL backend of modPow (node:crypto DiffieHellman, see src/modexp.ts) must give exactly the
 * results of the native-bigint reference modPowBigint, for every base (including 0, 1, m − 1 and
 * bases ≥ m or negative), every exponent sign and size, and moduli inside and outside the range the
 * backend accepts (512–10 000 bits, odd). Also PaillierSecretKey.powN (x^N mod N² by CRT).
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { gcd, modPow } from '../src/index.js';
import { modPowBigint, modPowBinary, setOpensslModPow } from '../src/modexp.js';
import { SECURITY_112, testKey } from './helpers.js';

const key = testKey(SECURITY_112, 0);
const N = key.N;
const N2 = key.publicKey.N2;

/** Moduli: Paillier N (2048 bits), N² (4096), p (1024), 511-bit odd (below the backend), even, small. */
const moduli: readonly bigint[] = [N, N2, key.p, key.p * key.p, (1n << 510n) + 12345n, N2 * 2n, 1000003n];

describe('modPow OpenSSL backend', () => {
  test('equals modPowBigint for random bases and signed exponents on every modulus class (N, N², p, p², 511-bit, even, small)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...moduli),
        fc.bigInt({ min: -(1n << 4200n), max: 1n << 4200n }),
        fc.bigInt({ min: -(1n << 1100n), max: 1n << 1100n }),
        (m, b, e) => {
          if (e < 0n && gcd(b, m) !== 1n) {
            expect(() => modPow(b, e, m)).toThrow(RangeError);
            return;
          }
          expect(modPow(b, e, m)).toBe(modPowBigint(b, e, m));
        },
      ),
      { numRuns: 80 },
    );
  });

  test('edge bases and exponents: 0, 1, m − 1, m, m + 1, negative; exponent 0, 1, 2^16 − 1, 2^16, above the modulus', () => {
    const exps = [0n, 1n, 2n, 3n, (1n << 15n) - 1n, 1n << 15n, (1n << 16n) + 1n, N, N * N + 7n, -1n, -N];
    for (const m of [N, key.p * key.p, key.p]) {
      for (const b of [0n, 1n, 2n, m - 2n, m - 1n, m, m + 1n, -1n, -2n, 2n * m + 3n]) {
        for (const e of exps) {
          if (e < 0n && gcd(b, m) !== 1n) {
            expect(() => modPow(b, e, m)).toThrow(RangeError);
            continue;
          }
          expect(modPow(b, e, m)).toBe(modPowBinary(b, e, m));
        }
      }
    }
  });

  test('non-units: results agree for bases sharing a factor with the modulus', () => {
    for (const b of [key.p, key.q * 5n, key.p * key.p + 1n, N]) {
      expect(modPow(b, N, N2)).toBe(modPowBigint(b, N, N2));
      expect(modPow(b, (1n << 300n) + 1n, N)).toBe(modPowBigint(b, (1n << 300n) + 1n, N));
    }
  });

  test('switching the backend off gives the same values', () => {
    const b = 0x1234567890abcdefn ** 40n;
    const on = modPow(b, N, N2);
    setOpensslModPow(false);
    try {
      expect(modPow(b, N, N2)).toBe(on);
    } finally {
      setOpensslModPow(true);
    }
  });

  test('errors are those of the reference', () => {
    expect(() => modPow(2n, 5n, 0n)).toThrow(RangeError);
    expect(() => modPow(key.p, -1n, N2)).toThrow(RangeError);
    expect(modPow(5n, 5n, 1n)).toBe(0n);
  });
});

describe('PaillierSecretKey.powN', () => {
  test('x^N mod N² by CRT equals modPowBigint for units, non-units and out-of-range x', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(1n << 4200n), max: 1n << 4200n }), (x) => {
        expect(key.powN(x)).toBe(modPowBigint(x, N, N2));
      }),
      { numRuns: 10 },
    );
    for (const x of [0n, 1n, key.p, key.q, N, N2 - 1n, key.p * 7n + N2])
      expect(key.powN(x)).toBe(modPowBigint(x, N, N2));
  });
});
