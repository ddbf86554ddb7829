/**
 * The coordinator's combination of ECDSA shares (share-combiner.ts) with shares of a real CGGMP21
 * 2-of-3 presignature (TEST-ONLY fixture key shares of packages/cggmp/test/fixtures): the result
 * verifies under the child key the combiner derives itself (noble), shares may come in any order
 * and frames; a wrong share, a duplicate, an unknown digest index or a sender out of range only
 * turn the fast path off (undefined), never yield a signature.
 */
import { deriveSecp256k1, secp256k1Group as G } from '@custodian/crypto';
import type { SignatureSharesWire } from '@custodian/wire';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { describe, expect, it } from 'vitest';
import { fixtureShares, type Presignature, runPresign, signersShares } from '../../cggmp/test/helpers.js';
import { EcdsaShareCombiner } from '../src/share-combiner.js';

const shares = fixtureShares('2of3');
const core = (shares[0] as (typeof shares)[0]).core;
const master = { publicKey: G.encodePoint(core.publicKey), chainCode: core.chainCode };
const path = [0, 5];
const tweak = deriveSecp256k1(master.publicKey, master.chainCode, path).tweak;

/** Each signer's interim message for `digests` (one presignature per digest). */
function interims(digests: Uint8Array[], label: string): SignatureSharesWire[] {
  const out: SignatureSharesWire[] = [0, 1].map(() => ({ ceremonyId: new Uint8Array(24), shares: [] }));
  digests.forEach((digest, d) => {
    const pre = runPresign(shares, [0, 2], `${label}-${d}`).outputs as Presignature[];
    signersShares(pre, digest, tweak).given.forEach((given, pos) => {
      out[pos]?.shares.push({ digestIndex: d, rPoint: given.Rp, s: G.encodeScalar(given.s) });
    });
  });
  return out;
}

const combiner = (digests: Uint8Array[]) =>
  new EcdsaShareCombiner({ ...master, derivationPath: path, digests, signers: 2 });

describe('EcdsaShareCombiner (the coordinator’s fast path)', () => {
  const digests = [sha256(new TextEncoder().encode('a')), sha256(new TextEncoder().encode('b'))];
  const [a, b] = interims(digests, 'comb') as [SignatureSharesWire, SignatureSharesWire];

  it('combines every signer’s shares into signatures that verify under the derived child key', async () => {
    const c = combiner(digests);
    const child = deriveSecp256k1(master.publicKey, master.chainCode, path).publicKey;
    expect(c.publicKey).toEqual(child);
    // one frame per digest, in any order
    c.add(1, { ...b, shares: [b.shares[1] as (typeof b.shares)[0]] });
    c.add(0, a);
    c.add(1, { ...b, shares: [b.shares[0] as (typeof b.shares)[0]] });
    const sigs = await c.done;
    expect(sigs).toHaveLength(2);
    for (const [i, s] of (sigs ?? []).entries()) {
      expect(secp256k1.verify(s.compact, digests[i] as Uint8Array, child, { prehash: false })).toBe(true);
      const recovered = secp256k1.Signature.fromBytes(s.compact)
        .addRecoveryBit(s.recovery)
        .recoverPublicKey(digests[i] as Uint8Array);
      expect(recovered.toBytes(true)).toEqual(child);
    }
  });

  it('prepare() derives the child key ahead of the shares; the result is the same signature', async () => {
    const child = deriveSecp256k1(master.publicKey, master.chainCode, path).publicKey;
    const prepared = combiner(digests);
    prepared.prepare();
    prepared.prepare(); // idempotent
    expect(prepared.publicKey).toEqual(child);
    const plain = combiner(digests);
    for (const c of [prepared, plain]) {
      c.add(0, a);
      c.add(1, b);
    }
    const [x, y] = await Promise.all([prepared.done, plain.done]);
    expect(x?.map((s) => s.compact)).toEqual(y?.map((s) => s.compact));
    expect(x).toHaveLength(2);
    // after the end, prepare() is a no-op and the result stands
    prepared.prepare();
    expect(await prepared.done).toBe(x);
  });

  it('stays pending while a share is missing', async () => {
    const c = combiner(digests);
    c.add(0, a);
    c.add(1, { ...b, shares: [b.shares[0] as (typeof b.shares)[0]] });
    const state = await Promise.race([c.done, new Promise((r) => setTimeout(() => r('pending'), 50))]);
    expect(state).toBe('pending');
  });

  it.each([
    [
      'a tampered share',
      (m: SignatureSharesWire) => ({
        ...m,
        shares: m.shares.map((x) => ({
          ...x,
          s: G.encodeScalar(G.mod(BigInt(`0x${Buffer.from(x.s).toString('hex')}`) + 1n)),
        })),
      }),
      1,
    ],
    [
      'a share of another R′',
      (m: SignatureSharesWire) => ({
        ...m,
        shares: m.shares.map((x) => ({ ...x, rPoint: G.encodePoint(G.mulBase(7n)) })),
      }),
      1,
    ],
    [
      'a scalar ≥ q',
      (m: SignatureSharesWire) => ({
        ...m,
        shares: m.shares.map((x) => ({ ...x, s: G.encodeScalar(G.order - 1n).fill(0xff) })),
      }),
      1,
    ],
    [
      'a digest index out of range',
      (m: SignatureSharesWire) => ({ ...m, shares: [{ ...(m.shares[0] as (typeof m.shares)[0]), digestIndex: 5 }] }),
      1,
    ],
    ['a sender out of range', (m: SignatureSharesWire) => m, 2],
  ] as const)('%s turns the fast path off', async (_name, tamper, sender) => {
    const c = combiner(digests);
    c.add(0, a);
    c.add(sender, tamper(b));
    expect(await c.done).toBeUndefined();
  });

  it('a second share from the same signer turns the fast path off', async () => {
    const c = combiner(digests);
    c.add(0, a);
    c.add(0, a);
    expect(await c.done).toBeUndefined();
  });

  it('refuses caller errors at construction', () => {
    expect(() => new EcdsaShareCombiner({ ...master, derivationPath: [2 ** 31], digests, signers: 2 })).toThrow(
      RangeError,
    );
    expect(
      () => new EcdsaShareCombiner({ ...master, derivationPath: path, digests: [new Uint8Array(31)], signers: 2 }),
    ).toThrow(RangeError);
    expect(
      () =>
        new EcdsaShareCombiner({ ...master, chainCode: new Uint8Array(31), derivationPath: path, digests, signers: 2 }),
    ).toThrow(RangeError);
    expect(
      () =>
        new EcdsaShareCombiner({ ...master, publicKey: new Uint8Array(33), derivationPath: path, digests, signers: 2 }),
    ).toThrow();
  });
});
