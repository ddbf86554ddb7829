/**
 * Property (issue [blame] part 1): no adversary below the threshold gets an honest party named in
 * CGGMP21 auxiliary info and key refresh (TEST-ONLY safe-prime fixtures, primality not re-checked),
 * with real Ed25519 broadcast statements. Slow project: each run proves Πmod/Πfac/Πprm.
 */
import { adversarialRunForTest, CHEAT_KINDS, type Cheat } from '@custodian/crypto/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { auxInfoProtocol, type KeyShare, refreshProtocol } from '../src/index.js';
import { fixtureShares, SECURITY_112, sid, testPrimes } from './helpers.js';

/** Cheaters (a non-empty set of size < t) and a plan of cheats on honest receivers. */
function arbPlan(n: number, t: number, rounds: number) {
  return fc.uniqueArray(fc.integer({ min: 0, max: n - 1 }), { minLength: 1, maxLength: t - 1 }).chain((cheaters) =>
    fc
      .array(
        fc.record({
          cheater: fc.constantFrom(...cheaters),
          round: fc.integer({ min: 0, max: rounds }),
          kind: fc.constantFrom(...CHEAT_KINDS),
          receivers: fc.integer({ min: 1, max: (1 << n) - 1 }),
          about: fc.integer({ min: 0, max: n - 1 }),
        }),
        { minLength: 1, maxLength: 3 },
      )
      .map((plan) => {
        const honestMask = [...Array(n).keys()].filter((i) => !cheaters.includes(i)).reduce((m, i) => m | (1 << i), 0);
        return { cheaters, plan: plan.map((c): Cheat => ({ ...c, receivers: c.receivers & honestMask })) };
      }),
  );
}

describe('reliable broadcast with evidence: no honest party is named (CGGMP21 aux info, refresh)', () => {
  it('aux info among 3: one cheater', { timeout: 600_000 }, () => {
    const spec = (i: number) =>
      auxInfoProtocol({ level: SECURITY_112, primes: testPrimes(SECURITY_112, i), checkPrimality: false });
    fc.assert(
      fc.property(
        arbPlan(3, 2, spec(0).rounds.length),
        fc.integer({ min: 0, max: 1_000_000 }),
        ({ cheaters, plan }, seed) => {
          const label = `prop-cggmp-aux-${seed}`;
          const violations = adversarialRunForTest(spec, 3, sid(label), cheaters, plan, label);
          expect(violations, JSON.stringify({ cheaters, plan })).toEqual([]);
        },
      ),
      { numRuns: 3, seed: 0x5eed },
    );
  });

  it('refresh 2-of-3: one cheater', { timeout: 600_000 }, () => {
    const shares = fixtureShares('2of3');
    const spec = (i: number) =>
      refreshProtocol({ share: shares[i] as KeyShare, primes: testPrimes(SECURITY_112, i + 3), checkPrimality: false });
    fc.assert(
      fc.property(
        arbPlan(3, 2, spec(0).rounds.length),
        fc.integer({ min: 0, max: 1_000_000 }),
        ({ cheaters, plan }, seed) => {
          const label = `prop-cggmp-refresh-${seed}`;
          const violations = adversarialRunForTest(spec, 3, sid(label), cheaters, plan, label);
          expect(violations, JSON.stringify({ cheaters, plan })).toEqual([]);
        },
      ),
      { numRuns: 3, seed: 0x5eed },
    );
  });
});
