import {
  commit,
  secp256k1Group as g,
  interpolatePoints,
  lagrangeAtZero,
  sumCommitments,
  validateIdentifiers,
  verifyCommitment,
  vssDeal,
  vssEvaluateCommitments,
  vssVerifyShare,
} from '@custodian/crypto';
import { reconstructSecretForTest, seededRandom } from '@custodian/crypto/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const ids = (n: number) => Array.from({ length: n }, (_, i) => BigInt(i + 1));
const subsets = <T>(xs: T[], k: number): T[][] =>
  k === 0 ? [[]] : xs.flatMap((x, i) => subsets(xs.slice(i + 1), k - 1).map((s) => [x, ...s]));

describe('Feldman VSS', () => {
  it('every t-subset of shares interpolates to the secret (test-only reconstruction)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 3 }), fc.string(), (t, extra, seed) => {
        const n = t + extra;
        const rng = seededRandom(seed);
        const secret = g.randomScalar(rng);
        const d = vssDeal(g, secret, t, ids(n), rng);
        expect(d.commitments).toHaveLength(t);
        expect(d.commitments[0]?.equals(g.mulBase(secret))).toBe(true);
        const all = ids(n).map((id, k) => [id, d.shares[k] as bigint] as const);
        for (const subset of subsets(all, t)) {
          expect(
            reconstructSecretForTest(
              g,
              subset.map((s) => s[0]),
              subset.map((s) => s[1]),
            ),
          ).toBe(secret);
        }
        // t−1 shares give a different value (with overwhelming probability)
        if (t > 1) {
          const few = all.slice(0, t - 1);
          expect(
            reconstructSecretForTest(
              g,
              few.map((s) => s[0]),
              few.map((s) => s[1]),
            ),
          ).not.toBe(secret);
        }
        // every share verifies, and public images interpolate to A_0
        for (const [id, share] of all) expect(vssVerifyShare(g, d.commitments, id, share)).toBe(true);
        const pub = ids(n).map((id) => vssEvaluateCommitments(g, d.commitments, id));
        expect(interpolatePoints(g, ids(n).slice(0, t), pub.slice(0, t)).equals(d.commitments[0]!)).toBe(true);
      }),
      { numRuns: 25 },
    );
  });

  it('a tampered share or commitment fails verification', () => {
    const rng = seededRandom('tamper');
    const d = vssDeal(g, 42n, 3, ids(5), rng);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4 }), fc.bigInt({ min: 1n, max: g.order - 1n }), (k, delta) => {
        const id = BigInt(k + 1);
        const share = d.shares[k] as bigint;
        expect(vssVerifyShare(g, d.commitments, id, g.mod(share + delta))).toBe(false);
        const cs = d.commitments.map((c, i) => (i === k % 3 ? c.add(g.mulBase(delta)) : c));
        expect(vssVerifyShare(g, cs, id, share)).toBe(false);
        return true;
      }),
      { numRuns: 30 },
    );
    expect(vssVerifyShare(g, d.commitments, 1n, g.order)).toBe(false);
    expect(vssVerifyShare(g, d.commitments, 1n, -1n)).toBe(false);
    expect(vssVerifyShare(g, [], 1n, 1n)).toBe(false);
  });

  it('fewer than t shares are refused by the dealer parameters and Lagrange needs the id in the set', () => {
    const rng = seededRandom('few');
    expect(() => vssDeal(g, 1n, 4, ids(3), rng)).toThrow(RangeError);
    expect(() => vssDeal(g, 1n, 0, ids(3), rng)).toThrow(RangeError);
    expect(() => lagrangeAtZero(g, [1n, 2n], 3n)).toThrow(/not in the set/);
  });

  it('rejects duplicate, zero and ≡ 0 mod q identifiers', () => {
    expect(() => validateIdentifiers(g, [1n, 2n, 1n])).toThrow(/duplicate/);
    expect(() => validateIdentifiers(g, [1n, 1n + g.order])).toThrow(/duplicate/);
    expect(() => validateIdentifiers(g, [0n, 1n])).toThrow(/zero/);
    expect(() => validateIdentifiers(g, [g.order])).toThrow(/zero/);
    expect(() => validateIdentifiers(g, [1 as unknown as bigint])).toThrow(TypeError);
    expect(() => vssDeal(g, 1n, 2, [1n, 1n, 2n], seededRandom('d'))).toThrow(RangeError);
  });

  it('zero-constant dealings (refresh) keep the secret when added', () => {
    const rng = seededRandom('refresh');
    const base = vssDeal(g, 77n, 2, ids(3), rng);
    const zero = vssDeal(g, 0n, 2, ids(3), rng);
    expect(zero.commitments[0]?.is0()).toBe(true);
    const refreshed = base.shares.map((s, k) => g.mod(s + (zero.shares[k] as bigint)));
    expect(refreshed).not.toEqual(base.shares);
    expect(reconstructSecretForTest(g, [1n, 3n], [refreshed[0]!, refreshed[2]!])).toBe(77n);
    const sum = sumCommitments(g, [base.commitments, zero.commitments]);
    expect(vssVerifyShare(g, sum, 2n, refreshed[1]!)).toBe(true);
    expect(() => sumCommitments(g, [base.commitments, zero.commitments.slice(1)])).toThrow(RangeError);
  });
});

describe('hash commitments', () => {
  const ctx = { tag: 'custodian.test.commit', sessionId: new Uint8Array(16).fill(2), committer: 3 };
  it('open correctly and bind value, tag, session and committer', () => {
    const rng = seededRandom('commit');
    const { commitment, randomness } = commit(ctx, ['value', 5n], rng);
    expect(verifyCommitment(ctx, commitment, ['value', 5n], randomness)).toBe(true);
    expect(verifyCommitment(ctx, commitment, ['value', 6n], randomness)).toBe(false);
    expect(verifyCommitment({ ...ctx, committer: 4 }, commitment, ['value', 5n], randomness)).toBe(false);
    expect(verifyCommitment({ ...ctx, tag: 'x' }, commitment, ['value', 5n], randomness)).toBe(false);
    expect(verifyCommitment({ ...ctx, sessionId: new Uint8Array(16) }, commitment, ['value', 5n], randomness)).toBe(
      false,
    );
    const r2 = Uint8Array.from(randomness);
    r2[0] = (r2[0] as number) ^ 1;
    expect(verifyCommitment(ctx, commitment, ['value', 5n], r2)).toBe(false);
    expect(() => verifyCommitment(ctx, commitment.subarray(1), ['value', 5n], randomness)).toThrow(RangeError);
  });
});
