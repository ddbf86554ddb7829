/**
 * The coordinator's Prometheus metrics (docs/observability.md lists each one): ONE prom-client
 * `Registry` per coordinator instance (never the global default registry — tests run several
 * coordinators in one process), with named metric objects that the composition root hands to the
 * components through their components/options objects at construction:
 *
 * - `http` — requests by route pattern (never the raw URL) and status, and their latency;
 * - `transfers` — moves of the state machine and the time spent in each status
 *   (transfers/machine.ts `transition()` observes them); the count per status is read from the
 *   database at scrape time ({@link DbSnapshot});
 * - `signing` — signing latency per algorithm and presignature (pooled / cold), ceremony outcomes
 *   by kind and the parties named in blame (signing/gateway.ts, presignature-pool.ts, the master
 *   key ceremony client);
 * - `webhooks` — delivery attempts by outcome and attempt number (webhooks/worker.ts);
 * - the presignature pool depth and the chain watchers' lag, read at scrape time.
 *
 * Values read from the database or the chain nodes are gathered once per {@link DbSnapshot}
 * period (default 2 s) however often `/metrics` is scraped.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Metric names of the coordinator, for docs and tests (docs/observability.md has one row each). */
export const COORDINATOR_METRIC_NAMES = [
  'custodian_http_requests_total',
  'custodian_http_request_duration_seconds',
  'custodian_transfers',
  'custodian_transfer_transitions_total',
  'custodian_transfer_status_duration_seconds',
  'custodian_signing_duration_seconds',
  'custodian_ceremonies_total',
  'custodian_ceremony_blame_total',
  'custodian_blame_reports_total',
  'custodian_presignature_pool_depth',
  'custodian_presignature_pool_target',
  'custodian_webhook_deliveries_total',
  'custodian_chain_node_up',
  'custodian_chain_head_height',
  'custodian_chain_watcher_height',
  'custodian_chain_watcher_lag_blocks',
  'custodian_singleton_leases_held',
] as const;

/** HTTP metrics (observed by the hook of metrics/routes.ts). */
export interface HttpMetrics {
  /** Labels `method`, `route` (the route pattern, `unmatched` for 404s), `status`. */
  readonly requests: Counter<'method' | 'route' | 'status'>;
  /** Seconds from request to response; same labels. */
  readonly duration: Histogram<'method' | 'route' | 'status'>;
}

/** Transfer state machine metrics (observed by transfers/machine.ts). */
export interface TransferMetrics {
  /** Moves, labels `from`, `to` (a status to itself counts: sub-status changes, fee bumps). */
  readonly transitions: Counter<'from' | 'to'>;
  /** Seconds a transfer spent in `status` before it left it (SENT: until the confirmation). */
  readonly statusDuration: Histogram<'status'>;
}

/** Signing and ceremony metrics (observed by the signing room and the master key ceremony client). */
export interface SigningMetrics {
  /** Seconds of one SIGN ceremony; labels `algorithm` (ecdsa, schnorr, eddsa), `presignature` (pooled, cold), `outcome`. */
  readonly duration: Histogram<'algorithm' | 'presignature' | 'outcome'>;
  /** Ceremonies finished, labels `kind` (sign, presign, master_key), `outcome` (lower-case code). */
  readonly ceremonies: Counter<'kind' | 'outcome'>;
  /** Parties named in an identifiable abort's blame, labels `kind`, `party` (`server:<id>` / `device:<id>`). */
  readonly blame: Counter<'kind' | 'party'>;
  /**
   * Blames signers reported, as the coordinator checked them (signing/blame-store.ts), labels
   * `check` (the failed check's stable id, e.g. `echo.equivocation`), `verified` (`true` / `false`).
   */
  readonly blameReports: Counter<'check' | 'verified'>;
}

/** Webhook delivery metrics (observed by webhooks/worker.ts). */
export interface WebhookMetrics {
  /** Attempts finished, labels `outcome` (delivered, retry, failed), `attempt` (1..5 within the series). */
  readonly deliveries: Counter<'outcome' | 'attempt'>;
}

/** One chain node as a probe saw it (metrics/readiness.ts). */
export interface ChainProbe {
  /** Directory blockchain key. */
  chain: string;
  /** Head height, or undefined when the node did not answer in time. */
  head: number | undefined;
  /** The deposit watcher's cursor height, when it has one. */
  watcher: number | undefined;
}

/** What the scrape-time gauges read: counts from the database and the chain probes. */
export interface DbSnapshot {
  transfers: { status: string; n: number }[];
  pool: { key_id: string; signing_set: string; n: number }[];
  chains: ChainProbe[];
}

/** Source of the scrape-time gauges (metrics/readiness.ts builds it over the database and chains). */
export type SnapshotSource = () => Promise<DbSnapshot>;

/** The named metric objects of one coordinator and their registry. */
export interface CoordinatorMetrics {
  readonly registry: Registry;
  readonly http: HttpMetrics;
  readonly transfers: TransferMetrics;
  readonly signing: SigningMetrics;
  readonly webhooks: WebhookMetrics;
  /**
   * Start prom-client's process and Node.js metrics in this registry (idempotent; `/metrics` calls
   * it before each scrape): their samplers (event loop delay, GC observer) run only in a
   * coordinator that is scraped, not in every coordinator a test process builds.
   */
  processMetrics(): void;
}

/** Options of {@link createCoordinatorMetrics}. */
export interface CoordinatorMetricsOptions {
  /** Reads the scrape-time gauges; absent: those gauges stay empty. */
  snapshot?: SnapshotSource;
  /** Presignatures kept per (key, signing set), exported as `custodian_presignature_pool_target`. */
  poolTarget?: number;
  /**
   * This replica's singleton leases (replicas/leases.ts) and whether it holds each now, read at
   * scrape time: `custodian_singleton_leases_held{lease}` (1 held, 0 not). Absent: empty.
   */
  singletons?: () => readonly { readonly name: string; readonly held: boolean }[];
}

/** Latency buckets (seconds) of HTTP requests. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Latency buckets (seconds) of signing ceremonies. */
const SIGN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120];
/** Buckets (seconds) of the time in a status: a second to a day. */
const STATUS_BUCKETS = [1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600];

/**
 * Build one coordinator's registry and metrics. The scrape-time gauges (transfers per status, pool
 * depth, chain heights and lag) read `options.snapshot` once per scrape (shared by all of them).
 */
export function createCoordinatorMetrics(options: CoordinatorMetricsOptions = {}): CoordinatorMetrics {
  const registry = new Registry();
  const registers = [registry];

  // one snapshot per scrape: every gauge's collect() shares the promise of the first
  let current: Promise<DbSnapshot | undefined> | undefined;
  const snapshot = (): Promise<DbSnapshot | undefined> => {
    if (options.snapshot === undefined) return Promise.resolve(undefined);
    current ??= options.snapshot().catch(() => undefined);
    const p = current;
    setImmediate(() => {
      if (current === p) current = undefined;
    });
    return p;
  };

  const http: HttpMetrics = {
    requests: new Counter({
      name: 'custodian_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    }),
    duration: new Histogram({
      name: 'custodian_http_request_duration_seconds',
      help: 'HTTP request latency (seconds), by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_BUCKETS,
      registers,
    }),
  };
  const transfers: TransferMetrics = {
    transitions: new Counter({
      name: 'custodian_transfer_transitions_total',
      help: 'Transfer status moves, by from and to status',
      labelNames: ['from', 'to'],
      registers,
    }),
    statusDuration: new Histogram({
      name: 'custodian_transfer_status_duration_seconds',
      help: 'Seconds a transfer spent in a status before leaving it (SENT: until confirmed)',
      labelNames: ['status'],
      buckets: STATUS_BUCKETS,
      registers,
    }),
  };
  const signing: SigningMetrics = {
    duration: new Histogram({
      name: 'custodian_signing_duration_seconds',
      help: 'Signing ceremony latency (seconds), by algorithm, presignature (pooled/cold) and outcome',
      labelNames: ['algorithm', 'presignature', 'outcome'],
      buckets: SIGN_BUCKETS,
      registers,
    }),
    ceremonies: new Counter({
      name: 'custodian_ceremonies_total',
      help: 'Ceremonies finished, by kind and outcome',
      labelNames: ['kind', 'outcome'],
      registers,
    }),
    blame: new Counter({
      name: 'custodian_ceremony_blame_total',
      help: 'Parties named by an identifiable abort, by ceremony kind and party',
      labelNames: ['kind', 'party'],
      registers,
    }),
    blameReports: new Counter({
      name: 'custodian_blame_reports_total',
      help: 'Blames reported by signers, by failed check and whether the coordinator verified the evidence',
      labelNames: ['check', 'verified'],
      registers,
    }),
  };
  const webhooks: WebhookMetrics = {
    deliveries: new Counter({
      name: 'custodian_webhook_deliveries_total',
      help: 'Webhook delivery attempts finished, by outcome and attempt number',
      labelNames: ['outcome', 'attempt'],
      registers,
    }),
  };

  new Gauge({
    name: 'custodian_transfers',
    help: 'Transfers per status (read from the database)',
    labelNames: ['status'],
    registers,
    async collect() {
      const s = await snapshot();
      this.reset();
      for (const r of s?.transfers ?? []) this.set({ status: r.status }, r.n);
    },
  });
  new Gauge({
    name: 'custodian_presignature_pool_depth',
    help: 'Pooled CGGMP21 presignatures per master key and signing set (read from the database)',
    labelNames: ['key_id', 'signing_set'],
    registers,
    async collect() {
      const s = await snapshot();
      this.reset();
      for (const r of s?.pool ?? []) this.set({ key_id: r.key_id, signing_set: r.signing_set }, r.n);
    },
  });
  const target = new Gauge({
    name: 'custodian_presignature_pool_target',
    help: 'Presignatures the pool keeps per master key and signing set (0: pool off)',
    registers,
  });
  target.set(options.poolTarget ?? 0);
  new Gauge({
    name: 'custodian_singleton_leases_held',
    help: 'Singleton leases of this replica (a chain watcher, a scheduler): 1 held (runs here), 0 not',
    labelNames: ['lease'],
    registers,
    collect() {
      this.reset();
      for (const l of options.singletons?.() ?? []) this.set({ lease: l.name }, l.held ? 1 : 0);
    },
  });
  const chainGauge = (name: string, help: string, value: (p: ChainProbe) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames: ['chain'],
      registers,
      async collect() {
        const s = await snapshot();
        this.reset();
        for (const p of s?.chains ?? []) {
          const v = value(p);
          if (v !== undefined) this.set({ chain: p.chain }, v);
        }
      },
    });
  chainGauge('custodian_chain_node_up', 'Whether the chain node answered the last probe (1) or not (0)', (p) =>
    p.head === undefined ? 0 : 1,
  );
  chainGauge('custodian_chain_head_height', 'Head block height the chain node reported', (p) => p.head);
  chainGauge('custodian_chain_watcher_height', 'Block height the deposit watcher has processed', (p) => p.watcher);
  chainGauge('custodian_chain_watcher_lag_blocks', 'Blocks between the node head and the deposit watcher', (p) =>
    p.head === undefined || p.watcher === undefined ? undefined : Math.max(0, p.head - p.watcher),
  );

  let processMetrics = false;
  return {
    registry,
    http,
    transfers,
    signing,
    webhooks,
    processMetrics() {
      if (processMetrics) return;
      processMetrics = true;
      collectDefaultMetrics({ register: registry });
    },
  };
}

/** Label value of a gateway algorithm name. */
export function algorithmLabel(algorithm: string): string {
  switch (algorithm) {
    case 'SECP256K1_ECDSA':
      return 'ecdsa';
    case 'SECP256K1_TAPROOT':
      return 'schnorr';
    case 'ED25519':
      return 'eddsa';
    default:
      return 'other';
  }
}

/** Label value of a ceremony outcome: lower case, a refusal's code dropped (`REFUSED:X` → `refused`). */
export function outcomeLabel(outcome: string): string {
  return (outcome.split(':')[0] ?? outcome).toLowerCase();
}
