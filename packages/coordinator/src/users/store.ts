/**
 * The users room's data: user rows (`users`) and their views, and the session queries shared by
 * the room's services. Plain functions over the caller's {@link Queryable} (its transaction).
 */
import { randomUUID } from 'node:crypto';
import type { Role } from '../admin/options.js';
import type { Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import { notFound } from '../store.js';
import { type Clock, iso } from '../util.js';

/** A user as shown by the admin API (never the password hash or TOTP secret). */
export interface UserView {
  user_id: string;
  email: string;
  name: string;
  role: Role;
  totp_enabled: boolean;
  blocked: boolean;
  created_at: string;
}

/** The user of a live admin session, with the session's id and step-up window end (null: none). */
export type SessionUser = UserView & { session_id: string; step_up_until: Date | null };

/** A row of `users`. */
export interface UserRow {
  user_id: string;
  email: string;
  name: string;
  role: Role;
  password_hash: string;
  totp_secret: string | null;
  totp_pending_secret: string | null;
  /** Last accepted TOTP time step (bigint; never read back into JS, compared in SQL only). */
  totp_last_step: unknown;
  blocked_at: Date | null;
  created_at: Date;
}

export function userView(u: UserRow): UserView {
  return {
    user_id: u.user_id,
    email: u.email,
    name: u.name,
    role: u.role,
    totp_enabled: u.totp_secret !== null,
    blocked: u.blocked_at !== null,
    created_at: iso(u.created_at)!,
  };
}

/** Insert a user (e-mail unique among live users, case-insensitive). @throws ApiError CONFLICT */
export async function insertUser(
  q: Queryable,
  clock: Clock,
  email: string,
  name: string,
  role: Role,
  hash: string,
): Promise<UserView> {
  const exists = await q.query('SELECT 1 FROM users WHERE lower(email) = lower($1) AND deleted_at IS NULL', [email]);
  if (exists.length > 0) throw new ApiError('CONFLICT', 'a user with this email already exists');
  const id = randomUUID();
  const now = clock();
  await q.query(
    'INSERT INTO users (user_id, email, name, role, password_hash, created_at) VALUES ($1,$2,$3,$4,$5,$6)',
    [id, email, name, role, hash, now],
  );
  return { user_id: id, email, name, role, totp_enabled: false, blocked: false, created_at: iso(now)! };
}

/** The live user with this e-mail address (case-insensitive), if any. */
export async function userByEmail(q: Queryable, email: string): Promise<UserRow | undefined> {
  return (
    await q.query<UserRow>('SELECT * FROM users WHERE lower(email) = lower($1) AND deleted_at IS NULL', [email])
  )[0];
}

/** The live user `id`. @throws ApiError RESOURCE_NOT_FOUND */
export async function userById(q: Queryable, id: string): Promise<UserRow> {
  const u = (await q.query<UserRow>('SELECT * FROM users WHERE user_id = $1 AND deleted_at IS NULL', [id]))[0];
  if (u === undefined) throw notFound('user');
  return u;
}

/** Fail with 409 when the change would leave no active ADMIN. Caller holds the tx. */
export async function keepOneAdmin(q: Queryable, excluding: string): Promise<void> {
  await q.query('SELECT user_id FROM users WHERE role = $1 FOR UPDATE', ['ADMIN']);
  const r = await q.query(
    `SELECT 1 FROM users WHERE role = 'ADMIN' AND deleted_at IS NULL AND blocked_at IS NULL AND user_id <> $1`,
    [excluding],
  );
  if (r.length === 0) throw new ApiError('CONFLICT', 'the instance must keep at least one active Admin');
}

/** Revoke every live session of a user except `keep` (caller's transaction); returns how many. */
export async function revokeOtherSessions(q: Queryable, clock: Clock, userId: string, keep: string): Promise<number> {
  const r = await q.query(
    `UPDATE sessions SET revoked_at = $3 WHERE user_id = $1 AND session_id <> $2 AND revoked_at IS NULL
     RETURNING session_id`,
    [userId, keep, clock()],
  );
  return r.length;
}
