/**
 * The audit room: the append-only audit log of admin actions. Every mutating admin function writes
 * its entry through {@link AuditLog.record} in the same transaction as the change.
 */
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../db/db.js';
import { type Page, type PageRequest, pageOffset } from '../store.js';
import { type Clock, iso } from '../util.js';

/** Append one audit entry (transaction, actor, action, target type, target id, details without secrets). */
export type AuditFn = (
  q: Queryable,
  actor: string | null,
  action: string,
  targetType: string | null,
  targetId: string | null,
  details?: Record<string, unknown>,
) => Promise<void>;

/** Dependencies of {@link AuditLog}. */
export interface AuditComponents {
  readonly db: Db;
  readonly clock: Clock;
}

/** The audit log (table `audit_log`). */
export class AuditLog {
  constructor(private readonly c: AuditComponents) {}

  /** Append one audit entry in the caller's transaction `q`. `details` must not hold secrets. */
  readonly record: AuditFn = async (q, actor, action, targetType, targetId, details = {}) => {
    await q.query(
      `INSERT INTO audit_log (audit_id, at, actor_user_id, action, target_type, target_id, details)
       VALUES ($1,$2,$3,$4,$5,$6,$7::jsonb)`,
      [randomUUID(), this.c.clock(), actor, action, targetType, targetId, JSON.stringify(details)],
    );
  };

  /** Audit entries, newest first. */
  async list(p: PageRequest): Promise<Page<Record<string, unknown>>> {
    const rows = await this.c.db.query<Record<string, unknown> & { at: Date }>(
      `SELECT audit_id, at, actor_user_id, action, target_type, target_id, details FROM audit_log
       ORDER BY seq DESC LIMIT $1 OFFSET $2`,
      [p.page_size, pageOffset(p)],
    );
    const total = (await this.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log'))[0]?.n ?? 0;
    return { data: rows.map((r) => ({ ...r, at: iso(r.at) })), page: p.page, page_size: p.page_size, total };
  }
}
