import { createHash } from 'node:crypto';
import { secp256k1Group as G } from '@custodian/crypto';
import { reconstructSecretForTest } from '@custodian/crypto/testing';
import { generateSafePrime, SECURITY_112 } from '@custodian/paillier';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import {
  type AuxInfo,
  auxInfoProtocol,
  type CoreKeyShare,
  type KeyShare,
  type Presignature,
  validateKeyShare,
} from '../src/index.js';
import { runKeygen, runParties, runPresign, runSign, testPrimes } from './helpers.js';

// The slow matrix: 5-of-9 keygen, aux info for 9 parties (18 safe primes: the 10 committed test
// primes plus 8 generated now with node:crypto), presigning and signing by 5 parties.
describe('CGGMP21 5-of-9 (slow suite)', () => {
  it('keygen, aux info, presign, sign: the signature verifies', async () => {
    const kg = runKeygen(5, 9, 'slow-kg');
    expect(kg.aborted.every((a) => a === undefined)).toBe(true);
    const cores = kg.outputs as CoreKeyShare[];
    const ids = cores.slice(2, 7).map((c) => BigInt(c.i + 1));
    const secret = reconstructSecretForTest(
      G,
      ids,
      cores.slice(2, 7).map((c) => c.x),
    );
    expect(G.mulBase(secret).equals(cores[0]!.publicKey)).toBe(true);

    const extra: bigint[] = [];
    for (let k = 0; k < 8; k++) extra.push(await generateSafePrime(1024));
    const primes = (i: number) =>
      i < 5 ? testPrimes(SECURITY_112, i) : { p: extra[2 * (i - 5)]!, q: extra[2 * (i - 5) + 1]! };
    const aux = runParties<AuxInfo>(
      (i) => auxInfoProtocol({ level: SECURITY_112, primes: primes(i), checkPrimality: false }),
      9,
      'slow-aux',
    );
    expect(aux.aborted.every((a) => a === undefined)).toBe(true);
    const shares: KeyShare[] = cores.map((core, i) => validateKeyShare({ core, aux: aux.outputs[i] as AuxInfo }));

    const signers = [0, 2, 4, 6, 8];
    const pre = runPresign(shares, signers, 'slow-pre');
    expect(pre.aborted.every((a) => a === undefined)).toBe(true);
    const digest = new Uint8Array(createHash('sha256').update('5-of-9').digest());
    const res = runSign(pre.outputs as Presignature[], digest, 'slow-sign');
    const sig = res.outputs[0]!;
    expect(secp256k1.verify(sig.compact, digest, G.encodePoint(cores[0]!.publicKey), { prehash: false })).toBe(true);
  });
});
