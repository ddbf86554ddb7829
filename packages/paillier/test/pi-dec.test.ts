import { secp256k1Group as G } from '@custodian/crypto';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  type DecProof,
  decodeDecProof,
  decWitnessBound,
  proveDec,
  rangeBounds,
  type SecurityLevel,
  verifyDec,
} from '../src/index.js';
import { proveDecUnchecked } from '../src/proofs/dec.js';
import { ctx, SECURITY_112, SECURITY_128, seededRandom, tamperings, testAux, testKey } from './helpers.js';

const L = SECURITY_112;
const key = testKey(L, 0); // prover's N₀
const other = testKey(L, 2); // another party's key (the MtA senders)
const aux = testAux(L, 1); // verifier's ring-Pedersen parameters
const rng = seededRandom('pi-dec');
const c = ctx('pi-dec-session-001', 1, 2);
const b = rangeBounds(L);
const bound = decWitnessBound(L);
const GB = G.encodePoint(G.G);
const Bpt = G.mulBase(0x5eed5eedn); // another base B ≠ G
const BB = G.encodePoint(Bpt);

/** Statement and witness for y with base B (33 bytes): C = Enc_N₀(y; ρ), X = (y mod q)·B. */
function instance(y: bigint, base = GB) {
  const e = key.encrypt(y, rng);
  const X = G.encodePoint(G.mul(G.decodePoint(base, 'B'), G.mod(y)));
  return { st: { N0: key.N, C: e.c, X, B: base }, w: { y, rho: e.rho } };
}

/**
 * A homomorphic combination as presigning builds it: K = Enc(k), then C = K^γ·∏ⱼ (K^xⱼ·Enc(βⱼ)),
 * with βⱼ ∈ ±2^(ℓ'+ε) (the most a Πaff-g-checked sender can add). The prover knows neither the
 * βⱼ nor the nonces: it recovers (y, ρ) with decryptWithNonce.
 */
function combined(terms: number) {
  const pk = key.publicKey;
  const k = -0x1111222233334444n * (1n << 190n);
  const K = key.encrypt(k, rng).c;
  let Cc = pk.mul(K, 0xabcdefn);
  let expected = k * 0xabcdefn;
  for (let j = 0; j < terms; j++) {
    const x = (1n << 255n) - BigInt(j) * 977n;
    const beta = -(b.ellPrimeEps - BigInt(j) * 12345n); // all of one sign: the sum grows
    Cc = pk.add(pk.add(Cc, pk.mul(K, x)), pk.encrypt(beta, rng).c);
    expected += k * x + beta;
  }
  const { m, rho } = key.decryptWithNonce(Cc);
  expect(m).toBe(expected);
  return { st: { N0: key.N, C: Cc, X: G.encodePoint(G.mulBase(G.mod(m))), B: GB }, w: { y: m, rho } };
}

const { st, w } = instance(-(1n << 900n) + 31337n, BB);
const proof = proveDec(c, L, aux.pub, st, w, rng, { secretKey: key });

describe('Πdec (CGGMP21 App. C, Paillier decryption modulo q, group form)', () => {
  test('honest proofs verify for random y ∈ ±2^(ℓ′+ε+8), base G and another base, CRT or not', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -bound, max: bound }), fc.boolean(), (y, useG) => {
        if (G.mod(y) === 0n) return;
        const i = instance(y, useG ? GB : BB);
        expect(verifyDec(c, L, aux.owner, i.st, proveDec(c, L, aux.pub, i.st, i.w, rng))).toEqual({ ok: true });
      }),
      { numRuns: 4 },
    );
    expect(verifyDec(c, L, aux.pub, st, proof)).toEqual({ ok: true });
    expect(verifyDec(c, L, aux.owner, st, proof, { secretKey: key })).toEqual({ ok: true });
  });
  test('large y: a sum of 64 MtA terms of −2^(ℓ′+ε) each, nonce recovered by decryptWithNonce', () => {
    const i = combined(64);
    expect(-i.w.y > b.ellPrimeEps << 5n).toBe(true);
    const p = proveDec(c, L, aux.pub, i.st, i.w, rng, { secretKey: key });
    expect(verifyDec(c, L, aux.owner, i.st, p)).toEqual({ ok: true });
  });
  test('the witness bound is inclusive: y = ±2^(ℓ′+ε+8) proves and verifies; one more is refused', () => {
    for (const y of [bound, -bound]) {
      const i = instance(y);
      expect(verifyDec(c, L, aux.owner, i.st, proveDec(c, L, aux.pub, i.st, i.w, rng))).toEqual({ ok: true });
    }
    expect(() => proveDec(c, L, aux.pub, st, { ...w, y: bound + 1n }, rng)).toThrow(RangeError);
    expect(() => proveDec(c, L, aux.pub, st, { ...w, y: -bound - 1n }, rng)).toThrow(RangeError);
  });
  test('y ≢ log_B X (mod q) is rejected: X for y + 1, X on base G instead of B, B swapped', () => {
    const wrongX = { ...st, X: G.encodePoint(G.mul(Bpt, G.mod(w.y + 1n))) };
    expect(verifyDec(c, L, aux.owner, wrongX, proveDec(c, L, aux.pub, wrongX, w, rng)).ok).toBe(false);
    const onG = { ...st, X: G.encodePoint(G.mulBase(G.mod(w.y))) };
    expect(verifyDec(c, L, aux.owner, onG, proveDec(c, L, aux.pub, onG, w, rng)).ok).toBe(false);
    const swappedB = { ...st, B: GB };
    expect(verifyDec(c, L, aux.owner, swappedB, proveDec(c, L, aux.pub, swappedB, w, rng))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/z1·B ≠ Γ \+ e·X/),
    });
  });
  test('a wrong ciphertext (C of another y, or of y under another nonce the prover does not know) is rejected', () => {
    const i = instance(12345n);
    const otherC = { ...i.st, C: key.encrypt(12346n, rng).c };
    expect(verifyDec(c, L, aux.owner, otherC, proveDec(c, L, aux.pub, otherC, i.w, rng)).ok).toBe(false);
    const reRandomised = { ...i.st, C: key.encrypt(12345n, rng).c };
    expect(verifyDec(c, L, aux.owner, reRandomised, proveDec(c, L, aux.pub, reRandomised, i.w, rng)).ok).toBe(false);
  });
  test('changing any single field of the proof or statement makes it fail', () => {
    for (const [label, bad] of tamperings(proof)) expect(verifyDec(c, L, aux.owner, st, bad).ok, label).toBe(false);
    for (const [label, bad] of tamperings(st)) expect(verifyDec(c, L, aux.owner, bad, proof).ok, label).toBe(false);
  });
  test('a proof from one session, prover or to another verifier (or other aux) does not verify', () => {
    expect(verifyDec(ctx('pi-dec-session-002', 1, 2), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyDec(ctx('pi-dec-session-001', 3, 2), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyDec(ctx('pi-dec-session-001', 1, 3), L, aux.owner, st, proof).ok).toBe(false);
    expect(verifyDec(c, L, testAux(L, 3).owner, st, proof).ok).toBe(false);
  });
  test('rejects invalid points, non-units and non-bigint fields without throwing', () => {
    const id = new Uint8Array(33);
    expect(verifyDec(c, L, aux.owner, { ...st, X: id }, proof).ok).toBe(false);
    expect(verifyDec(c, L, aux.owner, { ...st, B: id }, proof).ok).toBe(false);
    expect(verifyDec(c, L, aux.owner, st, { ...proof, Gamma: proof.Gamma.slice(1) }).ok).toBe(false);
    expect(verifyDec(c, L, aux.owner, { ...st, C: key.p }, proof).ok).toBe(false);
    expect(verifyDec(c, L, aux.owner, st, { ...proof, A: key.publicKey.N2 }).ok).toBe(false);
    expect(verifyDec(c, L, aux.owner, st, { ...proof, w: key.q }).ok).toBe(false);
    expect(verifyDec(c, L, aux.owner, st, { ...proof, S: 0n }).ok).toBe(false);
    expect(verifyDec(c, L, aux.owner, st, { ...proof, z2: 1n << 5000n }).ok).toBe(false);
    expect(verifyDec(c, L, aux.owner, st, { ...proof, z1: 2 } as unknown as DecProof).ok).toBe(false);
    expect(verifyDec(c, L, aux.owner, { ...st, N0: other.p * 3n }, proof).ok).toBe(false);
  });
  test('at every level the z1 cap keeps an extracted y (|y| ≤ 2^(ℓ′+2ε+10)) below N₀/2 for the smallest accepted N₀', () => {
    for (const level of [SECURITY_112, SECURITY_128]) {
      expect(decWitnessBound(level)).toBe(1n << BigInt(level.ellPrime + level.epsilon + 8));
      // N₀ ≥ 2^(minModulusBits − 1), so N₀/2 ≥ 2^(minModulusBits − 2)
      expect(level.ellPrime + 2 * level.epsilon + 10).toBeLessThan(level.minModulusBits - 2);
    }
  });
  test('decoder checks the shape', () => {
    expect(decodeDecProof(proof)).toEqual(proof);
    expect(() => decodeDecProof({ ...proof, Gamma: proof.Gamma.slice(1) })).toThrow(RangeError);
    expect(() => decodeDecProof({ ...proof, Gamma: 'x' })).toThrow(TypeError);
    expect(() => decodeDecProof({ ...proof, w: 3 })).toThrow(TypeError);
    expect(() => decodeDecProof({ ...proof, z1: undefined })).toThrow(TypeError);
    expect(() => decodeDecProof({ ...proof, gamma: 1n })).toThrow(TypeError);
    expect(() => decodeDecProof('proof')).toThrow(TypeError);
  });
});

describe('Πdec attacks (the paper verifier has no range check on z1)', () => {
  /** A "naive" verifier: the same transcript (same level name) with ε so large that no range check bites. */
  const NO_RANGE_CHECKS: SecurityLevel = { ...L, epsilon: 5000 };
  test('y + N₀ (same ciphertext, another residue mod q): naive verifier accepts, ours rejects on z1', () => {
    const i = instance(424242n);
    const lie = i.w.y + key.N; // C = Enc(y) = Enc(y + N₀), but (y + N₀) mod q ≠ y mod q
    const forged = { ...i.st, X: G.encodePoint(G.mulBase(G.mod(lie))) };
    expect(forged.X).not.toEqual(i.st.X);
    const p = proveDecUnchecked(c, L, aux.pub, forged, { y: lie, rho: i.w.rho }, rng);
    expect(verifyDec(c, NO_RANGE_CHECKS, aux.owner, forged, p)).toEqual({ ok: true });
    expect(verifyDec(c, L, aux.owner, forged, p)).toMatchObject({ ok: false, reason: expect.stringMatching(/z1 ∉/) });
  });
  test('y − N₀ with its nonce: also rejected on z1 (both signs)', () => {
    const i = instance(-99n);
    const lie = i.w.y - key.N;
    const forged = { ...i.st, X: G.encodePoint(G.mulBase(G.mod(lie))) };
    const p = proveDecUnchecked(c, L, aux.pub, forged, { y: lie, rho: i.w.rho }, rng);
    expect(verifyDec(c, NO_RANGE_CHECKS, aux.owner, forged, p)).toEqual({ ok: true });
    expect(verifyDec(c, L, aux.owner, forged, p).ok).toBe(false);
  });
  test('y just outside the witness bound with the unchecked prover still verifies (the cap has slack 2^ε), far outside fails', () => {
    const near = instance(bound * 4n);
    const pNear = proveDecUnchecked(c, L, aux.pub, near.st, near.w, rng);
    expect(verifyDec(c, L, aux.owner, near.st, pNear)).toEqual({ ok: true });
    const far = instance(bound << BigInt(L.epsilon + 2));
    const pFar = proveDecUnchecked(c, L, aux.pub, far.st, far.w, rng);
    expect(verifyDec(c, L, aux.owner, far.st, pFar).ok).toBe(false);
  });
});
