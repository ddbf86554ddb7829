/**
 * Attack (issue #26 item 8): instance-wide events leak across profiles. USER_*, DEVICE_* and
 * ROLE_SCOPE_LOGIN (fired on every login) fan out to every profile's webhooks, so whoever holds
 * profile B's API key or webhook endpoint learns the e-mail addresses, roles and logins of the
 * whole instance. A real coordinator (PGlite, real HTTP, behind a trusted proxy on loopback so a
 * login can come from an outside address), the admin API, and profile B's own REST API view of its
 * webhook notifications.
 *
 * Must hold: instance and security events (servers and keys, devices, users, security) go only to
 * instance-level webhooks (registered by an Admin at `/admin/v1/webhooks`), never to a profile's;
 * a profile webhook cannot subscribe to them; ROLE_SCOPE_LOGIN fires only for a login from outside
 * the configured admin networks (default: loopback and private ranges), carrying the address.
 */

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inAdminNetworks, parseAdminNetworks } from '../src/admin/networks.js';
import { createCoordinator } from '../src/coordinator.js';
import { MIGRATIONS, migrate } from '../src/db/migrations.js';
import { readMailbox } from '../src/mailer.js';
import { WEBHOOK_EVENT_TYPES } from '../src/webhooks/events.js';
import { enrollmentBody, phoneKeys } from './device-fixtures.js';
import { type Harness, type Json, openTestDb, startHarness } from './helpers.js';

const PASSWORD = 'a long enough password 123';
const NIL_UUID = '00000000-0000-0000-0000-000000000000';
const INSTANCE_EVENTS = [
  'SERVER_CREATED',
  'SERVER_DELETED',
  'REFRESH_KEY_SHARES',
  'DEVICE_CREATED',
  'DEVICE_STATUS_CHANGED',
  'DEVICE_REMOVED',
  'CERTIFICATE_READY',
  'USER_CREATED',
  'USER_ROLE_UPDATED',
  'USER_BLOCKED',
  'USER_UNBLOCKED',
  'USER_PASSWORD_RESET_INITIATED',
  'POLICY_SIGNATURE_VERIFICATION_FAILED',
  'ROLE_SCOPE_LOGIN',
  'GEO_ANOMALY_DETECTED',
];

describe('instance and security events stay out of profile webhooks', () => {
  let h: Harness;
  let profileB = '';
  let keyB = '';

  /** Log in through the trusted proxy as client `ip` (X-Forwarded-For); returns the session token. */
  async function loginFrom(email: string, ip: string): Promise<string> {
    const headers = { 'x-forwarded-for': ip };
    const l = await h.req('POST', '/admin/v1/login', { headers, body: { email, password: PASSWORD } });
    expect(l.status).toBe(200);
    const mails = (await readMailbox(join(h.dir, 'mailbox'))).filter((m) => m.to.includes(email));
    const code = /code is (\d{6})/.exec(mails.at(-1)?.text ?? '')?.[1];
    const v = await h.req('POST', '/admin/v1/login/verify', {
      headers,
      body: { challenge_id: l.body.challenge_id, code },
    });
    expect(v.status).toBe(200);
    return v.body.token;
  }

  async function user(role = 'VIEWER'): Promise<{ id: string; email: string }> {
    const email = `${role.toLowerCase()}-${crypto.randomUUID()}@example.com`;
    const u = await h.req('POST', '/admin/v1/users', {
      token: h.adminToken,
      body: { email, name: 'Someone', role, password: PASSWORD },
    });
    expect(u.status).toBe(201);
    return { id: u.body.user_id, email };
  }

  /** ROLE_SCOPE_LOGIN events stored for `userId` (every delivery body ever written). */
  async function scopeLogins(userId: string): Promise<Json[]> {
    const rows = await h.c.db.query<{ body: string }>(
      `SELECT body FROM webhook_events WHERE event_type = 'ROLE_SCOPE_LOGIN' ORDER BY occurred_at`,
    );
    return rows.map((r) => JSON.parse(r.body)).filter((b) => b.data.user_id === userId);
  }

  beforeAll(async () => {
    h = await startHarness({ coordinator: { trustProxy: ['127.0.0.1/32'], webhooks: { runWorker: false } } });
    const b = await h.req('POST', '/admin/v1/profiles', { token: h.adminToken, body: { name: 'tenant B' } });
    expect(b.status).toBe(201);
    profileB = b.body.profile_id;
    const k = await h.req('POST', '/admin/v1/api-keys', {
      token: h.adminToken,
      body: { profile_id: profileB, name: 'tenant B' },
    });
    expect(k.status).toBe(201);
    keyB = k.body.api_key;
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it("profile B's webhook subscribed to every type (registered before the upgrade) gets no user, login or device event", async () => {
    const webhookId = crypto.randomUUID();
    const now = new Date();
    await h.c.db.query(
      `INSERT INTO webhooks (webhook_id, profile_id, url, event_types, description, created_at, updated_at)
       VALUES ($1, $2, 'https://tenant-b.example/hook', $3::jsonb, 'legacy: every type', $4, $4)`,
      [webhookId, profileB, JSON.stringify(WEBHOOK_EVENT_TYPES), now],
    );
    const u = await user('FINANCE_MANAGER');
    await loginFrom(u.email, '203.0.113.7');
    expect(
      (await h.req('PATCH', `/admin/v1/users/${u.id}`, { token: h.adminToken, body: { blocked: true } })).status,
    ).toBe(200);
    expect(
      (await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(await phoneKeys(), 'phone') })).status,
    ).toBe(201);
    // a profile event of B still reaches B's webhook (control)
    const w = await h.req('POST', `/admin/v1/profiles/${profileB}/wallets`, {
      token: h.adminToken,
      body: {
        blockchain_ids: [
          (await h.req('GET', `/api/v1/profiles/${profileB}/blockchains`, { key: keyB })).body.data[0].blockchain_id,
        ],
      },
    });
    expect(w.status).toBe(201);

    const seen = await h.req('GET', `/api/v1/profiles/${profileB}/webhooks/${webhookId}/notifications?page_size=200`, {
      key: keyB,
    });
    expect(seen.status).toBe(200);
    const types: string[] = seen.body.data.map((n: Json) => n.event_type);
    expect(types).toContain('WALLET_CREATED');
    expect(types.filter((t) => INSTANCE_EVENTS.includes(t))).toEqual([]);
    const bodies = await h.c.db.query<{ body: string }>(
      `SELECT e.body FROM webhook_notifications n JOIN webhook_events e USING (event_id) WHERE n.webhook_id = $1`,
      [webhookId],
    );
    expect(bodies.map((b) => b.body).join('\n')).not.toContain(u.email);
  });

  it('a profile webhook cannot subscribe to an instance or security event (422 naming the field)', async () => {
    for (const type of ['USER_CREATED', 'ROLE_SCOPE_LOGIN', 'DEVICE_CREATED']) {
      const r = await h.req('POST', `/admin/v1/profiles/${profileB}/webhooks`, {
        token: h.adminToken,
        body: { url: 'http://127.0.0.1:9/hook', event_types: ['WALLET_CREATED', type] },
      });
      expect(r.status, type).toBe(422);
      expect(r.body.code).toBe('VALIDATION_FAILED');
      expect(r.body.errors[0].field).toBe('body.event_types[1]');
    }
  });

  it('instance events go to the instance-level webhook once, with the nil profile_id; it takes no profile event', async () => {
    const hook = await h.req('POST', '/admin/v1/webhooks', {
      token: h.adminToken,
      body: { url: 'http://127.0.0.1:9/instance', event_types: ['USER_CREATED', 'ROLE_SCOPE_LOGIN'] },
    });
    expect(hook.status).toBe(201);
    expect(hook.body.profile_id).toBeNull();
    const wrong = await h.req('POST', '/admin/v1/webhooks', {
      token: h.adminToken,
      body: { url: 'http://127.0.0.1:9/instance', event_types: ['WALLET_CREATED'] },
    });
    expect(wrong.status).toBe(422);
    const u = await user();
    const list = await h.req('GET', `/admin/v1/webhooks/${hook.body.webhook_id}/notifications?page_size=200`, {
      token: h.adminToken,
    });
    expect(list.status).toBe(200);
    const created = list.body.data.filter((n: Json) => n.event_type === 'USER_CREATED');
    expect(created).toHaveLength(1);
    const body = JSON.parse(
      (
        await h.c.db.query<{ body: string }>('SELECT body FROM webhook_events WHERE event_id = $1', [
          created[0].event_id,
        ])
      )[0]!.body,
    );
    expect(body).toMatchObject({ event_type: 'USER_CREATED', profile_id: NIL_UUID, data: { user_id: u.id } });
    // listed among the instance webhooks only, never in a profile's list
    const inst = await h.req('GET', '/admin/v1/webhooks', { token: h.adminToken });
    expect(inst.body.data.map((x: Json) => x.webhook_id)).toContain(hook.body.webhook_id);
    const prof = await h.req('GET', `/api/v1/profiles/${h.profileId}/webhooks`, { key: h.apiKey });
    expect(prof.body.data.map((x: Json) => x.webhook_id)).not.toContain(hook.body.webhook_id);
  });

  it('an ordinary login from inside the admin networks fires no ROLE_SCOPE_LOGIN', async () => {
    const u = await user('FINANCE_MANAGER');
    await h.login(u.email, PASSWORD); // socket peer 127.0.0.1, no proxy header
    await loginFrom(u.email, '10.1.2.3');
    expect(await scopeLogins(u.id)).toEqual([]);
  });

  it('a login from outside the admin networks fires ROLE_SCOPE_LOGIN with the role and the client address', async () => {
    const u = await user('VIEWER');
    await loginFrom(u.email, '203.0.113.7');
    const events = await scopeLogins(u.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      profile_id: NIL_UUID,
      data: { user_id: u.id, role: 'VIEWER', method: 'email', ip: '203.0.113.7' },
    });
    // an IPv4-mapped IPv6 form of an inside address is inside
    const before = (await scopeLogins(u.id)).length;
    await loginFrom(u.email, '::ffff:192.168.1.20');
    expect(await scopeLogins(u.id)).toHaveLength(before);
  });
});

describe('admin networks (the scope of the roles)', () => {
  it('matches CIDR ranges and single addresses, IPv4-mapped IPv6 as IPv4; an empty list holds nothing', () => {
    const n = parseAdminNetworks(['10.0.0.0/8', '2001:db8::/32', '198.51.100.7']);
    expect(inAdminNetworks('10.200.3.4', n)).toBe(true);
    expect(inAdminNetworks('::ffff:10.1.1.1', n)).toBe(true);
    expect(inAdminNetworks('2001:db8:1::5', n)).toBe(true);
    expect(inAdminNetworks('198.51.100.7', n)).toBe(true);
    expect(inAdminNetworks('198.51.100.8', n)).toBe(false);
    expect(inAdminNetworks('11.0.0.1', n)).toBe(false);
    expect(inAdminNetworks('not an address', n)).toBe(false);
    expect(inAdminNetworks('127.0.0.1', parseAdminNetworks([]))).toBe(false);
  });

  it('a malformed entry is refused at creation, naming it, before anything is opened', async () => {
    expect(() => parseAdminNetworks(['10.0.0.0/8', '10.0.0.0/33'])).toThrow(/adminNetworks\[1\]/);
    await expect(
      createCoordinator({ mode: 'development', mailboxDir: '/nonexistent', adminNetworks: ['office'] }),
    ).rejects.toThrow(/adminNetworks\[0\]: expected an IP address or CIDR range/);
  });

  it('upgrading (migration 8) removes the instance event types from existing profile webhooks', async () => {
    const { db, drop } = await openTestDb('pglite');
    try {
      await migrate(
        db,
        MIGRATIONS.filter((m) => m.version < 8),
      );
      const pid = crypto.randomUUID();
      await db.query("INSERT INTO profiles (profile_id, name, created_at) VALUES ($1, 'p', now())", [pid]);
      await db.query(
        `INSERT INTO webhooks (webhook_id, profile_id, url, event_types, created_at, updated_at)
         VALUES ($1, $2, 'https://x.example/h', $3::jsonb, now(), now())`,
        [
          crypto.randomUUID(),
          pid,
          JSON.stringify(['USER_CREATED', 'WALLET_CREATED', 'ROLE_SCOPE_LOGIN', 'TRANSFER_FAILED']),
        ],
      );
      expect(await migrate(db)).toContain(8);
      const rows = await db.query<{ event_types: string[] }>('SELECT event_types FROM webhooks');
      expect(rows.map((r) => r.event_types)).toEqual([['WALLET_CREATED', 'TRANSFER_FAILED']]);
    } finally {
      await drop();
    }
  });
});
