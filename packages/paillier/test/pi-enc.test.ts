import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { decodeEncProof, proveEnc, rangeBounds, verifyEnc } from '../src/index.js';
import { ctx, SECURITY_112, seededRandom, tamperings, testAux, testKey } from './helpers.js';

const L = SECURITY_112;
const key = testKey(L, 0);
const aux = testAux(L, 1);
const rng = seededRandom('pi-enc');
const c = ctx('pi-enc-session-01', 1, 2);
const k = 123456789n;
const enc = key.encrypt(k, rng);
const st = { N0: key.N, K: enc.c };
const proof = proveEnc(c, L, aux.pub, st, { k, rho: enc.rho }, rng, { secretKey: key });
const ell = rangeBounds(L).ell;

describe('Πenc (CGGMP21 Fig. 14)', () => {
  test('honest proofs verify for random k ∈ ±2^ℓ', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -ell, max: ell }), (k) => {
        const e = key.publicKey.encrypt(k, rng);
        const s = { N0: key.N, K: e.c };
        const p = proveEnc(c, L, aux.pub, s, { k, rho: e.rho }, rng);
        expect(verifyEnc(c, L, aux.owner, s, p)).toEqual({ ok: true });
      }),
      { numRuns: 5 },
    );
    expect(verifyEnc(c, L, aux.pub, st, proof)).toEqual({ ok: true });
  });
  test('changing any single field of the proof or statement makes it fail', () => {
    for (const [label, bad] of tamperings(proof)) expect(verifyEnc(c, L, aux.owner, st, bad).ok, label).toBe(false);
    for (const [label, bad] of tamperings(st)) expect(verifyEnc(c, L, aux.owner, bad, proof).ok, label).toBe(false);
  });
  test('a proof from one session, prover or to another verifier does not verify', () => {
    expect(verifyEnc(ctx('pi-enc-session-02', 1, 2), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyEnc(ctx('pi-enc-session-01', 3, 2), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyEnc(ctx('pi-enc-session-01', 1, 3), L, aux.owner, st, proof).ok).toBe(false);
  });
  test('rejects ciphertexts with gcd(K, N) ≠ 1 and out-of-range values before any math', () => {
    expect(verifyEnc(c, L, aux.owner, { ...st, K: key.p }, proof)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/K/),
    });
    expect(verifyEnc(c, L, aux.owner, { ...st, K: 0n }, proof).ok).toBe(false);
    expect(verifyEnc(c, L, aux.owner, st, { ...proof, z2: 0n }).ok).toBe(false);
    expect(verifyEnc(c, L, aux.owner, st, { ...proof, S: 1n * aux.key.p }).ok).toBe(false);
  });
  test('the prover refuses k outside ±2^ℓ', () => {
    expect(() => proveEnc(c, L, aux.pub, st, { k: ell + 1n, rho: enc.rho }, rng)).toThrow(RangeError);
  });
  test('decoder checks the shape', () => {
    expect(decodeEncProof(proof)).toEqual(proof);
    expect(() => decodeEncProof({ ...proof, z1: '5' })).toThrow(TypeError);
    expect(() => decodeEncProof([proof])).toThrow(TypeError);
  });
});
