/**
 * Non-hardened additive Ed25519 derivation (the scheme stated in
 * test-vectors/hd-ed25519/additive-nonhardened.json, from LFDT-Lockness/hd-wallet's Edwards
 * scheme; not SLIP-0010).
 */
import { readFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesToBigint, bytesToHex, hexToBytes } from '../src/bytes.js';
import { ed25519Group } from '../src/group.js';
import { deriveEd25519, HARDENED_OFFSET } from '../src/hd.js';

interface EdVectorFile {
  description: string;
  root_secret_scalar_be: string;
  root_public_key: string;
  chain_code: string;
  derivations: { path: number[]; secret_scalar_be: string; public_key: string }[];
}

const file = JSON.parse(
  readFileSync(new URL('../../../test-vectors/hd-ed25519/additive-nonhardened.json', import.meta.url), 'utf8'),
) as EdVectorFile;

const rootSecret = bytesToBigint(hexToBytes(file.root_secret_scalar_be));
const rootPublic = hexToBytes(file.root_public_key);
const rootChainCode = hexToBytes(file.chain_code);
const ell = ed25519Group.order;

describe('hd-ed25519 additive non-hardened vectors (LFDT-Lockness/hd-wallet Edwards scheme)', () => {
  it('root public key is root scalar · G', () => {
    expect(bytesToHex(ed25519Group.encodePoint(ed25519Group.mulBase(rootSecret)))).toBe(file.root_public_key);
  });

  it.each(file.derivations.map((d) => [d.path.join('/'), d] as const))('path %s', (_label, d) => {
    const got = deriveEd25519(rootPublic, rootChainCode, d.path);
    expect(bytesToHex(got.publicKey)).toBe(d.public_key);
    expect(got.path).toEqual(d.path);
    expect(got.tweak >= 0n && got.tweak < ell).toBe(true);
    // child secret scalar = root scalar + δ (mod ℓ)
    expect(ed25519Group.mod(rootSecret + got.tweak)).toBe(bytesToBigint(hexToBytes(d.secret_scalar_be)));
    // string notation gives the same key
    expect(deriveEd25519(rootPublic, rootChainCode, `m/${d.path.join('/')}`).publicKey).toEqual(got.publicKey);
  });

  it('covers every vector in the file', () => {
    expect(file.derivations.length).toBe(5);
  });
});

describe('hd-ed25519 properties', () => {
  const scalar = fc.bigInt({ min: 1n, max: ell - 1n });
  const path = fc.array(fc.integer({ min: 0, max: HARDENED_OFFSET - 1 }), { minLength: 1, maxLength: 5 });

  it('childSecret · G == child public key, with childSecret = parent secret + tweak', () => {
    fc.assert(
      fc.property(scalar, fc.uint8Array({ minLength: 32, maxLength: 32 }), path, (s, cc, p) => {
        const pub = ed25519Group.encodePoint(ed25519Group.mulBase(s));
        const child = deriveEd25519(pub, cc, p);
        const childSecret = ed25519Group.mod(s + child.tweak);
        expect(bytesToHex(ed25519Group.encodePoint(ed25519Group.mulBase(childSecret)))).toBe(
          bytesToHex(child.publicKey),
        );
        expect(child.chainCode).toHaveLength(32);
      }),
      { numRuns: 50 },
    );
  });

  it('tweaks add along a path: derive(a ++ b) = derive(derive(a), b)', () => {
    fc.assert(
      fc.property(scalar, fc.uint8Array({ minLength: 32, maxLength: 32 }), path, path, (s, cc, a, b) => {
        const pub = ed25519Group.encodePoint(ed25519Group.mulBase(s));
        const whole = deriveEd25519(pub, cc, [...a, ...b]);
        const first = deriveEd25519(pub, cc, a);
        const second = deriveEd25519(first.publicKey, first.chainCode, b);
        expect(second.publicKey).toEqual(whole.publicKey);
        expect(second.chainCode).toEqual(whole.chainCode);
        expect(ed25519Group.mod(first.tweak + second.tweak)).toBe(whole.tweak);
      }),
      { numRuns: 20 },
    );
  });
});

describe('hd-ed25519 inputs', () => {
  it('a hardened index is a RangeError naming the index', () => {
    expect(() => deriveEd25519(rootPublic, rootChainCode, [HARDENED_OFFSET])).toThrow(RangeError);
    expect(() => deriveEd25519(rootPublic, rootChainCode, [HARDENED_OFFSET])).toThrow(/hardened index 2147483648/);
    expect(() => deriveEd25519(rootPublic, rootChainCode, "m/0/1'")).toThrow(/hardened index 1'/);
    expect(() => deriveEd25519(rootPublic, rootChainCode, 'm/0/1h')).toThrow(RangeError);
  });

  it('malformed paths are RangeErrors', () => {
    for (const p of ['', 'm/', 'm/x', [-1], [0.5]] as const) {
      expect(() => deriveEd25519(rootPublic, rootChainCode, p), JSON.stringify(p)).toThrow(RangeError);
    }
  });

  it('rejects wrong lengths, the identity and small-order points', () => {
    expect(() => deriveEd25519(rootPublic.slice(1), rootChainCode, [0])).toThrow(RangeError);
    expect(() => deriveEd25519(rootPublic, rootChainCode.slice(1), [0])).toThrow(RangeError);
    expect(() => deriveEd25519(ed25519.Point.ZERO.toBytes(), rootChainCode, [0])).toThrow(/publicKey/);
    // A point of order 8 (torsion, outside the prime-order subgroup).
    const torsion = hexToBytes('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a');
    expect(() => deriveEd25519(torsion, rootChainCode, [0])).toThrow(/publicKey/);
  });
});
