/**
 * The pipeline's sweep over transfers it does not claim, run before each claiming pass: approval
 * windows that elapsed (PENDING_APPROVAL → EXPIRED / APPROVAL_EXPIRED; a fee bump's round → bump
 * FAILED), and transfers of chains without a node here (sub_status CHAIN_UNAVAILABLE, status kept).
 */
import { IllegalTransitionError, TransitionLostError, transition } from './machine.js';
import type { StepContext } from './pipeline-context.js';
import { type FeeBump, loadTransfer } from './view.js';

/**
 * Runs one row's move; a move the machine refuses (a row another process moved, or one in a state
 * no rule covers) is logged and skipped, so one odd row never stops the sweep — nor the claiming
 * pass after it. Any other error propagates.
 */
async function eachRow(x: StepContext, transferId: string, move: () => Promise<void>): Promise<void> {
  try {
    await move();
  } catch (e) {
    if (!(e instanceof IllegalTransitionError || e instanceof TransitionLostError)) throw e;
    x.opts.log('warn', 'sweep skipped a transfer', { transfer_id: transferId, err: e.message });
  }
}

/** Approval windows that elapsed: PENDING_APPROVAL → EXPIRED (APPROVAL_EXPIRED); a bump's → bump FAILED. */
export async function expire(x: StepContext): Promise<number> {
  const now = x.clock();
  const ids = await x.db.query<{ transfer_id: string }>(
    `SELECT transfer_id FROM transfers WHERE status = 'PENDING_APPROVAL' AND approval_deadline <= $1`,
    [now],
  );
  for (const { transfer_id } of ids) {
    await eachRow(x, transfer_id, () =>
      x.db.tx(async (q) => {
        const t = await loadTransfer(q, transfer_id, true);
        if (t?.status === 'PENDING_APPROVAL' && t.approval_deadline && t.approval_deadline <= now) {
          await transition(q, x, transfer_id, 'PENDING_APPROVAL', 'EXPIRED', 'APPROVAL_EXPIRED');
        }
      }),
    );
    await x.service.withdrawRequests(transfer_id);
  }
  const bumps = await x.db.query<{ transfer_id: string }>(
    `SELECT transfer_id FROM transfers WHERE status = 'SENT' AND fee_bump->>'status' = 'PENDING_APPROVAL'
       AND (fee_bump->>'deadline')::timestamptz <= $1`,
    [now],
  );
  for (const { transfer_id } of bumps) {
    await eachRow(x, transfer_id, () =>
      x.db.tx(async (q) => {
        const t = await loadTransfer(q, transfer_id, true);
        if (t?.fee_bump?.status !== 'PENDING_APPROVAL') return;
        const next: FeeBump = { ...t.fee_bump, status: 'FAILED', sub_status: 'APPROVAL_EXPIRED' };
        await transition(q, x, transfer_id, 'SENT', 'SENT', t.sub_status, { fee_bump: JSON.stringify(next) });
      }),
    );
    await x.service.withdrawRequests(transfer_id);
  }
  return ids.length + bumps.length;
}

/**
 * Transfers waiting for a chain that has no node configured here (no adapter): PENDING_SIGNATURE
 * or READY_TO_SEND get sub_status CHAIN_UNAVAILABLE and an `error` saying so (one
 * TRANSFER_UPDATED event and one warning per transfer). They keep their status — the pipeline
 * does not claim them, so they stay cancellable — and go on once a coordinator with a node for
 * the chain runs (signing and broadcast clear the sub_status). Returns how many were marked.
 */
export async function markChainUnavailable(x: StepContext): Promise<number> {
  const ids = await x.db.query<{ transfer_id: string; blockchain: string }>(
    `SELECT transfer_id, intent->>'blockchain' AS blockchain FROM transfers
     WHERE status IN ('PENDING_SIGNATURE', 'READY_TO_SEND') AND sub_status IS NULL
       AND NOT (intent->>'blockchain' = ANY($1::text[]))`,
    [x.chains.keys()],
  );
  for (const { transfer_id, blockchain } of ids) {
    const error = `CHAIN_UNAVAILABLE: no node is configured for ${blockchain}`;
    let marked = false;
    await eachRow(x, transfer_id, async () => {
      marked = await x.db.tx(async (q) => {
        const t = await loadTransfer(q, transfer_id, true);
        if (t === undefined || t.sub_status !== null || !['PENDING_SIGNATURE', 'READY_TO_SEND'].includes(t.status))
          return false;
        if (x.chains.adapter(t.intent.blockchain) !== undefined) return false;
        await transition(q, x, transfer_id, t.status, t.status, 'CHAIN_UNAVAILABLE', { error });
        return true;
      });
    });
    if (marked) x.opts.log('warn', 'transfer waits for a chain node', { transfer_id, blockchain, err: error });
  }
  return ids.length;
}
