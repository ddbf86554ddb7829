/**
 * /metrics, /readyz and /healthz under load and at shutdown (#29 review):
 * - the scrape-time database reads of /metrics (GROUP BY over transfers and presignatures) run at
 *   most once per `health.cacheMs`, however often it is scraped (queries counted on the real
 *   database object);
 * - each of the three routes is rate limited per client address (120 per minute), answering 429
 *   problem+json RATE_LIMITED beyond it instead of being exempt;
 * - once `stop()` has begun, /readyz answers 503 with the check `shutting_down` at once, even with
 *   a cached "ready" result.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('observability endpoints under load and at shutdown', () => {
  it('N scrapes within health.cacheMs run the scrape-time database queries once', async () => {
    h = await startHarness({ coordinator: { health: { cacheMs: 60_000 } } });
    const db = h.c.db;
    const query = db.query.bind(db);
    const counts = { transfers: 0, presignatures: 0 };
    db.query = ((sql: string, params?: readonly unknown[]) => {
      if (/FROM transfers GROUP BY/.test(sql)) counts.transfers++;
      if (/FROM presignatures GROUP BY/.test(sql)) counts.presignatures++;
      return query(sql, params);
    }) as typeof db.query;
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${h.url}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(/custodian_/);
    }
    expect(counts).toEqual({ transfers: 1, presignatures: 1 });
  });

  it.each(['/healthz', '/readyz', '/metrics'])(
    '%s: over 120 requests a minute from one address → 429',
    async (path) => {
      h = await startHarness({ coordinator: { health: { cacheMs: 60_000 } } });
      for (let i = 0; i < 120; i++) {
        const res = await fetch(`${h!.url}${path}`);
        await res.arrayBuffer();
        expect(res.status, `request ${i + 1}`).toBe(200);
      }
      const res = await fetch(`${h.url}${path}`);
      expect(res.status).toBe(429);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(((await res.json()) as { code: string }).code).toBe('RATE_LIMITED');
    },
  );

  it('/readyz answers 503 shutting_down as soon as stop() has begun, bypassing the cache', async () => {
    h = await startHarness({ coordinator: { health: { cacheMs: 60_000 } } });
    const first = await fetch(`${h.url}/readyz`);
    expect(first.status).toBe(200);
    const stopped = h.c.stop();
    const r = await h.c.readiness.check();
    expect(r.ready).toBe(false);
    expect(r.checks).toEqual([{ name: 'shutting_down', state: 'fail', reason: 'the coordinator is stopping' }]);
    await stopped;
  });
});
