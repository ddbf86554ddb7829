import { aint } from '@custodian/crypto';

/** Branch of the path: 0 receive addresses, 1 change addresses (UTXO chains). */
export type AddressBranch = 0 | 1;

/**
 * Non-hardened derivation path of an address, `m/44/{coin_type}/{wallet_index}/{branch}/{address_index}`,
 * applied by public BIP32 derivation from the master public key and chain code (`deriveSecp256k1`
 * of @custodian/crypto), so addresses need no ceremony. All indices < 2^31 (non-hardened: unlike
 * BIP44, which hardens the first three levels, because the master key is threshold-shared).
 * @returns the five child indices
 * @throws RangeError for an index out of [0, 2^31)
 */
export function addressPath(
  coinType: number,
  walletIndex: number,
  addressIndex: number,
  branch: AddressBranch = 0,
): number[] {
  const max = 0x7fff_ffff;
  return [
    44,
    aint(coinType, 'coinType', 0, max),
    aint(walletIndex, 'walletIndex', 0, max),
    branch,
    aint(addressIndex, 'addressIndex', 0, max),
  ];
}
