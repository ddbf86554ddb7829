/**
 * Address encodings per chain family, behind one {@link AddressCodec} interface. These use
 * well-kept libraries (viem for Ethereum, @scure/btc-signer for the Bitcoin family, @scure/base
 * for TRON's base58check); they will be replaced by `@custodian/chains` adapters.
 *
 * Derivation (documented in the OpenAPI document): every address key is the non-hardened child
 * `m/44/{coin_type}/{wallet_index}/0/{address_index}` of the master secp256k1 public key and chain
 * code (BIP32 CKDpub, `deriveSecp256k1` of @custodian/crypto). Levels 2 and 3 are NOT hardened
 * (unlike BIP44) because the coordinator holds only public keys; the signers apply the tweak.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { createBase58check } from '@scure/base';
import { p2tr, p2wpkh } from '@scure/btc-signer';
import { getAddress } from 'viem';
import { publicKeyToAddress } from 'viem/accounts';
import type { BlockchainDef } from './directory.js';

/** Address type names: `p2wpkh`/`p2tr` (BIP141/BIP341, Bitcoin family), `eoa` (Ethereum), `tron`. */
export type AddressType = 'p2wpkh' | 'p2tr' | 'eoa' | 'tron';

/** Encodes a derived public key as an address of one chain family. */
export interface AddressCodec {
  /** Address types this family supports; the first one is the default. */
  readonly addressTypes: readonly AddressType[];
  /**
   * @param publicKey 33-byte SEC1-compressed secp256k1 public key
   * @param type one of {@link addressTypes}
   * @param chain the blockchain (selects the network's prefixes)
   * @returns the address in the chain's canonical text form
   * @throws RangeError for an unsupported type or a malformed key
   */
  encode(publicKey: Uint8Array, type: AddressType, chain: BlockchainDef): string;
}

function uncompressed(publicKey: Uint8Array): Uint8Array {
  return secp256k1.Point.fromBytes(publicKey).toBytes(false);
}

const toHex = (b: Uint8Array) => Buffer.from(b).toString('hex');

const ethereumCodec: AddressCodec = {
  addressTypes: ['eoa'],
  encode(publicKey, type) {
    if (type !== 'eoa') throw new RangeError(`ethereum: unsupported address type ${type}`);
    // EIP-55 mixed-case checksum address of keccak256(X||Y)[12..32].
    return getAddress(publicKeyToAddress(`0x${toHex(uncompressed(publicKey))}`));
  },
};

const base58check = createBase58check(sha256);

const tronCodec: AddressCodec = {
  addressTypes: ['tron'],
  encode(publicKey, type) {
    if (type !== 'tron') throw new RangeError(`tron: unsupported address type ${type}`);
    // 0x41 || keccak256(X||Y)[12..32], base58check (double SHA-256 checksum).
    const h = keccak_256(uncompressed(publicKey).subarray(1));
    const raw = new Uint8Array(21);
    raw[0] = 0x41;
    raw.set(h.subarray(12), 1);
    return base58check.encode(raw);
  },
};

interface BtcNetwork {
  bech32: string;
  pubKeyHash: number;
  scriptHash: number;
  wif: number;
}

/** Network parameters per Bitcoin-family blockchain key (bech32 HRPs per BIP173 and Litecoin's). */
const BTC_NETWORKS: Record<string, BtcNetwork> = {
  'bitcoin-mainnet': { bech32: 'bc', pubKeyHash: 0x00, scriptHash: 0x05, wif: 0x80 },
  'bitcoin-testnet': { bech32: 'tb', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef },
  'bitcoin-regtest': { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef },
  'litecoin-mainnet': { bech32: 'ltc', pubKeyHash: 0x30, scriptHash: 0x32, wif: 0xb0 },
  'litecoin-testnet': { bech32: 'tltc', pubKeyHash: 0x6f, scriptHash: 0x3a, wif: 0xef },
  'litecoin-regtest': { bech32: 'rltc', pubKeyHash: 0x6f, scriptHash: 0x3a, wif: 0xef },
};

const bitcoinCodec: AddressCodec = {
  addressTypes: ['p2wpkh', 'p2tr'],
  encode(publicKey, type, chain) {
    const network = BTC_NETWORKS[chain.key];
    if (network === undefined) throw new RangeError(`no network parameters for ${chain.key}`);
    if (type === 'p2wpkh') {
      const out = p2wpkh(publicKey, network).address;
      if (out === undefined) throw new RangeError('p2wpkh: no address');
      return out;
    }
    if (type === 'p2tr') {
      // BIP86-style key-path-only output: internal key = x-only derived key, no script tree.
      const out = p2tr(publicKey.subarray(1), undefined, network).address;
      if (out === undefined) throw new RangeError('p2tr: no address');
      return out;
    }
    throw new RangeError(`${chain.family}: unsupported address type ${type}`);
  },
};

/** The codec of each chain family. */
export const ADDRESS_CODECS: Record<BlockchainDef['family'], AddressCodec> = {
  ethereum: ethereumCodec,
  bitcoin: bitcoinCodec,
  litecoin: bitcoinCodec,
  tron: tronCodec,
};

/** The derivation path of an address key, in BIP32 notation. */
export function addressPath(coinType: number, walletIndex: number, addressIndex: number): string {
  return `m/44/${coinType}/${walletIndex}/0/${addressIndex}`;
}
