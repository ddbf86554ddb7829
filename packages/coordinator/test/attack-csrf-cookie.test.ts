/**
 * Attack (issue #24, dashboard cookie sessions): the dashboard's session rides in a cookie, which
 * the browser attaches to every request to the coordinator — including requests a hostile page
 * makes the victim's browser send (cross-site request forgery), and a token in the page would be
 * readable by any injected script.
 *
 * Must hold: a cookie-authenticated POST/PUT/PATCH/DELETE without `X-CSRF-Token` equal to the
 * session's CSRF token, or with a foreign `Origin`, answers 403 `CSRF_TOKEN_INVALID` and writes
 * nothing; the session cookie is HttpOnly, SameSite=Strict, Path=/admin, Secure off loopback; the
 * cookie login body carries no token; logout clears both cookies and the old cookie is refused;
 * bearer clients (CLI, SDK) are unaffected.
 *
 * Every test starts its own coordinator (real fastify, real PGlite store, development mailbox).
 */
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMailbox } from '../src/mailer.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, type Json, startHarness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ masterKey: false });
});
afterAll(async () => {
  await h?.close();
});

/** `name=value; A; B=c` → { name, value, attrs: lower-cased attribute map }. */
function parseSetCookie(line: string) {
  const [pair = '', ...rest] = line.split(';').map((s) => s.trim());
  const i = pair.indexOf('=');
  const attrs = new Map<string, string>();
  for (const a of rest) {
    const j = a.indexOf('=');
    attrs.set((j < 0 ? a : a.slice(0, j)).toLowerCase(), j < 0 ? '' : a.slice(j + 1));
  }
  return { name: pair.slice(0, i), value: pair.slice(i + 1), attrs };
}

function cookiesOf(headers: Headers) {
  return new Map(headers.getSetCookie().map((l) => [parseSetCookie(l).name, parseSetCookie(l)] as const));
}

/** Password + e-mail code; returns the challenge and the code to verify. */
async function challenge(email = ADMIN_EMAIL, password = ADMIN_PASSWORD) {
  const l = await h.req('POST', '/admin/v1/login', { body: { email, password } });
  expect(l.status).toBe(200);
  const mails = (await readMailbox(join(h.dir, 'mailbox'))).filter((m) => m.to.includes(email));
  const code = /code is (\d{6})/.exec(mails.at(-1)?.text ?? '')?.[1];
  return { challenge_id: l.body.challenge_id as string, code: code! };
}

/** A dashboard login: the session and CSRF cookie values and the raw answer. */
async function cookieLogin() {
  const v = await h.req('POST', '/admin/v1/login/verify', { body: { ...(await challenge()), transport: 'cookie' } });
  expect(v.status).toBe(200);
  const jar = cookiesOf(v.headers);
  const session = jar.get('custodian_session')!.value;
  const csrf = jar.get('custodian_csrf')!.value;
  return { v, jar, session, csrf, cookie: `custodian_session=${session}; custodian_csrf=${csrf}` };
}

const apiKeyCount = async () => Number((await h.c.db.query<{ n: string }>('SELECT count(*) AS n FROM api_keys'))[0]!.n);
const userCount = async () => Number((await h.c.db.query<{ n: string }>('SELECT count(*) AS n FROM users'))[0]!.n);

function expectCsrfRefused(r: { status: number; headers: Headers; body: Json }) {
  expect(r.status).toBe(403);
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.body.code).toBe('CSRF_TOKEN_INVALID');
}

/** A stepped-up cookie session (so that a write without CSRF protection would succeed). */
async function steppedUpCookieSession() {
  const s = await cookieLogin();
  const up = await h.req('POST', '/admin/v1/session/step-up', {
    headers: { cookie: s.cookie, 'x-csrf-token': s.csrf },
    body: { password: ADMIN_PASSWORD },
  });
  expect(up.status).toBe(200);
  return s;
}

describe('attack: cross-site request forgery with the dashboard cookie', () => {
  it('the cookie login answers no token and sets exact cookie flags (loopback: no Secure)', async () => {
    const { v, jar, session, csrf } = await cookieLogin();
    expect(v.body.token).toBeUndefined();
    expect(JSON.stringify(v.body)).not.toContain(session);
    expect(v.body.user.email).toBe(ADMIN_EMAIL);
    expect(typeof v.body.expires_at).toBe('string');
    const s = jar.get('custodian_session')!;
    expect(session).toMatch(/^css_/);
    expect([...s.attrs.keys()].sort()).toEqual(['httponly', 'max-age', 'path', 'samesite']);
    expect(s.attrs.get('path')).toBe('/admin');
    expect(s.attrs.get('samesite')).toBe('Strict');
    expect(s.attrs.get('max-age')).toBe(String(8 * 3600));
    const c = jar.get('custodian_csrf')!;
    expect(csrf).not.toBe(session);
    expect(csrf.length).toBeGreaterThan(40);
    expect([...c.attrs.keys()].sort()).toEqual(['max-age', 'path', 'samesite']);
    expect(c.attrs.get('path')).toBe('/');
    expect(c.attrs.get('samesite')).toBe('Strict');
  });

  it('the cookies are Secure when the Host is not loopback', async () => {
    const body = JSON.stringify({ ...(await challenge()), transport: 'cookie' });
    const u = new URL(h.url);
    const setCookie = await new Promise<string[]>((resolve, reject) => {
      const r = httpRequest(
        {
          host: u.hostname,
          port: u.port,
          method: 'POST',
          path: '/admin/v1/login/verify',
          headers: { host: 'custody.example.com', 'content-type': 'application/json', 'content-length': body.length },
        },
        (res) => {
          res.resume();
          expect(res.statusCode).toBe(200);
          resolve(res.headers['set-cookie'] ?? []);
        },
      );
      r.on('error', reject);
      r.end(body);
    });
    const jar = new Map(setCookie.map((l) => [parseSetCookie(l).name, parseSetCookie(l)] as const));
    expect(jar.get('custodian_session')!.attrs.has('secure')).toBe(true);
    expect(jar.get('custodian_session')!.attrs.has('httponly')).toBe(true);
    expect(jar.get('custodian_csrf')!.attrs.has('secure')).toBe(true);
  });

  it('a cookie read works without the CSRF token; a write without it or with a wrong one is refused and writes nothing', async () => {
    const s = await steppedUpCookieSession();
    const me = await h.req('GET', '/admin/v1/me', { headers: { cookie: s.cookie } });
    expect(me.status).toBe(200);
    expect(me.body.email).toBe(ADMIN_EMAIL);

    const keys = await apiKeyCount();
    const users = await userCount();
    const keyBody = { profile_id: h.profileId, name: 'forged' };
    const userBody = { email: 'forged@example.com', name: 'x', role: 'ADMIN', password: 'a long enough password' };
    for (const headers of <Record<string, string>[]>[
      { cookie: s.cookie },
      { cookie: s.cookie, 'x-csrf-token': 'wrong' },
      { cookie: s.cookie, 'x-csrf-token': `${s.csrf.slice(0, -1)}${s.csrf.endsWith('A') ? 'B' : 'A'}` },
      { cookie: s.cookie, 'x-csrf-token': s.session }, // the session token is not the CSRF token
    ]) {
      expectCsrfRefused(await h.req('POST', '/admin/v1/api-keys', { headers, body: keyBody }));
      expectCsrfRefused(await h.req('POST', '/admin/v1/users', { headers, body: userBody }));
    }
    expect(await apiKeyCount()).toBe(keys);
    expect(await userCount()).toBe(users);

    // the same write with the CSRF token goes through (the refusals above were the CSRF check)
    const ok = await h.req('POST', '/admin/v1/api-keys', {
      headers: { cookie: s.cookie, 'x-csrf-token': s.csrf },
      body: { profile_id: h.profileId, name: 'legit' },
    });
    expect(ok.status).toBe(201);
    expect(await apiKeyCount()).toBe(keys + 1);
  });

  it('a cookie write from another origin is refused even with the CSRF token', async () => {
    const s = await steppedUpCookieSession();
    const keys = await apiKeyCount();
    for (const origin of ['https://evil.example', 'null', `${h.url.replace('127.0.0.1', 'localhost')}`]) {
      expectCsrfRefused(
        await h.req('POST', '/admin/v1/api-keys', {
          headers: { cookie: s.cookie, 'x-csrf-token': s.csrf, origin },
          body: { profile_id: h.profileId, name: 'forged' },
        }),
      );
    }
    expect(await apiKeyCount()).toBe(keys);
    const same = await h.req('POST', '/admin/v1/api-keys', {
      headers: { cookie: s.cookie, 'x-csrf-token': s.csrf, origin: h.url },
      body: { profile_id: h.profileId, name: 'same-origin' },
    });
    expect(same.status).toBe(201);
  });

  it('logout clears both cookies and the old cookie is refused afterwards', async () => {
    const s = await cookieLogin();
    const out = await h.req('POST', '/admin/v1/logout', { headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } });
    expect(out.status).toBe(204);
    const jar = cookiesOf(out.headers);
    expect(jar.get('custodian_session')?.value).toBe('');
    expect(jar.get('custodian_session')?.attrs.get('max-age')).toBe('0');
    expect(jar.get('custodian_session')?.attrs.get('path')).toBe('/admin');
    expect(jar.get('custodian_csrf')?.value).toBe('');
    expect(jar.get('custodian_csrf')?.attrs.get('max-age')).toBe('0');
    const me = await h.req('GET', '/admin/v1/me', { headers: { cookie: s.cookie } });
    expect(me.status).toBe(401);
    expect(me.body.code).toBe('SESSION_REQUIRED');
  });

  it('a logout without the CSRF token is refused (a forged logout does not end the session)', async () => {
    const s = await cookieLogin();
    expectCsrfRefused(await h.req('POST', '/admin/v1/logout', { headers: { cookie: s.cookie } }));
    expect((await h.req('GET', '/admin/v1/me', { headers: { cookie: s.cookie } })).status).toBe(200);
  });

  it('bearer clients are unaffected: the token in the body, no cookies, writes without a CSRF token', async () => {
    const v = await h.req('POST', '/admin/v1/login/verify', { body: await challenge() });
    expect(v.status).toBe(200);
    expect(v.body.token).toMatch(/^css_/);
    expect(v.headers.getSetCookie()).toEqual([]);
    const k = await h.req('POST', '/admin/v1/api-keys', {
      token: h.adminToken,
      headers: { origin: 'https://elsewhere.example' },
      body: { profile_id: h.profileId, name: 'bearer' },
    });
    expect(k.status).toBe(201);
  });
});
