/**
 * The users room: instance initialisation (first Admin and profile), users and roles, the user's
 * own password change; its sessions ({@link SessionService}, `sessions.ts`) and TOTP
 * ({@link TotpService}, `totp.ts`) are built from the same components and exposed as
 * {@link UserService.sessions} and {@link UserService.totp}.
 */
import type { AdminOptions, Role } from '../admin/options.js';
import { hashPassword, passwordUserInputs, requireStrongPassword, verifyPassword } from '../admin/passwords.js';
import type { AuditLog } from '../audit/service.js';
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { Mailer } from '../mailer.js';
import { type Page, type PageRequest, pageOffset } from '../store.js';
import { type Clock, iso } from '../util.js';
import { emitInstanceEvent } from '../webhooks/outbox.js';
import type { BootstrapTokens } from './bootstrap.js';
import { listLoginNetworks } from './geo-anomaly.js';
import { checkLockout } from './lockout.js';
import { SessionService } from './sessions.js';
import { insertUser, keepOneAdmin, type UserRow, type UserView, userById, userView } from './store.js';
import { TotpService } from './totp.js';

/** Dependencies of {@link UserService} (and of its sessions and TOTP). */
export interface UserComponents {
  readonly db: Db;
  readonly clock: Clock;
  readonly audit: AuditLog;
  readonly mailer: Mailer;
  /** The wallets room's profiles: instance initialisation creates the first profile in its transaction. */
  readonly profiles: {
    createProfile(name: string, q: Queryable): Promise<{ profile_id: string; name: string; created_at: string }>;
  };
  readonly options: Omit<AdminOptions, 'mode' | 'minMobileSigners' | 'dkgTimeoutMs'>;
  /** The one-time bootstrap token instance initialisation consumes. */
  readonly bootstrap: BootstrapTokens;
}

/** Users, roles, instance initialisation; sessions and TOTP as sub-services. */
export class UserService {
  /** Login, sessions, step-up, logout. */
  readonly sessions: SessionService;
  /** The user's own authenticator app. */
  readonly totp: TotpService;

  /**
   * @throws RangeError (at construction) for `options.passwordMinScore` outside 0–4, or an
   *   `options.adminNetworks` entry that does not parse
   */
  constructor(private readonly c: UserComponents) {
    this.sessions = new SessionService(c);
    this.totp = new TotpService(c);
    const m = c.options.passwordMinScore;
    if (!Number.isInteger(m) || m < 0 || m > 4) {
      throw new RangeError(`admin.passwordMinScore: expected an integer 0–4, got ${JSON.stringify(m)}`);
    }
  }

  /** {@link requireStrongPassword} with this instance's minimum score and the user's known words. */
  private requireStrong(password: string, user: { email: string; name: string }, field = 'body.password') {
    requireStrongPassword(password, passwordUserInputs(user.email, user.name), field, this.c.options.passwordMinScore);
  }

  /** Whether the instance has been initialised. */
  async initialised(): Promise<boolean> {
    return (await this.c.db.query('SELECT 1 FROM instance')).length > 0;
  }

  /**
   * Initialise the instance: the first account (role ADMIN) and the first profile. Exactly once:
   * the singleton row of `instance` makes concurrent calls safe (409 ALREADY_INITIALISED). Needs
   * the one-time bootstrap token (users/bootstrap.ts), consumed in the same transaction; a refusal
   * is audited (`instance.init_refused`, no token in the entry).
   * @throws ApiError ALREADY_INITIALISED (409); BOOTSTRAP_TOKEN_INVALID (401) when `bootstrap_token`
   *   is missing or wrong; VALIDATION_FAILED (422) naming `body.password` when it is too easy to
   *   guess (checked only while the instance is not initialised and after the token)
   */
  async init(input: {
    email: string;
    name: string;
    password: string;
    profile_name: string;
    bootstrap_token?: string | undefined;
  }) {
    if (await this.initialised())
      throw new ApiError('ALREADY_INITIALISED', 'this instance already has its first administrator');
    try {
      await this.c.bootstrap.check(input.bootstrap_token);
    } catch (e) {
      await this.c.audit.record(this.c.db, null, 'instance.init_refused', 'instance', null, {
        email: input.email,
        token_sent: input.bootstrap_token !== undefined,
      });
      throw e;
    }
    this.requireStrong(input.password, input);
    const hash = await hashPassword(input.password, this.c.options.scrypt);
    const created = await this.c.db.tx(async (q) => {
      const r = await q.query(
        'INSERT INTO instance (id, initialised_at) VALUES (1, $1) ON CONFLICT DO NOTHING RETURNING 1',
        [this.c.clock()],
      );
      if (r.length === 0)
        throw new ApiError('ALREADY_INITIALISED', 'this instance already has its first administrator');
      const user = await insertUser(q, this.c.clock, input.email, input.name, 'ADMIN', hash);
      const profile = await this.c.profiles.createProfile(input.profile_name, q);
      await this.c.audit.record(q, user.user_id, 'instance.init', 'profile', profile.profile_id, { email: user.email });
      await emitInstanceEvent(q, this.c.clock, 'USER_CREATED', {
        user_id: user.user_id,
        email: user.email,
        role: user.role,
      });
      await this.c.bootstrap.consume(input.bootstrap_token, q);
      return { user, profile };
    });
    await this.c.bootstrap.removeFile();
    return created;
  }

  /**
   * Self-service password change, re-authenticated by the current password. On success the new
   * hash is stored, every other session of the user is revoked (the calling one stays), the change
   * is audited (`user.password_changed`) and the user is e-mailed a notice. A wrong current
   * password is audited as `password_change.failed` and counts toward the account lockout.
   * @param sessionId the calling session (kept)
   * @throws ApiError RATE_LIMITED (429, Retry-After) while the account is locked out (checked first);
   *   INVALID_CREDENTIALS (401) for a wrong current password; VALIDATION_FAILED (422) naming
   *   `body.new_password` when it equals the current one or is too easy to guess; CONFLICT (409) when
   *   the password was changed concurrently
   */
  async changePassword(userId: string, sessionId: string, current: string, next: string): Promise<void> {
    const u = await userById(this.c.db, userId);
    await checkLockout(this.c.db, this.c.clock, this.c.options.accountLockout, u.email);
    if (!(await verifyPassword(current, u.password_hash))) {
      await this.c.audit.record(this.c.db, userId, 'password_change.failed', 'user', userId, { email: u.email });
      throw new ApiError('INVALID_CREDENTIALS', 'the current password is wrong');
    }
    if (next.normalize('NFKC') === current.normalize('NFKC')) {
      throw new ApiError('VALIDATION_FAILED', 'body.new_password: must differ from the current password', [
        { field: 'body.new_password', message: 'must differ from the current password' },
      ]);
    }
    this.requireStrong(next, u, 'body.new_password');
    const hash = await hashPassword(next, this.c.options.scrypt);
    const now = this.c.clock();
    const revoked = await this.c.db.tx(async (q) => {
      // Conditional on the hash that was verified: of two concurrent changes one wins.
      const r = await q.query(
        'UPDATE users SET password_hash = $3 WHERE user_id = $1 AND password_hash = $2 AND deleted_at IS NULL RETURNING user_id',
        [userId, u.password_hash, hash],
      );
      if (r.length === 0) throw new ApiError('CONFLICT', 'the password was changed meanwhile; log in again');
      const s = await q.query(
        `UPDATE sessions SET revoked_at = $3 WHERE user_id = $1 AND session_id <> $2 AND revoked_at IS NULL
         RETURNING session_id`,
        [userId, sessionId, now],
      );
      await this.c.audit.record(q, userId, 'user.password_changed', 'user', userId, { sessions_revoked: s.length });
      return s.length;
    });
    try {
      await this.c.mailer.send({
        to: u.email,
        subject: 'Your Custodian password was changed',
        text:
          `The password of your Custodian account ${u.email} was changed at ${iso(now)}` +
          `${revoked > 0 ? `; ${revoked} other session(s) were signed out` : ''}.\n\n` +
          'If you did not change it, ask an administrator to block your account and reset the password now.\n',
      });
    } catch (e) {
      // The change has committed; a lost notice must not turn it into an error for the caller.
      await this.c.audit.record(this.c.db, userId, 'user.password_change_notice_failed', 'user', userId, {
        error: (e instanceof Error ? e.message : String(e)).slice(0, 200),
      });
    }
  }

  /** Live users, oldest first (never a password hash or TOTP secret). */
  async listUsers(p: PageRequest): Promise<Page<UserView>> {
    const rows = await this.c.db.query<UserRow>(
      'SELECT * FROM users WHERE deleted_at IS NULL ORDER BY created_at, user_id LIMIT $1 OFFSET $2',
      [p.page_size, pageOffset(p)],
    );
    const total =
      (await this.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM users WHERE deleted_at IS NULL'))[0]?.n ??
      0;
    return { data: rows.map(userView), page: p.page, page_size: p.page_size, total };
  }

  /** One live user. @throws ApiError RESOURCE_NOT_FOUND */
  async getUser(id: string): Promise<UserView> {
    return userView(await userById(this.c.db, id));
  }

  /**
   * The networks (IPv4 /24, IPv6 /48) a user has logged in from, oldest first, with first and last
   * login times (ISO 8601 UTC): the memory of the GEO_ANOMALY_DETECTED rule (users/geo-anomaly.ts).
   * @throws ApiError RESOURCE_NOT_FOUND
   */
  async loginNetworks(id: string): Promise<{ network: string; first_seen_at: string; last_seen_at: string }[]> {
    await userById(this.c.db, id);
    return (await listLoginNetworks(this.c.db, id)).map((n) => ({
      network: n.network,
      first_seen_at: iso(n.first_seen_at)!,
      last_seen_at: iso(n.last_seen_at)!,
    }));
  }

  /** @throws ApiError CONFLICT (e-mail taken); VALIDATION_FAILED naming `body.password` (too easy to guess) */
  async createUser(
    actor: string,
    input: { email: string; name: string; role: Role; password: string },
  ): Promise<UserView> {
    this.requireStrong(input.password, input);
    const hash = await hashPassword(input.password, this.c.options.scrypt);
    return this.c.db.tx(async (q) => {
      const u = await insertUser(q, this.c.clock, input.email, input.name, input.role, hash);
      await this.c.audit.record(q, actor, 'user.created', 'user', u.user_id, { email: u.email, role: u.role });
      await emitInstanceEvent(q, this.c.clock, 'USER_CREATED', { user_id: u.user_id, email: u.email, role: u.role });
      return u;
    });
  }

  /**
   * Change role, name, blocked state or password (blocking or a new password revokes the user's
   * sessions); audited, with USER_ROLE_UPDATED / USER_BLOCKED / USER_UNBLOCKED /
   * USER_PASSWORD_RESET_INITIATED to the instance-level webhooks.
   * @throws ApiError RESOURCE_NOT_FOUND; CONFLICT when no active Admin would remain; VALIDATION_FAILED (`body.password`)
   */
  async updateUser(
    actor: string,
    id: string,
    input: { role?: Role; blocked?: boolean; name?: string; password?: string },
  ): Promise<UserView> {
    if (input.password !== undefined) {
      const cur = await userById(this.c.db, id);
      this.requireStrong(input.password, { email: cur.email, name: input.name ?? cur.name });
    }
    const hash = input.password !== undefined ? await hashPassword(input.password, this.c.options.scrypt) : undefined;
    return this.c.db.tx(async (q) => {
      const u = await userById(q, id);
      const demote = input.role !== undefined && input.role !== 'ADMIN' && u.role === 'ADMIN';
      if (demote || (input.blocked === true && u.role === 'ADMIN')) await keepOneAdmin(q, id);
      const now = this.c.clock();
      const next: UserRow = {
        ...u,
        role: input.role ?? u.role,
        name: input.name ?? u.name,
        blocked_at: input.blocked === undefined ? u.blocked_at : input.blocked ? (u.blocked_at ?? now) : null,
        password_hash: hash ?? u.password_hash,
      };
      await q.query('UPDATE users SET role = $2, name = $3, blocked_at = $4, password_hash = $5 WHERE user_id = $1', [
        id,
        next.role,
        next.name,
        next.blocked_at,
        next.password_hash,
      ]);
      if (input.blocked === true || hash !== undefined) {
        await q.query('UPDATE sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL', [id, now]);
      }
      if (input.role !== undefined && input.role !== u.role) {
        await this.c.audit.record(q, actor, 'user.role_updated', 'user', id, { from: u.role, to: input.role });
        await emitInstanceEvent(q, this.c.clock, 'USER_ROLE_UPDATED', {
          user_id: id,
          email: u.email,
          role: input.role,
          previous_role: u.role,
        });
      }
      if (input.blocked !== undefined && input.blocked !== (u.blocked_at !== null)) {
        await this.c.audit.record(q, actor, input.blocked ? 'user.blocked' : 'user.unblocked', 'user', id);
        await emitInstanceEvent(q, this.c.clock, input.blocked ? 'USER_BLOCKED' : 'USER_UNBLOCKED', {
          user_id: id,
          email: u.email,
          role: next.role,
        });
      }
      if (input.name !== undefined && input.name !== u.name)
        await this.c.audit.record(q, actor, 'user.renamed', 'user', id);
      if (hash !== undefined) {
        await this.c.audit.record(q, actor, 'user.password_reset', 'user', id);
        await emitInstanceEvent(q, this.c.clock, 'USER_PASSWORD_RESET_INITIATED', {
          user_id: id,
          email: u.email,
          role: next.role,
        });
      }
      return userView(next);
    });
  }

  /** Delete (soft) a user and revoke its sessions. @throws ApiError RESOURCE_NOT_FOUND; CONFLICT (last active Admin) */
  async deleteUser(actor: string, id: string): Promise<void> {
    await this.c.db.tx(async (q) => {
      const u = await userById(q, id);
      if (u.role === 'ADMIN') await keepOneAdmin(q, id);
      const now = this.c.clock();
      await q.query('UPDATE users SET deleted_at = $2 WHERE user_id = $1', [id, now]);
      await q.query('UPDATE sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL', [id, now]);
      await this.c.audit.record(q, actor, 'user.deleted', 'user', id, { email: u.email });
    });
  }
}
