/**
 * Attack (issue #26 item 10): with no trusted Admin device keys configured (the default), policy
 * signing accepts the signature of ANY approved device as long as an Admin session submits it —
 * so a stolen Admin session plus a Finance Manager's (or the attacker's own approved) phone
 * activates a policy that raises limits or whitelists a destination, without any Admin's device.
 * A real coordinator (PGlite), devices enrolled and approved over the admin API.
 *
 * Must hold (fail closed): a device is bound to a user at approval; a policy version is signed only
 * by an APPROVED device bound to the session's own user, whose role is ADMIN now (not blocked) —
 * and, when configured, among the trusted Admin device keys. An unbound device (enrolled before the
 * binding existed) cannot sign.
 */

import { signPolicy } from '@custodian/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollPhone, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, type Json, startHarness } from './helpers.js';

const PASSWORD = 'another correct horse battery';

describe('only a device of the signing Admin can sign a policy (no trusted keys configured)', () => {
  let h: Harness;
  let adminId = '';

  const P = () => `/admin/v1/profiles/${h.profileId}`;

  async function createUser(email: string, role: 'ADMIN' | 'FINANCE_MANAGER' | 'VIEWER'): Promise<string> {
    const r = await h.req('POST', '/admin/v1/users', {
      token: h.adminToken,
      body: { email, name: email.split('@')[0], role, password: PASSWORD },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.user_id;
  }

  /** A new pending policy version; returns its id and document. */
  async function pendingPolicy(): Promise<{ policyId: string; document: Json }> {
    const c = await h.req('POST', `${P()}/policies`, {
      token: h.adminToken,
      body: {
        name: `raise limits ${crypto.randomUUID()}`,
        scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: null },
        whitelist: ['0x70997970C51812dc3A010C7d01b50e0d17dc79C8'],
        per_transaction_limit: null,
        daily_limit: null,
        approvals: { quorum: 1, above_amount: '0' },
      },
    });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    return { policyId: c.body.policy_id, document: c.body.versions[0].document };
  }

  async function submit(p: { policyId: string; document: Json }, deviceId: string, sk: Uint8Array, token: string) {
    const signed = signPolicy(p.document, deviceId, sk);
    return h.req('POST', `${P()}/policies/${p.policyId}/versions/1/signature`, {
      token,
      body: { device_id: deviceId, signature: signed.signature },
    });
  }

  async function statusOf(policyId: string): Promise<string> {
    const r = await h.req('GET', `${P()}/policies/${policyId}`, { token: h.adminToken });
    return r.body.versions[0].status;
  }

  beforeAll(async () => {
    h = await startHarness({ masterKey: false, coordinator: { transfers: { runPipeline: false } } });
    adminId = await userIdOf(h, ADMIN_EMAIL);
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it("refuses a policy signed by an approved Finance Manager's device, submitted with an Admin session", async () => {
    const fm = await createUser(`fm-${crypto.randomUUID()}@example.com`, 'FINANCE_MANAGER');
    const keys = await phoneKeys();
    const deviceId = await enrollPhone(h, keys, 'finance phone', { userId: fm });
    const p = await pendingPolicy();
    const r = await submit(p, deviceId, keys.sk, h.adminToken);
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ field: 'body.device_id' }] });
    expect(await statusOf(p.policyId)).toBe('PENDING_SIGNATURE');
  });

  it("refuses another Admin's device: the device must belong to the session's user", async () => {
    const other = await createUser(`admin2-${crypto.randomUUID()}@example.com`, 'ADMIN');
    const keys = await phoneKeys();
    const deviceId = await enrollPhone(h, keys, 'other admin phone', { userId: other });
    const p = await pendingPolicy();
    const r = await submit(p, deviceId, keys.sk, h.adminToken);
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(await statusOf(p.policyId)).toBe('PENDING_SIGNATURE');
    // its own Admin can sign with it
    const token = await h.login(
      (await h.req('GET', `/admin/v1/users/${other}`, { token: h.adminToken })).body.email,
      PASSWORD,
    );
    expect((await submit(p, deviceId, keys.sk, token)).status).toBe(200);
  });

  it('refuses the device of an Admin demoted to Finance Manager (role read at signing time)', async () => {
    const email = `demoted-${crypto.randomUUID()}@example.com`;
    const u = await createUser(email, 'ADMIN');
    const token = await h.login(email, PASSWORD);
    const keys = await phoneKeys();
    const deviceId = await enrollPhone(h, keys, 'demoted phone', { userId: u });
    const demote = await h.req('PATCH', `/admin/v1/users/${u}`, {
      token: h.adminToken,
      body: { role: 'FINANCE_MANAGER' },
    });
    expect(demote.status).toBe(200);
    const p = await pendingPolicy();
    // the demoted user's session no longer passes the ADMIN route check; the Admin's session may not use the device
    expect((await submit(p, deviceId, keys.sk, token)).status).toBe(403);
    expect((await submit(p, deviceId, keys.sk, h.adminToken)).status).toBe(422);
    expect(await statusOf(p.policyId)).toBe('PENDING_SIGNATURE');
  });

  it('refuses an approved device bound to no user (enrolled before devices were bound)', async () => {
    const keys = await phoneKeys();
    const deviceId = await enrollPhone(h, keys, 'legacy phone', { userId: adminId });
    await h.c.db.query('UPDATE devices SET user_id = NULL WHERE device_id = $1', [deviceId]);
    const p = await pendingPolicy();
    const r = await submit(p, deviceId, keys.sk, h.adminToken);
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(await statusOf(p.policyId)).toBe('PENDING_SIGNATURE');
  });

  it("accepts the signing Admin's own approved device", async () => {
    const keys = await phoneKeys();
    const deviceId = await enrollPhone(h, keys, 'admin phone', { userId: adminId });
    const p = await pendingPolicy();
    const r = await submit(p, deviceId, keys.sk, h.adminToken);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await statusOf(p.policyId)).toBe('ACTIVE');
  });
});

describe('with trusted Admin device keys configured, the device must also be among them', () => {
  let h: Harness;

  beforeAll(async () => {
    const trusted = await phoneKeys();
    h = await startHarness({
      masterKey: false,
      coordinator: { transfers: { runPipeline: false, trustedAdminKeys: [trusted.publicKey] } },
    });
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it("refuses the Admin's own device when its key is not trusted", async () => {
    const adminId = await userIdOf(h, ADMIN_EMAIL);
    const keys = await phoneKeys();
    const deviceId = await enrollPhone(h, keys, 'admin phone', { userId: adminId });
    const c = await h.req('POST', `/admin/v1/profiles/${h.profileId}/policies`, {
      token: h.adminToken,
      body: {
        name: 'p',
        scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: null },
        whitelist: [],
        per_transaction_limit: null,
        daily_limit: null,
        approvals: { quorum: 1, above_amount: '0' },
      },
    });
    expect(c.status).toBe(201);
    const signed = signPolicy(c.body.versions[0].document, deviceId, keys.sk);
    const r = await h.req(
      'POST',
      `/admin/v1/profiles/${h.profileId}/policies/${c.body.policy_id}/versions/1/signature`,
      {
        token: h.adminToken,
        body: { device_id: deviceId, signature: signed.signature },
      },
    );
    expect(r.status).toBe(422);
    expect(r.body.errors[0].message).toMatch(/trusted/);
  });
});
