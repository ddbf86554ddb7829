import { ed25519 } from '@noble/curves/ed25519.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bigintToBytes, bytesToBigint, ed25519Sign, ed25519Verify } from '../src/index.js';

const L = ed25519.Point.Fn.ORDER;
const le = (b: Uint8Array) => bytesToBigint(Uint8Array.from(b).reverse());
const toLe = (x: bigint) => bigintToBytes(x, 32).reverse();
/** noble's RFC 8032 strict verification: what the fallback does and what OpenSSL must agree with. */
const strict = (sig: Uint8Array, msg: Uint8Array, pub: Uint8Array) => {
  try {
    return ed25519.verify(sig, msg, pub, { zip215: false });
  } catch {
    return false;
  }
};

describe('Ed25519 through node:crypto', () => {
  it('signs exactly as noble (RFC 8032 is deterministic) and verifies what noble verifies (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }).filter((k) => k.some((b) => b !== 0)),
        fc.uint8Array({ maxLength: 300 }),
        fc.nat(4),
        fc.nat(63),
        (sk, msg, tamper, at) => {
          const sig = ed25519Sign(msg, sk);
          expect(sig).toEqual(ed25519.sign(msg, sk));
          let pub = ed25519.getPublicKey(sk);
          let s = Uint8Array.from(sig);
          let m = msg;
          if (tamper === 1) s[at] = (s[at] as number) ^ 1;
          if (tamper === 2) m = Uint8Array.from([...msg, 0]);
          if (tamper === 3) pub = ed25519.getPublicKey(Uint8Array.from(sk, (b) => b ^ 0xff));
          if (tamper === 4) s = Uint8Array.from([...sig.subarray(0, 32), ...toLe(le(sig.subarray(32)) + L)]);
          const ours = ed25519Verify(s, m, pub);
          expect(ours).toBe(strict(s, m, pub));
          expect(ours).toBe(tamper === 0);
        },
      ),
      { numRuns: 80 },
    );
  });

  it('rejects malformed input without throwing', () => {
    const sk = new Uint8Array(32).fill(9);
    const pub = ed25519.getPublicKey(sk);
    const sig = ed25519Sign(new Uint8Array([1]), sk);
    expect(ed25519Verify(sig.subarray(1), new Uint8Array([1]), pub)).toBe(false);
    expect(ed25519Verify(sig, new Uint8Array([1]), pub.subarray(1))).toBe(false);
    // y = 2 has no x on the curve: not a point
    const notAPoint = toLe(2n);
    expect(ed25519Verify(sig, new Uint8Array([1]), notAPoint)).toBe(strict(sig, new Uint8Array([1]), notAPoint));
    expect(ed25519Verify(sig, new Uint8Array([1]), notAPoint)).toBe(false);
    expect(() => ed25519Sign(new Uint8Array([1]), new Uint8Array(31))).toThrow(RangeError);
    expect(() => ed25519Sign(new Uint8Array([1]), new Uint8Array(32))).toThrow(/wiped/);
  });
});
