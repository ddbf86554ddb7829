/**
 * Transfers (seed §3, §4; DESIGN §7): creation with validation, policy evaluation and the daily
 * limit; listing; dry run; fee estimate; device approvals; cancel; fee bump. The asynchronous part
 * of the state machine (signing, broadcast, confirmations, expiry) is `pipeline.ts`.
 *
 * State machine (every transition is one database transaction together with its outbox events):
 *
 * ```
 * PENDING ─┬─ no covering policy ─────────────────────────→ NO_POLICY_FOUND  (NO_POLICY_FOUND)
 *          ├─ whitelist / per-tx / daily limit ───────────→ REJECTED_BY_POLICY (DESTINATION_NOT_WHITELISTED |
 *          │                                                  TRANSACTION_LIMIT_EXCEEDED | DAILY_LIMIT_EXCEEDED)
 *          └→ PENDING_APPROVAL ─┬─ a device rejects ───────→ REJECTED (REJECTED_BY_APPROVER)
 *                               ├─ cancelled (admin) ──────→ REJECTED (CANCELLED_BY_USER)
 *                               ├─ window elapsed ─────────→ EXPIRED  (APPROVAL_EXPIRED)
 *                               └→ PENDING_SIGNATURE ─┬─ a signer refuses ──→ REJECTED (<refusal code>)
 *                                                     ├─ build fails / identifiable MPC abort ─→ FAILED (SIGNING_FAILED)
 *                                                     ├─ signers unavailable: stays, sub_status WAITING_FOR_SIGNERS (retried)
 *                                                     ├─ signing window over ─→ FAILED (SIGNING_WINDOW_EXPIRED)
 *                                                     ├─ no transaction within the fee cap ─→ FAILED (FEE_CAP_EXCEEDED)
 *                                                     ├─ no node for the chain: stays, sub_status CHAIN_UNAVAILABLE
 *                                                     └→ READY_TO_SEND ─┬─ node refuses → FAILED (BROADCAST_FAILED)
 *                                                                       └→ SENT → (confirmed) TRANSFER_DELIVERED
 * ```
 *
 * The PENDING → policy step runs in the creation transaction (the row is inserted with the
 * outcome; TRANSFER_CREATED carries status PENDING, then TRANSFER_UPDATED the outcome), so the
 * daily-limit check and the insert are atomic under the (wallet, asset, UTC day) row lock.
 * Terminal failures also emit TRANSFER_FAILED.
 */
import { randomUUID } from 'node:crypto';
import { type FeeLevel, formatUnits, InvalidAddressError, InvalidTransferError, parseUnits } from '@custodian/chains';
import {
  type Approval,
  approvalDigest,
  deviceVerify,
  evaluatePolicy,
  type SignedPolicy,
  type TransferIntent,
  transferIntentDigest,
} from '@custodian/wire';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { Db, Queryable } from '../db/db.js';
import { type BlockchainDef, blockchainByKey, nativeAssetOf } from '../directory.js';
import { ApiError } from '../errors.js';
import { type Page, type PageRequest, transferKeyId } from '../store.js';
import { type Clock, iso } from '../util.js';
import { emitEvent } from '../webhooks/outbox.js';
import type { ChainRegistry } from './chains.js';
import { normalisePublicKey, type PolicyService } from './policies.js';
import { loadUnsigned, type StoredUnsigned, storeUnsigned } from './unsigned.js';

/** The seed's ten transfer statuses (§3). */
export const TRANSFER_STATUSES = [
  'PENDING',
  'PENDING_APPROVAL',
  'PENDING_SIGNATURE',
  'READY_TO_SEND',
  'SENT',
  'REJECTED',
  'REJECTED_BY_POLICY',
  'NO_POLICY_FOUND',
  'EXPIRED',
  'FAILED',
] as const;
export type TransferStatus = (typeof TRANSFER_STATUSES)[number];

/** Statuses counted by the daily limit (every transfer not failed, rejected or expired). */
export const COUNTED_STATUSES: readonly TransferStatus[] = [
  'PENDING',
  'PENDING_APPROVAL',
  'PENDING_SIGNATURE',
  'READY_TO_SEND',
  'SENT',
];

/** Statuses whose amount is not yet reflected in the confirmed balance (reserved from it). */
const RESERVED_STATUSES: readonly TransferStatus[] = [
  'PENDING',
  'PENDING_APPROVAL',
  'PENDING_SIGNATURE',
  'READY_TO_SEND',
];

/** Terminal failure statuses (TRANSFER_FAILED). */
export const FAILURE_STATUSES: readonly TransferStatus[] = [
  'REJECTED',
  'REJECTED_BY_POLICY',
  'NO_POLICY_FOUND',
  'EXPIRED',
  'FAILED',
];

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
}

/** Fee bump of the API's transfer object (the stored {@link FeeBump} without its transaction and intent). */
export type FeeBumpView = Pick<
  FeeBump,
  'status' | 'round' | 'priority' | 'requested_by' | 'requested_at' | 'deadline' | 'sub_status' | 'error' | 'cap_raised'
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

/** An approval request pushed to a key's approver devices. */
export interface ApprovalRequest {
  transfer_id: string;
  profile_id: string;
  /** 0: the transfer; n > 0: its n-th fee bump. */
  round: number;
  intent: TransferIntent;
  /** Hex `transferIntentDigest(intent)`: what the device signs its decision over (with `signApproval`). */
  intent_digest: string;
  approvals_required: number;
  deadline: string;
  /**
   * Human summary for the phone screen (a convenience: a phone presents and signs `intent`).
   * `max_fee`: the round's fee cap, decimal string in the native asset's units (`fee_currency`).
   */
  summary: {
    amount: string;
    symbol: string;
    destination_address: string;
    blockchain: string;
    fee_bump: boolean;
    max_fee: string;
    fee_currency: string;
  };
}

/** Pushes approval requests to devices (Engineer M's device hub implements it). */
export interface ApprovalNotifier {
  /** Best effort: devices offline now fetch their pending requests on connect ({@link TransferService.pendingApprovals}). */
  notifyApprovalRequest(deviceIds: readonly string[], request: ApprovalRequest): void;
  /** Withdraw a request that no longer needs an answer (decided, cancelled, expired). Best effort. */
  withdrawApprovalRequest?(deviceIds: readonly string[], transferId: string, round: number): void;
}

/** Options of {@link TransferService}. */
export interface TransferServiceOptions {
  /** How long approvals are awaited (ms). Default 24 h. */
  approvalWindowMs: number;
  /**
   * Fee cap of new transfers per blockchain key, base units of the native asset
   * (`resolveFeeCaps` of directory.ts: the operator's `transfers.feeCaps`, else the directory
   * default). A blockchain missing here gets its directory default.
   */
  feeCaps?: ReadonlyMap<string, bigint>;
}

interface TransferRow {
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

export type { TransferRow };

const SELECT = `SELECT t.transfer_id, t.profile_id, t.wallet_id, t.asset_id, t.blockchain_id, t.master_key_id, t.source_address,
  t.destination_address, t.amount::text AS amount, t.external_id, t.status, t.sub_status, t.intent, t.intent_digest,
  t.policy_id, t.policy_version, t.approvals_required, t.approval_round, t.approval_deadline, t.unsigned, t.signed_tx,
  t.tx_hash, t.tx_hashes, t.fee_bump, t.error, t.lease_until, t.lease_owner, t.signing_since, t.created_at, t.updated_at, t.sent_at, t.delivered_at,
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
function feeFields(blockchain: string, base: bigint) {
  const a = nativeAssetOf(blockchain);
  return { max_fee: formatUnits(base, a.decimals), max_fee_base_units: base.toString(), fee_currency: a.symbol };
}

/** The fee cap of an approval request's summary: native units and symbol. */
function summaryFee(i: TransferIntent): { max_fee: string; fee_currency: string } {
  const f = feeFields(i.blockchain, intentCap(i));
  return { max_fee: f.max_fee, fee_currency: f.fee_currency };
}

/** The API form of a stored fee bump: no transaction, no intent; the round's fee cap in native units. */
export function feeBumpView(b: FeeBump, blockchain: string): FeeBumpView {
  const { unsigned: _u, intent, intent_digest: _d, cap_raised, signing_since: _s, ...rest } = b;
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
    `${SELECT} WHERE t.transfer_id = $1 ${profileId !== undefined ? 'AND t.profile_id = $2' : ''}`,
    profileId !== undefined ? [transferId, profileId] : [transferId],
  );
  return r[0];
}

/**
 * Persist a status change with its events (TRANSFER_UPDATED; TRANSFER_FAILED on a terminal failure)
 * in the caller's transaction. `extra` sets further columns.
 */
export async function transition(
  q: Queryable,
  clock: Clock,
  transferId: string,
  status: TransferStatus,
  subStatus: string | null,
  extra: Record<string, unknown> = {},
): Promise<TransferView> {
  const cols = Object.keys(extra);
  const sets = cols.map((c, i) => `${c} = $${i + 5}`).join(', ');
  // entering PENDING_SIGNATURE starts the signing window (pipeline.ts); staying in it keeps it
  await q.query(
    `UPDATE transfers SET status = $2, sub_status = $3, updated_at = $4,
       signing_since = CASE WHEN $2 = 'PENDING_SIGNATURE' AND status <> 'PENDING_SIGNATURE' THEN $4 ELSE signing_since END
       ${sets ? `, ${sets}` : ''} WHERE transfer_id = $1`,
    [transferId, status, subStatus, clock(), ...cols.map((c) => extra[c])],
  );
  const row = await loadTransfer(q, transferId);
  if (row === undefined) throw new Error(`transfer ${transferId} vanished`);
  const v = transferView(row);
  await emitEvent(q, clock, { profileId: v.profile_id, type: 'TRANSFER_UPDATED', data: transferEventData(v) });
  if (FAILURE_STATUSES.includes(status)) {
    await emitEvent(q, clock, { profileId: v.profile_id, type: 'TRANSFER_FAILED', data: transferEventData(v) });
  }
  return v;
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

/** The key id the signers know a master key by (store.ts; re-exported for the transfer pipeline's callers). */
export { transferKeyId };

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

interface Prepared {
  def: BlockchainDef;
  intentBase: Omit<TransferIntent, 'transfer_id' | 'created_at'>;
  amount: bigint;
  masterKeyId: string;
  blockchainId: string;
  approverDevices: string[];
}

const field = (f: string, message: string) =>
  new ApiError('VALIDATION_FAILED', `${f}: ${message}`, [{ field: f, message }]);

/** Transfers: creation, queries, approvals, cancel, fee bump. */
export class TransferService {
  /** Called after a transaction that created work for the pipeline (set by the coordinator). */
  onWork: () => void = () => {};
  notifier: ApprovalNotifier | undefined;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly policies: PolicyService,
    private readonly chains: ChainRegistry,
    private readonly opts: TransferServiceOptions,
  ) {}

  /** Validate a transfer body against the wallet, asset and chain. @throws ApiError 422 naming the field */
  async prepare(q: Queryable, profileId: string, input: TransferInput): Promise<Prepared> {
    const walletId = input.wallet_id.toLowerCase();
    const assetId = input.asset_id.toLowerCase();
    const w = (
      await q.query<{ master_key_id: string; ceremony_id: string | null; parties: unknown }>(
        `SELECT w.master_key_id, m.ceremony_id, m.parties FROM wallets w JOIN master_keys m USING (master_key_id)
         WHERE w.profile_id = $1 AND w.wallet_id = $2`,
        [profileId, walletId],
      )
    )[0];
    if (w === undefined) throw field('body.wallet_id', 'no such wallet in this profile');
    const a = (
      await q.query<{
        symbol: string;
        decimals: number;
        contract_address: string | null;
        blockchain_id: string;
        key: string;
        enabled: boolean;
      }>(
        `SELECT a.symbol, a.decimals, a.contract_address, a.blockchain_id, b.key,
           COALESCE((SELECT pb.enabled FROM profile_blockchains pb WHERE pb.profile_id = $1 AND pb.blockchain_id = b.blockchain_id), b.default_enabled)
           AND COALESCE((SELECT pa.enabled FROM profile_assets pa WHERE pa.profile_id = $1 AND pa.asset_id = a.asset_id), true) AS enabled
         FROM assets a JOIN blockchains b ON b.blockchain_id = a.blockchain_id
         JOIN wallet_blockchains wb ON wb.blockchain_id = a.blockchain_id AND wb.wallet_id = $2
         WHERE a.asset_id = $3`,
        [profileId, walletId, assetId],
      )
    )[0];
    if (a === undefined || !a.enabled) {
      throw field('body.asset_id', 'not an asset enabled for this profile on one of the wallet blockchains');
    }
    const def = blockchainByKey(a.key);
    if (def === undefined) throw new Error(`blockchain ${a.key} is not in the directory`);
    let amount: bigint;
    try {
      amount = parseUnits(input.amount, a.decimals, 'body.amount');
    } catch (e) {
      if (e instanceof InvalidTransferError) {
        throw field(
          'body.amount',
          /decimals/.test(e.message)
            ? `more than ${a.decimals} decimals (never rounded)`
            : 'a positive decimal string in asset units, e.g. "1.5"',
        );
      }
      throw e;
    }
    if (amount <= 0n) throw field('body.amount', 'must be greater than zero');
    let destination: string;
    try {
      destination = this.chains.validateDestination(def, input.destination_address, 'body.destination_address');
    } catch (e) {
      if (e instanceof InvalidAddressError) throw field('body.destination_address', `invalid address (${e.reason})`);
      throw e;
    }
    const src = (
      await q.query<{ address: string; derivation_path: string; address_type: string }>(
        `SELECT address, derivation_path, address_type FROM addresses WHERE wallet_id = $1 AND blockchain_id = $2
         ORDER BY address_index LIMIT 1`,
        [walletId, a.blockchain_id],
      )
    )[0];
    if (src === undefined) throw field('body.wallet_id', 'the wallet has no address on this blockchain');
    return {
      def,
      amount,
      masterKeyId: w.master_key_id,
      blockchainId: a.blockchain_id,
      approverDevices: approverDeviceIds(w.parties),
      intentBase: {
        profile_id: profileId,
        wallet_id: walletId,
        blockchain: def.key,
        asset_id: assetId,
        asset_symbol: a.symbol,
        asset_decimals: a.decimals,
        asset_contract: a.contract_address,
        source_address: src.address,
        destination_address: destination,
        amount: amount.toString(),
        derivation_path: parsePath(src.derivation_path),
        key_algorithm: src.address_type === 'p2tr' ? 'SECP256K1_TAPROOT' : 'SECP256K1_ECDSA',
        key_id: transferKeyId({ ceremony_id: w.ceremony_id, master_key_id: w.master_key_id }),
        max_fee: (this.opts.feeCaps?.get(def.key) ?? BigInt(def.defaultMaxFee)).toString(),
      },
    };
  }

  /** Confirmed balance minus the amounts of transfers not yet sent (base units). */
  private async available(q: Queryable, walletId: string, assetId: string): Promise<bigint> {
    const r = await q.query<{ bal: string; reserved: string }>(
      `SELECT COALESCE((SELECT amount FROM balances WHERE wallet_id = $1 AND asset_id = $2), 0)::text AS bal,
              COALESCE((SELECT sum(amount) FROM transfers WHERE wallet_id = $1 AND asset_id = $2
                AND status = ANY($3::text[])), 0)::text AS reserved`,
      [walletId, assetId, RESERVED_STATUSES],
    );
    return BigInt(r[0]?.bal ?? '0') - BigInt(r[0]?.reserved ?? '0');
  }

  private async spent(q: Queryable, walletId: string, assetId: string, day: string): Promise<bigint> {
    const r = await q.query<{ s: string }>(
      `SELECT COALESCE(sum(amount), 0)::text AS s FROM transfers WHERE wallet_id = $1 AND asset_id = $2 AND day = $3
         AND status = ANY($4::text[])`,
      [walletId, assetId, day, COUNTED_STATUSES],
    );
    return BigInt(r[0]?.s ?? '0');
  }

  /**
   * Create a transfer (seed §4, DESIGN §7). Validation errors are 422 naming the field; the amount
   * must not exceed the wallet's confirmed balance minus its transfers not yet sent.
   * @returns the transfer after the policy step (PENDING_APPROVAL, REJECTED_BY_POLICY or NO_POLICY_FOUND)
   */
  async create(profileId: string, input: TransferInput): Promise<TransferView> {
    const out = await this.db.tx((q) => this.createIn(q, profileId, input));
    out.afterCommit();
    return out.view;
  }

  /**
   * {@link create} inside the caller's open transaction `q` (e.g. the one completing the request's
   * idempotency record). The caller runs `afterCommit` once `q` has committed: it pushes the
   * approval requests to the approvers' devices — never for a transfer that may still roll back.
   */
  async createIn(
    q: Queryable,
    profileId: string,
    input: TransferInput,
  ): Promise<{ view: TransferView; afterCommit: () => void }> {
    const p = await this.prepare(q, profileId, input);
    const now = this.clock();
    const day = utcDay(now);
    // serialise limit checks per wallet, asset and UTC day (a row lock: PGlite and PostgreSQL alike)
    await q.query(
      'INSERT INTO transfer_day_locks (wallet_id, asset_id, day) VALUES ($1,$2,$3) ON CONFLICT DO NOTHING',
      [p.intentBase.wallet_id, p.intentBase.asset_id, day],
    );
    await q.query('SELECT 1 FROM transfer_day_locks WHERE wallet_id = $1 AND asset_id = $2 AND day = $3 FOR UPDATE', [
      p.intentBase.wallet_id,
      p.intentBase.asset_id,
      day,
    ]);
    if (p.amount > (await this.available(q, p.intentBase.wallet_id, p.intentBase.asset_id))) {
      throw field('body.amount', "exceeds the wallet's available balance");
    }
    const intent: TransferIntent = { ...p.intentBase, transfer_id: randomUUID(), created_at: now.toISOString() };
    const spent = await this.spent(q, intent.wallet_id, intent.asset_id, day);
    const policy = await this.policies.match(q, intent);
    let status: TransferStatus;
    let sub: string | null = null;
    let required = 0;
    if (policy === null) {
      status = 'NO_POLICY_FOUND';
      sub = 'NO_POLICY_FOUND';
    } else {
      const v = evaluatePolicy(policy.document, intent, spent);
      if (v.ok) {
        status = 'PENDING_APPROVAL';
        required = v.approvalsRequired;
      } else {
        status = 'REJECTED_BY_POLICY';
        sub = v.refusal;
      }
    }
    const digest = bytesToHex(transferIntentDigest(intent));
    await q.query(
      `INSERT INTO transfers (transfer_id, profile_id, wallet_id, asset_id, blockchain_id, master_key_id, source_address,
         destination_address, amount, external_id, status, sub_status, day, intent, intent_digest, policy_id, policy_version,
         approvals_required, approval_deadline, created_at, updated_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9::numeric,$10,'PENDING',NULL,$11,$12::jsonb,$13,$14,$15,$16,$17,$18,$18)`,
      [
        intent.transfer_id,
        profileId,
        intent.wallet_id,
        intent.asset_id,
        p.blockchainId,
        p.masterKeyId,
        intent.source_address,
        intent.destination_address,
        intent.amount,
        input.external_id ?? null,
        day,
        JSON.stringify(intent),
        digest,
        policy?.document.policy_id ?? null,
        policy?.document.version ?? null,
        required,
        status === 'PENDING_APPROVAL' ? new Date(now.getTime() + this.opts.approvalWindowMs) : null,
        now,
      ],
    );
    const created = await loadTransfer(q, intent.transfer_id);
    await emitEvent(q, this.clock, {
      profileId,
      type: 'TRANSFER_CREATED',
      data: transferEventData(transferView(created!)),
    });
    const view = await transition(q, this.clock, intent.transfer_id, status, sub);
    return {
      view,
      afterCommit: () => {
        if (view.status === 'PENDING_APPROVAL') this.notify(p.approverDevices, view, intent, 0);
      },
    };
  }

  private notify(devices: string[], v: TransferView, intent: TransferIntent, round: number, deadline?: string): void {
    if (!this.notifier || devices.length === 0) return;
    this.notifier.notifyApprovalRequest(devices, {
      transfer_id: v.transfer_id,
      profile_id: v.profile_id,
      round,
      intent,
      intent_digest: bytesToHex(transferIntentDigest(intent)),
      approvals_required: v.approvals_required,
      deadline: deadline ?? v.approval_deadline ?? '',
      summary: {
        amount: v.amount,
        symbol: intent.asset_symbol,
        destination_address: v.destination_address,
        blockchain: intent.blockchain,
        fee_bump: round > 0,
        ...summaryFee(intent),
      },
    });
  }

  /**
   * Evaluate a would-be transfer without creating anything (our extension): the matching policy,
   * the decision and the approvals needed. Validation as for creation (422 naming the field).
   */
  async dryRun(profileId: string, input: TransferInput) {
    const p = await this.prepare(this.db, profileId, input);
    const now = this.clock();
    const intent: TransferIntent = { ...p.intentBase, transfer_id: randomUUID(), created_at: now.toISOString() };
    const spent = await this.spent(this.db, intent.wallet_id, intent.asset_id, utcDay(now));
    const available = await this.available(this.db, intent.wallet_id, intent.asset_id);
    const policy = await this.policies.match(this.db, intent);
    const base = {
      amount_base_units: intent.amount,
      spent_today_base_units: spent.toString(),
      available_base_units: available.toString(),
      sufficient_balance: p.amount <= available,
    };
    if (policy === null) {
      return {
        ...base,
        policy: null,
        decision: 'NO_POLICY_FOUND',
        status: 'NO_POLICY_FOUND',
        sub_status: 'NO_POLICY_FOUND',
        approvals_required: 0,
      };
    }
    const v = evaluatePolicy(policy.document, intent, spent);
    return {
      ...base,
      policy: { policy_id: policy.document.policy_id, version: policy.document.version, scope: policy.document.scope },
      decision: v.ok ? 'ALLOW' : 'DENY',
      status: v.ok ? 'PENDING_APPROVAL' : 'REJECTED_BY_POLICY',
      sub_status: v.ok ? null : v.refusal,
      approvals_required: v.ok ? v.approvalsRequired : 0,
    };
  }

  /** Fee estimate (seed §4) through the chain adapter. @throws ApiError CHAIN_UNAVAILABLE (503), 422 as creation */
  async feeEstimate(profileId: string, input: TransferInput, priority: FeeLevel) {
    const p = await this.prepare(this.db, profileId, input);
    const adapter = this.chains.adapter(p.def.key);
    if (adapter === undefined) throw new ApiError('CHAIN_UNAVAILABLE', `no node is configured for ${p.def.key}`);
    const src = (
      await this.db.query<{ public_key: string }>(
        'SELECT public_key FROM addresses WHERE wallet_id = $1 AND blockchain_id = $2 AND address = $3',
        [p.intentBase.wallet_id, p.blockchainId, p.intentBase.source_address],
      )
    )[0];
    try {
      const est = await adapter.estimateFee(
        {
          fields: fieldsOf(p.intentBase),
          sources: [
            {
              address: p.intentBase.source_address,
              publicKey: Uint8Array.from(Buffer.from(src?.public_key ?? '', 'hex')),
              path: p.intentBase.derivation_path,
            },
          ],
        },
        priority,
      );
      return { ...est, priority, blockchain: p.def.key };
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === 'NODE_RPC_ERROR') throw new ApiError('CHAIN_UNAVAILABLE', 'the blockchain node did not answer');
      if (code === 'INSUFFICIENT_FUNDS') throw field('body.amount', "exceeds the wallet's balance on chain");
      throw e;
    }
  }

  /** One transfer of a profile. @throws ApiError TRANSFER_NOT_FOUND */
  async get(profileId: string, transferId: string): Promise<TransferView> {
    const r = await loadTransfer(this.db, transferId, false, profileId);
    if (r === undefined) throw new ApiError('TRANSFER_NOT_FOUND', `no transfer ${transferId} in this profile`);
    return transferView(r);
  }

  /**
   * Transfers of a profile, newest first, filtered by `wallet_id` and/or `status`, and by
   * `wallet_ids` (a dashboard user's wallet-group scope, admin/scope.ts: only transfers of these wallets).
   */
  async list(
    profileId: string,
    filter: { wallet_id?: string; status?: TransferStatus; wallet_ids?: readonly string[] },
    page: PageRequest,
  ): Promise<Page<TransferView>> {
    const conds = ['t.profile_id = $1'];
    const params: unknown[] = [profileId];
    if (filter.wallet_id !== undefined) {
      params.push(filter.wallet_id.toLowerCase());
      conds.push(`t.wallet_id = $${params.length}`);
    }
    if (filter.wallet_ids !== undefined) {
      params.push(filter.wallet_ids);
      conds.push(`t.wallet_id = ANY($${params.length}::uuid[])`);
    }
    if (filter.status !== undefined) {
      params.push(filter.status);
      conds.push(`t.status = $${params.length}`);
    }
    const where = conds.join(' AND ');
    const rows = await this.db.query<TransferRow>(
      `${SELECT} WHERE ${where} ORDER BY t.created_at DESC, t.transfer_id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, page.page_size, (page.page - 1) * page.page_size],
    );
    const total =
      (await this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM transfers t WHERE ${where}`, params))[0]?.n ??
      0;
    return { data: rows.map(transferView), page: page.page, page_size: page.page_size, total };
  }

  /**
   * A device's signed decision (called by the device hub when a phone answers an approval request).
   * Checks: the transfer awaits approvals (round 0, or a fee bump's round), the device is one of
   * the key's approver devices, APPROVED, with the public key it signed with, the decision is over
   * the transfer's intent digest and its P-256 signature verifies. A REJECT ends the transfer
   * REJECTED / REJECTED_BY_APPROVER (a bump: the bump is rejected, the transfer stays SENT); the
   * quorum of distinct devices moves it to PENDING_SIGNATURE.
   * @throws ApiError TRANSFER_NOT_FOUND, TRANSFER_STATE_CONFLICT (409), VALIDATION_FAILED (422), CONFLICT (device already decided)
   */
  async submitApproval(approval: Approval): Promise<TransferView> {
    const view = await this.db.tx(async (q) => {
      const t = await loadTransfer(q, String(approval.transfer_id).toLowerCase(), true);
      if (t === undefined) throw new ApiError('TRANSFER_NOT_FOUND', 'no such transfer');
      const bump = t.fee_bump;
      const round = t.approval_round;
      const waiting =
        (round === 0 && t.status === 'PENDING_APPROVAL') ||
        (round > 0 && t.status === 'SENT' && bump?.status === 'PENDING_APPROVAL');
      if (!waiting) throw new ApiError('TRANSFER_STATE_CONFLICT', `the transfer is ${t.status}: no approval awaited`);
      const deadline = round === 0 ? t.approval_deadline : bump ? new Date(bump.deadline) : null;
      if (deadline !== null && deadline.getTime() <= this.clock().getTime()) {
        throw new ApiError('TRANSFER_STATE_CONFLICT', 'the approval window has elapsed');
      }
      const deviceId = String(approval.device_id).toLowerCase();
      const mk = (
        await q.query<{ parties: unknown }>('SELECT parties FROM master_keys WHERE master_key_id = $1', [
          t.master_key_id,
        ])
      )[0];
      if (!approverDeviceIds(mk?.parties).includes(deviceId)) {
        throw field('approval.device_id', "not one of the key's approver devices");
      }
      const dev = (
        await q.query<{ public_key: string; status: string }>(
          'SELECT public_key, status FROM devices WHERE device_id = $1',
          [deviceId],
        )
      )[0];
      if (dev === undefined || dev.status !== 'APPROVED') throw field('approval.device_id', 'not an approved device');
      if (normalisePublicKey(dev.public_key) !== approval.device_public_key) {
        throw field('approval.device_public_key', "not the device's enrolled key");
      }
      // a fee bump round's approvals are over that round's intent (its raised cap included)
      if (approval.intent_digest !== roundIntent(t).digest)
        throw field('approval.intent_digest', 'not the intent of this transfer and approval round');
      if (approval.decision !== 'APPROVE' && approval.decision !== 'REJECT')
        throw field('approval.decision', 'APPROVE or REJECT');
      if (
        !/^[0-9a-f]{128}$/.test(String(approval.signature)) ||
        !deviceVerify(approval.signature, approvalDigest(approval), normalisePublicKey(dev.public_key))
      ) {
        throw field('approval.signature', 'does not verify');
      }
      const ins = await q.query(
        `INSERT INTO transfer_approvals (transfer_id, round, device_id, decision, approval, created_at)
         VALUES ($1,$2,$3,$4,$5::jsonb,$6) ON CONFLICT DO NOTHING RETURNING 1`,
        [t.transfer_id, round, deviceId, approval.decision, JSON.stringify(approval), this.clock()],
      );
      if (ins.length === 0) throw new ApiError('CONFLICT', 'this device already decided on this transfer');
      if (round === 0) {
        if (approval.decision === 'REJECT')
          return transition(q, this.clock, t.transfer_id, 'REJECTED', 'REJECTED_BY_APPROVER');
        const n = await this.approveCount(q, t.transfer_id, round);
        if (n >= t.approvals_required) return transition(q, this.clock, t.transfer_id, 'PENDING_SIGNATURE', null);
        return transition(q, this.clock, t.transfer_id, 'PENDING_APPROVAL', null);
      }
      const next: FeeBump =
        approval.decision === 'REJECT'
          ? { ...(bump as FeeBump), status: 'REJECTED', sub_status: 'REJECTED_BY_APPROVER' }
          : (await this.approveCount(q, t.transfer_id, round)) >= t.approvals_required
            ? { ...(bump as FeeBump), status: 'PENDING_SIGNATURE', signing_since: this.clock().toISOString() }
            : (bump as FeeBump);
      return transition(q, this.clock, t.transfer_id, 'SENT', t.sub_status, { fee_bump: JSON.stringify(next) });
    });
    this.onWork();
    const awaiting = view.status === 'PENDING_APPROVAL' || view.fee_bump?.status === 'PENDING_APPROVAL';
    if (!awaiting) await this.withdrawRequests(view.transfer_id);
    return view;
  }

  /** Withdraw the pushed approval requests of a transfer's current round (see {@link ApprovalNotifier}). */
  async withdrawRequests(transferId: string): Promise<void> {
    if (!this.notifier?.withdrawApprovalRequest) return;
    const r = (
      await this.db.query<{ parties: unknown; approval_round: number }>(
        `SELECT m.parties, t.approval_round FROM transfers t JOIN master_keys m USING (master_key_id) WHERE t.transfer_id = $1`,
        [transferId],
      )
    )[0];
    if (r) this.notifier.withdrawApprovalRequest(approverDeviceIds(r.parties), transferId, r.approval_round);
  }

  private async approveCount(q: Queryable, transferId: string, round: number): Promise<number> {
    const r = await q.query<{ n: number }>(
      `SELECT count(DISTINCT device_id)::int AS n FROM transfer_approvals WHERE transfer_id = $1 AND round = $2 AND decision = 'APPROVE'`,
      [transferId, round],
    );
    return r[0]?.n ?? 0;
  }

  /** Approval requests a device can answer now (for a device that connects after the push). */
  async pendingApprovals(deviceId: string): Promise<ApprovalRequest[]> {
    const rows = await this.db.query<TransferRow & { parties: unknown }>(
      `${SELECT.replace('FROM transfers t', ', m.parties FROM transfers t JOIN master_keys m ON m.master_key_id = t.master_key_id')}
       WHERE (t.status = 'PENDING_APPROVAL' OR (t.status = 'SENT' AND t.fee_bump->>'status' = 'PENDING_APPROVAL'))
         AND NOT EXISTS (SELECT 1 FROM transfer_approvals ta WHERE ta.transfer_id = t.transfer_id
           AND ta.round = t.approval_round AND ta.device_id = $1)
       ORDER BY t.created_at`,
      [deviceId.toLowerCase()],
    );
    return rows
      .filter((r) => approverDeviceIds(r.parties).includes(deviceId.toLowerCase()))
      .map((r) => {
        const v = transferView(r);
        const { intent, digest } = roundIntent(r);
        return {
          transfer_id: v.transfer_id,
          profile_id: v.profile_id,
          round: r.approval_round,
          intent,
          intent_digest: digest,
          approvals_required: r.approvals_required,
          deadline: r.approval_round > 0 ? (r.fee_bump?.deadline ?? '') : (v.approval_deadline ?? ''),
          summary: {
            amount: v.amount,
            symbol: r.intent.asset_symbol,
            destination_address: v.destination_address,
            blockchain: r.intent.blockchain,
            fee_bump: r.approval_round > 0,
            ...summaryFee(intent),
          },
        };
      });
  }

  /**
   * Cancel a pending transfer (admin API; seed §4 rule 3: not in the REST API): PENDING,
   * PENDING_APPROVAL, or PENDING_SIGNATURE before any transaction was built and while no worker
   * holds it. → REJECTED / CANCELLED_BY_USER.
   * @throws ApiError TRANSFER_NOT_FOUND, TRANSFER_STATE_CONFLICT
   */
  async cancel(actor: string, profileId: string, transferId: string): Promise<TransferView> {
    const v = await this.db.tx(async (q) => {
      const t = await loadTransfer(q, transferId, true, profileId);
      if (t === undefined) throw new ApiError('TRANSFER_NOT_FOUND', `no transfer ${transferId} in this profile`);
      const now = this.clock().getTime();
      const cancellable =
        t.status === 'PENDING' ||
        t.status === 'PENDING_APPROVAL' ||
        (t.status === 'PENDING_SIGNATURE' &&
          t.unsigned === null &&
          (t.lease_until === null || t.lease_until.getTime() < now));
      if (!cancellable) throw new ApiError('TRANSFER_STATE_CONFLICT', `a ${t.status} transfer cannot be cancelled`);
      const v = await transition(q, this.clock, t.transfer_id, 'REJECTED', 'CANCELLED_BY_USER', {
        error: `cancelled by ${actor}`,
      });
      await q.query(
        `INSERT INTO audit_log (audit_id, at, actor_user_id, action, target_type, target_id, details)
         VALUES ($1,$2,$3,'transfer.cancelled','transfer',$4,'{}'::jsonb)`,
        [randomUUID(), this.clock(), actor, t.transfer_id],
      );
      return v;
    });
    await this.withdrawRequests(v.transfer_id);
    return v;
  }

  /**
   * Request a fee bump of a SENT, unconfirmed transfer (admin API): a replacement transaction with
   * higher fees (same nonce / RBF), signed anew — so it needs a new round of device approvals (the
   * policy's quorum), pushed like the first ones; signers accept only approvals not used before.
   *
   * The replacement is built now (fee estimate at `priority`) and stored with the bump, so the
   * approvers decide on the fee it pays. Its fee cap: when the replacement's maximum fee stays
   * within the cap the current transaction was approved under, the round approves that same
   * intent; above it, the round's intent is that intent with `max_fee` raised to exactly the
   * replacement's maximum fee (`fee_bump.cap_raised`) — approvers see and sign the raised cap, and
   * the signers get that intent with the round's approvals.
   * @throws ApiError TRANSFER_NOT_FOUND, TRANSFER_STATE_CONFLICT (not SENT, a bump under way, or the
   *   chain cannot replace: e.g. TRON, or the change cannot pay the higher fee), CHAIN_UNAVAILABLE (503)
   */
  async requestFeeBump(
    actor: string,
    profileId: string,
    transferId: string,
    priority: FeeLevel,
  ): Promise<TransferView> {
    const check = (t: TransferRow | undefined): TransferRow => {
      if (t === undefined) throw new ApiError('TRANSFER_NOT_FOUND', `no transfer ${transferId} in this profile`);
      if (t.status !== 'SENT' || t.delivered_at !== null || t.unsigned === null) {
        throw new ApiError('TRANSFER_STATE_CONFLICT', 'only a SENT transfer not yet confirmed can be fee-bumped');
      }
      if (t.fee_bump !== null && !['DONE', 'REJECTED', 'FAILED'].includes(t.fee_bump.status)) {
        throw new ApiError('TRANSFER_STATE_CONFLICT', `a fee bump is already ${t.fee_bump.status}`);
      }
      return t;
    };
    const before = check(await loadTransfer(this.db, transferId, false, profileId));
    const adapter = this.chains.adapter(before.intent.blockchain);
    if (adapter === undefined)
      throw new ApiError('CHAIN_UNAVAILABLE', `no node is configured for ${before.intent.blockchain}`);
    const current = before.unsigned as StoredUnsigned;
    let replacement: Awaited<ReturnType<typeof adapter.buildReplacement>>;
    try {
      replacement = await adapter.buildReplacement(loadUnsigned(current, fieldsOf(before.intent)), priority);
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === 'NODE_RPC_ERROR') throw new ApiError('CHAIN_UNAVAILABLE', 'the blockchain node did not answer');
      if (typeof code === 'string')
        throw new ApiError('TRANSFER_STATE_CONFLICT', `no replacement: ${(e as Error).message}`);
      throw e;
    }
    // the intent the current transaction was signed under (a previous bump may have raised its cap)
    const base: TransferIntent = {
      ...before.intent,
      max_fee: current.approvedMaxFee ?? intentCap(before.intent).toString(),
    };
    const capRaised = replacement.maxFee > BigInt(base.max_fee);
    const intent: TransferIntent = capRaised ? { ...base, max_fee: replacement.maxFee.toString() } : base;
    const out = await this.db.tx(async (q) => {
      const t = check(await loadTransfer(q, transferId, true, profileId));
      if (t.tx_hash !== before.tx_hash)
        throw new ApiError('TRANSFER_STATE_CONFLICT', 'the transaction changed meanwhile');
      const round = t.approval_round + 1;
      const now = this.clock();
      const bump: FeeBump = {
        status: 'PENDING_APPROVAL',
        round,
        priority,
        requested_by: actor,
        requested_at: now.toISOString(),
        deadline: new Date(now.getTime() + this.opts.approvalWindowMs).toISOString(),
        intent,
        intent_digest: bytesToHex(transferIntentDigest(intent)),
        cap_raised: capRaised,
        unsigned: storeUnsigned(replacement, intent.max_fee),
      };
      const v = await transition(q, this.clock, t.transfer_id, 'SENT', t.sub_status, {
        fee_bump: JSON.stringify(bump),
        approval_round: round,
      });
      const mk = (
        await q.query<{ parties: unknown }>('SELECT parties FROM master_keys WHERE master_key_id = $1', [
          t.master_key_id,
        ])
      )[0];
      await q.query(
        `INSERT INTO audit_log (audit_id, at, actor_user_id, action, target_type, target_id, details)
         VALUES ($1,$2,$3,'transfer.fee_bump_requested','transfer',$4,$5::jsonb)`,
        [
          randomUUID(),
          now,
          actor,
          t.transfer_id,
          JSON.stringify({ priority, round, max_fee: intent.max_fee, cap_raised: capRaised }),
        ],
      );
      return { v, approvers: approverDeviceIds(mk?.parties), bump };
    });
    this.notify(out.approvers, out.v, intent, out.bump.round, out.bump.deadline);
    return out.v;
  }

  /** The signed policy version a transfer was evaluated under. */
  async policyOf(q: Queryable, t: TransferRow): Promise<SignedPolicy | null> {
    if (t.policy_id === null || t.policy_version === null) return null;
    const r = await q.query<{ signed: SignedPolicy | null }>(
      'SELECT signed FROM policy_versions WHERE policy_id = $1 AND version = $2',
      [t.policy_id, t.policy_version],
    );
    return r[0]?.signed ?? null;
  }

  /** Approvals of a round (what the signers check). */
  async approvalsOf(q: Queryable, transferId: string, round: number): Promise<Approval[]> {
    const r = await q.query<{ approval: Approval }>(
      'SELECT approval FROM transfer_approvals WHERE transfer_id = $1 AND round = $2 ORDER BY created_at, device_id',
      [transferId, round],
    );
    return r.map((x) => x.approval);
  }
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
