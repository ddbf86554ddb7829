/**
 * Attack (issue #26 item 2): a Finance Manager deletes an active, Admin-device-signed policy with
 * one DELETE (no device signature, no audit entry), and the next, looser policy that matches takes
 * over at once. A real coordinator (PGlite, real HTTP socket), a Finance Manager logged in through
 * the admin API, an Admin's enrolled P-256 device.
 *
 * Must hold: deleting a policy is a new policy version — a tombstone (`document.deleted: true`)
 * awaiting an Admin device signature, exactly like a change; until it is signed the ACTIVE version
 * keeps governing; once signed the policy is deleted; every policy create, update, signature,
 * deletion request and deletion is in the audit log with its actor.
 */

import { randomBytes } from 'node:crypto';
import { policyDigest, signPolicy } from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollmentBody, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, type Json, startHarness } from './helpers.js';

const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const OTHER = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
const ETH = 10n ** 18n;

describe('a Finance Manager cannot delete a signed policy on their own', () => {
  let h: Harness;
  let assetId = '';
  let blockchainId = '';
  let fmToken = '';
  let fmUserId = '';
  const adminDevice = p256.utils.randomSecretKey();
  let adminDeviceId = '';

  const P = () => `/admin/v1/profiles/${h.profileId}`;
  const A = () => `/api/v1/profiles/${h.profileId}`;

  async function wallet(): Promise<string> {
    const w = await h.req('POST', `${A()}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: { blockchain_ids: [blockchainId], name: 'ops' },
    });
    expect(w.status).toBe(201);
    await h.c.wallets.balances.setBalance(w.body.wallet_id, assetId, (1000n * ETH).toString());
    return w.body.wallet_id;
  }

  async function transfer(walletId: string, dest: string) {
    const t = await h.req('POST', `${A()}/transfers`, {
      key: h.apiKey,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: { wallet_id: walletId, asset_id: assetId, destination_address: dest, amount: '1' },
    });
    expect(t.status).toBe(201);
    return t.body;
  }

  async function policy(token: string, body: Json): Promise<Json> {
    const c = await h.req('POST', `${P()}/policies`, { token, body });
    expect(c.status).toBe(201);
    return c.body;
  }

  async function sign(p: Json, version: number) {
    const v = p.versions.find((x: Json) => x.version === version);
    const signed = signPolicy(v.document, adminDeviceId, adminDevice);
    return h.req('POST', `${P()}/policies/${p.policy_id}/versions/${version}/signature`, {
      token: h.adminToken,
      body: { device_id: adminDeviceId, signature: signed.signature },
    });
  }

  async function audit(targetId: string): Promise<{ action: string; actor_user_id: string | null; details: Json }[]> {
    return h.c.db.query('SELECT action, actor_user_id, details FROM audit_log WHERE target_id = $1 ORDER BY seq', [
      targetId,
    ]);
  }

  beforeAll(async () => {
    h = await startHarness({
      coordinator: { transfers: { runPipeline: false, approvalWindowMs: 3600_000 } },
    });
    const e = await h.req('POST', '/devices/v1/enrollments', {
      body: enrollmentBody(await phoneKeys(adminDevice), 'admin phone'),
    });
    expect(e.status).toBe(201);
    adminDeviceId = e.body.device_id;
    const ap = await h.req('POST', `/admin/v1/devices/${adminDeviceId}/approve`, {
      token: h.adminToken,
      body: { fingerprint: e.body.fingerprint, user_id: await userIdOf(h, ADMIN_EMAIL) },
    });
    expect(ap.status).toBe(200);
    await h.c.signers.masterKeys.insertMasterKey({
      ceremonyId: null,
      threshold: 2,
      parties: [{ kind: 'server', id: crypto.randomUUID(), peer: 'x', address: null }],
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
    const password = 'a long enough password 123';
    const u = await h.req('POST', '/admin/v1/users', {
      token: h.adminToken,
      body: { email: 'fm@example.com', name: 'Finance', role: 'FINANCE_MANAGER', password },
    });
    expect(u.status).toBe(201);
    fmUserId = u.body.user_id;
    fmToken = await h.login('fm@example.com', password);
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it('DELETE of an ACTIVE signed policy only creates a pending tombstone; the signed policy keeps governing until an Admin device signs the tombstone', async () => {
    const walletId = await wallet();
    // the strict, wallet-scoped policy: only DEST
    const strict = await policy(fmToken, {
      name: 'strict',
      scope: { wallet_ids: [walletId], blockchain: 'ethereum-local', asset_id: assetId },
      whitelist: [DEST],
      per_transaction_limit: (10n * ETH).toString(),
      daily_limit: (10n * ETH).toString(),
      approvals: { quorum: 1, above_amount: '0' },
    });
    expect((await sign(strict, 1)).status).toBe(200);
    // a looser policy of the whole asset: OTHER is allowed too
    const loose = await policy(fmToken, {
      name: 'loose',
      scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: assetId },
      whitelist: [DEST, OTHER],
      per_transaction_limit: (1000n * ETH).toString(),
      daily_limit: (1000n * ETH).toString(),
      approvals: { quorum: 1, above_amount: '0' },
    });
    expect((await sign(loose, 1)).status).toBe(200);
    const before = await transfer(walletId, OTHER);
    expect(before).toMatchObject({ policy_id: strict.policy_id, sub_status: 'DESTINATION_NOT_WHITELISTED' });

    // the Finance Manager deletes the strict policy
    const del = await h.req('DELETE', `${P()}/policies/${strict.policy_id}`, { token: fmToken });
    expect(del.status, JSON.stringify(del.body)).toBe(202);
    expect(del.body.deleted_at).toBeNull();
    expect(del.body.active_version).toBe(1);
    const tomb = del.body.versions[0];
    expect(tomb).toMatchObject({ version: 2, status: 'PENDING_SIGNATURE', signed: null });
    expect(tomb.document).toMatchObject({ policy_id: strict.policy_id, version: 2, deleted: true });
    expect(tomb.digest).toBe(bytesToHex(policyDigest(tomb.document)));
    // nothing changed: the signed strict policy still governs the wallet
    const during = await transfer(walletId, OTHER);
    expect(during).toMatchObject({ policy_id: strict.policy_id, sub_status: 'DESTINATION_NOT_WHITELISTED' });
    // the Finance Manager cannot sign the tombstone (Admin session and Admin device only)
    const fmSig = signPolicy(tomb.document, adminDeviceId, adminDevice).signature;
    const fmSign = await h.req('POST', `${P()}/policies/${strict.policy_id}/versions/2/signature`, {
      token: fmToken,
      body: { device_id: adminDeviceId, signature: fmSig },
    });
    expect(fmSign.status).toBe(403);
    // the signature of the LAST version (a document without the flag) does not sign the tombstone
    const old = signPolicy(strict.versions[0].document, adminDeviceId, adminDevice).signature;
    const replayed = await h.req('POST', `${P()}/policies/${strict.policy_id}/versions/2/signature`, {
      token: h.adminToken,
      body: { device_id: adminDeviceId, signature: old },
    });
    expect(replayed.status).toBe(422);
    expect((await transfer(walletId, OTHER)).policy_id).toBe(strict.policy_id);

    // the Admin device signs the tombstone: now, and only now, the policy is deleted
    const signed = await sign(del.body, 2);
    expect(signed.status, JSON.stringify(signed.body)).toBe(200);
    expect(signed.body.deleted_at).not.toBeNull();
    expect(signed.body.active_version).toBeNull();
    expect(signed.body.versions.map((v: Json) => [v.version, v.status])).toEqual([
      [2, 'DELETED'],
      [1, 'SUPERSEDED'],
    ]);
    expect(signed.body.versions[0].signed.document.deleted).toBe(true);
    const after = await transfer(walletId, OTHER);
    expect(after.policy_id).toBe(loose.policy_id);
    // a deleted policy takes no new version and no further signature
    const put = await h.req('PUT', `${P()}/policies/${strict.policy_id}`, {
      token: fmToken,
      body: { name: 'strict', whitelist: [DEST] },
    });
    expect(put.status).toBe(404);
    expect((await h.req('DELETE', `${P()}/policies/${strict.policy_id}`, { token: fmToken })).status).toBe(404);
  });

  it('every policy create, update, signature, deletion request and deletion is in the audit log, with its actor', async () => {
    const p = await policy(fmToken, {
      name: 'audited',
      scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: null },
      whitelist: [DEST],
    });
    const s1 = await sign(p, 1);
    expect(s1.status).toBe(200);
    const u = await h.req('PUT', `${P()}/policies/${p.policy_id}`, {
      token: fmToken,
      body: { name: 'audited v2', scope: { blockchain: 'ethereum-local' }, whitelist: [DEST, OTHER] },
    });
    expect(u.status).toBe(200);
    expect((await sign(u.body, 2)).status).toBe(200);
    const d = await h.req('DELETE', `${P()}/policies/${p.policy_id}`, { token: fmToken });
    expect(d.status).toBe(202);
    expect((await sign(d.body, 3)).status).toBe(200);
    const admin = (await h.c.db.query<{ user_id: string }>("SELECT user_id FROM users WHERE role = 'ADMIN'"))[0]!;
    const entries = await audit(p.policy_id);
    expect(entries.map((e) => [e.action, e.actor_user_id, e.details.version])).toEqual([
      ['policy.created', fmUserId, 1],
      ['policy.signed', admin.user_id, 1],
      ['policy.updated', fmUserId, 2],
      ['policy.signed', admin.user_id, 2],
      ['policy.deletion_requested', fmUserId, 3],
      ['policy.deleted', admin.user_id, 3],
    ]);
    for (const e of entries.filter((x) => x.action === 'policy.signed' || x.action === 'policy.deleted'))
      expect(e.details.device_id).toBe(adminDeviceId);
    // the webhook consumer learns of the deletion when it takes effect, not when it is asked for
    const events = (
      await h.c.db.query<{ event_type: string; body: string }>(
        `SELECT event_type, body FROM webhook_events WHERE event_type = 'POLICY_DELETED' ORDER BY occurred_at`,
      )
    )
      .map((e) => JSON.parse(e.body).data)
      .filter((d: Json) => d.policy_id === p.policy_id);
    expect(events.map((d: Json) => d.version)).toEqual([3]);
  });
});
