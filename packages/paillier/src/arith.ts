/**
 * Integer helpers for the Paillier machinery: gcd, Jacobi symbol, integer square root, modular
 * reduction and uniform sampling from ranges (rejection sampling over a {@link RandomSource}).
 */
import { bitLength, bytesToBigint, invertMod, type RandomSource } from '@custodian/crypto';

export { invertMod };

/** a mod m in [0, m). */
export function mod(a: bigint, m: bigint): bigint {
  const r = a % m;
  return r >= 0n ? r : r + m;
}

/** |a| */
export function abs(a: bigint): bigint {
  return a < 0n ? -a : a;
}

/** Greatest common divisor of |a| and |b| (Euclid). gcd(0, 0) = 0. */
export function gcd(a: bigint, b: bigint): bigint {
  a = abs(a);
  b = abs(b);
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

/**
 * Jacobi symbol (a/n) for odd n > 0: 1, −1, or 0 when gcd(a, n) ≠ 1.
 * @throws RangeError when n is even or not positive
 */
export function jacobi(a: bigint, n: bigint): -1 | 0 | 1 {
  if (n <= 0n || (n & 1n) === 0n) throw new RangeError('jacobi: n must be odd and positive');
  a = mod(a, n);
  let result: -1 | 1 = 1;
  while (a !== 0n) {
    while ((a & 1n) === 0n) {
      a >>= 1n;
      const r = n & 7n;
      if (r === 3n || r === 5n) result = result === 1 ? -1 : 1;
    }
    [a, n] = [n, a];
    if ((a & 3n) === 3n && (n & 3n) === 3n) result = result === 1 ? -1 : 1;
    a %= n;
  }
  return n === 1n ? result : 0;
}

/** ⌊√n⌋ for n ≥ 0 (Newton). @throws RangeError for negative n */
export function isqrt(n: bigint): bigint {
  if (n < 0n) throw new RangeError('isqrt: negative');
  if (n < 2n) return n;
  let x = 1n << BigInt(Math.ceil(bitLength(n) / 2));
  for (;;) {
    const y = (x + n / x) >> 1n;
    if (y >= x) return x;
    x = y;
  }
}

/** Uniform integer in [0, bound) from `rng` by rejection sampling. @throws RangeError if bound ≤ 0 */
export function randomBelow(rng: RandomSource, bound: bigint): bigint {
  if (bound <= 0n) throw new RangeError('randomBelow: bound must be positive');
  const bits = bitLength(bound - 1n) || 1;
  const bytes = Math.ceil(bits / 8);
  const mask = (1n << BigInt(bits)) - 1n;
  for (;;) {
    const v = bytesToBigint(rng(bytes)) & mask;
    if (v < bound) return v;
  }
}

/** Uniform integer in the signed range ±bound = [−bound, bound]. */
export function randomSigned(rng: RandomSource, bound: bigint): bigint {
  return randomBelow(rng, 2n * bound + 1n) - bound;
}

/** Uniform unit of Z*_n (n > 1): samples [1, n) until gcd(x, n) = 1. */
export function randomUnit(rng: RandomSource, n: bigint): bigint {
  if (n <= 1n) throw new RangeError('randomUnit: modulus must exceed 1');
  for (;;) {
    const x = randomBelow(rng, n);
    if (x !== 0n && gcd(x, n) === 1n) return x;
  }
}

/** Is x in the signed range ±bound (inclusive)? Non-bigints are not. */
export function inSigned(x: unknown, bound: bigint): x is bigint {
  return typeof x === 'bigint' && x >= -bound && x <= bound;
}

/** Is x a unit of Z_n, i.e. 0 < x < n and gcd(x, n) = 1? */
export function isUnit(x: unknown, n: bigint): x is bigint {
  return typeof x === 'bigint' && x > 0n && x < n && gcd(x, n) === 1n;
}

/**
 * Are all `values` units of Z_n? Range-checks each (0 < v < n) and then runs ONE gcd on their
 * product modulo n: gcd(∏ v mod n, n) = 1 iff every v is coprime to n.
 */
export function allUnits(values: readonly unknown[], n: bigint): boolean {
  let acc = 1n;
  for (const v of values) {
    if (typeof v !== 'bigint' || v <= 0n || v >= n) return false;
    acc = (acc * v) % n;
  }
  return gcd(acc, n) === 1n;
}
