/**
 * The SDK's REST client against a live coordinator (real socket, PGlite): typed calls, the API key
 * header, the automatic Idempotency-Key, problem+json answers thrown as CustodianApiError, the real
 * rate limit's 429 + Retry-After, and a create whose answer is lost (a real proxy in front of the
 * coordinator drops it and answers 503): the retry carries the same key and the coordinator
 * replays the first result — exactly one wallet.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { blockchainId } from '../../coordinator/src/directory.js';
import { type Harness, startHarness } from '../../coordinator/test/helpers.js';
import { CustodianApiError, createCustodianClient } from '../src/index.js';

const ETH = blockchainId('ethereum-mainnet');
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!();
});

async function harness(coordinator = {}): Promise<Harness> {
  const h = await startHarness({ coordinator });
  cleanup.push(() => h.close());
  return h;
}

async function walletCount(h: Harness): Promise<number> {
  const r = await h.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM wallets WHERE profile_id = $1', [
    h.profileId,
  ]);
  return r[0]!.n;
}

describe('createCustodianClient against a coordinator', () => {
  it('creates and reads a wallet with typed calls (API key and Idempotency-Key added by the client)', async () => {
    const h = await harness();
    const custody = createCustodianClient({ baseUrl: h.url, apiKey: h.apiKey });
    const profile_id = h.profileId;
    const { data: chains } = await custody.GET('/api/v1/profiles/{profile_id}/blockchains', {
      params: { path: { profile_id }, query: { page_size: 200 } },
    });
    expect(chains.data.some((b) => b.blockchain_id === ETH)).toBe(true);

    const { data: wallet, response } = await custody.POST('/api/v1/profiles/{profile_id}/wallets', {
      params: { path: { profile_id } },
      body: { blockchain_ids: [ETH], name: 'sdk' },
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('idempotent-replayed')).toBeNull();
    expect(wallet.addresses[0]?.blockchain_id).toBe(ETH);

    const { data: wallets } = await custody.GET('/api/v1/profiles/{profile_id}/wallets', {
      params: { path: { profile_id } },
    });
    expect(wallets.data.map((w) => w.wallet_id)).toEqual([wallet.wallet_id]);
    const { data: addresses } = await custody.GET('/api/v1/profiles/{profile_id}/wallets/{wallet_id}/addresses', {
      params: { path: { profile_id, wallet_id: wallet.wallet_id } },
    });
    expect(addresses.data.map((a) => a.address)).toEqual([wallet.addresses[0]!.address]);

    // A second call is a second create (a fresh key), a caller's key replays.
    const key = randomUUID();
    const create = () =>
      custody.POST('/api/v1/profiles/{profile_id}/wallets', {
        params: { path: { profile_id }, header: { 'idempotency-key': key } },
        body: { blockchain_ids: [ETH] },
      });
    const first = await create();
    const again = await create();
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(again.data.wallet_id).toBe(first.data.wallet_id);
    expect(await walletCount(h)).toBe(2);
  });

  it('throws the problem+json answers as CustodianApiError with their catalogue code', async () => {
    const h = await harness();
    const profile_id = h.profileId;
    const bad = createCustodianClient({ baseUrl: h.url, apiKey: 'cst_not-a-key' });
    const e1 = await bad
      .GET('/api/v1/profiles/{profile_id}/wallets', { params: { path: { profile_id } } })
      .catch((e) => e);
    expect(e1).toBeInstanceOf(CustodianApiError);
    expect([e1.status, e1.code]).toEqual([401, 'API_KEY_INVALID']);
    expect(e1.message).not.toContain('cst_not-a-key');

    const custody = createCustodianClient({ baseUrl: h.url, apiKey: h.apiKey });
    const e2 = await custody
      .POST('/api/v1/profiles/{profile_id}/wallets', { params: { path: { profile_id } }, body: { blockchain_ids: [] } })
      .catch((e) => e);
    expect([e2.status, e2.code]).toEqual([422, 'VALIDATION_FAILED']);
    expect(e2.fieldErrors.map((f: { field: string }) => f.field)).toContain('body.blockchain_ids');
    expect(await walletCount(h)).toBe(0);
  });

  it('waits out the real rate limit (429 + Retry-After) and completes every call', async () => {
    const h = await harness({ rateLimit: { max: 3, windowMs: 1000 } });
    const statuses: number[] = [];
    const custody = createCustodianClient({
      baseUrl: h.url,
      apiKey: h.apiKey,
      retry: { maxAttempts: 5 },
      fetch: async (r) => {
        const res = await fetch(r);
        statuses.push(res.status);
        return res;
      },
    });
    for (let i = 0; i < 6; i++) {
      const { response } = await custody.GET('/api/v1/profiles/{profile_id}/assets', {
        params: { path: { profile_id: h.profileId } },
      });
      expect(response.status).toBe(200);
    }
    expect(statuses).toContain(429);
    expect(statuses.filter((s) => s === 200)).toHaveLength(6);
  });

  it('a create whose answer is lost is retried with the same key and replayed: one wallet', async () => {
    const h = await harness();
    const seenKeys: string[] = [];
    let lost = false;
    // A real proxy: forwards every request to the coordinator; the first create's answer is dropped
    // on the floor and replaced by a 503 (a gateway that timed out after the coordinator committed).
    const proxy: Server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k]) => k !== 'host' && k !== 'connection' && k !== 'content-length'),
      ) as Record<string, string>;
      if (req.method === 'POST') seenKeys.push(headers['idempotency-key']!);
      const upstream = await fetch(h.url + req.url, {
        method: req.method!,
        headers,
        ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
      });
      const body = Buffer.from(await upstream.arrayBuffer());
      if (req.method === 'POST' && !lost) {
        lost = true;
        expect(upstream.status).toBe(201);
        res.writeHead(503, { 'retry-after': '0', 'content-type': 'text/plain' }).end('upstream timed out');
        return;
      }
      const out: Record<string, string> = {};
      upstream.headers.forEach((v, k) => {
        if (k !== 'content-length' && k !== 'transfer-encoding' && k !== 'connection') out[k] = v;
      });
      res.writeHead(upstream.status, out).end(body);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    cleanup.push(async () => {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
    });

    const custody = createCustodianClient({
      baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      apiKey: h.apiKey,
      retry: { baseDelayMs: 1 },
    });
    const { data, response } = await custody.POST('/api/v1/profiles/{profile_id}/wallets', {
      params: { path: { profile_id: h.profileId } },
      body: { blockchain_ids: [ETH] },
    });
    expect(lost).toBe(true);
    expect(response.status).toBe(201);
    expect(response.headers.get('idempotent-replayed')).toBe('true');
    expect(seenKeys).toHaveLength(2);
    expect(seenKeys[1]).toBe(seenKeys[0]);
    expect(await walletCount(h)).toBe(1);
    const stored = await h.req('GET', `/api/v1/profiles/${h.profileId}/wallets`, { key: h.apiKey });
    expect(stored.body.data.map((w: { wallet_id: string }) => w.wallet_id)).toEqual([data.wallet_id]);
  });
});
