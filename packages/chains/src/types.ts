/**
 * The one adapter interface every chain family implements, and the shapes it exchanges with the
 * coordinator (transfers, fees, watching) and the signers (digests, signatures).
 *
 * Conventions: amounts are integer base units as `bigint` (wei, satoshi/litoshi, sun, token base
 * units); `context` objects are JSON values (hex strings for bytes, decimal strings for amounts) so
 * they travel to signers unchanged; public keys are 33-byte SEC1-compressed secp256k1 points.
 */

/** Fee priority of the REST API (seed §4). */
export type FeeLevel = 'SLOW' | 'STANDARD' | 'FAST';
export const FEE_LEVELS: readonly FeeLevel[] = ['SLOW', 'STANDARD', 'FAST'];

/** Signature scheme a digest must be signed with: ECDSA (CGGMP21) or BIP340 Schnorr (FROST, Taproot). */
export type SignatureScheme = 'ecdsa' | 'schnorr';

/** Asset of a transfer: the chain's native coin, or a token contract (ERC-20 / TRC-20). */
export type AssetRef =
  | { readonly kind: 'native' }
  | { readonly kind: 'token'; readonly contract: string; readonly symbol: string; readonly decimals: number };

/** What the client asked for; the fields a signer recomputes digests from. */
export interface TransferFields {
  readonly asset: AssetRef;
  /** Destination address in the chain's text form. */
  readonly destination: string;
  /** Amount in base units, > 0. */
  readonly amount: bigint;
}

/** A derived key that can sign: compressed public key (33 bytes) and its non-hardened path from the master key. */
export interface KeyRef {
  readonly publicKey: Uint8Array;
  readonly path: readonly number[];
}

/** A wallet address the transfer spends from (Bitcoin: one of several; Ethereum/TRON: the one). */
export interface SourceAddress extends KeyRef {
  readonly address: string;
}

/**
 * One 32-byte message a signer must sign.
 * - `ecdsa`: sign `digest` as is (no further hashing), return (r, s, recovery); Bitcoin needs low s.
 * - `schnorr`: BIP340 signature of `digest` under the key `P + t·G` with `t = taprootTweak`
 *   (BIP341 key-path: the x-only internal key P, with even-Y normalisation before and after).
 */
export interface DigestToSign {
  readonly digest: Uint8Array;
  readonly scheme: SignatureScheme;
  readonly key: KeyRef;
  /** BIP341 TapTweak t = H_TapTweak(x(P)) (32 bytes), only for `schnorr`. */
  readonly taprootTweak?: Uint8Array;
  /** Transaction input this digest belongs to (Bitcoin); 0 for account chains. */
  readonly inputIndex: number;
}

/** A signature from the signers. */
export type ChainSignature =
  | { readonly scheme: 'ecdsa'; readonly r: bigint; readonly s: bigint; readonly recovery: number }
  | { readonly scheme: 'schnorr'; readonly signature: Uint8Array };

/** A JSON value (what `context` objects are made of). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** Output of `buildTransfer`. */
export interface UnsignedTransfer<C extends Json = Json> {
  readonly chain: string;
  readonly fields: TransferFields;
  /** The unsigned transaction's serialisation (Ethereum: EIP-2718 type-2 payload; Bitcoin: unsigned tx; TRON: raw_data protobuf). */
  readonly unsignedTx: Uint8Array;
  readonly digests: DigestToSign[];
  /** Everything besides `fields` needed to rebuild the transaction and its digests (see `recomputeDigests`). */
  readonly context: C;
  /** Highest fee this transaction can pay, in native base units. */
  readonly maxFee: bigint;
}

/** A signed transaction ready to broadcast. */
export interface SignedTransfer {
  readonly chain: string;
  readonly rawTx: Uint8Array;
  /** Transaction id as the chain's explorers show it (hex, 0x-prefixed for Ethereum). */
  readonly txid: string;
}

/** Fee estimate (seed §4 response). */
export interface FeeEstimate {
  /** Decimal string in the native coin (e.g. "0.000021"). */
  readonly fee_value: string;
  /** Decimal string in USD with 2 decimals, or null when the price source has no price. */
  readonly fee_value_usd: string | null;
  /** Native coin symbol: ETH, BTC, LTC, TRX. */
  readonly fee_currency: string;
  readonly metadata: Record<string, Json>;
}

/** Static facts of one chain. */
export interface ChainInfo {
  /** Stable id, e.g. `ethereum`, `bitcoin-regtest`, `litecoin`, `tron`. */
  readonly id: string;
  readonly family: 'ethereum' | 'bitcoin' | 'tron';
  readonly nativeSymbol: string;
  readonly nativeDecimals: number;
  /** SLIP-0044 coin type used in `m/44/{coin_type}/{wallet}/{change}/{index}`. */
  readonly coinType: number;
}

/** Request to build (or estimate) a transfer. */
export interface BuildTransferRequest {
  readonly fields: TransferFields;
  /** Addresses the wallet may spend from (account chains: exactly one). */
  readonly sources: readonly SourceAddress[];
  /** Fresh change address (UTXO chains). */
  readonly change?: SourceAddress;
  readonly feeLevel?: FeeLevel;
}

/**
 * A chain family adapter. Implementations: {@link EthereumAdapter}, {@link BitcoinAdapter},
 * {@link TronAdapter}. An adapter never sees a private key.
 */
export interface ChainAdapter<C extends Json = Json> {
  readonly chain: ChainInfo;
  /** Address of a 33-byte compressed public key (Bitcoin: `kind` selects P2WPKH or P2TR). */
  addressFromPublicKey(publicKey: Uint8Array, kind?: string): string;
  /** Validates an address for this network; returns its canonical form. Throws InvalidAddressError (422). */
  validateAddress(address: string, field?: string): string;
  /** Builds the unsigned transaction and the digests to sign. */
  buildTransfer(request: BuildTransferRequest): Promise<UnsignedTransfer<C>>;
  /**
   * Pure: rebuilds the transaction from `fields` and `context` and returns its digests, for a
   * signer to compare with the digest it is asked to sign. Throws when the context is inconsistent
   * with the fields.
   */
  recomputeDigests(fields: TransferFields, context: C): DigestToSign[];
  /** Checks every signature against its digest and key, then serialises the signed transaction. */
  attachSignatures(unsigned: UnsignedTransfer<C>, signatures: readonly ChainSignature[]): SignedTransfer;
  /** Fee for the transfer at one priority. */
  estimateFee(request: BuildTransferRequest, level: FeeLevel): Promise<FeeEstimate>;
  /** Sends a signed transaction; returns its txid. Throws BroadcastError when the node refuses it. */
  broadcast(signed: SignedTransfer): Promise<string>;
  /** Builds a replacement paying a higher fee (same nonce / RBF) for a transfer not yet mined. */
  buildReplacement(previous: UnsignedTransfer<C>, level: FeeLevel): Promise<UnsignedTransfer<C>>;
}

/** Signs digests: in production the threshold signers; in tests a test-only key holder. */
export type DigestSigner = (request: DigestToSign) => Promise<ChainSignature>;
