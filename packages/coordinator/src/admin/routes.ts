/**
 * Admin API (`/admin/v1`): the seed's dashboard-only functions, for the CLI and a later web
 * dashboard. Authenticated by a bearer session token (login = password + second factor);
 * roles enforced per route exactly as seed §1:
 *
 * | Role | Routes |
 * |---|---|
 * | ADMIN | everything |
 * | FINANCE_MANAGER | own session, password and TOTP; read profiles, directory, wallets, addresses, balances, master keys, ceremonies (policy management comes with the transfer pipeline) |
 * | VIEWER | the same reads (read-only) |
 *
 * Sensitive routes also need a fresh step-up of the session (`POST /admin/v1/session/step-up`,
 * default 5 min) and answer 403 `STEP_UP_REQUIRED` without one: TOTP enrollment start and confirm,
 * API key create and revoke, profile and instance webhook create, update and delete, webhook
 * signing key rotation, user creation, deletion and blocking, a user change of role or password,
 * wallet-group membership changes, group deletion, device approval, and server signer
 * registration and removal. TOTP disable carries its own proof (the current code).
 * A Finance Manager or Viewer assigned to wallet groups is limited to those groups' wallets, their
 * balances and transfers, and those groups (`scope.ts`; others answer 404 as if absent). Instance
 * and security events go to instance-level webhooks (`/admin/v1/webhooks`) only.
 *
 * The mobile app's enrollment request is under `/devices/v1` (unauthenticated; the app only
 * knows the instance URL).
 *
 * Each area's routes live in its room, next to its service and store (`users/`, `wallets/`,
 * `api-keys/`, `signers/`, `devices/`, `webhooks/`, `audit/`); this module registers them, in the
 * order of the OpenAPI document. The shared plumbing is here: `route.ts` (session hook, role check,
 * step-up guard, rate limit of unauthenticated routes), `schemas.ts`, `scope.ts`, `networks.ts`,
 * `passwords.ts`, `options.ts`.
 */
import type { FastifyInstance } from 'fastify';
import { apiKeyRoutes } from '../api-keys/routes.js';
import type { ApiKeyService } from '../api-keys/service.js';
import { auditRoutes } from '../audit/routes.js';
import type { AuditLog } from '../audit/service.js';
import type { Db } from '../db/db.js';
import { deviceRoutes, enrollmentRoutes } from '../devices/routes.js';
import type { DeviceService } from '../devices/service.js';
import { keyRoutes } from '../keys/routes.js';
import type { KeyService } from '../keys/service.js';
import { masterKeyRoutes, signerRoutes } from '../signers/routes.js';
import type { SignerService } from '../signers/service.js';
import { sessionRoutes, userRoutes } from '../users/routes.js';
import type { UserService } from '../users/service.js';
import type { Clock } from '../util.js';
import { groupAdminRoutes } from '../wallets/group-routes.js';
import { walletAdminRoutes } from '../wallets/routes.js';
import type { WalletService } from '../wallets/service.js';
import { type WebhookAdminServices, webhookAdminRoutes } from '../webhooks/admin-routes.js';
import type { LiveStreams } from './live.js';
import type { AdminOptions } from './options.js';
import { createAdminRouter } from './route.js';
import { walletScopeHook } from './scope.js';

/** The rooms whose admin routes {@link adminRoutes} registers. */
export interface AdminRooms {
  readonly db: Db;
  readonly clock: Clock;
  readonly options: Pick<AdminOptions, 'stepUpTtlMs' | 'loginRateLimit'>;
  readonly audit: AuditLog;
  readonly users: UserService;
  readonly wallets: WalletService;
  readonly apiKeys: ApiKeyService;
  readonly signers: SignerService;
  readonly devices: DeviceService;
  readonly webhooks: WebhookAdminServices;
  /** Key lifecycle operations (keys room, issue #22). */
  readonly keys: KeyService;
  /** The live streams (SSE) of the coordinator, shared with the transfer admin routes. */
  readonly live: LiveStreams;
}

/** Register the admin API routes (mount at `/admin/v1`) and the device enrollment routes. */
export async function adminRoutes(app: FastifyInstance, rooms: AdminRooms) {
  const r = createAdminRouter({
    app,
    sessions: rooms.users.sessions,
    clock: rooms.clock,
    options: rooms.options,
    live: rooms.live,
  });
  // Wallet-group scoping (#26 item 9): a wallet or wallet group outside the user's groups is 404.
  app.addHook('preHandler', walletScopeHook(rooms.db));
  sessionRoutes(r, rooms.users);
  userRoutes(r, rooms.users);
  walletAdminRoutes(r, rooms.wallets);
  apiKeyRoutes(r, rooms.apiKeys);
  signerRoutes(r, rooms.signers);
  deviceRoutes(r, rooms.devices);
  masterKeyRoutes(r, rooms.signers);
  keyRoutes(r, rooms.keys);
  webhookAdminRoutes(r, rooms.webhooks);
  groupAdminRoutes(r, rooms.wallets);
  auditRoutes(r, rooms.audit);
  enrollmentRoutes(r, rooms.devices);
}
