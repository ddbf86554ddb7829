/**
 * Address codecs against published vectors: the generator point G (private key 1) in every
 * encoding (EIP-55, BIP173, TRON base58check), and the BIP86 first receiving address for P2TR.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { ripemd160 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bech32 } from '@scure/base';
import { describe, expect, it } from 'vitest';
import { ADDRESS_CODECS, addressPath } from '../src/addresses.js';
import { BLOCKCHAINS, blockchainByKey } from '../src/directory.js';

const G = secp256k1.Point.BASE.toBytes(true);
const chain = (key: string) => blockchainByKey(key)!;

describe('address codecs', () => {
  it('Ethereum: EIP-55 address of private key 1', () => {
    expect(ADDRESS_CODECS.ethereum.encode(G, 'eoa', chain('ethereum-mainnet'))).toBe(
      '0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf',
    );
  });

  it('TRON: base58check 0x41 address of private key 1', () => {
    expect(ADDRESS_CODECS.tron.encode(G, 'tron', chain('tron-mainnet'))).toBe('TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC');
  });

  it('Bitcoin P2WPKH: BIP173 examples (mainnet, testnet)', () => {
    expect(ADDRESS_CODECS.bitcoin.encode(G, 'p2wpkh', chain('bitcoin-mainnet'))).toBe(
      'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
    );
    expect(ADDRESS_CODECS.bitcoin.encode(G, 'p2wpkh', chain('bitcoin-testnet'))).toBe(
      'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx',
    );
  });

  it('Bitcoin-family P2WPKH on every network: HRP and witness program hash160(pubkey)', () => {
    const program = Buffer.from(ripemd160(sha256(G))).toString('hex');
    for (const [key, hrp] of [
      ['bitcoin-regtest', 'bcrt'],
      ['litecoin-mainnet', 'ltc'],
      ['litecoin-testnet', 'tltc'],
      ['litecoin-regtest', 'rltc'],
    ] as const) {
      const a = ADDRESS_CODECS[chain(key).family].encode(G, 'p2wpkh', chain(key));
      const d = bech32.decode(a as `${string}1${string}`);
      expect(d.prefix).toBe(hrp);
      expect(d.words[0]).toBe(0);
      expect(Buffer.from(bech32.fromWords(d.words.slice(1))).toString('hex')).toBe(program);
    }
  });

  it('Bitcoin P2TR: BIP86 m/86h/0h/0h/0/0 internal key → first receiving address', () => {
    const internal = Uint8Array.from(
      Buffer.from('02cc8a4bc64d897bddc5fbc2f670f7a8ba0b386779106cf1223c6fc5d7cd6fc115', 'hex'),
    );
    expect(ADDRESS_CODECS.bitcoin.encode(internal, 'p2tr', chain('bitcoin-mainnet'))).toBe(
      'bc1p5cyxnuxmeuwuvkwfem96lqzszd02n6xdcjrs20cac6yqjjwudpxqkedrcr',
    );
  });

  it('rejects unsupported types and malformed keys', () => {
    expect(() => ADDRESS_CODECS.ethereum.encode(G, 'p2wpkh', chain('ethereum-mainnet'))).toThrow(RangeError);
    expect(() => ADDRESS_CODECS.bitcoin.encode(G, 'eoa', chain('bitcoin-mainnet'))).toThrow(RangeError);
    expect(() => ADDRESS_CODECS.ethereum.encode(new Uint8Array(33), 'eoa', chain('ethereum-mainnet'))).toThrow();
  });

  it('paths are m/44/{coin_type}/{wallet_index}/0/{address_index}; every chain has a codec', () => {
    expect(addressPath(60, 7, 0)).toBe('m/44/60/7/0/0');
    for (const b of BLOCKCHAINS) expect(ADDRESS_CODECS[b.family].addressTypes.length).toBeGreaterThan(0);
  });
});
