import {
  ed25519Group,
  schCommit,
  schProve,
  schProveFresh,
  schVerify,
  secp256k1Group,
  Transcript,
} from '@custodian/crypto';
import { seededRandom } from '@custodian/crypto/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const sid = new Uint8Array(32).fill(5);
const transcript = (sessionId = sid, prover = 1n) =>
  Transcript.create('custodian.test.sch', { sessionId, parties: [1n, 2n, 3n], round: 'r1' }).append('prover', prover);

describe.each([secp256k1Group, ed25519Group] as const)('Πsch on $name', (group) => {
  // biome-ignore lint/suspicious/noExplicitAny: generic over both groups
  const g = group as any;
  const rng = seededRandom(`sch-${group.name}`);

  it('honest proofs verify', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: group.order - 1n }), (x) => {
        const X = g.mulBase(x);
        return schVerify(g, transcript(), X, schProveFresh(g, transcript(), X, x, rng));
      }),
      { numRuns: 20 },
    );
  });

  it('every tampered field fails: A, z, X, session, prover', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: group.order - 1n }),
        fc.bigInt({ min: 1n, max: group.order - 1n }),
        (x, d) => {
          const X = g.mulBase(x);
          const proof = schProveFresh(g, transcript(), X, x, rng);
          expect(schVerify(g, transcript(), X, { ...proof, z: g.mod(proof.z + d) })).toBe(false);
          expect(schVerify(g, transcript(), X, { ...proof, A: proof.A.add(g.mulBase(d)) })).toBe(false);
          expect(schVerify(g, transcript(), X.add(g.mulBase(d)), proof)).toBe(false);
          expect(schVerify(g, transcript(new Uint8Array(32).fill(6)), X, proof)).toBe(false);
          expect(schVerify(g, transcript(sid, 2n), X, proof)).toBe(false);
          return true;
        },
      ),
      { numRuns: 15 },
    );
  });

  it('attack inputs are rejected: identity X or A, z ≥ q, z negative', () => {
    const x = 12345n;
    const X = g.mulBase(x);
    const proof = schProveFresh(g, transcript(), X, x, rng);
    expect(schVerify(g, transcript(), g.identity, proof)).toBe(false);
    expect(schVerify(g, transcript(), X, { ...proof, A: g.identity })).toBe(false);
    expect(schVerify(g, transcript(), X, { ...proof, z: proof.z + group.order })).toBe(false);
    expect(schVerify(g, transcript(), X, { ...proof, z: -1n })).toBe(false);
    expect(schVerify(g, transcript(), X, { ...proof, z: 0n })).toBe(false);
  });

  it('the committed-in-advance form matches and the prover checks its witness', () => {
    const x = 999n;
    const X = g.mulBase(x);
    const c = schCommit(g, rng);
    expect(schVerify(g, transcript(), X, schProve(g, transcript(), X, x, c))).toBe(true);
    expect(() => schProve(g, transcript(), X, x + 1n, c)).toThrow(RangeError);
    expect(() => schProve(g, transcript(), X, 0n, c)).toThrow(RangeError);
  });
});
