/**
 * @custodian/chains — Ethereum, Bitcoin-family and TRON adapters (addresses, transaction build,
 * fees, broadcast) and deposit watchers. See README.md.
 */

// The adapter interface every chain family implements, and its request and fee types

export type {
  AssetRef,
  BuildTransferRequest,
  ChainAdapter,
  ChainInfo,
  ChainSignature,
  DigestSigner,
  DigestToSign,
  FeeEstimate,
  FeeLevel,
  Json,
  KeyRef,
  SignatureScheme,
  SignedTransfer,
  SourceAddress,
  TransferFields,
  UnsignedTransfer,
} from './types.js';

// Errors (the `chains` family)

export {
  BroadcastError,
  ChainError,
  InsufficientFundsError,
  InvalidAddressError,
  InvalidSignatureError,
  InvalidTransferError,
  NodeRpcError,
  ReorgTooDeepError,
} from './errors.js';

// Amounts: decimal and base units, price sources

export type { HttpPriceSourceOptions } from './prices.js';
export { FirstPriceSource, HttpPriceSource, PRICE_DECIMALS, priceText } from './prices.js';
export type { PriceSource } from './units.js';
export { formatUnits, parseUnits, StaticPriceSource, usdValue } from './units.js';

// ECDSA signature checks shared by the adapters

export { checkEcdsa, lowS } from './signatures.js';

// Derivation paths of deposit addresses

export type { AddressBranch } from './paths.js';
export { addressPath } from './paths.js';

// Ethereum: adapter (addresses, EIP-1559 transactions, fees, broadcast)

export type { EthereumAdapterOptions, EthereumContext } from './ethereum/adapter.js';
export {
  ETH_COIN_TYPE,
  EthereumAdapter,
  ethereumAddress,
  recomputeEthereumDigests,
  validateEthereumAddress,
} from './ethereum/adapter.js';

// Ethereum: deposit watcher

export type { EthereumWatcherOptions } from './ethereum/watcher.js';
export { EthereumWatcher } from './ethereum/watcher.js';

// Bitcoin family: networks (Bitcoin, Litecoin; main, test, regtest)

export type { UtxoNetwork } from './bitcoin/networks.js';
export {
  BITCOIN,
  BITCOIN_REGTEST,
  BITCOIN_TESTNET,
  LITECOIN,
  LITECOIN_REGTEST,
  LITECOIN_TESTNET,
  UTXO_NETWORKS,
} from './bitcoin/networks.js';

// Bitcoin family: Core JSON-RPC client

export type { BitcoinRpcOptions } from './bitcoin/rpc.js';
export { BitcoinRpc } from './bitcoin/rpc.js';

// Bitcoin family: adapter (P2WPKH and P2TR addresses, PSBT-free transactions, fees)

export type {
  BitcoinAdapterOptions,
  BitcoinContext,
  FixedInput,
  Utxo,
  UtxoAddressKind,
  UtxoSource,
} from './bitcoin/adapter.js';
export {
  BitcoinAdapter,
  cpfpChildFee,
  decodeUtxoAddress,
  dustThreshold,
  estimateVsize,
  RBF_SEQUENCE,
  recomputeBitcoinDigests,
  ScanTxOutSetSource,
  taprootOutputKey,
  taprootTweak,
  utxoAddress,
} from './bitcoin/adapter.js';

// Bitcoin family: UTXO deposit watcher

export type { UtxoWatcherOptions } from './bitcoin/watcher.js';
export { UtxoWatcher } from './bitcoin/watcher.js';

// TRON: addresses

export { decodeTronAddress, encodeTronAddress, tronAddress, tronAddressHex } from './tron/address.js';

// TRON: HTTP API client

export type { TronBlock, TronBlockTransaction, TronContractCall, TronLog, TronTransactionInfo } from './tron/client.js';
export { exactInt, quoteLongIntegers, TronHttpClient } from './tron/client.js';

// TRON: adapter (TRX and TRC-20 transfers)

export type { TronAdapterOptions, TronContext } from './tron/adapter.js';
export { recomputeTronDigests, TRX_COIN_TYPE, TronAdapter, tronTransactionJson } from './tron/adapter.js';

// TRON: deposit watcher

export type { TronWatcherOptions } from './tron/watcher.js';
export { TRC20_TRANSFER_TOPIC, TronWatcher } from './tron/watcher.js';

// Deposit watching: events, the store interface, the watcher interface

export type {
  AssetId,
  BalanceRow,
  BalanceUpdatedEvent,
  Cursor,
  PollingWatcher,
  TransactionDetectedEvent,
  UtxoRow,
  Watcher,
  WatcherCommit,
  WatcherEvent,
  WatcherListener,
  WatcherStore,
} from './watcher/types.js';

// A watcher store in a JSON file (development and tests)

export { JsonFileWatcherStore } from './watcher/json-store.js';
