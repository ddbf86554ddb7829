/**
 * Issue #28, one ceremony, several keys: a SIGN ceremony whose `digestKeys` name a P2WPKH input's
 * digest (CGGMP21 ECDSA at path A) and a P2TR input's digest (FROST BIP340, BIP86 key path at
 * path B) of one wallet, the digests recomputed by `recomputeBitcoinDigests` from a real context.
 * In process on real LevelDB stores with the real protocols; each signature is verified under the
 * key derived by `deriveSecp256k1` from the key record (Taproot: the BIP86-tweaked output key).
 */
import { randomBytes } from 'node:crypto';
import { type BitcoinContext, LITECOIN_REGTEST, recomputeBitcoinDigests, utxoAddress } from '@custodian/chains';
import { bytesToHex, deriveSecp256k1, hexToBytes } from '@custodian/crypto';
import { CeremonyKind, type CeremonyResult, KeyAlgorithm, Outcome } from '@custodian/wire';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, describe, expect, it } from 'vitest';
import { runCeremony } from '../src/index.js';
import { Cluster, held, runAt, type Signer, start } from './lifecycle-harness.js';

const clusters: Cluster[] = [];
afterAll(async () => {
  for (const c of clusters) await c.close();
});

function allOk(res: readonly CeremonyResult[]): void {
  expect(
    res.map((r) => r.outcome),
    res.map((r) => `${r.error ?? ''} ${JSON.stringify(r.blame ?? [])}`).join(' | '),
  ).toEqual(res.map(() => Outcome.OK));
}

/** BIP86 output key (x-only, 32 bytes) of an internal key (33 bytes SEC1): P + H_TapTweak(x(P))·G with even-Y P. */
function bip86OutputKey(internal: Uint8Array): Uint8Array {
  const x = internal.subarray(1);
  const P = secp256k1.Point.fromHex(bytesToHex(Uint8Array.of(0x02, ...x)));
  const t = BigInt(`0x${bytesToHex(schnorr.utils.taggedHash('TapTweak', x))}`);
  return P.add(secp256k1.Point.BASE.multiply(t)).toBytes(true).subarray(1);
}

const A = [44, 1, 0, 0, 0];
const B = [44, 1, 0, 1, 4];

describe('SIGN with per-digest keys', () => {
  it('signs a P2WPKH digest at path A by ECDSA and a P2TR digest at path B by Taproot in one ceremony', {
    timeout: 400_000,
  }, async () => {
    const cluster = new Cluster(false);
    clusters.push(cluster);
    const [a, b, c] = (await cluster.add(3)) as [Signer, Signer, Signer];
    for (const s of [a, b, c]) await cluster.seedPrimes(s);
    const made = await runAt(
      runCeremony,
      start(CeremonyKind.MASTER_KEY, [a, b, c], {
        threshold: 2,
        algorithms: [KeyAlgorithm.SECP256K1_ECDSA, KeyAlgorithm.SECP256K1_TAPROOT],
      }),
      [a, b, c],
    );
    allOk(made);
    const keyId = made[0]?.keyId as string;
    const rec = (await held(a, keyId)) as NonNullable<Awaited<ReturnType<typeof held>>>;
    const master = (alg: number) => {
      const k = rec.keys.find((x) => x.algorithm === alg) as { publicKey: string; chainCode: string };
      const pub = hexToBytes(k.publicKey.length === 64 ? `02${k.publicKey}` : k.publicKey);
      return { pub, chainCode: hexToBytes(k.chainCode) };
    };
    const ec = master(KeyAlgorithm.SECP256K1_ECDSA);
    const tr = master(KeyAlgorithm.SECP256K1_TAPROOT);
    const pkA = deriveSecp256k1(ec.pub, ec.chainCode, A).publicKey;
    const pkB = deriveSecp256k1(tr.pub, tr.chainCode, B).publicKey;
    const input = (pk: Uint8Array, path: number[], kind: 'p2wpkh' | 'p2tr') => ({
      txid: bytesToHex(randomBytes(32)),
      vout: 1,
      value: '50000000',
      address: utxoAddress(LITECOIN_REGTEST, pk, kind),
      kind,
      publicKey: bytesToHex(pk),
      path,
    });
    const context: BitcoinContext = {
      network: 'litecoin-regtest',
      version: 2,
      lockTime: 0,
      sequence: 0xfffffffd,
      inputs: [input(pkA, A, 'p2wpkh'), input(pkB, B, 'p2tr')],
      change: null,
      fee: '10000',
      feeRate: '10',
    };
    const dest = utxoAddress(LITECOIN_REGTEST, secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true), 'p2tr');
    const digests = recomputeBitcoinDigests(
      LITECOIN_REGTEST,
      { asset: { kind: 'native' }, destination: dest, amount: 99_990_000n },
      context,
    );
    expect(digests.map((d) => d.scheme)).toEqual(['ecdsa', 'schnorr']);
    const res = await runAt(
      runCeremony,
      start(CeremonyKind.SIGN, [a, c], {
        keyId,
        sign: {
          keyId,
          algorithm: KeyAlgorithm.SECP256K1_ECDSA,
          derivationPath: A,
          digests: digests.map((d) => d.digest),
          digestKeys: [
            { algorithm: KeyAlgorithm.SECP256K1_ECDSA, derivationPath: A },
            { algorithm: KeyAlgorithm.SECP256K1_TAPROOT, derivationPath: B },
          ],
        },
      }),
      [a, c],
    );
    allOk(res);
    const [sigA, sigB] = res[0]?.signatures ?? [];
    expect(res[1]?.signatures?.map((s) => bytesToHex(s.signature))).toEqual(
      res[0]?.signatures?.map((s) => bytesToHex(s.signature)),
    );
    expect(sigA?.algorithm).toBe(KeyAlgorithm.SECP256K1_ECDSA);
    expect(bytesToHex(sigA?.publicKey as Uint8Array)).toBe(bytesToHex(pkA));
    expect(
      secp256k1.verify(sigA?.signature as Uint8Array, digests[0]?.digest as Uint8Array, pkA, { prehash: false }),
    ).toBe(true);
    expect(sigB?.algorithm).toBe(KeyAlgorithm.SECP256K1_TAPROOT);
    const outputKey = bip86OutputKey(pkB);
    expect(bytesToHex(sigB?.publicKey as Uint8Array)).toBe(bytesToHex(outputKey));
    expect(schnorr.verify(sigB?.signature as Uint8Array, digests[1]?.digest as Uint8Array, outputKey)).toBe(true);
    // refused before any session: one key per digest, and a pooled presignature only for one digest
    const bad = await runAt(
      runCeremony,
      start(CeremonyKind.SIGN, [a, c], {
        keyId,
        sign: {
          keyId,
          algorithm: KeyAlgorithm.SECP256K1_ECDSA,
          derivationPath: A,
          digests: digests.map((d) => d.digest),
          digestKeys: [{ algorithm: KeyAlgorithm.SECP256K1_ECDSA, derivationPath: A }],
        },
      }),
      [a, c],
    );
    for (const r of bad) expect(r.outcome).toBe(Outcome.REFUSED);
    const pooledMixed = await runAt(
      runCeremony,
      start(CeremonyKind.SIGN, [a, c], {
        keyId,
        sign: {
          keyId,
          algorithm: KeyAlgorithm.SECP256K1_ECDSA,
          derivationPath: A,
          digests: digests.map((d) => d.digest),
          presignatureId: 'any',
          digestKeys: [
            { algorithm: KeyAlgorithm.SECP256K1_ECDSA, derivationPath: A },
            { algorithm: KeyAlgorithm.SECP256K1_TAPROOT, derivationPath: B },
          ],
        },
      }),
      [a, c],
    );
    for (const r of pooledMixed)
      expect([r.outcome, r.error]).toEqual([Outcome.REFUSED, expect.stringMatching(/presignatureId/)]);
  });
});
