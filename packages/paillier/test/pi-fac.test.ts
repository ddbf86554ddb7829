import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { decodeFacProof, proveFac, verifyFac } from '../src/index.js';
import { ctx, SECURITY_112, seededRandom, tamperings, testAux, testKey } from './helpers.js';

const L = SECURITY_112;
const key = testKey(L, 0);
const aux = testAux(L, 1);
const st = { N: key.N };
const c = ctx('pi-fac-session-01', 1, 2);
const proof = proveFac(c, L, aux.pub, st, key, seededRandom('pi-fac'));

describe('Πfac (CGGMP21 Fig. 28)', () => {
  test('honest proofs verify (verifier with and without its CRT secret)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 8, maxLength: 8 }), (seed) => {
        const p = proveFac(c, L, aux.pub, st, key, seededRandom(seed));
        expect(verifyFac(c, L, aux.owner, st, p)).toEqual({ ok: true });
      }),
      { numRuns: 5 },
    );
    expect(verifyFac(c, L, aux.pub, st, proof)).toEqual({ ok: true });
  });
  test('changing any single field of the proof or statement makes it fail', () => {
    for (const [label, bad] of tamperings(proof)) expect(verifyFac(c, L, aux.owner, st, bad).ok, label).toBe(false);
    expect(verifyFac(c, L, aux.owner, { N: st.N + 2n }, proof).ok).toBe(false);
    expect(verifyFac(c, L, testAux(L, 2).owner, st, proof).ok).toBe(false);
  });
  test('a proof from one session, prover or to another verifier does not verify', () => {
    expect(verifyFac(ctx('pi-fac-session-02', 1, 2), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyFac(ctx('pi-fac-session-01', 3, 2), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyFac(ctx('pi-fac-session-01', 1, 3), L, aux.owner, st, proof).ok).toBe(false);
  });
  test('decoder checks the shape', () => {
    expect(decodeFacProof(proof)).toEqual(proof);
    expect(() => decodeFacProof({ ...proof, v: 1 })).toThrow(TypeError);
    const { v: _v, ...missing } = proof;
    expect(() => decodeFacProof(missing)).toThrow(TypeError);
  });
});
