import { secp256k1Group as G } from '@custodian/crypto';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { decodeLogStarProof, proveLogStar, rangeBounds, verifyLogStar } from '../src/index.js';
import { ctx, SECURITY_112, seededRandom, tamperings, testAux, testKey } from './helpers.js';

const L = SECURITY_112;
const key = testKey(L, 0);
const aux = testAux(L, 1);
const rng = seededRandom('pi-log-star');
const c = ctx('pi-log-session-01', 1, 2);
const ell = rangeBounds(L).ell;
const Gamma = G.mulBase(0xabcdefn);

function instance(x: bigint, base = Gamma) {
  const e = key.encrypt(x, rng);
  return {
    st: { N0: key.N, C: e.c, X: G.encodePoint(G.mul(base, G.mod(x))), B: G.encodePoint(base) },
    w: { x, rho: e.rho },
  };
}
const { st, w } = instance(-424242n);
const proof = proveLogStar(c, L, aux.pub, st, w, rng, { secretKey: key });

describe('Πlog* (CGGMP21 Fig. 25)', () => {
  test('honest proofs verify for random x ∈ ±2^ℓ, with base G and another base', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -ell, max: ell }), fc.boolean(), (x, useG) => {
        if (G.mod(x) === 0n) return;
        const i = instance(x, useG ? G.G : Gamma);
        const s = useG ? { N0: i.st.N0, C: i.st.C, X: i.st.X } : i.st;
        expect(verifyLogStar(c, L, aux.owner, s, proveLogStar(c, L, aux.pub, s, i.w, rng))).toEqual({ ok: true });
      }),
      { numRuns: 5 },
    );
    expect(verifyLogStar(c, L, aux.pub, st, proof)).toEqual({ ok: true });
  });
  test('changing any single field of the proof or statement makes it fail', () => {
    for (const [label, bad] of tamperings(proof)) expect(verifyLogStar(c, L, aux.owner, st, bad).ok, label).toBe(false);
    for (const [label, bad] of tamperings(st)) expect(verifyLogStar(c, L, aux.owner, bad, proof).ok, label).toBe(false);
  });
  test('a proof from one session, prover or to another verifier does not verify', () => {
    expect(verifyLogStar(ctx('pi-log-session-02', 1, 2), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyLogStar(ctx('pi-log-session-01', 3, 2), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyLogStar(ctx('pi-log-session-01', 1, 3), L, aux.owner, st, proof).ok).toBe(false);
  });
  test('the prover refuses x ∉ ±2^ℓ', () => {
    expect(() => proveLogStar(c, L, aux.pub, st, { ...w, x: ell + 1n }, rng)).toThrow(RangeError);
  });
  test('decoder checks the shape', () => {
    expect(decodeLogStarProof(proof)).toEqual(proof);
    expect(() => decodeLogStarProof({ ...proof, Y: 'x' })).toThrow(TypeError);
    expect(() => decodeLogStarProof({ ...proof, z3: undefined })).toThrow(TypeError);
  });
});
