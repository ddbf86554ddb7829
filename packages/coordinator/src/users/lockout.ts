/**
 * The per-account lockout ({@link AdminOptions.accountLockout}) and the 429 it answers, shared by
 * login, second factor, step-up, TOTP disable and password change.
 */
import type { AdminOptions } from '../admin/options.js';
import type { Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { Clock } from '../util.js';

/** Audit actions counted by the per-account lockout ({@link AdminOptions.accountLockout}). */
const LOCKOUT_ACTIONS = [
  'login.failed',
  'login.second_factor_failed',
  'session.step_up_failed',
  'password_change.failed',
] as const;

/** 429 `RATE_LIMITED` with `Retry-After` in whole seconds (at least 1) until `until`. */
export function rateLimited(message: string, until: Date, now: Date): ApiError {
  const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
  return new ApiError('RATE_LIMITED', message, undefined, { 'retry-after': String(seconds) });
}

/**
 * Refuse while `email` (case-insensitive) has `accountLockout.maxFailures` failures (wrong
 * password, wrong second-factor code, a wrong password or TOTP code on `session/step-up` or TOTP
 * disable, wrong current password on a password change: {@link LOCKOUT_ACTIONS}) in the window
 * since its last successful login,
 * counted from the audit log — durable, and shared by every coordinator replica.
 * @throws ApiError RATE_LIMITED (429) with Retry-After: when the oldest counted failure leaves the window
 */
export async function checkLockout(
  q: Queryable,
  clock: Clock,
  lockout: AdminOptions['accountLockout'],
  email: string,
): Promise<void> {
  const { maxFailures, windowMs } = lockout;
  const now = clock();
  const since = new Date(now.getTime() - windowMs);
  const rows = await q.query<{ at: Date }>(
    `SELECT at FROM audit_log
     WHERE action = ANY($4::text[]) AND at > $2
       AND lower(details->>'email') = lower($1)
       AND at > COALESCE((SELECT max(at) FROM audit_log WHERE action = 'login.succeeded' AND at > $2
                            AND lower(details->>'email') = lower($1)), $2)
     ORDER BY at DESC LIMIT $3`,
    [email, since, maxFailures, LOCKOUT_ACTIONS],
  );
  if (rows.length >= maxFailures) {
    const oldest = rows[rows.length - 1]!.at;
    throw rateLimited(
      'too many failed logins for this account; retry after the Retry-After delay',
      new Date(oldest.getTime() + windowMs),
      now,
    );
  }
}
