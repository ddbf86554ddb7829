/**
 * Which asset a transfer intent moves, checked against what a signer (or a phone) knows on its own
 * (review finding 3 of issue #20): the native asset of the configured chain's family / network, the
 * tokens of its `chains.<key>.assets` configuration, and the directory's asset id. Used by the
 * signer's enforcement (enforce.ts, refusal `ASSET_MISMATCH`) and by the mobile signer before it
 * shows an approval request — so the symbol, decimals and id the approvers see, and which the
 * policy scope and limits are counted in, are the token the transaction actually moves.
 */
import { UTXO_NETWORKS, validateEthereumAddress } from '@custodian/chains';
import { assetId, type TransferIntent } from '@custodian/wire';
import type { ChainConfig } from './chains-config.js';

/** A chain's native asset: symbol and decimals (base units per unit = 10^decimals). */
export interface NativeAsset {
  readonly symbol: string;
  readonly decimals: number;
}

/**
 * The native asset of a configured chain: ETH (18) on every EVM chain, BTC / LTC (8) by the
 * Bitcoin-family network, TRX (6) on every TRON network.
 * @throws RangeError for a Bitcoin-family network that is not one of `UTXO_NETWORKS`
 */
export function nativeAssetOf(chain: ChainConfig): NativeAsset {
  if (chain.family === 'ethereum') return { symbol: 'ETH', decimals: 18 };
  if (chain.family === 'tron') return { symbol: 'TRX', decimals: 6 };
  const n = UTXO_NETWORKS.find((x) => x.id === chain.network);
  if (!n) throw new RangeError(`network ${chain.network}: not a Bitcoin-family network`);
  return { symbol: n.symbol, decimals: 8 };
}

/**
 * Why an intent's asset is not one this configured chain signs, or undefined when it is: the
 * intent's `asset_id` must be `assetId(intent.blockchain, intent.asset_symbol)` (directory UUIDv5);
 * a native transfer (`asset_contract` null) must carry the chain's native symbol and decimals; a
 * token transfer must name a symbol of `chain.assets` with its decimals and its contract (EVM:
 * a valid address, compared case-insensitively; TRON: the base58check string, compared exactly).
 * @param intent the transfer intent (fields of any type: nothing is assumed)
 * @param chain the signer's own configuration of `intent.blockchain`
 * @returns a one-line reason naming the field (no secret is involved), or undefined
 */
export function assetMismatch(intent: TransferIntent, chain: ChainConfig): string | undefined {
  const { asset_symbol: symbol, asset_decimals: decimals, asset_contract: contract } = intent;
  if (typeof symbol !== 'string' || typeof intent.blockchain !== 'string') return 'asset_symbol: not a string';
  if (!Number.isSafeInteger(decimals)) return 'asset_decimals: not an integer';
  if (intent.asset_id !== assetId(intent.blockchain, symbol))
    return `asset_id is not the directory id of ${symbol} on ${intent.blockchain}`;
  if (contract === null) {
    const native = nativeAssetOf(chain);
    if (symbol !== native.symbol || decimals !== native.decimals)
      return `a native transfer on ${intent.blockchain} is ${native.symbol} with ${native.decimals} decimals`;
    return undefined;
  }
  if (typeof contract !== 'string') return 'asset_contract: not a string';
  if (chain.family === 'bitcoin') return `${intent.blockchain} has no tokens`;
  const assets = chain.assets ?? {};
  const token = Object.hasOwn(assets, symbol) ? assets[symbol] : undefined;
  if (!token) return `token ${symbol} is not configured for ${intent.blockchain}`;
  if (decimals !== token.decimals) return `token ${symbol} has ${token.decimals} decimals`;
  if (chain.family === 'ethereum') {
    try {
      validateEthereumAddress(contract, 'asset_contract');
    } catch {
      return 'asset_contract: not an EVM address';
    }
    if (contract.toLowerCase() !== token.contract.toLowerCase())
      return `asset_contract is not the configured contract of ${symbol}`;
  } else if (contract !== token.contract) {
    return `asset_contract is not the configured contract of ${symbol}`;
  }
  return undefined;
}
