import { secp256k1Group as G } from '@custodian/crypto';
import { describe, expect, test } from 'vitest';
import {
  proveAffG,
  proveEnc,
  proveFac,
  proveLogStar,
  proveMod,
  provePrm,
  verifyAffG,
  verifyEnc,
  verifyFac,
  verifyLogStar,
  verifyMod,
  verifyPrm,
} from '../src/index.js';
import { ctx, SECURITY_128, seededRandom, testAux, testKey } from './helpers.js';

const L = SECURITY_128;

describe('SECURITY_128 end to end with 3072-bit moduli (slow)', () => {
  test('every proof verifies, and fails for another session', () => {
    const rng = seededRandom('3072');
    const pi = testKey(L, 0); // prover's Paillier key
    const pj = testKey(L, 2); // verifier's Paillier key
    const aux = testAux(L, 1); // verifier's ring-Pedersen parameters
    const c = ctx('e2e-3072-session-1', 1, 2);
    const other = ctx('e2e-3072-session-2', 1, 2);
    const bc = ctx('e2e-3072-session-1', 1, null);

    const mod = proveMod(bc, L, { N: pi.N }, pi, rng);
    expect(verifyMod(bc, L, { N: pi.N }, mod)).toEqual({ ok: true });
    const prm = provePrm(bc, L, aux.params, aux.secret, rng);
    expect(verifyPrm(bc, L, aux.params, prm)).toEqual({ ok: true });
    expect(verifyPrm(other, L, aux.params, prm).ok).toBe(false);

    const fac = proveFac(c, L, aux.pub, { N: pi.N }, pi, rng);
    expect(verifyFac(c, L, aux.owner, { N: pi.N }, fac)).toEqual({ ok: true });
    expect(verifyFac(other, L, aux.owner, { N: pi.N }, fac).ok).toBe(false);

    const k = -987654321n;
    const K = pi.encrypt(k, rng);
    const enc = proveEnc(c, L, aux.pub, { N0: pi.N, K: K.c }, { k, rho: K.rho }, rng, { secretKey: pi });
    expect(verifyEnc(c, L, aux.owner, { N0: pi.N, K: K.c }, enc)).toEqual({ ok: true });

    const ls = { N0: pi.N, C: K.c, X: G.encodePoint(G.mulBase(G.mod(k))) };
    const log = proveLogStar(c, L, aux.pub, ls, { x: k, rho: K.rho }, rng, { secretKey: pi });
    expect(verifyLogStar(c, L, aux.owner, ls, log)).toEqual({ ok: true });

    const x = 123456n;
    const y = -(1n << 840n);
    const C = pj.publicKey.encrypt(77n, rng).c;
    const ey = pj.publicKey.encrypt(y, rng);
    const Y = pi.encrypt(y, rng);
    const st = {
      N0: pj.N,
      N1: pi.N,
      C,
      D: pj.publicKey.add(pj.publicKey.mul(C, x), ey.c),
      Y: Y.c,
      X: G.encodePoint(G.mulBase(x)),
    };
    const aff = proveAffG(c, L, aux.pub, st, { x, y, rho: ey.rho, rhoY: Y.rho }, rng, { secretKey: pi });
    expect(verifyAffG(c, L, aux.owner, st, aff, { secretKey: pj })).toEqual({ ok: true });
    expect(pj.decryptSigned(st.D)).toBe(77n * x + y);
  }, 600_000);
});
