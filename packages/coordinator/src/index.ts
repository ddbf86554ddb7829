/**
 * @custodian/coordinator — the custody REST API (seed §4), the admin API, and the
 * PostgreSQL-dialect store (embedded PGlite or a PostgreSQL server).
 */

// The composition root: build, start and stop a coordinator; run migrations alone

export type { Coordinator, CoordinatorOptions, WebhookOptions } from './coordinator.js';
export { createCoordinator, runMigrations } from './coordinator.js';
export type { LifecycleEntry, Startable } from './lifecycle.js';
export { Lifecycle } from './lifecycle.js';

// Errors: the API error catalogue (the `coordinator` family)

export type { ErrorCode } from './errors.js';
export { ApiError, ERROR_CATALOGUE } from './errors.js';

// Database: the Db boundary over PGlite or a PostgreSQL server

export type { Db, PostgresOptions, Queryable } from './db/db.js';
export { openPglite, openPostgres } from './db/db.js';

// Database: the ordered migrations

export type { Migration } from './db/migrations.js';
export { migrate } from './db/migrations.js';

// The page envelope of every list endpoint

export type { Page, PageRequest } from './store.js';

// Mail: the transport settings, its send failure, the file mailbox

export type { MailboxEntry, Mailer, MailSettings } from './mailer.js';
export { MailSendError, readMailbox } from './mailer.js';

// The built-in directory of blockchains and assets

export type { BlockchainDef } from './directory.js';
export { blockchainId } from './directory.js';

// Address encodings per chain family

export type { AddressCodec, AddressType } from './addresses.js';

// REST API plumbing for routes of an embedding: API-key authentication, idempotency keys

export { apiKeyHook, requireIdempotencyKey } from './api/routes.js';

// REST API: idempotent create routes

export type { IdempotencyOptions, IdempotentResult } from './api/idempotency.js';
export { runIdempotent } from './api/idempotency.js';

// REST API: idempotency records

export type { IdempotencyClaim, IdempotencyPeek, IdempotencyStore } from './api/idempotency-store.js';

// Admin API settings and roles

export type { AdminOptions, Role } from './admin/options.js';

// Users room: users and roles, sessions, TOTP, and their views

export type { UserComponents, UserService } from './users/service.js';
export type { SessionService } from './users/sessions.js';
export type { SessionUser, UserView } from './users/store.js';
export type { TotpService } from './users/totp.js';

// Wallets room: profiles and directory settings, wallets, addresses, balances, groups, and their views

export type { LabelledAddressView, WalletArchiveView } from './wallets/archive.js';
export type { BalanceStore, BalanceView } from './wallets/balances.js';
export type { DepositView } from './wallets/deposits.js';
export type { AddressGroupEntry, AddressGroupView, GroupService, WalletGroupView } from './wallets/groups.js';
export type { AssetView, BlockchainView, ProfileStore } from './wallets/profiles.js';
export type { AdminWalletView, WalletComponents, WalletService } from './wallets/service.js';
export type { AddressView, WalletStore, WalletView } from './wallets/store.js';

// API keys room

export type { ApiKeyComponents, ApiKeyService } from './api-keys/service.js';
export type { ApiKeyStore } from './api-keys/store.js';

// Audit room: the append-only audit log

export type { AuditFn, AuditLog } from './audit/service.js';

// Signers room: server signers, master keys, the DKG ceremony

export type { CeremonyComponents, CeremonyService, CeremonyView } from './signers/ceremonies.js';
export type { SignerComponents, SignerService } from './signers/service.js';
export type { MasterKeyInput, MasterKeyStore, MasterKeyView } from './signers/store.js';
export type { BlameView, SigningCeremonyView } from './signing/blame-store.js';

// The signer-side ceremony client interface the DKG runs through

export type {
  CeremonyClient,
  CeremonyParty,
  CeremonyPhase,
  CeremonyProgress,
  DkgOutcome,
  DkgRequest,
} from './ceremony.js';
export { CeremonyAbortedError } from './ceremony.js';

// Devices room: enrollment and decisions of mobile signers

export type { DeviceComponents, DeviceService } from './devices/service.js';

// Devices room: the phones' WebSocket hub

export type {
  ApprovalEvent,
  DeviceHub,
  DeviceHubComponents,
  DeviceHubLimits,
  HubDeviceRecord,
  RelayedEvent,
} from './devices/hub.js';

// Webhooks room: event types, the outbox, signing keys, registrations, notifications, delivery

export type { WebhookEventType } from './webhooks/events.js';
export { WEBHOOK_EVENT_TYPES } from './webhooks/events.js';
export type { SigningKeyOptions, SigningKeyView, WebhookJwk, WebhookSigningKeys } from './webhooks/keys.js';
export type { EmitEventInput, EmittedEvent } from './webhooks/outbox.js';
export { emitEvent } from './webhooks/outbox.js';
export type { WebhookRegistrations } from './webhooks/registrations.js';
export type { NotificationView, WebhookService, WebhookView } from './webhooks/service.js';
export type { WebhookWorker, WebhookWorkerOptions } from './webhooks/worker.js';

// Transfers room: policies, transfers and their views, the pipeline, chain adapters

export type {
  AdminTransferView,
  SigningParty,
  TransferApprovalEntry,
  TransferSigningAttempt,
  TransferTimelineEntry,
} from './transfers/admin-view.js';
export type { ChainNodeConfig, ChainRegistry, TxLookup } from './transfers/chains.js';
export type { PipelineOptions, TransferPipeline, TransferPipelineComponents } from './transfers/pipeline.js';
export type {
  PolicyAudit,
  PolicyInput,
  PolicyService,
  PolicyServiceComponents,
  PolicyServiceOptions,
  PolicyVersionView,
  PolicyView,
} from './transfers/policies.js';
export type {
  ApprovalNotifier,
  ApprovalRequest,
  FeeBump,
  FeeBumpView,
  TransferInput,
  TransferRow,
  TransferService,
  TransferServiceComponents,
  TransferServiceOptions,
  TransferSignals,
  TransferStatus,
  TransferView,
} from './transfers/service.js';
export { TRANSFER_STATUSES } from './transfers/service.js';

// Metrics room: the Prometheus registry and named metrics, readiness checks, /healthz /readyz /metrics

export type { Readiness, ReadinessCheck, ReadinessOptions, ReadinessQueries } from './metrics/readiness.js';
export { DEFAULT_READINESS_OPTIONS, ReadinessProbe } from './metrics/readiness.js';
export type {
  CoordinatorMetrics,
  HttpMetrics,
  SigningMetrics,
  TransferMetrics,
  WebhookMetrics,
} from './metrics/registry.js';
export { COORDINATOR_METRIC_NAMES, createCoordinatorMetrics } from './metrics/registry.js';
export type { MetricsOptions } from './metrics/routes.js';

// Signing: the signer-facing services, the signer gateway, the presignature pool, signer key ids

export type {
  DeviceCeremonyPort,
  GatewaySignRequest,
  GatewaySignResult,
  SignEvidence,
  SignerGateway,
  SigningAttempt,
  SigningAttemptLog,
  SignParty,
  UnavailableParty,
} from './signing/gateway.js';
export { signerKeyId } from './signing/master-key.js';
export type {
  PresignatureHolders,
  PresignaturePool,
  PresignaturePoolOptions,
  PresignatureReconciliation,
  PresignatureSetReconciliation,
  PresignRunner,
} from './signing/presignature-pool.js';
export type { SigningServices } from './signing/services.js';
export { coordinatorPeerId } from './signing/services.js';
