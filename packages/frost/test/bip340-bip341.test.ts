/**
 * BIP340 vectors for the verifier path our Taproot signatures take (noble `schnorr.verify`), and
 * BIP341 wallet vectors for our TapTweak (tweak, output key, scriptPubKey) — then a threshold
 * key-path signature under a tweaked output key, with and without a Merkle root.
 */
import { readFileSync } from 'node:fs';
import { schnorr } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { type KeyShare, taprootTweak } from '../src/index.js';
import { dkgShares, hex, runSign, signOk, unhex } from './helpers.js';

const root = new URL('../../../test-vectors/', import.meta.url);

describe('BIP340 test-vectors.csv (verifier path)', () => {
  const rows = readFileSync(new URL('bip340/test-vectors.csv', root), 'utf8').trim().split('\n').slice(1);
  it.each(rows.map((r) => r.split(',')))('vector %s', (index, _sk, pk, _aux, msg, sig, result) => {
    let ok: boolean;
    try {
      ok = schnorr.verify(unhex(sig as string), unhex(msg as string), unhex(pk as string));
    } catch {
      ok = false;
    }
    expect(ok, `vector ${index}`).toBe(result === 'TRUE');
  });
});

describe('BIP341 wallet-test-vectors.json: TapTweak', () => {
  const v = JSON.parse(readFileSync(new URL('bip341/wallet-test-vectors.json', root), 'utf8'));
  // biome-ignore lint/suspicious/noExplicitAny: JSON vector
  it.each(v.scriptPubKey.map((c: any, i: number) => [i, c]) as [number, any][])('scriptPubKey case %i', (_i, c) => {
    const merkleRoot = c.intermediary.merkleRoot === null ? new Uint8Array(0) : unhex(c.intermediary.merkleRoot);
    const tw = taprootTweak(unhex(c.given.internalPubkey), merkleRoot);
    expect(tw.tweak.toString(16).padStart(64, '0')).toBe(c.intermediary.tweak);
    expect(hex(tw.outputKey)).toBe(c.intermediary.tweakedPubkey);
    expect(`5120${hex(tw.outputKey)}`).toBe(c.expected.scriptPubKey);
  });
  it('rejects a Merkle root of the wrong length', () => {
    expect(() => taprootTweak(new Uint8Array(32).fill(2), new Uint8Array(31))).toThrow(RangeError);
  });
});

describe('threshold Taproot key-path signatures', () => {
  const shares = dkgShares('secp256k1-tr', 2, 3, 'bip341');
  const sighash = unhex('2514a6272f85cfa0f45eb907fcb0d121b808ed37c6ea160a5a9046ed5526d555');
  const internal = (shares[0] as KeyShare).groupPublicKey.slice(1);
  it.each([
    ['no script tree', new Uint8Array(0)],
    ['with a Merkle root', unhex('5b75adecf53548f3ec6ad7d78383bf84cc57b55a3127c72b9a2481752dd88b21')],
  ] as [string, Uint8Array][])('%s: verifies under the tweaked output key only', (_l, merkleRoot) => {
    const out = signOk(runSign(shares, [0, 2], sighash, `tr:${merkleRoot.length}`, { taproot: { merkleRoot } }));
    const expected = taprootTweak(internal, merkleRoot).outputKey;
    expect(out.verifyingKey).toEqual(expected);
    expect(schnorr.verify(out.signature, sighash, expected)).toBe(true);
    expect(schnorr.verify(out.signature, sighash, internal)).toBe(false);
  });
  it('taproot option on a non-TR suite is rejected', () => {
    const ed = dkgShares('ed25519', 2, 2, 'bip341-ed');
    expect(() => runSign(ed, [0, 1], sighash, 'x', { taproot: { merkleRoot: new Uint8Array(0) } })).toThrow(RangeError);
  });
});
