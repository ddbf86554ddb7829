/**
 * Issue #29 "Observability", coordinator side without signers: `/healthz`, `/readyz` (database,
 * migrations, a chain node that does not answer), `/metrics` (its bearer token, `enabled: false`),
 * HTTP requests counted by route pattern (never the raw URL) and webhook deliveries by outcome and
 * attempt, all over real HTTP against a started coordinator; and the docs table of metric names.
 * The signer and transfer side: observability-signers.test.ts.
 */

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { blockchainId } from '../src/directory.js';
import { COORDINATOR_METRIC_NAMES } from '../src/metrics/registry.js';
import { type Harness, startHarness } from './helpers.js';
import { metricValue, parseExposition } from './metrics-text.js';

const ROOT = join(import.meta.dirname, '../../..');

let h: Harness | undefined;
let servers: Server[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const s of servers) await new Promise<void>((r) => s.close(() => r()));
  servers = [];
});

/** An HTTP server on a free loopback port answering every request with `status`. */
async function listen(handler: (status: { code: number }) => void = () => {}): Promise<string> {
  const state = { code: 200 };
  handler(state);
  const s = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(state.code).end());
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

/** A loopback port nothing listens on (a server opened and closed). */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function metrics(h: Harness, token?: string) {
  const res = await fetch(`${h.url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

describe('health endpoints', () => {
  it('healthz 200 {status: ok}; readyz 200 listing database, migrations and signers (skipped without signing)', async () => {
    h = await startHarness({ coordinator: { health: { cacheMs: 0 } } });
    const live = await h.req('GET', '/healthz');
    expect(live).toMatchObject({ status: 200, body: { status: 'ok' } });
    const ready = await h.req('GET', '/readyz');
    expect(ready.status, JSON.stringify(ready.body)).toBe(200);
    expect(ready.body.status).toBe('ready');
    expect(ready.body.checks).toEqual([
      { name: 'database', state: 'pass', reason: 'reachable' },
      { name: 'migrations', state: 'pass', reason: 'current' },
      { name: 'signers', state: 'skip', reason: 'no signing services in this process' },
    ]);
    // not in the OpenAPI document
    const doc = (await h.req('GET', '/api/openapi.json')).body;
    for (const p of ['/healthz', '/readyz', '/metrics']) expect(doc.paths[p]).toBeUndefined();
  });

  it('readyz 503 naming the chain whose node does not answer, without its URL or credentials', async () => {
    const port = await deadPort();
    h = await startHarness({
      coordinator: {
        health: { cacheMs: 0, timeoutMs: 1000 },
        transfers: { runPipeline: false },
        chains: { 'ethereum-local': { rpcUrl: `http://user:s3cret@127.0.0.1:${port}` } },
      },
    });
    const ready = await h.req('GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.status).toBe('not_ready');
    const chain = ready.body.checks.find((c: { name: string }) => c.name === 'chain:ethereum-local');
    expect(chain).toMatchObject({ state: 'fail' });
    expect(JSON.stringify(ready.body)).not.toMatch(/s3cret|user|127\.0\.0\.1|http:/);
    expect(ready.body.checks.find((c: { name: string }) => c.name === 'database').state).toBe('pass');
    const m = await metrics(h);
    expect(metricValue(m, 'custodian_chain_node_up', { chain: 'ethereum-local' })).toBe(0);
    expect(metricValue(m, 'custodian_chain_head_height', { chain: 'ethereum-local' })).toBeUndefined();

    // the node answering: readyz 200, the head height exported
    const head = 0x1234;
    const node = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += String(c);
      });
      req.on('end', () => {
        const { id } = JSON.parse(body) as { id: number };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id, result: `0x${head.toString(16)}` }));
      });
    });
    servers.push(node);
    await new Promise<void>((r) => node.listen(port, '127.0.0.1', () => r()));
    const up = await h.req('GET', '/readyz');
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.checks.find((c: { name: string }) => c.name === 'chain:ethereum-local')).toEqual({
      name: 'chain:ethereum-local',
      state: 'pass',
      reason: `head ${head}`,
    });
    const m2 = await metrics(h);
    expect(metricValue(m2, 'custodian_chain_node_up', { chain: 'ethereum-local' })).toBe(1);
    expect(metricValue(m2, 'custodian_chain_head_height', { chain: 'ethereum-local' })).toBe(head);
  });

  it('readyz 503 when the database is closed', async () => {
    const hh = await startHarness({ db: 'postgres', coordinator: { health: { cacheMs: 0, timeoutMs: 1000 } } });
    try {
      await hh.c.db.close();
      const ready = await hh.req('GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.checks.slice(0, 2)).toEqual([
        { name: 'database', state: 'fail', reason: expect.stringMatching(/^unreachable|no answer/) },
        { name: 'migrations', state: 'fail', reason: 'database unreachable' },
      ]);
      expect((await hh.req('GET', '/healthz')).status).toBe(200);
    } finally {
      // the database is closed already: the coordinator's stop closes it again and rejects
      await hh.close().catch(() => {});
    }
  });
});

describe('/metrics', () => {
  it('counts HTTP requests under the route pattern, never the raw URL, with a latency histogram', async () => {
    h = await startHarness();
    const before = await metrics(h);
    const route = '/api/v1/profiles/:profile_id/wallets';
    const labels = { method: 'GET', route, status: '200' };
    const n0 = metricValue(before, 'custodian_http_requests_total', labels) ?? 0;
    for (let i = 0; i < 3; i++) {
      expect((await h.req('GET', `/api/v1/profiles/${h.profileId}/wallets`, { key: h.apiKey })).status).toBe(200);
    }
    expect((await h.req('GET', `/no/such/${randomUUID()}`)).status).toBe(404);
    const after = await metrics(h);
    expect(metricValue(after, 'custodian_http_requests_total', labels)).toBe(n0 + 3);
    expect(metricValue(after, 'custodian_http_request_duration_seconds_count', labels)).toBe(n0 + 3);
    expect(metricValue(after, 'custodian_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' })).toBe(
      n0 + 3,
    );
    expect(
      metricValue(after, 'custodian_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }),
    ).toBe(1);
    expect(after.types.get('process_cpu_seconds_total')).toBe('counter'); // prom-client's process metrics
    const text = after.text;
    expect(text).not.toContain(h.profileId);
    expect(text).not.toContain('/no/such');
    // one registry per coordinator: a second coordinator in this process starts from zero
    const other = await startHarness();
    try {
      const o = await metrics(other);
      expect(metricValue(o, 'custodian_http_requests_total', labels)).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('bearerToken: 401 problem without it or with a wrong one, 200 with it; enabled: false → 404', async () => {
    h = await startHarness({ coordinator: { metrics: { bearerToken: 'metrics-token-123' } } });
    const none = await fetch(`${h.url}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get('content-type')).toMatch(/problem\+json/);
    expect(((await none.json()) as { code: string }).code).toBe('INVALID_CREDENTIALS');
    const wrong = await fetch(`${h.url}/metrics`, { headers: { authorization: 'Bearer metrics-token-124' } });
    expect(wrong.status).toBe(401);
    const m = await metrics(h, 'metrics-token-123');
    expect(m.names.has('custodian_http_requests_total')).toBe(true);
    await h.close();
    h = await startHarness({ coordinator: { metrics: { enabled: false } } });
    expect((await fetch(`${h.url}/metrics`)).status).toBe(404);
    expect((await h.req('GET', '/healthz')).status).toBe(200);
  });

  it('webhook deliveries by outcome and attempt number', async () => {
    h = await startHarness({ coordinator: { webhooks: { runWorker: false } } });
    let rx = { code: 200 };
    const url = await listen((s) => {
      rx = s;
    });
    rx.code = 503;
    const reg = await h.req('POST', `/admin/v1/profiles/${h.profileId}/webhooks`, {
      token: h.adminToken,
      body: { url, event_types: ['WALLET_CREATED'] },
    });
    expect(reg.status, JSON.stringify(reg.body)).toBe(201);
    const w = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
      key: h.apiKey,
      headers: { 'Idempotency-Key': randomUUID() },
      body: { blockchain_ids: [blockchainId('ethereum-sepolia')], name: 'w' },
    });
    expect(w.status, JSON.stringify(w.body)).toBe(201);
    const worker = h.c.webhooks.worker;
    expect(await worker.runOnce()).toBe(1); // attempt 1: 503 → retry
    h.clockOffset.ms += 30_000;
    rx.code = 204;
    expect(await worker.runOnce()).toBe(1); // attempt 2: delivered
    const m = await metrics(h);
    expect(metricValue(m, 'custodian_webhook_deliveries_total', { outcome: 'retry', attempt: '1' })).toBe(1);
    expect(metricValue(m, 'custodian_webhook_deliveries_total', { outcome: 'delivered', attempt: '2' })).toBe(1);
    expect(metricValue(m, 'custodian_webhook_deliveries_total', { outcome: 'delivered', attempt: '1' })).toBe(
      undefined,
    );
  });
});

describe('settings', () => {
  it('a bad metrics or health setting is refused at creation, naming the key', async () => {
    for (const [coordinator, key] of [
      [{ metrics: { bearerToken: 'short' } }, 'metrics.bearerToken'],
      [{ metrics: { enabled: 'yes' as unknown as boolean } }, 'metrics.enabled'],
      [{ health: { cacheMs: -1 } }, 'health.cacheMs'],
      [{ health: { timeoutMs: 0 } }, 'health.timeoutMs'],
    ] as const) {
      await expect(startHarness({ coordinator })).rejects.toThrow(new RegExp(`^${key.replace('.', '\\.')}: `));
    }
  });
});

describe('docs/observability.md', () => {
  it('its metrics table lists exactly the metrics the coordinator exports, with their types', async () => {
    const doc = readFileSync(join(ROOT, 'docs/observability.md'), 'utf8');
    const section = doc.split('## Coordinator metrics')[1]?.split('\n## ')[0] ?? '';
    const rows = [...section.matchAll(/^\| `(custodian_[a-z_]+)` +\| (counter|gauge|histogram) +\|/gm)].map((r) => ({
      name: r[1] as string,
      type: r[2] as string,
    }));
    expect(rows.map((r) => r.name).sort()).toEqual([...COORDINATOR_METRIC_NAMES].sort());
    h = await startHarness();
    const m = await metrics(h);
    for (const r of rows) expect(m.types.get(r.name), r.name).toBe(r.type);
    expect([...m.types.keys()].filter((n) => n.startsWith('custodian_')).sort()).toEqual(
      [...COORDINATOR_METRIC_NAMES].sort(),
    );
    // the Grafana dashboard queries only metrics that exist
    const dash = readFileSync(join(ROOT, 'docs/grafana-dashboard.json'), 'utf8');
    const used = new Set(
      [...dash.matchAll(/custodian_[a-z_]+/g)]
        .map((x) => x[0].replace(/_(bucket|count|sum)$/, ''))
        .filter((n) => !n.startsWith('custodian_signer_')), // the signer's: packages/signer/test/health-port.test.ts
    );
    for (const name of used) expect(COORDINATOR_METRIC_NAMES as readonly string[], name).toContain(name);
    for (const name of COORDINATOR_METRIC_NAMES) expect([...used], name).toContain(name);
  });
});
