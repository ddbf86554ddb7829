import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { encodeFunctionData, erc20Abi } from 'viem';
import { BroadcastError, ChainError, InvalidTransferError } from '../errors.js';
import { checkEcdsa } from '../signatures.js';
import type {
  BuildTransferRequest,
  ChainAdapter,
  ChainInfo,
  ChainSignature,
  DigestToSign,
  FeeEstimate,
  FeeLevel,
  SignedTransfer,
  TransferFields,
  UnsignedTransfer,
} from '../types.js';
import { formatUnits, type PriceSource, StaticPriceSource, usdValue } from '../units.js';
import { decodeTronAddress, encodeTronAddress, tronAddress } from './address.js';
import type { TronHttpClient } from './client.js';
import {
  CONTRACT_TYPE,
  int64,
  TransactionRawType,
  TransactionType,
  TransferContractType,
  TriggerSmartContractType,
} from './proto.js';

/** SLIP-0044 coin type of TRX (TRON mainnet; every TRON test network uses 1, as Bitcoin-family test networks do). */
export const TRX_COIN_TYPE = 195;

/** Rebuild data of a TRON transfer (JSON). */
export interface TronContext {
  [key: string]: string | number | number[];
  /**
   * TRON network the transaction is built for (`mainnet`, `nile`, `shasta`). Not part of the signed
   * bytes: a TRON transaction carries no chain id, it is bound to a network only by its reference
   * block, which a signer cannot verify offline. Signers compare this name with their own
   * configuration (issue #20); a context without it is refused by enforcing signers.
   */
  network: string;
  from: string;
  fromPublicKey: string;
  fromPath: number[];
  /** Bytes 6..8 of the reference block's height (2 bytes, hex). */
  refBlockBytes: string;
  /** Bytes 8..16 of the reference block id (8 bytes, hex). */
  refBlockHash: string;
  /** Milliseconds since the epoch. */
  expiration: number;
  timestamp: number;
  /** Sun; TRC-20 only ("0" for TRX). */
  feeLimit: string;
}

export interface TronAdapterOptions {
  id?: string;
  /** Network name written into every context (default: from `id`, `tron-nile` → `nile`; `tron`/`tron-mainnet` → `mainnet`). */
  network?: string;
  client: TronHttpClient;
  prices?: PriceSource;
  /** Lifetime of a built transaction, ms (default 10 minutes; TRON allows up to 24 h). */
  expirationMs?: number;
  /** TRC-20 fee limit, sun (default 30 TRX). */
  feeLimit?: bigint;
  /** Clock, for tests (ms). */
  now?: () => number;
}

/**
 * Bandwidth bytes beyond raw_data that java-tron bills: the raw_data field framing (tag + 2-byte
 * length), the signature field (tag + length + 65 bytes) and `MAX_RESULT_SIZE_IN_TX` = 64.
 */
const BANDWIDTH_OVERHEAD = 3 + 67 + 64;

function rawData(fields: TransferFields, ctx: TronContext): Uint8Array {
  if (typeof fields.amount !== 'bigint' || fields.amount <= 0n) throw new InvalidTransferError('amount', 'must be > 0');
  if (fields.amount >= 2n ** 63n) throw new InvalidTransferError('amount', 'exceeds int64');
  const owner = decodeTronAddress(ctx.from, 'context.from');
  const to = decodeTronAddress(fields.destination);
  let contract: { type: number; parameter: { type_url: string; value: Uint8Array } };
  let feeLimit = 0n;
  if (fields.asset.kind === 'native') {
    const value = TransferContractType.encode(
      TransferContractType.create({ owner_address: owner, to_address: to, amount: int64(fields.amount) }),
    ).finish();
    contract = {
      type: CONTRACT_TYPE.TransferContract,
      parameter: { type_url: 'type.googleapis.com/protocol.TransferContract', value },
    };
  } else {
    const token = decodeTronAddress(fields.asset.contract, 'asset.contract');
    const data = hexToBytes(
      encodeFunctionData({
        abi: erc20Abi,
        functionName: 'transfer',
        args: [`0x${bytesToHex(to.subarray(1))}`, fields.amount],
      }).slice(2),
    );
    const value = TriggerSmartContractType.encode(
      TriggerSmartContractType.create({ owner_address: owner, contract_address: token, data }),
    ).finish();
    contract = {
      type: CONTRACT_TYPE.TriggerSmartContract,
      parameter: { type_url: 'type.googleapis.com/protocol.TriggerSmartContract', value },
    };
    feeLimit = BigInt(ctx.feeLimit);
    if (feeLimit <= 0n) throw new InvalidTransferError('context.feeLimit', 'a TRC-20 transfer needs a fee limit');
  }
  const refBytes = hexToBytes(ctx.refBlockBytes);
  const refHash = hexToBytes(ctx.refBlockHash);
  if (refBytes.length !== 2 || refHash.length !== 8)
    throw new InvalidTransferError('context.refBlock', 'ref_block_bytes is 2 bytes, ref_block_hash 8 bytes');
  const raw = TransactionRawType.create({
    ref_block_bytes: refBytes,
    ref_block_hash: refHash,
    expiration: int64(BigInt(ctx.expiration)),
    contract: [contract],
    timestamp: int64(BigInt(ctx.timestamp)),
    ...(feeLimit > 0n ? { fee_limit: int64(feeLimit) } : {}),
  });
  return TransactionRawType.encode(raw).finish();
}

/** Pure digest recomputation: txID = SHA-256(raw_data), signed by ECDSA with recovery id. */
export function recomputeTronDigests(fields: TransferFields, ctx: TronContext): DigestToSign[] {
  const publicKey = hexToBytes(ctx.fromPublicKey);
  if (tronAddress(publicKey) !== ctx.from)
    throw new InvalidTransferError('context.fromPublicKey', 'does not match context.from');
  return [
    {
      digest: sha256(rawData(fields, ctx)),
      scheme: 'ecdsa',
      key: { publicKey, path: [...ctx.fromPath] },
      inputIndex: 0,
    },
  ];
}

/** TRON's JSON form of a transaction (as `/wallet/broadcasttransaction` and tronweb use it), `visible: false` (hex addresses). */
export function tronTransactionJson(
  fields: TransferFields,
  ctx: TronContext,
  signatures: string[] = [],
): Record<string, unknown> {
  const raw = rawData(fields, ctx);
  const owner = bytesToHex(decodeTronAddress(ctx.from));
  const to = bytesToHex(decodeTronAddress(fields.destination));
  const contract =
    fields.asset.kind === 'native'
      ? {
          parameter: {
            value: { owner_address: owner, to_address: to, amount: Number(fields.amount) },
            type_url: 'type.googleapis.com/protocol.TransferContract',
          },
          type: 'TransferContract',
        }
      : {
          parameter: {
            value: {
              owner_address: owner,
              contract_address: bytesToHex(decodeTronAddress(fields.asset.contract)),
              data: encodeFunctionData({
                abi: erc20Abi,
                functionName: 'transfer',
                args: [`0x${to.slice(2)}`, fields.amount],
              }).slice(2),
            },
            type_url: 'type.googleapis.com/protocol.TriggerSmartContract',
          },
          type: 'TriggerSmartContract',
        };
  return {
    visible: false,
    txID: bytesToHex(sha256(raw)),
    raw_data: {
      contract: [contract],
      ref_block_bytes: ctx.refBlockBytes,
      ref_block_hash: ctx.refBlockHash,
      expiration: ctx.expiration,
      timestamp: ctx.timestamp,
      ...(fields.asset.kind === 'token' ? { fee_limit: Number(ctx.feeLimit) } : {}),
    },
    raw_data_hex: bytesToHex(raw),
    signature: signatures,
  };
}

/**
 * TRON adapter: base58check addresses (0x41), TRX (`TransferContract`) and TRC-20
 * (`TriggerSmartContract` calling `transfer(address,uint256)`) transactions encoded with
 * protobufjs; txID = SHA-256(raw_data); signatures r ‖ s ‖ v (v = 27 + recovery id, as tronweb
 * and java-tron use); fees from bandwidth (`getTransactionFee` sun/byte beyond free and staked
 * bandwidth) and energy (`getEnergyFee` × `triggerconstantcontract` energy). TRON has no fee
 * market, so SLOW/STANDARD/FAST are equal, and no replacement: a stuck transaction expires.
 */
export class TronAdapter implements ChainAdapter<TronContext> {
  readonly chain: ChainInfo;
  readonly client: TronHttpClient;
  readonly #prices: PriceSource;
  readonly #expirationMs: number;
  readonly #feeLimit: bigint;
  readonly #now: () => number;
  /** Network name of the contexts built ({@link TronContext.network}). */
  readonly network: string;

  constructor(o: TronAdapterOptions) {
    const id = o.id ?? 'tron';
    this.network = o.network ?? (id.replace(/^tron-?/, '') || 'mainnet');
    this.chain = {
      id,
      family: 'tron',
      nativeSymbol: 'TRX',
      nativeDecimals: 6,
      // a TRON transaction has no chain id: test networks must not share the mainnet key
      coinType: this.network === 'mainnet' ? TRX_COIN_TYPE : 1,
    };
    this.client = o.client;
    this.#prices = o.prices ?? new StaticPriceSource();
    this.#expirationMs = o.expirationMs ?? 10 * 60_000;
    this.#feeLimit = o.feeLimit ?? 30_000_000n;
    this.#now = o.now ?? Date.now;
  }

  addressFromPublicKey(publicKey: Uint8Array): string {
    return tronAddress(publicKey);
  }

  validateAddress(address: string, field = 'destination'): string {
    return encodeTronAddress(decodeTronAddress(address, field));
  }

  #source(request: BuildTransferRequest) {
    const src = request.sources[0];
    if (request.sources.length !== 1 || src === undefined)
      throw new InvalidTransferError('sources', 'a TRON transfer has exactly one source address');
    if (tronAddress(src.publicKey) !== this.validateAddress(src.address, 'sources[0].address'))
      throw new InvalidTransferError('sources[0]', 'public key does not match the address');
    return src;
  }

  async buildTransfer(request: BuildTransferRequest): Promise<UnsignedTransfer<TronContext>> {
    const src = this.#source(request);
    this.validateAddress(request.fields.destination);
    const block = await this.client.nowBlock();
    const height = BigInt(block.number);
    const now = this.#now();
    const context: TronContext = {
      network: this.network,
      from: src.address,
      fromPublicKey: bytesToHex(src.publicKey),
      fromPath: [...src.path],
      refBlockBytes: (height & 0xffffn).toString(16).padStart(4, '0'),
      refBlockHash: block.blockID.slice(16, 32),
      expiration: Math.max(now, block.timestamp) + this.#expirationMs,
      timestamp: now,
      feeLimit: request.fields.asset.kind === 'token' ? this.#feeLimit.toString() : '0',
    };
    return this.#assemble(request.fields, context);
  }

  #assemble(fields: TransferFields, context: TronContext): UnsignedTransfer<TronContext> {
    const raw = rawData(fields, context);
    return {
      chain: this.chain.id,
      fields,
      unsignedTx: raw,
      digests: recomputeTronDigests(fields, context),
      context,
      maxFee: BigInt(context.feeLimit),
    };
  }

  recomputeDigests(fields: TransferFields, context: TronContext): DigestToSign[] {
    return recomputeTronDigests(fields, context);
  }

  attachSignatures(unsigned: UnsignedTransfer<TronContext>, signatures: readonly ChainSignature[]): SignedTransfer {
    const digests = recomputeTronDigests(unsigned.fields, unsigned.context);
    const d = digests[0] as DigestToSign;
    const sig = signatures[0];
    if (signatures.length !== 1 || sig === undefined)
      throw new InvalidTransferError('signatures', 'expected exactly one signature');
    checkEcdsa(0, d, sig, false);
    if (sig.scheme !== 'ecdsa') throw new InvalidTransferError('signatures', 'expected ECDSA');
    const signature = hexToBytes(
      sig.r.toString(16).padStart(64, '0') + sig.s.toString(16).padStart(64, '0') + (27 + sig.recovery).toString(16),
    );
    const raw = TransactionRawType.decode(rawData(unsigned.fields, unsigned.context));
    const tx = TransactionType.encode(TransactionType.create({ raw_data: raw, signature: [signature] })).finish();
    return { chain: this.chain.id, rawTx: tx, txid: bytesToHex(d.digest) };
  }

  async estimateFee(request: BuildTransferRequest, level: FeeLevel): Promise<FeeEstimate> {
    const src = this.#source(request);
    const unsigned = await this.buildTransfer(request);
    const [params, resources] = await Promise.all([
      this.client.chainParameters(),
      this.client.accountResource(src.address),
    ]);
    const bandwidth = unsigned.unsignedTx.length + BANDWIDTH_OVERHEAD;
    const perByte = BigInt(params.get('getTransactionFee') ?? 1000);
    const bandwidthFee =
      bandwidth <= resources.stakedBandwidth || bandwidth <= resources.freeBandwidth ? 0n : BigInt(bandwidth) * perByte;
    let energy = 0;
    let energyFee = 0n;
    let accountCreation = 0n;
    if (request.fields.asset.kind === 'token') {
      const c = unsigned.context;
      const data = tronTransactionJson(request.fields, c) as {
        raw_data: { contract: { parameter: { value: { data: string } } }[] };
      };
      energy = await this.client.estimateEnergy(
        src.address,
        request.fields.asset.contract,
        data.raw_data.contract[0]?.parameter.value.data ?? '',
      );
      energyFee = BigInt(Math.max(0, energy - resources.energy)) * BigInt(params.get('getEnergyFee') ?? 420);
    } else if (!(await this.client.accountExists(request.fields.destination))) {
      accountCreation = BigInt(params.get('getCreateNewAccountFeeInSystemContract') ?? 1_000_000);
    }
    const total = bandwidthFee + energyFee + accountCreation;
    const price = await this.#prices.usdPrice('TRX');
    return {
      fee_value: formatUnits(total, 6),
      fee_value_usd: usdValue(total, 6, price),
      fee_currency: 'TRX',
      metadata: {
        level,
        note: 'TRON has no fee market: every priority costs the same',
        bandwidth_bytes: bandwidth,
        bandwidth_fee_sun: bandwidthFee.toString(),
        energy,
        energy_fee_sun: energyFee.toString(),
        account_creation_fee_sun: accountCreation.toString(),
        fee_limit_sun: unsigned.context.feeLimit,
      },
    };
  }

  async broadcast(signed: SignedTransfer): Promise<string> {
    const r = await this.client.broadcastHex(bytesToHex(signed.rawTx));
    if (r.result !== true) {
      let message = r.message ?? '';
      if (/^[0-9a-f]+$/i.test(message) && message.length % 2 === 0)
        message = new TextDecoder().decode(hexToBytes(message));
      throw new BroadcastError(`broadcasthex: ${r.code ?? 'FAILED'} ${message}`.trim());
    }
    if (r.txid !== undefined && r.txid !== signed.txid)
      throw new BroadcastError(`node reports txid ${r.txid}, expected ${signed.txid}`);
    return signed.txid;
  }

  /** TRON has no replace-by-fee: a transaction that is not mined expires at `context.expiration`. */
  async buildReplacement(): Promise<UnsignedTransfer<TronContext>> {
    throw new ChainError(
      'REPLACEMENT_NOT_SUPPORTED',
      'TRON has no fee replacement; the transaction expires at its expiration time',
      422,
    );
  }
}
