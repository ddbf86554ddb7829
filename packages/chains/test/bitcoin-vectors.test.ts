/**
 * Bitcoin encodings against published vectors: BIP173/BIP350 (bech32/bech32m, by way of the
 * addresses below), BIP84 and BIP86 first addresses, BIP143 native P2WPKH sighash and signature,
 * BIP341 wallet vectors (key-path tweak, scriptPubKey, address, key-path sighashes).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { taprootTweak as frostTaprootTweak } from '@custodian/frost';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import * as btc from '@scure/btc-signer';
import { describe, expect, it } from 'vitest';
import {
  BITCOIN,
  BITCOIN_REGTEST,
  BITCOIN_TESTNET,
  BitcoinAdapter,
  BitcoinRpc,
  decodeUtxoAddress,
  InvalidAddressError,
  LITECOIN,
  LITECOIN_REGTEST,
  LITECOIN_TESTNET,
  taprootOutputKey,
  taprootTweak,
} from '../src/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const bip341Path = [
  join(root, 'test-vectors/bip341/wallet-test-vectors.json'),
  join(root, '../shared/test-vectors/bip341/wallet-test-vectors.json'),
].find(existsSync);
if (bip341Path === undefined)
  throw new Error('bip341/wallet-test-vectors.json not found in test-vectors/ or ../shared/test-vectors/');
const bip341 = JSON.parse(readFileSync(bip341Path, 'utf8'));

const rpc = new BitcoinRpc({ url: 'http://127.0.0.1:1', username: 'x', password: 'x' });
const mainnet = new BitcoinAdapter({ network: BITCOIN, rpc });

describe('BIP84 / BIP86 first addresses (bitcoin/bips bip-0084, bip-0086: m/84h/0h/0h/0/0, m/86h/0h/0h/0/0 of "abandon … about")', () => {
  it('P2WPKH of the BIP84 key', () => {
    const pub = hexToBytes('0330d54fd0dd420a6e5f8d3624f5f3482cae350f79d5f0753bf5beef9c2d91af3c');
    expect(mainnet.addressFromPublicKey(pub, 'p2wpkh')).toBe('bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu');
  });
  it('P2TR of the BIP86 internal key', () => {
    const pub = hexToBytes('02cc8a4bc64d897bddc5fbc2f670f7a8ba0b386779106cf1223c6fc5d7cd6fc115');
    expect(mainnet.addressFromPublicKey(pub, 'p2tr')).toBe(
      'bc1p5cyxnuxmeuwuvkwfem96lqzszd02n6xdcjrs20cac6yqjjwudpxqkedrcr',
    );
  });
});

describe('BIP341 wallet vectors', () => {
  const keyOnly = (
    bip341.scriptPubKey as {
      given: { internalPubkey: string; scriptTree: unknown };
      intermediary: { tweak: string; tweakedPubkey: string };
      expected: { scriptPubKey: string; bip350Address: string };
    }[]
  ).filter((v) => v.given.scriptTree === null);
  it.each(keyOnly.map((v) => [v.given.internalPubkey, v] as const))(
    'key-path tweak, output key and address of %s',
    (_, v) => {
      for (const prefix of ['02', '03']) {
        const pub = hexToBytes(prefix + v.given.internalPubkey);
        expect(bytesToHex(taprootTweak(pub))).toBe(v.intermediary.tweak);
        expect(bytesToHex(taprootOutputKey(pub))).toBe(v.intermediary.tweakedPubkey);
        const address = mainnet.addressFromPublicKey(pub, 'p2tr');
        expect(address).toBe(v.expected.bip350Address);
        expect(bytesToHex(decodeUtxoAddress(BITCOIN, address).script)).toBe(v.expected.scriptPubKey);
        // The threshold Taproot signer (FROST, BIP86 key path = empty merkle root) uses the same tweak and output key.
        const frost = frostTaprootTweak(hexToBytes(v.given.internalPubkey), new Uint8Array(0));
        expect(frost.tweak.toString(16).padStart(64, '0')).toBe(v.intermediary.tweak);
        expect(bytesToHex(frost.outputKey)).toBe(v.intermediary.tweakedPubkey);
      }
    },
  );
  it('key-path sighashes (the BIP341 digest function the adapter uses)', () => {
    for (const spend of bip341.keyPathSpending) {
      const tx = btc.Transaction.fromRaw(hexToBytes(spend.given.rawUnsignedTx), {
        allowUnknownOutputs: true,
        allowUnknownInputs: true,
        disableScriptCheck: true,
      });
      const scripts = spend.given.utxosSpent.map((u: { scriptPubKey: string }) => hexToBytes(u.scriptPubKey));
      const amounts = spend.given.utxosSpent.map((u: { amountSats: number }) => BigInt(u.amountSats));
      for (const input of spend.inputSpending) {
        const digest = tx.preimageWitnessV1(input.given.txinIndex, scripts, input.given.hashType, amounts);
        expect(bytesToHex(digest)).toBe(input.intermediary.sigHash);
        if (input.given.merkleRoot !== null) continue; // script-tree tweaks are out of scope (key path only)
        expect(bytesToHex(taprootTweak(hexToBytes(`02${input.intermediary.internalPubkey}`)))).toBe(
          input.intermediary.tweak,
        );
        // d' = (d with even Y) + t: the key a FROST/BIP341 signer ends up signing with.
        const n = secp256k1.Point.CURVE().n;
        let d = BigInt(`0x${input.given.internalPrivkey}`);
        if (secp256k1.Point.BASE.multiply(d).toBytes(true)[0] === 3) d = n - d;
        const tweaked = (d + BigInt(`0x${input.intermediary.tweak}`)) % n;
        expect(tweaked.toString(16).padStart(64, '0')).toBe(input.intermediary.tweakedPrivkey);
      }
    }
  });
});

describe('BIP143 native P2WPKH example (bitcoin/bips bip-0143, "Native P2WPKH")', () => {
  it('sighash of input 1 and its low-S DER signature', () => {
    const tx = btc.Transaction.fromRaw(
      hexToBytes(
        '0100000002fff7f7881a8099afa6940d42d1e7f6362bec38171ea3edf433541db4e4ad969f0000000000eeffffffef51e1b804cc89d182d279655c3aa89e815b1b309fe287d9b2b55d57b90ec68a0100000000ffffffff02202cb206000000001976a9148280b37df378db99f66f85c95a783a76ac7a6d5988ac9093510d000000001976a9143bde42dbee7e4dbe6a21b2d50ce2f0167faa815988ac11000000',
      ),
      { allowUnknownOutputs: true },
    );
    const priv = hexToBytes('619c335025c7f4012e556c2a58b2506e30b8511b53ade95ea316fd8c3286feb9');
    const pub = secp256k1.getPublicKey(priv, true);
    expect(bytesToHex(pub)).toBe('025476c2e83188368da1ff3e292e7acafcdb3566bb0ad253f62fc70f07aeee6357');
    const scriptCode = btc.OutScript.encode({ type: 'pkh', hash: btc.p2wpkh(pub).hash as Uint8Array });
    expect(bytesToHex(scriptCode)).toBe('76a9141d0f172a0ecb48aee1be1f2687d2963ae33f71a188ac');
    const digest = tx.preimageWitnessV0(1, scriptCode, 1, 600_000_000n);
    expect(bytesToHex(digest)).toBe('c37af31116d1b27caf68aae9e3ac82f1477929014d5b917657d0eb49478cb670');
    const der = secp256k1.sign(digest, priv, { prehash: false, format: 'der' });
    expect(bytesToHex(der)).toBe(
      '304402203609e17b84f6a7d30c80bfa610b5b4542f32a8a0d5447a12fb1366d7f01cc44a0220573a954c4518331561406f90300e8f3358f51928d43c212a8caed02de67eebee',
    );
  });
});

describe('address validation per network (BIP173 / BIP350)', () => {
  const pub = secp256k1.getPublicKey(
    hexToBytes('0000000000000000000000000000000000000000000000000000000000000001'),
    true,
  );
  const networks = [BITCOIN, BITCOIN_TESTNET, BITCOIN_REGTEST, LITECOIN, LITECOIN_TESTNET, LITECOIN_REGTEST];
  const hrps = ['bc1', 'tb1', 'bcrt1', 'ltc1', 'tltc1', 'rltc1'];
  it('derives P2WPKH (bech32, q) and P2TR (bech32m, p) with each network HRP, and accepts only its own', () => {
    networks.forEach((network, i) => {
      const a = new BitcoinAdapter({ network, rpc });
      const wpkh = a.addressFromPublicKey(pub, 'p2wpkh');
      const tr = a.addressFromPublicKey(pub, 'p2tr');
      expect(wpkh.startsWith(`${hrps[i]}q`)).toBe(true);
      expect(tr.startsWith(`${hrps[i]}p`)).toBe(true);
      expect(a.validateAddress(wpkh)).toBe(wpkh);
      networks.forEach((other, j) => {
        if (j === i) return;
        const foreign = new BitcoinAdapter({ network: other, rpc }).addressFromPublicKey(pub, 'p2tr');
        try {
          a.validateAddress(foreign);
          expect.unreachable(`${other.id} address accepted on ${network.id}`);
        } catch (e) {
          expect(e).toBeInstanceOf(InvalidAddressError);
          expect((e as InvalidAddressError).reason).toBe('wrong-network');
          expect((e as InvalidAddressError).httpStatus).toBe(422);
        }
      });
    });
  });
  it('rejects bad checksums, bech32 used for v1 (BIP350) and garbage', () => {
    const good = mainnet.addressFromPublicKey(pub, 'p2wpkh');
    const flipped = good.slice(0, -1) + (good.endsWith('q') ? 'p' : 'q');
    // BIP350 invalid example: witness v1 with a bech32 (not bech32m) checksum.
    for (const bad of [
      flipped,
      'bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd',
      'hello',
      '',
      '1BoatSLRHtKNngkdXEeobR76b53LETtpyX',
    ]) {
      expect(() => mainnet.validateAddress(bad)).toThrow(InvalidAddressError);
    }
  });
});
