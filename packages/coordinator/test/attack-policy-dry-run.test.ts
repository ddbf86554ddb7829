/**
 * Attack-style tests of the admin dry-run of a policy version (issue #24 "dry-run a transfer
 * against a draft"): `POST /admin/v1/profiles/{p}/policies/{id}/versions/{v}/dry-run`. A real
 * coordinator (PGlite, real HTTP socket), a Finance Manager and a Viewer logged in through the
 * admin API, an Admin's enrolled P-256 device to activate versions.
 *
 * Must hold: the draft (unsigned) version is evaluated exactly as the pipeline would (whitelist,
 * per-transaction limit, daily limit with today's counted amount, approvals above an amount); the
 * dry-run writes nothing (no transfer, no day lock, no event, no audit entry); a Viewer gets 403;
 * another profile's policy is 404.
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
const OTHER = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
const ETH = 10n ** 18n;

describe('admin dry-run of a policy version', () => {
  let h: Harness;
  let assetId = '';
  let blockchainId = '';
  let fmToken = '';
  let viewerToken = '';
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

  async function transfer(walletId: string, dest: string, amount = '1') {
    const t = await h.req('POST', `${A()}/transfers`, {
      key: h.apiKey,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: { wallet_id: walletId, asset_id: assetId, destination_address: dest, amount },
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
    fmToken = await h.login('fm@example.com', password);
    const v = await h.req('POST', '/admin/v1/users', {
      token: h.adminToken,
      body: { email: 'viewer@example.com', name: 'Viewer', role: 'VIEWER', password },
    });
    expect(v.status).toBe(201);
    viewerToken = await h.login('viewer@example.com', password);
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  const dryRun = (token: string, policyId: string, version: number, body: Json, profileId = h.profileId) =>
    h.req('POST', `/admin/v1/profiles/${profileId}/policies/${policyId}/versions/${version}/dry-run`, { token, body });

  async function counts(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const t of ['transfers', 'transfer_day_locks', 'webhook_events', 'audit_log', 'policy_versions']) {
      out[t] = (await h.c.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t}`))[0]!.n;
    }
    return out;
  }

  const rules = (walletId: string) => ({
    name: 'ops',
    scope: { wallet_ids: [walletId], blockchain: 'ethereum-local', asset_id: assetId },
    whitelist: [DEST],
    per_transaction_limit: (10n * ETH).toString(),
    daily_limit: (10n * ETH).toString(),
    approvals: { quorum: 2, above_amount: (5n * ETH).toString() },
  });

  it('evaluates an unsigned draft as the pipeline would, and writes nothing', async () => {
    const walletId = await wallet();
    const p = await policy(fmToken, rules(walletId));
    expect(p.versions[0].status).toBe('PENDING_SIGNATURE');
    const before = await counts();
    const body = (dest: string, amount: string) => ({
      wallet_id: walletId,
      asset_id: assetId,
      destination_address: dest,
      amount,
    });
    const ok = await dryRun(fmToken, p.policy_id, 1, body(DEST, '6'));
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      decision: 'ALLOW',
      status: 'PENDING_APPROVAL',
      sub_status: null,
      approvals_required: 2,
      in_scope: true,
      amount_base_units: (6n * ETH).toString(),
      policy: { policy_id: p.policy_id, version: 1 },
    });
    const small = await dryRun(h.adminToken, p.policy_id, 1, body(DEST, '1'));
    expect(small.body).toMatchObject({ decision: 'ALLOW', approvals_required: 1 }); // at least one approval below the threshold
    const wl = await dryRun(fmToken, p.policy_id, 1, body(OTHER, '1'));
    expect(wl.body).toMatchObject({
      decision: 'DENY',
      status: 'REJECTED_BY_POLICY',
      sub_status: 'DESTINATION_NOT_WHITELISTED',
      approvals_required: 0,
    });
    const big = await dryRun(fmToken, p.policy_id, 1, body(DEST, '11'));
    expect(big.body).toMatchObject({ decision: 'DENY', sub_status: 'TRANSACTION_LIMIT_EXCEEDED' });
    // the custody dry run (no active policy) would say NO_POLICY_FOUND: the draft is not in force
    const custody = await h.req('POST', `${A()}/transfers/dry-run`, { key: h.apiKey, body: body(DEST, '1') });
    expect(custody.body.decision).toBe('NO_POLICY_FOUND');
    expect(await counts()).toEqual(before);
    // bad input is 422 naming the field, still writing nothing
    const bad = await dryRun(fmToken, p.policy_id, 1, body(DEST, '1.0000000000000000001'));
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.body)).toContain('body.amount');
    const missing = await dryRun(fmToken, p.policy_id, 1, { wallet_id: walletId, asset_id: assetId });
    expect(missing.status).toBe(422);
    expect(await counts()).toEqual(before);
  });

  it("counts today's spent amount against the daily limit of a draft, and evaluates the version named", async () => {
    const walletId = await wallet();
    const p = await policy(fmToken, rules(walletId));
    expect((await sign(p, 1)).status).toBe(200);
    await transfer(walletId, DEST, '8');
    // draft v2: a smaller daily limit
    const u = await h.req('PUT', `${P()}/policies/${p.policy_id}`, {
      token: fmToken,
      body: { ...rules(walletId), daily_limit: (9n * ETH).toString() },
    });
    expect(u.status).toBe(200);
    const before = await counts();
    const body = { wallet_id: walletId, asset_id: assetId, destination_address: DEST, amount: '1.5' };
    const draft = await dryRun(fmToken, p.policy_id, 2, body);
    expect(draft.body).toMatchObject({
      decision: 'DENY',
      sub_status: 'DAILY_LIMIT_EXCEEDED',
      spent_today_base_units: (8n * ETH).toString(),
      policy: { version: 2 },
    });
    // the ACTIVE v1 (daily 10) still allows it
    const active = await dryRun(fmToken, p.policy_id, 1, body);
    expect(active.body).toMatchObject({ decision: 'ALLOW', policy: { version: 1 } });
    const unknown = await dryRun(fmToken, p.policy_id, 3, body);
    expect(unknown.status).toBe(404);
    expect(unknown.body.code ?? unknown.body.type).toMatch(/POLICY_NOT_FOUND|policy-not-found/i);
    expect(await counts()).toEqual(before);
  });

  it('a draft whose scope does not cover the transfer says so', async () => {
    const walletId = await wallet();
    const otherWallet = await wallet();
    const p = await policy(fmToken, rules(walletId));
    const r = await dryRun(fmToken, p.policy_id, 1, {
      wallet_id: otherWallet,
      asset_id: assetId,
      destination_address: DEST,
      amount: '1',
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ in_scope: false, decision: 'DENY', sub_status: 'POLICY_OUT_OF_SCOPE' });
  });

  it('a Viewer gets 403 and writes nothing', async () => {
    const walletId = await wallet();
    const p = await policy(fmToken, rules(walletId));
    const before = await counts();
    const r = await dryRun(viewerToken, p.policy_id, 1, {
      wallet_id: walletId,
      asset_id: assetId,
      destination_address: DEST,
      amount: '1',
    });
    expect(r.status).toBe(403);
    expect(JSON.stringify(r.body)).toContain('ROLE_FORBIDDEN');
    expect(await counts()).toEqual(before);
  });

  it("another profile's policy is 404", async () => {
    const walletId = await wallet();
    const prof = await h.req('POST', '/admin/v1/profiles', { token: h.adminToken, body: { name: 'other' } });
    expect(prof.status).toBe(201);
    const otherProfile = prof.body.profile_id;
    const theirs = await h.req('POST', `/admin/v1/profiles/${otherProfile}/policies`, {
      token: fmToken,
      body: { name: 'theirs', whitelist: [DEST] },
    });
    expect(theirs.status).toBe(201);
    const body = { wallet_id: walletId, asset_id: assetId, destination_address: DEST, amount: '1' };
    const r = await dryRun(fmToken, theirs.body.policy_id, 1, body);
    expect(r.status).toBe(404);
    expect(JSON.stringify(r.body)).toContain('POLICY_NOT_FOUND');
    // and the other profile's path with this profile's wallet: the policy is found, the wallet is not
    const w = await dryRun(fmToken, theirs.body.policy_id, 1, body, otherProfile);
    expect(w.status).toBe(422);
    expect(JSON.stringify(w.body)).toContain('body.wallet_id');
  });
});
