/**
 * Property (issue [blame] part 1, docs/protocols.md "Reliable broadcast with evidence"): no adversary
 * controlling fewer parties than the threshold can get an honest party named, in CGGMP21 key
 * generation and presigning (TEST-ONLY fixture shares) with real Ed25519 broadcast statements.
 * fast-check chooses the cheaters and their cheats (packages/crypto testing-adversary.ts). Aux info
 * and refresh (Paillier moduli, slower) are in echo-blame.property.slow.test.ts.
 */
import { adversarialRunForTest, CHEAT_KINDS, type Cheat } from '@custodian/crypto/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type KeyShare, keygenProtocol, presignProtocol } from '../src/index.js';
import { fixtureShares, sid } from './helpers.js';

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

describe('reliable broadcast with evidence: no honest party is named (CGGMP21)', () => {
  it('key generation 3-of-4: at most 2 cheaters', () => {
    const rounds = keygenProtocol({ t: 3 }).rounds.length;
    fc.assert(
      fc.property(arbPlan(4, 3, rounds), fc.integer({ min: 0, max: 1_000_000 }), ({ cheaters, plan }, seed) => {
        const label = `prop-cggmp-keygen-${seed}`;
        const violations = adversarialRunForTest(() => keygenProtocol({ t: 3 }), 4, sid(label), cheaters, plan, label);
        expect(violations, JSON.stringify({ cheaters, plan })).toEqual([]);
      }),
      { numRuns: 10, seed: 0x5eed },
    );
  });

  it('presigning 3-of-5 with 3 signers: at most 2 cheaters', () => {
    const shares = fixtureShares('3of5');
    const signers = [0, 2, 4];
    const spec = (k: number) => presignProtocol({ share: shares[signers[k] as number] as KeyShare, signers });
    const rounds = spec(0).rounds.length;
    fc.assert(
      fc.property(arbPlan(3, 3, rounds), fc.integer({ min: 0, max: 1_000_000 }), ({ cheaters, plan }, seed) => {
        const label = `prop-cggmp-presign-${seed}`;
        const violations = adversarialRunForTest(spec, 3, sid(label), cheaters, plan, label);
        expect(violations, JSON.stringify({ cheaters, plan })).toEqual([]);
      }),
      { numRuns: 5, seed: 0x5eed },
    );
  });
});
