/**
 * The options of `createCoordinator` (coordinator.ts) — database, listening, mail, signing,
 * chains, transfers, admin, logging and webhooks — and the {@link Coordinator} it returns.
 * `custodian coordinator start` builds them from its flags and config file
 * (packages/cli/src/coordinator.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { LiveOptions } from './admin/live.js';
import type { AdminOptions } from './admin/options.js';
import type { IdempotencyStore } from './api/idempotency-store.js';
import type { ApiKeyService } from './api-keys/service.js';
import type { AuditLog } from './audit/service.js';
import type { CeremonyClient } from './ceremony.js';
import type { Db } from './db/db.js';
import type { DeviceHubLimits } from './devices/hub-types.js';
import type { DeviceService } from './devices/service.js';
import type { KeyService } from './keys/service.js';
import type { Mailer, MailSettings } from './mailer.js';
import type { ReadinessOptions, ReadinessProbe } from './metrics/readiness.js';
import type { CoordinatorMetrics } from './metrics/registry.js';
import type { MetricsOptions } from './metrics/routes.js';
import type { PgReplicaBus } from './replicas/bus.js';
import type { ReplicaOptions, ReplicaRegistry } from './replicas/registry.js';
import type { RateLimitOptions } from './server.js';
import type { SignerService } from './signers/service.js';
import type { SignerGateway } from './signing/gateway.js';
import type { SigningServices } from './signing/services.js';
import type { ChainNodeConfig, ChainRegistry } from './transfers/chains.js';
import type { PipelineOptions, TransferPipeline } from './transfers/pipeline.js';
import type { PolicyService } from './transfers/policies.js';
import type { PriceConfig } from './transfers/prices.js';
import type { TransferService, TransferSignals } from './transfers/service.js';
import type { UserService } from './users/service.js';
import type { Clock } from './util.js';
import type { WalletService } from './wallets/service.js';
import type { SigningKeyOptions, WebhookSigningKeys } from './webhooks/keys.js';
import type { WebhookRegistrations } from './webhooks/registrations.js';
import type { WebhookService } from './webhooks/service.js';
import type { WebhookWorker, WebhookWorkerOptions } from './webhooks/worker.js';
/** Webhook settings of {@link CoordinatorOptions} (docs/webhooks.md). */
export interface WebhookOptions {
  /**
   * 32-byte key encrypting the signing keys at rest. Default: env `CUSTODIAN_WEBHOOK_KEK`, else the
   * key file `<dataDir>/webhook-kek.key` (created 0600), else an in-memory key (embedded/tests).
   */
  keyEncryptionKey?: Uint8Array;
  /**
   * When the active signing key cannot be decrypted with this process's KEK: false (default)
   * refuses to start (CoordinatorError WEBHOOK_KEK_MISMATCH: another replica's KEK, or a lost
   * `webhook-kek.key`); true retires it (it stays in the JWKS for the overlap) and makes a new key
   * that signs at once — only when the old KEK is gone for good, never with running replicas that
   * hold it. An in-memory KEK (no data folder, no variable) always replaces.
   */
  replaceUnreadableKeys?: boolean;
  /** Rotation and JWKS cache settings. */
  keys?: Partial<SigningKeyOptions>;
  /** Delivery worker settings (`timeoutMs` is 30 s by seed §8; change it in tests only). */
  worker?: Partial<Omit<WebhookWorkerOptions, 'mode' | 'clock' | 'allowedTargets'>>;
  /**
   * Production exceptions to the webhook SSRF rule, for self-hosted receivers on a private network
   * (docs/webhooks.md "Self-hosted receivers"; webhooks/target-allowlist.ts): IPv4/IPv6 CIDR ranges
   * or addresses (an IP-literal URL host inside one), host names (`hooks.corp.internal`) and
   * `*.corp.internal` suffix patterns (that name, whatever it resolves to). Default empty: only
   * global unicast targets. Checked at registration and at every delivery.
   * @throws RangeError (at creation) naming `webhooks.allowedTargets[i]` for a bad entry
   */
  allowedTargets?: string[];
  /** Run the delivery worker in this process after `Coordinator.start()`. Default true. */
  runWorker?: boolean;
}

/** Options of `createCoordinator` (coordinator.ts). */
export interface CoordinatorOptions {
  /** Data folder: PGlite database in `<dataDir>/pgdata`, dev mailbox in `<dataDir>/mailbox`. */
  dataDir?: string;
  /** PostgreSQL URL (`DATABASE_URL`); takes precedence over the embedded database. */
  databaseUrl?: string;
  /** An already open database (tests, embedding). Takes precedence over both. */
  db?: Db;
  /** Where `Coordinator.start()` listens. Default 127.0.0.1:8080. */
  listen?: { host?: string; port?: number };
  /**
   * Absolute path of the built dashboard (`packages/dashboard/dist`, holding `index.html`): served
   * at `/` and every non-API GET path (SPA fallback to `index.html`). Unset: no dashboard.
   */
  dashboardDir?: string;
  /** Timings and limits of the admin live streams (admin/live.ts; tests shorten them). */
  liveStreams?: Partial<LiveOptions>;
  mode: 'development' | 'production';
  clock?: Clock;
  /** Idempotency key retention (ms). Default 24 h. */
  idempotencyRetentionMs?: number;
  /**
   * How long a request waits for a concurrent first request with the same idempotency key before
   * 409 IDEMPOTENCY_REQUEST_IN_PROGRESS (ms). Default 5000.
   */
  idempotencyInFlightWaitMs?: number;
  rateLimit?: Partial<RateLimitOptions>;
  /**
   * Reverse proxies (addresses or CIDR ranges) whose `X-Forwarded-For` gives the client address
   * for rate limits and logs. Default: env `CUSTODIAN_TRUST_PROXY` (comma-separated), else none —
   * the socket peer is the client, so behind a proxy not listed here every client shares one
   * bucket. @throws RangeError naming `trustProxy[i]` for an entry that is not an address or range
   */
  trustProxy?: string[];
  /**
   * The scope of the dashboard roles (#26 item 8): CIDR ranges or addresses users log in from. A
   * login from outside emits ROLE_SCOPE_LOGIN to the instance-level webhooks (with the client
   * address, `req.ip` after `trustProxy`); from inside, nothing. Default: env
   * `CUSTODIAN_ADMIN_NETWORKS` (comma-separated; empty = every login is outside), else loopback,
   * 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 and fc00::/7.
   * @throws RangeError naming `adminNetworks[i]` for an entry that is not an address or range
   */
  adminNetworks?: string[];
  /** A ready mailer (tests, embedding); takes precedence over {@link mail}. */
  mailer?: Mailer;
  /**
   * Outgoing mail (login codes, notices): SMTP (`{ transport: 'smtp', url, from? }`) or the file
   * mailbox (`{ transport: 'file' }`, the folder {@link mailboxDir}). Default: the file mailbox in
   * development; production refuses to start without it (`CoordinatorError` MAIL_NOT_CONFIGURED).
   * @throws CoordinatorError MAIL_NOT_CONFIGURED / CONFIG_INVALID (at creation) as above, or for a
   *   `url` that is not `smtp:` / `smtps:`, or the file mailbox with neither `mailboxDir` nor `dataDir`
   */
  mail?: MailSettings;
  /** The file mailbox folder. Default `<dataDir>/mailbox`. */
  mailboxDir?: string;
  /**
   * The one-time bootstrap token file that `POST /admin/v1/init` requires (users/bootstrap.ts):
   * written at start (mode 0600) while the instance has no Admin, deleted by the init. Default
   * `<dataDir>/bootstrap-token`; without it and without `dataDir`, no token exists and init is
   * refused (BOOTSTRAP_TOKEN_INVALID).
   */
  bootstrapTokenFile?: string;
  /** Signer control channel for ceremonies; without it, ceremonies answer 503 SIGNERS_UNAVAILABLE. */
  ceremonyClient?: CeremonyClient;
  /**
   * Run the signer-facing services (signing/services.ts): libp2p identity persisted in
   * `<dataDir>/coordinator-p2p.key`, control client to the registered server signers, device hub
   * (WebSocket `/devices/v1/ws`), signer gateway and master key ceremony client (used unless
   * `ceremonyClient` is given). Default off. `presignaturePool`: CGGMP21 presignatures kept per
   * (ECDSA key, signing set), refilled in the background (signing/presignature-pool.ts); default 4,
   * 0 = off (every ECDSA signature cold). `presignatureReconcileMs`: interval of the pool's
   * reconciliation with the signers (also run at start; orphaned presignatures deleted, lost pool
   * ids dropped), ms; default 600 000, 0 = off. `deviceSockets`: device WebSocket sockets waiting for
   * their hello at once, per client address (default 16) and in all (default 1024) (devices/hub.ts).
   */
  /**
   * Key lifecycle (keys/service.ts, issue #22): `refreshIntervalHours` refreshes every master key
   * whose last refresh (or creation) is older than that, one at a time (0 / absent: off);
   * `scheduleTickMs` how often that is checked (default 60 000); `commitRetry` the backoff of
   * RESHARE_COMMIT retries (default 1000 → 60 000 ms).
   */
  keys?: { refreshIntervalHours?: number; scheduleTickMs?: number; commitRetry?: { initialMs: number; maxMs: number } };
  /**
   * Several coordinator replicas on one PostgreSQL database (replicas/*.ts, issue #25): timing of
   * the heartbeat (`heartbeatMs`, default 2 000), of the death of a silent replica (`ttlMs`,
   * default 10 000), of singleton leases (`leaseMs`, default 10 000: a chain's deposit watcher, the
   * key lifecycle scheduler, … are taken over within about that of their holder's death) and of the
   * cross-replica bus's polling (`busPollMs`, default 1 000; LISTEN/NOTIFY wakes it at once).
   */
  replicas?: Partial<ReplicaOptions>;
  signing?: {
    enabled: boolean;
    algorithms?: number[];
    presignaturePool?: number;
    presignatureReconcileMs?: number;
    deviceSockets?: Partial<DeviceHubLimits>;
  };
  /**
   * Blockchain nodes (transfers, fee estimates, deposit watchers): blockchain key of the directory
   * → `{ rpcUrl, confirmations?, pollIntervalMs? }`, e.g. `{ 'ethereum-local': { rpcUrl: 'http://127.0.0.1:8545' } }`.
   */
  chains?: Record<string, ChainNodeConfig>;
  /**
   * USD prices of fee currencies, for `fee_value_usd` of fee estimates (transfers/prices.ts,
   * docs/transfers.md): `{ "static": { "ETH": "3000.00" } }` and/or `{ "http": { "url":
   * "https://…/{symbol}", "path": "usd", "ttlMs": 60000, "timeoutMs": 2000 } }` (static asked
   * first). Default none: `fee_value_usd` is null. A failed lookup gives null and a warn log line.
   * @throws RangeError (at creation) naming `prices.…` for a malformed value
   */
  prices?: PriceConfig;
  /** Transfer pipeline settings (docs/transfers.md; transfers/machine.ts and pipeline.ts). */
  transfers?: {
    /** Approval window, ms (default 24 h). */
    approvalWindowMs?: number;
    /**
     * Fee cap of new transfers per blockchain: blockchain key → base units of its native asset
     * (decimal integer string: wei, satoshi/litoshi, sun), e.g. `{ "ethereum-mainnet":
     * "5000000000000000" }` (0.005 ETH). Goes into every new transfer's intent (`max_fee`), which
     * the approvers sign; a blockchain not listed keeps the directory default (0.01 ETH, 0.001 BTC,
     * 0.01 LTC, 50 TRX). Transfers created earlier keep the cap they were approved with.
     * @throws RangeError (at creation) naming `transfers.feeCaps.<key>` for an unknown key or a bad value
     */
    feeCaps?: Record<string, string>;
    /** Admin device keys (compressed P-256 hex) allowed to sign policies; mirror of the signers' `trustedAdminDevices`. */
    trustedAdminKeys?: string[];
    /**
     * Pipeline settings (transfers/pipeline.ts `PipelineOptions`; config file `transfers.pipeline`):
     * `signDeadlineMs` (one ceremony, default 120 000), `signingWindowMs` (how long a transfer may
     * wait for its signers, default 3 600 000), `retryInitialMs` / `retryMaxMs` (retry backoff,
     * defaults 2000 / 60 000), `leaseMs` (default 15 000, renewed every third), `concurrency`
     * (transfers at once, default 8), `pollMs`, `confirmationRecheckMs`.
     */
    pipeline?: Partial<Omit<PipelineOptions, 'log'>>;
    /** Run the pipeline and the deposit watchers in this process after `start()` (default true). */
    runPipeline?: boolean;
    /** Signer gateway to use instead of the one of `signing` (tests, embedding). */
    gateway?: SignerGateway;
  };
  admin?: Partial<Omit<AdminOptions, 'mode'>>;
  /** pino options, or false to disable. Default: info level, API keys and bearer tokens redacted. */
  logger?: boolean | Record<string, unknown>;
  /** Public base URL (OpenAPI `servers`). */
  baseUrl?: string;
  webhooks?: WebhookOptions;
  /**
   * `GET /metrics` (Prometheus; docs/observability.md): `enabled` (default true), `bearerToken`
   * (when set, required as `Authorization: Bearer <token>`; default none). Firewall the endpoint.
   */
  metrics?: Partial<MetricsOptions>;
  /**
   * `GET /readyz`: `cacheMs` (one result reused this long, default 5000; 0 = every request checks),
   * `timeoutMs` (bound of each check, default 2000).
   */
  health?: Partial<ReadinessOptions>;
}

/**
 * A configured coordinator. Its rooms (one folder each under `src/`, with routes, service and
 * store side by side) are fields: `audit`, `users` (with `users.sessions`, `users.totp`),
 * `wallets` (with `wallets.profiles`, `wallets.store`, `wallets.balances`, `wallets.groups`),
 * `apiKeys` (with `apiKeys.store`), `signers` (with `signers.masterKeys`, `signers.ceremonies`),
 * `devices`, `webhooks` (with `webhooks.registrations`), and `idempotency`.
 */
export interface Coordinator {
  app: FastifyInstance;
  db: Db;
  /** The clock every room reads (`CoordinatorOptions.clock`, default the system clock). */
  clock: Clock;
  /** The append-only audit log of admin actions. */
  audit: AuditLog;
  /** Users and roles; `users.sessions`: login, sessions, step-up; `users.totp`: the user's own TOTP. */
  users: UserService;
  /**
   * Profiles and directory settings (`wallets.profiles`), wallets and addresses (`wallets.store`),
   * balances (`wallets.balances`), wallet and address groups (`wallets.groups`), and the
   * dashboard's audited changes.
   */
  wallets: WalletService;
  /** API keys (admin functions); `apiKeys.store`: the key records and their authentication. */
  apiKeys: ApiKeyService;
  /** Server signers; `signers.masterKeys`: master key records; `signers.ceremonies`: the DKG. */
  signers: SignerService;
  /** Mobile signer devices: enrollment, approval, removal. */
  devices: DeviceService;
  /** Key lifecycle: refresh, key changes (replace-signer, reshare), recovery drills (issue #22). */
  keys: KeyService;
  /** Idempotency records of the REST API's create routes. */
  idempotency: IdempotencyStore;
  /**
   * This process as a replica (issue #25): its registry row and heartbeat, the cross-replica bus,
   * and `leases()`: the names of the singleton leases it holds now (`watcher:<chain key>`,
   * `scheduler:keys`, `scheduler:presignature-reconcile`, `scheduler:idempotency-purge`,
   * `scheduler:ceremony-recovery`; coordinator.ts), i.e. the singletons running here.
   */
  replicas: { registry: ReplicaRegistry; bus: PgReplicaBus; leases: () => string[] };
  /**
   * Webhook signing keys, notification queries and redelivery (`service`), the delivery worker,
   * and the admin registrations (`registrations`).
   */
  webhooks: {
    keys: WebhookSigningKeys;
    service: WebhookService;
    worker: WebhookWorker;
    registrations: WebhookRegistrations;
  };
  /** Every registered route (method, URL pattern, hidden from OpenAPI). */
  routes: { method: string; url: string; hidden: boolean }[];
  /** The file mailbox folder, when mail goes there. */
  mailboxDir: string | undefined;
  /** The bootstrap token file (written at start while the instance has no Admin), if any. */
  bootstrapTokenFile: string | undefined;
  /** Signer gateway, device hub and libp2p identity, when `signing.enabled`. */
  signing: SigningServices | undefined;
  /** Policies, transfers, their pipeline and the chain adapters/watchers. */
  transfers: {
    policies: PolicyService;
    service: TransferService;
    pipeline: TransferPipeline;
    chains: ChainRegistry;
    /** What the transfer requests report (new pipeline work, approval requests): subscribe to observe. */
    signals: TransferSignals;
  };
  /**
   * Start every component in order (coordinator.ts module comment) and listen; resolves with the base
   * URL (e.g. `http://127.0.0.1:8080`). When a component's start fails, every component is stopped
   * (the database closed) and this rejects with that error (e.g. `EADDRINUSE`). A second call
   * shares the first; after {@link stop} it rejects.
   */
  start(): Promise<string>;
  /**
   * Stop every component in reverse order: the webhook worker, the pipeline, the deposit
   * watchers, the device sockets, the HTTP server, the ceremonies (aborted), the signing
   * services, the database. Idempotent; also releases a coordinator never started.
   */
  stop(): Promise<void>;
  /** Names of the components in start order (stop runs them in reverse). */
  components: readonly string[];
  /** This coordinator's Prometheus registry and named metrics (served at `GET /metrics`). */
  metrics: CoordinatorMetrics;
  /** The readiness checks of `GET /readyz`. */
  readiness: ReadinessProbe;
  /** Names of the components whose stop has not finished yet (empty before {@link stop} and after it). */
  stopping(): readonly string[];
}
