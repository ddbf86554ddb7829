import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  assertLevel,
  CrtExp,
  FixedBaseTable,
  fixedBaseMultiExp,
  gcd,
  jacobi,
  modPow,
  PaillierPublicKey,
  PaillierSecretKey,
  rangeBounds,
} from '../src/index.js';
import { modPowBinary } from '../src/modexp.js';
import { SECURITY_112, SECURITY_128, seededRandom, testKey, testPrimes } from './helpers.js';

const L = SECURITY_112;
const key = testKey(L, 0);
const pk = key.publicKey;
const N = key.N;
const rng = seededRandom('paillier.test');
const plaintext = fc.bigInt({ min: -pk.halfN, max: pk.halfN });

describe('security levels', () => {
  test('SECURITY_128 is LFDT SecurityLevel128 and SECURITY_112 only changes κ', () => {
    expect(SECURITY_128).toMatchObject({
      kappa: 384,
      epsilon: 230,
      ell: 256,
      ellPrime: 848,
      m: 128,
      logQ: 128,
      minModulusBits: 3071,
    });
    expect(SECURITY_112).toMatchObject({
      kappa: 256,
      epsilon: 230,
      ell: 256,
      ellPrime: 848,
      m: 128,
      logQ: 128,
      minModulusBits: 2047,
    });
    expect(assertLevel(SECURITY_128)).toBe(SECURITY_128);
    expect(assertLevel(SECURITY_112)).toBe(SECURITY_112);
    expect(() => assertLevel({ ...SECURITY_128, m: 20 })).toThrow(RangeError);
    expect(rangeBounds(SECURITY_128).ellEps).toBe(1n << 486n);
  });
});

describe('modPow', () => {
  test('matches square-and-multiply for random bases, signed exponents and odd moduli', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: (1n << 700n) - 1n }),
        fc.bigInt({ min: -(1n << 600n), max: 1n << 600n }),
        (b, e) => {
          const m = N;
          if (e < 0n && gcd(b, m) !== 1n) return;
          expect(modPow(b, e, m)).toBe(modPowBinary(b, e, m));
        },
      ),
      { numRuns: 30 },
    );
  });
  test('edge cases: exponent 0, base 0, modulus 1, non-invertible negative exponent', () => {
    expect(modPow(5n, 0n, 7n)).toBe(1n);
    expect(modPow(0n, 5n, 7n)).toBe(0n);
    expect(modPow(5n, 5n, 1n)).toBe(0n);
    expect(modPow(3n, -1n, 7n)).toBe(5n);
    expect(() => modPow(key.p, -1n, N)).toThrow(RangeError);
    expect(() => modPow(2n, 2n, 0n)).toThrow(RangeError);
  });
  test('CRT exponentiation equals plain exponentiation modulo N and N²', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 2n, max: N - 1n }), fc.bigInt({ min: -(1n << 2100n), max: 1n << 2100n }), (b, e) => {
        if (gcd(b, N) !== 1n) return;
        expect(key.crtN.pow(b, e)).toBe(modPow(b, e, N));
        expect(key.crtN2.pow(b, e)).toBe(modPow(b, e, pk.N2));
      }),
      { numRuns: 5 },
    );
    expect(() => new CrtExp(15n, 8n, 9n, 6n)).toThrow(RangeError);
  });
  test('fixed-base tables (Yao) equal plain multi-exponentiation for signed exponents', () => {
    const s = 1234567n;
    const t = 7654321n;
    const ts = new FixedBaseTable(s, N);
    const tt = new FixedBaseTable(t, N, 4);
    const tt6 = new FixedBaseTable(t, N);
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(1n << 3000n), max: 1n << 3000n }),
        fc.bigInt({ min: -(1n << 3000n), max: 1n << 3000n }),
        (x, y) => {
          const want = (modPow(s, x, N) * modPow(t, y, N)) % N;
          expect(
            fixedBaseMultiExp([
              [ts, x],
              [tt6, y],
            ]),
          ).toBe(want);
          expect(tt.pow(y)).toBe(modPow(t, y, N));
        },
      ),
      { numRuns: 6 },
    );
    expect(fixedBaseMultiExp([[ts, 0n]])).toBe(1n);
    expect(() =>
      fixedBaseMultiExp([
        [ts, 1n],
        [tt, 1n],
      ]),
    ).toThrow(RangeError);
  });
  test('Jacobi symbol agrees with Euler’s criterion modulo a prime', () => {
    const p = key.p;
    for (const a of [2n, 3n, 5n, 12345n, p - 1n, p + 2n]) {
      const euler = modPow(a, (p - 1n) / 2n, p);
      expect(jacobi(a, p)).toBe(euler === 1n ? 1 : -1);
    }
    expect(jacobi(p, N)).toBe(0);
  });
});

describe('Paillier', () => {
  test('Dec(Enc(m)) = m for signed plaintexts, with public and CRT encryption', () => {
    fc.assert(
      fc.property(plaintext, (m) => {
        const { c, rho } = pk.encrypt(m, rng);
        expect(key.decryptSigned(c)).toBe(m);
        expect(key.encryptWithNonce(m, rho)).toBe(c);
      }),
      { numRuns: 8 },
    );
  });
  test('CRT decryption equals textbook decryption', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: pk.N2 - 1n }), (c) => {
        if (gcd(c, N) !== 1n) return;
        expect(key.decrypt(c)).toBe(key.decryptPlain(c));
      }),
      { numRuns: 8 },
    );
  });
  test('homomorphism: Dec(c₁ ⊕ c₂) = m₁ + m₂ and Dec(k ⊙ c) = k·m (mod N), negative k included', () => {
    fc.assert(
      fc.property(plaintext, plaintext, fc.bigInt({ min: -(1n << 300n), max: 1n << 300n }), (m1, m2, k) => {
        const c1 = pk.encrypt(m1, rng).c;
        const c2 = pk.encrypt(m2, rng).c;
        const mod = (a: bigint) => ((a % N) + N) % N;
        expect(key.decrypt(pk.add(c1, c2))).toBe(mod(m1 + m2));
        expect(key.decrypt(pk.mul(c1, k))).toBe(mod(k * m1));
      }),
      { numRuns: 6 },
    );
  });
  test('decryptWithNonce recovers (m, ρ) of a fresh and of a homomorphically combined ciphertext', () => {
    fc.assert(
      fc.property(plaintext, plaintext, fc.bigInt({ min: -(1n << 300n), max: 1n << 300n }), (m1, m2, k) => {
        const e1 = pk.encrypt(m1, rng);
        const e2 = pk.encrypt(m2, rng);
        expect(key.decryptWithNonce(e1.c)).toEqual({ m: m1, rho: e1.rho });
        // c = c₁^k·c₂ = Enc(k·m₁ + m₂; ρ₁^k·ρ₂)
        const c = pk.add(pk.mul(e1.c, k), e2.c);
        const { m, rho } = key.decryptWithNonce(c);
        expect(rho).toBe((modPow(e1.rho, k, N) * e2.rho) % N);
        expect(key.encryptWithNonce(m, rho)).toBe(c);
        expect(m).toBe(key.decryptSigned(c));
      }),
      { numRuns: 6 },
    );
    expect(() => key.decryptWithNonce(key.p)).toThrow(RangeError);
  });
  test('ciphertext validation: 0 < c < N², gcd(c, N) = 1', () => {
    expect(pk.isCiphertext(1n)).toBe(true);
    for (const bad of [0n, -1n, pk.N2, pk.N2 + 1n, key.p, key.q * 5n, N]) {
      expect(pk.isCiphertext(bad)).toBe(false);
      expect(() => pk.assertCiphertext(bad)).toThrow(RangeError);
    }
    expect(() => pk.assertCiphertext(5)).toThrow(TypeError);
    expect(() => key.decrypt(key.p)).toThrow(RangeError);
    expect(() => pk.encryptWithNonce(1n, key.q)).toThrow(RangeError);
    expect(() => pk.encryptWithNonce(1n, 0n)).toThrow(RangeError);
  });
  test('public key validation: odd, level size, not a square', () => {
    expect(PaillierPublicKey.fromModulus(N, L).N).toBe(N);
    expect(() => PaillierPublicKey.fromModulus(N, SECURITY_128)).toThrow(/below the 3071 bits/);
    expect(() => PaillierPublicKey.fromModulus(N + 1n, L)).toThrow(/odd/);
    expect(() => PaillierPublicKey.fromModulus((N << 3000n) + 1n, L)).toThrow(/above the 4096 bits/);
    expect(() => PaillierPublicKey.fromModulus(key.p * key.p, L)).toThrow(/square/);
    expect(() => PaillierPublicKey.fromModulus(17 as unknown as bigint, L)).toThrow(TypeError);
  });
  test('secret key validation: distinct safe primes ≡ 3 mod 4 of 4κ bits', () => {
    const [p, q] = testPrimes(L) as [bigint, bigint];
    expect(PaillierSecretKey.fromPrimes(p, q, L).N).toBe(p * q);
    expect(() => PaillierSecretKey.fromPrimes(p, p, L)).toThrow(/differ/);
    expect(() => PaillierSecretKey.fromPrimes(p, q + 2n, L)).toThrow(RangeError);
    expect(() => PaillierSecretKey.fromPrimes(p, q, SECURITY_128)).toThrow(/bits/);
    // a Blum prime that is not safe
    let r = (1n << 1023n) + 3n;
    while (!(r % 4n === 3n && modPow(2n, r - 1n, r) === 1n && modPow(2n, (r - 1n) / 2n - 1n, (r - 1n) / 2n) !== 1n))
      r += 4n;
    expect(() => PaillierSecretKey.fromPrimes(p, r, L)).toThrow(/safe prime|bits/);
  });
});
