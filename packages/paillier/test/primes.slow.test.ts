import { describe, expect, test } from 'vitest';
import {
  generatePaillierKey,
  generateRingPedersen,
  generateSafePrime,
  isSafePrime,
  proveMod,
  provePrm,
  SECURITY_112,
  verifyMod,
  verifyPrm,
} from '../src/index.js';
import { ctx } from './helpers.js';

describe('real safe-prime generation (slow)', () => {
  test('generateSafePrime(1024) returns a 1024-bit safe prime', async () => {
    const p = await generateSafePrime(1024);
    expect(p.toString(2).length).toBe(1024);
    expect(isSafePrime(p)).toBe(true);
  }, 600_000);
  test('generatePaillierKey and generateRingPedersen at SECURITY_112 without a pool produce provable keys', async () => {
    const key = await generatePaillierKey(SECURITY_112);
    expect(key.N.toString(2).length).toBe(2048);
    const c = ctx('slow-keygen-session', 1, null);
    expect(verifyMod(c, SECURITY_112, { N: key.N }, proveMod(c, SECURITY_112, { N: key.N }, key))).toEqual({
      ok: true,
    });
    const rp = await generateRingPedersen(SECURITY_112);
    expect(verifyPrm(c, SECURITY_112, rp.params, provePrm(c, SECURITY_112, rp.params, rp.secret))).toEqual({
      ok: true,
    });
  }, 600_000);
});
