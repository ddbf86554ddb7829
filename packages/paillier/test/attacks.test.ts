/**
 * Attack regressions (STYLE.md item 7): each case builds what a known attack sends, shows that a
 * naive verifier (the paper's equations with one of our checks missing) accepts it, and that ours
 * rejects it.
 */
import { generatePrimeSync } from 'node:crypto';
import { secp256k1Group as G } from '@custodian/crypto';
import { describe, expect, test } from 'vitest';
import { gcd, invertMod, jacobi, mod, randomUnit } from '../src/arith.js';
import { rangeBounds, type SecurityLevel } from '../src/levels.js';
import { modPow } from '../src/modexp.js';
import { PaillierPublicKey, PaillierSecretKey } from '../src/paillier.js';
import { proveAffGUnchecked, verifyAffG } from '../src/proofs/aff-g.js';
import type { ProofContext } from '../src/proofs/common.js';
import { proveEncUnchecked, verifyEnc } from '../src/proofs/enc.js';
import { proveFacUnchecked, verifyFac } from '../src/proofs/fac.js';
import { proveLogStarUnchecked, verifyLogStar } from '../src/proofs/log-star.js';
import { type ModProof, modChallenges, verifyMod } from '../src/proofs/mod.js';
import { type PrmProof, prmChallenges, provePrm, verifyPrm } from '../src/proofs/prm.js';
import type { RingPedersenParams } from '../src/ring-pedersen.js';
import { ctx, SECURITY_112, seededRandom, testAux, testKey, testPrimes } from './helpers.js';

const L = SECURITY_112;
const rng = seededRandom('attacks');
const aux = testAux(L, 1);
const c = ctx('attack-session-0001', 1, 2);

/** "Naive" level: the same transcript binding with ε so large that every range check passes. */
const NO_RANGE_CHECKS: SecurityLevel = { ...L, epsilon: 5000 };

/**
 * Naive Πmod verifier as in tss-lib before the 2025 fix and TSSHOCK's c-guess: it loops over as
 * many iterations as the prover sent, and checks the equations without requiring w, xᵢ, zᵢ ∈ Z*_N.
 */
function naiveVerifyMod(cx: ProofContext, N: bigint, proof: ModProof): boolean {
  const k = proof.x.length;
  if (k === 0) return true;
  const ys = modChallenges(cx, { ...L, m: k }, N, proof.w);
  return ys.every((y, i) => {
    if (modPow(proof.z[i] as bigint, N, N) !== y) return false;
    let rhs = proof.b[i] ? (y * proof.w) % N : y;
    if (proof.a[i]) rhs = mod(-rhs, N);
    return modPow(proof.x[i] as bigint, 4n, N) === rhs;
  });
}

/** Naive Πprm verifier trusting the prover's iteration count and not checking s ≠ t. */
function naiveVerifyPrm(cx: ProofContext, st: RingPedersenParams, proof: PrmProof): boolean {
  const k = proof.A.length;
  if (k === 0) return true;
  const e = prmChallenges(cx, { ...L, m: k }, st, proof.A);
  return e.every(
    (ei, i) => modPow(st.t, proof.z[i] as bigint, st.N) === (ei ? ((proof.A[i] as bigint) * st.s) % st.N : proof.A[i]),
  );
}

/** BitForge (CVE-2023-33241) modulus N = p₁·…·p₁₆·q with 16-bit pᵢ and a large Blum prime q. */
function bitForgeModulus() {
  const small: bigint[] = [];
  let P = 1n;
  for (let cand = 40001n; small.length < 16; cand += 2n) {
    if (modPow(2n, cand - 1n, cand) !== 1n || modPow(3n, cand - 1n, cand) !== 1n) continue;
    small.push(cand);
    P *= cand;
  }
  for (;;) {
    const q = generatePrimeSync(1820, { bigint: true, add: 4n, rem: 3n }) as bigint;
    const N = P * q;
    // λ(N) = lcm(pᵢ − 1, q − 1); the attacker wants gcd(N, λ) = 1 so that N-th roots exist
    let lam = q - 1n;
    for (const p of small) lam = (lam * (p - 1n)) / gcd(lam, p - 1n);
    if (gcd(N, lam) === 1n) return { small, P, q, N, lam };
  }
}
const bf = bitForgeModulus();

describe('BitForge (CVE-2023-33241): N = p₁·…·p₁₆·q with ~16-bit pᵢ', () => {
  test('Πmod with w ≡ 0 mod p₁…p₁₆ (the 2025 tss-lib gcd fix): naive verifier accepts, ours rejects', () => {
    const { P, q, N, lam } = bf;
    const w = (P * randomUnit(rng, q)) % N;
    const d = invertMod(N, lam);
    const root = ((q + 1n) / 4n) ** 2n % (q - 1n);
    const ys = modChallenges(c, L, N, w);
    const x: bigint[] = [];
    const a: boolean[] = [];
    const z: bigint[] = [];
    for (const y of ys) {
      let yp = (w * y) % N; // b = 1: ≡ 0 modulo every small prime
      const ai = jacobi(yp % q, q) === -1;
      if (ai) yp = N - yp;
      const xq = modPow(yp % q, root, q);
      x.push(P * ((xq * invertMod(P, q)) % q)); // ≡ 0 mod P, the 4th root mod q
      a.push(ai);
      z.push(modPow(y, d, N));
    }
    const forged: ModProof = { w, x, a, b: ys.map(() => true), z };
    expect(naiveVerifyMod(c, N, forged)).toBe(true);
    expect(verifyMod(c, L, { N }, forged)).toEqual({ ok: false, reason: 'Πmod: w ∉ Z*_N' });
  });
  test('Πmod with zero iterations (prover-chosen count): naive verifier accepts, ours rejects', () => {
    const forged: ModProof = { w: 3n, x: [], a: [], b: [], z: [] };
    expect(naiveVerifyMod(c, bf.N, forged)).toBe(true);
    expect(verifyMod(c, L, { N: bf.N }, forged)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/exactly m = 128/),
    });
  });
  test('Πfac from the small-factor split p = p₁…p₁₆: naive verifier (no range check) accepts, ours rejects', () => {
    const forged = proveFacUnchecked(c, L, aux.pub, { N: bf.N }, { p: bf.P, q: bf.q }, rng);
    expect(verifyFac(c, NO_RANGE_CHECKS, aux.owner, { N: bf.N }, forged)).toEqual({ ok: true });
    expect(verifyFac(c, L, aux.owner, { N: bf.N }, forged)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/z2 ∉/),
    });
  });
});

describe('malformed Paillier moduli vs Πmod', () => {
  test('non-Blum modulus (p ≡ 1 mod 4): best-effort proof of a guessed single iteration passes a naive verifier, ours rejects', () => {
    const p = generatePrimeSync(1024, { bigint: true, add: 8n, rem: 5n }) as bigint; // p ≡ 5 mod 8
    const q = testPrimes(L)[0] as bigint;
    const N = p * q;
    const d = invertMod(N, ((p - 1n) * (q - 1n)) / gcd(p - 1n, q - 1n));
    // Atkin's square root for p ≡ 5 mod 8 (both roots ±r have the same Legendre symbol here)
    const sqrtP = (v: bigint): bigint | undefined => {
      if (jacobi(v, p) !== 1) return undefined;
      const t = modPow(2n * v, (p - 5n) / 8n, p);
      const i = (2n * v * t * t) % p;
      return mod(v * t * (i - 1n), p);
    };
    const rootQ = ((q + 1n) / 4n) ** 2n % (q - 1n);
    // grind w until the single challenge has a 4th root modulo p for some (a, b)
    for (let attempt = 0; attempt < 200; attempt++) {
      const w = randomUnit(rng, N);
      if (jacobi(w, N) !== -1) continue;
      const [y] = modChallenges(c, { ...L, m: 1 }, N, w) as [bigint];
      for (const a of [false, true]) {
        for (const b of [false, true]) {
          let yp = b ? (y * w) % N : y;
          if (a) yp = N - yp;
          const s1 = sqrtP(yp % p);
          const xp = s1 === undefined ? undefined : sqrtP(s1);
          if (xp === undefined || jacobi(yp % q, q) !== 1) continue;
          const xq = modPow(yp % q, rootQ, q);
          const x = mod(xp + p * (((xq - xp) * invertMod(p, q)) % q), N);
          const forged: ModProof = { w, x: [x], a: [a], b: [b], z: [modPow(y, d, N)] };
          expect(naiveVerifyMod(c, N, forged)).toBe(true);
          expect(verifyMod(c, L, { N }, forged).ok).toBe(false);
          // and padded to m iterations with the same values, the remaining challenges fail
          const padded: ModProof = {
            w,
            x: Array(L.m).fill(x),
            a: Array(L.m).fill(a),
            b: Array(L.m).fill(b),
            z: Array(L.m).fill(modPow(y, d, N)),
          };
          expect(verifyMod(c, L, { N }, padded).ok).toBe(false);
          return;
        }
      }
    }
    throw new Error('grinding found no candidate (probability < 2^-50)');
  });
  test('prime-power modulus N = p²·q: rejected (no N-th roots exist since p | gcd(N, φ(N)))', () => {
    const [p, q] = testPrimes(L) as [bigint, bigint];
    const N = p * p * q;
    const naive: ModProof = { w: 2n, x: [], a: [], b: [], z: [] };
    expect(naiveVerifyMod(c, N, naive)).toBe(true);
    expect(verifyMod(c, L, { N }, naive).ok).toBe(false);
    // the best an attacker can do for zᵢ: exponent inverse of N modulo φ(N)/p does not exist
    expect(() => invertMod(N, p * (p - 1n) * (q - 1n))).toThrow(RangeError);
    // a perfect square p² is rejected before any math
    expect(verifyMod(c, L, { N: p * p * q * q }, naive)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/square/),
    });
  });
  test('a prime N is rejected (Πmod verifier requires N composite)', () => {
    const N = generatePrimeSync(2048, { bigint: true, add: 4n, rem: 3n }) as bigint;
    const w = N - 1n; // (−1/N) = −1 for N ≡ 3 mod 4
    const ys = modChallenges(c, L, N, w);
    const d = invertMod(N, N - 1n);
    const e4 = ((N + 1n) / 4n) ** 2n % (N - 1n);
    const x: bigint[] = [];
    const a: boolean[] = [];
    for (const y of ys) {
      const ai = jacobi(y, N) === -1;
      const yp = ai ? N - y : y;
      x.push(modPow(yp, e4, N));
      a.push(ai);
    }
    const forged: ModProof = { w, x, a, b: ys.map(() => false), z: ys.map((y) => modPow(y, d, N)) };
    expect(naiveVerifyMod(c, N, forged)).toBe(true);
    expect(verifyMod(c, L, { N }, forged)).toEqual({ ok: false, reason: 'Πmod: N is (probably) prime' });
  });
});

describe('ring-Pedersen parameters vs Πprm', () => {
  test('s = t (λ = 1): naive verifier accepts an honest-form proof, ours rejects before any math', () => {
    const st = { N: aux.params.N, s: aux.params.t, t: aux.params.t };
    const honestForm = provePrm(c, L, st, { ...aux.secret, lambda: 1n }, rng);
    expect(naiveVerifyPrm(c, st, honestForm)).toBe(true);
    expect(verifyPrm(c, L, st, honestForm)).toEqual({ ok: false, reason: 'Πprm: s = t: rejected' });
  });
  test('s ∉ ⟨t⟩ with a guessed challenge (c-guess, one prover-chosen iteration): naive accepts, ours rejects', () => {
    const { N, t } = aux.params;
    const s = N - aux.params.s; // −s: Jacobi +1 but not a quadratic residue, so s ∉ ⟨t⟩ ⊂ QR_N̂
    expect(jacobi(s, aux.key.p)).toBe(-1);
    const st = { N, s, t };
    const sInv = invertMod(s, N);
    for (let attempt = 0; attempt < 100; attempt++) {
      const alpha = randomUnit(rng, N);
      const A = (modPow(t, alpha, N) * sInv) % N; // prepared for the guess e = 1
      const [e] = prmChallenges(c, { ...L, m: 1 }, st, [A]);
      if (!e) continue;
      const forged: PrmProof = { A: [A], z: [alpha] };
      expect(naiveVerifyPrm(c, st, forged)).toBe(true);
      expect(verifyPrm(c, L, st, forged).ok).toBe(false);
      const padded: PrmProof = { A: Array(L.m).fill(A), z: Array(L.m).fill(alpha) };
      expect(verifyPrm(c, L, st, padded).ok).toBe(false);
      return;
    }
    throw new Error('no challenge bit 1 in 100 attempts (probability 2^-100)');
  });
});

describe('Alpha-Rays (out-of-range plaintexts)', () => {
  const key = testKey(L, 0);
  const b = rangeBounds(L);
  test('Πenc for k far outside ±2^(ℓ+ε): naive verifier (no range check) accepts, ours rejects', () => {
    const k = (key.N - 1n) / 2n - 12345n; // a "negative" plaintext close to N/2
    const e = key.encrypt(k, rng);
    const st = { N0: key.N, K: e.c };
    const forged = proveEncUnchecked(c, L, aux.pub, st, { k, rho: e.rho }, rng);
    expect(verifyEnc(c, NO_RANGE_CHECKS, aux.owner, st, forged)).toEqual({ ok: true });
    expect(verifyEnc(c, L, aux.owner, st, forged)).toMatchObject({ ok: false, reason: expect.stringMatching(/z1 ∉/) });
  });
  test('Πlog* for x outside ±2^(ℓ+ε): naive accepts, ours rejects', () => {
    const x = b.ellEps << 40n;
    const e = key.encrypt(x, rng);
    const st = { N0: key.N, C: e.c, X: G.encodePoint(G.mulBase(G.mod(x))) };
    const forged = proveLogStarUnchecked(c, L, aux.pub, st, { x, rho: e.rho }, rng);
    expect(verifyLogStar(c, NO_RANGE_CHECKS, aux.owner, st, forged)).toEqual({ ok: true });
    expect(verifyLogStar(c, L, aux.owner, st, forged).ok).toBe(false);
  });
  const verifierKey = testKey(L, 2);
  const pk0 = verifierKey.publicKey;
  function affInstance(x: bigint, y: bigint) {
    const C = pk0.encrypt(42n, rng).c;
    const ey = pk0.encrypt(y, rng);
    const Y = key.encrypt(y, rng);
    const st = {
      N0: pk0.N,
      N1: key.N,
      C,
      D: pk0.add(pk0.mul(C, x), ey.c),
      Y: Y.c,
      X: G.encodePoint(G.mulBase(G.mod(x))),
    };
    return { st, w: { x, y, rho: ey.rho, rhoY: Y.rho } };
  }
  test("Πaff-g with y outside ±2^(ℓ'+ε): naive accepts, ours rejects", () => {
    const i = affInstance(7n, -(b.ellPrimeEps << 300n));
    const forged = proveAffGUnchecked(c, L, aux.pub, i.st, i.w, rng);
    expect(verifyAffG(c, NO_RANGE_CHECKS, aux.owner, i.st, forged)).toEqual({ ok: true });
    expect(verifyAffG(c, L, aux.owner, i.st, forged)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/z2 ∉/),
    });
  });
  test('Πaff-g with x outside ±2^(ℓ+ε): naive accepts, ours rejects', () => {
    const i = affInstance(b.ellEps << 10n, 5n);
    const forged = proveAffGUnchecked(c, L, aux.pub, i.st, i.w, rng);
    expect(verifyAffG(c, NO_RANGE_CHECKS, aux.owner, i.st, forged)).toEqual({ ok: true });
    expect(verifyAffG(c, L, aux.owner, i.st, forged)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/z1 ∉/),
    });
  });
});

describe('boundary values fed to every verifier (zero, one, N, N−1, identity)', () => {
  const key = testKey(L, 0);
  test('Paillier public key and ciphertext boundaries', () => {
    const pk = PaillierPublicKey.fromModulus(key.N, L);
    for (const v of [0n, pk.N2, pk.N2 - pk.N, key.N]) expect(pk.isCiphertext(v)).toBe(false);
    expect(() => PaillierSecretKey.fromPrimes(3n, 7n, L)).toThrow(RangeError);
  });
  test('Πenc, Πlog*: zero/one/N values are rejected', () => {
    const e = key.encrypt(5n, rng);
    const st = { N0: key.N, K: e.c };
    const ok = proveEncUnchecked(c, L, aux.pub, st, { k: 5n, rho: e.rho }, rng);
    for (const bad of [{ z2: 0n }, { z2: key.N }, { A: 0n }, { A: key.N * key.N }, { S: 0n }, { C: aux.params.N }]) {
      expect(verifyEnc(c, L, aux.owner, st, { ...ok, ...bad }).ok).toBe(false);
    }
    const lst = { N0: key.N, C: e.c, X: G.encodePoint(G.mulBase(5n)) };
    const lp = proveLogStarUnchecked(c, L, aux.pub, lst, { x: 5n, rho: e.rho }, rng);
    expect(verifyLogStar(c, L, aux.owner, lst, { ...lp, Y: new Uint8Array(33) }).ok).toBe(false);
    expect(verifyLogStar(c, L, aux.owner, { ...lst, X: Uint8Array.of(0) }, lp).ok).toBe(false);
  });
});
