/**
 * The built-in directory of blockchains and assets (seed §2 "Asset", "Blockchain").
 *
 * Identifiers are UUIDv5 (RFC 9562 §5.5) of a stable name under {@link DIRECTORY_NAMESPACE}, so
 * every instance gives the same blockchain or asset the same `blockchain_id` / `asset_id`:
 * `blockchain_id = v5("blockchain:<key>")`, `asset_id = v5("asset:<blockchain key>:<symbol>")`.
 * The namespace and both functions are defined once in `@custodian/wire` (signers and phones check
 * an intent's `asset_id` with the same function) and re-exported here.
 *
 * Which entries a profile sees: an entry is enabled for a profile unless an admin disabled it
 * there; by default, mainnets and public testnets are enabled, and the local development
 * networks (`development: true`) are enabled only on instances in development mode.
 */
import { assetId, blockchainId } from '@custodian/wire';
import type { Queryable } from './db/db.js';

export { assetId, blockchainId, DIRECTORY_NAMESPACE } from '@custodian/wire';

/** Chain family: selects the address codec and, later, the chain adapter. */
export type ChainFamily = 'ethereum' | 'bitcoin' | 'litecoin' | 'tron';

/** A built-in blockchain. */
export interface BlockchainDef {
  /** Stable key, e.g. `ethereum-mainnet`; returned as the asset's `blockchain`. */
  readonly key: string;
  readonly name: string;
  readonly family: ChainFamily;
  /** `mainnet`, `sepolia`, `testnet`, `regtest`, `nile`, `local`. */
  readonly network: string;
  /** EIP-155 chain id (Ethereum, decimal) or TRON genesis-derived id (hex); null for Bitcoin-family. */
  readonly chainId: string | null;
  /**
   * SLIP-0044 coin type used at path level 2: `m/44/{coin_type}/{wallet_index}/0/{address_index}`.
   * Every test network of the Bitcoin family and of TRON uses 1 (so a test-network approval never
   * signs with a mainnet key: a TRON transaction has no chain id); Ethereum test networks keep 60
   * (EIP-155 chain ids separate them).
   */
  readonly coinType: number;
  readonly accountModel: 'account' | 'utxo';
  readonly curve: 'secp256k1' | 'ed25519';
  readonly testnet: boolean;
  /** Local development network (anvil, regtest): enabled by default only in development mode. */
  readonly development: boolean;
  /**
   * Default fee cap of a transfer (`TransferIntent.max_fee`): base units of the native asset
   * (wei, satoshi/litoshi, sun), decimal string. Approvers sign it; signers refuse a transaction
   * whose fee can exceed it.
   */
  readonly defaultMaxFee: string;
}

/** A built-in asset. `decimals` converts decimal amounts to integer base units. */
export interface AssetDef {
  readonly blockchain: string;
  readonly symbol: string;
  readonly name: string;
  readonly decimals: number;
  readonly kind: 'native' | 'erc20' | 'trc20';
  readonly contractAddress: string | null;
}

const eth = (key: string, name: string, network: string, chainId: number, testnet: boolean, development = false) =>
  ({
    key,
    name,
    family: 'ethereum',
    network,
    chainId: String(chainId),
    coinType: 60,
    accountModel: 'account',
    curve: 'secp256k1',
    testnet,
    development,
    defaultMaxFee: '10000000000000000', // 0.01 ETH
  }) as const satisfies BlockchainDef;

const utxo = (
  family: 'bitcoin' | 'litecoin',
  key: string,
  name: string,
  network: string,
  coinType: number,
  testnet: boolean,
  development = false,
) =>
  ({
    key,
    name,
    family,
    network,
    chainId: null,
    coinType,
    accountModel: 'utxo',
    curve: 'secp256k1',
    testnet,
    development,
    defaultMaxFee: family === 'bitcoin' ? '100000' : '1000000', // 0.001 BTC, 0.01 LTC
  }) as const satisfies BlockchainDef;

/** Every built-in blockchain, in display order. */
export const BLOCKCHAINS: readonly BlockchainDef[] = [
  eth('ethereum-mainnet', 'Ethereum', 'mainnet', 1, false),
  eth('ethereum-sepolia', 'Ethereum Sepolia', 'sepolia', 11155111, true),
  eth('ethereum-local', 'Ethereum local development (anvil)', 'local', 31337, true, true),
  utxo('bitcoin', 'bitcoin-mainnet', 'Bitcoin', 'mainnet', 0, false),
  utxo('bitcoin', 'bitcoin-testnet', 'Bitcoin testnet', 'testnet', 1, true),
  utxo('bitcoin', 'bitcoin-regtest', 'Bitcoin regtest', 'regtest', 1, true, true),
  utxo('litecoin', 'litecoin-mainnet', 'Litecoin', 'mainnet', 2, false),
  utxo('litecoin', 'litecoin-testnet', 'Litecoin testnet', 'testnet', 1, true),
  utxo('litecoin', 'litecoin-regtest', 'Litecoin regtest', 'regtest', 1, true, true),
  {
    key: 'tron-mainnet',
    name: 'TRON',
    family: 'tron',
    network: 'mainnet',
    chainId: '0x2b6653dc',
    coinType: 195,
    accountModel: 'account',
    curve: 'secp256k1',
    testnet: false,
    development: false,
    defaultMaxFee: '50000000', // 50 TRX
  },
  {
    key: 'tron-nile',
    name: 'TRON Nile testnet',
    family: 'tron',
    network: 'nile',
    chainId: '0xcd8690dc',
    coinType: 1, // a test network: not the mainnet key (195)
    accountModel: 'account',
    curve: 'secp256k1',
    testnet: true,
    development: false,
    defaultMaxFee: '50000000', // 50 TRX
  },
];

const native = (blockchain: string, symbol: string, name: string, decimals: number): AssetDef => ({
  blockchain,
  symbol,
  name,
  decimals,
  kind: 'native',
  contractAddress: null,
});
const token = (
  blockchain: string,
  kind: 'erc20' | 'trc20',
  symbol: string,
  name: string,
  decimals: number,
  contractAddress: string,
): AssetDef => ({ blockchain, symbol, name, decimals, kind, contractAddress });

/** Every built-in asset: native coins, then USDT/USDC where they have a canonical contract. */
export const ASSETS: readonly AssetDef[] = [
  native('ethereum-mainnet', 'ETH', 'Ether', 18),
  token('ethereum-mainnet', 'erc20', 'USDT', 'Tether USD', 6, '0xdAC17F958D2ee523a2206206994597C13D831ec7'),
  token('ethereum-mainnet', 'erc20', 'USDC', 'USD Coin', 6, '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48'),
  native('ethereum-sepolia', 'ETH', 'Sepolia Ether', 18),
  token('ethereum-sepolia', 'erc20', 'USDC', 'USD Coin (Sepolia)', 6, '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238'),
  native('ethereum-local', 'ETH', 'Ether (local)', 18),
  // The first contract anvil's dev account 0 (0xf39F…2266, the default mnemonic) deploys on a fresh
  // chain (CREATE address of that account at nonce 0): the ERC-20 of the local end-to-end tests.
  token('ethereum-local', 'erc20', 'TST', 'Test Token (local)', 6, '0x5FbDB2315678afecb367f032d93F642f64180aa3'),
  native('bitcoin-mainnet', 'BTC', 'Bitcoin', 8),
  native('bitcoin-testnet', 'BTC', 'Bitcoin (testnet)', 8),
  native('bitcoin-regtest', 'BTC', 'Bitcoin (regtest)', 8),
  native('litecoin-mainnet', 'LTC', 'Litecoin', 8),
  native('litecoin-testnet', 'LTC', 'Litecoin (testnet)', 8),
  native('litecoin-regtest', 'LTC', 'Litecoin (regtest)', 8),
  native('tron-mainnet', 'TRX', 'TRON', 6),
  token('tron-mainnet', 'trc20', 'USDT', 'Tether USD', 6, 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t'),
  token('tron-mainnet', 'trc20', 'USDC', 'USD Coin', 6, 'TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8'),
  native('tron-nile', 'TRX', 'TRON (Nile)', 6),
  token('tron-nile', 'trc20', 'USDT', 'Tether USD (Nile)', 6, 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf'),
];

/** Look a built-in blockchain up by key. */
export function blockchainByKey(key: string): BlockchainDef | undefined {
  return BLOCKCHAINS.find((b) => b.key === key);
}

/**
 * The native asset of a blockchain (the asset fees are paid in: ETH, BTC, LTC, TRX).
 * @throws RangeError for a key that is not in the directory
 */
export function nativeAssetOf(key: string): AssetDef {
  const a = ASSETS.find((x) => x.blockchain === key && x.kind === 'native');
  if (a === undefined) throw new RangeError(`${key}: not a blockchain of the directory`);
  return a;
}

/**
 * Resolve the operator's fee caps (`CoordinatorOptions.transfers.feeCaps`): blockchain key →
 * cap in base units of the native asset (decimal integer string), every other blockchain keeping
 * its {@link BlockchainDef.defaultMaxFee}. The cap goes into every new transfer's intent
 * (`TransferIntent.max_fee`), which the approvers sign.
 * @returns blockchain key → cap (base units) for every blockchain of the directory
 * @throws RangeError naming `transfers.feeCaps.<key>` for an unknown blockchain or a value that is
 *   not a decimal integer string (no sign, no decimals, at most 78 digits)
 */
export function resolveFeeCaps(feeCaps: Readonly<Record<string, string>> = {}): ReadonlyMap<string, bigint> {
  const out = new Map(BLOCKCHAINS.map((b) => [b.key, BigInt(b.defaultMaxFee)] as const));
  for (const [key, v] of Object.entries(feeCaps)) {
    if (!out.has(key)) throw new RangeError(`transfers.feeCaps.${key}: not a blockchain of the directory`);
    if (typeof v !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(v))
      throw new RangeError(
        `transfers.feeCaps.${key}: expected a decimal integer string of base units of the native asset, e.g. "10000000000000000"`,
      );
    out.set(key, BigInt(v));
  }
  return out;
}

/**
 * Upsert the built-in directory into the store (idempotent; run at every start after migrations).
 * @param development whether development networks are enabled by default on this instance
 */
export async function syncDirectory(q: Queryable, development: boolean): Promise<void> {
  for (const [i, b] of BLOCKCHAINS.entries()) {
    await q.query(
      `INSERT INTO blockchains (blockchain_id, key, name, family, network, chain_id, coin_type, account_model, curve,
         testnet, development, default_enabled, sort)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)
       ON CONFLICT (blockchain_id) DO UPDATE SET name = EXCLUDED.name, family = EXCLUDED.family,
         network = EXCLUDED.network, chain_id = EXCLUDED.chain_id, coin_type = EXCLUDED.coin_type,
         account_model = EXCLUDED.account_model, curve = EXCLUDED.curve, testnet = EXCLUDED.testnet,
         development = EXCLUDED.development, default_enabled = EXCLUDED.default_enabled, sort = EXCLUDED.sort`,
      [
        blockchainId(b.key),
        b.key,
        b.name,
        b.family,
        b.network,
        b.chainId,
        b.coinType,
        b.accountModel,
        b.curve,
        b.testnet,
        b.development,
        !b.development || development,
        i,
      ],
    );
  }
  for (const [i, a] of ASSETS.entries()) {
    await q.query(
      `INSERT INTO assets (asset_id, blockchain_id, symbol, name, decimals, kind, contract_address, sort)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8)
       ON CONFLICT (asset_id) DO UPDATE SET name = EXCLUDED.name, decimals = EXCLUDED.decimals, kind = EXCLUDED.kind,
         contract_address = EXCLUDED.contract_address, sort = EXCLUDED.sort`,
      [
        assetId(a.blockchain, a.symbol),
        blockchainId(a.blockchain),
        a.symbol,
        a.name,
        a.decimals,
        a.kind,
        a.contractAddress,
        i,
      ],
    );
  }
}
