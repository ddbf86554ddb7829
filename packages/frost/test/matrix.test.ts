/**
 * Matrix of party sets (STYLE.md item 15): 2-of-2, 2-of-3, 3-of-5 DKG + signing through the
 * simulator for every suite; signatures under the master and derived keys (and Taproot outputs)
 * verified with noble's plain verifiers.
 */
import { deriveEd25519, deriveSecp256k1 } from '@custodian/crypto';
import { reconstructSecretForTest } from '@custodian/crypto/testing';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1_FROST } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { getSuite, type SuiteName, taprootTweak, validateKeyShare } from '../src/index.js';
import { dkgShares, runSign, signOk } from './helpers.js';

const msg = new TextEncoder().encode('custodian matrix message');

function verify(suite: SuiteName, sig: Uint8Array, m: Uint8Array, pk: Uint8Array): boolean {
  if (suite === 'ed25519') return ed25519.verify(sig, m, pk);
  if (suite === 'secp256k1-tr') return schnorr.verify(sig, m, pk);
  return secp256k1_FROST.verify(sig, m, pk);
}

const cases: [number, number, number[]][] = [
  [2, 2, [0, 1]],
  [2, 3, [2, 0]],
  [3, 5, [4, 1, 2]],
];

describe.each(['ed25519', 'secp256k1', 'secp256k1-tr'] as SuiteName[])('FROST %s', (suite) => {
  it.each(cases)('%i-of-%i: DKG, sign under master and derived keys', (t, n, signers) => {
    const shares = dkgShares(suite, t, n, `matrix:${suite}:${t}:${n}`);
    for (const s of shares) validateKeyShare(s);
    const G = getSuite(suite).group;
    // every party holds the same public package and chain code
    for (const s of shares) {
      expect(s.groupPublicKey).toEqual(shares[0]?.groupPublicKey);
      expect(s.chainCode).toEqual(shares[0]?.chainCode);
      expect(s.verifyingShares).toEqual(shares[0]?.verifyingShares);
    }
    // test-only reconstruction: t shares give the group secret
    const x = reconstructSecretForTest(
      G,
      shares.slice(0, t).map((s) => s.identifier),
      shares.slice(0, t).map((s) => s.signingShare),
    );
    expect(G.mulBase(x).equals(G.decodePoint(shares[0]?.groupPublicKey as Uint8Array, 'pk'))).toBe(true);

    const master = signOk(runSign(shares, signers, msg, `m:${suite}:${t}${n}`));
    const pk = shares[0]?.groupPublicKey as Uint8Array;
    expect(master.verifyingKey).toEqual(suite === 'secp256k1-tr' ? pk.slice(1) : pk);
    expect(verify(suite, master.signature, msg, master.verifyingKey)).toBe(true);

    const path = 'm/44/0/7';
    const derived = signOk(runSign(shares, signers, msg, `d:${suite}:${t}${n}`, { derivationPath: path }));
    const child =
      suite === 'ed25519'
        ? deriveEd25519(pk, shares[0]?.chainCode as Uint8Array, path).publicKey
        : deriveSecp256k1(pk, shares[0]?.chainCode as Uint8Array, path).publicKey;
    expect(derived.verifyingKey).toEqual(suite === 'secp256k1-tr' ? child.slice(1) : child);
    expect(verify(suite, derived.signature, msg, derived.verifyingKey)).toBe(true);
    expect(verify(suite, derived.signature, msg, master.verifyingKey)).toBe(false);

    if (suite === 'secp256k1-tr') {
      const sighash = new Uint8Array(32).fill(7);
      for (const merkleRoot of [new Uint8Array(0), new Uint8Array(32).fill(0xab)]) {
        const tr = signOk(
          runSign(shares, signers, sighash, `tr:${t}${n}:${merkleRoot.length}`, {
            derivationPath: path,
            taproot: { merkleRoot },
          }),
        );
        expect(tr.verifyingKey).toEqual(taprootTweak(child.slice(1), merkleRoot).outputKey);
        expect(schnorr.verify(tr.signature, sighash, tr.verifyingKey)).toBe(true);
      }
    }
  });
});
