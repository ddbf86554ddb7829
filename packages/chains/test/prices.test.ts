/**
 * USD price sources (#29, `fee_value_usd`): the HTTP endpoint source against a real local HTTP
 * server (node:http on port 0) — price by JSON path, cache (requests counted), shared in-flight
 * lookups, timeout and errors giving null plus one log line without the URL's secrets — the
 * static-then-HTTP chain, and the exact decimal conversion of JSON prices.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirstPriceSource, HttpPriceSource, priceText, StaticPriceSource, usdValue } from '../src/index.js';

/** Answers by path; counts requests per path. */
let server: Server;
let base = '';
const hits = new Map<string, number>();
const routes: Record<string, (res: ServerResponse) => void> = {};

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const route = routes[path];
    if (route === undefined) res.writeHead(404).end('{}');
    else route(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const json = (body: unknown) => (res: ServerResponse) =>
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/** A fresh path prefix per test, so each test owns its routes and counters. */
function scope(): { prefix: string; count: (symbol: string) => number } {
  const prefix = `/t${Math.random().toString(36).slice(2)}`;
  return { prefix, count: (s) => hits.get(`${prefix}/${s}`) ?? 0 };
}

describe('HttpPriceSource', () => {
  it('reads the price at the path, caches it for ttlMs (requests counted), then asks again', async () => {
    const { prefix, count } = scope();
    routes[`${prefix}/ETH`] = json({ usd: '3012.45' });
    let now = 1_000_000;
    const src = new HttpPriceSource({ url: `${base}${prefix}/{symbol}`, ttlMs: 60_000, now: () => now });
    expect(await src.usdPrice('eth')).toBe('3012.45');
    expect(await src.usdPrice('ETH')).toBe('3012.45');
    now += 59_999;
    expect(await src.usdPrice('ETH')).toBe('3012.45');
    expect(count('ETH')).toBe(1);
    routes[`${prefix}/ETH`] = json({ usd: '3100' });
    now += 1;
    expect(await src.usdPrice('ETH')).toBe('3100');
    expect(count('ETH')).toBe(2);
  });

  it('concurrent lookups of one symbol share one request', async () => {
    const { prefix, count } = scope();
    routes[`${prefix}/BTC`] = (res) => setTimeout(() => json({ usd: 97000.5 })(res), 50);
    const src = new HttpPriceSource({ url: `${base}${prefix}/{symbol}` });
    expect(await Promise.all([src.usdPrice('BTC'), src.usdPrice('BTC'), src.usdPrice('BTC')])).toEqual([
      '97000.5',
      '97000.5',
      '97000.5',
    ]);
    expect(count('BTC')).toBe(1);
  });

  it('a nested path and a JSON number (exponent form too) give exact decimal strings', async () => {
    const { prefix } = scope();
    routes[`${prefix}/TRX`] = json({ data: { price: 0.2512 } });
    routes[`${prefix}/SHIB`] = json({ data: { price: 1.2e-7 } });
    const src = new HttpPriceSource({ url: `${base}${prefix}/{symbol}`, path: 'data.price' });
    expect(await src.usdPrice('TRX')).toBe('0.2512');
    expect(await src.usdPrice('SHIB')).toBe('0.00000012');
  });

  it('a timeout gives null and a log line, without the URL path or query; not cached', async () => {
    const { prefix, count } = scope();
    const pending: ServerResponse[] = [];
    routes[`${prefix}/ETH`] = (res) => pending.push(res); // never answers
    const logs: [string, Record<string, unknown>][] = [];
    const src = new HttpPriceSource({
      url: `${base}${prefix}/{symbol}?api_key=SECRET-KEY-123`,
      timeoutMs: 200,
      log: (m, f) => logs.push([m, f]),
    });
    expect(await src.usdPrice('ETH')).toBeNull();
    expect(logs).toHaveLength(1);
    expect(logs[0]![1]).toMatchObject({ symbol: 'ETH', error: 'no answer within 200 ms' });
    expect(JSON.stringify(logs)).not.toMatch(/SECRET-KEY|api_key|\/t/);
    for (const r of pending) r.destroy();
    routes[`${prefix}/ETH`] = json({ usd: '2999.99' });
    expect(await src.usdPrice('ETH')).toBe('2999.99'); // the failure was not cached
    expect(count('ETH')).toBe(2);
  });

  it.each([
    ['HTTP 503', (res: ServerResponse) => res.writeHead(503).end('down'), /HTTP 503/],
    ['not JSON', (res: ServerResponse) => res.writeHead(200).end('<html>'), /SyntaxError/],
    ['no field', json({ price: '1' }), /no non-negative decimal at "usd"/],
    ['negative', json({ usd: -1 }), /no non-negative decimal/],
    ['not a number', json({ usd: '12abc' }), /no non-negative decimal/],
    ['an array', json([{ usd: '1' }]), /no non-negative decimal/],
  ])('%s gives null and a log line', async (_name, route, why) => {
    const { prefix } = scope();
    routes[`${prefix}/ETH`] = route;
    const logs: Record<string, unknown>[] = [];
    const src = new HttpPriceSource({ url: `${base}${prefix}/{symbol}`, log: (_m, f) => logs.push(f) });
    expect(await src.usdPrice('ETH')).toBeNull();
    expect(logs).toHaveLength(1);
    expect(String(logs[0]!.error)).toMatch(why);
  });

  it('a refused connection gives null and a log line', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const logs: Record<string, unknown>[] = [];
    const src = new HttpPriceSource({ url: `http://127.0.0.1:${port}/{symbol}`, log: (_m, f) => logs.push(f) });
    expect(await src.usdPrice('ETH')).toBeNull();
    expect(logs).toHaveLength(1);
  });

  it('refuses a URL with a user name or password (fetch would put the whole URL in its error)', () => {
    expect(() => new HttpPriceSource({ url: 'https://user:SECRET-KEY@p.example/{symbol}' })).toThrow(
      /url: no user name or password/,
    );
    expect(() => new HttpPriceSource({ url: 'https://SECRET-KEY@p.example/{symbol}' })).toThrow(RangeError);
  });

  it('sends the configured headers; a failure logs only the error name, never a header or the query', async () => {
    const { prefix } = scope();
    let seen: string | undefined;
    routes[`${prefix}/ETH`] = (res) => res.writeHead(503).end('down');
    const hook = (req: IncomingMessage) => {
      if (req.url?.startsWith(prefix)) seen = req.headers['x-api-key'] as string | undefined;
    };
    server.on('request', hook);
    const logs: [string, Record<string, unknown>][] = [];
    const src = new HttpPriceSource({
      url: `${base}${prefix}/{symbol}?api_key=SECRET-QUERY`,
      headers: { 'x-api-key': 'SECRET-HEADER' },
      log: (m, f) => logs.push([m, f]),
    });
    expect(await src.usdPrice('ETH')).toBeNull();
    server.off('request', hook);
    expect(seen).toBe('SECRET-HEADER');
    // A header value fetch refuses: its error message quotes the value; the log must not.
    const bad = new HttpPriceSource({
      url: `${base}${prefix}/{symbol}?api_key=SECRET-QUERY`,
      headers: { 'x-api-key': 'SECRET-HEADER\u0000' },
      log: (m, f) => logs.push([m, f]),
    });
    expect(await bad.usdPrice('ETH')).toBeNull();
    expect(logs).toHaveLength(2);
    expect(logs[1]![1].error).toBe('TypeError');
    expect(JSON.stringify(logs)).not.toMatch(/SECRET/);
  });

  it.each([
    [{ url: 'ftp://x/{symbol}' }, /url: must be http/],
    [{ url: 'https://prices.example/eth' }, /\{symbol\}/],
    [{ url: 'not a url {symbol}' }, /url: not an absolute URL/],
    [{ url: 'https://p.example/{symbol}', path: 'a..b' }, /path/],
    [{ url: 'https://p.example/{symbol}', ttlMs: -1 }, /ttlMs/],
    [{ url: 'https://p.example/{symbol}', timeoutMs: 0 }, /timeoutMs/],
  ])('refuses a malformed setting %j', (o, why) => {
    expect(() => new HttpPriceSource(o)).toThrow(why);
  });
});

describe('FirstPriceSource and exact conversion', () => {
  it('asks the static table first, then the endpoint', async () => {
    const { prefix, count } = scope();
    routes[`${prefix}/ETH`] = json({ usd: '1' });
    routes[`${prefix}/BTC`] = json({ usd: '90000' });
    const src = new FirstPriceSource([
      new StaticPriceSource({ ETH: '3000.00' }),
      new HttpPriceSource({ url: `${base}${prefix}/{symbol}` }),
    ]);
    expect(await src.usdPrice('ETH')).toBe('3000.00');
    expect(await src.usdPrice('BTC')).toBe('90000');
    expect(await src.usdPrice('LTC')).toBeNull(); // 404 from the endpoint
    expect(count('ETH')).toBe(0);
  });

  it('priceText keeps decimal strings exact and truncates beyond 18 decimals', () => {
    expect(priceText('3012.450')).toBe('3012.45');
    expect(priceText('0.1234567890123456789999')).toBe('0.123456789012345678');
    expect(priceText(1e21)).toBe('1000000000000000000000');
    expect(priceText(0.1)).toBe('0.1');
    expect(priceText('1e3')).toBeNull();
    expect(priceText(Number.NaN)).toBeNull();
    // 0.1 + 0.2 in floats is 0.30000000000000004; in base units × decimal price it stays exact
    expect(usdValue(10n ** 17n + 2n * 10n ** 17n, 18, '3000.10')).toBe('900.03');
  });
});
