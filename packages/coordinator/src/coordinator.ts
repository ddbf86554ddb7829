/**
 * `createCoordinator`: wires the store, the REST API, the admin API and the OpenAPI document into
 * one fastify app. `custodian coordinator start` calls this.
 */
import { join } from 'node:path';
import proxyaddr from '@fastify/proxy-addr';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { pino } from 'pino';
import { adminNetworksFromEnv, parseAdminNetworks } from './admin/networks.js';
import { type AdminOptions, DEFAULT_ADMIN_OPTIONS } from './admin/options.js';
import { adminRoutes } from './admin/routes.js';
import { IdempotencyStore } from './api/idempotency-store.js';
import { apiKeyHook, type ProfileRoutesContext, walletRoutes } from './api/routes.js';
import { ApiKeyService } from './api-keys/service.js';
import type { ApiKeyStore } from './api-keys/store.js';
import { AuditLog } from './audit/service.js';
import type { CeremonyClient } from './ceremony.js';
import { type Db, openPglite, openPostgres } from './db/db.js';
import { migrate } from './db/migrations.js';
import { API_DECISIONS } from './decisions.js';
import type { DeviceHubLimits } from './devices/hub.js';
import { DeviceService } from './devices/service.js';
import { resolveFeeCaps, syncDirectory } from './directory.js';
import { createMailer, type Mailer } from './mailer.js';
import { addressBucket, createServer, parseTrustProxy, type RateLimitOptions } from './server.js';
import { SignerService } from './signers/service.js';
import type { SignerGateway } from './signing/gateway.js';
import { createSigningServices, type SigningServices } from './signing/services.js';
import { transferAdminRoutes } from './transfers/admin-routes.js';
import { type ChainNodeConfig, ChainRegistry } from './transfers/chains.js';
import { DEFAULT_PIPELINE_OPTIONS, type PipelineOptions, TransferPipeline } from './transfers/pipeline.js';
import { PolicyService } from './transfers/policies.js';
import { TRANSFER_SCHEMAS, transferRoutes } from './transfers/routes.js';
import { TransferService } from './transfers/service.js';
import { UserService } from './users/service.js';
import type { SessionService } from './users/sessions.js';
import { type Clock, systemClock } from './util.js';
import { WalletService } from './wallets/service.js';
import { openApiWebhooks } from './webhooks/events.js';
import {
  DEFAULT_SIGNING_KEY_OPTIONS,
  resolveKeyEncryptionKey,
  type SigningKeyOptions,
  WebhookSigningKeys,
} from './webhooks/keys.js';
import { WebhookRegistrations } from './webhooks/registrations.js';
import { jwksRoute, webhookRoutes } from './webhooks/routes.js';
import { WebhookService } from './webhooks/service.js';
import { DEFAULT_WORKER_OPTIONS, WebhookWorker, type WebhookWorkerOptions } from './webhooks/worker.js';

/** Webhook settings of {@link CoordinatorOptions} (docs/webhooks.md). */
export interface WebhookOptions {
  /**
   * 32-byte key encrypting the signing keys at rest. Default: env `CUSTODIAN_WEBHOOK_KEK`, else the
   * key file `<dataDir>/webhook-kek.key` (created 0600), else an in-memory key (embedded/tests).
   */
  keyEncryptionKey?: Uint8Array;
  /** Rotation and JWKS cache settings. */
  keys?: Partial<SigningKeyOptions>;
  /** Delivery worker settings (`timeoutMs` is 30 s by seed §8; change it in tests only). */
  worker?: Partial<Omit<WebhookWorkerOptions, 'mode' | 'clock'>>;
  /** Run the delivery worker in this process after {@link Coordinator.start}. Default true. */
  runWorker?: boolean;
}

/** Options of {@link createCoordinator}. */
export interface CoordinatorOptions {
  /** Data folder: PGlite database in `<dataDir>/pgdata`, dev mailbox in `<dataDir>/mailbox`. */
  dataDir?: string;
  /** PostgreSQL URL (`DATABASE_URL`); takes precedence over the embedded database. */
  databaseUrl?: string;
  /** An already open database (tests, embedding). Takes precedence over both. */
  db?: Db;
  /** Where {@link Coordinator.start} listens. Default 127.0.0.1:8080. */
  listen?: { host?: string; port?: number };
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
  /** Outgoing mail; default: SMTP from `smtpUrl`, else the `<dataDir>/mailbox` folder. */
  mailer?: Mailer;
  /** Development mailbox folder. Default `<dataDir>/mailbox`. */
  mailboxDir?: string;
  smtpUrl?: string;
  mailFrom?: string;
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
  /** Transfer pipeline settings (docs in transfers/service.ts and pipeline.ts). */
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
  /** Idempotency records of the REST API's create routes. */
  idempotency: IdempotencyStore;
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
  /** The mailbox folder of development mail, when used. */
  mailboxDir: string | undefined;
  /** Signer gateway, device hub and libp2p identity, when `signing.enabled`. */
  signing: SigningServices | undefined;
  /** Policies, transfers, their pipeline and the chain adapters/watchers. */
  transfers: { policies: PolicyService; service: TransferService; pipeline: TransferPipeline; chains: ChainRegistry };
  /** Listen; resolves with the base URL (e.g. `http://127.0.0.1:8080`). */
  start(): Promise<string>;
  /** Stop listening, abort ceremonies, close the database. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Open the configured database (PostgreSQL when `databaseUrl`, else PGlite in `<dataDir>/pgdata`,
 * else PGlite in memory) and apply pending migrations.
 * @returns the open database and the versions applied now
 */
export async function runMigrations(opts: {
  dataDir?: string;
  databaseUrl?: string;
  db?: Db;
}): Promise<{ db: Db; applied: number[] }> {
  const db =
    opts.db ??
    (opts.databaseUrl !== undefined
      ? await openPostgres(opts.databaseUrl)
      : await openPglite(opts.dataDir !== undefined ? join(opts.dataDir, 'pgdata') : undefined));
  const applied = await migrate(db);
  return { db, applied };
}

/**
 * Whether a signing party is connected now (the pipeline prefers signing sets of connected parties
 * and does not invite a device that is offline): a device by its hub connection, a server signer by
 * the libp2p connection the coordinator keeps to it (signer links).
 */
function partyAvailability(db: Db, signing: SigningServices): NonNullable<SignerGateway['availability']> {
  return async (party) => {
    if (party.kind === 'device') return signing.hub.online().includes(party.id.toLowerCase()) ? 'up' : 'down';
    const r = await db.query<{ peer_id: string }>(
      'SELECT peer_id FROM server_signers WHERE signer_id::text = $1 AND removed_at IS NULL',
      [party.id.toLowerCase()],
    );
    if (r[0] === undefined) return 'down';
    return signing.control.host.connectedPeers().includes(r[0].peer_id) ? 'up' : 'down';
  };
}

/** Build a coordinator: database (migrated, directory synced), services and routes. */
export async function createCoordinator(opts: CoordinatorOptions): Promise<Coordinator> {
  const clock = opts.clock ?? systemClock;
  // configuration errors before anything is opened
  const feeCaps = resolveFeeCaps(opts.transfers?.feeCaps);
  const trustProxy = parseTrustProxy(
    opts.trustProxy ??
      (process.env.CUSTODIAN_TRUST_PROXY ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
  );
  const adminNetworks = opts.adminNetworks ?? opts.admin?.adminNetworks ?? adminNetworksFromEnv();
  parseAdminNetworks(adminNetworks);
  const mailboxDir = opts.mailboxDir ?? (opts.dataDir !== undefined ? join(opts.dataDir, 'mailbox') : undefined);
  if (opts.mailer === undefined && opts.smtpUrl === undefined && mailboxDir === undefined) {
    throw new Error(
      'createCoordinator: configure outgoing mail (smtpUrl), or a mailboxDir / dataDir for the development mailbox',
    );
  }
  const { db } = await runMigrations(opts);
  await db.tx((q) => syncDirectory(q, opts.mode === 'development'));
  const idempotency = new IdempotencyStore({ db, clock });
  const audit = new AuditLog({ db, clock });
  const wallets = new WalletService({ db, clock, audit });
  const mailer =
    opts.mailer ??
    createMailer({
      from: opts.mailFrom ?? 'Custodian <no-reply@custodian.invalid>',
      ...(opts.smtpUrl !== undefined ? { smtpUrl: opts.smtpUrl } : {}),
      ...(mailboxDir !== undefined ? { mailboxDir } : {}),
    });
  const signing = opts.signing?.enabled
    ? await createSigningServices({
        db,
        ...(opts.dataDir !== undefined ? { dataDir: opts.dataDir } : {}),
        ...(opts.signing.algorithms ? { algorithms: opts.signing.algorithms } : {}),
        ...(opts.signing.presignaturePool !== undefined || opts.signing.presignatureReconcileMs !== undefined
          ? {
              presignaturePool: {
                ...(opts.signing.presignaturePool !== undefined ? { target: opts.signing.presignaturePool } : {}),
                ...(opts.signing.presignatureReconcileMs !== undefined
                  ? { reconcileMs: opts.signing.presignatureReconcileMs }
                  : {}),
              },
            }
          : {}),
        ...(opts.signing.deviceSockets ? { deviceSockets: opts.signing.deviceSockets } : {}),
        log: pino({ level: process.env.CUSTODIAN_SIGNING_LOG ?? 'warn', base: { service: 'coordinator-signing' } }),
      })
    : undefined;
  const adminOptions: AdminOptions = { ...DEFAULT_ADMIN_OPTIONS, ...opts.admin, adminNetworks, mode: opts.mode };
  const users = new UserService({ db, clock, audit, mailer, profiles: wallets.profiles, options: adminOptions });
  const apiKeys = new ApiKeyService({ db, clock, audit, profiles: wallets.profiles });
  const signers = new SignerService({
    db,
    clock,
    audit,
    ceremonyClient: opts.ceremonyClient ?? signing?.ceremonyClient,
    options: adminOptions,
  });
  const deviceHub = signing?.hub;
  const devices = new DeviceService({
    db,
    clock,
    audit,
    onDeviceRevoked: deviceHub ? (deviceId, status) => deviceHub.revokeDevice(deviceId, status) : undefined,
  });
  await signers.ceremonies.recoverCeremonies();

  const { kek, source: kekSource } = await resolveKeyEncryptionKey({
    ...(opts.webhooks?.keyEncryptionKey !== undefined ? { keyEncryptionKey: opts.webhooks.keyEncryptionKey } : {}),
    ...(opts.dataDir !== undefined ? { dataDir: opts.dataDir } : {}),
  });
  const signingKeys = new WebhookSigningKeys(db, kek, clock, {
    ...DEFAULT_SIGNING_KEY_OPTIONS,
    ...opts.webhooks?.keys,
  });
  await signingKeys.ensureKey();
  const webhookService = new WebhookService(db, clock);
  const registrations = new WebhookRegistrations({
    db,
    clock,
    audit,
    notifications: webhookService,
    signingKeys,
    profiles: wallets.profiles,
    options: adminOptions,
  });

  const app = await createServer({
    rateLimit: { max: opts.rateLimit?.max ?? 600, windowMs: opts.rateLimit?.windowMs ?? 60_000 },
    trustProxy,
    resolveCredential: credentialBucket(apiKeys.store, users.sessions),
    logger: opts.logger ?? true,
    description: API_DECISIONS,
    webhooks: openApiWebhooks(),
    ...(opts.baseUrl !== undefined ? { baseUrl: opts.baseUrl } : {}),
  });
  for (const s of TRANSFER_SCHEMAS) app.addSchema(s);
  const routes: { method: string; url: string; hidden: boolean }[] = [];
  app.addHook('onRoute', (r) => {
    for (const m of [r.method].flat()) {
      if (m !== 'HEAD') routes.push({ method: m, url: r.url, hidden: r.schema?.hide === true });
    }
  });
  const chains = new ChainRegistry(opts.chains ?? {}, undefined, db);
  const policies = new PolicyService(db, clock, {
    trustedAdminKeys: opts.transfers?.trustedAdminKeys ?? [],
    audit: audit.record,
  });
  const transferService = new TransferService(db, clock, policies, chains, {
    approvalWindowMs: opts.transfers?.approvalWindowMs ?? 24 * 3600_000,
    feeCaps,
  });
  const pipeline = new TransferPipeline(
    db,
    clock,
    chains,
    transferService,
    opts.transfers?.gateway ??
      (signing ? { ...signing.gateway, availability: partyAvailability(db, signing) } : undefined),
    {
      ...DEFAULT_PIPELINE_OPTIONS,
      ...opts.transfers?.pipeline,
      log: (level, msg, fields) => app.log[level](fields ?? {}, msg),
    },
  );
  transferService.onWork = () => pipeline.kick();
  if (signing) {
    const hub = signing.hub;
    // every signed version and tombstone reaches the server signers as it takes effect (issue #26 item 3)
    const sync = signing.policySync;
    hub.policySource = () => policies.signedVersions();
    policies.onActivated = async (signed) => {
      hub.pushPolicies([signed]);
      await sync.activated(signed);
    };
    policies.onActivatedError = (err, signed) =>
      app.log.warn({ err, policy_id: signed.document.policy_id }, 'policy version not pushed to the signers');
    hub.pinLegacyPeer = (deviceId, peerId) => devices.pinLegacyPeerId(deviceId, peerId);
    transferService.notifier = {
      notifyApprovalRequest: (devices, r) => {
        for (const d of devices) hub.notifyApprovalRequest(d, r.intent, `${r.transfer_id}:${r.round}`);
      },
      withdrawApprovalRequest: (devices, transferId, round) => {
        for (const d of devices) hub.cancelApprovalRequest(d, `${transferId}:${round}`);
      },
    };
    hub.pendingSource = async (deviceId) =>
      (await transferService.pendingApprovals(deviceId)).map((r) => ({
        requestId: `${r.transfer_id}:${r.round}`,
        intent: r.intent,
      }));
    hub.onApproval((e) => {
      transferService
        .submitApproval(e.approval)
        .catch((err: unknown) => app.log.warn({ err }, 'device approval refused'));
    });
  }
  const ctx: ProfileRoutesContext = {
    store: idempotency,
    wallets,
    idempotency: {
      retentionMs: opts.idempotencyRetentionMs ?? 24 * 3600_000,
      inFlightWaitMs: opts.idempotencyInFlightWaitMs ?? 5000,
    },
  };
  await app.register(
    async (api) => {
      // preParsing: after the rate limit (an onRequest hook), before body parsing and validation.
      api.addHook(
        'preParsing',
        apiKeyHook(apiKeys.store, (id, ip) => apiKeys.auditAddressRefused(id, ip)),
      );
      await walletRoutes(api, ctx);
      await webhookRoutes(api, webhookService);
      await transferRoutes(api, ctx, transferService);
    },
    { prefix: '/api/v1/profiles/:profile_id' },
  );
  const rooms = { audit, users, wallets, apiKeys, signers, devices };
  await app.register(async (a) =>
    adminRoutes(a, {
      db,
      clock,
      options: adminOptions,
      ...rooms,
      webhooks: { registrations, notifications: webhookService, signingKeys },
    }),
  );
  await app.register(async (a) => transferAdminRoutes(a, users.sessions, db, policies, transferService));
  await app.register(async (a) => jwksRoute(a, signingKeys));
  await app.ready();
  // the pre-hello cap counts per client address: the socket peer, or behind a trusted proxy the
  // nearest untrusted X-Forwarded-For hop (as the HTTP routes' rate limits do)
  const trusted = trustProxy.length === 0 ? () => false : proxyaddr.compile(trustProxy);
  signing?.hub.attach(app.server, { clientAddress: (req) => addressBucket(proxyaddr(req, trusted)) });
  if (kekSource === 'ephemeral') {
    app.log.warn('webhook signing keys are encrypted with an in-memory key: set CUSTODIAN_WEBHOOK_KEK or a dataDir');
  }
  const worker = new WebhookWorker(db, signingKeys, {
    ...DEFAULT_WORKER_OPTIONS,
    ...opts.webhooks?.worker,
    mode: opts.mode,
    clock,
    log: (level, msg, fields) => app.log[level](fields ?? {}, msg),
  });

  const purge = setInterval(() => {
    idempotency.purgeIdempotency().catch((err: unknown) => app.log.warn({ err }, 'idempotency purge failed'));
  }, 10 * 60_000);
  purge.unref();

  let stopped = false;
  return {
    app,
    db,
    clock,
    ...rooms,
    idempotency,
    mailboxDir,
    signing,
    transfers: { policies, service: transferService, pipeline, chains },
    routes,
    webhooks: { keys: signingKeys, service: webhookService, worker, registrations },
    async start() {
      const url = await app.listen({ host: opts.listen?.host ?? '127.0.0.1', port: opts.listen?.port ?? 8080 });
      if (opts.webhooks?.runWorker !== false) worker.start();
      if (opts.transfers?.runPipeline !== false) {
        pipeline.start();
        chains.startWatchers(
          db,
          clock,
          async (chain) =>
            (
              await db.query<{ address: string }>(
                'SELECT a.address FROM addresses a JOIN blockchains b USING (blockchain_id) WHERE b.key = $1',
                [chain],
              )
            ).map((r) => r.address),
          async (chain) =>
            (
              await db.query<{ contract_address: string }>(
                `SELECT a.contract_address FROM assets a JOIN blockchains b USING (blockchain_id)
                 WHERE b.key = $1 AND a.contract_address IS NOT NULL`,
                [chain],
              )
            ).map((r) => r.contract_address),
          (chain, err) => app.log.warn({ chain, err: String(err) }, 'deposit watcher poll failed'),
        );
      }
      return url;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(purge);
      await worker.stop();
      await pipeline.stop();
      await chains.stop();
      // device WebSockets first (close code 1001): the HTTP server's close waits for every open
      // socket, upgraded ones included, so a connected phone would hold the stop forever
      signing?.hub.close();
      await app.close();
      await signers.ceremonies.shutdown();
      await signing?.stop();
      await db.close();
    },
  };
}

/**
 * Rate-limit bucket of a request's credential, only once it verifies: `key:<api_key_id>` for a
 * valid `X-API-Key` on the REST API used from an address its `allowed_cidrs` admit, `user:<user_id>` for a live admin session on the admin API.
 * A missing or invalid credential gives `undefined` (the client address's bucket), so inventing
 * header values buys an attacker nothing.
 */
function credentialBucket(apiKeys: ApiKeyStore, sessions: SessionService) {
  return async (req: FastifyRequest): Promise<string | undefined> => {
    const path = req.url;
    if (path.startsWith('/api/v1/')) {
      const raw = req.headers['x-api-key'];
      const secret = Array.isArray(raw) ? raw[0] : raw;
      if (secret === undefined || secret === '' || secret.length > 256) return undefined;
      // A key used from outside its allowed ranges counts against the address, not the key: a leaked
      // key must not let its holder spend the owner's bucket.
      const key = await apiKeys.authenticate(secret, req.ip);
      return key === null || !key.address_allowed ? undefined : `key:${key.api_key_id}`;
    }
    if (path.startsWith('/admin/v1/')) {
      const m = /^Bearer ([A-Za-z0-9_-]{1,200})$/.exec(req.headers.authorization ?? '');
      if (m?.[1] === undefined) return undefined;
      const user = await sessions.sessionUser(m[1]);
      return user === null ? undefined : `user:${user.user_id}`;
    }
    return undefined;
  };
}
