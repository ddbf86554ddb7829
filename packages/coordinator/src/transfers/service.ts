/**
 * The transfer request service (seed §4; DESIGN §7): what the REST routes (routes.ts), the admin
 * routes (admin-routes.ts) and the device hub call — create, dry run, fee estimate, get, list,
 * device approvals, cancel, fee bump request — and the evidence the pipeline hands the signers
 * (policyOf, approvalsOf). The work is in creation.ts, approvals.ts and fee-bump-request.ts; the
 * statuses and every allowed move are machine.ts (docs/transfers.md has the table); the
 * asynchronous half (signing, broadcast, confirmation, expiry) is the pipeline, pipeline.ts.
 *
 * This module also re-exports the transfer types and helpers that lived here before the split
 * (view.ts, machine.ts, request-context.ts), so `@custodian/coordinator` exports what it did.
 */

import { randomUUID } from 'node:crypto';
import type { FeeLevel } from '@custodian/chains';
import type { Approval, PolicyDocument, SignedPolicy } from '@custodian/wire';
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { TransferMetrics } from '../metrics/registry.js';
import type { Page, PageRequest } from '../store.js';
import type { Clock } from '../util.js';
import { type AdminTransferView, adminTransferView } from './admin-view.js';
import { pendingApprovals, submitApproval, withdrawRequests } from './approvals.js';
import type { ChainRegistry } from './chains.js';
import { createIn, dryRun, feeEstimate } from './creation.js';
import { requestFeeBump } from './fee-bump-request.js';
import { type TransferStatus, transition } from './machine.js';
import type { PolicyService } from './policies.js';
import type { ApprovalRequest, RequestContext, TransferServiceOptions, TransferSignals } from './request-context.js';
import { type ConsolidationInput, consolidate } from './self-spend.js';
import {
  loadTransfer,
  TRANSFER_SELECT,
  type TransferInput,
  type TransferRow,
  type TransferView,
  transferView,
} from './view.js';

export { transferKeyId } from '../store.js';
export type { Move, Mover, PipelineStatus, TransferStatus } from './machine.js';
export {
  allowedMove,
  COUNTED_STATUSES,
  canTransition,
  FAILURE_STATUSES,
  IllegalTransitionError,
  markDelivered,
  PIPELINE_STATUSES,
  REFUSAL_CODE,
  RESERVED_STATUSES,
  TRANSFER_STATUSES,
  TRANSITIONS,
  TRANSITIONS_HEADER,
  TransitionLostError,
  transition,
  transitionsMarkdown,
  transitionsRows,
} from './machine.js';
export type { ApprovalNotifier, ApprovalRequest, TransferServiceOptions, TransferSignals } from './request-context.js';
export { transferSignals } from './request-context.js';
export {
  approverDeviceIds,
  type FeeBump,
  type FeeBumpView,
  feeBumpView,
  fieldsOf,
  intentCap,
  loadTransfer,
  parsePath,
  roundIntent,
  type TransferInput,
  type TransferRow,
  type TransferView,
  transferEventData,
  transferView,
  utcDay,
} from './view.js';

/** What {@link TransferService} is built from. */
export interface TransferServiceComponents {
  readonly db: Db;
  readonly clock: Clock;
  readonly policies: PolicyService;
  readonly chains: ChainRegistry;
  readonly options: TransferServiceOptions;
  /** Where it reports new pipeline work and approval requests (request-context.ts). */
  readonly signals: TransferSignals;
  /** Status moves and time in each status (metrics/registry.ts); absent: not measured. */
  readonly metrics?: TransferMetrics | undefined;
}

/** Transfers: creation, queries, approvals, cancel, fee bump. */
export class TransferService {
  private readonly db: Db;
  private readonly clock: Clock;
  /** The request functions' components (request-context.ts). */
  private readonly ctx: RequestContext;

  constructor(components: TransferServiceComponents) {
    this.db = components.db;
    this.clock = components.clock;
    this.ctx = {
      db: components.db,
      clock: components.clock,
      policies: components.policies,
      chains: components.chains,
      opts: components.options,
      signals: components.signals,
      metrics: components.metrics,
    };
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

  /** {@link create} inside the caller's open transaction `q` (creation.ts {@link createIn}); run `afterCommit` once `q` committed. */
  createIn(
    q: Queryable,
    profileId: string,
    input: TransferInput,
  ): Promise<{ view: TransferView; afterCommit: () => void }> {
    return createIn(this.ctx, q, profileId, input);
  }

  /** Evaluate a would-be transfer without creating anything (creation.ts {@link dryRun}). */
  dryRun(profileId: string, input: TransferInput, against?: PolicyDocument): ReturnType<typeof dryRun> {
    return dryRun(this.ctx, profileId, input, against);
  }

  /** Fee estimate (seed §4) through the chain adapter (creation.ts {@link feeEstimate}). @throws ApiError CHAIN_UNAVAILABLE (503), 422 as creation */
  feeEstimate(profileId: string, input: TransferInput, priority: FeeLevel): ReturnType<typeof feeEstimate> {
    return feeEstimate(this.ctx, profileId, input, priority);
  }

  /** One transfer of a profile. @throws ApiError TRANSFER_NOT_FOUND */
  async get(profileId: string, transferId: string): Promise<TransferView> {
    const r = await loadTransfer(this.db, transferId, false, profileId);
    if (r === undefined) throw new ApiError('TRANSFER_NOT_FOUND', `no transfer ${transferId} in this profile`);
    return transferView(r);
  }

  /**
   * One transfer as the admin API shows it: {@link get} plus `timeline`, `approvals` and `signing`
   * (admin-view.ts). @throws ApiError TRANSFER_NOT_FOUND
   */
  async adminGet(profileId: string, transferId: string): Promise<AdminTransferView> {
    return adminTransferView(this.db, await this.get(profileId, transferId));
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
      `${TRANSFER_SELECT} WHERE ${where} ORDER BY t.created_at DESC, t.transfer_id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, page.page_size, (page.page - 1) * page.page_size],
    );
    const total =
      (await this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM transfers t WHERE ${where}`, params))[0]?.n ??
      0;
    return { data: rows.map(transferView), page: page.page, page_size: page.page_size, total };
  }

  /**
   * A device's signed decision (approvals.ts {@link submitApproval}).
   * @throws ApiError TRANSFER_NOT_FOUND, TRANSFER_STATE_CONFLICT (409), VALIDATION_FAILED (422), CONFLICT (device already decided)
   */
  submitApproval(approval: Approval): Promise<TransferView> {
    return submitApproval(this.ctx, approval);
  }

  /** Withdraw the pushed approval requests of a transfer's current round (see {@link ApprovalNotifier}). */
  withdrawRequests(transferId: string): Promise<void> {
    return withdrawRequests(this.ctx, transferId);
  }

  /** Approval requests a device can answer now (for a device that connects after the push). */
  pendingApprovals(deviceId: string): Promise<ApprovalRequest[]> {
    return pendingApprovals(this.ctx, deviceId);
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
      const v = await transition(q, this.ctx, t.transfer_id, t.status, 'REJECTED', 'CANCELLED_BY_USER', {
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
   * Request a fee bump of a SENT, unconfirmed transfer (admin API; fee-bump-request.ts {@link requestFeeBump}).
   * @throws ApiError TRANSFER_NOT_FOUND, TRANSFER_STATE_CONFLICT (not SENT, a bump under way, or the
   *   chain cannot replace: e.g. TRON, or the change cannot pay the higher fee), CHAIN_UNAVAILABLE (503)
   */
  requestFeeBump(
    actor: string,
    profileId: string,
    transferId: string,
    priority: FeeLevel,
    method?: 'RBF' | 'CPFP',
  ): Promise<TransferView> {
    return requestFeeBump(this.ctx, actor, profileId, transferId, priority, method);
  }

  /**
   * UTXO consolidation of a wallet (admin API; self-spend.ts {@link consolidate}): a self-spend
   * transfer of its smallest UTXOs to its own address, through policy and approvals.
   * @throws ApiError 422 (fewer than 2 UTXOs qualify, result below dust), WALLET_NOT_FOUND, CHAIN_UNAVAILABLE
   */
  consolidate(actor: string, profileId: string, walletId: string, input: ConsolidationInput): Promise<TransferView> {
    return consolidate(this.ctx, actor, profileId, walletId, input);
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
