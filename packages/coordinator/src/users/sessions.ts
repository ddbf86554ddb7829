/**
 * Sessions of the users room: the two login steps (password, then an e-mail code or a TOTP code),
 * the session lookup behind every admin route's bearer token (absolute and idle expiry), step-up
 * re-authentication for sensitive actions, and logout. Logins from outside
 * {@link AdminOptions.adminNetworks} emit ROLE_SCOPE_LOGIN to the instance-level webhooks.
 */
import { randomUUID } from 'node:crypto';
import type { SessionLookup, SessionTransport } from '../admin/cookies.js';
import { type AdminNetworks, inAdminNetworks, parseAdminNetworks } from '../admin/networks.js';
import type { AdminOptions } from '../admin/options.js';
import { hashPassword, oneTimeCode, safeEqual, verifyPassword } from '../admin/passwords.js';
import type { AuditLog } from '../audit/service.js';
import type { Db } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { Mailer } from '../mailer.js';
import { type Clock, iso, randomToken, sha256Hex } from '../util.js';
import { emitInstanceEvent } from '../webhooks/outbox.js';
import { recordLoginNetwork } from './geo-anomaly.js';
import { checkLockout, rateLimited } from './lockout.js';
import { type SessionUser, type UserRow, type UserView, userByEmail, userById, userView } from './store.js';
import { consumeTotp } from './totp.js';

/** Dependencies of {@link SessionService}. */
export interface SessionComponents {
  readonly db: Db;
  readonly clock: Clock;
  readonly audit: AuditLog;
  readonly mailer: Mailer;
  readonly options: Pick<
    AdminOptions,
    | 'sessionTtlMs'
    | 'sessionIdleMs'
    | 'stepUpTtlMs'
    | 'challengeTtlMs'
    | 'maxCodeAttempts'
    | 'scrypt'
    | 'accountLockout'
    | 'maxOpenChallenges'
    | 'emailCodes'
    | 'adminNetworks'
  >;
}

/** Login, sessions, step-up, logout. */
export class SessionService {
  /** {@link AdminOptions.adminNetworks}, parsed. */
  private readonly adminNetworks: AdminNetworks;
  private dummy: Promise<string> | undefined;
  private readonly logoutListeners: ((sessionId: string) => void)[] = [];

  /** @throws RangeError naming `adminNetworks[i]` for an entry that does not parse */
  constructor(private readonly c: SessionComponents) {
    this.adminNetworks = parseAdminNetworks(c.options.adminNetworks);
  }

  private dummyHash(): Promise<string> {
    this.dummy ??= hashPassword(randomToken(16), this.c.options.scrypt);
    return this.dummy;
  }

  /**
   * First login step: check the password, then open a second-factor challenge — TOTP when the
   * user enrolled an authenticator, otherwise a 6-digit code sent by email. Unknown user, wrong
   * password and blocked user are the same 401 (a dummy hash is checked so timing is similar).
   * @throws ApiError RATE_LIMITED (429, Retry-After) while the e-mail address is locked out
   *   ({@link AdminOptions.accountLockout}, checked before the password), or — right password —
   *   when the user holds `maxOpenChallenges` open challenges or had `emailCodes.max` code e-mails
   *   in the window
   * @throws MailSendError (mailer.ts) when the code e-mail could not be handed to the mail
   *   transport; the challenge is deleted (the route answers 503 MAIL_UNAVAILABLE and logs it)
   */
  async login(
    email: string,
    password: string,
  ): Promise<{ challenge_id: string; method: 'email' | 'totp'; expires_at: string }> {
    await checkLockout(this.c.db, this.c.clock, this.c.options.accountLockout, email);
    const u = await userByEmail(this.c.db, email);
    const ok = await verifyPassword(password, u?.password_hash ?? (await this.dummyHash()));
    if (u === undefined || !ok || u.blocked_at !== null) {
      await this.c.audit.record(this.c.db, u?.user_id ?? null, 'login.failed', 'user', u?.user_id ?? null, { email });
      throw new ApiError('INVALID_CREDENTIALS', 'email or password is wrong, or the account is blocked');
    }
    const id = randomUUID();
    const method = u.totp_secret !== null ? 'totp' : 'email';
    const code = method === 'email' ? oneTimeCode() : undefined;
    const codeHash = code === undefined ? null : sha256Hex(`${id}:${code}`);
    const expires = await this.c.db.tx(async (q) => {
      // The user row lock serialises concurrent logins of one user, so the caps cannot be raced.
      await q.query('SELECT user_id FROM users WHERE user_id = $1 FOR UPDATE', [u.user_id]);
      const now = this.c.clock();
      const open = await q.query<{ expires_at: Date }>(
        `SELECT expires_at FROM login_challenges
         WHERE user_id = $1 AND consumed_at IS NULL AND expires_at > $2 AND attempts < $3
         ORDER BY expires_at LIMIT $4`,
        [u.user_id, now, this.c.options.maxCodeAttempts, this.c.options.maxOpenChallenges],
      );
      if (open.length >= this.c.options.maxOpenChallenges) {
        throw rateLimited('too many open login challenges; finish or wait for one', open[0]!.expires_at, now);
      }
      if (method === 'email') {
        const { max, windowMs } = this.c.options.emailCodes;
        const sent = await q.query<{ created_at: Date }>(
          `SELECT created_at FROM login_challenges WHERE user_id = $1 AND method = 'email' AND created_at > $2
           ORDER BY created_at DESC LIMIT $3`,
          [u.user_id, new Date(now.getTime() - windowMs), max],
        );
        if (sent.length >= max) {
          const oldest = sent[sent.length - 1]!.created_at;
          throw rateLimited(
            'too many login codes sent; wait before asking again',
            new Date(oldest.getTime() + windowMs),
            now,
          );
        }
      }
      const exp = new Date(now.getTime() + this.c.options.challengeTtlMs);
      await q.query(
        `INSERT INTO login_challenges (challenge_id, user_id, method, code_hash, created_at, expires_at)
         VALUES ($1,$2,$3,$4,$5,$6)`,
        [id, u.user_id, method, codeHash, now, exp],
      );
      return exp;
    });
    if (code !== undefined) {
      try {
        await this.c.mailer.send({
          to: u.email,
          subject: 'Your Custodian login code',
          text: `Your Custodian login code is ${code}\n\nIt expires in ${Math.round(this.c.options.challengeTtlMs / 60_000)} minutes. If you did not try to log in, change your password.\n`,
        });
      } catch (e) {
        // nothing was sent: the challenge goes (it neither stays open nor counts as a code e-mail)
        await this.c.db.query('DELETE FROM login_challenges WHERE challenge_id = $1', [id]);
        throw e;
      }
    }
    return { challenge_id: id, method, expires_at: iso(expires)! };
  }

  /**
   * Second login step: verify the code of a challenge and open a session. A challenge accepts at
   * most `maxCodeAttempts` wrong codes, expires, and is consumed by a success; wrong codes also
   * count towards the account lockout across challenges. A TOTP code is single-use (see
   * {@link consumeTotp}): a replayed code, or one of a step not later than the last accepted one,
   * counts as a wrong code and gets the same `INVALID_SECOND_FACTOR`. A success from a `clientIp`
   * outside {@link AdminOptions.adminNetworks} emits ROLE_SCOPE_LOGIN (instance-level webhooks); a
   * success from an IPv4 /24 or IPv6 /48 new for a user who logged in before emits
   * GEO_ANOMALY_DETECTED (users/geo-anomaly.ts).
   * @param clientIp the client address (`req.ip`: the socket peer, or X-Forwarded-For of a trusted proxy)
   * @param transport `bearer` (default: CLI, SDK) or `cookie` (the dashboard): the session only
   *   authenticates over that transport; a cookie session also gets a random CSRF token (32 bytes,
   *   base64url), of which only the SHA-256 is stored (`sessions.csrf_hash`)
   * @throws ApiError INVALID_SECOND_FACTOR (401); RATE_LIMITED (429, Retry-After) while the account is locked out
   * @returns the session token (shown once; stored as SHA-256), its expiry, and the CSRF token of a
   *   cookie session
   */
  async verifyLogin(
    challengeId: string,
    code: string,
    clientIp: string,
    transport: SessionTransport = 'bearer',
  ): Promise<{ token: string; csrf_token?: string; expires_at: string; user: UserView }> {
    return this.c.db
      .tx(async (q) => {
        const c = (
          await q.query<{
            user_id: string;
            method: string;
            code_hash: string | null;
            attempts: number;
            expires_at: Date;
            consumed_at: Date | null;
          }>(
            'SELECT user_id, method, code_hash, attempts, expires_at, consumed_at FROM login_challenges WHERE challenge_id = $1 FOR UPDATE',
            [challengeId],
          )
        )[0];
        const now = this.c.clock();
        if (
          c === undefined ||
          c.consumed_at !== null ||
          c.expires_at <= now ||
          c.attempts >= this.c.options.maxCodeAttempts
        ) {
          throw new ApiError(
            'INVALID_SECOND_FACTOR',
            'the login challenge is unknown, used, expired or locked; log in again',
          );
        }
        const u = await userById(q, c.user_id);
        await checkLockout(q, this.c.clock, this.c.options.accountLockout, u.email);
        let ok = false;
        if (c.method === 'email')
          ok = c.code_hash !== null && safeEqual(sha256Hex(`${challengeId}:${code}`), c.code_hash);
        else if (u.totp_secret !== null) ok = await consumeTotp(q, this.c.clock, u.user_id, u.totp_secret, code);
        if (!ok || u.blocked_at !== null) {
          await q.query('UPDATE login_challenges SET attempts = attempts + 1 WHERE challenge_id = $1', [challengeId]);
          await this.c.audit.record(q, u.user_id, 'login.second_factor_failed', 'user', u.user_id, {
            method: c.method,
            email: u.email,
          });
          return null;
        }
        await q.query('UPDATE login_challenges SET consumed_at = $2 WHERE challenge_id = $1', [challengeId, now]);
        const token = `css_${randomToken(32)}`;
        const csrf = transport === 'cookie' ? randomToken(32) : undefined;
        const expires = new Date(now.getTime() + this.c.options.sessionTtlMs);
        await q.query(
          `INSERT INTO sessions (session_id, user_id, token_hash, created_at, expires_at, last_seen_at, transport, csrf_hash)
           VALUES ($1,$2,$3,$4,$5,$4,$6,$7)`,
          [
            randomUUID(),
            u.user_id,
            sha256Hex(token),
            now,
            expires,
            transport,
            csrf === undefined ? null : sha256Hex(csrf),
          ],
        );
        await this.c.audit.record(q, u.user_id, 'login.succeeded', 'user', u.user_id, {
          method: c.method,
          email: u.email,
        });
        if (!inAdminNetworks(clientIp, this.adminNetworks)) {
          await emitInstanceEvent(q, this.c.clock, 'ROLE_SCOPE_LOGIN', {
            user_id: u.user_id,
            email: u.email,
            role: u.role,
            method: c.method,
            ip: clientIp,
          });
        }
        await recordLoginNetwork(q, this.c.clock, u, clientIp);
        return {
          token,
          ...(csrf === undefined ? {} : { csrf_token: csrf }),
          expires_at: iso(expires)!,
          user: userView(u),
        };
      })
      .then((r) => {
        // The failed attempt is committed before the 401 is raised.
        if (r === null) throw new ApiError('INVALID_SECOND_FACTOR', 'the code is wrong');
        return r;
      });
  }

  /**
   * The user of a live session token, or null: unknown, revoked, past its absolute expiry
   * (`sessionTtlMs`), idle for longer than `sessionIdleMs` (then revoked now, audited
   * `session.idle_revoked`), or of a deleted or blocked user. Records the use in `last_seen_at`
   * when the stored value is a minute old or more (one conditional UPDATE, shared by replicas).
   * `step_up_until`: end of the session's step-up window, or null. Only a session opened for
   * `transport` counts (a bearer token sent as a cookie, or a cookie token sent as Bearer, is null).
   */
  async sessionUser(token: string, transport: SessionTransport = 'bearer'): Promise<SessionUser | null> {
    return (await this.sessionFor(token, transport))?.user ?? null;
  }

  /**
   * {@link sessionUser} with the SHA-256 (hex) of the session's CSRF token (`csrfHash`: null for a
   * bearer session), for the cookie transport's CSRF check (admin/cookies.ts).
   * @param options.touch false: do not record the use (a live stream's re-check is not user activity) [true]
   */
  async sessionFor(
    token: string,
    transport: SessionTransport,
    options: { touch?: boolean } = {},
  ): Promise<SessionLookup | null> {
    const now = this.c.clock();
    const r = (
      await this.c.db.query<
        UserRow & { session_id: string; last_seen_at: Date; step_up_until: Date | null; csrf_hash: string | null }
      >(
        `SELECT u.*, s.session_id, s.last_seen_at, s.step_up_until, s.csrf_hash FROM sessions s JOIN users u USING (user_id)
         WHERE s.token_hash = $1 AND s.transport = $3 AND s.revoked_at IS NULL AND s.expires_at > $2
           AND u.deleted_at IS NULL AND u.blocked_at IS NULL`,
        [sha256Hex(token), now, transport],
      )
    )[0];
    if (r === undefined) return null;
    const idleMs = now.getTime() - r.last_seen_at.getTime();
    if (idleMs > this.c.options.sessionIdleMs) {
      await this.c.db.tx(async (q) => {
        const done = await q.query(
          'UPDATE sessions SET revoked_at = $2 WHERE session_id = $1 AND revoked_at IS NULL RETURNING session_id',
          [r.session_id, now],
        );
        if (done.length === 1) {
          await this.c.audit.record(q, r.user_id, 'session.idle_revoked', 'session', r.session_id, {
            idle_seconds: Math.floor(idleMs / 1000),
          });
        }
      });
      return null;
    }
    if (idleMs >= 60_000 && options.touch !== false) {
      await this.c.db.query('UPDATE sessions SET last_seen_at = $2 WHERE session_id = $1 AND last_seen_at < $2', [
        r.session_id,
        now,
      ]);
    }
    return {
      user: { ...userView(r), session_id: r.session_id, step_up_until: r.step_up_until },
      csrfHash: r.csrf_hash,
    };
  }

  /**
   * Step-up re-authentication of a live session: the current TOTP code (`code`, consumed like a
   * login code, RFC 6238 §5.2) when the user has TOTP enabled, else the account password. On
   * success the session is step-up fresh until now + `stepUpTtlMs` (audited `session.step_up`);
   * a wrong proof is audited `session.step_up_failed` and counts towards the account lockout.
   * @returns the method used and the end of the window (ISO 8601)
   * @throws ApiError VALIDATION_FAILED (422) naming `body.code` / `body.password` when the proof
   *   does not fit the account; RATE_LIMITED (429, Retry-After) while the account is locked out;
   *   INVALID_CREDENTIALS (401, wrong password) or INVALID_SECOND_FACTOR (401, wrong or replayed code)
   */
  async stepUp(
    sessionId: string,
    userId: string,
    proof: { password?: string; code?: string },
  ): Promise<{ method: 'password' | 'totp'; step_up_expires_at: string }> {
    const u = await userById(this.c.db, userId);
    const method = u.totp_secret !== null ? 'totp' : 'password';
    if (method === 'totp' && proof.code === undefined) {
      throw new ApiError('VALIDATION_FAILED', 'body.code: this account uses an authenticator; send its current code', [
        { field: 'body.code', message: 'required: the current authenticator code (this account has TOTP)' },
      ]);
    }
    if (method === 'password' && proof.password === undefined) {
      throw new ApiError('VALIDATION_FAILED', 'body.password: this account has no authenticator; send the password', [
        { field: 'body.password', message: 'required: the account password (this account has no TOTP)' },
      ]);
    }
    await checkLockout(this.c.db, this.c.clock, this.c.options.accountLockout, u.email);
    const passwordOk = method === 'password' ? await verifyPassword(proof.password!, u.password_hash) : false;
    const until = await this.c.db.tx(async (q) => {
      const ok =
        method === 'totp' ? await consumeTotp(q, this.c.clock, userId, u.totp_secret!, proof.code!) : passwordOk;
      if (!ok) {
        await this.c.audit.record(q, userId, 'session.step_up_failed', 'user', userId, { method, email: u.email });
        return null;
      }
      const now = this.c.clock();
      const end = new Date(now.getTime() + this.c.options.stepUpTtlMs);
      const r = await q.query(
        'UPDATE sessions SET step_up_until = $2 WHERE session_id = $1 AND revoked_at IS NULL RETURNING session_id',
        [sessionId, end],
      );
      if (r.length === 0) throw new ApiError('SESSION_REQUIRED', 'the session was revoked');
      await this.c.audit.record(q, userId, 'session.step_up', 'user', userId, { method, session_id: sessionId });
      return end;
    });
    // The failure is committed before the 401 is raised.
    if (until === null) {
      throw method === 'totp'
        ? new ApiError('INVALID_SECOND_FACTOR', 'the authenticator code is wrong or was already used')
        : new ApiError('INVALID_CREDENTIALS', 'the password is wrong');
    }
    return { method, step_up_expires_at: iso(until)! };
  }

  /** A new session's lifetime in whole seconds (the session cookies' `Max-Age`). */
  get sessionTtlSeconds(): number {
    return Math.floor(this.c.options.sessionTtlMs / 1000);
  }

  /**
   * Call `listener` with the session id after each {@link logout} on this process (admin/live.ts
   * ends the session's open streams at once). A listener must not throw.
   */
  onLogout(listener: (sessionId: string) => void): void {
    this.logoutListeners.push(listener);
  }

  /** Revoke one session, then tell the {@link onLogout} listeners. */
  async logout(sessionId: string): Promise<void> {
    await this.c.db.query('UPDATE sessions SET revoked_at = $2 WHERE session_id = $1 AND revoked_at IS NULL', [
      sessionId,
      this.c.clock(),
    ]);
    for (const l of this.logoutListeners) l(sessionId);
  }
}
