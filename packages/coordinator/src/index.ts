/**
 * @custodian/coordinator — the custody REST API (seed §4), the admin API, and the
 * PostgreSQL-dialect store (embedded PGlite or a PostgreSQL server).
 */
export { ADDRESS_CODECS, type AddressCodec, type AddressType, addressPath } from './addresses.js';
export {
  type AdminNetworks,
  adminNetworksFromEnv,
  DEFAULT_ADMIN_NETWORKS,
  inAdminNetworks,
  parseAdminNetworks,
} from './admin/networks.js';
export { type AdminOptions, DEFAULT_ADMIN_OPTIONS, ROLES, type Role } from './admin/options.js';
export { hashPassword, verifyPassword } from './admin/passwords.js';
export { inScope, scopeFilter, type WalletScope, walletScope } from './admin/scope.js';
export {
  type IdempotencyOptions,
  type IdempotentResult,
  runIdempotent,
  runIdempotentAnswer,
} from './api/idempotency.js';
export { type IdempotencyClaim, type IdempotencyPeek, IdempotencyStore } from './api/idempotency-store.js';
export type { ProfileRoutesContext } from './api/routes.js';
export { apiKeyHook, requireIdempotencyKey } from './api/routes.js';
export { type ApiKeyComponents, ApiKeyService } from './api-keys/service.js';
export { ApiKeyStore } from './api-keys/store.js';
export { type AuditFn, AuditLog } from './audit/service.js';
export {
  CeremonyAbortedError,
  type CeremonyClient,
  type CeremonyParty,
  type CeremonyPhase,
  type CeremonyProgress,
  DKG_TIMEOUT_MS,
  type DkgOutcome,
  type DkgRequest,
} from './ceremony.js';
export {
  type Coordinator,
  type CoordinatorOptions,
  createCoordinator,
  runMigrations,
  type WebhookOptions,
} from './coordinator.js';
export { type Db, openPglite, openPostgres, type PostgresOptions, type Queryable } from './db/db.js';
export { MIGRATIONS, type Migration, migrate } from './db/migrations.js';
export { API_DECISIONS } from './decisions.js';
export * from './devices/hub.js';
export { type DeviceComponents, DeviceService, deviceFingerprint } from './devices/service.js';
export {
  ASSETS,
  type AssetDef,
  assetId,
  BLOCKCHAINS,
  type BlockchainDef,
  blockchainId,
  DIRECTORY_NAMESPACE,
} from './directory.js';
export { ApiError, ERROR_CATALOGUE, type ErrorCode, type Problem, ROUTELESS_ERRORS, toProblem } from './errors.js';
export { createMailer, type MailboxEntry, type Mailer, readMailbox } from './mailer.js';
export { type CeremonyComponents, CeremonyService, type CeremonyView } from './signers/ceremonies.js';
export { type SignerComponents, SignerService } from './signers/service.js';
export { type MasterKeyInput, MasterKeyStore, type MasterKeyView, transferKeyId } from './signers/store.js';
export * from './signing/gateway.js';
export * from './signing/master-key.js';
export * from './signing/presignature-pool.js';
export * from './signing/services.js';
export { notFound, type Page, type PageRequest, pageOffset } from './store.js';
export * from './transfers/chains.js';
export * from './transfers/evidence.js';
export * from './transfers/pipeline.js';
export * from './transfers/policies.js';
export * from './transfers/service.js';
export * from './transfers/watcher-store.js';
export { type UserComponents, UserService } from './users/service.js';
export { SessionService } from './users/sessions.js';
export type { SessionUser, UserView } from './users/store.js';
export { TotpService } from './users/totp.js';
export { BalanceStore, type BalanceView } from './wallets/balances.js';
export {
  type AddressGroupEntry,
  type AddressGroupView,
  GroupService,
  type WalletGroupView,
} from './wallets/groups.js';
export { type AssetView, type BlockchainView, ProfileStore } from './wallets/profiles.js';
export { type WalletComponents, WalletService } from './wallets/service.js';
export { type AddressView, WalletStore, type WalletView } from './wallets/store.js';
export {
  INSTANCE_EVENT_TYPES,
  INSTANCE_PROFILE_ID,
  isInstanceEvent,
  openApiWebhooks,
  PROFILE_EVENT_TYPES,
  WEBHOOK_EVENT_DOCS,
  WEBHOOK_EVENT_TYPE_SET,
  WEBHOOK_EVENT_TYPES,
  type WebhookEventType,
} from './webhooks/events.js';
export {
  DEFAULT_SIGNING_KEY_OPTIONS,
  resolveKeyEncryptionKey,
  type SigningKeyOptions,
  type SigningKeyView,
  type WebhookJwk,
  WebhookSigningKeys,
} from './webhooks/keys.js';
export { type EmitEventInput, type EmittedEvent, emitEvent, emitInstanceEvent } from './webhooks/outbox.js';
export { WebhookRegistrations } from './webhooks/registrations.js';
export { type NotificationView, WebhookService, type WebhookView } from './webhooks/service.js';
export { p256PublicJwk, p256Thumbprint, signWebhook, webhookPayload } from './webhooks/signature.js';
export { checkWebhookTarget, isNonPublicAddress, nonGlobalReason } from './webhooks/targets.js';
export {
  DELIVERY_TIMEOUT_MS,
  MAX_ATTEMPTS,
  RETRY_DELAYS_MS,
  WebhookWorker,
  type WebhookWorkerOptions,
} from './webhooks/worker.js';
