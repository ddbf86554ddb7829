import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  type AffPProof,
  decodeAffPProof,
  proveAffP,
  rangeBounds,
  type SecurityLevel,
  verifyAffP,
} from '../src/index.js';
import { proveAffPUnchecked } from '../src/proofs/aff-p.js';
import { ctx, SECURITY_112, seededRandom, tamperings, testAux, testKey } from './helpers.js';

const L = SECURITY_112;
const proverKey = testKey(L, 0); // N₁ = N_i
const verifierKey = testKey(L, 2); // N₀ = N_j
const aux = testAux(L, 1); // verifier's ring-Pedersen parameters
const rng = seededRandom('pi-aff-p');
const c = ctx('pi-aff-p-session-01', 1, 2);
const b = rangeBounds(L);

/** Statement and witness: D = C^x·Enc_N₀(y; ρ), Y = Enc_N₁(y; ρ_y), X = Enc_N₁(x; ρ_x). */
function instance(x: bigint, y: bigint) {
  const pk0 = verifierKey.publicKey;
  const C = pk0.encrypt(987654321n, rng).c;
  const ey = pk0.encrypt(y, rng);
  const D = pk0.add(pk0.mul(C, x), ey.c);
  const Y = proverKey.encrypt(y, rng);
  const X = proverKey.encrypt(x, rng);
  const st = { N0: pk0.N, N1: proverKey.N, C, D, Y: Y.c, X: X.c };
  return { st, w: { x, y, rho: ey.rho, rhoX: X.rho, rhoY: Y.rho } };
}

const { st, w } = instance(31337n, -(1n << 800n) + 5n);
const proof = proveAffP(c, L, aux.pub, st, w, rng, { secretKey: proverKey });

describe('Πaff-p (CGGMP21 App. C, Paillier affine operation with Paillier commitment)', () => {
  test('honest proofs verify for random x ∈ ±2^ℓ, y ∈ ±2^ℓ′, with and without CRT on either side', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -b.ell, max: b.ell }), fc.bigInt({ min: -b.ellPrime, max: b.ellPrime }), (x, y) => {
        const i = instance(x, y);
        const p = proveAffP(c, L, aux.pub, i.st, i.w, rng);
        expect(verifyAffP(c, L, aux.owner, i.st, p, { secretKey: verifierKey })).toEqual({ ok: true });
        expect(verifyAffP(c, L, aux.pub, i.st, p)).toEqual({ ok: true });
      }),
      { numRuns: 3 },
    );
    expect(verifyAffP(c, L, aux.pub, st, proof)).toEqual({ ok: true });
    expect(verifyAffP(c, L, aux.owner, st, proof, { secretKey: verifierKey })).toEqual({ ok: true });
  });
  test('N₀ = N₁ (the role of Πmul): H = K^γ·Enc(0; ρ) with X = Enc(γ), Y = Enc(0)', () => {
    const pk = proverKey.publicKey;
    const gamma = -0x1234567890abcdefn;
    const K = pk.encrypt(0xfeedn, rng).c;
    const z = pk.encrypt(0n, rng);
    const G = pk.encrypt(gamma, rng);
    const Y = pk.encrypt(0n, rng);
    const s = { N0: pk.N, N1: pk.N, C: K, D: pk.add(pk.mul(K, gamma), z.c), Y: Y.c, X: G.c };
    const wit = { x: gamma, y: 0n, rho: z.rho, rhoX: G.rho, rhoY: Y.rho };
    const withCrt = proveAffP(c, L, aux.pub, s, wit, rng, { secretKey: proverKey });
    const plain = proveAffP(c, L, aux.pub, s, wit, rng);
    expect(verifyAffP(c, L, aux.owner, s, withCrt)).toEqual({ ok: true });
    expect(verifyAffP(c, L, aux.owner, s, plain)).toEqual({ ok: true });
    // H built with another γ than X encrypts is rejected
    const other = { ...s, D: pk.add(pk.mul(K, gamma + 1n), z.c) };
    expect(verifyAffP(c, L, aux.owner, other, proveAffP(c, L, aux.pub, other, wit, rng)).ok).toBe(false);
  });
  test('changing any single field of the proof or statement makes it fail', () => {
    for (const [label, bad] of tamperings(proof))
      expect(verifyAffP(c, L, aux.owner, st, bad, { secretKey: verifierKey }).ok, label).toBe(false);
    for (const [label, bad] of tamperings(st))
      expect(verifyAffP(c, L, aux.owner, bad, proof, { secretKey: verifierKey }).ok, label).toBe(false);
  });
  test('a wrong statement (X, Y or D of another witness) is rejected', () => {
    const other = instance(31338n, 77n);
    for (const k of ['X', 'Y', 'D'] as const) {
      const bad = { ...st, [k]: other.st[k] };
      expect(verifyAffP(c, L, aux.owner, bad, proveAffP(c, L, aux.pub, bad, w, rng)).ok, k).toBe(false);
    }
  });
  test('a proof from one session, prover or to another verifier (or other aux) does not verify', () => {
    expect(verifyAffP(ctx('pi-aff-p-session-02', 1, 2), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyAffP(ctx('pi-aff-p-session-01', 3, 2), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyAffP(ctx('pi-aff-p-session-01', 1, 3), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyAffP(c, L, testAux(L, 3).owner, st, proof).ok).toBe(false);
  });
  test('rejects ciphertexts and responses sharing a factor with N, and non-bigint fields, without throwing', () => {
    expect(verifyAffP(c, L, aux.owner, { ...st, D: verifierKey.p }, proof).ok).toBe(false);
    expect(verifyAffP(c, L, aux.owner, { ...st, X: proverKey.q }, proof).ok).toBe(false);
    expect(verifyAffP(c, L, aux.owner, st, { ...proof, wx: proverKey.p }).ok).toBe(false);
    expect(verifyAffP(c, L, aux.owner, st, { ...proof, Bx: 0n }).ok).toBe(false);
    expect(verifyAffP(c, L, aux.owner, st, { ...proof, E: aux.params.N }).ok).toBe(false);
    expect(verifyAffP(c, L, aux.owner, st, { ...proof, w: 1 } as unknown as AffPProof).ok).toBe(false);
    expect(verifyAffP(c, L, aux.owner, { ...st, N1: 15n }, proof).ok).toBe(false);
  });
  test('the prover refuses x ∉ ±2^ℓ or y ∉ ±2^ℓ′', () => {
    expect(() => proveAffP(c, L, aux.pub, st, { ...w, x: b.ell + 1n }, rng)).toThrow(RangeError);
    expect(() => proveAffP(c, L, aux.pub, st, { ...w, y: -b.ellPrime - 1n }, rng)).toThrow(RangeError);
  });
  test('decoder checks the shape', () => {
    expect(decodeAffPProof(proof)).toEqual(proof);
    expect(() => decodeAffPProof({ ...proof, wx: 3 })).toThrow(TypeError);
    expect(() => decodeAffPProof({ ...proof, wx: undefined })).toThrow(TypeError);
    expect(() => decodeAffPProof({ ...proof, extra: 1n })).toThrow(TypeError);
    expect(() => decodeAffPProof([proof])).toThrow(TypeError);
    expect(() => decodeAffPProof(null)).toThrow(TypeError);
  });
});

describe('Πaff-p attacks (Alpha-Rays: out-of-range witnesses through the unchecked prover)', () => {
  /** A "naive" verifier: the same transcript (same level name) with ε so large that no range check bites. */
  const NO_RANGE_CHECKS: SecurityLevel = { ...L, epsilon: 5000 };
  test("y outside ±2^(ℓ'+ε): naive verifier accepts, ours rejects on z2", () => {
    const i = instance(7n, -(b.ellPrimeEps << 300n));
    const forged = proveAffPUnchecked(c, L, aux.pub, i.st, i.w, rng);
    expect(verifyAffP(c, NO_RANGE_CHECKS, aux.owner, i.st, forged)).toEqual({ ok: true });
    expect(verifyAffP(c, L, aux.owner, i.st, forged)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/z2 ∉/),
    });
  });
  test('x outside ±2^(ℓ+ε): naive verifier accepts, ours rejects on z1', () => {
    const i = instance(b.ellEps << 10n, 5n);
    const forged = proveAffPUnchecked(c, L, aux.pub, i.st, i.w, rng);
    expect(verifyAffP(c, NO_RANGE_CHECKS, aux.owner, i.st, forged)).toEqual({ ok: true });
    expect(verifyAffP(c, L, aux.owner, i.st, forged)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/z1 ∉/),
    });
  });
});
