/**
 * The fee cap of a transfer (issue #20 item 3; DESIGN §1 "fee cap included"): the transaction the
 * coordinator builds never pays more in fees than `TransferIntent.max_fee`, the cap the approvers
 * signed (base units of the blockchain's NATIVE asset: wei, satoshi/litoshi, sun). The signers
 * enforce the same bound on their own (FEE_ABOVE_CAP / FEE_ABOVE_CEILING); this check keeps the
 * coordinator from asking them to sign a transaction they must refuse, and turns it into a clear
 * FAILED / FEE_CAP_EXCEEDED instead.
 *
 * The bound per family (what `UnsignedTransfer.maxFee` is):
 * - Ethereum: gas limit × maxFeePerGas. Above the cap, maxFeePerGas is lowered to
 *   floor(cap / gas) when that still covers the next block's base fee plus the priority fee
 *   (the transaction stays includable, it only loses headroom against a rising base fee);
 *   otherwise the transfer fails.
 * - TRON: `fee_limit` of a TRC-20 call (a TRX transfer has none). Above the cap it is lowered to
 *   the cap (a call that needs more energy than the cap pays for fails on chain, paying at most
 *   the cap); a cap of 0 cannot carry a contract call: the transfer fails.
 * - Bitcoin family: inputs − outputs. Above the cap the transfer fails (lowering it would change
 *   the selection and the change output).
 */

import type { ChainAdapter } from '@custodian/chains';
import {
  type EthereumAdapter,
  type EthereumContext,
  formatUnits,
  recomputeEthereumDigests,
  recomputeTronDigests,
  type TronContext,
  type UnsignedTransfer,
} from '@custodian/chains';
import { type BlockchainDef, nativeAssetOf } from '../directory.js';

/** Sub-status of a transfer whose transaction cannot be built within its approved fee cap. */
export const FEE_CAP_EXCEEDED = 'FEE_CAP_EXCEEDED';

/** Outcome of {@link capFee}. */
export type FeeCapOutcome =
  | { ok: true; unsigned: UnsignedTransfer; lowered: boolean }
  | { ok: false; fee: bigint; message: string };

/** `v` base units of the native asset of `def`, as "0.01 ETH". */
export function nativeAmount(def: Pick<BlockchainDef, 'key'>, v: bigint): string {
  const a = nativeAssetOf(def.key);
  return `${formatUnits(v, a.decimals)} ${a.symbol}`;
}

/**
 * Bring a freshly built transaction within `cap` (native base units), or say why it cannot be.
 * Pure except for Ethereum, where the next block's base fee is read from the node
 * (`eth_feeHistory`, through the adapter) when maxFeePerGas must be lowered.
 * @param def the transfer's blockchain
 * @param adapter that blockchain's adapter (the one that built `unsigned`)
 * @param unsigned the built transaction (not yet stored)
 * @param cap the intent's `max_fee`, base units, ≥ 0
 * @returns `ok` with the transaction to store (digests recomputed when a fee field was lowered), or
 *   the fee it would pay and a message naming both amounts (no secret in it)
 * @throws NodeRpcError when the node does not answer (the caller retries later)
 */
export async function capFee(
  def: BlockchainDef,
  adapter: ChainAdapter,
  unsigned: UnsignedTransfer,
  cap: bigint,
): Promise<FeeCapOutcome> {
  if (cap < 0n) throw new RangeError('cap must be ≥ 0');
  if (unsigned.maxFee <= cap) return { ok: true, unsigned, lowered: false };
  const over = (extra = '') => ({
    ok: false as const,
    fee: unsigned.maxFee,
    message:
      `${FEE_CAP_EXCEEDED}: the transaction can pay up to ${nativeAmount(def, unsigned.maxFee)} in fees, ` +
      `above the approved fee cap of ${nativeAmount(def, cap)}${extra}`,
  });
  // a fee field lowered: `unsignedTx` is not kept in step (attachSignatures rebuilds from fields + context)
  const lowered = (context: UnsignedTransfer['context'], digests: UnsignedTransfer['digests'], maxFee: bigint) => ({
    ok: true as const,
    lowered: true,
    unsigned: { ...unsigned, context, unsignedTx: new Uint8Array(0), digests, maxFee },
  });
  if (def.family === 'ethereum') {
    const ctx = unsigned.context as EthereumContext;
    const gas = BigInt(ctx.gas);
    if (gas <= 0n) return over();
    const perGas = cap / gas;
    const { baseFeePerGas } = await (adapter as unknown as EthereumAdapter).feesPerGas('STANDARD');
    const needed = baseFeePerGas + BigInt(ctx.maxPriorityFeePerGas);
    if (perGas < needed) {
      return over(
        `; even at the lowest workable max fee per gas (base fee ${baseFeePerGas} + priority fee ` +
          `${ctx.maxPriorityFeePerGas} wei) × gas ${gas} = ${nativeAmount(def, needed * gas)}`,
      );
    }
    const context: EthereumContext = { ...ctx, maxFeePerGas: perGas.toString() };
    return lowered(context, recomputeEthereumDigests(unsigned.fields, context), gas * perGas);
  }
  if (def.family === 'tron') {
    const ctx = unsigned.context as TronContext;
    if (cap === 0n) return over('; a contract call needs a fee limit above 0');
    const context: TronContext = { ...ctx, feeLimit: cap.toString() };
    return lowered(context, recomputeTronDigests(unsigned.fields, context), cap);
  }
  return over();
}
