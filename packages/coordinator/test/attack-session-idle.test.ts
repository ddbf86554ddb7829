/**
 * Attack (issue #26 item 5, idle timeout): a dashboard session left open on an unattended machine,
 * or a token copied from it, stays usable for the full 8 h of its absolute lifetime even when
 * nobody has used it for hours.
 *
 * Must hold: a session unused for longer than `sessionIdleMs` (default 30 min) is refused with
 * 401 `SESSION_REQUIRED` and revoked (it does not come back); a session in use lives until its
 * absolute expiry (8 h) and no longer; `last_seen_at` is written at most once a minute per session.
 *
 * Every test starts its own coordinator (real fastify, real PGlite store) with its own clock.
 */
import { describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, startHarness } from './helpers.js';

const MIN = 60_000;
const ADMIN_OPTS = {
  scrypt: { N: 1 << 10, r: 8, p: 1 },
  loginRateLimit: { max: 10_000, windowMs: 60_000 },
  accountLockout: { maxFailures: 1000, windowMs: 60_000 },
  maxOpenChallenges: 100,
  emailCodes: { max: 1000, windowMs: 60_000 },
  sessionTtlMs: 8 * 60 * MIN,
  sessionIdleMs: 30 * MIN,
};

async function withHarness(fn: (h: Harness) => Promise<void>) {
  const h = await startHarness({ masterKey: false, coordinator: { admin: ADMIN_OPTS } });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

const lastSeen = async (h: Harness, token: string) =>
  (
    await h.c.db.query<{ last_seen_at: Date; revoked_at: Date | null }>(
      `SELECT last_seen_at, revoked_at FROM sessions WHERE token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')`,
      [token],
    )
  )[0];

describe('attack: an idle session is used after the idle timeout', () => {
  it('a session unused for more than 30 minutes is refused and revoked', async () => {
    await withHarness(async (h) => {
      const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
      expect((await h.req('GET', '/admin/v1/me', { token })).status).toBe(200);
      h.clockOffset.ms += 30 * MIN + 1000;
      const r = await h.req('GET', '/admin/v1/me', { token });
      expect(r.status).toBe(401);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(r.body.code).toBe('SESSION_REQUIRED');
      expect((await lastSeen(h, token))?.revoked_at).not.toBeNull();
      // revoked for good: moving the clock back (another replica's skew) does not revive it
      h.clockOffset.ms -= 30 * MIN;
      expect((await h.req('GET', '/admin/v1/me', { token })).status).toBe(401);
      const audit = await h.c.db.query(`SELECT 1 FROM audit_log WHERE action = 'session.idle_revoked'`);
      expect(audit.length).toBe(1);
    });
  });

  it('a session in use stays alive past 30 minutes but not past its 8 h absolute lifetime', async () => {
    await withHarness(async (h) => {
      const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
      for (let i = 0; i < 16; i++) {
        h.clockOffset.ms += 29 * MIN;
        expect((await h.req('GET', '/admin/v1/me', { token })).status, `after ${(i + 1) * 29} min`).toBe(200);
      }
      // 16 × 29 min = 7 h 44 min; the next use at 8 h 13 min is past the absolute lifetime
      h.clockOffset.ms += 29 * MIN;
      expect((await h.req('GET', '/admin/v1/me', { token })).status).toBe(401);
    });
  });

  it('last_seen_at is written at most once a minute per session', async () => {
    await withHarness(async (h) => {
      const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
      const t0 = (await lastSeen(h, token))!.last_seen_at.getTime();
      h.clockOffset.ms += 20_000;
      expect((await h.req('GET', '/admin/v1/me', { token })).status).toBe(200);
      h.clockOffset.ms += 20_000;
      expect((await h.req('GET', '/admin/v1/me', { token })).status).toBe(200);
      expect((await lastSeen(h, token))!.last_seen_at.getTime()).toBe(t0);
      h.clockOffset.ms += 25_000;
      expect((await h.req('GET', '/admin/v1/me', { token })).status).toBe(200);
      expect((await lastSeen(h, token))!.last_seen_at.getTime()).toBeGreaterThan(t0 + 60_000);
    });
  });
});
