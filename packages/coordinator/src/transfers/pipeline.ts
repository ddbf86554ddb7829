/**
 * The asynchronous half of the transfer state machine (machine.ts has the statuses and every
 * allowed move; docs/transfers.md the table): approval expiry, building and signing
 * (PENDING_SIGNATURE → READY_TO_SEND), broadcast (→ SENT), the confirmation follow-up
 * (TRANSFER_DELIVERED) and fee bumps.
 *
 * Work loop: claim a transfer, run the step of its status, release it. {@link STEPS} is the heart:
 * one step per status the machine lets the pipeline move a transfer out of
 * (machine.ts `PIPELINE_STATUSES`) — PENDING_SIGNATURE: signing-step.ts, READY_TO_SEND:
 * broadcast-step.ts, SENT: sent-step.ts (fee bump, confirmation); the sweep (sweep.ts) expires
 * approvals and marks chains without a node before each pass. Up to `concurrency` transfers run at once, each on its own:
 * a finished one frees its slot and the loop claims the next, so one slow ceremony (a signer that
 * does not answer) never holds back the signing, broadcast or confirmation of the others.
 *
 * Leases: a claimed transfer carries `lease_until` and `lease_owner` (this process's random
 * {@link TransferPipeline.owner}). The lease is short (`leaseMs`, default 15 s) and renewed every
 * `leaseMs / 3` while the step runs; a renewal or a result write whose owner no longer holds the
 * lease does nothing, and the step is abandoned (its AbortSignal aborts the ceremony). A crashed
 * process's transfers are therefore taken over by a survivor or a restarted process once the lease
 * runs out (within `leaseMs` plus one poll).
 *
 * Unavailable signers: a ceremony that fails because parties could not take part (unreachable,
 * offline, connection closed, a deadline, an abort that blames no one) is retried with a capped,
 * jittered backoff while the signing window lasts (`signingWindowMs` from entering
 * PENDING_SIGNATURE, default 1 h). Meanwhile the transfer stays PENDING_SIGNATURE with sub_status
 * WAITING_FOR_SIGNERS and `error` naming the missing parties (one TRANSFER_UPDATED on entering that
 * state); each retry picks a signing set that avoids parties known to be unavailable when the key
 * has enough others. FAILED only for definitive causes: a refusal (REJECTED, refusal code), an abort
 * with named culprits (FAILED / SIGNING_FAILED), the window over (FAILED / SIGNING_WINDOW_EXPIRED).
 * Fee bump signing follows the same rules on the bump's own status.
 *
 * Restart safety ("persisted before its side effects"): the unsigned transaction (with its nonce)
 * is stored before the signers are asked, so a resumed or taken-over transfer signs the same
 * transaction (the signers accept the identical digests again, see packages/signer enforce.ts); the
 * signed raw transaction and its hash are stored with READY_TO_SEND before broadcasting, and on
 * resume the node is asked for that hash first — a transaction the node knows is never broadcast
 * again.
 *
 * Ethereum nonces (eth-nonce.ts {@link ethereumNonce}): decided from the database and the node
 * only (nothing in process memory, so a restart decides the same way), under a per-sender advisory
 * lock: the lowest nonce ≥ the node's pending count not held by a live transaction of the sender
 * (stored unsigned in PENDING_SIGNATURE or READY_TO_SEND, or SENT and not yet delivered). The
 * transactions of one address are sent to the signers in nonce order (a transfer waits while one
 * with a lower nonce is unsigned), and a transaction not yet sent to any signer is moved to the
 * lowest free nonce before its first signing request — so a transfer that ends FAILED, REJECTED or
 * EXPIRED before its broadcast frees its nonce and no gap blocks the later ones. Safe: that
 * transaction never reached a node (a READY_TO_SEND transfer is FAILED / BROADCAST_FAILED only when
 * the node does not know its hash after the refusal), and if it was signed, a mined transaction
 * with the same nonce makes the signed one invalid forever. A transaction a signer may have signed
 * never changes (the signers sign identical digests again, and refuse another transaction for a
 * transfer they signed: TRANSFER_ALREADY_SIGNED). A broadcast refusal is logged and stored in the
 * transfer's `error` with the node's own reason (e.g. `nonce too low`). A fee bump waiting for its
 * signers never holds back its transfer's confirmation (a confirmed transfer's bump ends FAILED /
 * ALREADY_CONFIRMED).
 */

import { randomUUID } from 'node:crypto';
import type { Backoff } from '@custodian/signer-client';
import type { Db, Queryable } from '../db/db.js';
import type { TransferMetrics } from '../metrics/registry.js';
import type { SignerGateway } from '../signing/gateway.js';
import type { Clock } from '../util.js';
import { broadcastStep } from './broadcast-step.js';
import type { ChainRegistry } from './chains.js';
import { PIPELINE_STATUSES, type PipelineStatus, type TransferStatus, TransitionLostError } from './machine.js';
import type { PipelineOptions, Step, StepContext, StepResult } from './pipeline-context.js';
import { sentStep } from './sent-step.js';
import type { TransferService } from './service.js';
import { signStep } from './signing-step.js';
import { expire, markChainUnavailable } from './sweep.js';
import { loadTransfer, type TransferRow } from './view.js';

export {
  ALREADY_CONFIRMED,
  DEFAULT_PIPELINE_OPTIONS,
  type PipelineOptions,
  SIGNING_WINDOW_EXPIRED,
  WAITING_FOR_SIGNERS,
} from './pipeline-context.js';
export { signingParties } from './signing-attempt.js';

/**
 * The step of each status the pipeline works on — every status the machine has a `pipeline` move
 * out of (machine.ts `PIPELINE_STATUSES`; the mapped type makes a missing step a compile error).
 */
const STEPS: {
  readonly [S in PipelineStatus]: (x: StepContext, t: TransferRow, signal: AbortSignal) => Promise<StepResult>;
} = {
  PENDING_SIGNATURE: signStep,
  READY_TO_SEND: broadcastStep,
  SENT: sentStep,
};

/** The step of a status, or undefined when the pipeline does not move transfers out of it. */
function stepOf(x: StepContext, status: TransferStatus): Step | undefined {
  if (!(PIPELINE_STATUSES as readonly TransferStatus[]).includes(status)) return undefined;
  const step = STEPS[status as PipelineStatus];
  return (t, signal) => step(x, t, signal);
}

/** What {@link TransferPipeline} is built from. */
export interface TransferPipelineComponents {
  readonly db: Db;
  readonly clock: Clock;
  /** The chain nodes of this process: transfers of chains without one wait (CHAIN_UNAVAILABLE). */
  readonly chains: ChainRegistry;
  readonly service: TransferService;
  /** The signing gateway; absent: transfers wait in PENDING_SIGNATURE (no signers configured). */
  readonly gateway: SignerGateway | undefined;
  readonly options: PipelineOptions;
  /** Status moves and time in each status (metrics/registry.ts); absent: not measured. */
  readonly metrics?: TransferMetrics | undefined;
}

/** Drives transfers through signing, broadcast and confirmation. */
export class TransferPipeline {
  /** This process's lease owner id (random per instance). */
  readonly owner = randomUUID();
  #timer: NodeJS.Timeout | undefined;
  #filling: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  /** Crashed (test of takeovers): no further write of any kind, leases not released. */
  #crashed = false;
  readonly #inFlight = new Map<string, { ac: AbortController; done: Promise<void> }>();
  /** What the steps receive: the components, this process's retry and availability memory, {@link owned}. */
  readonly #ctx: StepContext;

  private readonly db: Db;
  private readonly clock: Clock;
  private readonly chains: ChainRegistry;
  private readonly opts: PipelineOptions;

  constructor(components: TransferPipelineComponents) {
    const { db, clock, chains, service, gateway, options: opts } = components;
    this.db = db;
    this.clock = clock;
    this.chains = chains;
    this.opts = opts;
    this.#ctx = {
      db,
      clock,
      metrics: components.metrics,
      chains,
      service,
      gateway,
      opts,
      owned: (id, f) => this.owned(id, f),
      backoffs: new Map<string, Backoff>(),
      unavailable: new Map<string, number>(),
    };
  }

  /** Start the timer; resumes every non-terminal transfer (expired leases are reclaimed). */
  start(): void {
    if (this.#timer) return;
    this.#stopped = false;
    this.#timer = setInterval(() => this.kick(), this.opts.pollMs);
    this.#timer.unref();
    this.kick();
  }

  /** Claim work soon (after new work, or a finished transfer freed a slot); passes never overlap. */
  kick(): void {
    if (this.#stopped) return;
    if (this.#filling) {
      this.#again = true;
      return;
    }
    this.#filling = this.fill()
      .catch((e: unknown) => this.opts.log('error', 'transfer pipeline pass failed', { err: String(e) }))
      .finally(() => {
        this.#filling = undefined;
        if (this.#again) {
          this.#again = false;
          this.kick();
        }
      });
  }

  /**
   * Stop claiming, abort the running steps (their ceremonies are aborted at the signers) and wait
   * for them; their leases are released, so another process resumes them at once.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#filling;
    for (const f of this.#inFlight.values()) f.ac.abort(new Error('transfer pipeline stopping'));
    await Promise.all([...this.#inFlight.values()].map((f) => f.done));
  }

  /**
   * Stop as a crashed process would (tests of lease takeovers): no claim, renewal, result write or
   * release any more; the running steps are abandoned and their leases left to run out.
   */
  async abandon(): Promise<void> {
    this.#crashed = true;
    await this.stop();
  }

  /** One pass, awaited (tests call it directly): expiry, chain checks, then every claimable transfer until none is left. */
  async tick(): Promise<void> {
    await this.expire();
    await this.markChainUnavailable();
    for (let i = 0; i < 1000; i++) {
      await this.#filling;
      await this.claimAll();
      if (this.#inFlight.size === 0) return;
      await Promise.race([...this.#inFlight.values()].map((f) => f.done));
    }
  }

  /** Timer / kick pass: expiry, chain checks, claims up to the concurrency. */
  private async fill(): Promise<void> {
    await this.expire();
    await this.markChainUnavailable();
    await this.claimAll();
  }

  /** Claim transfers while a slot is free; each runs on its own and frees its slot when done. */
  private async claimAll(): Promise<void> {
    while (!this.#crashed && this.#inFlight.size < Math.max(1, this.opts.concurrency)) {
      const t = await this.claim();
      if (t === undefined) return;
      const ac = new AbortController();
      const entry = { ac, done: Promise.resolve() };
      this.#inFlight.set(t.transfer_id, entry);
      entry.done = this.run(t, ac).finally(() => {
        this.#inFlight.delete(t.transfer_id);
        if (!this.#stopped) this.kick();
      });
    }
  }

  /** Approval windows that elapsed (sweep.ts {@link expire}): PENDING_APPROVAL → EXPIRED (APPROVAL_EXPIRED); a bump's → bump FAILED. */
  expire(): Promise<number> {
    return expire(this.#ctx);
  }

  /**
   * Transfers waiting for a chain that has no node configured here get sub_status CHAIN_UNAVAILABLE
   * (sweep.ts {@link markChainUnavailable}). Returns how many were marked.
   */
  markChainUnavailable(): Promise<number> {
    return markChainUnavailable(this.#ctx);
  }

  private async claim(): Promise<TransferRow | undefined> {
    const now = this.clock();
    return this.db.tx(async (q) => {
      // transfers of chains without an adapter are left alone (markChainUnavailable says why)
      const c = await q.query<{ transfer_id: string }>(
        `SELECT transfer_id FROM transfers
         WHERE status = ANY($4::text[]) AND (status <> 'SENT' OR delivered_at IS NULL)
           AND (lease_until IS NULL OR lease_until <= $1)
           AND intent->>'blockchain' = ANY($2::text[])
           AND NOT (transfer_id = ANY($3::uuid[]))
         ORDER BY updated_at, transfer_id LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [now, this.chains.keys(), [...this.#inFlight.keys()], PIPELINE_STATUSES],
      );
      const id = c[0]?.transfer_id;
      if (id === undefined) return undefined;
      const prev = await q.query<{ lease_owner: string | null }>(
        'SELECT lease_owner FROM transfers WHERE transfer_id = $1',
        [id],
      );
      const from = prev[0]?.lease_owner;
      if (from && from !== this.owner)
        this.opts.log('warn', 'transfer taken over from a lease that ran out', {
          transfer_id: id,
          previous_owner: from,
        });
      await q.query('UPDATE transfers SET lease_until = $2, lease_owner = $3 WHERE transfer_id = $1', [
        id,
        new Date(now.getTime() + this.opts.leaseMs),
        this.owner,
      ]);
      return loadTransfer(q, id);
    });
  }

  /** Release a lease this process holds: claimable again after `retryInMs` (null: at once). */
  private async release(transferId: string, retryInMs: number | null): Promise<void> {
    if (this.#crashed) return;
    await this.db.query(
      'UPDATE transfers SET lease_until = $2, lease_owner = NULL WHERE transfer_id = $1 AND lease_owner = $3',
      [transferId, retryInMs === null ? null : new Date(this.clock().getTime() + retryInMs), this.owner],
    );
  }

  /** Renew the lease; false when this process no longer holds it. */
  private async renew(transferId: string): Promise<boolean> {
    if (this.#crashed) return false;
    const r = await this.db.query(
      'UPDATE transfers SET lease_until = $2 WHERE transfer_id = $1 AND lease_owner = $3 RETURNING 1',
      [transferId, new Date(this.clock().getTime() + this.opts.leaseMs), this.owner],
    );
    return r.length > 0;
  }

  /**
   * `f` in one transaction with the transfer locked, if this process still holds its lease (and did
   * not crash); else nothing is written and the result is undefined.
   */
  private async owned<T>(
    transferId: string,
    f: (q: Queryable, cur: TransferRow) => Promise<T>,
  ): Promise<T | undefined> {
    if (this.#crashed) return undefined;
    return this.db.tx(async (q) => {
      const cur = await loadTransfer(q, transferId, true);
      if (cur === undefined || cur.lease_owner !== this.owner) return undefined;
      return f(q, cur);
    });
  }

  /** Run the steps of a claimed transfer under a renewed lease, then release it. */
  private async run(t: TransferRow, ac: AbortController): Promise<void> {
    const heartbeat = setInterval(
      () => {
        this.renew(t.transfer_id).then(
          (held) => {
            if (held || ac.signal.aborted) return;
            this.opts.log('warn', 'transfer lease lost; step abandoned', { transfer_id: t.transfer_id });
            ac.abort(new Error('transfer lease lost'));
          },
          (e: unknown) =>
            this.opts.log('warn', 'transfer lease not renewed', { transfer_id: t.transfer_id, err: String(e) }),
        );
      },
      Math.max(50, Math.floor(this.opts.leaseMs / 3)),
    );
    heartbeat.unref();
    let release: number | null | undefined = null;
    try {
      let row: TransferRow | undefined = t;
      for (let i = 0; i < 8 && row !== undefined; i++) {
        const step = stepOf(this.#ctx, row.status);
        if (step === undefined || ac.signal.aborted) break;
        const r: StepResult = await step(row, ac.signal);
        if ('release' in r) {
          release = r.release;
          break;
        }
        row = r.row;
        if (row === undefined) release = undefined; // not ours any more: nothing to release
      }
    } catch (e) {
      if (e instanceof TransitionLostError) {
        // the row left the status the step started from (another request or process moved it):
        // nothing was written; release it so the step of its new status runs
        this.opts.log('info', 'transfer moved meanwhile; step dropped', { transfer_id: t.transfer_id, err: e.message });
        release = null;
      } else {
        // node or signer transport trouble: retry later, keep the state
        this.opts.log('warn', 'transfer step failed; will retry', { transfer_id: t.transfer_id, err: String(e) });
        release = Math.max(this.opts.pollMs, 5000);
      }
    } finally {
      clearInterval(heartbeat);
    }
    if (release !== undefined) await this.release(t.transfer_id, release).catch(() => {});
  }
}
