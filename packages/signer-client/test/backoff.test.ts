/**
 * The reconnect backoff (backoff.ts): capped exponential base, equal jitter in [base/2, base],
 * reset after a connection that lived.
 */
import { describe, expect, it } from 'vitest';
import { Backoff, backoffDelay } from '../src/backoff.js';

describe('capped exponential backoff with equal jitter', () => {
  it('doubles the base from initialMs up to maxMs; the jitter spans [base/2, base]', () => {
    const opts = { initialMs: 500, maxMs: 30_000 };
    const low = (k: number) => backoffDelay(k, { ...opts, random: () => 0 });
    const high = (k: number) => backoffDelay(k, { ...opts, random: () => 0.999999 });
    expect([1, 2, 3, 4, 5, 6, 7, 8, 100].map(low)).toEqual([250, 500, 1000, 2000, 4000, 8000, 15_000, 15_000, 15_000]);
    expect([1, 2, 3, 7, 100].map(high)).toEqual([500, 1000, 2000, 30_000, 30_000]);
  });

  it('counts attempts, and starts again from the first delay after reset', () => {
    const b = new Backoff({ initialMs: 100, maxMs: 400, random: () => 0 });
    expect([b.next(), b.next(), b.next(), b.next()]).toEqual([
      { attempt: 1, delayMs: 50 },
      { attempt: 2, delayMs: 100 },
      { attempt: 3, delayMs: 200 },
      { attempt: 4, delayMs: 200 },
    ]);
    b.reset();
    expect(b.attempt).toBe(0);
    expect(b.next()).toEqual({ attempt: 1, delayMs: 50 });
  });

  it('refuses nonsense parameters', () => {
    expect(() => backoffDelay(0, { initialMs: 1, maxMs: 2 })).toThrow(RangeError);
    expect(() => new Backoff({ initialMs: 0, maxMs: 2 })).toThrow(RangeError);
    expect(() => new Backoff({ initialMs: 10, maxMs: 5 })).toThrow(RangeError);
  });
});
