/**
 * Attack (issue #27 item 5): a crash between creating a resource and completing its idempotency
 * record. Before the fix the record was completed after the creating transaction had committed:
 * a failure in between left the transfer committed and the key claimed but empty, so a retry got
 * 409 for five minutes and then created a second transfer. Now the claim, the creation and the
 * completion are one transaction: a failure anywhere before the commit leaves neither the resource
 * nor a record, and a retry after any crash either creates the resource once or replays the stored
 * response.
 *
 * The failure is injected where the record is completed (`Store.completeIdempotent` throws once),
 * which is exactly the state a process killed at that point leaves behind.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { blockchainId } from '../src/directory.js';
import { type Harness, type Json, postgresReachable, startHarness } from './helpers.js';

const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const FIVE_MINUTES = 5 * 60_000;
const harnesses: Harness[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  while (harnesses.length > 0) await harnesses.pop()?.close();
});

async function harness(db: 'pglite' | 'postgres'): Promise<Harness> {
  const h = await startHarness({ db, coordinator: { transfers: { runPipeline: false } } });
  harnesses.push(h);
  return h;
}

/** A wallet on ethereum-local holding 1000 ETH; returns the transfer request body. */
async function fundedTransferBody(h: Harness): Promise<Json> {
  const A = `/api/v1/profiles/${h.profileId}`;
  const chain = blockchainId('ethereum-local');
  const assets = await h.req('GET', `${A}/assets?page_size=200`, { key: h.apiKey });
  const assetId = assets.body.data.find((a: Json) => a.blockchain === 'ethereum-local' && a.symbol === 'ETH').asset_id;
  const w = await h.req('POST', `${A}/wallets`, {
    key: h.apiKey,
    headers: { 'idempotency-key': randomUUID() },
    body: { blockchain_ids: [chain] },
  });
  expect(w.status).toBe(201);
  await h.c.wallets.balances.setBalance(w.body.wallet_id, assetId, (1000n * 10n ** 18n).toString());
  return { wallet_id: w.body.wallet_id, asset_id: assetId, destination_address: DEST, amount: '1' };
}

async function count(h: Harness, table: 'transfers' | 'wallets'): Promise<number> {
  const r = await h.c.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE profile_id = $1`, [
    h.profileId,
  ]);
  return r[0]!.n;
}

/**
 * Crash at the completion of the record, then retry: right away and after the 5-minute staleness
 * window. Exactly one resource exists and every retry answers with it.
 */
async function crashThenRetry(h: Harness, path: string, body: Json, table: 'transfers' | 'wallets', idField: string) {
  const key = randomUUID();
  const send = () => h.req('POST', path, { key: h.apiKey, headers: { 'idempotency-key': key }, body });
  const before = await count(h, table);
  vi.spyOn(h.c.idempotency, 'completeIdempotent').mockRejectedValueOnce(new Error('injected crash before completion'));

  const crashed = await send();
  expect(crashed.status).toBe(500);
  expect(crashed.headers.get('content-type')).toContain('application/problem+json');
  expect(crashed.body.code).toBe('INTERNAL_ERROR');

  const retry = await send();
  expect(retry.status, JSON.stringify(retry.body)).toBe(201);
  expect(await count(h, table)).toBe(before + 1);

  h.clockOffset.ms += FIVE_MINUTES + 1000;
  try {
    const late = await send();
    expect(late.status, JSON.stringify(late.body)).toBe(201);
    expect(late.headers.get('idempotent-replayed')).toBe('true');
    expect(late.body[idField]).toBe(retry.body[idField]);
    expect(await count(h, table)).toBe(before + 1);
  } finally {
    h.clockOffset.ms -= FIVE_MINUTES + 1000;
  }
}

describe('idempotency record completed in the creating transaction', () => {
  it('a crash before the record is completed never leaves a 409 nor a second transfer (PGlite)', async () => {
    const h = await harness('pglite');
    const body = await fundedTransferBody(h);
    await crashThenRetry(h, `/api/v1/profiles/${h.profileId}/transfers`, body, 'transfers', 'transfer_id');
  });

  it('a crash before the record is completed never leaves a 409 nor a second wallet (PGlite)', async () => {
    const h = await harness('pglite');
    const body = { blockchain_ids: [blockchainId('ethereum-local')], name: 'crash' };
    await crashThenRetry(h, `/api/v1/profiles/${h.profileId}/wallets`, body, 'wallets', 'wallet_id');
  });

  it('a crash before the record is completed never leaves a 409 nor a second transfer (PostgreSQL)', async (ctx) => {
    if (!(await postgresReachable())) ctx.skip();
    const h = await harness('postgres');
    const body = await fundedTransferBody(h);
    await crashThenRetry(h, `/api/v1/profiles/${h.profileId}/transfers`, body, 'transfers', 'transfer_id');
  });
});
