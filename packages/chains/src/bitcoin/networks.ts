import type { BTC_NETWORK } from '@scure/btc-signer/utils.js';

/**
 * Explicit parameters of the Bitcoin-family networks supported. `bech32` is the segwit HRP
 * (BIP173/BIP350); the base58 version bytes are those of each chain's `chainparams.cpp`.
 */
export interface UtxoNetwork {
  readonly id: string;
  readonly coin: 'bitcoin' | 'litecoin';
  readonly symbol: 'BTC' | 'LTC';
  readonly params: BTC_NETWORK;
  /** SLIP-0044 coin type (1 for every test network). */
  readonly coinType: number;
}

const net = (
  id: string,
  coin: 'bitcoin' | 'litecoin',
  bech32: string,
  pubKeyHash: number,
  scriptHash: number,
  wif: number,
  coinType: number,
): UtxoNetwork => ({
  id,
  coin,
  symbol: coin === 'bitcoin' ? 'BTC' : 'LTC',
  params: { bech32, pubKeyHash, scriptHash, wif },
  coinType,
});

export const BITCOIN = net('bitcoin', 'bitcoin', 'bc', 0x00, 0x05, 0x80, 0);
export const BITCOIN_TESTNET = net('bitcoin-testnet', 'bitcoin', 'tb', 0x6f, 0xc4, 0xef, 1);
export const BITCOIN_REGTEST = net('bitcoin-regtest', 'bitcoin', 'bcrt', 0x6f, 0xc4, 0xef, 1);
export const LITECOIN = net('litecoin', 'litecoin', 'ltc', 0x30, 0x32, 0xb0, 2);
export const LITECOIN_TESTNET = net('litecoin-testnet', 'litecoin', 'tltc', 0x6f, 0x3a, 0xef, 1);
export const LITECOIN_REGTEST = net('litecoin-regtest', 'litecoin', 'rltc', 0x6f, 0x3a, 0xef, 1);

export const UTXO_NETWORKS: readonly UtxoNetwork[] = [
  BITCOIN,
  BITCOIN_TESTNET,
  BITCOIN_REGTEST,
  LITECOIN,
  LITECOIN_TESTNET,
  LITECOIN_REGTEST,
];
