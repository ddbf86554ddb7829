/**
 * The `ceremony_blames` table (migration 13, signing/schema.ts) and the signing ceremony view of the
 * admin API (issue #23 part 3). {@link BlameStore.record} writes the checked blames of one ceremony
 * (signing/blame.ts) in the caller's transaction, with one `SIGNER_MISBEHAVIOUR` instance event per
 * record (webhooks/events.ts) and the `custodian_blame_reports_total` counter; the views name the
 * peer ids by the coordinator's records (server signer or device name) where it has them.
 */
import type { Db, Queryable } from '../db/db.js';
import type { SigningMetrics } from '../metrics/registry.js';
import { notFound } from '../store.js';
import { type Clock, iso } from '../util.js';
import { emitInstanceEvent } from '../webhooks/outbox.js';
import type { BlameRecord } from './blame.js';

/** A blame as the admin API shows it (`GET /admin/v1/ceremonies/{id}`, `/admin/v1/signing-ceremonies/{id}`). */
export interface BlameView {
  /** Verified: the proven culprit's peer id; unverified (a dispute): null — nobody is named. */
  readonly culprit: string | null;
  /** The server signer's or device's name of `culprit`; null when unverified or the coordinator has none. */
  readonly culprit_name: string | null;
  /** The peer id the accuser named (as claimed; proven only when `verified`). */
  readonly claimed_culprit: string;
  /** The name of `claimed_culprit` among the coordinator's records, or null. */
  readonly claimed_culprit_name: string | null;
  readonly accuser: string;
  readonly accuser_name: string | null;
  /** Stable id of the failed check (`echo.equivocation`, `proof.enc`, …; `check.unspecified`). */
  readonly check: string;
  readonly round: number;
  readonly protocol: string;
  readonly verified: boolean;
  readonly detail: string;
  /**
   * One line for people: `<culprit> failed <check>` when verified, else
   * `unverified: <accuser> accuses <claimed_culprit> of <check>` (names where known, else peer ids).
   */
  readonly summary: string;
  readonly created_at: string | null;
}

const named = (name: string | null, peer: string) => (name ? `${name} (${peer})` : peer);

/** The `summary` of a blame view (see {@link BlameView.summary}). */
export function blameSummary(b: Omit<BlameView, 'summary' | 'created_at'>): string {
  return b.verified && b.culprit !== null
    ? `${named(b.culprit_name, b.culprit)} failed ${b.check}`
    : `unverified: ${named(b.accuser_name, b.accuser)} accuses ${named(b.claimed_culprit_name, b.claimed_culprit || '(nobody)')} of ${b.check}`;
}

/**
 * A SIGN ceremony (one signing attempt of the gateway) as the admin API shows it; also a PRESIGN
 * ceremony of the presignature pool that recorded blame (`kind` `presign`, no attempt fields).
 */
export interface SigningCeremonyView {
  /** 48 hex digits (the 24-byte ceremony id). */
  readonly ceremony_id: string;
  readonly kind: 'sign' | 'presign';
  readonly key_id: string | null;
  readonly algorithm: string | null;
  /** The parties as `kind:id`, sorted, joined by `,`. */
  readonly signing_set: string | null;
  readonly transfer_id: string | null;
  readonly started_at: string | null;
  readonly finished_at: string | null;
  /** `OK`, `PRESIGNATURE_UNAVAILABLE`, `REFUSED:<code>`, `ABORTED`, `UNAVAILABLE`, `DEADLINE_EXCEEDED`; null while running. */
  readonly outcome: string | null;
  readonly blame: BlameView[];
}

/** Components of {@link BlameStore}. */
export interface BlameStoreComponents {
  readonly db: Db;
  readonly clock: Clock;
  /** Counts blames by check and verified; absent: not counted. */
  readonly metrics?: Pick<SigningMetrics, 'blameReports'> | undefined;
}

// a peer id's name among the coordinator's records: a live server signer first, then a device
const NAME_SQL = (col: string) => `COALESCE(
  (SELECT name FROM server_signers WHERE peer_id = ${col} ORDER BY removed_at IS NULL DESC, created_at DESC LIMIT 1),
  (SELECT name FROM devices WHERE mpc_peer_id = ${col} ORDER BY created_at DESC LIMIT 1))`;

interface Row {
  culprit: string | null;
  culprit_name: string | null;
  claimed_culprit: string;
  claimed_culprit_name: string | null;
  accuser: string;
  accuser_name: string | null;
  check_name: string;
  round: number;
  protocol: string;
  verified: boolean;
  detail: string;
  created_at: Date;
}

/** Checked blames of ceremonies (see the module comment). */
export class BlameStore {
  constructor(private readonly c: BlameStoreComponents) {}

  /**
   * Write `records` of ceremony `ceremonyId` (kind `kind`) and one SIGNER_MISBEHAVIOUR event each,
   * in the caller's transaction `q`. Counted after the writes.
   */
  async record(q: Queryable, ceremonyId: string, kind: string, records: readonly BlameRecord[]): Promise<void> {
    const at = this.c.clock();
    for (const r of records) {
      const rows = await q.query<{ culprit_name: string | null }>(
        `INSERT INTO ceremony_blames (ceremony_id, kind, verified, culprit, claimed_culprit, accuser, check_name, round,
           protocol, detail, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING ${NAME_SQL('$4')} AS culprit_name`,
        [
          ceremonyId,
          kind,
          r.verified,
          r.verified ? r.culprit : null,
          r.claimedCulprit,
          r.accuser,
          r.check,
          r.round,
          r.protocol,
          r.detail,
          at,
        ],
      );
      // a dispute (unverified) names nobody: culprit and culprit_name null, the claim in claimed_culprit
      await emitInstanceEvent(q, this.c.clock, 'SIGNER_MISBEHAVIOUR', {
        ceremony_id: ceremonyId,
        culprit: r.verified ? r.culprit : null,
        culprit_name: r.verified ? (rows[0]?.culprit_name ?? null) : null,
        claimed_culprit: r.claimedCulprit,
        accuser: r.accuser,
        check: r.check,
        round: r.round,
        verified: r.verified,
      });
    }
    for (const r of records) this.c.metrics?.blameReports.inc({ check: r.check, verified: String(r.verified) });
  }

  /** {@link record} in a transaction of its own (the signing gateway). No-op for no records. */
  async save(ceremonyId: string, kind: string, records: readonly BlameRecord[]): Promise<void> {
    if (records.length === 0) return;
    await this.c.db.tx((q) => this.record(q, ceremonyId, kind, records));
  }

  /** The blames of one ceremony, in the order recorded. */
  async list(ceremonyId: string, q: Queryable = this.c.db): Promise<BlameView[]> {
    const rows = await q.query<Row>(
      `SELECT culprit, ${NAME_SQL('b.culprit')} AS culprit_name, claimed_culprit,
              ${NAME_SQL('b.claimed_culprit')} AS claimed_culprit_name, accuser,
              ${NAME_SQL('b.accuser')} AS accuser_name, check_name, round, protocol, verified, detail, created_at
         FROM ceremony_blames b WHERE ceremony_id = $1 ORDER BY blame_id`,
      [ceremonyId],
    );
    return rows.map((r) => {
      const verified = r.verified === true && r.culprit !== null;
      const v = {
        culprit: verified ? r.culprit : null,
        culprit_name: verified ? r.culprit_name : null,
        claimed_culprit: r.claimed_culprit,
        claimed_culprit_name: r.claimed_culprit_name,
        accuser: r.accuser,
        accuser_name: r.accuser_name,
        check: r.check_name,
        round: Number(r.round),
        protocol: r.protocol,
        verified,
        detail: r.detail,
      };
      return { ...v, summary: blameSummary(v), created_at: iso(r.created_at) };
    });
  }

  /**
   * One SIGN ceremony (a `signing_attempts` row) with its blames, or a PRESIGN ceremony that recorded blame.
   * @param ceremonyId 48 hex digits (lower or upper case)
   * @throws ApiError RESOURCE_NOT_FOUND when no attempt has that id and no blame was recorded for it
   */
  async signingCeremony(ceremonyId: string): Promise<SigningCeremonyView> {
    const id = ceremonyId.toLowerCase();
    const r = (
      await this.c.db.query<{
        key_id: string;
        algorithm: string;
        signing_set: string;
        transfer_id: string | null;
        started_at: Date;
        finished_at: Date | null;
        outcome: string | null;
      }>(
        `SELECT key_id, algorithm, signing_set, transfer_id, started_at, finished_at, outcome
           FROM signing_attempts WHERE ceremony_id = $1`,
        [id],
      )
    )[0];
    if (r === undefined) {
      // a PRESIGN ceremony has no attempt row: it is known here only by the blame it recorded
      const blame = await this.list(id);
      if (blame.length === 0) throw notFound('signing ceremony');
      return {
        ceremony_id: id,
        kind: 'presign',
        key_id: null,
        algorithm: null,
        signing_set: null,
        transfer_id: null,
        started_at: null,
        finished_at: null,
        outcome: 'ABORTED',
        blame,
      };
    }
    return {
      ceremony_id: id,
      kind: 'sign',
      key_id: r.key_id,
      algorithm: r.algorithm,
      signing_set: r.signing_set,
      transfer_id: r.transfer_id,
      started_at: iso(r.started_at),
      finished_at: iso(r.finished_at),
      outcome: r.outcome,
      blame: await this.list(id),
    };
  }
}
