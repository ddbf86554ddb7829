/**
 * Attack (#26 item 11, headers): the login and second-factor responses carry a challenge id and a
 * session token, TOTP enrollment a secret, API key creation the key itself. Without
 * `Cache-Control: no-store` a shared or browser cache (a proxy, the back/forward cache, a disk
 * cache on a shared workstation) may keep those bodies and hand them to the next person; without
 * `X-Content-Type-Options: nosniff` a browser may sniff a JSON body into HTML or script; without
 * `Referrer-Policy` / frame-ancestors a future dashboard leaks URLs or can be framed
 * (clickjacking); without HSTS a first plain-HTTP visit can be downgraded.
 *
 * Must hold: every response — success, problem+json error, 404 and 429 alike — carries nosniff,
 * `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY` and a CSP with `default-src 'none'` and
 * `frame-ancestors 'none'`; every response that does not deliberately allow caching (only the
 * public JWKS does) carries `Cache-Control: no-store`, which covers every one that carries a token,
 * code, secret or key; `Strict-Transport-Security` is sent whenever the request's host is not
 * loopback, and never to a loopback host (so a developer's `localhost` is not pinned to HTTPS).
 *
 * Every test starts its own coordinator (real fastify, real PGlite store) on a real socket.
 */
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, type Json, startHarness } from './helpers.js';

async function withHarness(fn: (h: Harness) => Promise<void>, coordinator = {}) {
  const h = await startHarness({ masterKey: false, coordinator });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

type Res = { status: number; headers: Headers; body: Json };

/** The headers every response must carry, whatever its status. */
function expectHardened(r: Res, what: string) {
  expect(r.headers.get('x-content-type-options'), what).toBe('nosniff');
  expect(r.headers.get('referrer-policy'), what).toBe('no-referrer');
  expect(r.headers.get('x-frame-options'), what).toBe('DENY');
  const csp = r.headers.get('content-security-policy') ?? '';
  expect(csp, what).toContain("default-src 'none'");
  expect(csp, what).toContain("frame-ancestors 'none'");
}

/** The Strict-Transport-Security header of GET /admin/v1/me sent with the given Host header. */
function hstsFor(h: Harness, host: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const req = request(`${h.url}/admin/v1/me`, { headers: { host } }, (res) => {
      res.resume();
      const v = res.headers['strict-transport-security'];
      resolve(Array.isArray(v) ? v.join(', ') : v);
    });
    req.on('error', reject);
    req.end();
  });
}

const expectNoStore = (r: Res, what: string) => expect(r.headers.get('cache-control'), what).toBe('no-store');

describe('attack: secrets cached or sniffed for want of security headers', () => {
  it('login, verify, TOTP enrollment and API key creation answer with no-store and nosniff', async () => {
    await withHarness(async (h) => {
      const login = await h.req('POST', '/admin/v1/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
      expect(login.status).toBe(200);
      expect(login.body.challenge_id).toBeDefined();
      expectNoStore(login, 'login');
      expectHardened(login, 'login');

      const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
      const verify = await h.req('GET', '/admin/v1/me', { token });
      expectNoStore(verify, 'me');
      expectHardened(verify, 'me');

      await h.stepUp(token, ADMIN_PASSWORD); // TOTP enrollment and API key creation need a fresh step-up
      const totp = await h.req('POST', '/admin/v1/me/totp', { token });
      expect(totp.status).toBe(200);
      expect(totp.body.secret).toBeDefined();
      expectNoStore(totp, 'totp enrollment');
      expectHardened(totp, 'totp enrollment');

      const key = await h.req('POST', '/admin/v1/api-keys', {
        token,
        body: { profile_id: h.profileId, name: 'headers' },
      });
      expect(key.status).toBe(201);
      expect(key.body.api_key).toBeDefined();
      expectNoStore(key, 'api key');
      expectHardened(key, 'api key');
    });
  });

  it('the session token response of login/verify is no-store', async () => {
    await withHarness(async (h) => {
      const l = await h.req('POST', '/admin/v1/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
      const { readMailbox } = await import('../src/mailer.js');
      const mails = (await readMailbox(h.c.mailboxDir!)).filter((m) => m.to.includes(ADMIN_EMAIL));
      const code = /code is (\d{6})/.exec(mails.at(-1)?.text ?? '')?.[1];
      const v = await h.req('POST', '/admin/v1/login/verify', { body: { challenge_id: l.body.challenge_id, code } });
      expect(v.status).toBe(200);
      expect(v.body.token).toMatch(/^css_/);
      expectNoStore(v, 'verify');
      expectHardened(v, 'verify');
    });
  });

  it('errors, 404s, 429s, the REST API and device routes carry the headers too', async () => {
    await withHarness(
      async (h) => {
        const cases: [string, Res][] = [
          ['401 problem', await h.req('GET', '/admin/v1/me')],
          ['404 route', await h.req('GET', '/no/such/route')],
          ['bad URL', await h.req('GET', '/admin/v1/users/%zz')],
          ['over-long path parameter', await h.req('GET', `/admin/v1/users/${'a'.repeat(300)}`)],
          ['422 problem', await h.req('POST', '/admin/v1/login', { body: { email: 'not an address' } })],
          [
            '400 bad JSON',
            await h.req('POST', '/admin/v1/login', { raw: '{', headers: { 'content-type': 'application/json' } }),
          ],
          ['REST wallets', await h.req('GET', `/api/v1/profiles/${h.profileId}/wallets`, { key: h.apiKey })],
          ['REST 401', await h.req('GET', `/api/v1/profiles/${h.profileId}/wallets`)],
          ['device poll 404', await h.req('GET', '/devices/v1/enrollments/00000000-0000-4000-8000-000000000000')],
        ];
        for (const [what, r] of cases) {
          expectHardened(r, what);
          expectNoStore(r, what);
        }
        // Exhaust the per-address login limit: the 429 is hardened too.
        let last: Res | undefined;
        for (let i = 0; i < 4; i++) {
          last = await h.req('POST', '/admin/v1/login', { body: { email: 'nobody@example.com', password: 'guess' } });
        }
        expect(last!.status).toBe(429);
        expectHardened(last!, '429');
        expectNoStore(last!, '429');
      },
      { admin: { scrypt: { N: 1 << 10, r: 8, p: 1 }, loginRateLimit: { max: 3, windowMs: 60_000 } } },
    );
  });

  it('the public JWKS keeps its own cache lifetime; the OpenAPI document is hardened', async () => {
    await withHarness(async (h) => {
      const jwks = await h.req('GET', '/.well-known/jwks.json');
      expect(jwks.status).toBe(200);
      expect(jwks.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
      expectHardened(jwks, 'jwks');
      const doc = await h.req('GET', '/api/openapi.json');
      expect(doc.status).toBe(200);
      expectHardened(doc, 'openapi');
    });
  });

  it('HSTS outside loopback only', async () => {
    await withHarness(async (h) => {
      const local = await h.req('GET', '/admin/v1/me');
      expect(local.headers.get('strict-transport-security')).toBeNull();
      // fetch() always sends the Host of the URL; node:http lets the test send another one.
      expect(await hstsFor(h, 'custody.example.com')).toBe('max-age=31536000; includeSubDomains');
      expect(await hstsFor(h, '203.0.113.7:8443')).toBe('max-age=31536000; includeSubDomains');
      for (const host of ['localhost:8080', '127.0.0.2', '[::1]:8080', 'dev.localhost', 'LOCALHOST.']) {
        expect(await hstsFor(h, host), host).toBeUndefined();
      }
    });
  });
});
