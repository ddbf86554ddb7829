/**
 * `createCoordinator`, the composition root: builds every component of the coordinator in
 * dependency order, each receiving ONE typed components object at construction (nothing is set
 * afterwards; where a component reports to one built after it — policy activations, new transfer
 * work, approval requests, device revocations — it gets an emitter the later one subscribes to),
 * registers the routes on one
 * fastify app, and runs the long-running components with a {@link Lifecycle} (lifecycle.ts):
 * `start()` starts, in this order, the database (open already; closed at stop), the replica
 * registry and bus, the idempotency purge, the signing services (links to the server signers,
 * presignature pool, policy sync), the master key ceremonies (those left RUNNING by a replica that
 * is gone are failed), the key lifecycle and its scheduler, the ceremony recovery, the
 * presignature reconciliation, the bootstrap token (made while the instance has no Admin,
 * users/bootstrap.ts), the HTTP server (listen), the device hub (serves the WebSocket upgrades),
 * the deposit watchers, the transfer pipeline and the webhook worker; `stop()` stops them in
 * reverse. Work that must run on ONE replica of the instance (issue #25) runs under a
 * {@link SingletonLease} (replicas/leases.ts): each chain's deposit watcher (`watcher:<chain>`),
 * the scheduled key refresh (`scheduler:keys`), the presignature reconciliation
 * (`scheduler:presignature-reconcile`), the idempotency purge (`scheduler:idempotency-purge`) and
 * the periodic ceremony recovery (`scheduler:ceremony-recovery`); alone, a replica takes them all
 * at start. The pipeline and the webhook worker are safe on every replica (row leases, SKIP LOCKED). No SQL here: each query lives
 * in the store of the room that owns its table. `custodian coordinator start` calls this.
 * Slightly over 400 lines: the root is the one place that reads every option and wires every room.
 */
import { join } from 'node:path';
import type { PriceSource } from '@custodian/chains';
import type { SignedPolicy } from '@custodian/wire';
import proxyaddr from '@fastify/proxy-addr';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { LiveStreams } from './admin/live.js';
import { adminNetworksFromEnv, parseAdminNetworks } from './admin/networks.js';
import { type AdminOptions, DEFAULT_ADMIN_OPTIONS } from './admin/options.js';
import { adminRoutes } from './admin/routes.js';
import { IdempotencyStore } from './api/idempotency-store.js';
import { apiKeyHook, type ProfileRoutesContext, walletRoutes } from './api/routes.js';
import { ApiKeyService } from './api-keys/service.js';
import { AuditLog } from './audit/service.js';
import { checkDashboardDir, dashboardRoutes } from './dashboard.js';
import { type Db, openPglite, openPostgres } from './db/db.js';
import { migrate, pendingMigrations } from './db/migrations.js';
import { API_DECISIONS } from './decisions.js';
import { DeviceService } from './devices/service.js';
import { DeviceStore } from './devices/store.js';
import { resolveFeeCaps, syncDirectory } from './directory.js';
import { CoordinatorError } from './errors.js';
import { KeyService } from './keys/service.js';
import { Lifecycle, type Startable } from './lifecycle.js';
import { createMailer, DEFAULT_MAIL_FROM, type MailerOptions } from './mailer.js';
import { ReadinessProbe, resolveReadinessOptions } from './metrics/readiness.js';
import { createCoordinatorMetrics } from './metrics/registry.js';
import { httpMetricsHook, observabilityRoutes, resolveMetricsOptions } from './metrics/routes.js';
import type { Coordinator, CoordinatorOptions } from './options.js';
import { PgReplicaBus } from './replicas/bus.js';
import { SingletonLease } from './replicas/leases.js';
import {
  DEFAULT_REPLICA_OPTIONS,
  ensureSharedIdentity,
  type ReplicaOptions,
  ReplicaRegistry,
} from './replicas/registry.js';
import { credentialBucket } from './request-bucket.js';
import { addressBucket, createServer, HttpServer, parseTrustProxy } from './server.js';
import { SignerService } from './signers/service.js';
import { MasterKeyStore, ServerSignerStore } from './signers/store.js';
import { BlameStore } from './signing/blame-store.js';
import { pooledCounts } from './signing/presignature-pool.js';
import { createSigningServices, type SigningServices } from './signing/services.js';
import { transferAdminRoutes } from './transfers/admin-routes.js';
import { ChainRegistry } from './transfers/chains.js';
import { DEFAULT_PIPELINE_OPTIONS, TransferPipeline } from './transfers/pipeline.js';
import { PolicyService } from './transfers/policies.js';
import { priceSourceFromConfig } from './transfers/prices.js';
import { TRANSFER_SCHEMAS, transferRoutes } from './transfers/routes.js';
import { TransferService, transferSignals } from './transfers/service.js';
import { countByStatus } from './transfers/view.js';
import { watcherHeights } from './transfers/watcher-store.js';
import { BootstrapTokens } from './users/bootstrap.js';
import { UserService } from './users/service.js';
import { type Clock, Emitter, systemClock } from './util.js';
import { WalletService } from './wallets/service.js';
import { WatchList } from './wallets/watch-list.js';
import { openApiWebhooks } from './webhooks/events.js';
import { DEFAULT_SIGNING_KEY_OPTIONS, resolveKeyEncryptionKey, WebhookSigningKeys } from './webhooks/keys.js';
import { WebhookRegistrations } from './webhooks/registrations.js';
import { jwksRoute, webhookRoutes } from './webhooks/routes.js';
import { WebhookService } from './webhooks/service.js';
import { WebhookTargetAllowlist } from './webhooks/target-allowlist.js';
import { DEFAULT_WORKER_OPTIONS, WebhookWorker } from './webhooks/worker.js';

export type { Coordinator, CoordinatorOptions, WebhookOptions } from './options.js';

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

/** Build a coordinator: database (migrated, directory synced), services and routes; not started. */
export async function createCoordinator(opts: CoordinatorOptions): Promise<Coordinator> {
  const clock = opts.clock ?? systemClock;
  // configuration errors before anything is opened
  if (opts.dashboardDir !== undefined) checkDashboardDir(opts.dashboardDir);
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
  resolveMetricsOptions(opts.metrics);
  resolveReadinessOptions(opts.health);
  const allowedTargets = WebhookTargetAllowlist.parse(opts.webhooks?.allowedTargets ?? []);
  // the price source logs through the server's logger, which exists only once built
  const priceLog: { to?: (msg: string, fields: Record<string, unknown>) => void } = {};
  const prices = priceSourceFromConfig(opts.prices, (msg, fields) => priceLog.to?.(msg, fields));
  const mail = resolveMail(opts);
  const mailboxDir = mail.mailboxDir;
  const { db } = await runMigrations(opts);
  let signing: SigningServices | undefined;
  try {
    return await build(
      opts,
      { clock, feeCaps, trustProxy, adminNetworks, allowedTargets, prices, priceLog, mailboxDir, db },
      (s) => {
        signing = s;
      },
    );
  } catch (e) {
    // what construction opened (the caller's own database stays open)
    await signing?.stop().catch(() => undefined);
    if (opts.db === undefined) await db.close().catch(() => undefined);
    throw e;
  }
}

/** What {@link createCoordinator} resolved before building. */
interface Resolved {
  clock: Clock;
  feeCaps: ReturnType<typeof resolveFeeCaps>;
  trustProxy: string[];
  adminNetworks: AdminOptions['adminNetworks'];
  allowedTargets: WebhookTargetAllowlist;
  prices: PriceSource | undefined;
  priceLog: { to?: (msg: string, fields: Record<string, unknown>) => void };
  mailboxDir: string | undefined;
  db: Db;
}

async function build(
  opts: CoordinatorOptions,
  { clock, feeCaps, trustProxy, adminNetworks, allowedTargets, prices, priceLog, mailboxDir, db }: Resolved,
  built: (signing: SigningServices) => void,
): Promise<Coordinator> {
  await db.tx((q) => syncDirectory(q, opts.mode === 'development'));
  // this process as one of the instance's replicas (issue #25): its heartbeat, and the bus that
  // carries what another replica must act on (phones connected there, ceremonies run there)
  const replicaOptions: ReplicaOptions = { ...DEFAULT_REPLICA_OPTIONS, ...opts.replicas };
  let replicaLog: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void = () => {};
  const replicaLogFn = (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) =>
    replicaLog(level, msg, fields);
  const registry = new ReplicaRegistry({ db, options: replicaOptions, log: replicaLogFn });
  const bus = new PgReplicaBus({ db, replicaId: registry.id, options: replicaOptions, log: replicaLogFn });
  // the ceremonies this process runs name it as their owner (recovery fails only a gone owner's)
  const ceremonyOwner = { id: registry.id, ttlMs: replicaOptions.ttlMs };
  const idempotency = new IdempotencyStore({ db, clock });
  const audit = new AuditLog({ db, clock });
  const wallets = new WalletService({ db, clock, audit });
  const mailer = opts.mailer ?? createMailer(resolveMail(opts).mailer);
  const adminOptions: AdminOptions = { ...DEFAULT_ADMIN_OPTIONS, ...opts.admin, adminNetworks, mode: opts.mode };
  const bootstrapTokenFile =
    opts.bootstrapTokenFile ?? (opts.dataDir !== undefined ? join(opts.dataDir, 'bootstrap-token') : undefined);
  // its log reaches the fastify logger built below (the token file is known before the app)
  let bootstrapLog: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void = () => {};
  const bootstrap = new BootstrapTokens({
    db,
    clock,
    file: bootstrapTokenFile,
    log: (level, msg, fields) => bootstrapLog(level, msg, fields),
    replica: { id: registry.id, ttlMs: replicaOptions.ttlMs },
  });
  const users = new UserService({
    db,
    clock,
    audit,
    mailer,
    profiles: wallets.profiles,
    options: adminOptions,
    bootstrap,
  });
  const apiKeys = new ApiKeyService({ db, clock, audit, profiles: wallets.profiles });
  const app = await createServer({
    rateLimit: { max: opts.rateLimit?.max ?? 600, windowMs: opts.rateLimit?.windowMs ?? 60_000 },
    trustProxy,
    resolveCredential: credentialBucket(apiKeys.store, users.sessions),
    logger: opts.logger ?? true,
    description: API_DECISIONS,
    webhooks: openApiWebhooks(),
    ...(opts.baseUrl !== undefined ? { baseUrl: opts.baseUrl } : {}),
  });
  const log = (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) =>
    app.log[level](fields ?? {}, msg);
  priceLog.to = (msg, fields) => log('warn', msg, fields);
  bootstrapLog = log;
  replicaLog = log;
  const chains = new ChainRegistry(opts.chains ?? {}, prices, db);
  // one registry per coordinator (metrics/registry.ts); the gauges read at scrape time go through
  // the readiness probe (cached chain heads), built below once the signing services exist
  let readiness: ReadinessProbe | undefined;
  // set at the start of stop(): /readyz answers shutting_down while the components drain
  let stopBegun = false;
  // this replica's singleton leases (built with the lifecycle below), for leases() and the gauge
  let singletons: SingletonLease[] = [];
  const metrics = createCoordinatorMetrics({
    snapshot: () => (readiness as ReadinessProbe).snapshot(),
    poolTarget: opts.signing?.enabled ? (opts.signing.presignaturePool ?? 4) : 0,
    singletons: () => singletons,
  });
  httpMetricsHook(app, metrics);
  // the checked blames of every ceremony (issue #23): written by the signing gateway, the master key
  // and lifecycle ceremonies, read by the ceremonies' admin views
  const blames = new BlameStore({ db, clock, metrics: metrics.signing });
  // the transfers room reports activations, new work and approval requests on emitters built here:
  // their listeners (signing services, pipeline, device hub) are built after it and subscribe below
  const activations = new Emitter<[signed: SignedPolicy]>();
  const policies = new PolicyService({
    db,
    clock,
    trustedAdminKeys: opts.transfers?.trustedAdminKeys ?? [],
    audit: audit.record,
    activations,
  });
  const signals = transferSignals();
  const transferService = new TransferService({
    db,
    clock,
    policies,
    chains,
    options: { approvalWindowMs: opts.transfers?.approvalWindowMs ?? 24 * 3600_000, feeCaps },
    signals,
    metrics: metrics.transfers,
  });
  // the devices room reports revocations to the hub, the hub pins legacy peer ids through the
  // devices room: an emitter built before both breaks that cycle (devices/hub-types.ts)
  const revocations = new Emitter<[deviceId: string, status: string]>();
  let signingRef: SigningServices | undefined;
  const devices = new DeviceService({
    db,
    clock,
    audit,
    onDeviceRevoked: opts.signing?.enabled ? (id, status) => revocations.emit(id, status) : undefined,
    // the signing services are built below (they need the devices room): read at call time
    pushRevocations: async () => signingRef?.keyOps.pushRevocations(),
  });
  // the pre-hello cap counts per client address: the socket peer, or behind a trusted proxy the
  // nearest untrusted X-Forwarded-For hop (as the HTTP routes' rate limits do)
  const trusted = trustProxy.length === 0 ? () => false : proxyaddr.compile(trustProxy);
  const signing = opts.signing?.enabled
    ? await createSigningServices({
        db,
        masterKeys: new MasterKeyStore({ db, clock }),
        signers: new ServerSignerStore({ db }),
        devices: new DeviceStore({ db }),
        hub: {
          pinLegacyPeer: (deviceId, peerId) => devices.pinLegacyPeerId(deviceId, peerId),
          revocations,
          approvals: {
            pending: async (deviceId) =>
              (await transferService.pendingApprovals(deviceId)).map((r) => ({
                requestId: `${r.transfer_id}:${r.round}`,
                intent: r.intent,
              })),
            decided: (e) => {
              transferService
                .submitApproval(e.approval)
                .catch((err: unknown) => app.log.warn({ err }, 'device approval refused'));
            },
          },
          policies,
          server: app.server,
          clientAddress: (req) => addressBucket(proxyaddr(req, trusted)),
        },
        // phones on any replica (issue #25): the hub routes through the bus
        replicas: { bus, registry },
        ...(opts.dataDir !== undefined ? { dataDir: opts.dataDir } : {}),
        ...(opts.signing.algorithms ? { algorithms: opts.signing.algorithms } : {}),
        // the reconciliation runs on one replica (a singleton lease, below), the refills on each
        presignaturePool: {
          ...(opts.signing.presignaturePool !== undefined ? { target: opts.signing.presignaturePool } : {}),
          ...(opts.signing.presignatureReconcileMs !== undefined
            ? { reconcileMs: opts.signing.presignatureReconcileMs }
            : {}),
          reconcileScheduling: 'external',
        },
        ...(opts.signing.deviceSockets ? { deviceSockets: opts.signing.deviceSockets } : {}),
        log: pino({ level: process.env.CUSTODIAN_SIGNING_LOG ?? 'warn', base: { service: 'coordinator-signing' } }),
        metrics: metrics.signing,
        blames,
      })
    : undefined;
  if (signing) built(signing);
  signingRef = signing;
  // every replica shares one coordinator identity (signers and phones pin it): refuse another one
  if (signing) await ensureSharedIdentity(db, signing.peerId);
  const signers = new SignerService({
    db,
    clock,
    audit,
    ceremonyClient: opts.ceremonyClient ?? signing?.ceremonyClient,
    options: adminOptions,
    blames,
    ...(signing ? { links: { link: (peerId: string) => signing.signerLink(peerId) } } : {}),
    replica: ceremonyOwner,
    log,
  });
  const keys = new KeyService({
    db,
    clock,
    audit,
    ceremonies: signers.ceremonies,
    port: signing?.keyOps,
    pool: signing?.presignatures,
    blames,
    options: {
      minMobileSigners: adminOptions.minMobileSigners,
      dkgTimeoutMs: adminOptions.dkgTimeoutMs,
      ...opts.keys,
    },
    log,
    replica: ceremonyOwner,
  });
  const pipeline = new TransferPipeline({
    db,
    clock,
    chains,
    service: transferService,
    gateway: opts.transfers?.gateway ?? signing?.gateway,
    options: { ...DEFAULT_PIPELINE_OPTIONS, ...opts.transfers?.pipeline, log },
    metrics: metrics.transfers,
  });
  const gateway = opts.transfers?.gateway ?? signing?.gateway;
  readiness = new ReadinessProbe({
    queries: {
      ping: () => db.query('SELECT 1'),
      pendingMigrations: () => pendingMigrations(db),
      transfersByStatus: () => countByStatus(db),
      pooledPresignatures: () => pooledCounts(db),
      watcherHeights: () => watcherHeights(db),
    },
    chains,
    masterKeys: new MasterKeyStore({ db, clock }),
    availability: gateway?.availability?.bind(gateway),
    stopping: () => stopBegun,
    ...(opts.health !== undefined ? { options: opts.health } : {}),
  });
  // new work wakes the pipeline this process runs (none when `runPipeline` is false)
  if (opts.transfers?.runPipeline !== false) signals.work.on(() => pipeline.kick());
  if (signing) {
    const { hub, policySync } = signing;
    // every signed version and tombstone reaches the server signers as it takes effect (issue #26 item 3)
    const pushFailed = (err: unknown, signed: SignedPolicy) =>
      app.log.warn({ err, policy_id: signed.document.policy_id }, 'policy version not pushed to the signers');
    activations.on((signed) => {
      try {
        hub.pushPolicies([signed]);
      } catch (err) {
        pushFailed(err, signed);
      }
      policySync.activated(signed).catch((err: unknown) => pushFailed(err, signed));
    });
    signals.approvalRequests.on((devices, r) => {
      for (const d of devices) hub.notifyApprovalRequest(d, r.intent, `${r.transfer_id}:${r.round}`);
    });
    signals.approvalWithdrawals.on((devices, transferId, round) => {
      for (const d of devices) hub.cancelApprovalRequest(d, `${transferId}:${round}`);
    });
  }

  const { kek, source: kekSource } = await resolveKeyEncryptionKey({
    ...(opts.webhooks?.keyEncryptionKey !== undefined ? { keyEncryptionKey: opts.webhooks.keyEncryptionKey } : {}),
    ...(opts.dataDir !== undefined ? { dataDir: opts.dataDir } : {}),
  });
  const signingKeys = new WebhookSigningKeys(
    db,
    kek,
    clock,
    { ...DEFAULT_SIGNING_KEY_OPTIONS, ...opts.webhooks?.keys },
    // an in-memory KEK cannot outlive the process: its keys are replaced (docs/webhooks.md "At rest")
    opts.webhooks?.replaceUnreadableKeys === true || kekSource === 'ephemeral' ? 'replace' : 'refuse',
  );
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
    allowedTargets,
  });
  const worker = new WebhookWorker({
    db,
    keys: signingKeys,
    options: { ...DEFAULT_WORKER_OPTIONS, ...opts.webhooks?.worker, allowedTargets, mode: opts.mode, clock, log },
    metrics: metrics.webhooks,
  });

  const routes: { method: string; url: string; hidden: boolean }[] = [];
  app.addHook('onRoute', (r) => {
    for (const m of [r.method].flat()) {
      if (m !== 'HEAD') routes.push({ method: m, url: r.url, hidden: r.schema?.hide === true });
    }
  });
  for (const s of TRANSFER_SCHEMAS) app.addSchema(s);
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
  const live = new LiveStreams(app, users.sessions, opts.liveStreams);
  const rooms = { audit, users, wallets, apiKeys, signers, devices, keys, live };
  await app.register(async (a) =>
    adminRoutes(a, {
      db,
      clock,
      options: adminOptions,
      ...rooms,
      webhooks: { registrations, notifications: webhookService, signingKeys },
    }),
  );
  await app.register(async (a) => transferAdminRoutes(a, users.sessions, db, policies, transferService, live));
  await app.register(async (a) => jwksRoute(a, signingKeys));
  await app.register(async (a) =>
    observabilityRoutes(a, {
      metrics,
      readiness: readiness as ReadinessProbe,
      options: resolveMetricsOptions(opts.metrics),
    }),
  );
  if (opts.dashboardDir !== undefined) await dashboardRoutes(app, opts.dashboardDir);
  await app.ready();
  if (kekSource === 'ephemeral') {
    app.log.warn('webhook signing keys are encrypted with an in-memory key: set CUSTODIAN_WEBHOOK_KEK or a dataDir');
  }

  const http = new HttpServer({ app, ...opts.listen });
  const watchList = new WatchList({ db });
  const runPipeline = opts.transfers?.runPipeline !== false;
  // work done by ONE replica of the instance at a time, each under its singleton lease
  const lease = (name: string, component: Startable) =>
    new SingletonLease({
      db,
      owner: registry.id,
      name,
      leaseMs: replicaOptions.leaseMs,
      component,
      log: replicaLogFn,
    });
  const recoverCeremonies = async () => {
    const failed = await signers.ceremonies.recoverCeremonies();
    if (failed.length > 0)
      log('warn', 'ceremonies of a coordinator replica that is gone failed', { ceremonies: failed });
    await keys.resumeCommits();
  };
  const purgeLease = lease('scheduler:idempotency-purge', idempotencyPurge(idempotency, app));
  const keysLease = lease('scheduler:keys', keys.scheduler);
  const recoveryLease = lease(
    'scheduler:ceremony-recovery',
    every(replicaOptions.heartbeatMs, recoverCeremonies, (err) =>
      log('warn', 'ceremony recovery failed', { err: err instanceof Error ? err.message : String(err) }),
    ),
  );
  const reconcileLease = signing
    ? lease('scheduler:presignature-reconcile', signing.presignatures.reconciliation)
    : undefined;
  const watcherLeases = runPipeline
    ? chains.keys().map((key) => {
        // the watcher's commits are fenced by its own lease (built right below: read at commit time)
        let held: SingletonLease | undefined;
        const watcher = chains.watcher(key, {
          db,
          clock,
          addresses: (chain) => watchList.addresses(chain),
          tokens: (chain) => watchList.tokenContracts(chain),
          onError: (chain, err) => app.log.warn({ chain, err: String(err) }, 'deposit watcher poll failed'),
          fence: (q) => (held as SingletonLease).fence(q),
        });
        held = lease(`watcher:${key}`, watcher);
        return held;
      })
    : [];
  singletons = [purgeLease, keysLease, recoveryLease, ...(reconcileLease ? [reconcileLease] : []), ...watcherLeases];
  // transfers/ classes whose start() returns void: adapted here until they implement Startable
  const lifecycle = new Lifecycle([
    { name: 'database', component: { start: async () => {}, stop: () => db.close() } },
    { name: 'replica registry', component: registry },
    { name: 'replica bus', component: bus },
    { name: 'idempotency purge', component: purgeLease },
    ...(signing ? [{ name: 'signing services', component: signing }] : []),
    {
      name: 'master key ceremonies',
      component: { start: recoverCeremonies, stop: () => signers.ceremonies.shutdown() },
    },
    { name: 'key lifecycle', component: keys },
    { name: 'key lifecycle scheduler', component: keysLease },
    { name: 'ceremony recovery', component: recoveryLease },
    ...(reconcileLease ? [{ name: 'presignature reconciliation', component: reconcileLease }] : []),
    { name: 'bootstrap token', component: bootstrap },
    { name: 'http server', component: http },
    ...(signing ? [{ name: 'device hub', component: signing.hub }] : []),
    { name: 'deposit watchers', enabled: runPipeline, component: all(watcherLeases) },
    {
      name: 'transfer pipeline',
      enabled: runPipeline,
      component: { start: async () => pipeline.start(), stop: () => pipeline.stop() },
    },
    { name: 'webhook worker', enabled: opts.webhooks?.runWorker !== false, component: worker },
  ]);

  return {
    app,
    db,
    clock,
    ...rooms,
    idempotency,
    replicas: { registry, bus, leases: () => singletons.filter((l) => l.held).map((l) => l.name) },
    mailboxDir,
    bootstrapTokenFile,
    signing,
    transfers: { policies, service: transferService, pipeline, chains, signals },
    routes,
    webhooks: { keys: signingKeys, service: webhookService, worker, registrations },
    components: lifecycle.names,
    metrics,
    readiness,
    stopping: () => lifecycle.stopping,
    async start() {
      await lifecycle.start();
      return http.url as string;
    },
    stop: () => {
      stopBegun = true;
      return lifecycle.stop();
    },
  };
}

/**
 * The mail transport of {@link CoordinatorOptions.mail}: SMTP, or the file mailbox (development
 * default). @throws CoordinatorError MAIL_NOT_CONFIGURED in production without `mail` (and no
 * `mailer`); CONFIG_INVALID for a `mail.url` that is not smtp:/smtps:, or the file mailbox
 * without a folder
 */
function resolveMail(opts: CoordinatorOptions): { mailer: MailerOptions; mailboxDir: string | undefined } {
  const dir = opts.mailboxDir ?? (opts.dataDir !== undefined ? join(opts.dataDir, 'mailbox') : undefined);
  const mail =
    opts.mail ?? (opts.mode === 'development' || opts.mailer !== undefined ? { transport: 'file' } : undefined);
  if (mail === undefined) {
    throw new CoordinatorError(
      'MAIL_NOT_CONFIGURED',
      'production mode needs a mail transport for login codes: set `mail` in the config file ' +
        '({ "transport": "smtp", "url": "smtp://user:pass@host:587", "from": "Custodian <custodian@example.com>" }), ' +
        'or --smtp-url / CUSTODIAN_SMTP_URL; or { "transport": "file" } to keep them in <data-dir>/mailbox (docs/configuration.md)',
    );
  }
  const from = mail.from ?? DEFAULT_MAIL_FROM;
  if (mail.transport === 'smtp') {
    let scheme: string | undefined;
    try {
      scheme = new URL(mail.url).protocol;
    } catch {}
    if (scheme !== 'smtp:' && scheme !== 'smtps:')
      throw new CoordinatorError('CONFIG_INVALID', 'mail.url: expected smtp://[user:pass@]host[:port] or smtps://…');
    return { mailer: { from, smtpUrl: mail.url }, mailboxDir: opts.mailboxDir };
  }
  if (dir === undefined && opts.mailer === undefined)
    throw new CoordinatorError('CONFIG_INVALID', 'mail: the file mailbox needs mailboxDir or dataDir');
  return { mailer: { from, ...(dir !== undefined ? { mailboxDir: dir } : {}) }, mailboxDir: dir };
}

/** Purge of expired idempotency records every 10 minutes. */
function idempotencyPurge(idempotency: IdempotencyStore, app: FastifyInstance): Startable {
  let timer: NodeJS.Timeout | undefined;
  return {
    async start() {
      timer ??= setInterval(() => {
        idempotency.purgeIdempotency().catch((err: unknown) => app.log.warn({ err }, 'idempotency purge failed'));
      }, 10 * 60_000);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
    },
  };
}

/** Run `run` every `ms` (not overlapping itself), starting at once; `onError` logs a failed run. */
function every(ms: number, run: () => Promise<void>, onError: (err: unknown) => void): Startable {
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  let stopped = true;
  const tick = () => {
    current = run()
      .catch(onError)
      .finally(() => {
        if (stopped) return;
        timer = setTimeout(tick, ms);
        timer.unref();
      });
  };
  return {
    async start() {
      if (!stopped) return;
      stopped = false;
      tick();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
    },
  };
}

/** Several components as one: started in order, stopped together. */
function all(components: readonly Startable[]): Startable {
  return {
    async start() {
      for (const c of components) await c.start();
    },
    async stop() {
      await Promise.all(components.map((c) => c.stop()));
    },
  };
}
