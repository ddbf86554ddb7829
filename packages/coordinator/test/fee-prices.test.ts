/**
 * `fee_value_usd` of fee estimates (#29): a coordinator configured with `prices.http` pointing at a
 * real local price server (node:http on port 0) and a real anvil node answers the fee estimate
 * with the fee in USD, computed exactly from the fee in wei and the price, and reuses the price
 * within its TTL (requests counted); with only `prices.static`, the table's price; a malformed
 * `prices` setting stops creation naming the key.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseUnits } from '@custodian/chains';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnvilNode, startAnvil } from '../../chains/test/helpers/anvil.js';
import { createCoordinator } from '../src/coordinator.js';
import type { CoordinatorOptions } from '../src/options.js';
import { type Harness, type Json, startHarness } from './helpers.js';

const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
let anvil: AnvilNode;
let prices: Server;
let priceUrl = '';
let requests = 0;

beforeAll(async () => {
  anvil = await startAnvil();
  prices = createServer((req, res) => {
    requests++;
    if (req.url === '/usd/ETH') res.writeHead(200, { 'content-type': 'application/json' }).end('{"usd":"3012.34"}');
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => prices.listen(0, '127.0.0.1', r));
  priceUrl = `http://127.0.0.1:${(prices.address() as AddressInfo).port}/usd/{symbol}`;
}, 60_000);
afterAll(async () => {
  await anvil?.stop();
  prices?.closeAllConnections();
  await new Promise<void>((r) => (prices ? prices.close(() => r()) : r()));
});

/** USD cents of `wei` at `price` (decimal string), rounded half up — independent of the implementation. */
function expectedUsd(wei: bigint, price: string): string {
  const [whole, frac = ''] = price.split('.');
  const scaled = BigInt(whole! + frac); // price × 10^frac.length
  const den = 10n ** BigInt(18 + frac.length);
  const cents = (wei * scaled * 100n + den / 2n) / den;
  return `${cents / 100n}.${(cents % 100n).toString().padStart(2, '0')}`;
}

async function estimate(h: Harness): Promise<Json> {
  const A = `/api/v1/profiles/${h.profileId}`;
  const chains = await h.req('GET', `${A}/blockchains?page_size=200`, { key: h.apiKey });
  const chain = chains.body.data.find((b: Json) => b.key === 'ethereum-local').blockchain_id;
  const assets = await h.req('GET', `${A}/assets?page_size=200`, { key: h.apiKey });
  const asset = assets.body.data.find((a: Json) => a.blockchain === 'ethereum-local' && a.symbol === 'ETH').asset_id;
  const w = await h.req('POST', `${A}/wallets`, {
    key: h.apiKey,
    headers: { 'idempotency-key': randomUUID() },
    body: { blockchain_ids: [chain], name: 'fees' },
  });
  expect(w.status).toBe(201);
  await h.c.wallets.balances.setBalance(w.body.wallet_id, asset, (10n ** 18n).toString());
  const out: Json[] = [];
  for (const priority of ['SLOW', 'FAST']) {
    const r = await h.req('POST', `${A}/fee-estimate`, {
      key: h.apiKey,
      headers: { 'idempotency-key': randomUUID() },
      body: { wallet_id: w.body.wallet_id, asset_id: asset, destination_address: DEST, amount: '0.1', priority },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    out.push(r.body);
  }
  return out;
}

const withChain = (extra: Partial<CoordinatorOptions>): Partial<CoordinatorOptions> => ({
  chains: { 'ethereum-local': { rpcUrl: anvil.url } },
  transfers: { runPipeline: false },
  ...extra,
});

describe('fee_value_usd', () => {
  it('from the HTTP price endpoint: exact, and the price is fetched once within its TTL', async () => {
    const h = await startHarness({
      coordinator: withChain({ prices: { http: { url: priceUrl, path: 'usd', ttlMs: 600_000 } } }),
    });
    try {
      const before = requests;
      const fees = await estimate(h);
      for (const f of fees) {
        expect(f.fee_currency).toBe('ETH');
        expect(f.fee_value_usd).toBe(expectedUsd(parseUnits(f.fee_value, 18), '3012.34'));
      }
      expect(requests - before).toBe(1);
    } finally {
      await h.close();
    }
  }, 60_000);

  it('from the static table (the custodian dev setting)', async () => {
    const h = await startHarness({ coordinator: withChain({ prices: { static: { ETH: '3000.00' } } }) });
    try {
      for (const f of await estimate(h)) {
        expect(f.fee_value_usd).toBe(expectedUsd(parseUnits(f.fee_value, 18), '3000.00'));
      }
    } finally {
      await h.close();
    }
  }, 60_000);

  it('null when no price source is configured', async () => {
    const h = await startHarness({ coordinator: withChain({}) });
    try {
      for (const f of await estimate(h)) expect(f.fee_value_usd).toBeNull();
    } finally {
      await h.close();
    }
  }, 60_000);

  it.each([
    [{ static: { ETH: '3,000' } }, /prices\.static\.ETH/],
    [{ http: { url: 'https://prices.example/eth' } }, /prices\.http\.url/],
    [{ http: { url: 'https://user:key@prices.example/{symbol}' } }, /prices\.http\.url: no user name or password/],
    [{ http: { url: 'https://prices.example/{symbol}', ttlMs: -5 } }, /prices\.http\.ttlMs/],
    [{ coingecko: {} }, /prices\.coingecko: unknown key/],
  ])('a malformed prices setting %j stops creation naming the key', async (cfg, why) => {
    await expect(
      createCoordinator({
        mode: 'development',
        mailboxDir: '/nonexistent-mailbox',
        logger: false,
        prices: cfg as never,
      }),
    ).rejects.toThrow(why);
  });
});
