import { describe, expect, test } from 'vitest';
import { generatePaillierKey, isSafePrime, PrimePool, type PrimePoolProgress } from '../src/index.js';
import { SECURITY_112, SECURITY_128, testPrimes } from './helpers.js';

describe('safe primes', () => {
  test('the committed test-only fixtures are safe primes of 1024 and 1536 bits', () => {
    for (const level of [SECURITY_112, SECURITY_128]) {
      const ps = testPrimes(level);
      expect(ps.length).toBeGreaterThanOrEqual(8);
      expect(new Set(ps).size).toBe(ps.length);
      for (const p of ps.slice(0, 3)) {
        expect(p.toString(2).length).toBe(4 * level.kappa);
        expect(isSafePrime(p)).toBe(true);
      }
    }
  });
  test('isSafePrime rejects primes that are not safe, composites and ≡ 1 mod 4', () => {
    expect(isSafePrime(23n)).toBe(true); // 23 = 2·11 + 1
    expect(isSafePrime(31n)).toBe(false); // 15 is composite
    expect(isSafePrime(35n)).toBe(false);
    expect(isSafePrime(13n)).toBe(false);
  });
});

describe('PrimePool', () => {
  test('a worker thread fills the pool with real safe primes, reporting progress; take never repeats', async () => {
    const events: PrimePoolProgress[] = [];
    const pool = new PrimePool({ bits: 256, target: 3, onProgress: (e) => events.push(e) });
    pool.start();
    const taken = [await pool.take(), await pool.take(), await pool.take(), await pool.take()];
    await pool.stop();
    expect(new Set(taken).size).toBe(4);
    for (const p of taken) {
      expect(p.toString(2).length).toBe(256);
      expect(isSafePrime(p)).toBe(true);
    }
    expect(events.length).toBeGreaterThan(0);
    expect(events.some((e) => e.generated >= 1 && e.bits === 256 && e.target === 3)).toBe(true);
    expect(pool.running).toBe(false);
  }, 60_000);
  test('stop() terminates the worker and rejects pending take() calls', async () => {
    const pool = new PrimePool({ bits: 4096, target: 1 });
    const pending = expect(pool.take()).rejects.toThrow(/stopped/);
    expect(pool.running).toBe(true);
    await pool.stop();
    await pending;
    expect(pool.running).toBe(false);
  });
  test('snapshot/restore round-trips and re-validates every prime', () => {
    const ps = testPrimes(SECURITY_112).slice(0, 4);
    const snap = { version: 1 as const, bits: 1024, primes: ps.map((p) => p.toString(16)) };
    const pool = PrimePool.restore(snap, { target: 4 });
    expect(pool.available).toBe(4);
    expect(pool.snapshot()).toEqual(snap);
    expect(() => PrimePool.restore({ ...snap, primes: [snap.primes[0], snap.primes[0]] }, { target: 4 })).toThrow(
      /duplicated/,
    );
    expect(() =>
      PrimePool.restore({ ...snap, primes: [(ps[0] as bigint) + 2n].map((p) => p.toString(16)) }, { target: 4 }),
    ).toThrow(/not a safe prime/);
    expect(() => PrimePool.restore({ ...snap, primes: ['zz'] }, { target: 4 })).toThrow(TypeError);
    expect(() => PrimePool.restore({ ...snap, bits: 1536 }, { target: 4 })).toThrow(/wrong size/);
    expect(() => PrimePool.restore(null, { target: 4 })).toThrow(TypeError);
  });
  test('generatePaillierKey takes its primes from the pool (and refuses a pool of the wrong size)', async () => {
    const ps = testPrimes(SECURITY_112).slice(0, 2);
    const pool = PrimePool.restore({ version: 1, bits: 1024, primes: ps.map((p) => p.toString(16)) }, { target: 2 });
    const key = await generatePaillierKey(SECURITY_112, { primePool: pool });
    expect(key.N).toBe((ps[0] as bigint) * (ps[1] as bigint));
    expect(pool.available).toBe(0);
    await expect(generatePaillierKey(SECURITY_128, { primePool: pool })).rejects.toThrow(RangeError);
  });
});
