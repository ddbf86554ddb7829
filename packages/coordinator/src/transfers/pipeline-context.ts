/**
 * What the pipeline's steps share (pipeline.ts runs them): the settings, the sub_status values the
 * pipeline writes, the step contract ({@link StepResult}), and {@link StepContext} — the pipeline's
 * components and per-process state a step receives, with {@link StepContext.owned} (a write under
 * the lease).
 */

import type { Backoff } from '@custodian/signer-client';
import type { Db, Queryable } from '../db/db.js';
import type { TransferMetrics } from '../metrics/registry.js';
import type { SignerGateway } from '../signing/gateway.js';
import type { Clock } from '../util.js';
import type { ChainRegistry } from './chains.js';
import type { TransferService } from './service.js';
import type { TransferRow } from './view.js';

/** sub_status of a PENDING_SIGNATURE transfer (or a fee bump) whose signers are not all available. */
export const WAITING_FOR_SIGNERS = 'WAITING_FOR_SIGNERS';
/** sub_status of a FAILED transfer (or fee bump) whose signing window ended without a signature. */
export const SIGNING_WINDOW_EXPIRED = 'SIGNING_WINDOW_EXPIRED';
/** sub_status of a FAILED fee bump whose transfer was confirmed before the replacement was signed. */
export const ALREADY_CONFIRMED = 'ALREADY_CONFIRMED';
/**
 * sub_status of a FAILED TRON transfer whose broadcast transaction can no longer be mined: a block
 * with timestamp ≥ its `raw_data.expiration` has the chain's confirmations and the transaction is
 * in no block and not pending (ChainRegistry.tronExpired). The funds never left.
 */
export const EXPIRED_ON_CHAIN = 'EXPIRED_ON_CHAIN';

/** Pipeline settings. */
export interface PipelineOptions {
  /** Deadline of one signing ceremony (ms). Default 120 s. */
  signDeadlineMs: number;
  /**
   * How long a transfer may wait for its signers, from entering PENDING_SIGNATURE (a fee bump: from
   * its approval), ms; then FAILED / SIGNING_WINDOW_EXPIRED. Default 1 h.
   */
  signingWindowMs: number;
  /** Retries of a ceremony that failed for unavailability: first delay base and cap (ms), jittered. Defaults 2 s and 60 s. */
  retryInitialMs: number;
  retryMaxMs: number;
  /** Lease of a claimed transfer (ms), renewed every third of it while its step runs. Default 15 s. */
  leaseMs: number;
  /** Transfers processed at once by this process. Default 8. */
  concurrency: number;
  /** Timer interval (ms): expiry, chain checks and claims of transfers whose lease or retry delay ran out. Default 1000. */
  pollMs: number;
  /** Delay before a SENT transfer's confirmations are checked again (ms). Default 2000. */
  confirmationRecheckMs: number;
  log: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

export const DEFAULT_PIPELINE_OPTIONS: Omit<PipelineOptions, 'log'> = {
  signDeadlineMs: 120_000,
  signingWindowMs: 3600_000,
  retryInitialMs: 2000,
  retryMaxMs: 60_000,
  leaseMs: 15_000,
  concurrency: 8,
  pollMs: 1000,
  confirmationRecheckMs: 2000,
};

export const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
export const unhex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, 'hex'));

/** What a step tells the loop: go on with the transfer in its new state, or release it. */
export type StepResult =
  /** Continue with this row (its status has a step); undefined: the lease is no longer ours. */
  | { row: TransferRow | undefined }
  /** Done for now: release the lease, claimable again after `retryInMs` (null: at once). */
  | { release: number | null };

/** The step of one status: runs under the transfer's lease; `signal` fires when the lease is lost or the pipeline stops. */
export type Step = (t: TransferRow, signal: AbortSignal) => Promise<StepResult>;

/** The pipeline's components and per-process state, as its steps see them. */
export interface StepContext {
  readonly db: Db;
  readonly clock: Clock;
  /** Status moves and time in each status (transfers/machine.ts reports them). */
  readonly metrics: TransferMetrics | undefined;
  readonly chains: ChainRegistry;
  readonly service: TransferService;
  readonly gateway: SignerGateway | undefined;
  readonly opts: PipelineOptions;
  /**
   * `f` in one transaction with the transfer locked, if this process still holds its lease (and did
   * not crash); else nothing is written and the result is undefined.
   */
  owned<T>(transferId: string, f: (q: Queryable, cur: TransferRow) => Promise<T>): Promise<T | undefined>;
  /** Retry backoff per transfer (or `<id>/bump/<round>`) waiting for its signers (this process). */
  readonly backoffs: Map<string, Backoff>;
  /** Parties a recent ceremony found unavailable: party key `kind:id` → until (ms since epoch). */
  readonly unavailable: Map<string, number>;
}

/** The chain adapter of a transfer. @throws Error CHAIN_UNAVAILABLE when this process has none (the step is retried). */
export function adapterOf(x: StepContext, t: TransferRow) {
  const a = x.chains.adapter(t.intent.blockchain);
  if (a === undefined) throw new Error(`CHAIN_UNAVAILABLE: no node configured for ${t.intent.blockchain}`);
  return a;
}
