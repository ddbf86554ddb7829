/**
 * Address encodings per chain family, behind one {@link AddressCodec} interface: the directory's
 * view of `@custodian/chains` (`ethereumAddress`, `tronAddress`, `utxoAddress`), the one place
 * addresses are encoded — the signers check the same functions' output (enforce.ts).
 *
 * Derivation (documented in the OpenAPI document): every address key is the non-hardened child
 * `m/44/{coin_type}/{wallet_index}/0/{address_index}` of the master secp256k1 public key and chain
 * code (BIP32 CKDpub, `deriveSecp256k1` of @custodian/crypto). Levels 2 and 3 are NOT hardened
 * (unlike BIP44) because the coordinator holds only public keys; the signers apply the tweak.
 */
import { ethereumAddress, tronAddress, UTXO_NETWORKS, type UtxoNetwork, utxoAddress } from '@custodian/chains';
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

/** The `@custodian/chains` network of a Bitcoin-family directory entry (`bitcoin-mainnet` → `bitcoin`). @throws RangeError */
export function utxoNetworkOf(def: BlockchainDef): UtxoNetwork {
  const net = UTXO_NETWORKS.find((n) => n.id === def.key.replace(/-mainnet$/, ''));
  if (net === undefined) throw new RangeError(`no network for ${def.key}`);
  return net;
}

const ethereumCodec: AddressCodec = {
  addressTypes: ['eoa'],
  encode(publicKey, type) {
    if (type !== 'eoa') throw new RangeError(`ethereum: unsupported address type ${type}`);
    return ethereumAddress(publicKey); // EIP-55 of keccak256(X‖Y)[12..32]
  },
};

const tronCodec: AddressCodec = {
  addressTypes: ['tron'],
  encode(publicKey, type) {
    if (type !== 'tron') throw new RangeError(`tron: unsupported address type ${type}`);
    return tronAddress(publicKey); // base58check(0x41 ‖ keccak256(X‖Y)[12..32])
  },
};

const bitcoinCodec: AddressCodec = {
  addressTypes: ['p2wpkh', 'p2tr'],
  encode(publicKey, type, chain) {
    if (type !== 'p2wpkh' && type !== 'p2tr') throw new RangeError(`${chain.family}: unsupported address type ${type}`);
    // P2TR: BIP86-style key-path-only output (internal key = x-only derived key, no script tree)
    return utxoAddress(utxoNetworkOf(chain), publicKey, type);
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
