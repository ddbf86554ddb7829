/**
 * TOTP second factor of the users room (RFC 6238: SHA-1, 6 digits, 30 s, ±1 step): the single-use
 * code check shared by login, step-up and disable, and the user's own enrollment, confirmation and
 * removal ({@link TotpService}).
 */
import * as OTPAuth from 'otpauth';
import type { AdminOptions } from '../admin/options.js';
import type { AuditLog } from '../audit/service.js';
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { Mailer } from '../mailer.js';
import { type Clock, iso } from '../util.js';
import { checkLockout } from './lockout.js';
import { revokeOtherSessions, type UserRow, type UserView, userById, userView } from './store.js';

/** The TOTP generator of a base32 secret (`issuer` and `email` label the otpauth URI). */
function totp(secret: string, email: string, issuer = '') {
  return new OTPAuth.TOTP({
    issuer,
    label: email,
    algorithm: 'SHA1',
    digits: 6,
    period: 30,
    secret: OTPAuth.Secret.fromBase32(secret),
  });
}

/**
 * The time step a 6-digit code belongs to, among the steps of the ±1 window around the clock
 * (RFC 6238 §4, §5.2: step = floor(unix seconds / 30)); the latest if several match (a
 * collision); null when none does or the code is not 6 digits. Comparison is otpauth's
 * constant-time one. Reads the clock, nothing else.
 */
export function totpStep(clock: Clock, secret: string, code: string): number | null {
  if (!/^[0-9]{6}$/.test(code)) return null;
  const t = totp(secret, '');
  const now = OTPAuth.TOTP.counter({ period: 30, timestamp: clock().getTime() });
  let step: number | null = null;
  for (let s = now - 1; s <= now + 1; s++) {
    if (t.validate({ token: code, timestamp: s * 30_000, window: 0 }) === 0) step = s;
  }
  return step;
}

/**
 * Accept a TOTP code of the user's active secret at most once (RFC 6238 §5.2): the code's step
 * must be later than the user's `totp_last_step`, which is advanced to it by one conditional
 * UPDATE in the caller's transaction — so the acceptance commits with the session it opens, and
 * of concurrent submissions of one code the row lock lets exactly one through.
 * @returns false for a wrong code, a replayed code, or an earlier step than the last accepted
 *   (one outcome: callers must not tell these apart)
 */
export async function consumeTotp(
  q: Queryable,
  clock: Clock,
  userId: string,
  secret: string,
  code: string,
): Promise<boolean> {
  const step = totpStep(clock, secret, code);
  if (step === null) return false;
  const r = await q.query(
    `UPDATE users SET totp_last_step = $3
     WHERE user_id = $1 AND totp_secret = $2 AND (totp_last_step IS NULL OR totp_last_step < $3)
     RETURNING user_id`,
    [userId, secret, step],
  );
  return r.length === 1;
}

/** Dependencies of {@link TotpService}. */
export interface TotpComponents {
  readonly db: Db;
  readonly clock: Clock;
  readonly audit: AuditLog;
  readonly mailer: Mailer;
  readonly options: Pick<AdminOptions, 'totpIssuer' | 'accountLockout'>;
}

/** A user's own authenticator app: enroll, confirm, disable. */
export class TotpService {
  constructor(private readonly c: TotpComponents) {}

  /**
   * After a second-factor change has committed: tell the user by e-mail (never the secret). A mail
   * failure does not undo the change; it is audited `user.notification_failed`.
   */
  private async notifyFactorChange(u: UserRow, what: 'set up' | 'replaced' | 'removed'): Promise<void> {
    const text =
      `The authenticator app (TOTP) of your Custodian account ${u.email} was ${what} at ${iso(this.c.clock())}.\n\n` +
      'Your other sessions were signed out. If this was not you, contact your administrator at once: ' +
      'someone may hold your password or a session.\n';
    try {
      await this.c.mailer.send({ to: u.email, subject: `Your Custodian authenticator was ${what}`, text });
    } catch {
      await this.c.audit.record(this.c.db, u.user_id, 'user.notification_failed', 'user', u.user_id, {
        kind: 'totp_changed',
      });
    }
  }

  /** Start TOTP enrollment: a fresh 160-bit secret (base32) and its `otpauth://` URI, pending confirmation. */
  async enroll(userId: string): Promise<{ secret: string; otpauth_uri: string }> {
    const u = await userById(this.c.db, userId);
    const secret = new OTPAuth.Secret({ size: 20 }).base32;
    await this.c.db.query('UPDATE users SET totp_pending_secret = $2 WHERE user_id = $1', [userId, secret]);
    return { secret, otpauth_uri: totp(secret, u.email, this.c.options.totpIssuer).toString() };
  }

  /**
   * Confirm TOTP enrollment with a current code; from then on login asks for TOTP. The code is
   * consumed: it cannot also open a session (RFC 6238 §5.2). A second-factor change: the user's
   * sessions other than `sessionId` are revoked, it is audited (`user.totp_enabled`, or
   * `user.totp_replaced` when it replaces an enabled secret) and mailed to the user. The route
   * requires a fresh step-up.
   * @throws ApiError INVALID_SECOND_FACTOR wrong code; CONFLICT no enrollment started
   */
  async confirm(userId: string, code: string, sessionId: string): Promise<UserView> {
    const { view, before } = await this.c.db.tx(async (q) => {
      const u = await userById(q, userId);
      if (u.totp_pending_secret === null) throw new ApiError('CONFLICT', 'start TOTP enrollment first');
      const step = totpStep(this.c.clock, u.totp_pending_secret, code);
      // The confirming code is consumed: its step becomes the new secret's last accepted step.
      // Conditional on the pending secret, so of two concurrent confirmations one wins.
      const done =
        step !== null &&
        (
          await q.query(
            `UPDATE users SET totp_secret = totp_pending_secret, totp_pending_secret = NULL, totp_last_step = $3
             WHERE user_id = $1 AND totp_pending_secret = $2 RETURNING user_id`,
            [userId, u.totp_pending_secret, step],
          )
        ).length === 1;
      if (!done) throw new ApiError('INVALID_SECOND_FACTOR', 'the authenticator code is wrong');
      const revoked = await revokeOtherSessions(q, this.c.clock, userId, sessionId);
      const replaced = u.totp_secret !== null;
      await this.c.audit.record(q, userId, replaced ? 'user.totp_replaced' : 'user.totp_enabled', 'user', userId, {
        sessions_revoked: revoked,
      });
      return { view: userView({ ...u, totp_secret: u.totp_pending_secret, totp_pending_secret: null }), before: u };
    });
    await this.notifyFactorChange(before, before.totp_secret !== null ? 'replaced' : 'set up');
    return view;
  }

  /**
   * Remove TOTP (login falls back to email codes). Requires a current TOTP code not used before —
   * the current factor itself, so it is its own step-up: a wrong code is audited
   * `session.step_up_failed` and counts towards the account lockout. The user's sessions other than
   * `sessionId` are revoked; audited `user.totp_disabled` and mailed to the user.
   * @throws ApiError INVALID_SECOND_FACTOR wrong or replayed code; CONFLICT TOTP not enabled;
   *   RATE_LIMITED (429, Retry-After) while the account is locked out
   */
  async disable(userId: string, code: string, sessionId: string): Promise<UserView> {
    const first = await userById(this.c.db, userId);
    if (first.totp_secret === null) throw new ApiError('CONFLICT', 'TOTP is not enabled');
    await checkLockout(this.c.db, this.c.clock, this.c.options.accountLockout, first.email);
    const out = await this.c.db.tx(async (q) => {
      const u = await userById(q, userId);
      if (u.totp_secret === null) throw new ApiError('CONFLICT', 'TOTP is not enabled');
      // The code is consumed like a login code (a replayed one is refused), then the secret and its
      // last step go together.
      if (!(await consumeTotp(q, this.c.clock, userId, u.totp_secret, code))) {
        await this.c.audit.record(q, userId, 'session.step_up_failed', 'user', userId, {
          method: 'totp',
          email: u.email,
        });
        return null;
      }
      await q.query('UPDATE users SET totp_secret = NULL, totp_last_step = NULL WHERE user_id = $1', [userId]);
      const revoked = await revokeOtherSessions(q, this.c.clock, userId, sessionId);
      await this.c.audit.record(q, userId, 'user.totp_disabled', 'user', userId, { sessions_revoked: revoked });
      return u;
    });
    // The failure is committed before the 401 is raised.
    if (out === null) throw new ApiError('INVALID_SECOND_FACTOR', 'the authenticator code is wrong');
    await this.notifyFactorChange(out, 'removed');
    return userView({ ...out, totp_secret: null });
  }
}
