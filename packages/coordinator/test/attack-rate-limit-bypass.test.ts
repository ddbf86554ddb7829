/**
 * Attack (#26 item 1): the login, second-factor and enrollment limits were keyed by `X-API-Key` /
 * `Authorization` before the client address, so a guesser that sends a fresh fake header with
 * every attempt gets a fresh bucket every time — unlimited password and code guessing. And the
 * only per-account brake was the per-challenge attempt cap, so opening a new challenge after each
 * wrong code spread the guesses without limit.
 *
 * Must hold: unauthenticated routes are limited per client address (never per a header the client
 * chooses; behind a listed trusted proxy, per forwarded address); failures are counted per account
 * across challenges (429 RATE_LIMITED with Retry-After, whatever the address); open challenges
 * and code e-mails per user are capped; authenticated API traffic is limited per *resolved* key,
 * an invalid key counting against its address.
 *
 * Every test starts its own coordinator (real fastify + @fastify/rate-limit, real PGlite store).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type CoordinatorOptions, createCoordinator } from '../src/coordinator.js';
import { addressBucket } from '../src/server.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, type Json, startHarness } from './helpers.js';

const SCRYPT = { N: 1 << 10, r: 8, p: 1 };
/** A fresh fake credential header, and a spoofed X-Forwarded-For (no proxy is trusted by default). */
const fakeHeader = (i: number): Record<string, string> => ({
  ...(i % 2 === 0
    ? { 'x-api-key': `csk_${randomBytes(24).toString('hex')}` }
    : { authorization: `Bearer ${randomBytes(24).toString('hex')}` }),
  'x-forwarded-for': `203.0.113.${i + 1}`,
});

function expectRateLimited(r: { status: number; headers: Headers; body: Json }) {
  expect(r.status).toBe(429);
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.body.code).toBe('RATE_LIMITED');
  expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

async function withHarness(coordinator: Partial<CoordinatorOptions>, fn: (h: Harness) => Promise<void>) {
  const h = await startHarness({ masterKey: false, coordinator });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

/** Index (0-based) of the first 429 among the statuses, or -1. */
const first429 = (statuses: number[]) => statuses.indexOf(429);

describe('attack: rate-limit bypass by rotating credential headers', () => {
  it('rotating fake X-API-Key / Authorization headers on login, verify and enrollment still hits the per-address limit', async () => {
    const max = 5;
    await withHarness(
      { rateLimit: { max: 10_000 }, admin: { scrypt: SCRYPT, loginRateLimit: { max, windowMs: 60_000 } } },
      async (h) => {
        // The harness used one login and one verify from this address already.
        const login: number[] = [];
        const loginResponses = [];
        for (let i = 0; i < max + 3; i++) {
          const r = await h.req('POST', '/admin/v1/login', {
            body: { email: ADMIN_EMAIL, password: `guess-${i}` },
            headers: fakeHeader(i),
          });
          login.push(r.status);
          loginResponses.push(r);
        }
        const at = first429(login);
        expect(at, `login statuses ${login.join(',')}`).toBeGreaterThanOrEqual(0);
        expect(at).toBeLessThanOrEqual(max);
        expectRateLimited(loginResponses[at]!);
        expect(login.slice(at).every((s) => s === 429)).toBe(true);

        const verify: number[] = [];
        for (let i = 0; i < max + 3; i++) {
          const r = await h.req('POST', '/admin/v1/login/verify', {
            body: { challenge_id: '00000000-0000-4000-8000-000000000000', code: String(100000 + i) },
            headers: fakeHeader(i),
          });
          verify.push(r.status);
          if (r.status === 429) expectRateLimited(r);
        }
        expect(first429(verify), `verify statuses ${verify.join(',')}`).toBeGreaterThanOrEqual(0);
        expect(first429(verify)).toBeLessThanOrEqual(max);

        const enroll: number[] = [];
        for (let i = 0; i < max + 3; i++) {
          const r = await h.req('POST', '/devices/v1/enrollments', { body: { name: 'x' }, headers: fakeHeader(i) });
          enroll.push(r.status);
          if (r.status === 429) expectRateLimited(r);
        }
        expect(first429(enroll), `enrollment statuses ${enroll.join(',')}`).toBeGreaterThanOrEqual(0);
        expect(first429(enroll)).toBeLessThan(max + 1);
      },
    );
  });

  it('spreading code guesses over new login challenges hits the per-account lockout', async () => {
    const maxFailures = 4;
    await withHarness(
      {
        rateLimit: { max: 10_000 },
        admin: {
          scrypt: SCRYPT,
          // A generous per-address limit (a big office behind one NAT): only the account count can stop this.
          loginRateLimit: { max: 10_000, windowMs: 60_000 },
          accountLockout: { maxFailures, windowMs: 15 * 60_000 },
          maxOpenChallenges: 100,
          emailCodes: { max: 100, windowMs: 15 * 60_000 },
        },
      },
      async (h) => {
        const from = () => ({});
        const statuses: number[] = [];
        for (let i = 0; i < maxFailures + 2; i++) {
          const l = await h.req('POST', '/admin/v1/login', {
            body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
            headers: from(),
          });
          statuses.push(l.status);
          if (l.status !== 200) {
            expectRateLimited(l);
            break;
          }
          // One wrong code per challenge: well below the per-challenge cap.
          const v = await h.req('POST', '/admin/v1/login/verify', {
            body: { challenge_id: l.body.challenge_id, code: '000000' },
            headers: from(),
          });
          statuses.push(v.status);
          if (v.status !== 401) {
            expectRateLimited(v);
            break;
          }
        }
        expect(statuses.at(-1), `statuses ${statuses.join(',')}`).toBe(429);
        expect(statuses.filter((s) => s === 401).length).toBe(maxFailures);

        // Locked: the right password is refused too.
        const again = await h.req('POST', '/admin/v1/login', {
          body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
          headers: from(),
        });
        expectRateLimited(again);

        // Unknown accounts lock the same way (the lockout does not reveal which users exist).
        const ghost: number[] = [];
        for (let i = 0; i < maxFailures + 1; i++) {
          const r = await h.req('POST', '/admin/v1/login', {
            body: { email: 'nobody@example.com', password: `guess-${i}` },
            headers: from(),
          });
          ghost.push(r.status);
        }
        expect(ghost).toEqual([...Array(maxFailures).fill(401), 429]);

        // The window passes: the account answers again.
        h.clockOffset.ms += 15 * 60_000 + 1000;
        const after = await h.req('POST', '/admin/v1/login', {
          body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
          headers: from(),
        });
        expect(after.status).toBe(200);
      },
    );
  });

  it('open login challenges and code e-mails per user are capped', async () => {
    await withHarness(
      {
        rateLimit: { max: 10_000 },
        admin: {
          scrypt: SCRYPT,
          loginRateLimit: { max: 10_000, windowMs: 60_000 },
          maxOpenChallenges: 3,
          emailCodes: { max: 5, windowMs: 15 * 60_000 },
        },
      },
      async (h) => {
        // The harness's own login consumed its challenge; three more may be open at once.
        const open: number[] = [];
        for (let i = 0; i < 4; i++) {
          const r = await h.req('POST', '/admin/v1/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
          open.push(r.status);
          if (r.status === 429) expectRateLimited(r);
        }
        expect(open).toEqual([200, 200, 200, 429]);
        // The open ones expire (10 min) inside the 15-minute e-mail window: a slot is free again,
        // but harness + 3 + 1 = 5 code e-mails is the cap of the window.
        h.clockOffset.ms += 11 * 60_000;
        const fifth = await h.req('POST', '/admin/v1/login', {
          body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
        });
        expect(fifth.status).toBe(200);
        const sixth = await h.req('POST', '/admin/v1/login', {
          body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
        });
        expectRateLimited(sixth);
      },
    );
  });

  it('a valid API key has its own bucket; fake keys count against the address', async () => {
    const max = 8;
    await withHarness({ rateLimit: { max } }, async (h) => {
      const path = `/api/v1/profiles/${h.profileId}/wallets`;
      const fake: number[] = [];
      for (let i = 0; i < max + 3; i++) {
        const r = await h.req('GET', path, { headers: fakeHeader(i) });
        fake.push(r.status);
        if (r.status === 429) expectRateLimited(r);
      }
      const at = first429(fake);
      expect(at, `fake-key statuses ${fake.join(',')}`).toBeGreaterThanOrEqual(0);
      expect(at).toBeLessThanOrEqual(max);

      // Same address, the real key: its own bucket, still open; adding a fake Authorization
      // header does not move it to another bucket.
      const real: number[] = [];
      for (let i = 0; i < max + 1; i++) {
        const r = await h.req('GET', path, {
          key: h.apiKey,
          headers: i % 2 === 0 ? {} : { authorization: `Bearer ${randomBytes(16).toString('hex')}` },
        });
        real.push(r.status);
      }
      expect(
        real.slice(0, max).every((s) => s === 200),
        `real-key statuses ${real.join(',')}`,
      ).toBe(true);
      expect(real.at(-1)).toBe(429);
    });
  });

  it('behind a listed trusted proxy the forwarded address is the bucket, and the account lockout holds across addresses', async () => {
    const maxFailures = 3;
    await withHarness(
      {
        rateLimit: { max: 10_000 },
        trustProxy: ['127.0.0.1', '::1'],
        admin: {
          scrypt: SCRYPT,
          loginRateLimit: { max: 2, windowMs: 60_000 },
          accountLockout: { maxFailures, windowMs: 15 * 60_000 },
        },
      },
      async (h) => {
        const guess = (email: string, addr: string) =>
          h.req('POST', '/admin/v1/login', {
            body: { email, password: 'wrong password' },
            headers: { 'x-forwarded-for': addr },
          });
        // Client A (forwarded by the proxy) uses up its bucket; client B behind the same proxy is unaffected.
        expect((await guess('a@example.com', '198.51.100.1')).status).toBe(401);
        expect((await guess('a@example.com', '198.51.100.1')).status).toBe(401);
        expectRateLimited(await guess('a@example.com', '198.51.100.1'));
        expect((await guess('b@example.com', '198.51.100.2')).status).toBe(401);
        // One account guessed from ever new addresses: locked after maxFailures all the same.
        const spread: number[] = [];
        for (let i = 0; i < maxFailures + 1; i++)
          spread.push((await guess(ADMIN_EMAIL, `198.51.100.${10 + i}`)).status);
        expect(spread).toEqual([...Array(maxFailures).fill(401), 429]);
      },
    );
  });
});

describe('trustProxy configuration', () => {
  it('refuses an entry that is not an address or CIDR range, naming it, before opening anything', async () => {
    for (const bad of ['proxy.internal', '10.0.0.0/33', '::1/129', '10.0.0.1/8/1', '']) {
      await expect(
        createCoordinator({ mode: 'development', mailboxDir: '/nonexistent', logger: false, trustProxy: ['::1', bad] }),
      ).rejects.toThrow(/trustProxy\[1\]: expected an IP address or CIDR range/);
    }
  });

  it('buckets IPv6 clients by /64 and IPv4-mapped addresses as IPv4', () => {
    expect(addressBucket('2001:db8:1:2:aaaa::1')).toBe(addressBucket('2001:db8:1:2:bbbb:cccc:dddd:eeee'));
    expect(addressBucket('2001:db8:1:2::1')).not.toBe(addressBucket('2001:db8:1:3::1'));
    expect(addressBucket('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(addressBucket('192.0.2.7')).toBe('192.0.2.7');
  });
});
