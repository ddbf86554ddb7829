/**
 * The transfer as stored and as shown (seed §2 "Transfer"): the row ({@link TransferRow}), its
 * API object ({@link TransferView}) and webhook `data`, the stored fee bump ({@link FeeBump}), and
 * the small pure helpers the request service and the pipeline share (fee cap of an intent, chain
 * fields, derivation paths, approver devices). No status write here: that is machine.ts.
 */

import type { FeeLevel } from '@custodian/chains';
import { formatUnits } from '@custodian/chains';
import type { TransferIntent } from '@custodian/wire';
import type { Queryable } from '../db/db.js';
import { blockchainByKey, nativeAssetOf } from '../directory.js';
import { iso } from '../util.js';
import type { TransferStatus } from './machine.js';
import type { SelfSpend } from './self-spend.js';
import type { StoredUnsigned } from './unsigned.js';

/**
 * Fee bump state of a SENT transfer (stored as `transfers.fee_bump` JSON). The replacement
 * transaction is built when the bump is requested (`unsigned`), so the round's approvers decide on
 * the fee it pays: `intent` is what they sign — the intent the current transaction was signed under
 * when the replacement's fee stays within that cap, else the same intent with `max_fee` raised to
 * the replacement's fee (`cap_raised`). Stored with the bump, so a restart signs the same thing.
 */
export interface FeeBump {
  status: 'PENDING_APPROVAL' | 'PENDING_SIGNATURE' | 'SIGNED' | 'DONE' | 'REJECTED' | 'FAILED';
  round: number;
  priority: FeeLevel;
  requested_by: string | null;
  requested_at: string;
  deadline: string;
  sub_status?: string;
  error?: string;
  /** The intent this round's approvals are over (absent on bumps requested before fee caps). */
  intent?: TransferIntent;
  /** Hex `transferIntentDigest(intent)`. */
  intent_digest?: string;
  /** Whether `intent.max_fee` is above the cap the current transaction was approved under. */
  cap_raised?: boolean;
  /** The replacement transaction (never shown in the API). */
  unsigned?: StoredUnsigned;
  /** ISO time the bump entered PENDING_SIGNATURE (start of its signing window; never shown in the API). */
  signing_since?: string;
  /**
   * How the fee is raised: `RBF` (a replacement of this transaction; absent on bumps stored before
   * CPFP) or `CPFP` (a child self-spend of this transaction's change output, `child_transfer_id`,
   * which goes through its own policy and approvals; this bump is then DONE at once — DONE
   * meaning only that the child was created: it may still end REJECTED / EXPIRED / FAILED, the fee
   * then not raised; follow the child).
   */
  method?: 'RBF' | 'CPFP';
  /** CPFP: the child transfer (self-spend.ts). */
  child_transfer_id?: string;
  /**
   * SIGNED: the transaction the replacement replaces (the transfer's `tx_hash`, `signed_tx`,
   * `unsigned` before signing), restored when the node refuses the replacement (sent-step.ts
   * `bumpBroadcastStep`; never shown in the API).
   */
  previous?: { tx_hash: string | null; signed_tx: string | null; unsigned: unknown };
  /** FAILED / BROADCAST_FAILED: the txid of the replacement the node refused (never shown in the API). */
  refused_tx_hash?: string;
}

/** Fee bump of the API's transfer object (the stored {@link FeeBump} without its transaction and intent). */
export type FeeBumpView = Pick<
  FeeBump,
  | 'status'
  | 'round'
  | 'priority'
  | 'requested_by'
  | 'requested_at'
  | 'deadline'
  | 'sub_status'
  | 'error'
  | 'cap_raised'
  | 'method'
  | 'child_transfer_id'
> & {
  /** The fee cap this round's approvers sign: decimal string in the native asset's units. */
  max_fee?: string;
  max_fee_base_units?: string;
  fee_currency?: string;
};

/** Transfer object of the REST API. */
export interface TransferView {
  transfer_id: string;
  profile_id: string;
  wallet_id: string;
  asset_id: string;
  blockchain_id: string;
  source_address: string;
  destination_address: string;
  /** Decimal string in asset units. */
  amount: string;
  /** Integer string in base units. */
  amount_base_units: string;
  /**
   * Fee cap the approvers signed (`TransferIntent.max_fee`): the most the transaction may pay in
   * fees, decimal string in units of the blockchain's native asset (`fee_currency`), e.g. "0.01".
   */
  max_fee: string;
  /** {@link max_fee} as an integer string in base units of the native asset (wei, satoshi, sun). */
  max_fee_base_units: string;
  /** Symbol of the native asset fees are paid in: ETH, BTC, LTC, TRX. */
  fee_currency: string;
  external_id: string | null;
  status: TransferStatus;
  sub_status: string | null;
  policy_id: string | null;
  policy_version: number | null;
  approvals_required: number;
  approvals_received: number;
  approval_deadline: string | null;
  tx_hash: string | null;
  fee_bump: FeeBumpView | null;
  created_at: string;
  updated_at: string;
  sent_at: string | null;
  delivered_at: string | null;
}

/** Body of transfer creation, dry run and fee estimate. */
export interface TransferInput {
  wallet_id: string;
  destination_address: string;
  asset_id: string;
  amount: string;
  external_id?: string;
}

/** A transfer row as {@link TRANSFER_SELECT} reads it. */
export interface TransferRow {
  transfer_id: string;
  profile_id: string;
  wallet_id: string;
  asset_id: string;
  blockchain_id: string;
  master_key_id: string;
  source_address: string;
  destination_address: string;
  amount: string;
  external_id: string | null;
  status: TransferStatus;
  sub_status: string | null;
  intent: TransferIntent;
  intent_digest: string;
  policy_id: string | null;
  policy_version: number | null;
  approvals_required: number;
  approval_round: number;
  approval_deadline: Date | null;
  unsigned: unknown;
  signed_tx: string | null;
  tx_hash: string | null;
  tx_hashes: string[];
  fee_bump: FeeBump | null;
  /** A transfer to the wallet's own address over fixed inputs (self-spend.ts), else null. */
  self_spend: SelfSpend | null;
  error: string | null;
  lease_until: Date | null;
  /** The pipeline process holding the lease (its random id), or null. */
  lease_owner: string | null;
  /** When the transfer entered PENDING_SIGNATURE (start of its signing window), or null. */
  signing_since: Date | null;
  created_at: Date;
  updated_at: Date;
  sent_at: Date | null;
  delivered_at: Date | null;
  decimals: number;
  approvals_received: number;
}

/** The SELECT of a transfer row with its asset decimals and approvals of the current round (add a WHERE). */
export const TRANSFER_SELECT = `SELECT t.transfer_id, t.profile_id, t.wallet_id, t.asset_id, t.blockchain_id, t.master_key_id, t.source_address,
  t.destination_address, t.amount::text AS amount, t.external_id, t.status, t.sub_status, t.intent, t.intent_digest,
  t.policy_id, t.policy_version, t.approvals_required, t.approval_round, t.approval_deadline, t.unsigned, t.signed_tx,
  t.tx_hash, t.tx_hashes, t.fee_bump, t.self_spend, t.error, t.lease_until, t.lease_owner, t.signing_since, t.created_at, t.updated_at, t.sent_at, t.delivered_at,
  a.decimals,
  (SELECT count(*)::int FROM transfer_approvals ta WHERE ta.transfer_id = t.transfer_id AND ta.round = t.approval_round
     AND ta.decision = 'APPROVE') AS approvals_received
  FROM transfers t JOIN assets a ON a.asset_id = t.asset_id`;

/** The fee cap of an intent, base units (an intent stored before fee caps: its blockchain's directory default). */
export function intentCap(i: TransferIntent): bigint {
  if (typeof i.max_fee === 'string') return BigInt(i.max_fee);
  return BigInt(blockchainByKey(i.blockchain)?.defaultMaxFee ?? '0');
}

/** `base` units of the native asset of `blockchain` as the API shows fees. */
export function feeFields(blockchain: string, base: bigint) {
  const a = nativeAssetOf(blockchain);
  return { max_fee: formatUnits(base, a.decimals), max_fee_base_units: base.toString(), fee_currency: a.symbol };
}

/** The fee cap of an approval request's summary: native units and symbol. */
export function summaryFee(i: TransferIntent): { max_fee: string; fee_currency: string } {
  const f = feeFields(i.blockchain, intentCap(i));
  return { max_fee: f.max_fee, fee_currency: f.fee_currency };
}

/** The API form of a stored fee bump: no transaction, no intent; the round's fee cap in native units. */
export function feeBumpView(b: FeeBump, blockchain: string): FeeBumpView {
  const {
    unsigned: _u,
    intent,
    intent_digest: _d,
    cap_raised,
    signing_since: _s,
    previous: _p,
    refused_tx_hash: _r,
    ...rest
  } = b;
  return {
    ...rest,
    ...(intent !== undefined ? { ...feeFields(blockchain, intentCap(intent)), cap_raised: cap_raised === true } : {}),
  };
}

/**
 * The intent the approvals of the transfer's current round are over, and its digest: a fee bump
 * round's own intent (possibly with a raised cap), else the transfer's.
 */
export function roundIntent(r: Pick<TransferRow, 'intent' | 'intent_digest' | 'approval_round' | 'fee_bump'>): {
  intent: TransferIntent;
  digest: string;
} {
  if (r.approval_round > 0 && r.fee_bump?.intent !== undefined && r.fee_bump.intent_digest !== undefined)
    return { intent: r.fee_bump.intent, digest: r.fee_bump.intent_digest };
  return { intent: r.intent, digest: r.intent_digest };
}

/** Project a row to the API object. */
export function transferView(r: TransferRow): TransferView {
  return {
    transfer_id: r.transfer_id,
    profile_id: r.profile_id,
    wallet_id: r.wallet_id,
    asset_id: r.asset_id,
    blockchain_id: r.blockchain_id,
    source_address: r.source_address,
    destination_address: r.destination_address,
    amount: formatUnits(BigInt(r.amount), r.decimals),
    amount_base_units: r.amount,
    ...feeFields(r.intent.blockchain, intentCap(r.intent)),
    external_id: r.external_id,
    status: r.status,
    sub_status: r.sub_status,
    policy_id: r.policy_id,
    policy_version: r.policy_version,
    approvals_required: r.approvals_required,
    approvals_received: r.approvals_received,
    approval_deadline: iso(r.approval_deadline),
    tx_hash: r.tx_hash,
    fee_bump: r.fee_bump === null ? null : feeBumpView(r.fee_bump, r.intent.blockchain),
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
    sent_at: iso(r.sent_at),
    delivered_at: iso(r.delivered_at),
  };
}

/** Webhook `data` of a transfer event (seed §6 rule 6: with `external_id`). */
export function transferEventData(v: TransferView): Record<string, unknown> {
  return {
    transfer_id: v.transfer_id,
    wallet_id: v.wallet_id,
    asset_id: v.asset_id,
    destination_address: v.destination_address,
    amount: v.amount,
    status: v.status,
    sub_status: v.sub_status,
    external_id: v.external_id,
    tx_hash: v.tx_hash,
    updated_at: v.updated_at,
  };
}

/** Load a transfer row (optionally locked). */
export async function loadTransfer(
  q: Queryable,
  transferId: string,
  lock = false,
  profileId?: string,
): Promise<TransferRow | undefined> {
  if (lock) await q.query('SELECT 1 FROM transfers WHERE transfer_id = $1 FOR UPDATE', [transferId]);
  const r = await q.query<TransferRow>(
    `${TRANSFER_SELECT} WHERE t.transfer_id = $1 ${profileId !== undefined ? 'AND t.profile_id = $2' : ''}`,
    profileId !== undefined ? [transferId, profileId] : [transferId],
  );
  return r[0];
}

/** UTC day of a time (YYYY-MM-DD). */
export function utcDay(d: Date): string {
  return d.toISOString().slice(0, 10);
}

/** Parse `m/44/60/0/0/0` into indices (non-hardened only). */
export function parsePath(path: string): number[] {
  const parts = path.split('/');
  if (parts[0] !== 'm') throw new Error(`bad derivation path ${path}`);
  return parts.slice(1).map((p) => {
    const n = Number(p);
    if (!Number.isSafeInteger(n) || n < 0 || n >= 0x8000_0000) throw new Error(`bad derivation path ${path}`);
    return n;
  });
}

/** Device parties of a master key (the approver devices its signers learnt at the ceremony). */
export function approverDeviceIds(parties: unknown): string[] {
  if (!Array.isArray(parties)) return [];
  return parties
    .filter(
      (p): p is { kind: string; id: string } =>
        typeof p === 'object' && p !== null && (p as { kind?: unknown }).kind === 'device',
    )
    .map((p) => String(p.id).toLowerCase());
}

/** Chain fields of an intent. */
export function fieldsOf(
  i: Pick<TransferIntent, 'asset_contract' | 'asset_symbol' | 'asset_decimals' | 'destination_address' | 'amount'>,
) {
  return {
    asset:
      i.asset_contract === null
        ? ({ kind: 'native' } as const)
        : ({ kind: 'token', contract: i.asset_contract, symbol: i.asset_symbol, decimals: i.asset_decimals } as const),
    destination: i.destination_address,
    amount: BigInt(i.amount),
  };
}

/** Transfers per status (the `custodian_transfers` gauge, metrics/readiness.ts). */
export async function countByStatus(q: Queryable): Promise<{ status: string; n: number }[]> {
  return q.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM transfers GROUP BY status');
}
