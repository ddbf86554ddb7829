/**
 * The admin API's transfer (`GET /admin/v1/profiles/{p}/transfers/{id}` and its SSE stream): the
 * REST transfer object ({@link TransferView}, unchanged on `/api/v1`) plus, read-only, what the store
 * already keeps about its history:
 *
 * - `timeline`: every status transition, oldest first, from the transfer's TRANSFER_CREATED /
 *   TRANSFER_UPDATED / TRANSFER_FAILED events in the webhook outbox (`webhook_events`). machine.ts
 *   `transition` writes them in the transition's own transaction whether or not a webhook is
 *   registered (webhooks/outbox.ts writes the event row unconditionally, notifications only per
 *   subscription), so the outbox is a complete, persisted log. TRANSFER_FAILED repeats the
 *   TRANSFER_UPDATED of the same move and is skipped; consecutive identical (status, sub_status)
 *   entries are collapsed.
 * - `approvals`: the device decisions of `transfer_approvals` (every round), with device name and owner.
 * - `signing`: the SIGN ceremonies of `signing_attempts` (the signers by name, outcome, ceremony id;
 *   details at `GET /admin/v1/signing-ceremonies/{ceremony_id}`).
 */
import type { Queryable } from '../db/db.js';
import { iso } from '../util.js';
import type { TransferStatus } from './machine.js';
import type { TransferView } from './view.js';

/** One status transition of a transfer. */
export interface TransferTimelineEntry {
  status: TransferStatus;
  sub_status: string | null;
  /** When the transfer entered it (ISO 8601 UTC). */
  at: string;
}

/** One device decision on a transfer. */
export interface TransferApprovalEntry {
  /** 0: the transfer itself; n > 0: its n-th fee bump. */
  round: number;
  device_id: string;
  /** The device's name, null when the device row is gone. */
  device_name: string | null;
  /** The user owning the device, null when it has none. */
  user_id: string | null;
  user_name: string | null;
  user_email: string | null;
  decision: 'APPROVE' | 'REJECT';
  /** ISO 8601 UTC. */
  at: string;
}

/** One party of a signing attempt. */
export interface SigningParty {
  kind: 'server' | 'device' | string;
  id: string;
  /** Server signer or device name, null when unknown. */
  name: string | null;
}

/** One SIGN ceremony of a transfer. */
export interface TransferSigningAttempt {
  /** 1-based, in start order. */
  attempt: number;
  /** 48 hex digits; details at `GET /admin/v1/signing-ceremonies/{ceremony_id}`. */
  ceremony_id: string;
  signers: SigningParty[];
  /** The attempt's outcome as recorded (e.g. SIGNED, ABORTED), null while running. */
  outcome: string | null;
  started_at: string;
  finished_at: string | null;
}

/** The admin API's transfer: the REST object plus timeline, approvals and signing attempts. */
export type AdminTransferView = TransferView & {
  timeline: TransferTimelineEntry[];
  approvals: TransferApprovalEntry[];
  signing: TransferSigningAttempt[];
};

/** The transfer events that record a status (TRANSFER_FAILED duplicates an UPDATED of the same move). */
const STATUS_EVENTS = ['TRANSFER_CREATED', 'TRANSFER_UPDATED'];

/** {@link AdminTransferView} of `v`, read with `q`. */
export async function adminTransferView(q: Queryable, v: TransferView): Promise<AdminTransferView> {
  const [timeline, approvals, signing] = [
    await loadTimeline(q, v),
    await loadApprovals(q, v.transfer_id),
    await loadSigning(q, v.transfer_id),
  ];
  return { ...v, timeline, approvals, signing };
}

async function loadTimeline(q: Queryable, v: TransferView): Promise<TransferTimelineEntry[]> {
  const rows = await q.query<{ occurred_at: Date; status: TransferStatus | null; sub_status: string | null }>(
    `SELECT e.occurred_at, (e.body::jsonb)->'data'->>'status' AS status, (e.body::jsonb)->'data'->>'sub_status' AS sub_status
     FROM webhook_events e
     WHERE e.profile_id = $1 AND e.event_type = ANY($2::text[]) AND (e.body::jsonb)->'data'->>'transfer_id' = $3
     ORDER BY e.occurred_at, COALESCE(((e.body::jsonb)->'data'->>'sequence')::int, 0)`,
    [v.profile_id, STATUS_EVENTS, v.transfer_id],
  );
  const out: TransferTimelineEntry[] = [];
  for (const r of rows) {
    if (r.status === null) continue;
    const last = out[out.length - 1];
    if (last !== undefined && last.status === r.status && last.sub_status === r.sub_status) continue;
    out.push({ status: r.status, sub_status: r.sub_status, at: iso(r.occurred_at)! });
  }
  return out;
}

async function loadApprovals(q: Queryable, transferId: string): Promise<TransferApprovalEntry[]> {
  const rows = await q.query<{
    round: number;
    device_id: string;
    device_name: string | null;
    user_id: string | null;
    user_name: string | null;
    user_email: string | null;
    decision: 'APPROVE' | 'REJECT';
    created_at: Date;
  }>(
    `SELECT ta.round, ta.device_id, d.name AS device_name, u.user_id, u.name AS user_name, u.email AS user_email,
       ta.decision, ta.created_at
     FROM transfer_approvals ta LEFT JOIN devices d ON d.device_id = ta.device_id
       LEFT JOIN users u ON u.user_id = d.user_id
     WHERE ta.transfer_id = $1 ORDER BY ta.created_at, ta.round, ta.device_id`,
    [transferId],
  );
  return rows.map((r) => ({
    round: Number(r.round),
    device_id: r.device_id,
    device_name: r.device_name,
    user_id: r.user_id,
    user_name: r.user_name,
    user_email: r.user_email,
    decision: r.decision,
    at: iso(r.created_at)!,
  }));
}

async function loadSigning(q: Queryable, transferId: string): Promise<TransferSigningAttempt[]> {
  const rows = await q.query<{
    ceremony_id: string;
    signing_set: string;
    outcome: string | null;
    started_at: Date;
    finished_at: Date | null;
  }>(
    `SELECT ceremony_id, signing_set, outcome, started_at, finished_at FROM signing_attempts
     WHERE transfer_id = $1 ORDER BY started_at, ceremony_id`,
    [transferId],
  );
  if (rows.length === 0) return [];
  const parties = rows.map((r) =>
    r.signing_set
      .split(',')
      .filter((p) => p !== '')
      .map((p) => {
        const i = p.indexOf(':');
        return i < 0 ? { kind: 'unknown', id: p } : { kind: p.slice(0, i), id: p.slice(i + 1) };
      }),
  );
  const ids = [...new Set(parties.flat().map((p) => p.id))];
  const names = new Map<string, string>();
  for (const n of await q.query<{ id: string; name: string }>(
    `SELECT signer_id::text AS id, name FROM server_signers WHERE signer_id::text = ANY($1::text[])
     UNION ALL SELECT device_id::text AS id, name FROM devices WHERE device_id::text = ANY($1::text[])`,
    [ids],
  ))
    names.set(`${n.id}`.toLowerCase(), n.name);
  return rows.map((r, i) => ({
    attempt: i + 1,
    ceremony_id: r.ceremony_id,
    signers: parties[i]!.map((p) => ({ ...p, name: names.get(p.id.toLowerCase()) ?? null })),
    outcome: r.outcome,
    started_at: iso(r.started_at)!,
    finished_at: iso(r.finished_at),
  }));
}
