/**
 * Ordering aid of webhook deliveries (#29): every transfer, wallet and address event carries
 * `data.sequence` (per resource, strictly increasing in emission order, stored so it survives a
 * restart) and `data.updated_at` (ISO 8601). Bodies are read from the outbox, whose stored text
 * is byte for byte what the worker delivers (webhooks/outbox.ts).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCoordinator } from '../src/coordinator.js';
import type { Db } from '../src/db/db.js';
import { blockchainId } from '../src/directory.js';
import { type Harness, type Json, startHarness, testMasterKey } from './helpers.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Stored bodies of the events whose data names `field` = `id`, in emission (insertion) order. */
async function bodiesOf(db: Db, field: string, id: string): Promise<Json[]> {
  const rows = await db.query<{ body: string }>(
    `SELECT body FROM webhook_events WHERE body::jsonb -> 'data' ->> $1 = $2 ORDER BY occurred_at, ctid`, // ctid: insertion order within one transaction (insert-only table)
    [field, id],
  );
  return rows.map((r) => JSON.parse(r.body)).filter((b) => b.event_type.startsWith(field.split('_')[0]!.toUpperCase()));
}

describe('transfer events', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  }, 60_000);
  afterAll(async () => h?.close());

  it('several events of one transfer carry strictly increasing sequences in emission order, with updated_at', async () => {
    const A = `/api/v1/profiles/${h.profileId}`;
    const chains = await h.req('GET', `${A}/blockchains?page_size=200`, { key: h.apiKey });
    const chain = chains.body.data.find((b: Json) => b.key === 'ethereum-local').blockchain_id;
    const assets = await h.req('GET', `${A}/assets?page_size=200`, { key: h.apiKey });
    const asset = assets.body.data.find((a: Json) => a.blockchain === 'ethereum-local' && a.symbol === 'ETH').asset_id;
    const w = await h.req('POST', `${A}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': randomUUID() },
      body: { blockchain_ids: [chain], name: 'ops' },
    });
    expect(w.status).toBe(201);
    await h.c.wallets.balances.setBalance(w.body.wallet_id, asset, (10n ** 18n).toString());
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      // no policy: created (PENDING), then NO_POLICY_FOUND — three events per transfer
      const t = await h.req('POST', `${A}/transfers`, {
        key: h.apiKey,
        headers: { 'idempotency-key': randomUUID() },
        body: {
          wallet_id: w.body.wallet_id,
          asset_id: asset,
          destination_address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
          amount: '0.1',
        },
      });
      expect(t.status).toBe(201);
      ids.push(t.body.transfer_id);
    }
    for (const id of ids) {
      const bodies = await bodiesOf(h.c.db, 'transfer_id', id);
      // TRANSFER_CREATED first; the order of the others is the order they were written in
      expect(bodies.map((b) => b.event_type)).toEqual(['TRANSFER_CREATED', 'TRANSFER_UPDATED', 'TRANSFER_FAILED']);
      expect(bodies.map((b) => b.data.sequence)).toEqual([1, 2, 3]); // per transfer: the second starts at 1 too
      for (const b of bodies) expect(b.data.updated_at).toMatch(ISO);
    }
    // the wallet and its address have their own counters
    const walletEvents = await bodiesOf(h.c.db, 'wallet_id', w.body.wallet_id);
    expect(walletEvents.map((b) => [b.event_type, b.data.sequence])).toEqual([['WALLET_CREATED', 1]]);
    const addressId = (
      await h.c.db.query<{ body: string }>(
        `SELECT body FROM webhook_events WHERE event_type = 'ADDRESS_CREATED' AND body::jsonb -> 'data' ->> 'wallet_id' = $1`,
        [w.body.wallet_id],
      )
    ).map((r) => JSON.parse(r.body).data)[0];
    expect(addressId).toMatchObject({ sequence: 1 });
    expect(addressId.updated_at).toMatch(ISO);
  });

  it('events of other resources carry no sequence', async () => {
    const rows = await h.c.db.query<{ body: string }>(
      `SELECT body FROM webhook_events WHERE event_type IN ('USER_CREATED', 'ROLE_SCOPE_LOGIN')`,
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(JSON.parse(r.body).data.sequence).toBeUndefined();
  });
});

describe('restart', () => {
  it('a wallet’s sequence continues after the coordinator restarts on the same data folder', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'custodian-seq-'));
    const opts = {
      dataDir: dir,
      mode: 'development' as const,
      listen: { port: 0 },
      logger: false,
      admin: { scrypt: { N: 1 << 10, r: 8, p: 1 } },
      webhooks: { runWorker: false },
    };
    const actor = randomUUID();
    try {
      const c1 = await createCoordinator(opts);
      let walletId = '';
      let profileId = '';
      try {
        profileId = (await c1.wallets.profiles.createProfile('p')).profile_id;
        await c1.signers.masterKeys.insertMasterKey(testMasterKey());
        walletId = (
          await c1.wallets.store.createWallet(profileId, { blockchain_ids: [blockchainId('ethereum-sepolia')] })
        ).wallet_id;
        await c1.wallets.updateWallet(actor, profileId, walletId, { name: 'a' });
      } finally {
        await c1.stop();
      }
      const c2 = await createCoordinator(opts);
      try {
        await c2.wallets.updateWallet(actor, profileId, walletId, { name: 'b' });
        await c2.wallets.updateWallet(actor, profileId, walletId, { name: 'c' });
        const bodies = await bodiesOf(c2.db, 'wallet_id', walletId);
        expect(bodies.map((b) => [b.event_type, b.data.name ?? null, b.data.sequence])).toEqual([
          ['WALLET_CREATED', null, 1],
          ['WALLET_UPDATED', 'a', 2],
          ['WALLET_UPDATED', 'b', 3],
          ['WALLET_UPDATED', 'c', 4],
        ]);
        for (const b of bodies) expect(b.data.updated_at).toMatch(ISO);
      } finally {
        await c2.stop();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
