/**
 * The operational endpoints of the coordinator (docs/observability.md), outside the REST API and
 * its OpenAPI document (hidden), unauthenticated, each with its own per-address rate limit
 * ({@link OBSERVABILITY_RATE_LIMIT}; 429 problem beyond it) instead of the API's:
 *
 * - `GET /healthz` — 200 `{"status":"ok"}` while the process serves HTTP;
 * - `GET /readyz` — 200 `{"status":"ready","checks":[…]}` when every check passes, else 503
 *   `{"status":"not_ready","checks":[…]}` (metrics/readiness.ts; cached a few seconds);
 * - `GET /metrics` — the Prometheus text exposition of this coordinator's registry, when
 *   `metrics.enabled` (default); with `metrics.bearerToken` it needs `Authorization: Bearer <token>`
 *   (401 problem otherwise). Firewall it: route names and counts are operational detail.
 *
 * Also the HTTP metrics hook: every response is counted under its route pattern
 * (`req.routeOptions.url`, never the raw URL; `unmatched` when no route matched).
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';
import { clientAddressKey } from '../server.js';
import type { ReadinessProbe } from './readiness.js';
import type { CoordinatorMetrics } from './registry.js';

/** Settings of `/metrics` (config `metrics`). */
export interface MetricsOptions {
  /** Serve `GET /metrics`. Default true. */
  enabled: boolean;
  /** When set, `/metrics` requires `Authorization: Bearer <bearerToken>`. Default none. */
  bearerToken?: string | undefined;
}

/**
 * Check and complete the `metrics` settings.
 * @throws RangeError naming `metrics.enabled` (not a boolean) or `metrics.bearerToken` (not a string of 16..512 visible ASCII characters)
 */
export function resolveMetricsOptions(o: Partial<MetricsOptions> = {}): MetricsOptions {
  if (o.enabled !== undefined && typeof o.enabled !== 'boolean') throw new RangeError('metrics.enabled: true or false');
  const t = o.bearerToken;
  if (t !== undefined && (typeof t !== 'string' || !/^[\x21-\x7e]{16,512}$/.test(t)))
    throw new RangeError('metrics.bearerToken: 16 to 512 visible ASCII characters');
  return { enabled: o.enabled ?? true, bearerToken: t };
}

/** What {@link observabilityRoutes} serves. */
export interface ObservabilityComponents {
  readonly metrics: CoordinatorMetrics;
  readonly readiness: ReadinessProbe;
  readonly options: MetricsOptions;
}

/** Count every response in `metrics.http` (a root hook: covers routes registered after it). */
export function httpMetricsHook(app: FastifyInstance, metrics: CoordinatorMetrics): void {
  app.addHook('onResponse', async (req, reply) => {
    const labels = {
      method: req.method,
      route: req.routeOptions.url ?? 'unmatched',
      status: String(reply.statusCode),
    };
    metrics.http.requests.inc(labels);
    metrics.http.duration.observe(labels, reply.elapsedTime / 1000);
  });
}

function tokenMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer (.+)$/i.exec(header ?? '');
  if (!m?.[1]) return false;
  const a = Buffer.from(m[1]);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Rate limit of each of `/healthz`, `/readyz` and `/metrics`: per client address (never per
 * credential), generous for probes and scrapers (a probe every second fits), not unlimited.
 */
export const OBSERVABILITY_RATE_LIMIT = { max: 120, timeWindow: 60_000 } as const;

/** Register `/healthz`, `/readyz` and (when enabled) `/metrics`. */
export async function observabilityRoutes(app: FastifyInstance, c: ObservabilityComponents): Promise<void> {
  const config = { rateLimit: { ...OBSERVABILITY_RATE_LIMIT, keyGenerator: clientAddressKey } };
  app.get('/healthz', { schema: { hide: true }, config }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true }, config }, async (_req, reply) => {
    const r = await c.readiness.check();
    return reply
      .code(r.ready ? 200 : 503)
      .header('cache-control', 'no-store')
      .send({ status: r.ready ? 'ready' : 'not_ready', checks: r.checks });
  });
  if (!c.options.enabled) return;
  const token = c.options.bearerToken;
  app.get('/metrics', { schema: { hide: true }, config }, async (req, reply) => {
    if (token !== undefined && !tokenMatches(req.headers.authorization, token)) {
      throw new ApiError('INVALID_CREDENTIALS', 'GET /metrics needs Authorization: Bearer <metrics.bearerToken>');
    }
    c.metrics.processMetrics();
    const body = await c.metrics.registry.metrics();
    return reply.header('content-type', c.metrics.registry.contentType).header('cache-control', 'no-store').send(body);
  });
}
