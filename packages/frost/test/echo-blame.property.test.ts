/**
 * Property (issue [blame] part 1, docs/protocols.md "Reliable broadcast with evidence"): no adversary
 * controlling fewer parties than the threshold can get an honest party named, in FROST DKG and FROST
 * signing with real Ed25519 broadcast statements. fast-check chooses the cheaters and their cheats
 * (equivocation to a subset, false echo hashes with kept / garbage / replayed signatures, dropped
 * echo signatures, garbled statement signatures, conflicting duplicates).
 */
import { adversarialRunForTest, CHEAT_KINDS, type Cheat } from '@custodian/crypto/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dkgProtocol, type KeyShare, signProtocol } from '../src/index.js';
import { dkgShares, sid } from './helpers.js';

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

describe('reliable broadcast with evidence: no honest party is named (FROST)', () => {
  it('DKG 3-of-4: at most 2 cheaters', () => {
    fc.assert(
      fc.property(arbPlan(4, 3, 3), fc.integer({ min: 0, max: 1_000_000 }), ({ cheaters, plan }, seed) => {
        const spec = () => dkgProtocol({ suite: 'ed25519', threshold: 3 });
        const label = `prop-dkg-${seed}`;
        const violations = adversarialRunForTest(spec, 4, sid(label), cheaters, plan, label);
        expect(violations, JSON.stringify({ cheaters, plan })).toEqual([]);
      }),
      { numRuns: 16, seed: 0x5eed },
    );
  });

  it('signing 3-of-4 (secp256k1): at most 2 cheaters among 3 signers', () => {
    const shares = dkgShares('secp256k1', 3, 4, 'prop-sign-keys');
    const signers = [0, 1, 3];
    const ids = signers.map((i) => (shares[i] as KeyShare).identifier);
    const message = new TextEncoder().encode('property: no honest party is named');
    fc.assert(
      fc.property(arbPlan(3, 3, 2), fc.integer({ min: 0, max: 1_000_000 }), ({ cheaters, plan }, seed) => {
        const spec = (k: number) =>
          signProtocol({ keyShare: shares[signers[k] as number] as KeyShare, signers: ids, message });
        const label = `prop-sign-${seed}`;
        const violations = adversarialRunForTest(spec, 3, sid(label), cheaters, plan, label);
        expect(violations, JSON.stringify({ cheaters, plan })).toEqual([]);
      }),
      { numRuns: 16, seed: 0x5eed },
    );
  });
});
