/**
 * PgWatcherStore (the chains `WatcherStore` over the coordinator's database, PGlite here): one
 * commit is one transaction — cursor, seen keys, balances, UTXOs, the REST wallet balance and the
 * outbox events (TRANSACTION_DETECTED, BALANCE_UPDATED) — and a failing commit leaves nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgWatcherStore } from '../src/transfers/watcher-store.js';
import { type Harness, type Json, startHarness } from './helpers.js';

let h: Harness;
let store: PgWatcherStore;
let walletId = '';
let address = '';
let assetId = '';

beforeAll(async () => {
  h = await startHarness({ coordinator: { transfers: { runPipeline: false } } });
  store = new PgWatcherStore(h.c.db, h.c.clock);
  const A = `/api/v1/profiles/${h.profileId}`;
  const chains = await h.req('GET', `${A}/blockchains?page_size=200`, { key: h.apiKey });
  const chainId = chains.body.data.find((b: Json) => b.key === 'litecoin-regtest').blockchain_id;
  const assets = await h.req('GET', `${A}/assets?page_size=200`, { key: h.apiKey });
  assetId = assets.body.data.find((a: Json) => a.blockchain === 'litecoin-regtest').asset_id;
  const w = await h.req('POST', `${A}/wallets`, {
    key: h.apiKey,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: { blockchain_ids: [chainId] },
  });
  walletId = w.body.wallet_id;
  address = w.body.addresses[0].address;
}, 30_000);

afterAll(async () => {
  await h?.close();
});

describe('PgWatcherStore', () => {
  it('commits cursor, seen keys, balances, UTXOs, wallet balance and outbox events atomically', async () => {
    const chain = 'litecoin-regtest';
    expect(await store.getCursor(chain)).toBeNull();
    await store.commit(chain, {
      cursor: { height: 102, hash: 'aa'.repeat(32) },
      seen: [`t1:${address}:native`],
      balances: [{ address, asset: 'native', balance: '250000000' }],
      utxosAdded: [{ outpoint: 't1:0', address, value: '250000000', height: 102 }],
      utxosSpent: [],
      events: [
        {
          type: 'transaction_detected',
          chain,
          txid: 't1',
          address,
          asset: 'native',
          direction: 'incoming',
          amount: '250000000',
          block_height: 102,
        },
        {
          type: 'balance_updated',
          chain,
          address,
          asset: 'native',
          balance: '250000000',
          previous_balance: '0',
          block_height: 102,
          block_hash: 'aa'.repeat(32),
        },
      ],
    });
    expect(await store.getCursor(chain)).toEqual({ height: 102, hash: 'aa'.repeat(32) });
    expect(await store.seen(chain, [`t1:${address}:native`, 'other'])).toEqual(new Set([`t1:${address}:native`]));
    expect(await store.getUtxos(chain)).toEqual([{ outpoint: 't1:0', address, value: '250000000', height: 102 }]);
    const bal = await h.req('GET', `/api/v1/profiles/${h.profileId}/wallets/${walletId}/balances/${assetId}`, {
      key: h.apiKey,
    });
    expect(bal.body).toMatchObject({ amount: '2.5', amount_base_units: '250000000' });
    const ev = await h.c.db.query<{ event_type: string; body: string }>(
      `SELECT event_type, body FROM webhook_events WHERE event_type IN ('TRANSACTION_DETECTED','BALANCE_UPDATED')
       ORDER BY occurred_at, event_type DESC`,
    );
    expect(ev.map((e) => e.event_type)).toEqual(['TRANSACTION_DETECTED', 'BALANCE_UPDATED']);
    expect(JSON.parse(ev[0]!.body).data).toMatchObject({ wallet_id: walletId, amount: '2.5', tx_hash: 't1' });
    expect(JSON.parse(ev[1]!.body).data).toMatchObject({ wallet_balance: '2.5', previous_balance: '0' });
  });

  it('a failing commit changes nothing (no cursor move, no event)', async () => {
    const chain = 'litecoin-regtest';
    const before = (await h.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_events'))[0]!.n;
    await expect(
      store.commit(chain, {
        cursor: { height: 103, hash: 'bb'.repeat(32) },
        seen: ['t2:x:native'],
        balances: [],
        utxosAdded: [{ outpoint: 't2:0', address, value: 'not a number', height: 103 }],
        utxosSpent: ['t1:0'],
        events: [],
      }),
    ).rejects.toThrow();
    expect((await store.getCursor(chain))?.height).toBe(102);
    expect((await store.getUtxos(chain)).map((u) => u.outpoint)).toEqual(['t1:0']);
    expect((await store.seen(chain, ['t2:x:native'])).size).toBe(0);
    expect((await h.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_events'))[0]!.n).toBe(before);
  });
});
