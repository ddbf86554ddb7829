/**
 * The blockchains a signer (or a phone) signs for — the `chains` object of a server signer's
 * config file, and the `--chains` file of the phone simulator — and its validation. The transfer
 * checks (enforce/) take chain ids / networks, fee ceilings, coin types and tokens from here, never
 * from the coordinator.
 */
import { decodeTronAddress, UTXO_NETWORKS, validateEthereumAddress } from '@custodian/chains';
import { ConfigError, type ConfigSchema, checkConfig } from './config-check.js';

/**
 * One blockchain a signer signs for, under its directory key (`ethereum-local`, `tron-nile`,
 * `litecoin-regtest`, … — packages/coordinator/src/directory.ts). The signer takes the chain id /
 * network and the coin type of wallet paths from here, never from the coordinator:
 * - `ethereum`: `chainId`, the EIP-155 chain id (positive integer); coin type 60;
 * - `bitcoin` (the Bitcoin family, Litecoin included): `network`, an id of `UTXO_NETWORKS`
 *   (`bitcoin`, `bitcoin-testnet`, `bitcoin-regtest`, `litecoin`, `litecoin-testnet`,
 *   `litecoin-regtest`), which fixes the address HRP / version bytes and the coin type;
 * - `tron`: `network` (`mainnet`, `nile`, `shasta`; the TRON context names the network it was built
 *   for); coin type 195 on `mainnet`, 1 on every other (test) network.
 * `maxFee`: the signer's own ceiling on the fee of one transaction, base units of the native asset
 * (wei, satoshi/litoshi, sun), decimal string; enforced besides the cap the approvers signed.
 * `assets` (`ethereum` and `tron` only; optional, default none): the tokens this signer signs
 * transfers of, by the symbol the directory gives them ({@link AssetConfig}). The native asset is
 * implied (ETH, 18 decimals, on every EVM chain; BTC / LTC, 8, by network; TRX, 6): an intent whose
 * asset is neither is refused (`ASSET_MISMATCH`).
 */
export type ChainConfig =
  | {
      readonly family: 'ethereum';
      readonly chainId: number;
      readonly maxFee: string;
      readonly assets?: Readonly<Record<string, AssetConfig>>;
    }
  | { readonly family: 'bitcoin'; readonly network: string; readonly maxFee: string }
  | {
      readonly family: 'tron';
      readonly network: string;
      readonly maxFee: string;
      readonly assets?: Readonly<Record<string, AssetConfig>>;
    };

/**
 * A token a signer signs for (`chains.<key>.assets.<SYMBOL>`): `contract` — ERC-20: `0x` + 40 hex
 * (mixed case must be EIP-55; compared case-insensitively), TRC-20: base58check `T…` (compared
 * exactly); `decimals` — the token's decimals (integer 0..77), which is what approvers are shown
 * amounts in. The symbol is the directory's (case-sensitive), so the asset id is
 * `assetId(<blockchain key>, <symbol>)` (`@custodian/wire`).
 */
export interface AssetConfig {
  readonly contract: string;
  readonly decimals: number;
}

/** Blockchain key → {@link ChainConfig}. */
export type ChainsConfig = Readonly<Record<string, ChainConfig>>;

function parseAssets(
  raw: unknown,
  f: string,
  family: 'ethereum' | 'tron',
): Readonly<Record<string, AssetConfig>> | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ConfigError(`${f}: expected an object of token symbol → { contract, decimals }`);
  const out: Record<string, AssetConfig> = {};
  for (const [symbol, v] of Object.entries(raw as Record<string, unknown>)) {
    const af = `${f}.${symbol}`;
    if (!/^[A-Za-z0-9]{1,16}$/.test(symbol))
      throw new ConfigError(`${af}: not a token symbol (1 to 16 letters or digits)`);
    if (symbol === (family === 'ethereum' ? 'ETH' : 'TRX'))
      throw new ConfigError(`${af}: the native asset is implied, not a token`);
    if (typeof v !== 'object' || v === null) throw new ConfigError(`${af}: expected { "contract", "decimals" }`);
    const r = v as Record<string, unknown>;
    if (typeof r.contract !== 'string') throw new ConfigError(`${af}.contract: expected a contract address string`);
    try {
      if (family === 'ethereum') validateEthereumAddress(r.contract, `${af}.contract`);
      else decodeTronAddress(r.contract, `${af}.contract`);
    } catch {
      throw new ConfigError(
        `${af}.contract: ${family === 'ethereum' ? 'not an EVM address (0x + 40 hex, EIP-55 when mixed case)' : 'not a TRON base58check address'}`,
      );
    }
    if (!Number.isSafeInteger(r.decimals) || (r.decimals as number) < 0 || (r.decimals as number) > 77)
      throw new ConfigError(`${af}.decimals: expected an integer 0..77`);
    out[symbol] = { contract: r.contract, decimals: r.decimals as number };
  }
  return out;
}

/**
 * The JSON Schema of a `chains` object ({@link ChainsConfig}): its keys (an unknown key is an
 * error naming its closest valid spelling, config-check.ts); values are checked by
 * {@link parseChainsConfig}. Documented in docs/configuration.md.
 */
export const CHAINS_CONFIG_SCHEMA: ConfigSchema = {
  type: 'object',
  additionalProperties: {
    type: 'object',
    properties: {
      family: { enum: ['ethereum', 'bitcoin', 'tron'] },
      chainId: {},
      network: {},
      maxFee: {},
      assets: {
        additionalProperties: {
          type: 'object',
          properties: { contract: {}, decimals: {} },
          additionalProperties: false,
        },
      },
    },
    additionalProperties: false,
  },
};

/**
 * Validate a `chains` object ({@link ChainsConfig}).
 * @param field the name errors start with (`chains`)
 * @throws ConfigError naming the failing field, e.g. `chains.tron-nile.network`,
 *   `chains.tron-nile.assets.USDT.contract`
 */
export function parseChainsConfig(raw: unknown, field = 'chains'): ChainsConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ConfigError(
      `${field}: expected an object of blockchain key → { family, chainId | network, maxFee, assets? }`,
    );
  checkConfig(CHAINS_CONFIG_SCHEMA, raw, field);
  const out: Record<string, ChainConfig> = {};
  for (const [key, v] of Object.entries(raw as Record<string, unknown>)) {
    const f = `${field}.${key}`;
    if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(key)) throw new ConfigError(`${f}: not a blockchain key`);
    if (typeof v !== 'object' || v === null) throw new ConfigError(`${f}: expected an object`);
    const r = v as Record<string, unknown>;
    if (typeof r.maxFee !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(r.maxFee))
      throw new ConfigError(`${f}.maxFee: expected a decimal string of base units`);
    const maxFee = r.maxFee;
    if (r.family === 'ethereum') {
      if (!Number.isSafeInteger(r.chainId) || (r.chainId as number) < 1)
        throw new ConfigError(`${f}.chainId: expected a positive integer (EIP-155)`);
      const assets = parseAssets(r.assets, `${f}.assets`, 'ethereum');
      out[key] = { family: 'ethereum', chainId: r.chainId as number, maxFee, ...(assets ? { assets } : {}) };
    } else if (r.family === 'bitcoin') {
      if (typeof r.network !== 'string' || !UTXO_NETWORKS.some((n) => n.id === r.network))
        throw new ConfigError(`${f}.network: one of ${UTXO_NETWORKS.map((n) => n.id).join(', ')}`);
      if (r.assets !== undefined) throw new ConfigError(`${f}.assets: the Bitcoin family has no tokens`);
      out[key] = { family: 'bitcoin', network: r.network, maxFee };
    } else if (r.family === 'tron') {
      if (typeof r.network !== 'string' || !/^[a-z0-9-]{1,32}$/.test(r.network))
        throw new ConfigError(`${f}.network: expected a TRON network name (mainnet, nile, shasta)`);
      const assets = parseAssets(r.assets, `${f}.assets`, 'tron');
      out[key] = { family: 'tron', network: r.network, maxFee, ...(assets ? { assets } : {}) };
    } else {
      throw new ConfigError(`${f}.family: ethereum, bitcoin or tron`);
    }
  }
  return out;
}
