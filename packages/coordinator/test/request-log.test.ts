/**
 * Issue #29 (observability): one info line per HTTP request — method, route pattern, status,
 * response time — instead of fastify's two, and no secret (Authorization, cookie, API key, query
 * token) in it. The real server (createServer) on a real socket, its pino output captured.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createServer } from '../src/server.js';

describe('request log', () => {
  it('logs one line per request with method, route, status and time, and no credential', async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l));
        done();
      },
    });
    const app = await createServer({
      rateLimit: { max: 1000, windowMs: 60_000 },
      trustProxy: [],
      logger: { level: 'info', stream },
      description: 'test',
    });
    app.get('/things/:thing_id', async () => ({ ok: true }));
    await app.ready();
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const res = await fetch(`${url}/things/th_1?token=query-secret-value`, {
        headers: {
          authorization: 'Bearer header-secret-value',
          cookie: 'session=cookie-secret-value',
          'x-api-key': 'apikey-secret-value',
        },
      });
      expect(res.status).toBe(200);
      await fetch(`${url}/nowhere`);
    } finally {
      await app.close();
    }
    const requests = lines.filter(
      (l) => l.msg === 'request' || /incoming request|request completed/.test(String(l.msg)),
    );
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatchObject({ level: 30, method: 'GET', url: '/things/:thing_id', status: 200 });
    expect(typeof requests[0]?.response_time_ms).toBe('number');
    expect(requests[1]).toMatchObject({ method: 'GET', url: '(no route)', status: 404 });
    expect(JSON.stringify(lines)).not.toMatch(/secret-value|th_1/);
  });
});
