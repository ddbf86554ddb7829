import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { decodePrmProof, provePrm, verifyPrm } from '../src/index.js';
import { ctx, SECURITY_112, seededRandom, tamperings, testAux } from './helpers.js';

const L = SECURITY_112;
const aux = testAux(L, 1);
const st = aux.params;
const c = ctx('pi-prm-session-01', 1, null);
const proof = provePrm(c, L, st, aux.secret, seededRandom('pi-prm'));

describe('Πprm (CGGMP21 Fig. 17)', () => {
  test('honest proofs verify for random prover randomness', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 8, maxLength: 8 }), (seed) => {
        expect(verifyPrm(c, L, st, provePrm(c, L, st, aux.secret, seededRandom(seed)))).toEqual({ ok: true });
      }),
      { numRuns: 2 },
    );
  });
  test('changing any single field of the proof or statement makes it fail', () => {
    for (const [label, bad] of tamperings(proof)) expect(verifyPrm(c, L, st, bad).ok, label).toBe(false);
    for (const [label, bad] of tamperings(st)) expect(verifyPrm(c, L, bad, proof).ok, label).toBe(false);
  });
  test('a proof from one session or prover does not verify in another', () => {
    expect(verifyPrm(ctx('pi-prm-session-02', 1, null), L, st, proof).ok).toBe(false);
    expect(verifyPrm(ctx('pi-prm-session-01', 2, null), L, st, proof).ok).toBe(false);
  });
  test('rejects s = t, s or t ∈ {0, 1, N̂−1} or not units before any math', () => {
    const { N, s, t } = st;
    for (const bad of [
      { N, s: t, t },
      { N, s: 1n, t },
      { N, s: 0n, t },
      { N, s: N - 1n, t },
      { N, s, t: N - 1n },
      { N, s: aux.key.p, t },
      { N, s, t: N + 4n },
      { N: N + 1n, s, t },
    ]) {
      expect(verifyPrm(c, L, bad, proof).ok).toBe(false);
    }
  });
  test('the prover refuses a secret that does not match', () => {
    expect(() => provePrm(c, L, st, { ...aux.secret, lambda: aux.secret.lambda + 1n })).toThrow(RangeError);
  });
  test('decoder checks the shape', () => {
    expect(decodePrmProof(proof, L)).toEqual(proof);
    expect(() => decodePrmProof({ A: proof.A, z: proof.z.slice(0, 10) }, L)).toThrow(RangeError);
    expect(() => decodePrmProof({ A: proof.A.map(String), z: proof.z }, L)).toThrow(TypeError);
    expect(() => decodePrmProof({ A: proof.A }, L)).toThrow(TypeError);
  });
});
