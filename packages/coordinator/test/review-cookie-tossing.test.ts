/**
 * Hostile review (issue #24, round 2): session swapping by cookie tossing. The cookies have no
 * `__Host-` prefix, so anyone who can write a cookie for the coordinator's host — a sibling
 * subdomain (`Domain=` the parent), or any plain-http answer on the name — can plant
 * `custodian_session` with a MORE SPECIFIC path (`Path=/admin/v1`), which the browser sends
 * BEFORE the victim's own (`Path=/admin`) cookie. The CSRF token is a public hash of the session
 * token (no server secret, `csrfTokenFor`), so the attacker also plants the matching
 * `custodian_csrf`, and any bearer session (CLI login) can be replayed as a cookie session.
 * Result: the victim's dashboard runs in the attacker's account (the victim's later actions —
 * enrolling a TOTP, creating keys, entering data — land there), and re-logging in does not help:
 * the planted cookie keeps winning. This test FAILS today.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMailbox } from '../src/mailer.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, startHarness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ masterKey: false });
});
afterAll(async () => {
  await h?.close();
});

const ATTACKER = 'mallory@example.com';
const ATTACKER_PASSWORD = 'mallory has a long passphrase 42';

/** Password + e-mailed code; `transport` as the dashboard (cookie) or the CLI (bearer) sends it. */
async function login(email: string, password: string, transport: 'bearer' | 'cookie') {
  const l = await h.req('POST', '/admin/v1/login', { body: { email, password } });
  expect(l.status).toBe(200);
  const mails = (await readMailbox(join(h.dir, 'mailbox'))).filter((m) => m.to.includes(email));
  const code = /code is (\d{6})/.exec(mails.at(-1)?.text ?? '')?.[1];
  const v = await h.req('POST', '/admin/v1/login/verify', {
    body: { challenge_id: l.body.challenge_id, code, transport },
  });
  expect(v.status).toBe(200);
  return v;
}

describe('review: a planted session cookie wins over the victim’s own', () => {
  it('a request carrying the attacker’s planted cookie before the victim’s must not run as the attacker', async () => {
    const u = await h.req('POST', '/admin/v1/users', {
      token: h.adminToken,
      body: { email: ATTACKER, name: 'Mallory', role: 'VIEWER', password: ATTACKER_PASSWORD },
    });
    expect(u.status).toBe(201);
    // the attacker's own session, from the CLI (bearer) login: no cookie was ever issued for it
    const attackerToken = (await login(ATTACKER, ATTACKER_PASSWORD, 'bearer')).body.token as string;
    // the CSRF value needs no server secret: the attacker computes it
    const plantedCsrf = createHash('sha256')
      .update('custodian/admin-csrf/v1\0')
      .update(attackerToken)
      .digest('base64url');
    // the victim (Admin) logs in to the dashboard normally
    const victim = await login(ADMIN_EMAIL, ADMIN_PASSWORD, 'cookie');
    const victimSession = /custodian_session=([^;]+)/.exec(victim.headers.getSetCookie().join('\n'))![1]!;
    // the browser's Cookie header: longer path first (RFC 6265 §5.4), then the victim's; the planted
    // custodian_csrf (Path=/, set later) shadows the victim's in document.cookie
    const cookie = `custodian_session=${attackerToken}; custodian_session=${victimSession}; custodian_csrf=${plantedCsrf}`;

    const me = await h.req('GET', '/admin/v1/me', { headers: { cookie } });
    // must hold: an ambiguous (duplicated) or never-issued session cookie is refused; today the
    // victim's dashboard is logged into the attacker's account
    expect({ status: me.status, email: me.body.email }).not.toEqual({ status: 200, email: ATTACKER });

    const write = await h.req('POST', '/admin/v1/session/step-up', {
      headers: { cookie, 'x-csrf-token': plantedCsrf, origin: h.url },
      body: { password: ATTACKER_PASSWORD },
    });
    expect(write.status).not.toBe(200);
  });
});
