/**
 * Directory identifiers shared by the coordinator (its blockchain and asset directory), the signers
 * and the phones (which check that a transfer intent's `asset_id` is the id of the asset it names):
 * UUIDv5 (RFC 9562 §5.5) of a stable name under {@link DIRECTORY_NAMESPACE}, so every instance
 * gives the same blockchain or asset the same id — `blockchain_id = v5("blockchain:<key>")`,
 * `asset_id = v5("asset:<blockchain key>:<symbol>")`. One definition: the coordinator's
 * packages/coordinator/src/directory.ts uses these.
 */
import { v5 as uuidv5 } from 'uuid';

/** Namespace UUID of directory identifiers (itself v5 of the DNS name `directory.custodian.dev`). */
export const DIRECTORY_NAMESPACE: string = uuidv5('directory.custodian.dev', uuidv5.DNS);

/**
 * The `blockchain_id` of a blockchain key (`ethereum-mainnet`, `tron-nile`, …): a lowercase UUID string.
 * @throws TypeError when `key` is not a string
 */
export function blockchainId(key: string): string {
  if (typeof key !== 'string') throw new TypeError('key: expected a blockchain key string');
  return uuidv5(`blockchain:${key}`, DIRECTORY_NAMESPACE);
}

/**
 * The `asset_id` of an asset, by its blockchain key and symbol (case-sensitive: `USDC`, `ETH`): a
 * lowercase UUID string.
 * @throws TypeError when `blockchain` or `symbol` is not a string
 */
export function assetId(blockchain: string, symbol: string): string {
  if (typeof blockchain !== 'string') throw new TypeError('blockchain: expected a blockchain key string');
  if (typeof symbol !== 'string') throw new TypeError('symbol: expected an asset symbol string');
  return uuidv5(`asset:${blockchain}:${symbol}`, DIRECTORY_NAMESPACE);
}
