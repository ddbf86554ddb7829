/**
 * Settings of the admin API and its rooms (users & sessions, devices, signers & master keys, API
 * keys, webhooks, wallets), and the dashboard roles. Each room takes the part it uses.
 */
import { DKG_TIMEOUT_MS } from '../ceremony.js';
import { DEFAULT_ADMIN_NETWORKS } from './networks.js';
import { DEFAULT_MIN_PASSWORD_SCORE, DEFAULT_SCRYPT, type ScryptParams } from './passwords.js';

/** Dashboard roles (seed §1 item 2). */
export type Role = 'ADMIN' | 'FINANCE_MANAGER' | 'VIEWER';
export const ROLES: readonly Role[] = ['ADMIN', 'FINANCE_MANAGER', 'VIEWER'];

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
