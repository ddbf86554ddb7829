/**
 * The Bitcoin-family chain adapter (Bitcoin, Litecoin; P2WPKH and P2TR/BIP86 wallets): addresses,
 * coin selection and fee estimation, unsigned transactions with their BIP143/BIP341 sighashes,
 * signature attachment and verification, broadcast and confirmation through the node's RPC.
 * Longer than 400 lines because building, signing and checking a transaction share one set of
 * input/output rules, kept next to each other so a change to one is seen by the others.
 */
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import * as btc from '@scure/btc-signer';
import {
  BroadcastError,
  InsufficientFundsError,
  InvalidAddressError,
  InvalidSignatureError,
  InvalidTransferError,
  NodeRpcError,
} from '../errors.js';
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
  SourceAddress,
  TransferFields,
  UnsignedTransfer,
} from '../types.js';
import { formatUnits, type PriceSource, parseUnits, StaticPriceSource, usdValue } from '../units.js';
import { UTXO_NETWORKS, type UtxoNetwork } from './networks.js';
import type { BitcoinRpc } from './rpc.js';

/** Address kinds a wallet key can have. */
export type UtxoAddressKind = 'p2wpkh' | 'p2tr';

/** A spendable output of one of the wallet's addresses. */
export interface Utxo {
  txid: string;
  vout: number;
  /** Base units (satoshi / litoshi). */
  value: bigint;
  address: string;
}

/** Where unspent outputs come from: the node (`scantxoutset`) or the coordinator's indexer. */
export interface UtxoSource {
  listUnspent(addresses: readonly string[]): Promise<Utxo[]>;
}

interface ContextInput {
  [key: string]: string | number | number[];
  txid: string;
  vout: number;
  value: string;
  address: string;
  kind: UtxoAddressKind;
  publicKey: string;
  path: number[];
}

interface ContextChange {
  [key: string]: string | number[];
  address: string;
  publicKey: string;
  path: number[];
  kind: UtxoAddressKind;
  value: string;
}

/** Rebuild data of a UTXO transfer (JSON): inputs with their keys, change, fee, version fields. */
export interface BitcoinContext {
  [key: string]: string | number | ContextInput[] | ContextChange | null;
  network: string;
  version: number;
  lockTime: number;
  /** nSequence of every input; 0xfffffffd signals replaceability (BIP125). */
  sequence: number;
  inputs: ContextInput[];
  change: ContextChange | null;
  /** Fee paid, base units. */
  fee: string;
  /** Fee rate aimed at, base units per vbyte (decimal string, may have decimals). */
  feeRate: string;
}

export interface BitcoinAdapterOptions {
  network: UtxoNetwork;
  rpc: BitcoinRpc;
  /** Default: the node's `scantxoutset` (confirmed outputs). */
  utxos?: UtxoSource;
  prices?: PriceSource;
  /** `estimatesmartfee` confirmation targets per level (default 24 / 6 / 2 blocks). */
  targets?: Record<FeeLevel, number>;
  /**
   * Fee rates (base units per vbyte) used when the node has no estimate, e.g. on regtest (default
   * Bitcoin 2 / 5 / 10, Litecoin 10 / 20 / 40 — Litecoin's minimum relay fee is 10 litoshi/vB).
   */
  fallbackFeeRates?: Record<FeeLevel, number>;
}

/** Virtual sizes (vbytes) for estimation; witness bytes count ¼ (BIP141). */
const VSIZE = {
  overhead: 10.5, // version 4, locktime 4, in/out counts 1+1, segwit marker+flag 2/4
  input: { p2wpkh: 68, p2tr: 57.5 } as Record<UtxoAddressKind, number>, // 41 + 107/4 (sig ≤72 + key 33); 41 + 66/4 (64-byte sig)
  output: { wpkh: 31, tr: 43, wsh: 43, pkh: 34, sh: 32 } as Record<string, number>,
  /** Output of a wallet (change) address kind. */
  walletOutput: { p2wpkh: 31, p2tr: 43 } as Record<UtxoAddressKind, number>,
};

/** Dust thresholds at the default dust relay fee 3 sat/vB (Bitcoin Core `GetDustThreshold`). */
const DUST: Record<string, bigint> = { wpkh: 294n, tr: 330n, wsh: 330n, pkh: 546n, sh: 540n };

/** RBF-signalling nSequence (BIP125): < 0xfffffffe. */
export const RBF_SEQUENCE = 0xfffffffd;

const SIGHASH_ALL = 1;
const SIGHASH_DEFAULT = 0;

/** BIP341 key-path tweak t = H_TapTweak(x(P)) for an internal key with no script tree (BIP86). */
export function taprootTweak(publicKey: Uint8Array): Uint8Array {
  const x = publicKey.length === 33 ? publicKey.subarray(1) : publicKey;
  return schnorr.utils.taggedHash('TapTweak', x);
}

/** The output key Q = lift_x(x(P)) + t·G, x-only (32 bytes) — what a P2TR output commits to. */
export function taprootOutputKey(publicKey: Uint8Array): Uint8Array {
  const x = publicKey.subarray(publicKey.length === 33 ? 1 : 0);
  const [q] = btc.utils.taprootTweakPubkey(x, new Uint8Array(0));
  return q;
}

/**
 * The wallet address of a key on a Bitcoin-family network: P2WPKH (BIP141, bech32) of the
 * compressed key, or P2TR (BIP341 key path, BIP86: internal key = x(P), no script tree, bech32m).
 * @param publicKey 33-byte SEC1-compressed secp256k1 key
 * @throws RangeError for a key of another length or not on the curve
 */
export function utxoAddress(network: UtxoNetwork, publicKey: Uint8Array, kind: UtxoAddressKind): string {
  return addressOf(network, publicKey, kind);
}

function addressOf(network: UtxoNetwork, publicKey: Uint8Array, kind: UtxoAddressKind): string {
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== 33)
    throw new RangeError('publicKey: expected 33 bytes (compressed)');
  secp256k1.Point.fromBytes(publicKey); // validates the point
  const pay =
    kind === 'p2wpkh'
      ? btc.p2wpkh(publicKey, network.params)
      : btc.p2tr(publicKey.subarray(1), undefined, network.params);
  if (pay.address === undefined) throw new Error('unreachable: no address');
  return pay.address;
}

/**
 * Decodes and checks an address for `network`; returns its output type (`wpkh`, `tr`, `wsh`, `pkh`, `sh`).
 * @throws InvalidAddressError (wrong network names the network it belongs to)
 */
export function decodeUtxoAddress(
  network: UtxoNetwork,
  address: string,
  field = 'destination',
): { type: string; script: Uint8Array } {
  if (typeof address !== 'string' || address.length === 0 || address.length > 100)
    throw new InvalidAddressError(field, 'format', 'not an address');
  try {
    const decoded = btc.Address(network.params).decode(address);
    if (!(decoded.type in DUST))
      throw new InvalidAddressError(field, 'unsupported-type', `output type ${decoded.type} is not supported`);
    return { type: decoded.type, script: btc.OutScript.encode(decoded) };
  } catch (e) {
    if (e instanceof InvalidAddressError) throw e;
    for (const other of UTXO_NETWORKS) {
      if (other.params === network.params) continue;
      try {
        btc.Address(other.params).decode(address);
        if (other.params.bech32 === network.params.bech32 && other.params.pubKeyHash === network.params.pubKeyHash)
          continue;
        throw new InvalidAddressError(field, 'wrong-network', `address of ${other.id}, not ${network.id}`);
      } catch (inner) {
        if (inner instanceof InvalidAddressError) throw inner;
      }
    }
    const msg = String((e as Error).message ?? e);
    throw new InvalidAddressError(
      field,
      /checksum/i.test(msg) ? 'checksum' : 'format',
      `invalid ${network.id} address (${msg})`,
    );
  }
}

function kindOf(network: UtxoNetwork, address: string, field: string): UtxoAddressKind {
  const { type } = decodeUtxoAddress(network, address, field);
  if (type === 'wpkh') return 'p2wpkh';
  if (type === 'tr') return 'p2tr';
  throw new InvalidTransferError(field, 'wallet addresses are P2WPKH or P2TR');
}

const ceil = (x: number) => BigInt(Math.ceil(x));

/** Builds the transaction of fields + context (no signatures) and checks the context's keys own its addresses. */
function buildTx(network: UtxoNetwork, fields: TransferFields, ctx: BitcoinContext): btc.Transaction {
  if (ctx.network !== network.id) throw new InvalidTransferError('context.network', `expected ${network.id}`);
  if (fields.asset.kind !== 'native')
    throw new InvalidTransferError('asset', 'UTXO chains transfer the native coin only');
  if (typeof fields.amount !== 'bigint' || fields.amount <= 0n) throw new InvalidTransferError('amount', 'must be > 0');
  const dest = decodeUtxoAddress(network, fields.destination);
  if (fields.amount < (DUST[dest.type] ?? 546n))
    throw new InvalidTransferError('amount', `below the dust threshold ${DUST[dest.type]} of a ${dest.type} output`);
  if (ctx.inputs.length === 0) throw new InvalidTransferError('context.inputs', 'no inputs');
  const tx = new btc.Transaction({ version: ctx.version, lockTime: ctx.lockTime });
  let total = 0n;
  for (const [i, input] of ctx.inputs.entries()) {
    const pub = hexToBytes(input.publicKey);
    if (addressOf(network, pub, input.kind) !== input.address)
      throw new InvalidTransferError(`context.inputs[${i}]`, 'key does not own the address');
    const script = decodeUtxoAddress(network, input.address, `context.inputs[${i}].address`).script;
    const amount = BigInt(input.value);
    total += amount;
    tx.addInput({
      txid: input.txid,
      index: input.vout,
      sequence: ctx.sequence,
      witnessUtxo: { script, amount },
      ...(input.kind === 'p2tr' ? { tapInternalKey: pub.subarray(1) } : {}),
    });
  }
  tx.addOutput({ script: dest.script, amount: fields.amount });
  let out = fields.amount;
  if (ctx.change !== null) {
    const c = ctx.change;
    if (addressOf(network, hexToBytes(c.publicKey), c.kind) !== c.address)
      throw new InvalidTransferError('context.change', 'key does not own the change address');
    const value = BigInt(c.value);
    const type = c.kind === 'p2wpkh' ? 'wpkh' : 'tr';
    if (value < (DUST[type] ?? 546n)) throw new InvalidTransferError('context.change.value', 'change below dust');
    tx.addOutput({ script: decodeUtxoAddress(network, c.address, 'context.change.address').script, amount: value });
    out += value;
  }
  if (total - out !== BigInt(ctx.fee)) throw new InvalidTransferError('context.fee', 'inputs − outputs ≠ fee');
  return tx;
}

/** Pure digest recomputation: BIP143 (P2WPKH, SIGHASH_ALL) and BIP341 (P2TR key path, SIGHASH_DEFAULT) per input. */
export function recomputeBitcoinDigests(
  network: UtxoNetwork,
  fields: TransferFields,
  ctx: BitcoinContext,
): DigestToSign[] {
  const tx = buildTx(network, fields, ctx);
  const scripts = ctx.inputs.map((i) => decodeUtxoAddress(network, i.address).script);
  const amounts = ctx.inputs.map((i) => BigInt(i.value));
  return ctx.inputs.map((input, i): DigestToSign => {
    const publicKey = hexToBytes(input.publicKey);
    const key = { publicKey, path: [...input.path] };
    if (input.kind === 'p2wpkh') {
      // BIP143 scriptCode of P2WPKH is the P2PKH script of the key hash.
      const scriptCode = btc.OutScript.encode({ type: 'pkh', hash: btc.p2wpkh(publicKey).hash as Uint8Array });
      return {
        digest: tx.preimageWitnessV0(i, scriptCode, SIGHASH_ALL, amounts[i] as bigint),
        scheme: 'ecdsa',
        key,
        inputIndex: i,
      };
    }
    return {
      digest: tx.preimageWitnessV1(i, scripts, SIGHASH_DEFAULT, amounts),
      scheme: 'schnorr',
      key,
      taprootTweak: taprootTweak(publicKey),
      inputIndex: i,
    };
  });
}

/** A fixed input of a self-spend: the outpoint, its value and the key of its address. */
export interface FixedInput extends Utxo {
  /** 33-byte compressed key owning `address`. */
  publicKey: Uint8Array;
  /** Derivation path of that key below the master key. */
  path: readonly number[];
}

/**
 * Estimated virtual size (vbytes, fractional) of a transaction with inputs of `inputKinds`, one
 * output to `destination` and, when `changeKind` is given, a change output of that kind.
 */
export function estimateVsize(
  network: UtxoNetwork,
  inputKinds: readonly UtxoAddressKind[],
  destination: string,
  changeKind?: UtxoAddressKind,
): number {
  const dest = decodeUtxoAddress(network, destination);
  return (
    VSIZE.overhead +
    (VSIZE.output[dest.type] ?? 43) +
    inputKinds.reduce((a, k) => a + VSIZE.input[k], 0) +
    (changeKind === undefined ? 0 : VSIZE.walletOutput[changeKind])
  );
}

/** Dust threshold (base units) of an output paying `address` (Bitcoin Core's at 3 sat/vB). */
export function dustThreshold(network: UtxoNetwork, address: string): bigint {
  return DUST[decodeUtxoAddress(network, address).type] ?? 546n;
}

/**
 * CPFP (child pays for parent): the fee (base units) a child spending one output of an
 * unconfirmed parent must pay so that the package (parent + child) reaches `targetRate`
 * (base units per vbyte): ceil(targetRate × (⌈parentVsize⌉ + ⌈childVsize⌉)) − parentFee, and never
 * less than the child alone needs at `minRate` (the node's relay fee): ceil(minRate × childVsize).
 * @throws RangeError for a negative or non-finite size or rate
 */
export function cpfpChildFee(o: {
  parentVsize: number;
  parentFee: bigint;
  childVsize: number;
  targetRate: number;
  minRate: number;
}): bigint {
  for (const [k, v] of Object.entries(o))
    if (typeof v === 'number' && (!Number.isFinite(v) || v < 0))
      throw new RangeError(`${k}: expected a finite number ≥ 0`);
  // sizes rounded up to whole vbytes as the node counts them (vsize = ⌈weight / 4⌉)
  const packageFee = ceil(o.targetRate * (Math.ceil(o.parentVsize) + Math.ceil(o.childVsize))) - o.parentFee;
  const alone = ceil(o.minRate * o.childVsize);
  if (packageFee < alone) return alone;
  return packageFee;
}

/**
 * Bitcoin-family adapter (Bitcoin and Litecoin, mainnet/testnet/regtest) over `@scure/btc-signer`:
 * P2WPKH (BIP84-style, bech32) and P2TR (BIP86 key path, bech32m) addresses; UTXO selection
 * across several addresses (largest first), change to a fresh change address, dust rules; BIP143
 * and BIP341 digests; low-S DER and BIP340 signatures; RBF (BIP125) signalling and bumping;
 * fees = `estimatesmartfee` rate × estimated vsize.
 */
export class BitcoinAdapter implements ChainAdapter<BitcoinContext> {
  readonly chain: ChainInfo;
  readonly network: UtxoNetwork;
  readonly rpc: BitcoinRpc;
  readonly #utxos: UtxoSource;
  readonly #prices: PriceSource;
  readonly #targets: Record<FeeLevel, number>;
  readonly #fallback: Record<FeeLevel, number>;

  constructor(o: BitcoinAdapterOptions) {
    this.network = o.network;
    this.rpc = o.rpc;
    this.chain = {
      id: o.network.id,
      family: 'bitcoin',
      nativeSymbol: o.network.symbol,
      nativeDecimals: 8,
      coinType: o.network.coinType,
    };
    this.#utxos = o.utxos ?? new ScanTxOutSetSource(o.rpc, o.network);
    this.#prices = o.prices ?? new StaticPriceSource();
    this.#targets = o.targets ?? { SLOW: 24, STANDARD: 6, FAST: 2 };
    this.#fallback =
      o.fallbackFeeRates ??
      (o.network.coin === 'litecoin' ? { SLOW: 10, STANDARD: 20, FAST: 40 } : { SLOW: 2, STANDARD: 5, FAST: 10 });
  }

  addressFromPublicKey(publicKey: Uint8Array, kind: string = 'p2wpkh'): string {
    if (kind !== 'p2wpkh' && kind !== 'p2tr') throw new RangeError('kind: p2wpkh or p2tr');
    return addressOf(this.network, publicKey, kind);
  }

  validateAddress(address: string, field = 'destination'): string {
    decodeUtxoAddress(this.network, address, field);
    return address;
  }

  /** The node's relay fee and BIP125 incremental fee, base units per vbyte (`getnetworkinfo`, coin/kvB). */
  async relayFees(): Promise<{ relayFee: number; incrementalFee: number }> {
    const info = await this.rpc.call<{ relayfee: number; incrementalfee: number }>('getnetworkinfo');
    const perVbyte = (x: number) => Number(parseUnits(x.toFixed(8), 8, 'fee')) / 1000;
    return { relayFee: perVbyte(info.relayfee), incrementalFee: perVbyte(info.incrementalfee) };
  }

  /**
   * Fee rate in base units per vbyte for a level: `estimatesmartfee` (coin/kvB → per vbyte), else
   * the configured fallback; never below the node's relay fee.
   */
  async feeRate(level: FeeLevel): Promise<{ rate: number; source: 'estimatesmartfee' | 'fallback'; target: number }> {
    const target = this.#targets[level];
    const [r, { relayFee }] = await Promise.all([
      this.rpc.call<{ feerate?: number; errors?: string[] }>('estimatesmartfee', [target]),
      this.relayFees(),
    ]);
    if (typeof r.feerate === 'number' && r.feerate > 0) {
      const perKvB = parseUnits(r.feerate.toFixed(8), 8, 'feerate');
      return { rate: Math.max(relayFee, Number(perKvB) / 1000), source: 'estimatesmartfee', target };
    }
    return { rate: Math.max(relayFee, this.#fallback[level]), source: 'fallback', target };
  }

  #select(
    fields: TransferFields,
    sources: readonly SourceAddress[],
    change: SourceAddress | undefined,
    utxos: Utxo[],
    rate: number,
  ) {
    const dest = decodeUtxoAddress(this.network, fields.destination);
    const byAddress = new Map(sources.map((s) => [s.address, s]));
    const changeKind = change === undefined ? 'p2wpkh' : kindOf(this.network, change.address, 'change.address');
    const changeVsize = VSIZE.walletOutput[changeKind];
    const changeDust = changeKind === 'p2wpkh' ? (DUST.wpkh as bigint) : (DUST.tr as bigint);
    const sorted = [...utxos].sort((a, b) => (a.value > b.value ? -1 : a.value < b.value ? 1 : 0));
    const chosen: Utxo[] = [];
    let total = 0n;
    let vsize = VSIZE.overhead + (VSIZE.output[dest.type] ?? 43);
    for (const u of sorted) {
      const src = byAddress.get(u.address);
      if (src === undefined) continue;
      chosen.push(u);
      total += u.value;
      vsize += VSIZE.input[kindOf(this.network, u.address, 'utxo.address')];
      const feeNoChange = ceil(vsize * rate);
      if (total < fields.amount + feeNoChange) continue;
      const feeWithChange = ceil((vsize + changeVsize) * rate);
      const rest = total - fields.amount - feeWithChange;
      if (rest >= changeDust && change !== undefined) return { chosen, fee: feeWithChange, changeValue: rest };
      return { chosen, fee: total - fields.amount, changeValue: 0n }; // change below dust goes to the fee
    }
    throw new InsufficientFundsError(this.network.symbol, fields.amount + ceil(vsize * rate), total);
  }

  #context(
    chosen: Utxo[],
    sources: readonly SourceAddress[],
    change: SourceAddress | undefined,
    changeValue: bigint,
    fee: bigint,
    rate: number,
  ): BitcoinContext {
    const byAddress = new Map(sources.map((s) => [s.address, s]));
    return {
      network: this.network.id,
      version: 2,
      lockTime: 0,
      sequence: RBF_SEQUENCE,
      inputs: chosen.map((u) => {
        const s = byAddress.get(u.address) as SourceAddress;
        return {
          txid: u.txid,
          vout: u.vout,
          value: u.value.toString(),
          address: u.address,
          kind: kindOf(this.network, u.address, 'source'),
          publicKey: bytesToHex(s.publicKey),
          path: [...s.path],
        };
      }),
      change:
        change !== undefined && changeValue > 0n
          ? {
              address: change.address,
              publicKey: bytesToHex(change.publicKey),
              path: [...change.path],
              kind: kindOf(this.network, change.address, 'change'),
              value: changeValue.toString(),
            }
          : null,
      fee: fee.toString(),
      feeRate: String(rate),
    };
  }

  #checkSources(request: BuildTransferRequest): void {
    if (request.sources.length === 0) throw new InvalidTransferError('sources', 'at least one source address');
    for (const [i, s] of [...request.sources, ...(request.change ? [request.change] : [])].entries()) {
      const kind = kindOf(this.network, s.address, `sources[${i}].address`);
      if (addressOf(this.network, s.publicKey, kind) !== s.address)
        throw new InvalidTransferError(`sources[${i}]`, 'public key does not own the address');
    }
  }

  async buildTransfer(request: BuildTransferRequest): Promise<UnsignedTransfer<BitcoinContext>> {
    this.#checkSources(request);
    const { rate } = await this.feeRate(request.feeLevel ?? 'STANDARD');
    const utxos = await this.#utxos.listUnspent(request.sources.map((s) => s.address));
    const sel = this.#select(request.fields, request.sources, request.change, utxos, rate);
    return this.#assemble(
      request.fields,
      this.#context(sel.chosen, request.sources, request.change, sel.changeValue, sel.fee, rate),
    );
  }

  #assemble(fields: TransferFields, context: BitcoinContext): UnsignedTransfer<BitcoinContext> {
    const tx = buildTx(this.network, fields, context);
    return {
      chain: this.chain.id,
      fields,
      unsignedTx: tx.toBytes(true, false),
      digests: recomputeBitcoinDigests(this.network, fields, context),
      context,
      maxFee: BigInt(context.fee),
    };
  }

  recomputeDigests(fields: TransferFields, context: BitcoinContext): DigestToSign[] {
    return recomputeBitcoinDigests(this.network, fields, context);
  }

  attachSignatures(unsigned: UnsignedTransfer<BitcoinContext>, signatures: readonly ChainSignature[]): SignedTransfer {
    const digests = recomputeBitcoinDigests(this.network, unsigned.fields, unsigned.context);
    if (signatures.length !== digests.length)
      throw new InvalidTransferError('signatures', `expected ${digests.length}`);
    const tx = buildTx(this.network, unsigned.fields, unsigned.context);
    digests.forEach((d, i) => {
      const sig = signatures[i] as ChainSignature;
      if (d.scheme === 'ecdsa') {
        checkEcdsa(i, d, sig, true);
        if (sig.scheme !== 'ecdsa') return;
        const der = new secp256k1.Signature(sig.r, sig.s).toBytes('der');
        tx.updateInput(i, { partialSig: [[d.key.publicKey, Uint8Array.from([...der, SIGHASH_ALL])]] }, true);
      } else {
        if (sig.scheme !== 'schnorr' || !(sig.signature instanceof Uint8Array) || sig.signature.length !== 64)
          throw new InvalidSignatureError(i, 'expected a 64-byte BIP340 signature');
        if (!schnorr.verify(sig.signature, d.digest, taprootOutputKey(d.key.publicKey)))
          throw new InvalidSignatureError(i, 'does not verify under the tweaked output key');
        tx.updateInput(i, { tapKeySig: sig.signature }, true);
      }
    });
    tx.finalize();
    return { chain: this.chain.id, rawTx: tx.extract(), txid: tx.id };
  }

  async estimateFee(request: BuildTransferRequest, level: FeeLevel): Promise<FeeEstimate> {
    this.#checkSources(request);
    const { rate, source, target } = await this.feeRate(level);
    const utxos = await this.#utxos.listUnspent(request.sources.map((s) => s.address));
    const sel = this.#select(request.fields, request.sources, request.change, utxos, rate);
    const price = await this.#prices.usdPrice(this.network.symbol);
    return {
      fee_value: formatUnits(sel.fee, 8),
      fee_value_usd: usdValue(sel.fee, 8, price),
      fee_currency: this.network.symbol,
      metadata: {
        fee_rate_per_vbyte: String(rate),
        fee_rate_source: source,
        confirmation_target: target,
        inputs: sel.chosen.length,
        change: sel.changeValue > 0n,
      },
    };
  }

  async broadcast(signed: SignedTransfer): Promise<string> {
    try {
      return await this.rpc.call<string>('sendrawtransaction', [bytesToHex(signed.rawTx)]);
    } catch (e) {
      throw new BroadcastError(`sendrawtransaction: ${(e as Error).message}`, { cause: e });
    }
  }

  /**
   * A self-spend (consolidation, CPFP child) over FIXED inputs: exactly `inputs`, in that order,
   * one output (`fields.destination`, `fields.amount`), no change; fee = Σ inputs − amount. No
   * coin selection and no node call: the inputs were chosen when the transfer was created.
   * @throws InvalidTransferError when a key does not own its input's address, the inputs do not
   *   cover the amount (fee ≤ 0), or the amount is below dust
   */
  buildFixedInputs(fields: TransferFields, inputs: readonly FixedInput[]): UnsignedTransfer<BitcoinContext> {
    if (inputs.length === 0) throw new InvalidTransferError('inputs', 'at least one input');
    const total = inputs.reduce((a, i) => a + i.value, 0n);
    const fee = total - fields.amount;
    if (fee <= 0n) throw new InvalidTransferError('amount', `the inputs (${total}) do not pay the amount and a fee`);
    const kinds = inputs.map((i, n) => kindOf(this.network, i.address, `inputs[${n}].address`));
    const vsize = estimateVsize(this.network, kinds, fields.destination);
    const context = this.#context([...inputs], inputs, undefined, 0n, fee, Number(fee) / vsize);
    return this.#assemble(fields, context);
  }

  /** Spendable outputs of `addresses` from the adapter's UTXO source (base units). */
  unspent(addresses: readonly string[]): Promise<Utxo[]> {
    return this.#utxos.listUnspent(addresses);
  }

  /**
   * RBF replacement (BIP125): same inputs and destination, fee rate max(level, old + incremental)
   * and absolute fee ≥ old fee + incremental × vsize of the replacement (rules 3–4, incremental
   * relay fee from `getnetworkinfo`); the difference comes
   * out of the change (dropped to the fee when it falls below dust).
   * @throws InsufficientFundsError when the change cannot pay the bump
   */
  async buildReplacement(
    previous: UnsignedTransfer<BitcoinContext>,
    level: FeeLevel,
  ): Promise<UnsignedTransfer<BitcoinContext>> {
    const ctx = previous.context;
    const oldFee = BigInt(ctx.fee);
    const oldRate = Number(ctx.feeRate);
    const [{ rate: levelRate }, { incrementalFee }] = await Promise.all([this.feeRate(level), this.relayFees()]);
    const rate = Math.max(levelRate, oldRate + incrementalFee);
    const dest = decodeUtxoAddress(this.network, previous.fields.destination);
    let vsize =
      VSIZE.overhead + (VSIZE.output[dest.type] ?? 43) + ctx.inputs.reduce((a, i) => a + VSIZE.input[i.kind], 0);
    if (ctx.change !== null) vsize += VSIZE.walletOutput[ctx.change.kind];
    let fee = ceil(vsize * rate);
    const minFee = oldFee + ceil(vsize * incrementalFee);
    if (fee < minFee) fee = minFee;
    const available = oldFee + (ctx.change === null ? 0n : BigInt(ctx.change.value));
    if (fee > available) throw new InsufficientFundsError(this.network.symbol, fee, available);
    let change = ctx.change;
    if (change !== null) {
      const left = available - fee;
      const dust = change.kind === 'p2wpkh' ? (DUST.wpkh as bigint) : (DUST.tr as bigint);
      change = left >= dust ? { ...change, value: left.toString() } : null;
      if (change === null) fee = available;
    }
    return this.#assemble(previous.fields, { ...ctx, change, fee: fee.toString(), feeRate: String(rate) });
  }
}

/**
 * {@link UtxoSource} over `scantxoutset` (Bitcoin Core ≥ 0.17, litecoind 0.21): reads the node's
 * UTXO set for `addr(…)` descriptors; needs no wallet but sees confirmed outputs only, and takes
 * seconds on mainnet (the coordinator should serve UTXOs from its indexer instead).
 */
export class ScanTxOutSetSource implements UtxoSource {
  #queue: Promise<unknown> = Promise.resolve();
  constructor(
    private readonly rpc: BitcoinRpc,
    private readonly network: UtxoNetwork,
  ) {}

  /** The node runs one scan at a time: calls are queued here, and retried (≤ 5 s) while another client's scan runs. */
  listUnspent(addresses: readonly string[]): Promise<Utxo[]> {
    const run = this.#queue.then(async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await this.#scan(addresses);
        } catch (e) {
          if (!(e instanceof NodeRpcError) || !/already in progress/i.test(e.message) || attempt >= 100) throw e;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  async #scan(addresses: readonly string[]): Promise<Utxo[]> {
    if (addresses.length === 0) return [];
    const byScript = new Map(
      addresses.map((a) => [bytesToHex(decodeUtxoAddress(this.network, a, 'address').script), a]),
    );
    const r = await this.rpc.call<{
      success: boolean;
      unspents: { txid: string; vout: number; amount: number; scriptPubKey: string }[];
    }>('scantxoutset', ['start', addresses.map((a) => `addr(${a})`)]);
    if (!r.success) throw new NodeRpcError('scantxoutset', 'scan did not complete');
    return r.unspents.map((u) => {
      const address = byScript.get(u.scriptPubKey.toLowerCase());
      if (address === undefined)
        throw new NodeRpcError('scantxoutset', `output ${u.txid}:${u.vout} pays none of the addresses`);
      return { txid: u.txid, vout: u.vout, value: parseUnits(u.amount.toFixed(8), 8, 'amount'), address };
    });
  }
}
