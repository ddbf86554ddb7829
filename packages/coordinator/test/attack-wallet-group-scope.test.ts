/**
 * Attack (issue #26 item 9): wallet-group user scoping is documented but not enforced. A Viewer or
 * Finance Manager assigned to wallet group G reads — and a Finance Manager cancels or fee-bumps —
 * wallets, balances and transfers outside G through the admin API. A real coordinator (PGlite,
 * real HTTP), wallets created over the REST API, a signed policy so transfers wait in
 * PENDING_APPROVAL, users logged in with password + e-mail code.
 *
 * Must hold: a non-Admin user assigned to ≥1 live wallet group sees and acts on only the wallets of
 * those groups (lists filtered; a foreign wallet, its balances or a transfer on it by id answer
 * exactly like a nonexistent one, 404 WALLET_NOT_FOUND / TRANSFER_NOT_FOUND; cancel and fee bump
 * refused the same way; other groups hidden). An unassigned Finance Manager / Viewer and every Admin
 * see the whole profile.
 */

import { randomBytes } from 'node:crypto';
import { signPolicy } from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollmentBody, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, type Json, startHarness } from './helpers.js';

const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const ETH = 10n ** 18n;
const PASSWORD = 'a long enough password 123';

describe('a user assigned to wallet groups sees and acts on only their wallets', () => {
  let h: Harness;
  let assetId = '';
  let blockchainId = '';
  let inside = '';
  let outside = '';

  const P = () => `/admin/v1/profiles/${h.profileId}`;
  const A = () => `/api/v1/profiles/${h.profileId}`;

  async function enroll(sk: Uint8Array, name: string): Promise<string> {
    const e = await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(await phoneKeys(sk), name) });
    expect(e.status).toBe(201);
    const a = await h.req('POST', `/admin/v1/devices/${e.body.device_id}/approve`, {
      token: h.adminToken,
      body: { fingerprint: e.body.fingerprint, user_id: await userIdOf(h, ADMIN_EMAIL) },
    });
    expect(a.status).toBe(200);
    return e.body.device_id;
  }

  async function wallet(name: string): Promise<string> {
    const w = await h.req('POST', `${A()}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: { blockchain_ids: [blockchainId], name },
    });
    expect(w.status).toBe(201);
    await h.c.wallets.balances.setBalance(w.body.wallet_id, assetId, (100n * ETH).toString());
    return w.body.wallet_id;
  }

  /** A transfer of 1 ETH from `walletId`, waiting for device approval (cancellable). */
  async function pendingTransfer(walletId: string): Promise<string> {
    const t = await h.req('POST', `${A()}/transfers`, {
      key: h.apiKey,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: { wallet_id: walletId, asset_id: assetId, destination_address: DEST, amount: '1' },
    });
    expect(t.status).toBe(201);
    expect(t.body.status).toBe('PENDING_APPROVAL');
    return t.body.transfer_id;
  }

  /** A new user of `role` (fresh e-mail), logged in; returns its id and session token. */
  async function user(role: string): Promise<{ id: string; token: string }> {
    const email = `${role.toLowerCase()}-${crypto.randomUUID()}@example.com`;
    const u = await h.req('POST', '/admin/v1/users', {
      token: h.adminToken,
      body: { email, name: role, role, password: PASSWORD },
    });
    expect(u.status).toBe(201);
    return { id: u.body.user_id, token: await h.login(email, PASSWORD) };
  }

  /** A new wallet group holding `walletIds`, with `userIds` assigned. */
  async function group(walletIds: string[], userIds: string[]): Promise<string> {
    const g = await h.req('POST', `${P()}/wallet-groups`, {
      token: h.adminToken,
      body: { name: `g-${crypto.randomUUID()}`, wallet_ids: walletIds },
    });
    expect(g.status).toBe(201);
    for (const u of userIds) {
      const a = await h.req('PUT', `${P()}/wallet-groups/${g.body.wallet_group_id}/users/${u}`, {
        token: h.adminToken,
      });
      expect(a.status).toBe(200);
    }
    return g.body.wallet_group_id;
  }

  beforeAll(async () => {
    h = await startHarness({
      masterKey: false,
      coordinator: { transfers: { runPipeline: false, approvalWindowMs: 3600_000 } },
    });
    const adminDevice = p256.utils.randomSecretKey();
    const adminDeviceId = await enroll(adminDevice, 'admin phone');
    const approverId = await enroll(p256.utils.randomSecretKey(), 'approver');
    await h.c.signers.masterKeys.insertMasterKey({
      ceremonyId: null,
      threshold: 2,
      parties: [
        { kind: 'server', id: crypto.randomUUID(), peer: 'x', address: null },
        { kind: 'device', id: approverId, peer: 'y', address: null },
      ],
      secp256k1: {
        publicKey: secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true),
        chainCode: randomBytes(32),
      },
      ed25519: { publicKey: ed25519.getPublicKey(ed25519.utils.randomSecretKey()), chainCode: randomBytes(32) },
    });
    const chains = await h.req('GET', `${A()}/blockchains?page_size=200`, { key: h.apiKey });
    blockchainId = chains.body.data.find((b: Json) => b.key === 'ethereum-local').blockchain_id;
    const assets = await h.req('GET', `${A()}/assets?page_size=200`, { key: h.apiKey });
    assetId = assets.body.data.find((a: Json) => a.blockchain === 'ethereum-local' && a.symbol === 'ETH').asset_id;
    const policy = await h.req('POST', `${P()}/policies`, {
      token: h.adminToken,
      body: {
        name: 'ETH',
        scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: assetId },
        whitelist: [DEST],
        approvals: { quorum: 1, above_amount: '0' },
      },
    });
    expect(policy.status).toBe(201);
    const doc = policy.body.versions[0].document;
    const signed = await h.req('POST', `${P()}/policies/${policy.body.policy_id}/versions/1/signature`, {
      token: h.adminToken,
      body: { device_id: adminDeviceId, signature: signPolicy(doc, adminDeviceId, adminDevice).signature },
    });
    expect(signed.status).toBe(200);
    inside = await wallet('inside');
    outside = await wallet('outside');
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it('a Viewer assigned to group G lists only the wallets of G', async () => {
    const v = await user('VIEWER');
    await group([inside], [v.id]);
    const list = await h.req('GET', `${P()}/wallets?page_size=100`, { token: v.token });
    expect(list.status).toBe(200);
    expect(list.body.data.map((w: Json) => w.wallet_id)).toEqual([inside]);
    expect(list.body.total).toBe(1);
  });

  it('a foreign wallet and its balances answer like a nonexistent wallet (404 WALLET_NOT_FOUND)', async () => {
    const v = await user('VIEWER');
    await group([inside], [v.id]);
    expect((await h.req('GET', `${P()}/wallets/${inside}`, { token: v.token })).status).toBe(200);
    expect((await h.req('GET', `${P()}/wallets/${inside}/balances`, { token: v.token })).status).toBe(200);
    const nowhere = crypto.randomUUID();
    for (const path of ['', '/balances']) {
      const foreign = await h.req('GET', `${P()}/wallets/${outside}${path}`, { token: v.token });
      const missing = await h.req('GET', `${P()}/wallets/${nowhere}${path}`, { token: v.token });
      expect(foreign.status, path).toBe(404);
      expect(foreign.body.code, path).toBe('WALLET_NOT_FOUND');
      expect(foreign.body.code).toBe(missing.body.code);
      expect(JSON.stringify(foreign.body)).not.toContain('outside');
    }
  });

  it("a scoped Viewer lists and reads only its wallets' transfers; a foreign one is 404 TRANSFER_NOT_FOUND", async () => {
    const v = await user('VIEWER');
    await group([inside], [v.id]);
    const mine = await pendingTransfer(inside);
    const theirs = await pendingTransfer(outside);
    const list = await h.req('GET', `${P()}/transfers?page_size=100`, { token: v.token });
    expect(list.status).toBe(200);
    const ids = list.body.data.map((t: Json) => t.transfer_id);
    expect(ids).toContain(mine);
    expect(ids).not.toContain(theirs);
    expect(list.body.data.every((t: Json) => t.wallet_id === inside)).toBe(true);
    expect(list.body.total).toBe(list.body.data.length);
    const filtered = await h.req('GET', `${P()}/transfers?wallet_id=${outside}`, { token: v.token });
    expect(filtered.status).toBe(200);
    expect(filtered.body).toMatchObject({ data: [], total: 0 });
    expect((await h.req('GET', `${P()}/transfers/${mine}`, { token: v.token })).status).toBe(200);
    const foreign = await h.req('GET', `${P()}/transfers/${theirs}`, { token: v.token });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('TRANSFER_NOT_FOUND');
  });

  it('a scoped Finance Manager cannot cancel or fee-bump a transfer of a foreign wallet (404), only its own', async () => {
    const fm = await user('FINANCE_MANAGER');
    await group([inside], [fm.id]);
    const theirs = await pendingTransfer(outside);
    const cancel = await h.req('POST', `${P()}/transfers/${theirs}/cancel`, { token: fm.token });
    expect(cancel.status).toBe(404);
    expect(cancel.body.code).toBe('TRANSFER_NOT_FOUND');
    const bump = await h.req('POST', `${P()}/transfers/${theirs}/fee-bump`, { token: fm.token, body: {} });
    expect(bump.status).toBe(404);
    expect(bump.body.code).toBe('TRANSFER_NOT_FOUND');
    const still = await h.req('GET', `${A()}/transfers/${theirs}`, { key: h.apiKey });
    expect(still.body.status).toBe('PENDING_APPROVAL');
    const mine = await pendingTransfer(inside);
    const ok = await h.req('POST', `${P()}/transfers/${mine}/cancel`, { token: fm.token });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 'REJECTED', sub_status: 'CANCELLED_BY_USER' });
  });

  it("a scoped Finance Manager cannot see, change or delete a foreign wallet's policy, nor write a profile-wide one", async () => {
    const fm = await user('FINANCE_MANAGER');
    await group([inside], [fm.id]);
    const body = (walletIds: string[] | null) => ({
      name: `p-${crypto.randomUUID()}`,
      scope: { wallet_ids: walletIds, blockchain: 'ethereum-local', asset_id: assetId },
      whitelist: [DEST],
    });
    const foreign = await h.req('POST', `${P()}/policies`, { token: h.adminToken, body: body([outside]) });
    expect(foreign.status).toBe(201);
    const fid = foreign.body.policy_id;
    const list = await h.req('GET', `${P()}/policies?page_size=200`, { token: fm.token });
    expect(list.status).toBe(200);
    const ids = list.body.data.map((x: Json) => x.policy_id);
    expect(ids).not.toContain(fid);
    expect(JSON.stringify(list.body)).not.toContain(outside);
    expect(list.body.total).toBe(list.body.data.length);
    for (const [method, b] of [
      ['GET', undefined],
      ['PUT', body([inside])],
      ['DELETE', undefined],
    ] as const) {
      const r = await h.req(method, `${P()}/policies/${fid}`, { token: fm.token, ...(b ? { body: b } : {}) });
      expect(r.status, method).toBe(404);
      expect(r.body.code, method).toBe('POLICY_NOT_FOUND');
    }
    expect((await h.req('GET', `${P()}/policies/${fid}`, { token: h.adminToken })).body.versions).toHaveLength(1);
    // naming a foreign wallet answers like naming a nonexistent one
    const named = await h.req('POST', `${P()}/policies`, { token: fm.token, body: body([inside, outside]) });
    const unknown = await h.req('POST', `${P()}/policies`, {
      token: fm.token,
      body: body([inside, crypto.randomUUID()]),
    });
    expect(named.status).toBe(422);
    expect(named.body.errors).toEqual(unknown.body.errors);
    // a profile-wide policy governs foreign wallets too: readable, not writable
    const wide = await h.req('POST', `${P()}/policies`, { token: fm.token, body: body(null) });
    expect(wide.status).toBe(403);
    expect(wide.body.code).toBe('ROLE_FORBIDDEN');
    const profileWide = list.body.data.find((x: Json) => x.name === 'ETH');
    expect(profileWide).toBeDefined();
    const del = await h.req('DELETE', `${P()}/policies/${profileWide.policy_id}`, { token: fm.token });
    expect(del.status).toBe(403);
    // its own wallets: allowed
    const own = await h.req('POST', `${P()}/policies`, { token: fm.token, body: body([inside]) });
    expect(own.status).toBe(201);
    expect(
      (await h.req('PUT', `${P()}/policies/${own.body.policy_id}`, { token: fm.token, body: body([inside]) })).status,
    ).toBe(200);
    expect((await h.req('DELETE', `${P()}/policies/${own.body.policy_id}`, { token: fm.token })).status).toBe(202); // a deletion request (tombstone awaiting an Admin device)
  });

  it('a scoped user sees only its own wallet groups; another group is 404', async () => {
    const v = await user('VIEWER');
    const mine = await group([inside], [v.id]);
    const other = await group([outside], []);
    const list = await h.req('GET', `${P()}/wallet-groups`, { token: v.token });
    expect(list.status).toBe(200);
    expect(list.body.map((g: Json) => g.wallet_group_id)).toEqual([mine]);
    expect((await h.req('GET', `${P()}/wallet-groups/${mine}`, { token: v.token })).status).toBe(200);
    const foreign = await h.req('GET', `${P()}/wallet-groups/${other}`, { token: v.token });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('RESOURCE_NOT_FOUND');
  });

  it('a user assigned only in another profile sees no wallet of this one', async () => {
    const v = await user('VIEWER');
    const b = await h.req('POST', '/admin/v1/profiles', { token: h.adminToken, body: { name: `b-${Date.now()}` } });
    expect(b.status).toBe(201);
    const g = await h.req('POST', `/admin/v1/profiles/${b.body.profile_id}/wallet-groups`, {
      token: h.adminToken,
      body: { name: 'empty' },
    });
    expect(g.status).toBe(201);
    const a = await h.req(
      'PUT',
      `/admin/v1/profiles/${b.body.profile_id}/wallet-groups/${g.body.wallet_group_id}/users/${v.id}`,
      { token: h.adminToken },
    );
    expect(a.status).toBe(200);
    const list = await h.req('GET', `${P()}/wallets`, { token: v.token });
    expect(list.body).toMatchObject({ data: [], total: 0 });
    expect((await h.req('GET', `${P()}/wallets/${inside}`, { token: v.token })).status).toBe(404);
  });

  it('control: an unassigned Viewer, an Admin, and a user whose group was deleted see the whole profile', async () => {
    const free = await user('VIEWER');
    const v = await user('VIEWER');
    const g = await group([inside], [v.id]);
    // An Admin assigned to a group still sees everything (Admins are never scoped).
    const meAdmin = await h.req('GET', '/admin/v1/me', { token: h.adminToken });
    await group([inside], [meAdmin.body.user_id]);
    for (const token of [free.token, h.adminToken]) {
      const ids = (await h.req('GET', `${P()}/wallets?page_size=100`, { token })).body.data.map(
        (w: Json) => w.wallet_id,
      );
      expect(ids).toEqual(expect.arrayContaining([inside, outside]));
      expect((await h.req('GET', `${P()}/wallets/${outside}`, { token })).status).toBe(200);
    }
    expect((await h.req('GET', `${P()}/wallets/${outside}`, { token: v.token })).status).toBe(404);
    expect((await h.req('DELETE', `${P()}/wallet-groups/${g}`, { token: h.adminToken })).status).toBe(204);
    expect((await h.req('GET', `${P()}/wallets/${outside}`, { token: v.token })).status).toBe(200);
  });
});
