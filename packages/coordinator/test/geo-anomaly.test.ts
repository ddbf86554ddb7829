/**
 * GEO_ANOMALY_DETECTED (users/geo-anomaly.ts): a successful login from an IPv4 /24 or IPv6 /48 the
 * user has not logged in from before fires it; the first login ever does not; the client address
 * is the one the server trusts (X-Forwarded-For only from a trusted proxy); the payload carries no
 * secret.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readMailbox } from '../src/mailer.js';
import { loginNetworkOf } from '../src/users/geo-anomaly.js';
import { type Harness, type Json, startHarness } from './helpers.js';

const PASSWORD = 'a long enough password for geo';

async function geoEvents(h: Harness): Promise<Json[]> {
  const rows = await h.c.db.query<{ body: string }>(
    `SELECT body FROM webhook_events WHERE event_type = 'GEO_ANOMALY_DETECTED' ORDER BY occurred_at`,
  );
  return rows.map((r) => JSON.parse(r.body));
}

/** Both login steps with `x-forwarded-for: ip` (when given); returns the session token. */
async function loginFrom(h: Harness, email: string, ip?: string): Promise<string> {
  const headers: Record<string, string> = ip === undefined ? {} : { 'x-forwarded-for': ip };
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

async function newUser(h: Harness, email: string): Promise<string> {
  const u = await h.req('POST', '/admin/v1/users', {
    token: h.adminToken,
    body: { email, name: 'G', role: 'VIEWER', password: PASSWORD },
  });
  expect(u.status).toBe(201);
  return u.body.user_id;
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('login network rule', () => {
  it('maps addresses to their /24 or /48', () => {
    expect(loginNetworkOf('203.0.113.77')).toBe('203.0.113.0/24');
    expect(loginNetworkOf('::ffff:203.0.113.77')).toBe('203.0.113.0/24');
    expect(loginNetworkOf('2001:db8:1:2::9')).toBe('2001:db8:1::/48');
    expect(loginNetworkOf('2001:0db8:0001:ffff:0:0:0:1')).toBe('2001:db8:1::/48');
    expect(loginNetworkOf('::1')).toBe('0:0:0::/48');
    expect(() => loginNetworkOf('not an ip')).toThrow(TypeError);
  });

  it('first login records silently; same /24 is quiet; a new /24 or /48 fires with the count of networks before', async () => {
    h = await startHarness({ coordinator: { trustProxy: ['127.0.0.1'] } });
    const userId = await newUser(h, 'geo@example.com');
    await loginFrom(h, 'geo@example.com', '198.51.100.7');
    expect(await geoEvents(h)).toEqual([]);
    await loginFrom(h, 'geo@example.com', '198.51.100.200'); // same /24
    expect(await geoEvents(h)).toEqual([]);
    const token = await loginFrom(h, 'geo@example.com', '203.0.113.9');
    await loginFrom(h, 'geo@example.com', '2001:db8:5:1::1');
    await loginFrom(h, 'geo@example.com', '2001:db8:5:ffff::2'); // same /48
    const ev = await geoEvents(h);
    expect(ev.map((e) => e.data)).toEqual([
      {
        user_id: userId,
        email: 'geo@example.com',
        ip: '203.0.113.9',
        network: '203.0.113.0/24',
        previous_networks: 1,
      },
      {
        user_id: userId,
        email: 'geo@example.com',
        ip: '2001:db8:5:1::1',
        network: '2001:db8:5::/48',
        previous_networks: 2,
      },
    ]);
    // Instance event: nil profile id; no password, code or session token anywhere in the body.
    expect(ev[0].profile_id).toBe('00000000-0000-0000-0000-000000000000');
    const raw = JSON.stringify(ev);
    expect(raw).not.toContain(PASSWORD);
    expect(raw).not.toContain(token);
    expect(raw).not.toMatch(/css_|password|token|code|session/i);
    // Only instance-level webhooks may subscribe: it is an instance event.
    const nets = await h.req('GET', `/admin/v1/users/${userId}/login-networks`, { token: h.adminToken });
    expect(nets.status).toBe(200);
    expect(nets.body.map((n: Json) => n.network)).toEqual(['198.51.100.0/24', '203.0.113.0/24', '2001:db8:5::/48']);
  });

  it('attack: without a trusted proxy a forged X-Forwarded-For neither fires nor hides the event', async () => {
    h = await startHarness();
    await newUser(h, 'geo2@example.com');
    await loginFrom(h, 'geo2@example.com', '198.51.100.7'); // socket peer 127.0.0.1 is what counts
    await loginFrom(h, 'geo2@example.com', '203.0.113.9');
    expect(await geoEvents(h)).toEqual([]);
    const rows = await h.c.db.query<{ network: string }>(
      `SELECT n.network FROM login_networks n JOIN users u USING (user_id) WHERE u.email = 'geo2@example.com'`,
    );
    expect(rows.map((r) => r.network)).toEqual(['127.0.0.0/24']);
  });

  it('a Viewer cannot read login networks (403)', async () => {
    h = await startHarness();
    const userId = await newUser(h, 'geo3@example.com');
    const t = await loginFrom(h, 'geo3@example.com');
    const r = await h.req('GET', `/admin/v1/users/${userId}/login-networks`, { token: t });
    expect(r.status).toBe(403);
  });
});
