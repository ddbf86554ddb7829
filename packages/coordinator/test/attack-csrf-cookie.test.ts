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
 * bearer clients (CLI, SDK) are unaffected. Against cookie tossing (review-cookie-tossing.test.ts):
 * off loopback the cookies are `__Host-` prefixed (Secure, Path=/) and the unprefixed name is not
 * read; a duplicated session cookie is refused (401); the CSRF token is random, stored as SHA-256;
 * a session only authenticates over the transport it was opened for (bearer vs cookie).
 *
 * Every test starts its own coordinator (real fastify, real PGlite store, development mailbox).
 */
import { createHash } from 'node:crypto';
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

/** A request with another `Host` header (the harness's fetch cannot set it): status, body, Set-Cookie. */
function hostReq(host: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const u = new URL(h.url);
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise<{ status: number; body: Json; setCookie: string[] }>((resolve, reject) => {
    const r = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        headers: {
          host,
          ...headers,
          ...(data === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            body: text === '' ? null : (JSON.parse(text) as Json),
            setCookie: res.headers['set-cookie'] ?? [],
          });
        });
      },
    );
    r.on('error', reject);
    r.end(data);
  });
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

  it('off loopback the cookies are __Host- prefixed: Secure, Path=/, HttpOnly session, SameSite=Strict', async () => {
    const r = await hostReq('custody.example.com', 'POST', '/admin/v1/login/verify', {
      ...(await challenge()),
      transport: 'cookie',
    });
    expect(r.status).toBe(200);
    const jar = new Map(r.setCookie.map((l) => [parseSetCookie(l).name, parseSetCookie(l)] as const));
    expect([...jar.keys()].sort()).toEqual(['__Host-custodian_csrf', '__Host-custodian_session']);
    const s = jar.get('__Host-custodian_session')!;
    expect([...s.attrs.keys()].sort()).toEqual(['httponly', 'max-age', 'path', 'samesite', 'secure']);
    expect(s.attrs.get('path')).toBe('/');
    expect(s.attrs.get('samesite')).toBe('Strict');
    const c = jar.get('__Host-custodian_csrf')!;
    expect([...c.attrs.keys()].sort()).toEqual(['max-age', 'path', 'samesite', 'secure']);
    expect(c.attrs.get('path')).toBe('/');

    // the prefixed session works off loopback; the unprefixed name is not read there
    const host = 'custody.example.com';
    const ok = await hostReq(host, 'GET', '/admin/v1/me', undefined, { cookie: `__Host-custodian_session=${s.value}` });
    expect(ok.status).toBe(200);
    const plain = await hostReq(host, 'GET', '/admin/v1/me', undefined, { cookie: `custodian_session=${s.value}` });
    expect(plain.status).toBe(401);
    // a write needs the random CSRF token of the __Host- cookie
    const cookie = `__Host-custodian_session=${s.value}; __Host-custodian_csrf=${c.value}`;
    const up = await hostReq(
      host,
      'POST',
      '/admin/v1/session/step-up',
      { password: ADMIN_PASSWORD },
      {
        cookie,
        'x-csrf-token': c.value,
      },
    );
    expect(up.status).toBe(200);
    const bad = await hostReq(host, 'POST', '/admin/v1/session/step-up', { password: ADMIN_PASSWORD }, { cookie });
    expect(bad.status).toBe(403);
    // a duplicated __Host- session cookie is refused too
    const dup = await hostReq(host, 'GET', '/admin/v1/me', undefined, {
      cookie: `__Host-custodian_session=${s.value}; __Host-custodian_session=${s.value}`,
    });
    expect(dup.status).toBe(401);
  });

  it('the CSRF token is random and stored only as its SHA-256; sessions record their transport', async () => {
    const s = await cookieLogin();
    const legacy = createHash('sha256').update('custodian/admin-csrf/v1\0').update(s.session).digest('base64url');
    expect(s.csrf).not.toBe(legacy);
    const rows = await h.c.db.query<{ transport: string; csrf_hash: string | null }>(
      'SELECT transport, csrf_hash FROM sessions WHERE token_hash = $1',
      [createHash('sha256').update(s.session).digest('hex')],
    );
    expect(rows).toEqual([{ transport: 'cookie', csrf_hash: createHash('sha256').update(s.csrf).digest('hex') }]);
    const b = await h.req('POST', '/admin/v1/login/verify', { body: await challenge() });
    const brow = await h.c.db.query<{ transport: string; csrf_hash: string | null }>(
      'SELECT transport, csrf_hash FROM sessions WHERE token_hash = $1',
      [createHash('sha256').update(b.body.token).digest('hex')],
    );
    expect(brow).toEqual([{ transport: 'bearer', csrf_hash: null }]);
  });

  it('a bearer session sent as the cookie, or a cookie session sent as Bearer, is refused', async () => {
    const s = await cookieLogin();
    const asBearer = await h.req('GET', '/admin/v1/me', { token: s.session });
    expect(asBearer.status).toBe(401);
    expect(asBearer.body.code).toBe('SESSION_REQUIRED');
    const b = await h.req('POST', '/admin/v1/login/verify', { body: await challenge() });
    const asCookie = await h.req('GET', '/admin/v1/me', { headers: { cookie: `custodian_session=${b.body.token}` } });
    expect(asCookie.status).toBe(401);
    expect(asCookie.body.code).toBe('SESSION_REQUIRED');
    // each on its own transport works
    expect((await h.req('GET', '/admin/v1/me', { token: b.body.token })).status).toBe(200);
    expect((await h.req('GET', '/admin/v1/me', { headers: { cookie: s.cookie } })).status).toBe(200);
  });

  it('a request carrying the session cookie twice is refused, whichever copy is valid', async () => {
    const s = await cookieLogin();
    for (const cookie of [
      `custodian_session=${s.session}; custodian_session=${s.session}`,
      `custodian_session=css_planted; custodian_session=${s.session}`,
      `custodian_session=${s.session}; custodian_csrf=${s.csrf}; custodian_session=css_planted`,
    ]) {
      const r = await h.req('GET', '/admin/v1/me', { headers: { cookie } });
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('SESSION_REQUIRED');
    }
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
