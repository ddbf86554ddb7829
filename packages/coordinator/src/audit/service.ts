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

  /**
   * Audit entries matching `f`, newest first; `total` counts the matches. Filters combine with AND:
   * `action` exact, or a prefix when it ends in `*` or `.` (`policy.` and `policy.*` both match
   * `policy.created`); `actor_user_id`, `target_type`, `target_id` exact; `from` inclusive and `to`
   * exclusive (ISO date-times).
   */
  async list(p: PageRequest, f: AuditFilter = {}): Promise<Page<Record<string, unknown>>> {
    const where: string[] = [];
    const args: unknown[] = [];
    const add = (sql: string, v: unknown) => {
      args.push(v);
      where.push(sql.replace('?', `$${args.length}`));
    };
    if (f.action !== undefined) {
      const prefix = f.action.endsWith('*') ? f.action.slice(0, -1) : f.action.endsWith('.') ? f.action : null;
      if (prefix === null) add('action = ?', f.action);
      // LIKE with the prefix's own wildcards escaped
      else add("action LIKE ? ESCAPE '\\'", `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    }
    if (f.actor_user_id !== undefined) add('actor_user_id = ?', f.actor_user_id.toLowerCase());
    if (f.target_type !== undefined) add('target_type = ?', f.target_type);
    if (f.target_id !== undefined) add('target_id = ?', f.target_id);
    if (f.from !== undefined) add('at >= ?', new Date(f.from));
    if (f.to !== undefined) add('at < ?', new Date(f.to));
    const cond = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
    const rows = await this.c.db.query<Record<string, unknown> & { at: Date }>(
      `SELECT audit_id, at, actor_user_id, action, target_type, target_id, details FROM audit_log ${cond}
       ORDER BY seq DESC LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
      [...args, p.page_size, pageOffset(p)],
    );
    const total =
      (await this.c.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM audit_log ${cond}`, args))[0]?.n ?? 0;
    return { data: rows.map((r) => ({ ...r, at: iso(r.at) })), page: p.page, page_size: p.page_size, total };
  }
}

/** Filters of {@link AuditLog.list} (the query parameters of `GET /admin/v1/audit`). */
export interface AuditFilter {
  /** Exact action, or a prefix ending in `*` or `.`. */
  action?: string;
  actor_user_id?: string;
  target_type?: string;
  target_id?: string;
  /** ISO date-time, inclusive. */
  from?: string;
  /** ISO date-time, exclusive. */
  to?: string;
}
