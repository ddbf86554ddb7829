import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { decodeModProof, proveMod, verifyMod } from '../src/index.js';
import { ctx, SECURITY_112, seededRandom, tamperings, testKey } from './helpers.js';

const L = SECURITY_112;
const key = testKey(L, 0);
const st = { N: key.N };
const c = ctx('pi-mod-session-01', 1, null);
const proof = proveMod(c, L, st, key, seededRandom('pi-mod'));

describe('Πmod (CGGMP21 Fig. 16)', () => {
  test('honest proofs verify for random prover randomness', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 8, maxLength: 8 }), (seed) => {
        const p = proveMod(c, L, st, key, seededRandom(seed));
        expect(verifyMod(c, L, st, p)).toEqual({ ok: true });
      }),
      { numRuns: 2 },
    );
    expect(verifyMod(c, L, st, proof)).toEqual({ ok: true });
  });
  test('changing any single field of the proof makes it fail', () => {
    for (const [label, bad] of tamperings(proof)) expect(verifyMod(c, L, st, bad).ok, label).toBe(false);
  });
  test('changing the statement makes it fail', () => {
    expect(verifyMod(c, L, { N: key.N + 2n }, proof).ok).toBe(false);
    expect(verifyMod(c, L, { N: testKey(L, 1).N }, proof).ok).toBe(false);
  });
  test('a proof from one session or prover does not verify in another', () => {
    expect(verifyMod(ctx('pi-mod-session-02', 1, null), L, st, proof).ok).toBe(false);
    expect(verifyMod(ctx('pi-mod-session-01', 3, null), L, st, proof).ok).toBe(false);
  });
  test('witness mismatch is refused by the prover', () => {
    expect(() => proveMod(c, L, st, { p: key.p, q: key.p })).toThrow(RangeError);
  });
  test('decoder checks the shape: record keys, bigint/boolean types, exactly m entries', () => {
    expect(decodeModProof(proof, L)).toEqual(proof);
    expect(() => decodeModProof({ ...proof, x: proof.x.slice(1) }, L)).toThrow(RangeError);
    expect(() => decodeModProof({ ...proof, a: proof.a.map(() => 1) }, L)).toThrow(TypeError);
    expect(() => decodeModProof({ ...proof, w: 5 }, L)).toThrow(TypeError);
    expect(() => decodeModProof({ ...proof, extra: 1n }, L)).toThrow(TypeError);
    expect(() => decodeModProof(null, L)).toThrow(TypeError);
  });
});
