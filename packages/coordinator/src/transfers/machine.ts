/**
 * The transfer state machine (seed §3 statuses; DESIGN §7; STYLE.md item 23): the statuses, every
 * allowed move with the `sub_status` it writes, the webhook events it emits and who makes it, and
 * the one guarded write of a status — `UPDATE transfers … WHERE transfer_id = $1 AND status = $from`
 * — so an illegal move cannot happen, even under concurrency.
 *
 * - {@link TRANSITIONS} is the table; `docs/transfers.md` "Statuses and transitions" holds the same
 *   table, checked by `test/transfer-machine.test.ts` ({@link transitionsMarkdown} renders it).
 * - {@link canTransition} is the pure check of a (from, to) pair; {@link allowedMove} adds the sub_status.
 * - {@link transition} performs a move in the caller's transaction: an illegal move throws
 *   {@link IllegalTransitionError} before any write; a row no longer in `from` (someone else moved
 *   it) throws {@link TransitionLostError} and writes nothing.
 * - {@link markDelivered} records the confirmation of a SENT transfer (no status change:
 *   `delivered_at`, TRANSFER_DELIVERED).
 *
 * A transfer enters the machine in PENDING: `TransferService.createIn` inserts the row (TRANSFER_CREATED)
 * and runs the policy step — the first move — in the same transaction, so PENDING is never seen
 * outside it. SENT is the seed's terminal success; what still happens to a SENT transfer (fee
 * bumps, the confirmation) is SENT → SENT with the fee bump's own status in `fee_bump` JSON.
 *
 * Longer than 400 lines because the formatter writes each TRANSITIONS row one field per line; the
 * table is the point of the module and reads best whole.
 */

import type { Queryable } from '../db/db.js';
import { CoordinatorError } from '../errors.js';
import type { TransferMetrics } from '../metrics/registry.js';
import type { Clock } from '../util.js';
import type { WebhookEventType } from '../webhooks/events.js';
import { emitEvent } from '../webhooks/outbox.js';
import { loadTransfer, type TransferView, transferEventData, transferView } from './view.js';

/** The seed's ten transfer statuses (§3), in the seed's order. */
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

/** Terminal failure statuses (each move into one emits TRANSFER_FAILED). */
export const FAILURE_STATUSES: readonly TransferStatus[] = [
  'REJECTED',
  'REJECTED_BY_POLICY',
  'NO_POLICY_FOUND',
  'EXPIRED',
  'FAILED',
];

/** Statuses counted by the daily limit (every transfer not failed, rejected or expired). */
export const COUNTED_STATUSES: readonly TransferStatus[] = [
  'PENDING',
  'PENDING_APPROVAL',
  'PENDING_SIGNATURE',
  'READY_TO_SEND',
  'SENT',
];

/** Statuses whose amount is not yet reflected in the confirmed balance (reserved from it). */
export const RESERVED_STATUSES: readonly TransferStatus[] = [
  'PENDING',
  'PENDING_APPROVAL',
  'PENDING_SIGNATURE',
  'READY_TO_SEND',
];

/**
 * `sub_status` value standing for a signer's refusal code (the sub_status of REJECTED after a
 * signer refused: POLICY_SIGNATURE_VERIFICATION_FAILED, DIGEST_MISMATCH, … docs/transfers.md).
 * Any non-empty code a signer returns is accepted: the signers define them.
 */
export const REFUSAL_CODE = '<refusal code>';

/**
 * Who makes a move: `request` — a REST, admin or device request handled by `TransferService`
 * (service.ts); `pipeline` — the step of the transfer's status run by the claiming pipeline
 * (pipeline.ts, steps in signing-step.ts, broadcast-step.ts, sent-step.ts); `sweep` — the
 * pipeline's periodic pass over unclaimed transfers (sweep.ts: approval expiry, chains without a node).
 */
export type Mover = 'request' | 'pipeline' | 'sweep';

/** One allowed move. */
export interface Move {
  readonly from: TransferStatus;
  readonly to: TransferStatus;
  /** The sub_status written: one of these (null: cleared), or {@link REFUSAL_CODE}. */
  readonly subStatus: readonly (string | null)[];
  /** Webhook events emitted in the move's transaction, in order. */
  readonly events: readonly WebhookEventType[];
  readonly by: Mover;
  /** What causes the move (one line). */
  readonly when: string;
  /** The confirmation: writes `delivered_at`, not the status ({@link markDelivered}); {@link transition} never makes it. */
  readonly delivers?: true;
}

const UPDATED = ['TRANSFER_UPDATED'] as const;
const FAILED = ['TRANSFER_UPDATED', 'TRANSFER_FAILED'] as const;

/** Every allowed move. A (from, to) pair may have several rows (different causes and sub_status). */
export const TRANSITIONS: readonly Move[] = [
  // the policy step, in the creation transaction
  {
    from: 'PENDING',
    to: 'PENDING_APPROVAL',
    subStatus: [null],
    events: UPDATED,
    by: 'request',
    when: 'a policy covers the transfer and allows it',
  },
  {
    from: 'PENDING',
    to: 'NO_POLICY_FOUND',
    subStatus: ['NO_POLICY_FOUND'],
    events: FAILED,
    by: 'request',
    when: 'no policy covers the transfer (default deny)',
  },
  {
    from: 'PENDING',
    to: 'REJECTED_BY_POLICY',
    subStatus: [
      'DESTINATION_NOT_WHITELISTED',
      'TRANSACTION_LIMIT_EXCEEDED',
      'DAILY_LIMIT_EXCEEDED',
      'POLICY_OUT_OF_SCOPE',
    ],
    events: FAILED,
    by: 'request',
    when: 'the covering policy refuses it (whitelist, per-transaction or daily limit)',
  },
  {
    from: 'PENDING',
    to: 'REJECTED',
    subStatus: ['CANCELLED_BY_USER'],
    events: FAILED,
    by: 'request',
    when: 'cancelled by an admin',
  },
  // approvals
  {
    from: 'PENDING_APPROVAL',
    to: 'PENDING_APPROVAL',
    subStatus: [null],
    events: UPDATED,
    by: 'request',
    when: 'a device approves, quorum not reached yet',
  },
  {
    from: 'PENDING_APPROVAL',
    to: 'PENDING_SIGNATURE',
    subStatus: [null],
    events: UPDATED,
    by: 'request',
    when: 'a device approval completes the quorum',
  },
  {
    from: 'PENDING_APPROVAL',
    to: 'REJECTED',
    subStatus: ['REJECTED_BY_APPROVER'],
    events: FAILED,
    by: 'request',
    when: 'a device rejects',
  },
  {
    from: 'PENDING_APPROVAL',
    to: 'REJECTED',
    subStatus: ['CANCELLED_BY_USER'],
    events: FAILED,
    by: 'request',
    when: 'cancelled by an admin',
  },
  {
    from: 'PENDING_APPROVAL',
    to: 'EXPIRED',
    subStatus: ['APPROVAL_EXPIRED'],
    events: FAILED,
    by: 'sweep',
    when: 'the approval window elapsed',
  },
  // signing
  {
    from: 'PENDING_SIGNATURE',
    to: 'PENDING_SIGNATURE',
    subStatus: ['WAITING_FOR_SIGNERS'],
    events: UPDATED,
    by: 'pipeline',
    when: 'signers unavailable: retried with backoff',
  },
  {
    from: 'PENDING_SIGNATURE',
    to: 'PENDING_SIGNATURE',
    subStatus: ['CHAIN_UNAVAILABLE'],
    events: UPDATED,
    by: 'sweep',
    when: 'no node is configured for the chain',
  },
  {
    from: 'PENDING_SIGNATURE',
    to: 'PENDING_SIGNATURE',
    subStatus: [null],
    events: UPDATED,
    by: 'pipeline',
    when: 'a node for the chain is there again (signing window restarts)',
  },
  {
    from: 'PENDING_SIGNATURE',
    to: 'READY_TO_SEND',
    subStatus: [null],
    events: UPDATED,
    by: 'pipeline',
    when: 'signed; raw transaction and hash stored before the broadcast',
  },
  {
    from: 'PENDING_SIGNATURE',
    to: 'REJECTED',
    subStatus: ['CANCELLED_BY_USER'],
    events: FAILED,
    by: 'request',
    when: 'cancelled by an admin before a transaction was built',
  },
  {
    from: 'PENDING_SIGNATURE',
    to: 'REJECTED',
    subStatus: [REFUSAL_CODE],
    events: FAILED,
    by: 'pipeline',
    when: 'a signer refuses (also POLICY_SIGNATURE_VERIFICATION_FAILED for that code)',
  },
  {
    from: 'PENDING_SIGNATURE',
    to: 'FAILED',
    subStatus: ['SIGNING_FAILED'],
    events: FAILED,
    by: 'pipeline',
    when: 'the build fails, or an MPC abort blames a party',
  },
  {
    from: 'PENDING_SIGNATURE',
    to: 'FAILED',
    subStatus: ['FEE_CAP_EXCEEDED'],
    events: FAILED,
    by: 'pipeline',
    when: 'no transaction within the fee cap',
  },
  {
    from: 'PENDING_SIGNATURE',
    to: 'FAILED',
    subStatus: ['SIGNING_WINDOW_EXPIRED'],
    events: FAILED,
    by: 'pipeline',
    when: 'the signing window is over',
  },
  // broadcast
  {
    from: 'READY_TO_SEND',
    to: 'READY_TO_SEND',
    subStatus: ['CHAIN_UNAVAILABLE'],
    events: UPDATED,
    by: 'sweep',
    when: 'no node is configured for the chain',
  },
  {
    from: 'READY_TO_SEND',
    to: 'SENT',
    subStatus: [null],
    events: UPDATED,
    by: 'pipeline',
    when: 'broadcast, or the node already knows the hash',
  },
  {
    from: 'READY_TO_SEND',
    to: 'FAILED',
    subStatus: ['BROADCAST_FAILED'],
    events: FAILED,
    by: 'pipeline',
    when: 'the node refuses and does not know the hash',
  },
  {
    from: 'SENT',
    to: 'FAILED',
    subStatus: ['EXPIRED_ON_CHAIN'],
    events: FAILED,
    by: 'pipeline',
    when: 'TRON: expired in a confirmed block, neither mined nor pending',
  },
  // after the broadcast: fee bumps (their status is in `fee_bump`) and the confirmation
  {
    from: 'SENT',
    to: 'SENT',
    subStatus: [null],
    events: UPDATED,
    by: 'request',
    when: 'a fee bump is requested, or a device decides on its round',
  },
  {
    from: 'SENT',
    to: 'SENT',
    subStatus: [null],
    events: UPDATED,
    by: 'sweep',
    when: "a fee bump's approval window elapsed (bump FAILED)",
  },
  {
    from: 'SENT',
    to: 'SENT',
    subStatus: [null],
    events: UPDATED,
    by: 'pipeline',
    when: 'a fee bump waits for signers, is signed, broadcast or fails',
  },
  {
    from: 'SENT',
    to: 'SENT',
    subStatus: [null],
    events: ['TRANSFER_DELIVERED'],
    by: 'pipeline',
    when: "confirmed with the chain's confirmations (`delivered_at`)",
    delivers: true,
  },
];

/**
 * The statuses the pipeline claims a transfer in and moves it out of (the `from` of every
 * `pipeline` move): pipeline.ts has one step for each. SENT only while not yet delivered.
 */
export const PIPELINE_STATUSES = [
  'PENDING_SIGNATURE',
  'READY_TO_SEND',
  'SENT',
] as const satisfies readonly TransferStatus[];
export type PipelineStatus = (typeof PIPELINE_STATUSES)[number];

/** Is `from → to` an allowed pair (whatever the sub_status)? Pure. */
export function canTransition(from: TransferStatus, to: TransferStatus): boolean {
  return TRANSITIONS.some((m) => !m.delivers && m.from === from && m.to === to);
}

/** The row allowing `from → to` with `subStatus`, or undefined. Pure. */
export function allowedMove(from: TransferStatus, to: TransferStatus, subStatus: string | null): Move | undefined {
  return TRANSITIONS.find(
    (m) =>
      !m.delivers &&
      m.from === from &&
      m.to === to &&
      (m.subStatus.includes(subStatus) ||
        (m.subStatus.includes(REFUSAL_CODE) && typeof subStatus === 'string' && subStatus.length > 0)),
  );
}

/** A move the table does not allow (a bug in the caller): code `ILLEGAL_TRANSITION`. Nothing was written. */
export class IllegalTransitionError extends CoordinatorError {
  constructor(
    readonly transferId: string,
    readonly from: TransferStatus,
    readonly to: TransferStatus,
    readonly subStatus: string | null,
  ) {
    super(
      'ILLEGAL_TRANSITION',
      `transfer ${transferId}: ${from} → ${to} (sub_status ${subStatus ?? 'null'}) is not an allowed move`,
    );
  }
}

/**
 * The transfer was not in `from` when the move was written (another request or process moved it
 * first, or it does not exist): code `TRANSITION_LOST`. Nothing was written; callers treat it as
 * "someone else moved it" and look at the row again.
 */
export class TransitionLostError extends CoordinatorError {
  constructor(
    readonly transferId: string,
    readonly from: TransferStatus,
    readonly to: TransferStatus,
  ) {
    super('TRANSITION_LOST', `transfer ${transferId} is no longer ${from}: ${from} → ${to} not written`);
  }
}

/**
 * What a move needs besides the transaction: the clock, and the metrics it reports to (absent in
 * tools and tests that build no registry). The transfers room passes its components object.
 */
export interface MachineContext {
  readonly clock: Clock;
  readonly metrics?: TransferMetrics | undefined;
}

/**
 * When a row entered its current status, for `custodian_transfer_status_duration_seconds`:
 * PENDING and PENDING_APPROVAL at creation (entered in the creating transaction), PENDING_SIGNATURE
 * at `signing_since`, SENT at `sent_at`; the others (READY_TO_SEND: only sub-status moves stay in
 * it) at the last update.
 */
const ENTERED_SQL = `CASE status WHEN 'PENDING' THEN created_at WHEN 'PENDING_APPROVAL' THEN created_at
  WHEN 'PENDING_SIGNATURE' THEN signing_since WHEN 'SENT' THEN sent_at ELSE updated_at END`;

/**
 * Move a transfer from `from` to `to` with `subStatus`, in the caller's transaction `q`, and emit
 * the move's events (TRANSFER_UPDATED; TRANSFER_FAILED into a failure status). `extra` sets further
 * columns (names from code, never from input). Entering PENDING_SIGNATURE starts the signing window
 * (`signing_since`); staying in it keeps it.
 * @returns the transfer after the move
 * @throws IllegalTransitionError when the table has no such move (nothing written)
 * @throws TransitionLostError when the row is not in `from` (`UPDATE … WHERE status = $from` matched nothing)
 */
export async function transition(
  q: Queryable,
  m: MachineContext,
  transferId: string,
  from: TransferStatus,
  to: TransferStatus,
  subStatus: string | null,
  extra: Record<string, unknown> = {},
): Promise<TransferView> {
  const move = allowedMove(from, to, subStatus);
  if (move === undefined) throw new IllegalTransitionError(transferId, from, to, subStatus);
  const cols = Object.keys(extra);
  const sets = cols.map((c, i) => `${c} = $${i + 6}`).join(', ');
  const now = m.clock();
  // `entered`: when the row entered `from` (ENTERED_SQL), read before the update, for the metrics
  const moved = await q.query<{ entered: Date | null }>(
    `UPDATE transfers SET status = $3, sub_status = $4, updated_at = $5,
       signing_since = CASE WHEN $3 = 'PENDING_SIGNATURE' AND transfers.status <> 'PENDING_SIGNATURE' THEN $5 ELSE transfers.signing_since END
       ${sets ? `, ${sets}` : ''} FROM (SELECT ${ENTERED_SQL} AS entered FROM transfers WHERE transfer_id = $1) AS prev
     WHERE transfer_id = $1 AND status = $2 RETURNING prev.entered`,
    [transferId, from, to, subStatus, now, ...cols.map((c) => extra[c])],
  );
  if (moved.length === 0) throw new TransitionLostError(transferId, from, to);
  if (m.metrics !== undefined) {
    m.metrics.transitions.inc({ from, to });
    const entered = moved[0]?.entered;
    if (from !== to && entered) {
      m.metrics.statusDuration.observe(
        { status: from },
        Math.max(0, now.getTime() - new Date(entered).getTime()) / 1000,
      );
    }
  }
  const row = await loadTransfer(q, transferId);
  if (row === undefined) throw new Error(`transfer ${transferId} vanished`);
  const v = transferView(row);
  for (const type of move.events)
    await emitEvent(q, m.clock, { profileId: v.profile_id, type, data: transferEventData(v) });
  return v;
}

/**
 * The confirmation of a SENT transfer (the {@link TRANSITIONS} row with `delivers`): sets
 * `delivered_at` and the confirmed `tx_hash`, and emits TRANSFER_DELIVERED with `data` plus
 * `extraData` (block number, execution success), once. In the caller's transaction.
 * @returns false when the transfer is not SENT or was already delivered (nothing written)
 */
export async function markDelivered(
  q: Queryable,
  m: MachineContext,
  transferId: string,
  txHash: string,
  extraData: Record<string, unknown>,
): Promise<boolean> {
  const clock = m.clock;
  const move = TRANSITIONS.find((t) => t.delivers === true);
  if (move === undefined) throw new Error('the machine has no delivery move');
  const now = clock();
  const updated = await q.query<{ sent_at: Date | null }>(
    `UPDATE transfers SET delivered_at = $2, tx_hash = $3, updated_at = $2
     WHERE transfer_id = $1 AND status = $4 AND delivered_at IS NULL RETURNING sent_at`,
    [transferId, now, txHash, move.from],
  );
  if (updated.length === 0) return false;
  const sentAt = updated[0]?.sent_at;
  if (m.metrics !== undefined && sentAt) {
    m.metrics.statusDuration.observe(
      { status: move.from },
      Math.max(0, now.getTime() - new Date(sentAt).getTime()) / 1000,
    );
  }
  const v = transferView((await loadTransfer(q, transferId))!);
  for (const type of move.events)
    await emitEvent(q, clock, { profileId: v.profile_id, type, data: { ...transferEventData(v), ...extraData } });
  return true;
}

/** `—` for null; values joined by ", ". */
const cell = (subs: readonly (string | null)[]) => subs.map((s) => (s === null ? '—' : s)).join(', ');

/** The header of the markdown table of {@link TRANSITIONS} (docs/transfers.md). */
export const TRANSITIONS_HEADER = ['from', 'to', 'sub_status', 'events', 'by', 'when'] as const;

/** Rows of the markdown table: one per {@link TRANSITIONS} entry, cells as docs/transfers.md shows them. */
export function transitionsRows(): string[][] {
  return TRANSITIONS.map((m) => [m.from, m.to, cell(m.subStatus), m.events.join(', '), m.by, m.when]);
}

/** {@link TRANSITIONS} as a markdown table (what docs/transfers.md holds; cells unpadded). */
export function transitionsMarkdown(): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(TRANSITIONS_HEADER), line(TRANSITIONS_HEADER.map(() => '---')), ...transitionsRows().map(line)].join(
    '\n',
  );
}
