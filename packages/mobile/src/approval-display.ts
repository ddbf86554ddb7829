/**
 * What the phone shows the person deciding on an approval request (issue #20 item 3: the fee cap
 * is part of what approvers see). Everything here is derived from the transfer intent the device
 * signs its decision over — never from a summary the coordinator adds — so the screen cannot say
 * something other than what the approval binds.
 *
 * The fee cap (`TransferIntent.max_fee`) is in base units of the blockchain's NATIVE asset; it is
 * shown in that asset's units with its symbol ("max fee 0.01 ETH"), next to the amount. A token
 * transfer shows the token's contract with its symbol (the symbol alone is the coordinator's word).
 *
 * Before any of it is shown, {@link approvalRefusal} checks the asset against the phone's own
 * `--chains` configuration exactly as a signer does (`@custodian/ceremony` assetMismatch): a request
 * the signers would refuse (`ASSET_MISMATCH`, `CHAIN_NOT_CONFIGURED`) is never shown or approved.
 */
import { assetMismatch, type ChainsConfig } from '@custodian/ceremony';
import type { RefusalCode, TransferIntent } from '@custodian/wire';

/** Native asset (symbol, decimals) of a blockchain key's family, as the coordinator's directory names them. */
const NATIVE: readonly { readonly prefix: string; readonly symbol: string; readonly decimals: number }[] = [
  { prefix: 'ethereum-', symbol: 'ETH', decimals: 18 },
  { prefix: 'bitcoin-', symbol: 'BTC', decimals: 8 },
  { prefix: 'litecoin-', symbol: 'LTC', decimals: 8 },
  { prefix: 'tron-', symbol: 'TRX', decimals: 6 },
];

/** Integer base units as a decimal string in units of `decimals` (no rounding, no trailing zeros). */
function units(base: string, decimals: number): string {
  const v = BigInt(base);
  const d = 10n ** BigInt(decimals);
  const frac = (v % d).toString().padStart(decimals, '0').replace(/0+$/, '');
  return `${v / d}${frac ? `.${frac}` : ''}`;
}

/**
 * The fee cap of an intent as shown on the phone: "0.01 ETH"; for a blockchain whose native asset
 * the phone does not know, "<n> base units of the native asset"; "none stated" when the intent has
 * no (well-formed) `max_fee` — a request like that deserves a rejection.
 */
export function formatMaxFee(i: Pick<TransferIntent, 'blockchain' | 'max_fee'>): string {
  if (typeof i.max_fee !== 'string' || !/^[0-9]{1,78}$/.test(i.max_fee)) return 'none stated';
  const n = NATIVE.find((x) => i.blockchain.startsWith(x.prefix));
  return n ? `${units(i.max_fee, n.decimals)} ${n.symbol}` : `${i.max_fee} base units of the native asset`;
}

/** The amount of an intent in asset units with its symbol: "1.5 ETH". */
export function formatAmount(i: Pick<TransferIntent, 'amount' | 'asset_decimals' | 'asset_symbol'>): string {
  return `${units(i.amount, i.asset_decimals)} ${i.asset_symbol}`;
}

/** The token line of a token transfer ("  token USDT, contract 0xdAC1…"), empty for the native coin. */
function tokenLine(i: TransferIntent): string {
  return i.asset_contract === null ? '' : `  token ${i.asset_symbol}, contract ${i.asset_contract}\n`;
}

/** The screen of an approval request (multi-line text, ends with a newline). */
export function describeApproval(i: TransferIntent): string {
  return (
    `Transfer ${i.transfer_id}\n  ${formatAmount(i)} on ${i.blockchain}, max fee ${formatMaxFee(i)}\n` +
    tokenLine(i) +
    `  from ${i.source_address}\n  to   ${i.destination_address}\n  wallet ${i.wallet_id}, created ${i.created_at}\n`
  );
}

/**
 * Why the phone refuses to show an approval request: a stable code (the signers' own, from the
 * refusal catalogue of `@custodian/wire` refusals.ts) and a one-line reason.
 */
export interface ApprovalRefusal {
  readonly code: Extract<RefusalCode, 'CHAIN_NOT_CONFIGURED' | 'ASSET_MISMATCH'>;
  readonly reason: string;
}

/**
 * Check an approval request against the phone's own `chains` configuration before it is shown:
 * the blockchain must be configured (`CHAIN_NOT_CONFIGURED`) and the asset must be its native coin
 * or a configured token, with the directory's asset id (`ASSET_MISMATCH`, same rules as a signer's
 * enforcement). Without a configuration (`chains` undefined) nothing can be checked: undefined.
 * @returns the refusal, or undefined when the request may be shown
 */
export function approvalRefusal(i: TransferIntent, chains: ChainsConfig | undefined): ApprovalRefusal | undefined {
  if (chains === undefined) return undefined;
  const chain =
    typeof i.blockchain === 'string' && Object.hasOwn(chains, i.blockchain) ? chains[i.blockchain] : undefined;
  if (!chain) return { code: 'CHAIN_NOT_CONFIGURED', reason: `blockchain ${String(i.blockchain)} is not configured` };
  const reason = assetMismatch(i, chain);
  return reason === undefined ? undefined : { code: 'ASSET_MISMATCH', reason };
}

/** Fields of the simulator's `approval_request` event line (what was presented, machine-readable). */
export function approvalEventFields(i: TransferIntent): Record<string, string> {
  return {
    transfer_id: i.transfer_id,
    blockchain: i.blockchain,
    amount: formatAmount(i),
    ...(i.asset_contract === null ? {} : { asset_contract: i.asset_contract }),
    max_fee: formatMaxFee(i),
    destination_address: i.destination_address,
  };
}
