/**
 * What the transfer request service (service.ts) and its request functions (creation.ts,
 * approvals.ts, fee-bump-request.ts) share: the components they receive, the service's options,
 * the approval requests pushed to devices, and the 422 helper.
 */

import type { TransferIntent } from '@custodian/wire';
import type { Db } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { TransferMetrics } from '../metrics/registry.js';
import { type Clock, Emitter } from '../util.js';
import type { ChainRegistry } from './chains.js';
import type { PolicyService } from './policies.js';

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

/**
 * What the transfer requests tell the rest of the coordinator, as emitters given to
 * `TransferService` at construction (the root subscribes: the pipeline to `work`, the device hub to
 * the approval requests — both are built after the service, which breaks the cycle).
 */
export interface TransferSignals {
  /** A transaction that created work for the pipeline committed. */
  readonly work: Emitter<[]>;
  /** Approval requests pushed to / withdrawn from approver devices (best effort, see {@link ApprovalNotifier}). */
  readonly approvalRequests: Emitter<[deviceIds: readonly string[], request: ApprovalRequest]>;
  readonly approvalWithdrawals: Emitter<[deviceIds: readonly string[], transferId: string, round: number]>;
}

/** New {@link TransferSignals} with no listener. */
export function transferSignals(): TransferSignals {
  return { work: new Emitter(), approvalRequests: new Emitter(), approvalWithdrawals: new Emitter() };
}

/** The components of the request functions: `TransferService`'s components. */
export interface RequestContext {
  readonly db: Db;
  readonly clock: Clock;
  readonly policies: PolicyService;
  readonly chains: ChainRegistry;
  readonly opts: TransferServiceOptions;
  readonly signals: TransferSignals;
  /** Status moves and time in each status (transfers/machine.ts reports them). */
  readonly metrics: TransferMetrics | undefined;
}

/** A 422 VALIDATION_FAILED naming the failing field. */
export const field = (f: string, message: string) =>
  new ApiError('VALIDATION_FAILED', `${f}: ${message}`, [{ field: f, message }]);
