/**
 * The admin (dashboard) functions of seed §1: instance initialisation, login with password and a
 * second factor, users and roles, API keys, server signers, device enrollment, master key
 * ceremonies, webhook registrations, per-profile directory settings, and the append-only audit
 * log. Every mutating function writes its audit entry in the same transaction as the change.
 */

import { randomUUID } from 'node:crypto';
import { fingerprint as signerFingerprint } from '@custodian/signer';
import { deviceFingerprint, verifyEnrollmentProof } from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { p256 } from '@noble/curves/nist.js';
import * as OTPAuth from 'otpauth';
import { normaliseAllowedCidrs } from '../api/cidrs.js';
import {
  CeremonyAbortedError,
  type CeremonyClient,
  type CeremonyParty,
  type CeremonyProgress,
  DKG_TIMEOUT_MS,
} from '../ceremony.js';
import type { Queryable } from '../db/db.js';
import { deviceNameProblem, lockPeerId, peerIdHolder } from '../devices/binding.js';
import { ApiError } from '../errors.js';
import type { Mailer } from '../mailer.js';
import type { Page, PageRequest, Store } from '../store.js';
import { type Clock, iso, randomToken, sha256Hex } from '../util.js';
import { isInstanceEvent, type WebhookEventType } from '../webhooks/events.js';
import type { GroupService } from '../webhooks/groups.js';
import type { WebhookSigningKeys } from '../webhooks/keys.js';
import { emitEvent, emitInstanceEvent } from '../webhooks/outbox.js';
import type { WebhookService } from '../webhooks/service.js';
import { checkWebhookTarget } from '../webhooks/targets.js';
import { type AdminNetworks, DEFAULT_ADMIN_NETWORKS, inAdminNetworks, parseAdminNetworks } from './networks.js';
import {
  DEFAULT_MIN_PASSWORD_SCORE,
  DEFAULT_SCRYPT,
  hashPassword,
  oneTimeCode,
  passwordUserInputs,
  requireStrongPassword,
  type ScryptParams,
  safeEqual,
  verifyPassword,
} from './passwords.js';

/** Dashboard roles (seed §1 item 2). */
export type Role = 'ADMIN' | 'FINANCE_MANAGER' | 'VIEWER';
export const ROLES: readonly Role[] = ['ADMIN', 'FINANCE_MANAGER', 'VIEWER'];

/** Webhook event types of seed §6 (defined in `webhooks/events.ts`). */
export { WEBHOOK_EVENT_TYPES } from '../webhooks/events.js';

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

/** Settings of the admin service. */
export interface AdminOptions {
  mode: 'development' | 'production';
  /** Session lifetime (ms), counted from login whatever the use. Default 8 h. */
  sessionTtlMs: number;
  /**
   * Idle timeout (ms): a session not used for longer is refused (401 `SESSION_REQUIRED`) and
   * revoked. Use is recorded in `sessions.last_seen_at` at most once a minute, so the timeout is
   * exact to a minute. Default 30 min.
   */
  sessionIdleMs: number;
  /**
   * How long (ms) a step-up (`POST /admin/v1/session/step-up`: the current TOTP code, or the
   * password for a user without TOTP) keeps the session fresh for sensitive actions (factor
   * changes, API keys, webhook changes, user creation, role and password changes). Default 5 min.
   */
  stepUpTtlMs: number;
  /** Login challenge (email code) lifetime (ms). Default 10 min. */
  challengeTtlMs: number;
  /** Wrong codes allowed per challenge. Default 5. */
  maxCodeAttempts: number;
  /** Minimum approved mobile devices among a master key's signers (seed §8). Default 2. */
  minMobileSigners: number;
  scrypt: ScryptParams;
  /** Issuer label of TOTP URIs. */
  totpIssuer: string;
  /** DKG deadline (ms). Default 5 minutes (seed §1 item 4, §8). */
  dkgTimeoutMs: number;
  /**
   * Per-client-address limit of each unauthenticated route (init, login, verify, enrollment),
   * never keyed by a credential header. Default 10 per minute.
   */
  loginRateLimit: { max: number; windowMs: number };
  /**
   * Per-account lockout: after `maxFailures` wrong passwords, second-factor codes or current
   * passwords of a password change for one e-mail address within `windowMs` (since its last
   * successful login), its login, verify and password change answer 429 `RATE_LIMITED` with `Retry-After` from any address until the oldest of those
   * failures leaves the window; every later failure re-arms it. Counted for unknown addresses
   * too, so the lockout does not reveal which users exist. Default 10 per 15 minutes.
   */
  accountLockout: { maxFailures: number; windowMs: number };
  /** Unexpired, unconsumed, unlocked login challenges a user may hold at once. Default 3. */
  maxOpenChallenges: number;
  /** Login code e-mails per user per window. Default 5 per 15 minutes. */
  emailCodes: { max: number; windowMs: number };
  /**
   * The scope of every role: the networks (CIDR ranges or addresses) dashboard users log in from. A
   * login whose client address (`req.ip`) is outside emits ROLE_SCOPE_LOGIN to the instance-level
   * webhooks; inside, nothing. Default {@link DEFAULT_ADMIN_NETWORKS} (loopback, RFC 1918, fc00::/7);
   * env `CUSTODIAN_ADMIN_NETWORKS` (comma-separated) via createCoordinator. Empty: every login is outside.
   * @throws RangeError (at construction) naming `adminNetworks[i]` for an entry that does not parse
   */
  adminNetworks: readonly string[];
  /**
   * Minimum zxcvbn-ts score (integer 0–4) of every password set — instance init, user creation,
   * an Admin's reset, the user's own change (`admin/passwords.ts` `requireStrongPassword`).
   * Default 3. @throws RangeError (at construction) outside 0–4
   */
  passwordMinScore: number;
}

export const DEFAULT_ADMIN_OPTIONS: Omit<AdminOptions, 'mode'> = {
  sessionTtlMs: 8 * 3600_000,
  sessionIdleMs: 30 * 60_000,
  stepUpTtlMs: 5 * 60_000,
  challengeTtlMs: 10 * 60_000,
  maxCodeAttempts: 5,
  minMobileSigners: 2,
  scrypt: DEFAULT_SCRYPT,
  totpIssuer: 'Custodian',
  dkgTimeoutMs: DKG_TIMEOUT_MS,
  loginRateLimit: { max: 10, windowMs: 60_000 },
  accountLockout: { maxFailures: 10, windowMs: 15 * 60_000 },
  maxOpenChallenges: 3,
  emailCodes: { max: 5, windowMs: 15 * 60_000 },
  adminNetworks: DEFAULT_ADMIN_NETWORKS,
  passwordMinScore: DEFAULT_MIN_PASSWORD_SCORE,
};

/** Audit actions counted by the per-account lockout ({@link AdminOptions.accountLockout}). */
const LOCKOUT_ACTIONS = [
  'login.failed',
  'login.second_factor_failed',
  'session.step_up_failed',
  'password_change.failed',
] as const;

/** 429 `RATE_LIMITED` with `Retry-After` in whole seconds (at least 1) until `until`. */
function rateLimited(message: string, until: Date, now: Date): ApiError {
  const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
  return new ApiError('RATE_LIMITED', message, undefined, { 'retry-after': String(seconds) });
}

interface UserRow {
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

function userView(u: UserRow): UserView {
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

const offset = (p: PageRequest) => (p.page - 1) * p.page_size;
const notFound = (what: string) => new ApiError('RESOURCE_NOT_FOUND', `no such ${what}`);

/** Fingerprint of a device identity key (one definition for the whole product: `@custodian/wire`). */
export { deviceFingerprint };

/** Normalise a fingerprint typed by a person: drop spaces and colons, uppercase. */
export function normaliseFingerprint(s: string): string {
  return s.replace(/[\s:]/g, '').toUpperCase();
}

/** Whether a hostname is loopback (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Parse a version string "15.5" / "10" into numbers. */
function versionAtLeast(v: string, min: readonly number[]): boolean {
  const parts = v.split('.').map((x) => Number.parseInt(x, 10));
  for (let i = 0; i < min.length; i++) {
    const a = parts[i] ?? 0;
    const b = min[i]!;
    if (Number.isNaN(a)) return false;
    if (a !== b) return a > b;
  }
  return true;
}

/** The admin service. */
/** A ceremony record as the admin API returns it. */
export interface CeremonyView {
  readonly ceremony_id: string;
  readonly kind: string;
  readonly status: 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT';
  readonly threshold: number;
  readonly parties: unknown;
  readonly progress: unknown;
  readonly started_by: string;
  readonly started_at: string | null;
  readonly deadline: string | null;
  readonly finished_at: string | null;
  readonly error: string | null;
  readonly blamed: string[] | null;
  readonly transcript_hash: string | null;
  readonly master_key_id: string | null;
}

export class AdminService {
  private readonly running = new Map<string, AbortController>();
  /** Webhook queries and redelivery (set by createCoordinator). */
  webhooks!: WebhookService;
  /** Wallet groups and address groups (set by createCoordinator). */
  groups!: GroupService;
  /** Webhook signing keys (set by createCoordinator). */
  signingKeys!: WebhookSigningKeys;
  /**
   * Called after a device's status left APPROVED (removed or rejected) has committed, with the
   * device id and the new status; set by createCoordinator to the device hub's `revokeDevice`
   * (closes the socket, drops the approval queue). Must not throw.
   */
  onDeviceRevoked: ((deviceId: string, status: string) => void) | undefined;
  /** DNS resolution of webhook hosts in production mode (all addresses); injectable for tests. */
  resolveHost: ((host: string) => Promise<string[]>) | undefined;

  /** Emit an instance event (instance-level webhooks only) in the caller's transaction. */
  private emit(q: Queryable, type: WebhookEventType, data: Record<string, unknown>) {
    return emitInstanceEvent(q, this.clock, type, data);
  }

  /** {@link AdminOptions.adminNetworks}, parsed. */
  private readonly adminNetworks: AdminNetworks;

  constructor(
    readonly store: Store,
    readonly mailer: Mailer,
    readonly opts: AdminOptions,
    readonly clock: Clock,
    readonly ceremonyClient: CeremonyClient | undefined,
  ) {
    this.adminNetworks = parseAdminNetworks(opts.adminNetworks);
    const m = opts.passwordMinScore;
    if (!Number.isInteger(m) || m < 0 || m > 4) {
      throw new RangeError(`admin.passwordMinScore: expected an integer 0–4, got ${JSON.stringify(m)}`);
    }
  }

  /** {@link requireStrongPassword} with this instance's minimum score and the user's known words. */
  private requireStrong(password: string, user: { email: string; name: string }, field = 'body.password') {
    requireStrongPassword(password, passwordUserInputs(user.email, user.name), field, this.opts.passwordMinScore);
  }

  private get db() {
    return this.store.db;
  }

  /** Append one audit entry (in the caller's transaction). `details` must not hold secrets. */
  async audit(
    q: Queryable,
    actor: string | null,
    action: string,
    targetType: string | null,
    targetId: string | null,
    details: Record<string, unknown> = {},
  ): Promise<void> {
    await q.query(
      `INSERT INTO audit_log (audit_id, at, actor_user_id, action, target_type, target_id, details)
       VALUES ($1,$2,$3,$4,$5,$6,$7::jsonb)`,
      [randomUUID(), this.clock(), actor, action, targetType, targetId, JSON.stringify(details)],
    );
  }

  /** Audit entries, newest first. */
  async listAudit(p: PageRequest): Promise<Page<Record<string, unknown>>> {
    const rows = await this.db.query<Record<string, unknown> & { at: Date }>(
      `SELECT audit_id, at, actor_user_id, action, target_type, target_id, details FROM audit_log
       ORDER BY seq DESC LIMIT $1 OFFSET $2`,
      [p.page_size, offset(p)],
    );
    const total = (await this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log'))[0]?.n ?? 0;
    return { data: rows.map((r) => ({ ...r, at: iso(r.at) })), page: p.page, page_size: p.page_size, total };
  }

  // ---- instance and login -------------------------------------------------------------------

  /** Whether the instance has been initialised. */
  async initialised(): Promise<boolean> {
    return (await this.db.query('SELECT 1 FROM instance')).length > 0;
  }

  /**
   * Initialise the instance: the first account (role ADMIN) and the first profile. Exactly once:
   * the singleton row of `instance` makes concurrent calls safe (409 ALREADY_INITIALISED).
   * @throws ApiError ALREADY_INITIALISED (409); VALIDATION_FAILED (422) naming `body.password` when it
   *   is too easy to guess (checked only while the instance is not initialised)
   */
  async init(input: { email: string; name: string; password: string; profile_name: string }) {
    if (await this.initialised())
      throw new ApiError('ALREADY_INITIALISED', 'this instance already has its first administrator');
    this.requireStrong(input.password, input);
    const hash = await hashPassword(input.password, this.opts.scrypt);
    return this.db.tx(async (q) => {
      const r = await q.query(
        'INSERT INTO instance (id, initialised_at) VALUES (1, $1) ON CONFLICT DO NOTHING RETURNING 1',
        [this.clock()],
      );
      if (r.length === 0)
        throw new ApiError('ALREADY_INITIALISED', 'this instance already has its first administrator');
      const user = await this.insertUser(q, input.email, input.name, 'ADMIN', hash);
      const profile = await this.store.createProfile(input.profile_name, q);
      await this.audit(q, user.user_id, 'instance.init', 'profile', profile.profile_id, { email: user.email });
      await this.emit(q, 'USER_CREATED', { user_id: user.user_id, email: user.email, role: user.role });
      return { user, profile };
    });
  }

  private async insertUser(q: Queryable, email: string, name: string, role: Role, hash: string): Promise<UserView> {
    const exists = await q.query('SELECT 1 FROM users WHERE lower(email) = lower($1) AND deleted_at IS NULL', [email]);
    if (exists.length > 0) throw new ApiError('CONFLICT', 'a user with this email already exists');
    const id = randomUUID();
    const now = this.clock();
    await q.query(
      'INSERT INTO users (user_id, email, name, role, password_hash, created_at) VALUES ($1,$2,$3,$4,$5,$6)',
      [id, email, name, role, hash, now],
    );
    return { user_id: id, email, name, role, totp_enabled: false, blocked: false, created_at: iso(now)! };
  }

  private async userByEmail(email: string): Promise<UserRow | undefined> {
    return (
      await this.db.query<UserRow>('SELECT * FROM users WHERE lower(email) = lower($1) AND deleted_at IS NULL', [email])
    )[0];
  }

  private async userById(q: Queryable, id: string): Promise<UserRow> {
    const u = (await q.query<UserRow>('SELECT * FROM users WHERE user_id = $1 AND deleted_at IS NULL', [id]))[0];
    if (u === undefined) throw notFound('user');
    return u;
  }

  /**
   * First login step: check the password, then open a second-factor challenge — TOTP when the
   * user enrolled an authenticator, otherwise a 6-digit code sent by email. Unknown user, wrong
   * password and blocked user are the same 401 (a dummy hash is checked so timing is similar).
   * @throws ApiError RATE_LIMITED (429, Retry-After) while the e-mail address is locked out
   *   ({@link AdminOptions.accountLockout}, checked before the password), or — right password —
   *   when the user holds `maxOpenChallenges` open challenges or had `emailCodes.max` code e-mails
   *   in the window
   */
  async login(
    email: string,
    password: string,
  ): Promise<{ challenge_id: string; method: 'email' | 'totp'; expires_at: string }> {
    await this.checkLockout(this.db, email);
    const u = await this.userByEmail(email);
    const ok = await verifyPassword(password, u?.password_hash ?? (await this.dummyHash()));
    if (u === undefined || !ok || u.blocked_at !== null) {
      await this.audit(this.db, u?.user_id ?? null, 'login.failed', 'user', u?.user_id ?? null, { email });
      throw new ApiError('INVALID_CREDENTIALS', 'email or password is wrong, or the account is blocked');
    }
    const id = randomUUID();
    const method = u.totp_secret !== null ? 'totp' : 'email';
    const code = method === 'email' ? oneTimeCode() : undefined;
    const codeHash = code === undefined ? null : sha256Hex(`${id}:${code}`);
    const expires = await this.db.tx(async (q) => {
      // The user row lock serialises concurrent logins of one user, so the caps cannot be raced.
      await q.query('SELECT user_id FROM users WHERE user_id = $1 FOR UPDATE', [u.user_id]);
      const now = this.clock();
      const open = await q.query<{ expires_at: Date }>(
        `SELECT expires_at FROM login_challenges
         WHERE user_id = $1 AND consumed_at IS NULL AND expires_at > $2 AND attempts < $3
         ORDER BY expires_at LIMIT $4`,
        [u.user_id, now, this.opts.maxCodeAttempts, this.opts.maxOpenChallenges],
      );
      if (open.length >= this.opts.maxOpenChallenges) {
        throw rateLimited('too many open login challenges; finish or wait for one', open[0]!.expires_at, now);
      }
      if (method === 'email') {
        const { max, windowMs } = this.opts.emailCodes;
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
      const exp = new Date(now.getTime() + this.opts.challengeTtlMs);
      await q.query(
        `INSERT INTO login_challenges (challenge_id, user_id, method, code_hash, created_at, expires_at)
         VALUES ($1,$2,$3,$4,$5,$6)`,
        [id, u.user_id, method, codeHash, now, exp],
      );
      return exp;
    });
    if (code !== undefined) {
      await this.mailer.send({
        to: u.email,
        subject: 'Your Custodian login code',
        text: `Your Custodian login code is ${code}\n\nIt expires in ${Math.round(this.opts.challengeTtlMs / 60_000)} minutes. If you did not try to log in, change your password.\n`,
      });
    }
    return { challenge_id: id, method, expires_at: iso(expires)! };
  }

  /**
   * Refuse while `email` (case-insensitive) has `accountLockout.maxFailures` failures (wrong
   * password, wrong second-factor code, a wrong password or TOTP code on `session/step-up` or TOTP
   * disable, wrong current password on a password change: {@link LOCKOUT_ACTIONS}) in the window
   * since its last successful login,
   * counted from the audit log — durable, and shared by every coordinator replica.
   * @throws ApiError RATE_LIMITED (429) with Retry-After: when the oldest counted failure leaves the window
   */
  private async checkLockout(q: Queryable, email: string): Promise<void> {
    const { maxFailures, windowMs } = this.opts.accountLockout;
    const now = this.clock();
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

  private dummy: Promise<string> | undefined;
  private dummyHash(): Promise<string> {
    this.dummy ??= hashPassword(randomToken(16), this.opts.scrypt);
    return this.dummy;
  }

  /**
   * Second login step: verify the code of a challenge and open a session. A challenge accepts at
   * most `maxCodeAttempts` wrong codes, expires, and is consumed by a success; wrong codes also
   * count towards the account lockout across challenges. A TOTP code is single-use (see
   * {@link consumeTotp}): a replayed code, or one of a step not later than the last accepted one,
   * counts as a wrong code and gets the same `INVALID_SECOND_FACTOR`. A success from a `clientIp`
   * outside {@link AdminOptions.adminNetworks} emits ROLE_SCOPE_LOGIN (instance-level webhooks).
   * @param clientIp the client address (`req.ip`: the socket peer, or X-Forwarded-For of a trusted proxy)
   * @throws ApiError INVALID_SECOND_FACTOR (401); RATE_LIMITED (429, Retry-After) while the account is locked out
   * @returns the bearer token (shown once; stored as SHA-256) and its expiry
   */
  async verifyLogin(
    challengeId: string,
    code: string,
    clientIp: string,
  ): Promise<{ token: string; expires_at: string; user: UserView }> {
    return this.db
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
        const now = this.clock();
        if (
          c === undefined ||
          c.consumed_at !== null ||
          c.expires_at <= now ||
          c.attempts >= this.opts.maxCodeAttempts
        ) {
          throw new ApiError(
            'INVALID_SECOND_FACTOR',
            'the login challenge is unknown, used, expired or locked; log in again',
          );
        }
        const u = await this.userById(q, c.user_id);
        await this.checkLockout(q, u.email);
        let ok = false;
        if (c.method === 'email')
          ok = c.code_hash !== null && safeEqual(sha256Hex(`${challengeId}:${code}`), c.code_hash);
        else if (u.totp_secret !== null) ok = await this.consumeTotp(q, u.user_id, u.totp_secret, code);
        if (!ok || u.blocked_at !== null) {
          await q.query('UPDATE login_challenges SET attempts = attempts + 1 WHERE challenge_id = $1', [challengeId]);
          await this.audit(q, u.user_id, 'login.second_factor_failed', 'user', u.user_id, {
            method: c.method,
            email: u.email,
          });
          return null;
        }
        await q.query('UPDATE login_challenges SET consumed_at = $2 WHERE challenge_id = $1', [challengeId, now]);
        const token = `css_${randomToken(32)}`;
        const expires = new Date(now.getTime() + this.opts.sessionTtlMs);
        await q.query(
          `INSERT INTO sessions (session_id, user_id, token_hash, created_at, expires_at, last_seen_at)
           VALUES ($1,$2,$3,$4,$5,$4)`,
          [randomUUID(), u.user_id, sha256Hex(token), now, expires],
        );
        await this.audit(q, u.user_id, 'login.succeeded', 'user', u.user_id, { method: c.method, email: u.email });
        if (!inAdminNetworks(clientIp, this.adminNetworks)) {
          await this.emit(q, 'ROLE_SCOPE_LOGIN', {
            user_id: u.user_id,
            email: u.email,
            role: u.role,
            method: c.method,
            ip: clientIp,
          });
        }
        return { token, expires_at: iso(expires)!, user: userView(u) };
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
   * `step_up_until`: end of the session's step-up window, or null.
   */
  async sessionUser(token: string): Promise<SessionUser | null> {
    const now = this.clock();
    const r = (
      await this.db.query<UserRow & { session_id: string; last_seen_at: Date; step_up_until: Date | null }>(
        `SELECT u.*, s.session_id, s.last_seen_at, s.step_up_until FROM sessions s JOIN users u USING (user_id)
         WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2
           AND u.deleted_at IS NULL AND u.blocked_at IS NULL`,
        [sha256Hex(token), now],
      )
    )[0];
    if (r === undefined) return null;
    const idleMs = now.getTime() - r.last_seen_at.getTime();
    if (idleMs > this.opts.sessionIdleMs) {
      await this.db.tx(async (q) => {
        const done = await q.query(
          'UPDATE sessions SET revoked_at = $2 WHERE session_id = $1 AND revoked_at IS NULL RETURNING session_id',
          [r.session_id, now],
        );
        if (done.length === 1) {
          await this.audit(q, r.user_id, 'session.idle_revoked', 'session', r.session_id, {
            idle_seconds: Math.floor(idleMs / 1000),
          });
        }
      });
      return null;
    }
    if (idleMs >= 60_000) {
      await this.db.query('UPDATE sessions SET last_seen_at = $2 WHERE session_id = $1 AND last_seen_at < $2', [
        r.session_id,
        now,
      ]);
    }
    return { ...userView(r), session_id: r.session_id, step_up_until: r.step_up_until };
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
    const u = await this.userById(this.db, userId);
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
    await this.checkLockout(this.db, u.email);
    const passwordOk = method === 'password' ? await verifyPassword(proof.password!, u.password_hash) : false;
    const until = await this.db.tx(async (q) => {
      const ok = method === 'totp' ? await this.consumeTotp(q, userId, u.totp_secret!, proof.code!) : passwordOk;
      if (!ok) {
        await this.audit(q, userId, 'session.step_up_failed', 'user', userId, { method, email: u.email });
        return null;
      }
      const now = this.clock();
      const end = new Date(now.getTime() + this.opts.stepUpTtlMs);
      const r = await q.query(
        'UPDATE sessions SET step_up_until = $2 WHERE session_id = $1 AND revoked_at IS NULL RETURNING session_id',
        [sessionId, end],
      );
      if (r.length === 0) throw new ApiError('SESSION_REQUIRED', 'the session was revoked');
      await this.audit(q, userId, 'session.step_up', 'user', userId, { method, session_id: sessionId });
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

  /**
   * After a second-factor change has committed: tell the user by e-mail (never the secret). A mail
   * failure does not undo the change; it is audited `user.notification_failed`.
   */
  private async notifyFactorChange(u: UserRow, what: 'set up' | 'replaced' | 'removed'): Promise<void> {
    const text =
      `The authenticator app (TOTP) of your Custodian account ${u.email} was ${what} at ${iso(this.clock())}.\n\n` +
      'Your other sessions were signed out. If this was not you, contact your administrator at once: ' +
      'someone may hold your password or a session.\n';
    try {
      await this.mailer.send({ to: u.email, subject: `Your Custodian authenticator was ${what}`, text });
    } catch {
      await this.audit(this.db, u.user_id, 'user.notification_failed', 'user', u.user_id, { kind: 'totp_changed' });
    }
  }

  /** Revoke every live session of a user except `keep` (caller's transaction). */
  private async revokeOtherSessions(q: Queryable, userId: string, keep: string): Promise<number> {
    const r = await q.query(
      `UPDATE sessions SET revoked_at = $3 WHERE user_id = $1 AND session_id <> $2 AND revoked_at IS NULL
       RETURNING session_id`,
      [userId, keep, this.clock()],
    );
    return r.length;
  }

  /**
   * Audit a request refused because its API key's `allowed_cidrs` do not admit the client address
   * (`api_key.address_refused`, details `{ address }`), at most once a minute per key and address
   * so a flood of refused requests does not flood the log. Never throws.
   */
  async auditApiKeyAddressRefused(apiKeyId: string, address: string): Promise<void> {
    const now = this.clock().getTime();
    const k = `${apiKeyId} ${address}`;
    if ((this.refusedAudited.get(k) ?? -Infinity) + 60_000 > now) return;
    this.refusedAudited.set(k, now);
    if (this.refusedAudited.size > 10_000) {
      for (const [key, at] of this.refusedAudited) if (at + 60_000 <= now) this.refusedAudited.delete(key);
    }
    await this.audit(this.db, null, 'api_key.address_refused', 'api_key', apiKeyId, { address }).catch(() => {});
  }

  private readonly refusedAudited = new Map<string, number>();

  /** Revoke one session. */
  async logout(sessionId: string): Promise<void> {
    await this.db.query('UPDATE sessions SET revoked_at = $2 WHERE session_id = $1 AND revoked_at IS NULL', [
      sessionId,
      this.clock(),
    ]);
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
    const u = await this.userById(this.db, userId);
    await this.checkLockout(this.db, u.email);
    if (!(await verifyPassword(current, u.password_hash))) {
      await this.audit(this.db, userId, 'password_change.failed', 'user', userId, { email: u.email });
      throw new ApiError('INVALID_CREDENTIALS', 'the current password is wrong');
    }
    if (next.normalize('NFKC') === current.normalize('NFKC')) {
      throw new ApiError('VALIDATION_FAILED', 'body.new_password: must differ from the current password', [
        { field: 'body.new_password', message: 'must differ from the current password' },
      ]);
    }
    this.requireStrong(next, u, 'body.new_password');
    const hash = await hashPassword(next, this.opts.scrypt);
    const now = this.clock();
    const revoked = await this.db.tx(async (q) => {
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
      await this.audit(q, userId, 'user.password_changed', 'user', userId, { sessions_revoked: s.length });
      return s.length;
    });
    try {
      await this.mailer.send({
        to: u.email,
        subject: 'Your Custodian password was changed',
        text:
          `The password of your Custodian account ${u.email} was changed at ${iso(now)}` +
          `${revoked > 0 ? `; ${revoked} other session(s) were signed out` : ''}.\n\n` +
          'If you did not change it, ask an administrator to block your account and reset the password now.\n',
      });
    } catch (e) {
      // The change has committed; a lost notice must not turn it into an error for the caller.
      await this.audit(this.db, userId, 'user.password_change_notice_failed', 'user', userId, {
        error: (e instanceof Error ? e.message : String(e)).slice(0, 200),
      });
    }
  }

  // ---- TOTP (RFC 6238: SHA-1, 6 digits, 30 s, ±1 step) ------------------------------------------

  private totp(secret: string, email: string) {
    return new OTPAuth.TOTP({
      issuer: this.opts.totpIssuer,
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
  private totpStep(secret: string, code: string): number | null {
    if (!/^[0-9]{6}$/.test(code)) return null;
    const totp = this.totp(secret, '');
    const now = OTPAuth.TOTP.counter({ period: 30, timestamp: this.clock().getTime() });
    let step: number | null = null;
    for (let s = now - 1; s <= now + 1; s++) {
      if (totp.validate({ token: code, timestamp: s * 30_000, window: 0 }) === 0) step = s;
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
  private async consumeTotp(q: Queryable, userId: string, secret: string, code: string): Promise<boolean> {
    const step = this.totpStep(secret, code);
    if (step === null) return false;
    const r = await q.query(
      `UPDATE users SET totp_last_step = $3
       WHERE user_id = $1 AND totp_secret = $2 AND (totp_last_step IS NULL OR totp_last_step < $3)
       RETURNING user_id`,
      [userId, secret, step],
    );
    return r.length === 1;
  }

  /** Start TOTP enrollment: a fresh 160-bit secret (base32) and its `otpauth://` URI, pending confirmation. */
  async totpEnroll(userId: string): Promise<{ secret: string; otpauth_uri: string }> {
    const u = await this.userById(this.db, userId);
    const secret = new OTPAuth.Secret({ size: 20 }).base32;
    await this.db.query('UPDATE users SET totp_pending_secret = $2 WHERE user_id = $1', [userId, secret]);
    return { secret, otpauth_uri: this.totp(secret, u.email).toString() };
  }

  /**
   * Confirm TOTP enrollment with a current code; from then on login asks for TOTP. The code is
   * consumed: it cannot also open a session (RFC 6238 §5.2). A second-factor change: the user's
   * sessions other than `sessionId` are revoked, it is audited (`user.totp_enabled`, or
   * `user.totp_replaced` when it replaces an enabled secret) and mailed to the user. The route
   * requires a fresh step-up.
   * @throws ApiError INVALID_SECOND_FACTOR wrong code; CONFLICT no enrollment started
   */
  async totpConfirm(userId: string, code: string, sessionId: string): Promise<UserView> {
    const { view, before } = await this.db.tx(async (q) => {
      const u = await this.userById(q, userId);
      if (u.totp_pending_secret === null) throw new ApiError('CONFLICT', 'start TOTP enrollment first');
      const step = this.totpStep(u.totp_pending_secret, code);
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
      const revoked = await this.revokeOtherSessions(q, userId, sessionId);
      const replaced = u.totp_secret !== null;
      await this.audit(q, userId, replaced ? 'user.totp_replaced' : 'user.totp_enabled', 'user', userId, {
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
  async totpDisable(userId: string, code: string, sessionId: string): Promise<UserView> {
    const first = await this.userById(this.db, userId);
    if (first.totp_secret === null) throw new ApiError('CONFLICT', 'TOTP is not enabled');
    await this.checkLockout(this.db, first.email);
    const out = await this.db.tx(async (q) => {
      const u = await this.userById(q, userId);
      if (u.totp_secret === null) throw new ApiError('CONFLICT', 'TOTP is not enabled');
      // The code is consumed like a login code (a replayed one is refused), then the secret and its
      // last step go together.
      if (!(await this.consumeTotp(q, userId, u.totp_secret, code))) {
        await this.audit(q, userId, 'session.step_up_failed', 'user', userId, { method: 'totp', email: u.email });
        return null;
      }
      await q.query('UPDATE users SET totp_secret = NULL, totp_last_step = NULL WHERE user_id = $1', [userId]);
      const revoked = await this.revokeOtherSessions(q, userId, sessionId);
      await this.audit(q, userId, 'user.totp_disabled', 'user', userId, { sessions_revoked: revoked });
      return u;
    });
    // The failure is committed before the 401 is raised.
    if (out === null) throw new ApiError('INVALID_SECOND_FACTOR', 'the authenticator code is wrong');
    await this.notifyFactorChange(out, 'removed');
    return userView({ ...out, totp_secret: null });
  }

  // ---- users --------------------------------------------------------------------------------

  async listUsers(p: PageRequest): Promise<Page<UserView>> {
    const rows = await this.db.query<UserRow>(
      'SELECT * FROM users WHERE deleted_at IS NULL ORDER BY created_at, user_id LIMIT $1 OFFSET $2',
      [p.page_size, offset(p)],
    );
    const total =
      (await this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM users WHERE deleted_at IS NULL'))[0]?.n ?? 0;
    return { data: rows.map(userView), page: p.page, page_size: p.page_size, total };
  }

  async getUser(id: string): Promise<UserView> {
    return userView(await this.userById(this.db, id));
  }

  /** @throws ApiError CONFLICT (e-mail taken); VALIDATION_FAILED naming `body.password` (too easy to guess) */
  async createUser(
    actor: string,
    input: { email: string; name: string; role: Role; password: string },
  ): Promise<UserView> {
    this.requireStrong(input.password, input);
    const hash = await hashPassword(input.password, this.opts.scrypt);
    return this.db.tx(async (q) => {
      const u = await this.insertUser(q, input.email, input.name, input.role, hash);
      await this.audit(q, actor, 'user.created', 'user', u.user_id, { email: u.email, role: u.role });
      await this.emit(q, 'USER_CREATED', { user_id: u.user_id, email: u.email, role: u.role });
      return u;
    });
  }

  /** Fail with 409 when the change would leave no active ADMIN. Caller holds the tx. */
  private async keepOneAdmin(q: Queryable, excluding: string) {
    await q.query('SELECT user_id FROM users WHERE role = $1 FOR UPDATE', ['ADMIN']);
    const r = await q.query(
      `SELECT 1 FROM users WHERE role = 'ADMIN' AND deleted_at IS NULL AND blocked_at IS NULL AND user_id <> $1`,
      [excluding],
    );
    if (r.length === 0) throw new ApiError('CONFLICT', 'the instance must keep at least one active Admin');
  }

  async updateUser(
    actor: string,
    id: string,
    input: { role?: Role; blocked?: boolean; name?: string; password?: string },
  ): Promise<UserView> {
    if (input.password !== undefined) {
      const cur = await this.userById(this.db, id);
      this.requireStrong(input.password, { email: cur.email, name: input.name ?? cur.name });
    }
    const hash = input.password !== undefined ? await hashPassword(input.password, this.opts.scrypt) : undefined;
    return this.db.tx(async (q) => {
      const u = await this.userById(q, id);
      const demote = input.role !== undefined && input.role !== 'ADMIN' && u.role === 'ADMIN';
      if (demote || (input.blocked === true && u.role === 'ADMIN')) await this.keepOneAdmin(q, id);
      const now = this.clock();
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
        await this.audit(q, actor, 'user.role_updated', 'user', id, { from: u.role, to: input.role });
        await this.emit(q, 'USER_ROLE_UPDATED', {
          user_id: id,
          email: u.email,
          role: input.role,
          previous_role: u.role,
        });
      }
      if (input.blocked !== undefined && input.blocked !== (u.blocked_at !== null)) {
        await this.audit(q, actor, input.blocked ? 'user.blocked' : 'user.unblocked', 'user', id);
        await this.emit(q, input.blocked ? 'USER_BLOCKED' : 'USER_UNBLOCKED', {
          user_id: id,
          email: u.email,
          role: next.role,
        });
      }
      if (input.name !== undefined && input.name !== u.name) await this.audit(q, actor, 'user.renamed', 'user', id);
      if (hash !== undefined) {
        await this.audit(q, actor, 'user.password_reset', 'user', id);
        await this.emit(q, 'USER_PASSWORD_RESET_INITIATED', { user_id: id, email: u.email, role: next.role });
      }
      return userView(next);
    });
  }

  async deleteUser(actor: string, id: string): Promise<void> {
    await this.db.tx(async (q) => {
      const u = await this.userById(q, id);
      if (u.role === 'ADMIN') await this.keepOneAdmin(q, id);
      const now = this.clock();
      await q.query('UPDATE users SET deleted_at = $2 WHERE user_id = $1', [id, now]);
      await q.query('UPDATE sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL', [id, now]);
      await this.audit(q, actor, 'user.deleted', 'user', id, { email: u.email });
    });
  }

  // ---- profiles and directory settings -------------------------------------------------------

  async createProfile(actor: string, name: string) {
    return this.db.tx(async (q) => {
      const p = await this.store.createProfile(name, q);
      await this.audit(q, actor, 'profile.created', 'profile', p.profile_id, { name });
      return p;
    });
  }

  private async requireProfile(q: Queryable, id: string) {
    if ((await q.query('SELECT 1 FROM profiles WHERE profile_id = $1', [id])).length === 0) throw notFound('profile');
  }

  async setDirectoryEntry(
    actor: string,
    profileId: string,
    kind: 'blockchain' | 'asset',
    id: string,
    enabled: boolean,
  ) {
    await this.db.tx(async (q) => {
      await this.requireProfile(q, profileId);
      if (kind === 'blockchain') await this.store.setBlockchainEnabled(profileId, id, enabled, q);
      else await this.store.setAssetEnabled(profileId, id, enabled, q);
      await this.audit(q, actor, `profile.${kind}_${enabled ? 'enabled' : 'disabled'}`, kind, id, {
        profile_id: profileId,
      });
    });
  }

  // ---- API keys -----------------------------------------------------------------------------

  async listApiKeys(profileId: string | undefined, p: PageRequest) {
    const where = profileId === undefined ? '' : 'WHERE profile_id = $3';
    const params: unknown[] = [p.page_size, offset(p)];
    if (profileId !== undefined) params.push(profileId);
    const rows = await this.db.query<Record<string, unknown>>(
      `SELECT api_key_id, profile_id, name, key_prefix, allowed_cidrs, created_by, created_at, revoked_at, last_used_at
       FROM api_keys ${where} ORDER BY created_at, api_key_id LIMIT $1 OFFSET $2`,
      params,
    );
    const total =
      (
        await this.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM api_keys ${profileId === undefined ? '' : 'WHERE profile_id = $1'}`,
          profileId === undefined ? [] : [profileId],
        )
      )[0]?.n ?? 0;
    const data = rows.map((r) => ({
      ...r,
      created_at: iso(r.created_at as Date),
      revoked_at: iso(r.revoked_at as Date | null),
      last_used_at: iso(r.last_used_at as Date | null),
    }));
    return { data, page: p.page, page_size: p.page_size, total };
  }

  /**
   * Create an API key; the secret is in the result only (shown once). `allowedCidrs`: IPv4/IPv6
   * ranges or addresses the key may be used from (validated and normalised by
   * `normaliseAllowedCidrs`, e.g. `['10.0.0.0/8']`); omitted or null: any address.
   * @throws ApiError RESOURCE_NOT_FOUND (profile); VALIDATION_FAILED naming `body.allowed_cidrs[i]`
   */
  async createApiKey(actor: string, profileId: string, name: string, allowedCidrs?: readonly string[] | null) {
    const cidrs =
      allowedCidrs === undefined || allowedCidrs === null
        ? null
        : normaliseAllowedCidrs(allowedCidrs, 'body.allowed_cidrs');
    return this.db.tx(async (q) => {
      await this.requireProfile(q, profileId);
      const k = await this.store.createApiKey(profileId, name, actor, q, cidrs);
      await this.audit(q, actor, 'api_key.created', 'api_key', k.api_key_id, {
        profile_id: profileId,
        name,
        allowed_cidrs: cidrs,
      });
      return k;
    });
  }

  async revokeApiKey(actor: string, id: string): Promise<void> {
    await this.db.tx(async (q) => {
      const r = await q.query<{ revoked_at: Date | null }>(
        'SELECT revoked_at FROM api_keys WHERE api_key_id = $1 FOR UPDATE',
        [id],
      );
      if (r[0] === undefined) throw notFound('API key');
      if (r[0].revoked_at !== null) return;
      await q.query('UPDATE api_keys SET revoked_at = $2 WHERE api_key_id = $1', [id, this.clock()]);
      await this.audit(q, actor, 'api_key.revoked', 'api_key', id);
    });
  }

  // ---- server signers -----------------------------------------------------------------------

  async listServerSigners() {
    const rows = await this.db.query<Record<string, unknown> & { created_at: Date }>(
      `SELECT signer_id, name, peer_id, address, fingerprint, created_at FROM server_signers
       WHERE removed_at IS NULL ORDER BY created_at, signer_id`,
    );
    return rows.map((r) => ({ ...r, created_at: iso(r.created_at) }));
  }

  /**
   * Register a server signer. The fingerprint the operator compared out of band must be the one of
   * the peer id's Ed25519 identity key (`custodian signer init` prints both; `fingerprint` of
   * @custodian/signer identity.ts); spaces, colons and case are ignored, and it is stored as the
   * signer prints it.
   * @throws ApiError VALIDATION_FAILED (`body.peer_id` not an Ed25519 peer id, `body.fingerprint`
   *   not the peer id's), CONFLICT (peer id already registered, or given to a device at enrollment —
   *   any device, whatever its status: one peer id names one party)
   */
  async addServerSigner(actor: string, input: { name: string; peer_id: string; address: string; fingerprint: string }) {
    let key: Uint8Array | undefined;
    try {
      const pid = peerIdFromString(input.peer_id);
      if (pid.type === 'Ed25519') key = pid.publicKey.raw;
    } catch {
      key = undefined;
    }
    if (key === undefined) {
      throw new ApiError('VALIDATION_FAILED', 'body.peer_id: not an Ed25519 libp2p peer id', [
        { field: 'body.peer_id', message: 'not an Ed25519 libp2p peer id' },
      ]);
    }
    const expected = signerFingerprint(key);
    if (normaliseFingerprint(input.fingerprint) !== normaliseFingerprint(expected)) {
      throw new ApiError('VALIDATION_FAILED', "the fingerprint is not the peer id's identity key; do not register", [
        { field: 'body.fingerprint', message: "does not match the peer id's identity key" },
      ]);
    }
    input = { ...input, fingerprint: expected };
    return this.db.tx(async (q) => {
      await lockPeerId(q, input.peer_id);
      const dup = await q.query('SELECT 1 FROM server_signers WHERE peer_id = $1 AND removed_at IS NULL', [
        input.peer_id,
      ]);
      if (dup.length > 0) throw new ApiError('CONFLICT', 'a server signer with this peer id is already registered');
      const device = await q.query('SELECT 1 FROM devices WHERE mpc_peer_id = $1 LIMIT 1', [input.peer_id]);
      if (device.length > 0) throw new ApiError('CONFLICT', 'this peer id is a mobile device’s MPC peer id');
      const id = randomUUID();
      const now = this.clock();
      await q.query(
        'INSERT INTO server_signers (signer_id, name, peer_id, address, fingerprint, created_at) VALUES ($1,$2,$3,$4,$5,$6)',
        [id, input.name, input.peer_id, input.address, input.fingerprint, now],
      );
      await this.audit(q, actor, 'server_signer.added', 'server_signer', id, { peer_id: input.peer_id });
      await this.emit(q, 'SERVER_CREATED', { signer_id: id, name: input.name, peer_id: input.peer_id });
      return { signer_id: id, ...input, created_at: iso(now) };
    });
  }

  async removeServerSigner(actor: string, id: string): Promise<void> {
    await this.db.tx(async (q) => {
      const r = await q.query<{ name: string; peer_id: string }>(
        'UPDATE server_signers SET removed_at = $2 WHERE signer_id = $1 AND removed_at IS NULL RETURNING name, peer_id',
        [id, this.clock()],
      );
      if (r[0] === undefined) throw notFound('server signer');
      await this.audit(q, actor, 'server_signer.removed', 'server_signer', id);
      await this.emit(q, 'SERVER_DELETED', { signer_id: id, name: r[0].name, peer_id: r[0].peer_id });
    });
  }

  // ---- devices ------------------------------------------------------------------------------

  /**
   * A mobile app's enrollment request (unauthenticated: the app knows only the instance URL).
   * The device identity key is P-256 (SEC1, 33 or 65 bytes, hex); requirements of seed §1 item 3:
   * iOS ≥ 15.5 or Android ≥ 10 (API 29) with hardware-backed key storage. The device's MPC peer id
   * (Ed25519 libp2p peer id, its party id in ceremonies) comes with `mpc_peer_proof`, the peer key's
   * Ed25519 signature over `deviceEnrollmentDigest(public_key, mpc_peer_id)` (@custodian/wire), and
   * is pinned in the device record: the device hub accepts no other id in this device's hello.
   * The name must pass {@link deviceNameProblem} (printable, 1–64 characters).
   * @throws ApiError VALIDATION_FAILED naming the field (`body.name`, `body.public_key`,
   *   `body.mpc_peer_id`, `body.mpc_peer_proof`, …); CONFLICT when the device key has a live
   *   enrollment, or the peer id is a server signer's (registered now or ever) or another live device's
   */
  async requestEnrollment(input: {
    name: string;
    platform: 'ios' | 'android';
    os_version: string;
    hardware_backed_keystore: boolean;
    public_key: string;
    mpc_peer_id: string;
    mpc_peer_proof: string;
  }) {
    const nameProblem = deviceNameProblem(input.name);
    if (nameProblem !== undefined) {
      throw new ApiError('VALIDATION_FAILED', `name: ${nameProblem}`, [{ field: 'body.name', message: nameProblem }]);
    }
    let key: Uint8Array;
    try {
      key = p256.Point.fromHex(input.public_key).toBytes(true);
    } catch {
      throw new ApiError('VALIDATION_FAILED', 'public_key is not a valid P-256 public key', [
        { field: 'body.public_key', message: 'must be a SEC1-encoded P-256 point in hex' },
      ]);
    }
    const min = input.platform === 'ios' ? [15, 5] : [10];
    if (!versionAtLeast(input.os_version, min)) {
      throw new ApiError('VALIDATION_FAILED', `${input.platform} ${min.join('.')} or later is required`, [
        { field: 'body.os_version', message: `must be at least ${min.join('.')}` },
      ]);
    }
    if (!input.hardware_backed_keystore) {
      throw new ApiError('VALIDATION_FAILED', 'hardware-backed key storage is required', [
        { field: 'body.hardware_backed_keystore', message: 'must be true' },
      ]);
    }
    let peerKey: Uint8Array | undefined;
    try {
      const pid = peerIdFromString(input.mpc_peer_id);
      if (pid.type === 'Ed25519') peerKey = pid.publicKey.raw;
    } catch {
      peerKey = undefined;
    }
    if (peerKey === undefined) {
      throw new ApiError('VALIDATION_FAILED', 'mpc_peer_id: not an Ed25519 libp2p peer id', [
        { field: 'body.mpc_peer_id', message: 'not an Ed25519 libp2p peer id' },
      ]);
    }
    if (!verifyEnrollmentProof(input.mpc_peer_proof, key, input.mpc_peer_id, peerKey)) {
      throw new ApiError('VALIDATION_FAILED', 'mpc_peer_proof: not the peer key’s signature over this enrollment', [
        {
          field: 'body.mpc_peer_proof',
          message: 'Ed25519 signature by the mpc_peer_id key over deviceEnrollmentDigest(public_key, mpc_peer_id)',
        },
      ]);
    }
    const pub = Buffer.from(key).toString('hex');
    const fingerprint = deviceFingerprint(key);
    return this.db.tx(async (q) => {
      await lockPeerId(q, input.mpc_peer_id);
      const dup = await q.query(`SELECT 1 FROM devices WHERE public_key = $1 AND status IN ('PENDING','APPROVED')`, [
        pub,
      ]);
      if (dup.length > 0) throw new ApiError('CONFLICT', 'this device key already has an enrollment');
      const holder = await peerIdHolder(q, input.mpc_peer_id);
      if (holder !== undefined) throw new ApiError('CONFLICT', `this MPC peer id belongs to a ${holder}`);
      const id = randomUUID();
      const now = this.clock();
      await q.query(
        `INSERT INTO devices (device_id, name, platform, os_version, public_key, fingerprint, status, created_at, mpc_peer_id)
         VALUES ($1,$2,$3,$4,$5,$6,'PENDING',$7,$8)`,
        [id, input.name, input.platform, input.os_version, pub, fingerprint, now, input.mpc_peer_id],
      );
      await this.audit(q, null, 'device.enrollment_requested', 'device', id, {
        fingerprint,
        mpc_peer_id: input.mpc_peer_id,
      });
      await this.emit(q, 'DEVICE_CREATED', {
        device_id: id,
        name: input.name,
        platform: input.platform,
        status: 'PENDING',
        fingerprint,
      });
      return {
        device_id: id,
        status: 'PENDING' as const,
        fingerprint,
        mpc_peer_id: input.mpc_peer_id,
        created_at: iso(now),
      };
    });
  }

  async getDevice(id: string) {
    const r = (
      await this.db.query<
        { device_id: string; status: string; fingerprint: string; created_at: Date; decided_at: Date | null } & Record<
          string,
          unknown
        >
      >(
        `SELECT device_id, name, platform, os_version, public_key, fingerprint, mpc_peer_id, user_id, status, created_at,
                decided_at, decided_by
         FROM devices WHERE device_id = $1`,
        [id],
      )
    )[0];
    if (r === undefined) throw notFound('device');
    return { ...r, created_at: iso(r.created_at), decided_at: iso(r.decided_at) };
  }

  async listDevices(status?: string) {
    const rows = await this.db.query<{ device_id: string }>(
      `SELECT device_id FROM devices ${status ? 'WHERE status = $1' : ''} ORDER BY created_at, device_id`,
      status ? [status] : [],
    );
    return Promise.all(rows.map((r) => this.getDevice(r.device_id)));
  }

  /**
   * Approve a PENDING device after the administrator compared the fingerprint shown on the phone
   * (out of band) with the one typed here; a mismatch is a 422 and the device stays PENDING. The
   * approval binds the device to `userId`, the dashboard user who holds the phone (it must exist,
   * not be deleted nor blocked): only devices bound to an Admin sign that Admin's policy versions.
   * Reject (a PENDING device) and remove (any) commit the new status, then call
   * {@link AdminService.onDeviceRevoked} so the device hub closes its socket and drops its queue.
   * @throws ApiError RESOURCE_NOT_FOUND; VALIDATION_FAILED (`body.fingerprint`, `body.user_id`);
   *   CONFLICT (not PENDING; enrolled before MPC peer ids were bound — it must enrol again)
   */
  async decideDevice(
    actor: string,
    id: string,
    decision: 'approve' | 'reject' | 'remove',
    fingerprint?: string,
    userId?: string,
  ) {
    const out = await this.db.tx(async (q) => {
      const d = (
        await q.query<{
          status: string;
          fingerprint: string;
          name: string;
          platform: string;
          mpc_peer_id: string | null;
        }>('SELECT status, fingerprint, name, platform, mpc_peer_id FROM devices WHERE device_id = $1 FOR UPDATE', [id])
      )[0];
      if (d === undefined) throw notFound('device');
      let next: string;
      if (decision === 'remove') {
        if (d.status === 'REMOVED') throw new ApiError('CONFLICT', 'the device is already removed');
        next = 'REMOVED';
      } else {
        if (d.status !== 'PENDING') throw new ApiError('CONFLICT', `the device is ${d.status}, not PENDING`);
        if (decision === 'approve') {
          if (fingerprint === undefined || normaliseFingerprint(fingerprint) !== normaliseFingerprint(d.fingerprint)) {
            throw new ApiError('VALIDATION_FAILED', 'the fingerprint does not match the device key; do not approve', [
              { field: 'body.fingerprint', message: 'does not match the enrolled device key' },
            ]);
          }
          if (d.mpc_peer_id === null) {
            throw new ApiError('CONFLICT', 'the device was enrolled without an MPC peer id; it must enrol again');
          }
          const u = (
            await q.query<{ blocked_at: Date | null }>(
              'SELECT blocked_at FROM users WHERE user_id = $1 AND deleted_at IS NULL',
              [userId ?? null],
            )
          )[0];
          if (u === undefined || u.blocked_at !== null) {
            throw new ApiError('VALIDATION_FAILED', 'user_id: the device must belong to an existing, unblocked user', [
              { field: 'body.user_id', message: u === undefined ? 'no such user' : 'the user is blocked' },
            ]);
          }
          next = 'APPROVED';
        } else next = 'REJECTED';
      }
      if (next === 'APPROVED') {
        await q.query(
          'UPDATE devices SET status = $2, decided_at = $3, decided_by = $4, user_id = $5 WHERE device_id = $1',
          [id, next, this.clock(), actor, userId],
        );
      } else {
        await q.query('UPDATE devices SET status = $2, decided_at = $3, decided_by = $4 WHERE device_id = $1', [
          id,
          next,
          this.clock(),
          actor,
        ]);
      }
      await this.audit(
        q,
        actor,
        `device.${decision === 'approve' ? 'approved' : decision === 'reject' ? 'rejected' : 'removed'}`,
        'device',
        id,
        next === 'APPROVED' ? { user_id: userId, mpc_peer_id: d.mpc_peer_id } : {},
      );
      const data = {
        device_id: id,
        name: d.name,
        platform: d.platform,
        status: next,
        previous_status: d.status,
        fingerprint: d.fingerprint,
      };
      if (decision === 'remove') await this.emit(q, 'DEVICE_REMOVED', data);
      else await this.emit(q, 'DEVICE_STATUS_CHANGED', data);
      if (next === 'APPROVED') await this.emit(q, 'CERTIFICATE_READY', data);
      return next === 'APPROVED' ? { device_id: id, status: next, user_id: userId } : { device_id: id, status: next };
    });
    // after the commit: the device hub closes the socket and drops the queue at once
    if (out.status !== 'APPROVED') this.onDeviceRevoked?.(out.device_id, out.status);
    return out;
  }

  /**
   * Pin the MPC peer id of an APPROVED device enrolled before peer ids were bound (migration 6) at
   * its first authenticated hello (trust on first use; audited as `device.mpc_peer_pinned`). Refused
   * when the device already has one, is not APPROVED, or the id is a server signer's (now or ever)
   * or another live device's.
   * @returns true when `peerId` is now the device's pinned id
   */
  async pinLegacyPeerId(deviceId: string, peerId: string): Promise<boolean> {
    return this.db.tx(async (q) => {
      await lockPeerId(q, peerId);
      if ((await peerIdHolder(q, peerId, deviceId)) !== undefined) return false;
      const r = await q.query(
        `UPDATE devices SET mpc_peer_id = $2
         WHERE device_id = $1 AND mpc_peer_id IS NULL AND status = 'APPROVED' RETURNING 1`,
        [deviceId, peerId],
      );
      if (r.length === 0) return false;
      await this.audit(q, null, 'device.mpc_peer_pinned', 'device', deviceId, { mpc_peer_id: peerId });
      return true;
    });
  }

  // ---- master keys and ceremonies -------------------------------------------------------------

  async listCeremonies() {
    const rows = await this.db.query<{ ceremony_id: string }>(
      'SELECT ceremony_id FROM ceremonies ORDER BY started_at DESC',
    );
    return Promise.all(rows.map((r) => this.getCeremony(r.ceremony_id)));
  }

  async getCeremony(id: string): Promise<CeremonyView> {
    const r = (
      await this.db.query<
        Omit<CeremonyView, 'started_at' | 'deadline' | 'finished_at'> & {
          started_at: Date;
          deadline: Date;
          finished_at: Date | null;
        }
      >(
        `SELECT ceremony_id, kind, status, threshold, parties, progress, started_by, started_at, deadline, finished_at,
                error, blamed, transcript_hash, master_key_id FROM ceremonies WHERE ceremony_id = $1`,
        [id],
      )
    )[0];
    if (r === undefined) throw notFound('ceremony');
    return { ...r, started_at: iso(r.started_at), deadline: iso(r.deadline), finished_at: iso(r.finished_at) };
  }

  /**
   * Start the master key ceremony (k of n) among exactly the selected signers (seed §1 item 4):
   * server signers by `signer_id` and APPROVED devices by `device_id`, at least
   * `minMobileSigners` devices, 2 ≤ k ≤ n. Runs in the background with the 5-minute deadline;
   * poll {@link getCeremony} for progress and outcome. One master key per instance.
   * @throws ApiError SIGNERS_UNAVAILABLE (503) without a ceremony client; VALIDATION_FAILED (422);
   *   CONFLICT (409) when a master key exists or a ceremony is running
   */
  async startDkg(actor: string, input: { threshold: number; signers: { kind: 'server' | 'device'; id: string }[] }) {
    const n = input.signers.length;
    if (input.threshold < 2 || input.threshold > n) {
      throw new ApiError('VALIDATION_FAILED', `threshold must be in [2, n] (n = ${n})`, [
        { field: 'body.threshold', message: `must be between 2 and the number of signers (${n})` },
      ]);
    }
    const ids = input.signers.map((s) => `${s.kind}:${s.id.toLowerCase()}`);
    if (new Set(ids).size !== n) {
      throw new ApiError('VALIDATION_FAILED', 'a signer is selected twice', [
        { field: 'body.signers', message: 'duplicate signer' },
      ]);
    }
    const client = this.ceremonyClient;
    if (client === undefined) {
      throw new ApiError('SIGNERS_UNAVAILABLE', 'this coordinator has no signer control channel configured');
    }
    const now = this.clock();
    const deadline = new Date(now.getTime() + this.opts.dkgTimeoutMs);
    const ceremonyId = randomUUID();
    const parties = await this.db.tx(async (q) => {
      await q.query('LOCK TABLE ceremonies IN EXCLUSIVE MODE');
      if ((await q.query('SELECT 1 FROM master_keys')).length > 0) {
        throw new ApiError('CONFLICT', 'this instance already has a master key');
      }
      if ((await q.query(`SELECT 1 FROM ceremonies WHERE kind = 'dkg' AND status = 'RUNNING'`)).length > 0) {
        throw new ApiError('CONFLICT', 'a master key ceremony is already running');
      }
      const parties: CeremonyParty[] = [];
      for (const [i, s] of input.signers.entries()) {
        const field = `body.signers[${i}].id`;
        if (s.kind === 'server') {
          const r = (
            await q.query<{ peer_id: string; address: string }>(
              'SELECT peer_id, address FROM server_signers WHERE signer_id = $1 AND removed_at IS NULL',
              [s.id],
            )
          )[0];
          if (r === undefined)
            throw new ApiError('VALIDATION_FAILED', `unknown server signer ${s.id}`, [
              { field, message: 'unknown server signer' },
            ]);
          parties.push({ kind: 'server', id: s.id.toLowerCase(), peer: r.peer_id, address: r.address });
        } else {
          const r = (
            await q.query<{ fingerprint: string }>(
              `SELECT fingerprint FROM devices WHERE device_id = $1 AND status = 'APPROVED'`,
              [s.id],
            )
          )[0];
          if (r === undefined)
            throw new ApiError('VALIDATION_FAILED', `device ${s.id} is not an approved device`, [
              { field, message: 'not an approved device' },
            ]);
          parties.push({ kind: 'device', id: s.id.toLowerCase(), peer: r.fingerprint, address: null });
        }
      }
      const devices = parties.filter((p) => p.kind === 'device').length;
      if (devices < this.opts.minMobileSigners) {
        throw new ApiError(
          'VALIDATION_FAILED',
          `at least ${this.opts.minMobileSigners} mobile signers must take part`,
          [{ field: 'body.signers', message: `select at least ${this.opts.minMobileSigners} approved devices` }],
        );
      }
      const progress: CeremonyProgress = { phase: 'CONNECTING', parties_ready: 0, parties_total: n };
      await q.query(
        `INSERT INTO ceremonies (ceremony_id, kind, status, threshold, parties, progress, started_by, started_at, deadline)
         VALUES ($1,'dkg','RUNNING',$2,$3::jsonb,$4::jsonb,$5,$6,$7)`,
        [ceremonyId, input.threshold, JSON.stringify(parties), JSON.stringify(progress), actor, now, deadline],
      );
      await this.audit(q, actor, 'master_key.ceremony_started', 'ceremony', ceremonyId, {
        threshold: input.threshold,
        n,
      });
      return parties;
    });
    this.runDkg(client, actor, ceremonyId, input.threshold, parties, deadline);
    return this.getCeremony(ceremonyId);
  }

  private runDkg(
    client: CeremonyClient,
    actor: string,
    id: string,
    threshold: number,
    parties: CeremonyParty[],
    deadline: Date,
  ) {
    const ac = new AbortController();
    this.running.set(id, ac);
    let deadlineHit = false;
    const timer = setTimeout(
      () => {
        deadlineHit = true;
        ac.abort(new Error('ceremony deadline reached'));
      },
      Math.max(0, deadline.getTime() - this.clock().getTime()),
    );
    let progressChain = Promise.resolve();
    const onProgress = (p: CeremonyProgress) => {
      if (ac.signal.aborted) return;
      progressChain = progressChain
        .then(() =>
          this.db.query(`UPDATE ceremonies SET progress = $2::jsonb WHERE ceremony_id = $1 AND status = 'RUNNING'`, [
            id,
            JSON.stringify(p),
          ]),
        )
        .then(
          () => undefined,
          () => undefined,
        );
    };
    const finish = async (fn: (q: Queryable) => Promise<void>) => {
      clearTimeout(timer);
      this.running.delete(id);
      await progressChain;
      await this.db.tx(fn);
    };
    const settle = async () => {
      try {
        const out = await Promise.race([
          client.runDkg({ ceremonyId: id, threshold, parties, deadline, signal: ac.signal, onProgress }),
          new Promise<never>((_, reject) =>
            ac.signal.addEventListener('abort', () => reject(ac.signal.reason), { once: true }),
          ),
        ]);
        await finish(async (q) => {
          const mk = await this.store.insertMasterKey(
            { ceremonyId: id, threshold, parties, secp256k1: out.secp256k1, ed25519: out.ed25519 },
            q,
          );
          await q.query(
            `UPDATE ceremonies SET status = 'SUCCEEDED', finished_at = $2, transcript_hash = $3, master_key_id = $4 WHERE ceremony_id = $1`,
            [id, this.clock(), out.transcriptHash, mk.master_key_id],
          );
          await this.audit(q, actor, 'master_key.created', 'master_key', mk.master_key_id, { ceremony_id: id });
        });
      } catch (e) {
        const timedOut = deadlineHit;
        const blamed = e instanceof CeremonyAbortedError ? e.culprits : null;
        const message = timedOut
          ? `the ceremony did not complete within ${Math.round(this.opts.dkgTimeoutMs / 1000)} s`
          : e instanceof Error
            ? e.message.slice(0, 500)
            : 'failed';
        if (!ac.signal.aborted) ac.abort(e);
        await finish(async (q) => {
          await q.query(
            `UPDATE ceremonies SET status = $2, finished_at = $3, error = $4, blamed = $5::jsonb WHERE ceremony_id = $1`,
            [id, timedOut ? 'TIMED_OUT' : 'FAILED', this.clock(), message, JSON.stringify(blamed)],
          );
          await this.audit(
            q,
            actor,
            timedOut ? 'master_key.ceremony_timed_out' : 'master_key.ceremony_failed',
            'ceremony',
            id,
            {
              blamed,
            },
          );
        }).catch(() => {});
      }
    };
    const p = settle().catch(() => {});
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  private readonly pending = new Set<Promise<void>>();

  /** Abort running ceremonies and wait for their records to be written (shutdown). */
  async shutdown(): Promise<void> {
    for (const ac of this.running.values()) ac.abort(new Error('coordinator shutting down'));
    await Promise.allSettled([...this.pending]);
  }

  /** Mark ceremonies left RUNNING by a previous process as FAILED (called at start). */
  async recoverCeremonies(): Promise<void> {
    await this.db.query(
      `UPDATE ceremonies SET status = 'FAILED', finished_at = $1, error = 'the coordinator restarted during the ceremony'
       WHERE status = 'RUNNING'`,
      [this.clock()],
    );
  }

  // ---- webhooks -----------------------------------------------------------------------------

  /**
   * Check a webhook URL: HTTPS; plain HTTP only to a loopback host and only in development mode.
   * @throws ApiError VALIDATION_FAILED naming `body.url`
   */
  checkWebhookUrl(raw: string): string {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw new ApiError('VALIDATION_FAILED', 'url is not an absolute URL', [
        { field: 'body.url', message: 'must be an absolute URL' },
      ]);
    }
    const okHttp = u.protocol === 'http:' && this.opts.mode === 'development' && isLoopbackHost(u.hostname);
    if (u.protocol !== 'https:' && !okHttp) {
      throw new ApiError(
        'VALIDATION_FAILED',
        'webhook URLs must use HTTPS (plain HTTP only to loopback in development mode)',
        [{ field: 'body.url', message: 'must be https://' }],
      );
    }
    if (u.hash !== '')
      throw new ApiError('VALIDATION_FAILED', 'url must not have a fragment', [
        { field: 'body.url', message: 'no #fragment' },
      ]);
    return u.toString();
  }

  /**
   * {@link checkWebhookUrl}, then in production mode resolve the host and accept it only when
   * every address is global unicast (SSRF; `webhooks/targets.ts` `nonGlobalReason`).
   */
  async checkWebhookTarget(raw: string): Promise<string> {
    const url = this.checkWebhookUrl(raw);
    return checkWebhookTarget(url, this.opts.mode, ...(this.resolveHost ? [this.resolveHost] : []));
  }

  /**
   * Redeliver a FAILED notification (a fresh series of up to five attempts on the seed schedule).
   * @throws ApiError RESOURCE_NOT_FOUND, CONFLICT when it is not FAILED
   */
  async redeliverNotification(actor: string, profileId: string | null, webhookId: string, notificationId: string) {
    return this.webhooks.redeliver(profileId, webhookId, notificationId, (q) =>
      this.audit(q, actor, 'webhook.notification_redelivered', 'webhook_notification', notificationId, {
        profile_id: profileId,
        webhook_id: webhookId,
      }),
    );
  }

  /** Rotate the webhook signing key (published now, signs after `leadMs`); audited. */
  async rotateSigningKey(actor: string, leadMs?: number) {
    const k = await this.signingKeys.rotate(leadMs);
    await this.audit(this.db, actor, 'webhook.signing_key_rotated', 'webhook_signing_key', k.kid, {
      activates_at: k.activates_at,
    });
    return k;
  }

  /**
   * Rename a wallet (dashboard); emits WALLET_UPDATED in the same transaction.
   * @throws ApiError WALLET_NOT_FOUND
   */
  async updateWallet(actor: string, profileId: string, walletId: string, input: { name: string | null }) {
    await this.db.tx(async (q) => {
      const r = await q.query(
        'UPDATE wallets SET name = $3 WHERE profile_id = $1 AND wallet_id = $2 RETURNING wallet_id',
        [profileId, walletId, input.name],
      );
      if (r.length === 0) throw new ApiError('WALLET_NOT_FOUND', `no wallet ${walletId} in this profile`);
      await this.audit(q, actor, 'wallet.updated', 'wallet', walletId, { profile_id: profileId });
      await emitEvent(q, this.clock, {
        profileId,
        type: 'WALLET_UPDATED',
        data: { wallet_id: walletId, name: input.name },
      });
    });
    return this.store.getWallet(profileId, walletId);
  }

  private webhookView(r: Record<string, unknown>) {
    return {
      webhook_id: r.webhook_id,
      profile_id: r.profile_id,
      url: r.url,
      event_types: r.event_types,
      description: r.description,
      created_at: iso(r.created_at as Date),
      updated_at: iso(r.updated_at as Date),
    };
  }

  /**
   * Refuse event types of the other scope: a profile webhook takes only profile events, an
   * instance-level one (`profileId` null) only instance/security events (`INSTANCE_EVENT_TYPES` of webhooks/events.ts).
   * @throws ApiError VALIDATION_FAILED naming `body.event_types[i]`
   */
  private checkEventScope(profileId: string | null, types: readonly string[]) {
    const i = types.findIndex((t) => isInstanceEvent(t) !== (profileId === null));
    if (i < 0) return;
    const message =
      profileId === null
        ? `${types[i]} is a profile event: register it on a profile's webhook`
        : `${types[i]} is an instance event: only instance-level webhooks (/admin/v1/webhooks) receive it`;
    throw new ApiError('VALIDATION_FAILED', message, [{ field: `body.event_types[${i}]`, message }]);
  }

  /** Live webhooks of a profile, or the instance-level ones when `profileId` is null; oldest first. */
  async listWebhooks(profileId: string | null) {
    const rows = await this.db.query<Record<string, unknown>>(
      `SELECT * FROM webhooks WHERE profile_id IS NOT DISTINCT FROM $1::uuid AND deleted_at IS NULL
       ORDER BY created_at, webhook_id`,
      [profileId],
    );
    return rows.map((r) => this.webhookView(r));
  }

  /** One live webhook of the profile (null: instance-level); 404 RESOURCE_NOT_FOUND otherwise. */
  async getWebhook(profileId: string | null, id: string, q: Queryable = this.db) {
    const r = (
      await q.query<Record<string, unknown>>(
        'SELECT * FROM webhooks WHERE profile_id IS NOT DISTINCT FROM $1::uuid AND webhook_id = $2 AND deleted_at IS NULL',
        [profileId, id],
      )
    )[0];
    if (r === undefined) throw notFound('webhook');
    return this.webhookView(r);
  }

  /**
   * Register a webhook of a profile, or an instance-level one (`profileId` null); audited.
   * @throws ApiError VALIDATION_FAILED (URL, or an event type of the other scope); RESOURCE_NOT_FOUND (profile)
   */
  async createWebhook(
    actor: string,
    profileId: string | null,
    input: { url: string; event_types: string[]; description?: string | null },
  ) {
    this.checkEventScope(profileId, input.event_types);
    const url = await this.checkWebhookTarget(input.url);
    return this.db.tx(async (q) => {
      if (profileId !== null) await this.requireProfile(q, profileId);
      const id = randomUUID();
      const now = this.clock();
      await q.query(
        `INSERT INTO webhooks (webhook_id, profile_id, url, event_types, description, created_at, updated_at)
         VALUES ($1,$2,$3,$4::jsonb,$5,$6,$6)`,
        [id, profileId, url, JSON.stringify([...new Set(input.event_types)]), input.description ?? null, now],
      );
      await this.audit(q, actor, 'webhook.created', 'webhook', id, { profile_id: profileId, url });
      return this.getWebhook(profileId, id, q);
    });
  }

  /** Update a webhook of a profile or an instance-level one (`profileId` null); same checks as create. */
  async updateWebhook(
    actor: string,
    profileId: string | null,
    id: string,
    input: { url?: string; event_types?: string[]; description?: string | null },
  ) {
    if (input.event_types !== undefined) this.checkEventScope(profileId, input.event_types);
    const url = input.url === undefined ? undefined : await this.checkWebhookTarget(input.url);
    return this.db.tx(async (q) => {
      const cur = await this.getWebhook(profileId, id, q);
      await q.query(
        `UPDATE webhooks SET url = $2, event_types = $3::jsonb, description = $4, updated_at = $5
         WHERE webhook_id = $1`,
        [
          id,
          url ?? cur.url,
          JSON.stringify(input.event_types ? [...new Set(input.event_types)] : cur.event_types),
          input.description === undefined ? cur.description : input.description,
          this.clock(),
        ],
      );
      await this.audit(q, actor, 'webhook.updated', 'webhook', id, { profile_id: profileId });
      return this.getWebhook(profileId, id, q);
    });
  }

  /** Delete (soft) a webhook of a profile or an instance-level one (`profileId` null); audited. */
  async deleteWebhook(actor: string, profileId: string | null, id: string): Promise<void> {
    await this.db.tx(async (q) => {
      await this.getWebhook(profileId, id, q);
      await q.query('UPDATE webhooks SET deleted_at = $2 WHERE webhook_id = $1', [id, this.clock()]);
      await this.audit(q, actor, 'webhook.deleted', 'webhook', id, { profile_id: profileId });
    });
  }

  /** Wallet creation from the dashboard (same derivation as the REST API). */
  async createWallet(actor: string, profileId: string, input: { name?: string; blockchain_ids: string[] }) {
    await this.requireProfile(this.db, profileId);
    return this.store.createWallet(profileId, input, (q, w) =>
      this.audit(q, actor, 'wallet.created', 'wallet', w.wallet_id, { profile_id: profileId }),
    );
  }
}
