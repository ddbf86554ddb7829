import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import {
  type Address,
  createPublicClient,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  http,
  keccak256,
  type PublicClient,
  serializeTransaction,
  type TransactionSerializableEIP1559,
} from 'viem';
import { BroadcastError, InvalidAddressError, InvalidTransferError, NodeRpcError } from '../errors.js';
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

/**
 * Everything besides the transfer fields that fixes an EIP-1559 transaction (JSON; integers as
 * decimal strings). A signer rebuilds the transaction from fields + context and hashes it.
 */
export interface EthereumContext {
  [key: string]: string | number | string[] | number[];
  chainId: number;
  /** Sender, EIP-55. */
  from: string;
  /** Sender's compressed public key, hex (33 bytes). */
  fromPublicKey: string;
  fromPath: number[];
  nonce: number;
  /** Gas limit. */
  gas: string;
  /** Wei per gas. */
  maxFeePerGas: string;
  maxPriorityFeePerGas: string;
}

export interface EthereumAdapterOptions {
  /** Chain id string, e.g. `ethereum`, `sepolia`, `anvil`. */
  id: string;
  /** EIP-155 chain id; checked against `eth_chainId` at first use. */
  chainId: number;
  rpcUrl: string;
  prices?: PriceSource;
  /** Reward percentiles of `eth_feeHistory` used for SLOW/STANDARD/FAST (default 10/50/90). */
  percentiles?: Record<FeeLevel, number>;
  /** Blocks of fee history (default 20). */
  feeHistoryBlocks?: number;
  /** Lowest priority fee offered, wei per gas (default 0.01 gwei), for empty-history chains. */
  minPriorityFeePerGas?: bigint;
  /** Gas estimate multiplier in percent (default 120) to absorb state changes. */
  gasMarginPercent?: number;
}

const DEFAULT_PERCENTILES: Record<FeeLevel, number> = { SLOW: 10, STANDARD: 50, FAST: 90 };

/** SLIP-0044 coin type of Ether. */
export const ETH_COIN_TYPE = 60;

/** Converts a 33-byte compressed (or 65-byte) secp256k1 key to its EIP-55 address (keccak256 of X‖Y, last 20 bytes). */
export function ethereumAddress(publicKey: Uint8Array): string {
  if (!(publicKey instanceof Uint8Array) || (publicKey.length !== 33 && publicKey.length !== 65))
    throw new RangeError('publicKey: expected 33 or 65 bytes');
  const point = secp256k1.Point.fromBytes(publicKey);
  const hash = keccak256(point.toBytes(false).subarray(1));
  return getAddress(`0x${hash.slice(-40)}`);
}

/**
 * Validates an Ethereum address: 0x + 40 hex; mixed case must match EIP-55, all-lower or
 * all-upper is accepted (no checksum). Returns the EIP-55 form.
 * @throws InvalidAddressError
 */
export function validateEthereumAddress(address: string, field = 'destination'): string {
  if (typeof address !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(address))
    throw new InvalidAddressError(field, 'format', 'expected 0x followed by 40 hex digits');
  const body = address.slice(2);
  const checksummed = getAddress(address);
  if (body !== body.toLowerCase() && body !== body.toUpperCase() && checksummed !== address)
    throw new InvalidAddressError(field, 'checksum', 'EIP-55 checksum mismatch');
  return checksummed;
}

function txFromFields(fields: TransferFields, ctx: EthereumContext): TransactionSerializableEIP1559 {
  const to = validateEthereumAddress(fields.destination) as Address;
  if (typeof fields.amount !== 'bigint' || fields.amount <= 0n) throw new InvalidTransferError('amount', 'must be > 0');
  const common = {
    type: 'eip1559' as const,
    chainId: ctx.chainId,
    nonce: ctx.nonce,
    gas: BigInt(ctx.gas),
    maxFeePerGas: BigInt(ctx.maxFeePerGas),
    maxPriorityFeePerGas: BigInt(ctx.maxPriorityFeePerGas),
  };
  if (common.maxPriorityFeePerGas > common.maxFeePerGas)
    throw new InvalidTransferError('maxPriorityFeePerGas', 'exceeds maxFeePerGas');
  if (fields.asset.kind === 'native') return { ...common, to, value: fields.amount, data: '0x' };
  const contract = validateEthereumAddress(fields.asset.contract, 'asset.contract') as Address;
  const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, fields.amount] });
  return { ...common, to: contract, value: 0n, data };
}

/**
 * Ethereum (and EVM) adapter: EIP-55 addresses, EIP-1559 (type 2, EIP-2718) transactions for ETH
 * and ERC-20 `transfer`, nonces from `eth_getTransactionCount(…, "pending")` plus this process's
 * own reservations, fees from `eth_feeHistory` percentiles × `eth_estimateGas`, same-nonce
 * replacement. Digest = keccak256(0x02 ‖ rlp([chainId, nonce, maxPriorityFeePerGas, maxFeePerGas,
 * gas, to, value, data, accessList])) (EIP-1559 §Specification).
 */
export class EthereumAdapter implements ChainAdapter<EthereumContext> {
  readonly chain: ChainInfo;
  readonly client: PublicClient;
  readonly #opts: Required<Omit<EthereumAdapterOptions, 'prices'>> & { prices: PriceSource };
  readonly #reserved = new Map<string, number>();
  #chainChecked = false;

  constructor(options: EthereumAdapterOptions) {
    this.#opts = {
      percentiles: DEFAULT_PERCENTILES,
      feeHistoryBlocks: 20,
      minPriorityFeePerGas: 10_000_000n,
      gasMarginPercent: 120,
      prices: new StaticPriceSource(),
      ...options,
    };
    this.chain = {
      id: options.id,
      family: 'ethereum',
      nativeSymbol: 'ETH',
      nativeDecimals: 18,
      coinType: ETH_COIN_TYPE,
    };
    this.client = createPublicClient({ transport: http(options.rpcUrl, { retryCount: 0 }) }) as PublicClient;
  }

  addressFromPublicKey(publicKey: Uint8Array): string {
    return ethereumAddress(publicKey);
  }

  validateAddress(address: string, field = 'destination'): string {
    return validateEthereumAddress(address, field);
  }

  async #rpc<T>(method: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      const code = (e as { code?: number }).code;
      throw new NodeRpcError(method, (e as Error).message.split('\n')[0] ?? 'failed', code, { cause: e });
    }
  }

  async #checkChain(): Promise<void> {
    if (this.#chainChecked) return;
    const id = await this.#rpc('eth_chainId', () => this.client.getChainId());
    if (id !== this.#opts.chainId)
      throw new NodeRpcError('eth_chainId', `node is on chain ${id}, expected ${this.#opts.chainId}`);
    this.#chainChecked = true;
  }

  /** Per-level fees: baseFee of the next block, priority = percentile median, maxFee = 2·baseFee + priority. */
  async feesPerGas(
    level: FeeLevel,
  ): Promise<{ baseFeePerGas: bigint; maxPriorityFeePerGas: bigint; maxFeePerGas: bigint }> {
    const pct = this.#opts.percentiles[level];
    const history = await this.#rpc('eth_feeHistory', () =>
      this.client.getFeeHistory({
        blockCount: this.#opts.feeHistoryBlocks,
        rewardPercentiles: [pct],
        blockTag: 'latest',
      }),
    );
    const baseFeePerGas = history.baseFeePerGas.at(-1) ?? 0n;
    const rewards = (history.reward ?? []).map((r) => r[0] ?? 0n).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const median = rewards.length > 0 ? (rewards[rewards.length >> 1] ?? 0n) : 0n;
    const maxPriorityFeePerGas = median > this.#opts.minPriorityFeePerGas ? median : this.#opts.minPriorityFeePerGas;
    return { baseFeePerGas, maxPriorityFeePerGas, maxFeePerGas: 2n * baseFeePerGas + maxPriorityFeePerGas };
  }

  #source(request: BuildTransferRequest) {
    if (request.sources.length !== 1)
      throw new InvalidTransferError('sources', 'an Ethereum transfer has exactly one source address');
    const src = request.sources[0];
    if (src === undefined) throw new InvalidTransferError('sources', 'missing');
    const from = validateEthereumAddress(src.address, 'sources[0].address');
    if (ethereumAddress(src.publicKey) !== from)
      throw new InvalidTransferError('sources[0]', 'public key does not match the address');
    return { ...src, address: from };
  }

  async #estimateGas(fields: TransferFields, from: string): Promise<bigint> {
    const probe = txFromFields(fields, {
      chainId: this.#opts.chainId,
      from,
      fromPublicKey: '',
      fromPath: [],
      nonce: 0,
      gas: '0',
      maxFeePerGas: '0',
      maxPriorityFeePerGas: '0',
    });
    const gas = await this.#rpc('eth_estimateGas', () =>
      this.client.estimateGas({
        account: from as Address,
        to: probe.to as Address,
        value: probe.value,
        data: probe.data,
      }),
    );
    return (gas * BigInt(this.#opts.gasMarginPercent) + 99n) / 100n;
  }

  /** Next nonce for `from`: max(pending transaction count, this process's next reservation). */
  async nextNonce(from: string): Promise<number> {
    const pending = await this.#rpc('eth_getTransactionCount', () =>
      this.client.getTransactionCount({ address: from as Address, blockTag: 'pending' }),
    );
    const reserved = this.#reserved.get(from) ?? 0;
    const nonce = Math.max(pending, reserved);
    this.#reserved.set(from, nonce + 1);
    return nonce;
  }

  async buildTransfer(request: BuildTransferRequest): Promise<UnsignedTransfer<EthereumContext>> {
    await this.#checkChain();
    const src = this.#source(request);
    const fields = request.fields;
    txFromFields(fields, {
      chainId: 0,
      from: '',
      fromPublicKey: '',
      fromPath: [],
      nonce: 0,
      gas: '0',
      maxFeePerGas: '0',
      maxPriorityFeePerGas: '0',
    });
    const [gas, fees] = await Promise.all([
      this.#estimateGas(fields, src.address),
      this.feesPerGas(request.feeLevel ?? 'STANDARD'),
    ]);
    const nonce = await this.nextNonce(src.address);
    const context: EthereumContext = {
      chainId: this.#opts.chainId,
      from: src.address,
      fromPublicKey: bytesToHex(src.publicKey),
      fromPath: [...src.path],
      nonce,
      gas: gas.toString(),
      maxFeePerGas: fees.maxFeePerGas.toString(),
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas.toString(),
    };
    return this.#assemble(fields, context);
  }

  #assemble(fields: TransferFields, context: EthereumContext): UnsignedTransfer<EthereumContext> {
    const tx = txFromFields(fields, context);
    return {
      chain: this.chain.id,
      fields,
      unsignedTx: hexToBytes(serializeTransaction(tx).slice(2)),
      digests: this.recomputeDigests(fields, context),
      context,
      maxFee: BigInt(context.gas) * BigInt(context.maxFeePerGas),
    };
  }

  recomputeDigests(fields: TransferFields, context: EthereumContext): DigestToSign[] {
    return recomputeEthereumDigests(fields, context);
  }

  attachSignatures(unsigned: UnsignedTransfer<EthereumContext>, signatures: readonly ChainSignature[]): SignedTransfer {
    const d = unsigned.digests[0];
    const sig = signatures[0];
    if (d === undefined || signatures.length !== 1 || sig === undefined)
      throw new InvalidTransferError('signatures', 'expected exactly one signature');
    checkEcdsa(0, d, sig, false);
    if (sig.scheme !== 'ecdsa') throw new InvalidTransferError('signatures', 'expected ECDSA');
    const tx = txFromFields(unsigned.fields, unsigned.context);
    const toHex32 = (v: bigint) => `0x${v.toString(16).padStart(64, '0')}` as Hex;
    const raw = serializeTransaction(tx, { r: toHex32(sig.r), s: toHex32(sig.s), yParity: sig.recovery });
    return { chain: this.chain.id, rawTx: hexToBytes(raw.slice(2)), txid: keccak256(raw) };
  }

  async estimateFee(request: BuildTransferRequest, level: FeeLevel): Promise<FeeEstimate> {
    await this.#checkChain();
    const src = this.#source(request);
    const [gas, fees] = await Promise.all([this.#estimateGas(request.fields, src.address), this.feesPerGas(level)]);
    const expected = gas * (fees.baseFeePerGas + fees.maxPriorityFeePerGas);
    const price = await this.#opts.prices.usdPrice('ETH');
    return {
      fee_value: formatUnits(expected, 18),
      fee_value_usd: usdValue(expected, 18, price),
      fee_currency: 'ETH',
      metadata: {
        gas_limit: gas.toString(),
        base_fee_per_gas: fees.baseFeePerGas.toString(),
        max_priority_fee_per_gas: fees.maxPriorityFeePerGas.toString(),
        max_fee_per_gas: fees.maxFeePerGas.toString(),
        max_fee_value: formatUnits(gas * fees.maxFeePerGas, 18),
        percentile: this.#opts.percentiles[level],
      },
    };
  }

  async broadcast(signed: SignedTransfer): Promise<string> {
    try {
      return await this.client.sendRawTransaction({ serializedTransaction: `0x${bytesToHex(signed.rawTx)}` });
    } catch (e) {
      const { reason, summary } = nodeRefusal(e);
      throw new BroadcastError(`eth_sendRawTransaction: ${reason}${summary ? ` (${summary})` : ''}`, {
        cause: e,
        reason,
      });
    }
  }

  /**
   * Same nonce, same fields, fees raised to max(level estimate, previous × 1.125 + 1 wei) on both
   * maxFeePerGas and maxPriorityFeePerGas (nodes require ≥ 10 % more to replace).
   */
  async buildReplacement(
    previous: UnsignedTransfer<EthereumContext>,
    level: FeeLevel,
  ): Promise<UnsignedTransfer<EthereumContext>> {
    const fees = await this.feesPerGas(level);
    const bump = (old: bigint, fresh: bigint) => {
      const min = (old * 1125n) / 1000n + 1n;
      return fresh > min ? fresh : min;
    };
    const maxPriorityFeePerGas = bump(BigInt(previous.context.maxPriorityFeePerGas), fees.maxPriorityFeePerGas);
    let maxFeePerGas = bump(BigInt(previous.context.maxFeePerGas), fees.maxFeePerGas);
    if (maxFeePerGas < maxPriorityFeePerGas) maxFeePerGas = maxPriorityFeePerGas;
    return this.#assemble(previous.fields, {
      ...previous.context,
      maxFeePerGas: maxFeePerGas.toString(),
      maxPriorityFeePerGas: maxPriorityFeePerGas.toString(),
    });
  }
}

/**
 * The node's own reason of a failed viem call: the JSON-RPC error's message (viem `details`, e.g.
 * `nonce too low`) found on the error or its cause chain, else the first line of the message; and
 * viem's summary of the error class with its JSON-RPC code (e.g. `Transaction creation failed.,
 * RPC code -32003`). Never the RPC URL or the request body (viem keeps those in `metaMessages`).
 * Capped at 500 characters.
 */
function nodeRefusal(e: unknown): { reason: string; summary: string } {
  type ViemLike = { details?: unknown; shortMessage?: unknown; message?: unknown; code?: unknown; cause?: unknown };
  let details: string | undefined;
  let code: number | undefined;
  for (let c = e as ViemLike | undefined, i = 0; c && typeof c === 'object' && i < 8; c = c.cause as ViemLike, i++) {
    if (details === undefined && typeof c.details === 'string' && c.details.trim() !== '') details = c.details.trim();
    if (code === undefined && typeof c.code === 'number') code = c.code;
  }
  const top = (e ?? {}) as ViemLike;
  const short = typeof top.shortMessage === 'string' ? top.shortMessage : String(top.message ?? e).split('\n')[0];
  const cap = (s: string) => (s.length > 500 ? `${s.slice(0, 500)}…` : s);
  if (details === undefined)
    return { reason: cap(short ?? 'unknown error'), summary: code !== undefined ? `RPC code ${code}` : '' };
  return {
    reason: cap(details),
    summary: [short, code !== undefined ? `RPC code ${code}` : ''].filter(Boolean).join(', '),
  };
}

/** Pure digest recomputation for signers: keccak256 of the unsigned EIP-1559 serialisation. */
export function recomputeEthereumDigests(fields: TransferFields, context: EthereumContext): DigestToSign[] {
  const tx = txFromFields(fields, context);
  const publicKey = hexToBytes(context.fromPublicKey);
  if (ethereumAddress(publicKey) !== validateEthereumAddress(context.from, 'context.from'))
    throw new InvalidTransferError('context.fromPublicKey', 'does not match context.from');
  const digest = hexToBytes(keccak256(serializeTransaction(tx)).slice(2));
  return [{ digest, scheme: 'ecdsa', key: { publicKey, path: [...context.fromPath] }, inputIndex: 0 }];
}
