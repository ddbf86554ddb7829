/**
 * Address encodings per chain family, behind one {@link AddressCodec} interface: the directory's
 * view of `@custodian/chains` (`ethereumAddress`, `tronAddress`, `utxoAddress`), the one place
 * addresses are encoded — the signers check the same functions' output (enforce.ts).
 *
 * Derivation (documented in the OpenAPI document): every address key is the non-hardened child
 * `m/44/{coin_type}/{wallet_index}/{branch}/{address_index}` (branch 0 external = deposit
 * addresses, 1 internal = change) of a master public key and chain code (BIP32 CKDpub,
 * `deriveSecp256k1` of @custodian/crypto): the ECDSA master key for every address type but P2TR,
 * the FROST/Taproot master key for P2TR — the key that can spend it, taken as the signers hold
 * it: the 33-byte compressed group key with its real Y parity (`02‖x` or `03‖x`; CKDpub hashes
 * the parity byte, so reading an odd key as `02‖x` would derive keys the signers cannot sign for). Levels 2 and 3 are NOT hardened (unlike BIP44) because the coordinator holds only public
 * keys; the signers apply the tweak.
 */

import { ethereumAddress, tronAddress, UTXO_NETWORKS, type UtxoNetwork, utxoAddress } from '@custodian/chains';
import { Bip32InvalidChildError, deriveSecp256k1 } from '@custodian/crypto';
import type { BlockchainDef } from './directory.js';
import { ApiError } from './errors.js';

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

/**
 * The derivation path of an address key, in BIP32 notation.
 * @param branch 0 external (deposit addresses, the default) or 1 internal (change)
 */
export function addressPath(coinType: number, walletIndex: number, addressIndex: number, branch: 0 | 1 = 0): string {
  return `m/44/${coinType}/${walletIndex}/${branch}/${addressIndex}`;
}

/** The master public keys of a wallet's master key row (hex, as stored in `master_keys`). */
export interface MasterKeyHex {
  /** 33-byte compressed ECDSA master key, hex 66. */
  secp256k1_public_key: string;
  secp256k1_chain_code: string;
  /** FROST/Taproot master key, 33-byte compressed hex 66 (`02…`/`03…`, its real Y parity), or null when none was recorded. */
  taproot_public_key?: string | null;
  taproot_chain_code?: string | null;
}

/**
 * The master public key and chain code an address type derives from: the Taproot master key for
 * `p2tr` (33 bytes, exactly as recorded, parity included), else the ECDSA master key (33 bytes).
 * Both with 32-byte chain codes.
 * @throws ApiError VALIDATION_FAILED (422, field `body.address_type`) for `p2tr` when the master key
 *   has no Taproot key (recorded before #28) or not a compressed one (hex 66 `02…`/`03…`)
 */
export function masterKeyFor(mk: MasterKeyHex, type: AddressType): { publicKey: Uint8Array; chainCode: Uint8Array } {
  if (type === 'p2tr') {
    if (!mk.taproot_public_key || !mk.taproot_chain_code || !/^0[23][0-9a-f]{64}$/i.test(mk.taproot_public_key))
      throw new ApiError(
        'VALIDATION_FAILED',
        'address_type p2tr: the master key has no recorded Taproot key (created before #28): P2TR addresses cannot be derived',
        [{ field: 'body.address_type', message: 'p2tr needs a master key with a Taproot key; use p2wpkh' }],
      );
    return {
      publicKey: Uint8Array.from(Buffer.from(mk.taproot_public_key, 'hex')),
      chainCode: Uint8Array.from(Buffer.from(mk.taproot_chain_code, 'hex')),
    };
  }
  return {
    publicKey: Uint8Array.from(Buffer.from(mk.secp256k1_public_key, 'hex')),
    chainCode: Uint8Array.from(Buffer.from(mk.secp256k1_chain_code, 'hex')),
  };
}

/**
 * The first address of `type` at or after `fromIndex` on `branch` of wallet `walletIndex`
 * (`m/44/{coin}/{wallet}/{branch}/{index}`, BIP32 CKDpub from the master key of the type,
 * {@link masterKeyFor}); an index whose child key is invalid (BIP32, probability < 2⁻¹²⁷) is
 * skipped, as the signers skip it.
 * @returns the index, the path text, the 33-byte compressed child key and the address
 * @throws ApiError VALIDATION_FAILED (P2TR without a recorded Taproot key); Bip32InvalidChildError
 *   when a level above the address is invalid (no index helps)
 */
export function nextDerivedAddress(
  mk: MasterKeyHex,
  chain: BlockchainDef,
  walletIndex: number,
  type: AddressType,
  branch: 0 | 1,
  fromIndex: number,
): { index: number; derivationPath: string; publicKey: Uint8Array; address: string } {
  const master = masterKeyFor(mk, type);
  for (let index = fromIndex; ; index++) {
    const derivationPath = addressPath(chain.coinType, walletIndex, index, branch);
    try {
      const { publicKey } = deriveSecp256k1(master.publicKey, master.chainCode, derivationPath);
      return { index, derivationPath, publicKey, address: ADDRESS_CODECS[chain.family].encode(publicKey, type, chain) };
    } catch (e) {
      if (!(e instanceof Bip32InvalidChildError && e.depth === 5)) throw e;
    }
  }
}
