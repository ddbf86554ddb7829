import { secp256k1Group as G } from '@custodian/crypto';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { decodeAffGProof, proveAffG, rangeBounds, verifyAffG } from '../src/index.js';
import { ctx, SECURITY_112, seededRandom, tamperings, testAux, testKey } from './helpers.js';

const L = SECURITY_112;
const proverKey = testKey(L, 0); // N₁ = N_i
const verifierKey = testKey(L, 2); // N₀ = N_j
const aux = testAux(L, 1); // verifier's ring-Pedersen parameters
const rng = seededRandom('pi-aff-g');
const c = ctx('pi-aff-g-session-01', 1, 2);
const b = rangeBounds(L);

function instance(x: bigint, y: bigint) {
  const pk0 = verifierKey.publicKey;
  const C = pk0.encrypt(987654321n, rng).c;
  const ey = pk0.encrypt(y, rng);
  const D = pk0.add(pk0.mul(C, x), ey.c);
  const Y = proverKey.encrypt(y, rng);
  const st = { N0: pk0.N, N1: proverKey.N, C, D, Y: Y.c, X: G.encodePoint(G.mulBase(G.mod(x))) };
  return { st, w: { x, y, rho: ey.rho, rhoY: Y.rho } };
}

const { st, w } = instance(31337n, -(1n << 800n) + 5n);
const proof = proveAffG(c, L, aux.pub, st, w, rng, { secretKey: proverKey });

describe('Πaff-g (CGGMP21 Fig. 15)', () => {
  test('honest proofs verify for random x ∈ ±2^ℓ, y ∈ ±2^ℓ′', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -b.ell, max: b.ell }), fc.bigInt({ min: -b.ellPrime, max: b.ellPrime }), (x, y) => {
        if (G.mod(x) === 0n) return;
        const i = instance(x, y);
        const p = proveAffG(c, L, aux.pub, i.st, i.w, rng);
        expect(verifyAffG(c, L, aux.owner, i.st, p, { secretKey: verifierKey })).toEqual({ ok: true });
      }),
      { numRuns: 4 },
    );
    expect(verifyAffG(c, L, aux.pub, st, proof)).toEqual({ ok: true });
  });
  test('changing any single field of the proof or statement makes it fail', () => {
    for (const [label, bad] of tamperings(proof))
      expect(verifyAffG(c, L, aux.owner, st, bad, { secretKey: verifierKey }).ok, label).toBe(false);
    for (const [label, bad] of tamperings(st))
      expect(verifyAffG(c, L, aux.owner, bad, proof, { secretKey: verifierKey }).ok, label).toBe(false);
  });
  test('a proof from one session, prover or to another verifier does not verify', () => {
    expect(verifyAffG(ctx('pi-aff-g-session-02', 1, 2), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyAffG(ctx('pi-aff-g-session-01', 3, 2), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyAffG(ctx('pi-aff-g-session-01', 1, 3), L, aux.owner, st, proof).ok).toBe(false);
  });
  test('rejects invalid points and ciphertexts sharing a factor with N', () => {
    expect(verifyAffG(c, L, aux.owner, { ...st, X: new Uint8Array(33) }, proof).ok).toBe(false);
    expect(verifyAffG(c, L, aux.owner, st, { ...proof, Bx: new Uint8Array(32) }).ok).toBe(false);
    expect(verifyAffG(c, L, aux.owner, { ...st, D: verifierKey.p }, proof).ok).toBe(false);
    expect(verifyAffG(c, L, aux.owner, { ...st, Y: proverKey.q }, proof).ok).toBe(false);
  });
  test('the prover refuses x ∉ ±2^ℓ or y ∉ ±2^ℓ′', () => {
    expect(() => proveAffG(c, L, aux.pub, st, { ...w, x: b.ell + 1n }, rng)).toThrow(RangeError);
    expect(() => proveAffG(c, L, aux.pub, st, { ...w, y: -b.ellPrime - 1n }, rng)).toThrow(RangeError);
  });
  test('decoder checks the shape', () => {
    expect(decodeAffGProof(proof)).toEqual(proof);
    expect(() => decodeAffGProof({ ...proof, Bx: proof.Bx.slice(1) })).toThrow(RangeError);
    expect(() => decodeAffGProof({ ...proof, w: 3 })).toThrow(TypeError);
  });
});
