/**
 * Device approvals (DESIGN §7 "approval quorum"): a device's signed decision on a transfer or on a
 * fee bump's round, the requests pushed to the key's approver devices and withdrawn once decided,
 * and the requests a device that connects later can still answer. `TransferService` (service.ts)
 * exposes them; the device hub calls them.
 */
import {
  type Approval,
  approvalDigest,
  deviceVerify,
  type TransferIntent,
  transferIntentDigest,
} from '@custodian/wire';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import { transition } from './machine.js';
import { normalisePublicKey } from './policy-documents.js';
import { type ApprovalRequest, field, type RequestContext } from './request-context.js';
import {
  approverDeviceIds,
  type FeeBump,
  loadTransfer,
  roundIntent,
  summaryFee,
  TRANSFER_SELECT,
  type TransferRow,
  type TransferView,
  transferView,
} from './view.js';

/**
 * A device's signed decision (called by the device hub when a phone answers an approval request).
 * Checks: the transfer awaits approvals (round 0, or a fee bump's round), the device is one of
 * the key's approver devices, APPROVED, with the public key it signed with, the decision is over
 * the transfer's intent digest and its P-256 signature verifies. A REJECT ends the transfer
 * REJECTED / REJECTED_BY_APPROVER (a bump: the bump is rejected, the transfer stays SENT); the
 * quorum of distinct devices moves it to PENDING_SIGNATURE.
 * @throws ApiError TRANSFER_NOT_FOUND, TRANSFER_STATE_CONFLICT (409), VALIDATION_FAILED (422), CONFLICT (device already decided)
 */
export async function submitApproval(s: RequestContext, approval: Approval): Promise<TransferView> {
  const view = await s.db.tx(async (q) => {
    const t = await loadTransfer(q, String(approval.transfer_id).toLowerCase(), true);
    if (t === undefined) throw new ApiError('TRANSFER_NOT_FOUND', 'no such transfer');
    const bump = t.fee_bump;
    const round = t.approval_round;
    const waiting =
      (round === 0 && t.status === 'PENDING_APPROVAL') ||
      (round > 0 && t.status === 'SENT' && bump?.status === 'PENDING_APPROVAL');
    if (!waiting) throw new ApiError('TRANSFER_STATE_CONFLICT', `the transfer is ${t.status}: no approval awaited`);
    const deadline = round === 0 ? t.approval_deadline : bump ? new Date(bump.deadline) : null;
    if (deadline !== null && deadline.getTime() <= s.clock().getTime()) {
      throw new ApiError('TRANSFER_STATE_CONFLICT', 'the approval window has elapsed');
    }
    const deviceId = String(approval.device_id).toLowerCase();
    const mk = (
      await q.query<{ parties: unknown }>('SELECT parties FROM master_keys WHERE master_key_id = $1', [t.master_key_id])
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
      [t.transfer_id, round, deviceId, approval.decision, JSON.stringify(approval), s.clock()],
    );
    if (ins.length === 0) throw new ApiError('CONFLICT', 'this device already decided on this transfer');
    if (round === 0) {
      if (approval.decision === 'REJECT')
        return transition(q, s, t.transfer_id, 'PENDING_APPROVAL', 'REJECTED', 'REJECTED_BY_APPROVER');
      const n = await approveCount(q, t.transfer_id, round);
      if (n >= t.approvals_required)
        return transition(q, s, t.transfer_id, 'PENDING_APPROVAL', 'PENDING_SIGNATURE', null);
      return transition(q, s, t.transfer_id, 'PENDING_APPROVAL', 'PENDING_APPROVAL', null);
    }
    const next: FeeBump =
      approval.decision === 'REJECT'
        ? { ...(bump as FeeBump), status: 'REJECTED', sub_status: 'REJECTED_BY_APPROVER' }
        : (await approveCount(q, t.transfer_id, round)) >= t.approvals_required
          ? { ...(bump as FeeBump), status: 'PENDING_SIGNATURE', signing_since: s.clock().toISOString() }
          : (bump as FeeBump);
    return transition(q, s, t.transfer_id, 'SENT', 'SENT', t.sub_status, { fee_bump: JSON.stringify(next) });
  });
  s.signals.work.emit();
  const awaiting = view.status === 'PENDING_APPROVAL' || view.fee_bump?.status === 'PENDING_APPROVAL';
  if (!awaiting) await withdrawRequests(s, view.transfer_id);
  return view;
}

/** Withdraw the pushed approval requests of a transfer's current round (see {@link ApprovalNotifier}). */
export async function withdrawRequests(s: RequestContext, transferId: string): Promise<void> {
  if (!s.signals.approvalWithdrawals.listening) return;
  const r = (
    await s.db.query<{ parties: unknown; approval_round: number }>(
      `SELECT m.parties, t.approval_round FROM transfers t JOIN master_keys m USING (master_key_id) WHERE t.transfer_id = $1`,
      [transferId],
    )
  )[0];
  if (r) s.signals.approvalWithdrawals.emit(approverDeviceIds(r.parties), transferId, r.approval_round);
}

async function approveCount(q: Queryable, transferId: string, round: number): Promise<number> {
  const r = await q.query<{ n: number }>(
    `SELECT count(DISTINCT device_id)::int AS n FROM transfer_approvals WHERE transfer_id = $1 AND round = $2 AND decision = 'APPROVE'`,
    [transferId, round],
  );
  return r[0]?.n ?? 0;
}

/** Approval requests a device can answer now (for a device that connects after the push). */
export async function pendingApprovals(s: RequestContext, deviceId: string): Promise<ApprovalRequest[]> {
  const rows = await s.db.query<TransferRow & { parties: unknown }>(
    `${TRANSFER_SELECT.replace('FROM transfers t', ', m.parties FROM transfers t JOIN master_keys m ON m.master_key_id = t.master_key_id')}
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

/** Push an approval request of round `round` to `devices` (best effort, after the commit). */
export function notify(
  s: RequestContext,
  devices: string[],
  v: TransferView,
  intent: TransferIntent,
  round: number,
  deadline?: string,
): void {
  if (!s.signals.approvalRequests.listening || devices.length === 0) return;
  s.signals.approvalRequests.emit(devices, {
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
