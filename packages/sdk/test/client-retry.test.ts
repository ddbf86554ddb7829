/**
 * The client's retries against a real local HTTP server that answers what a loaded or restarting
 * coordinator (or a proxy) answers: 429 and 503 with `Retry-After` (seconds or HTTP-date), a
 * dropped connection. Counts the attempts the server saw and checks that every attempt of one
 * create call carried the same `Idempotency-Key`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CustodianApiError, createCustodianClient, retryAfterMs, SdkError } from '../src/index.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PROFILE = randomUUID();
const WALLETS = `/api/v1/profiles/${PROFILE}/wallets`;

interface Seen {
  method: string;
  url: string;
  idempotencyKey: string | undefined;
  apiKey: string | undefined;
  body: string;
}

const servers: Server[] = [];
afterEach(async () => {
  while (servers.length > 0) {
    const s = servers.pop()!;
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A server answering the n-th request (0-based) with `answer(n, req, res)`; returns its URL and what it saw. */
async function serve(answer: (n: number, req: IncomingMessage, res: ServerResponse) => void) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const n = seen.length;
      seen.push({
        method: req.method!,
        url: req.url!,
        idempotencyKey: req.headers['idempotency-key'] as string | undefined,
        apiKey: req.headers['x-api-key'] as string | undefined,
        body,
      });
      answer(n, req, res);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const problem = (res: ServerResponse, status: number, code: string, headers: Record<string, string> = {}) =>
  res
    .writeHead(status, { 'content-type': 'application/problem+json', ...headers })
    .end(
      JSON.stringify({ type: `https://errors.example/${code}`, title: code, status, code, detail: `${code} detail` }),
    );
const wallet = (res: ServerResponse) =>
  res
    .writeHead(201, { 'content-type': 'application/json' })
    .end(JSON.stringify({ wallet_id: randomUUID(), name: 'w', addresses: [] }));
const client = (url: string, retry = {}) =>
  createCustodianClient({ baseUrl: url, apiKey: 'cst_test', retry: { baseDelayMs: 1, ...retry } });
const createWallet = (url: string, retry = {}) =>
  client(url, retry).POST('/api/v1/profiles/{profile_id}/wallets', {
    params: { path: { profile_id: PROFILE } },
    body: { blockchain_ids: [randomUUID()] },
  });

describe('retries of a create call', () => {
  it('retries 429 and 503 after Retry-After (seconds, HTTP-date) with the same Idempotency-Key', async () => {
    const { url, seen } = await serve((n, _req, res) => {
      if (n === 0) return problem(res, 429, 'RATE_LIMITED', { 'retry-after': '0' });
      if (n === 1)
        return problem(res, 503, 'SHUTTING_DOWN', { 'retry-after': new Date(Date.now() - 1000).toUTCString() });
      wallet(res);
    });
    const { data, response } = await createWallet(url);
    expect(response.status).toBe(201);
    expect(data.wallet_id).toMatch(UUID);
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(Array(3).fill(`POST ${WALLETS}`));
    expect(seen[0]!.idempotencyKey).toMatch(UUID);
    expect(new Set(seen.map((s) => s.idempotencyKey)).size).toBe(1);
    expect(new Set(seen.map((s) => s.body)).size).toBe(1);
    expect(seen.every((s) => s.apiKey === 'cst_test')).toBe(true);
  });

  it('a new call gets a new key; a key passed by the caller is used as is', async () => {
    const { url, seen } = await serve((_n, _req, res) => wallet(res));
    await createWallet(url);
    await createWallet(url);
    const mine = randomUUID();
    await client(url).POST('/api/v1/profiles/{profile_id}/wallets', {
      params: { path: { profile_id: PROFILE }, header: { 'idempotency-key': mine } },
      body: { blockchain_ids: [randomUUID()] },
    });
    expect(seen).toHaveLength(3);
    expect(seen[0]!.idempotencyKey).not.toBe(seen[1]!.idempotencyKey);
    expect(seen[2]!.idempotencyKey).toBe(mine);
  });

  it('stops after maxAttempts and throws the last answer as CustodianApiError', async () => {
    const { url, seen } = await serve((_n, _req, res) => problem(res, 503, 'SHUTTING_DOWN', { 'retry-after': '0' }));
    const err = await createWallet(url, { maxAttempts: 3 }).catch((e) => e);
    expect(err).toBeInstanceOf(CustodianApiError);
    expect(err).toBeInstanceOf(SdkError);
    expect(err.code).toBe('SHUTTING_DOWN');
    expect(err.status).toBe(503);
    expect(err.retryAfter).toBe('0');
    expect(err.message).toContain('SHUTTING_DOWN detail');
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((s) => s.idempotencyKey)).size).toBe(1);
  });

  it('retries 409 with Retry-After (the same key still in flight) and not a 409 without it', async () => {
    const a = await serve((n, _req, res) =>
      n === 0 ? problem(res, 409, 'IDEMPOTENCY_REQUEST_IN_PROGRESS', { 'retry-after': '0' }) : wallet(res),
    );
    expect((await createWallet(a.url)).response.status).toBe(201);
    expect(a.seen).toHaveLength(2);
    expect(a.seen[1]!.idempotencyKey).toBe(a.seen[0]!.idempotencyKey);

    const b = await serve((_n, _req, res) => problem(res, 409, 'NO_MASTER_KEY'));
    await expect(createWallet(b.url)).rejects.toMatchObject({ code: 'NO_MASTER_KEY', status: 409 });
    expect(b.seen).toHaveLength(1);
  });

  it('refuses an invalid retry policy when the client is created', () => {
    expect(() => client('http://127.0.0.1:1', { maxAttempts: 0 })).toThrow(RangeError);
    expect(() => client('http://127.0.0.1:1', { maxDelayMs: -1 })).toThrow(RangeError);
    expect(() => createCustodianClient({ baseUrl: 'ftp://example.com' })).toThrow(TypeError);
  });

  it('caps a long Retry-After at maxDelayMs', async () => {
    const { url, seen } = await serve((n, _req, res) =>
      n === 0 ? problem(res, 429, 'RATE_LIMITED', { 'retry-after': '86400' }) : wallet(res),
    );
    const { response } = await createWallet(url, { maxDelayMs: 5 });
    expect(response.status).toBe(201);
    expect(seen).toHaveLength(2);
  });

  it('retries a dropped connection of a keyed create with the same key', async () => {
    const { url, seen } = await serve((n, req, res) => (n === 0 ? req.socket.destroy() : wallet(res)));
    const { response } = await createWallet(url);
    expect(response.status).toBe(201);
    expect(seen).toHaveLength(2);
    expect(seen[1]!.idempotencyKey).toBe(seen[0]!.idempotencyKey);
  });
});

describe('requests that may not be repeated', () => {
  const dryRun = (url: string) =>
    client(url).POST('/api/v1/profiles/{profile_id}/transfers/dry-run', {
      params: { path: { profile_id: PROFILE } },
      body: { wallet_id: randomUUID(), asset_id: randomUUID(), destination_address: '0x0', amount: '1' },
    });

  it('an unkeyed POST is not retried on 503 nor after a dropped connection, but is on 429', async () => {
    const a = await serve((_n, _req, res) => problem(res, 503, 'SHUTTING_DOWN', { 'retry-after': '0' }));
    await expect(dryRun(a.url)).rejects.toMatchObject({ code: 'SHUTTING_DOWN', status: 503 });
    expect(a.seen).toHaveLength(1);
    expect(a.seen[0]!.idempotencyKey).toBeUndefined();

    const b = await serve((_n, req) => req.socket.destroy());
    const err = await dryRun(b.url).catch((e) => e);
    expect(err).toBeInstanceOf(SdkError);
    expect(err.code).toBe('NETWORK_ERROR');
    expect(b.seen).toHaveLength(1);

    const c = await serve((n, _req, res) =>
      n === 0
        ? problem(res, 429, 'RATE_LIMITED', { 'retry-after': '0' })
        : res.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
    );
    await dryRun(c.url);
    expect(c.seen).toHaveLength(2);
  });

  it('a GET is retried after a dropped connection; without an answer at all it ends in NETWORK_ERROR', async () => {
    const a = await serve((n, req, res) =>
      n === 0
        ? req.socket.destroy()
        : res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ data: [], page: 1, page_size: 50, total: 0 })),
    );
    const { data } = await client(a.url).GET('/api/v1/profiles/{profile_id}/wallets', {
      params: { path: { profile_id: PROFILE } },
    });
    expect(data.total).toBe(0);
    expect(a.seen).toHaveLength(2);

    const b = await serve((_n, req) => req.socket.destroy());
    const err = await client(b.url, { maxAttempts: 2 })
      .GET('/api/v1/profiles/{profile_id}/wallets', { params: { path: { profile_id: PROFILE } } })
      .catch((e) => e);
    expect(err.code).toBe('NETWORK_ERROR');
    expect(b.seen).toHaveLength(2);
  });

  it('an error answer without problem details is HTTP_<status>', async () => {
    const { url } = await serve((_n, _req, res) =>
      res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>'),
    );
    await expect(
      client(url).GET('/api/v1/profiles/{profile_id}/assets', { params: { path: { profile_id: PROFILE } } }),
    ).rejects.toMatchObject({ code: 'HTTP_502', status: 502, problem: undefined });
  });
});

describe('retryAfterMs', () => {
  it('reads delay-seconds and HTTP-dates, and nothing else', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('7', now)).toBe(7000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Wed, 31 Dec 2025 23:59:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs('-5', now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });
});
