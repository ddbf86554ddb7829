/**
 * Wallet archive / delete and address label / archival (admin API, wallets/archive.ts): the
 * events they fire (WALLET_UPDATED, WALLET_DELETED, ADDRESS_UPDATED, ADDRESS_DELETED) in the
 * transaction of the change, and the rules that keep money safe — an archived wallet takes no new
 * transfer or address, a wallet with a balance or an unfinished transfer cannot be deleted, a
 * deleted wallet's address indices are never reused, an archived address stays watched, an
 * account chain's only address cannot be archived, and only an Admin may do any of it.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { blockchainId } from '../src/directory.js';
import { WatchList } from '../src/wallets/watch-list.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, type Json, startHarness } from './helpers.js';

const ETH = blockchainId('ethereum-sepolia');
const BTC = blockchainId('bitcoin-mainnet');
const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = (x: Harness) => `/admin/v1/profiles/${x.profileId}`;
const A = (x: Harness) => `/api/v1/profiles/${x.profileId}`;

async function eventsOf(x: Harness, type: string): Promise<Json[]> {
  const rows = await x.c.db.query<{ body: string }>(
    'SELECT body FROM webhook_events WHERE event_type = $1 ORDER BY occurred_at',
    [type],
  );
  return rows.map((r) => JSON.parse(r.body));
}

async function wallet(x: Harness, chains: string[]): Promise<Json> {
  const r = await x.req('POST', `${A(x)}/wallets`, {
    key: x.apiKey,
    headers: { 'Idempotency-Key': randomUUID() },
    body: { blockchain_ids: chains },
  });
  expect(r.status).toBe(201);
  return r.body;
}

async function userToken(x: Harness, role: string): Promise<string> {
  const email = `${role.toLowerCase()}-${randomUUID().slice(0, 8)}@example.com`;
  const password = 'a long enough password 123';
  const r = await x.req('POST', '/admin/v1/users', {
    token: x.adminToken,
    body: { email, name: role, role, password },
  });
  expect(r.status).toBe(201);
  return x.stepUp(await x.login(email, password), password);
}

async function ethAsset(x: Harness, walletId: string): Promise<string> {
  const b = await x.req('GET', `${A(x)}/wallets/${walletId}/balances`, { key: x.apiKey });
  return b.body.data.find((d: Json) => d.blockchain_id === ETH).asset_id;
}

/** A confirmed balance of `wei`, as the chain watcher records it. */
async function credit(x: Harness, walletId: string, assetId: string, wei: string): Promise<void> {
  await x.c.db.query(
    `INSERT INTO balances (wallet_id, asset_id, amount, updated_at) VALUES ($1,$2,$3,now())
     ON CONFLICT (wallet_id, asset_id) DO UPDATE SET amount = EXCLUDED.amount`,
    [walletId, assetId, wei],
  );
}

describe('wallet archive and delete', () => {
  it('archive fires WALLET_UPDATED, refuses new transfers and addresses (409 WALLET_ARCHIVED); unarchive restores', async () => {
    h = await startHarness();
    const w = await wallet(h, [ETH, BTC]);
    const asset = await ethAsset(h, w.wallet_id);
    await credit(h, w.wallet_id, asset, '1000000000000000000');
    const transfer = () =>
      h!.req('POST', `${A(h!)}/transfers`, {
        key: h!.apiKey,
        headers: { 'idempotency-key': randomUUID() },
        body: { wallet_id: w.wallet_id, asset_id: asset, destination_address: DEST, amount: '0.001' },
      });
    const address = () =>
      h!.req('POST', `${A(h!)}/wallets/${w.wallet_id}/addresses`, {
        key: h!.apiKey,
        headers: { 'idempotency-key': randomUUID() },
        body: { blockchain_id: BTC },
      });
    const a = await h.req('POST', `${P(h)}/wallets/${w.wallet_id}/archive`, { token: h.adminToken });
    expect(a.status).toBe(200);
    expect(a.body.archived_at).toEqual(expect.stringMatching(/Z$/));
    expect((await eventsOf(h, 'WALLET_UPDATED')).map((e) => e.data)).toEqual([
      expect.objectContaining({ wallet_id: w.wallet_id, archived: true, sequence: 2 }),
    ]);
    // Attack: an archived wallet takes no new transfer through the REST API, nor a new address.
    const t = await transfer();
    expect(t.status).toBe(409);
    expect(t.body.code).toBe('WALLET_ARCHIVED');
    const ad = await address();
    expect(ad.status).toBe(409);
    expect(ad.body.code).toBe('WALLET_ARCHIVED');
    // Still visible (archive hides nothing) and its addresses still watched.
    expect((await h.req('GET', `${A(h)}/wallets/${w.wallet_id}/addresses`, { key: h.apiKey })).body.total).toBe(2);
    const u = await h.req('POST', `${P(h)}/wallets/${w.wallet_id}/unarchive`, { token: h.adminToken });
    expect(u.status).toBe(200);
    expect(u.body.archived_at).toBeNull();
    expect((await eventsOf(h, 'WALLET_UPDATED')).at(-1).data).toMatchObject({ archived: false, sequence: 3 });
    expect((await address()).status).toBe(201);
    expect((await transfer()).status).toBe(201);
  });

  it('attack: deleting a wallet with a balance or an unfinished transfer is refused; an empty one is soft-deleted', async () => {
    h = await startHarness();
    const w = await wallet(h, [ETH]);
    const asset = await ethAsset(h, w.wallet_id);
    const del = () => h!.req('DELETE', `${P(h!)}/wallets/${w.wallet_id}`, { token: h!.adminToken });
    await credit(h, w.wallet_id, asset, '1000000000000000000');
    const t = await h.req('POST', `${A(h)}/transfers`, {
      key: h.apiKey,
      headers: { 'idempotency-key': randomUUID() },
      body: { wallet_id: w.wallet_id, asset_id: asset, destination_address: DEST, amount: '0.001' },
    });
    expect(t.status).toBe(201);
    const r1 = await del();
    expect(r1.status).toBe(409);
    expect(r1.body.code).toBe('WALLET_NOT_EMPTY');
    await credit(h, w.wallet_id, asset, '0');
    // A transfer that is not terminal (here: put to SENT, not delivered).
    await h.c.db.query(`UPDATE transfers SET status = 'SENT', sub_status = NULL WHERE transfer_id = $1`, [
      t.body.transfer_id,
    ]);
    const r2 = await del();
    expect(r2.status).toBe(409);
    expect(r2.body.code).toBe('WALLET_TRANSFERS_PENDING');
    expect(await eventsOf(h, 'WALLET_DELETED')).toEqual([]);
    await h.c.db.query(`UPDATE transfers SET status = 'FAILED' WHERE transfer_id = $1`, [t.body.transfer_id]);
    expect((await del()).status).toBe(204);
    expect((await eventsOf(h, 'WALLET_DELETED')).map((e) => e.data)).toEqual([
      expect.objectContaining({ wallet_id: w.wallet_id, blockchain_ids: [ETH], sequence: 2 }),
    ]);
    // Gone from lists and GETs, REST and admin; a second delete is a 404.
    expect((await h.req('GET', `${A(h)}/wallets/${w.wallet_id}/addresses`, { key: h.apiKey })).status).toBe(404);
    expect((await h.req('GET', `${P(h)}/wallets/${w.wallet_id}`, { token: h.adminToken })).status).toBe(404);
    expect((await h.req('GET', `${A(h)}/wallets`, { key: h.apiKey })).body.total).toBe(0);
    expect((await h.req('GET', `${P(h)}/wallets`, { token: h.adminToken })).body.total).toBe(0);
    expect((await del()).status).toBe(404);
    // A deleted wallet cannot be put in a wallet group (it would scope users to a wallet nobody sees).
    const g = await h.req('POST', `${P(h)}/wallet-groups`, {
      token: h.adminToken,
      body: { name: 'after-delete', wallet_ids: [w.wallet_id] },
    });
    expect(g.status, JSON.stringify(g.body)).toBe(422);
    // Its addresses stay reserved (still in the table, still watched) and the next wallet is new.
    const kept = await h.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM addresses WHERE wallet_id = $1', [
      w.wallet_id,
    ]);
    expect(kept[0]!.n).toBe(1);
    expect(await new WatchList({ db: h.c.db }).addresses('ethereum-sepolia')).toContain(w.addresses[0].address);
    const w2 = await wallet(h, [ETH]);
    expect(w2.wallet_id).not.toBe(w.wallet_id);
    expect(w2.addresses[0].address).not.toBe(w.addresses[0].address);
  });

  it('attack: a Finance Manager or Viewer cannot archive, delete, label or archive addresses (403)', async () => {
    h = await startHarness();
    const w = await wallet(h, [BTC]);
    const addr = w.addresses[0].address_id;
    for (const role of ['FINANCE_MANAGER', 'VIEWER']) {
      const token = await userToken(h, role);
      const calls: [string, string, Json?][] = [
        ['POST', `${P(h)}/wallets/${w.wallet_id}/archive`],
        ['POST', `${P(h)}/wallets/${w.wallet_id}/unarchive`],
        ['DELETE', `${P(h)}/wallets/${w.wallet_id}`],
        ['PATCH', `${P(h)}/wallets/${w.wallet_id}/addresses/${addr}`, { label: 'x' }],
        ['PATCH', `${P(h)}/wallets/${w.wallet_id}/addresses/${addr}`, { archived: true }],
      ];
      for (const [m, path, body] of calls) {
        const r = await h.req(m, path, { token, ...(body === undefined ? {} : { body }) });
        expect([role, m, path, r.status, r.body?.code]).toEqual([role, m, path, 403, 'ROLE_FORBIDDEN']);
      }
    }
    for (const t of ['WALLET_UPDATED', 'WALLET_DELETED', 'ADDRESS_UPDATED', 'ADDRESS_DELETED']) {
      expect(await eventsOf(h, t), t).toEqual([]);
    }
  });

  it('destructive wallet actions need a fresh step-up', async () => {
    h = await startHarness();
    const w = await wallet(h, [BTC]);
    const fresh = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD); // an Admin session without step-up
    for (const [m, path] of [
      ['POST', `${P(h)}/wallets/${w.wallet_id}/archive`],
      ['DELETE', `${P(h)}/wallets/${w.wallet_id}`],
    ] as const) {
      const r = await h.req(m, path, { token: fresh });
      expect([r.status, r.body.code]).toEqual([403, 'STEP_UP_REQUIRED']);
    }
  });
});

describe('address label and archival', () => {
  it('label → ADDRESS_UPDATED; archive → ADDRESS_DELETED, unlisted but still watched; account chain refused', async () => {
    h = await startHarness();
    const w = await wallet(h, [ETH, BTC]);
    const btc = w.addresses.find((a: Json) => a.blockchain_id === BTC);
    const eth = w.addresses.find((a: Json) => a.blockchain_id === ETH);
    const patch = (id: string, body: Json) =>
      h!.req('PATCH', `${P(h!)}/wallets/${w.wallet_id}/addresses/${id}`, { token: h!.adminToken, body });
    const l = await patch(btc.address_id, { label: 'cold intake' });
    expect(l.status).toBe(200);
    expect(l.body).toMatchObject({ address_id: btc.address_id, label: 'cold intake', archived_at: null });
    await patch(btc.address_id, { label: null });
    expect((await eventsOf(h, 'ADDRESS_UPDATED')).map((e) => [e.data.label, e.data.sequence])).toEqual([
      ['cold intake', 2],
      [null, 3],
    ]);
    // Account chain: the wallet's only address there cannot be archived.
    const e = await patch(eth.address_id, { archived: true });
    expect(e.status).toBe(409);
    expect(e.body.code).toBe('ADDRESS_NOT_ARCHIVABLE');
    const ar = await patch(btc.address_id, { archived: true });
    expect(ar.status).toBe(200);
    expect(ar.body.archived_at).toEqual(expect.stringMatching(/Z$/));
    expect((await eventsOf(h, 'ADDRESS_DELETED')).map((x) => x.data)).toEqual([
      expect.objectContaining({ address_id: btc.address_id, address: btc.address, archived: true, sequence: 4 }),
    ]);
    // No longer listed as a deposit address…
    const list = await h.req('GET', `${A(h)}/wallets/${w.wallet_id}/addresses`, { key: h.apiKey });
    expect(list.body.data.map((a: Json) => a.address_id)).toEqual([eth.address_id]);
    expect(
      (await h.req('GET', `${P(h)}/wallets/${w.wallet_id}`, { token: h.adminToken })).body.addresses.map(
        (a: Json) => a.address_id,
      ),
    ).toEqual([eth.address_id]);
    // The admin listing shows it, archived, with its label state.
    const all = await h.req('GET', `${P(h)}/wallets/${w.wallet_id}/addresses`, { token: h.adminToken });
    expect(all.body.data.map((a: Json) => [a.address_id, a.archived_at !== null, a.label])).toEqual([
      [eth.address_id, false, null],
      [btc.address_id, true, null],
    ]);
    // …but still watched (money may still arrive), and its index is never reused.
    expect(await new WatchList({ db: h.c.db }).addresses('bitcoin-mainnet')).toContain(btc.address);
    const next = await h.req('POST', `${A(h)}/wallets/${w.wallet_id}/addresses`, {
      key: h.apiKey,
      headers: { 'idempotency-key': randomUUID() },
      body: { blockchain_id: BTC },
    });
    expect(next.body.address_index).toBe(btc.address_index + 1);
    // Archiving twice is a no-op without a second event.
    expect((await patch(btc.address_id, { archived: true })).status).toBe(200);
    expect(await eventsOf(h, 'ADDRESS_DELETED')).toHaveLength(1);
    // Unknown address: 404.
    expect((await patch(randomUUID(), { label: 'x' })).status).toBe(404);
  });
});
