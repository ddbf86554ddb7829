/**
 * The signer daemon's optional local HTTP port (`--health-port` / config `healthPort`, default
 * off; bound to `healthHost`, default 127.0.0.1): `GET /healthz` (200 `{"status":"ok"}` while the
 * process serves), `GET /readyz` (200 when every check passes, else 503; checks: `store` — the
 * encrypted store answers a read; `coordinator` — the coordinator's libp2p connection is up (it
 * dials this signer); `keys` — the key shares held, skipped while there are none), and
 * `GET /metrics` (Prometheus text; docs/observability.md "Signer metrics"). Nothing secret is
 * served: key ids, counts, states.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Metric names of the signer daemon, for docs and tests. */
export const SIGNER_METRIC_NAMES = [
  'custodian_signer_ceremonies_total',
  'custodian_signer_ceremony_duration_seconds',
  'custodian_signer_presignatures_held',
  'custodian_signer_keys',
  'custodian_signer_coordinator_connected',
] as const;

/** What the health port reads from the daemon. */
export interface SignerHealthSource {
  /** Key ids held (reads the store: fails when the store does not answer). */
  keys(): Promise<string[]>;
  /** Pooled presignatures per `key/signing set` slot. */
  presignatures(): Promise<Record<string, number>>;
  /** Whether the coordinator's libp2p connection is up now. */
  coordinatorConnected(): boolean;
}

/** The signer's registry and the metrics the daemon observes. */
export interface SignerMetrics {
  readonly registry: Registry;
  /** Ceremonies finished, labels `kind` (master_key, sign, refresh, presign, reshare, reshare_commit, drill), `outcome` (ok, aborted, …). */
  readonly ceremonies: Counter<'kind' | 'outcome'>;
  /** Seconds per ceremony, same labels. */
  readonly duration: Histogram<'kind' | 'outcome'>;
}

/** Build the signer's registry; the gauges read `source` at scrape time. */
export function createSignerMetrics(source: SignerHealthSource): SignerMetrics {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'custodian_signer_presignatures_held',
    help: 'Pooled CGGMP21 presignatures this signer holds, per key and signing set',
    labelNames: ['slot'],
    registers,
    async collect() {
      this.reset();
      for (const [slot, n] of Object.entries(await source.presignatures())) this.set({ slot }, n);
    },
  });
  new Gauge({
    name: 'custodian_signer_keys',
    help: 'Key shares this signer holds',
    registers,
    async collect() {
      this.set((await source.keys()).length);
    },
  });
  new Gauge({
    name: 'custodian_signer_coordinator_connected',
    help: 'Whether the coordinator is connected (1) or not (0)',
    registers,
    collect() {
      this.set(source.coordinatorConnected() ? 1 : 0);
    },
  });
  return {
    registry,
    ceremonies: new Counter({
      name: 'custodian_signer_ceremonies_total',
      help: 'Ceremonies this signer finished, by kind and outcome',
      labelNames: ['kind', 'outcome'],
      registers,
    }),
    duration: new Histogram({
      name: 'custodian_signer_ceremony_duration_seconds',
      help: 'Ceremony duration at this signer (seconds), by kind and outcome',
      labelNames: ['kind', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      registers,
    }),
  };
}

/** One readiness check. */
export interface SignerCheck {
  name: 'store' | 'coordinator' | 'keys';
  state: 'pass' | 'fail' | 'skip';
  reason: string;
}

/** Run the signer's readiness checks. Never rejects. */
export async function signerReadiness(source: SignerHealthSource): Promise<SignerCheck[]> {
  const checks: SignerCheck[] = [];
  let keys: string[] | undefined;
  try {
    keys = await source.keys();
    checks.push({ name: 'store', state: 'pass', reason: 'open' });
  } catch (e) {
    checks.push({ name: 'store', state: 'fail', reason: `not readable (${e instanceof Error ? e.name : 'error'})` });
  }
  checks.push(
    source.coordinatorConnected()
      ? { name: 'coordinator', state: 'pass', reason: 'connected' }
      : { name: 'coordinator', state: 'fail', reason: 'not connected (the coordinator dials this signer)' },
  );
  if (keys === undefined) checks.push({ name: 'keys', state: 'fail', reason: 'store not readable' });
  else if (keys.length === 0) checks.push({ name: 'keys', state: 'skip', reason: 'no key yet' });
  else checks.push({ name: 'keys', state: 'pass', reason: `${keys.length} held` });
  return checks;
}

/**
 * Start the health port on `host:port` (port 0: any free port).
 * @returns the fastify app (close it at stop) and its base URL; logs the URL on `log`
 * @throws the listen error (e.g. EADDRINUSE)
 */
export async function startHealthServer(
  source: SignerHealthSource,
  metrics: SignerMetrics,
  listen: { host: string; port: number },
  log?: { info(fields: object, msg: string): void },
): Promise<{ app: FastifyInstance; url: string }> {
  const app = Fastify({ logger: false });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    const checks = await signerReadiness(source);
    const ready = checks.every((c) => c.state !== 'fail');
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks });
  });
  app.get('/metrics', async (_req, reply) =>
    reply.header('content-type', metrics.registry.contentType).send(await metrics.registry.metrics()),
  );
  const url = await app.listen({ host: listen.host, port: listen.port });
  log?.info({ url }, 'health port listening (/healthz, /readyz, /metrics)');
  return { app, url };
}

const KIND_LABELS: Record<number, string> = {
  1: 'master_key',
  2: 'sign',
  3: 'refresh',
  4: 'presign',
  5: 'reshare',
  6: 'reshare_commit',
  7: 'drill',
};
const OUTCOME_LABELS: Record<number, string> = { 1: 'ok', 2: 'aborted', 3: 'deadline_exceeded', 4: 'refused' };

/**
 * One ceremony in the metrics: `kind` (`CeremonyKind` of @custodian/wire), `outcome` (`Outcome`;
 * undefined: it threw → `error`), seconds since `began` (`performance.now()`).
 */
export function observeCeremony(m: SignerMetrics, kind: number, outcome: number | undefined, began: number): void {
  const labels = {
    kind: KIND_LABELS[kind] ?? 'other',
    outcome: outcome === undefined ? 'error' : (OUTCOME_LABELS[outcome] ?? 'other'),
  };
  m.ceremonies.inc(labels);
  m.duration.observe(labels, (performance.now() - began) / 1000);
}
