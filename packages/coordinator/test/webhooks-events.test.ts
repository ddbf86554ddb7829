/**
 * Event triggers (seed §6 event types whose subsystem exists): users, login, devices (incl.
 * CERTIFICATE_READY), server signers, wallets, addresses, wallet groups and address groups — each
 * written to the outbox in the transaction of its change. And on PostgreSQL: several workers claim
 * with FOR UPDATE SKIP LOCKED, so each attempt is sent exactly once.
 */

import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fingerprint } from '@custodian/signer-client';
import { peerIdFromString } from '@libp2p/peer-id';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockchainId } from '../src/directory.js';
import { emitEvent } from '../src/webhooks/outbox.js';
import { WebhookWorker } from '../src/webhooks/worker.js';
import { enrollmentBody, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, type Json, postgresReachable, startHarness } from './helpers.js';

const ETH = blockchainId('ethereum-sepolia');
const pgUp = await postgresReachable();

async function eventsOf(h: Harness, type: string): Promise<Json[]> {
  const rows = await h.c.db.query<{ body: string }>(
    'SELECT body FROM webhook_events WHERE event_type = $1 ORDER BY occurred_at',
    [type],
  );
  return rows.map((r) => JSON.parse(r.body));
}

describe('event triggers', () => {
  let h: Harness;
  beforeAll(async () => {
    // Loopback is outside these admin networks, so the harness's own login is a ROLE_SCOPE_LOGIN.
    h = await startHarness({ coordinator: { adminNetworks: ['10.0.0.0/8'] } });
  });
  afterAll(async () => h?.close());

  it('users, login, devices, signers, wallets, addresses, wallet and address groups emit their events', async () => {
    const T = h.adminToken;
    expect((await eventsOf(h, 'USER_CREATED'))[0].data).toMatchObject({ role: 'ADMIN' }); // init
    expect((await eventsOf(h, 'ROLE_SCOPE_LOGIN'))[0].data).toMatchObject({
      role: 'ADMIN',
      method: 'email',
      ip: '127.0.0.1',
    });
    const u = (
      await h.req('POST', '/admin/v1/users', {
        token: T,
        body: { email: 'v@example.com', name: 'V', role: 'VIEWER', password: 'a long enough password' },
      })
    ).body;
    await h.req('PATCH', `/admin/v1/users/${u.user_id}`, { token: T, body: { role: 'FINANCE_MANAGER' } });
    await h.req('PATCH', `/admin/v1/users/${u.user_id}`, { token: T, body: { blocked: true } });
    await h.req('PATCH', `/admin/v1/users/${u.user_id}`, { token: T, body: { blocked: false } });
    await h.req('PATCH', `/admin/v1/users/${u.user_id}`, { token: T, body: { password: 'another long password' } });
    expect((await eventsOf(h, 'USER_ROLE_UPDATED'))[0].data).toMatchObject({
      user_id: u.user_id,
      role: 'FINANCE_MANAGER',
      previous_role: 'VIEWER',
    });
    for (const t of ['USER_BLOCKED', 'USER_UNBLOCKED', 'USER_PASSWORD_RESET_INITIATED']) {
      expect((await eventsOf(h, t))[0]?.data.user_id, t).toBe(u.user_id);
    }
    // Devices: enrollment → DEVICE_CREATED; approval → DEVICE_STATUS_CHANGED + CERTIFICATE_READY; removal.
    const d = (
      await h.req('POST', '/devices/v1/enrollments', {
        body: enrollmentBody(await phoneKeys(), 'phone', { platform: 'ios', os_version: '17.1' }),
      })
    ).body;
    await h.req('POST', `/admin/v1/devices/${d.device_id}/approve`, {
      token: T,
      body: { fingerprint: d.fingerprint, user_id: await userIdOf(h, ADMIN_EMAIL) },
    });
    await h.req('DELETE', `/admin/v1/devices/${d.device_id}`, { token: T });
    expect((await eventsOf(h, 'DEVICE_CREATED'))[0].data).toMatchObject({ device_id: d.device_id, status: 'PENDING' });
    expect((await eventsOf(h, 'DEVICE_STATUS_CHANGED'))[0].data).toMatchObject({
      status: 'APPROVED',
      previous_status: 'PENDING',
    });
    expect((await eventsOf(h, 'CERTIFICATE_READY'))[0].data).toMatchObject({
      device_id: d.device_id,
      fingerprint: d.fingerprint,
    });
    expect((await eventsOf(h, 'DEVICE_REMOVED'))[0].data).toMatchObject({ status: 'REMOVED' });
    // Server signers.
    const sr = await h.req('POST', '/admin/v1/signers', {
      token: T,
      body: {
        name: 's1',
        peer_id: '12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA',
        address: '/ip4/127.0.0.1/tcp/7400',
        fingerprint: fingerprint(
          (peerIdFromString('12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA').publicKey as { raw: Uint8Array })
            .raw,
        ),
      },
    });
    expect(sr.status).toBe(201);
    const s = sr.body;
    await h.req('DELETE', `/admin/v1/signers/${s.signer_id}`, { token: T });
    expect((await eventsOf(h, 'SERVER_CREATED'))[0].data.signer_id).toBe(s.signer_id);
    expect((await eventsOf(h, 'SERVER_DELETED'))[0].data.signer_id).toBe(s.signer_id);
    // Wallets and addresses.
    const w = (
      await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
        key: h.apiKey,
        headers: { 'Idempotency-Key': randomUUID() },
        body: { blockchain_ids: [ETH] },
      })
    ).body;
    expect((await eventsOf(h, 'WALLET_CREATED'))[0]).toMatchObject({
      event_type: 'WALLET_CREATED',
      profile_id: h.profileId,
      data: { wallet_id: w.wallet_id, blockchain_ids: [ETH] },
    });
    expect((await eventsOf(h, 'ADDRESS_CREATED'))[0].data).toMatchObject({ address: w.addresses[0].address });
    await h.req('PATCH', `/admin/v1/profiles/${h.profileId}/wallets/${w.wallet_id}`, {
      token: T,
      body: { name: 'Ops' },
    });
    expect((await eventsOf(h, 'WALLET_UPDATED'))[0].data).toEqual({
      wallet_id: w.wallet_id,
      name: 'Ops',
      sequence: 2, // after WALLET_CREATED (outbox.ts ordering aid)
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    });
    // Wallet groups.
    const base = `/admin/v1/profiles/${h.profileId}`;
    const g = await h.req('POST', `${base}/wallet-groups`, {
      token: T,
      body: { name: 'Ops', wallet_ids: [w.wallet_id] },
    });
    expect(g.status).toBe(201);
    const gid = g.body.wallet_group_id;
    expect((await h.req('POST', `${base}/wallet-groups`, { token: T, body: { name: 'ops' } })).status).toBe(409);
    expect(
      (await h.req('POST', `${base}/wallet-groups`, { token: T, body: { name: 'x', wallet_ids: [randomUUID()] } }))
        .status,
    ).toBe(422);
    await h.req('PATCH', `${base}/wallet-groups/${gid}`, { token: T, body: { name: 'Operations' } });
    const as = await h.req('PUT', `${base}/wallet-groups/${gid}/users/${u.user_id}`, { token: T });
    expect(as.body.user_ids).toEqual([u.user_id]);
    await h.req('PUT', `${base}/wallet-groups/${gid}/users/${u.user_id}`, { token: T }); // no change, no event
    await h.req('DELETE', `${base}/wallet-groups/${gid}/users/${u.user_id}`, { token: T });
    expect((await h.req('DELETE', `${base}/wallet-groups/${gid}`, { token: T })).status).toBe(204);
    expect((await h.req('GET', `${base}/wallet-groups/${gid}`, { token: T })).status).toBe(404);
    expect((await eventsOf(h, 'WALLET_GROUP_CREATED'))[0].data).toMatchObject({
      name: 'Ops',
      wallet_ids: [w.wallet_id],
    });
    expect((await eventsOf(h, 'WALLET_GROUP_UPDATED'))[0].data.name).toBe('Operations');
    expect((await eventsOf(h, 'WALLET_GROUP_USER_ASSIGNED')).map((e) => e.data.assigned)).toEqual([true, false]);
    expect(await eventsOf(h, 'WALLET_GROUP_DELETED')).toHaveLength(1);
    // Address groups.
    const entries = [{ blockchain_id: ETH, address: '0x000000000000000000000000000000000000dEaD', label: 'burn' }];
    const ag = await h.req('POST', `${base}/address-groups`, { token: T, body: { name: 'Exchanges', entries } });
    expect(ag.status).toBe(201);
    expect(ag.body.entries).toEqual(entries);
    const agid = ag.body.address_group_id;
    const bad = await h.req('PATCH', `${base}/address-groups/${agid}`, {
      token: T,
      body: { entries: [...entries, entries[0]] },
    });
    expect(bad.status).toBe(422);
    await h.req('PATCH', `${base}/address-groups/${agid}`, { token: T, body: { entries: [] } });
    await h.req('DELETE', `${base}/address-groups/${agid}`, { token: T });
    expect((await eventsOf(h, 'ADDRESS_GROUP_CREATED'))[0].data.entries).toEqual(entries);
    expect(await eventsOf(h, 'ADDRESS_GROUP_UPDATED')).toHaveLength(1); // the failed PATCH left nothing
    expect(await eventsOf(h, 'ADDRESS_GROUP_DELETED')).toHaveLength(1);
    // emitEvent refuses unknown types.
    await expect(
      h.c.db.tx((q) => emitEvent(q, () => new Date(), { profileId: h.profileId, type: 'NOPE' as never, data: {} })),
    ).rejects.toThrow(TypeError);
  });
});

describe.skipIf(!pgUp)('several workers on PostgreSQL (FOR UPDATE SKIP LOCKED)', () => {
  let h: Harness;
  let server: Server;
  const hits = new Map<string, number>();
  beforeAll(async () => {
    h = await startHarness({ db: 'postgres', coordinator: { webhooks: { runWorker: false } } });
    server = createServer((req, res) => {
      req.resume();
      const id = String(req.headers['x-webhook-event-id']);
      hits.set(id, (hits.get(id) ?? 0) + 1);
      setTimeout(() => res.writeHead(200).end(), 20);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    await h?.close();
  });

  it('each attempt is sent once although four workers poll at the same time', async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    await h.req('POST', `/admin/v1/profiles/${h.profileId}/webhooks`, {
      token: h.adminToken,
      body: { url, event_types: ['WALLET_UPDATED'] },
    });
    const walletId = randomUUID();
    await h.c.db.tx(async (q) => {
      for (let i = 0; i < 40; i++) {
        await emitEvent(q, h.c.clock, {
          profileId: h.profileId,
          type: 'WALLET_UPDATED',
          data: { wallet_id: walletId, i },
        });
      }
    });
    const workers = Array.from(
      { length: 4 },
      () =>
        new WebhookWorker({
          db: h.c.db,
          keys: h.c.webhooks.keys,
          options: { ...h.c.webhooks.worker.opts, batchSize: 5 },
        }),
    );
    let total = 0;
    for (;;) {
      const n = (await Promise.all(workers.map((w) => w.runOnce()))).reduce((a, b) => a + b, 0);
      total += n;
      if (n === 0) break;
    }
    expect(total).toBe(40);
    expect(hits.size).toBe(40);
    expect([...hits.values()].every((n) => n === 1)).toBe(true);
    const r = await h.c.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhook_notifications WHERE status = 'DELIVERED' AND attempt_count = 1`,
    );
    expect(r[0]!.n).toBe(40);
  });
});
