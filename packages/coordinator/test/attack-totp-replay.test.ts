/**
 * Attack (issue #26 item 4): a TOTP code is valid for its own 30 s step and, with the ±1-step
 * window, for the neighbouring ones. Someone who sees a code being typed (shoulder, phishing proxy,
 * logged request) could replay it, or an earlier step's code, while it is still inside the window,
 * and open a second session. RFC 6238 §5.2: the verifier MUST NOT accept the second attempt of the
 * same OTP. Must hold: the last accepted time step per user is stored in the transaction that
 * accepts a code, any step ≤ it is refused exactly like a wrong code, and concurrent submissions
 * of one code yield exactly one session (on PGlite and on a PostgreSQL server, where the logins
 * truly race over a pool of connections).
 */
import { randomUUID } from 'node:crypto';
import * as OTPAuth from 'otpauth';
import { describe, expect, it } from 'vitest';
import { type Harness, type Json, postgresReachable, startHarness } from './helpers.js';

const PW = 'a long enough password';
const PERIOD_MS = 30_000;

/** The coordinator's clock (real time plus the harness offset). */
const coordNow = (h: Harness) => Date.now() + h.clockOffset.ms;

/**
 * Move the coordinator's clock so that it sits 3 s into a 30 s step, leaving ~27 s before the
 * step changes under the test. Returns that step's number.
 */
function alignToStep(h: Harness): number {
  const into = coordNow(h) % PERIOD_MS;
  h.clockOffset.ms += (PERIOD_MS - into + 3_000) % PERIOD_MS;
  return Math.floor(coordNow(h) / PERIOD_MS);
}

/** A fresh user with TOTP enabled; the confirmation used a code of step `confirmStep`. */
async function totpUser(h: Harness, confirmStep: number) {
  const email = `totp-${randomUUID().slice(0, 8)}@example.com`;
  const r = await h.req('POST', '/admin/v1/users', {
    token: h.adminToken,
    body: { email, name: 'totp user', role: 'VIEWER', password: PW },
  });
  expect(r.status).toBe(201);
  const token = await h.stepUp(await h.login(email, PW), PW); // enrollment needs a step-up (#26 item 5)
  const e = await h.req('POST', '/admin/v1/me/totp', { token });
  expect(e.status).toBe(200);
  const totp = new OTPAuth.TOTP({
    secret: OTPAuth.Secret.fromBase32(e.body.secret),
    digits: 6,
    period: 30,
    algorithm: 'SHA1',
  });
  const codeAt = (step: number) => totp.generate({ timestamp: step * PERIOD_MS });
  const c = await h.req('POST', '/admin/v1/me/totp/confirm', { token, body: { code: codeAt(confirmStep) } });
  expect(c.status).toBe(200);
  expect(c.body.totp_enabled).toBe(true);
  return { email, user_id: r.body.user_id as string, codeAt };
}

/** Password step, then the code: the verify response. */
async function loginWith(h: Harness, email: string, code: string) {
  const l = await h.req('POST', '/admin/v1/login', { body: { email, password: PW } });
  expect(l.status).toBe(200);
  expect(l.body.method).toBe('totp');
  return h.req('POST', '/admin/v1/login/verify', { body: { challenge_id: l.body.challenge_id, code } });
}

/** The refusal, minus what differs per request: a replay must read exactly like a wrong code. */
const refusal = (r: { status: number; body: Json }) => ({
  status: r.status,
  code: r.body?.code,
  title: r.body?.title,
  detail: r.body?.detail,
});

async function withHarness(kind: 'pglite' | 'postgres', fn: (h: Harness) => Promise<void>) {
  const h = await startHarness({ db: kind, masterKey: false });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

describe('TOTP replay inside the ±1-step window', () => {
  it('the code that opened a session cannot open a second one; the refusal reads like a wrong code', async () => {
    await withHarness('pglite', async (h) => {
      const T = alignToStep(h);
      const u = await totpUser(h, T - 1);
      const first = await loginWith(h, u.email, u.codeAt(T));
      expect(first.status).toBe(200);
      expect(first.body.token).toMatch(/^css_/);

      const wrong = await loginWith(h, u.email, u.codeAt(T) === '000000' ? '111111' : '000000');
      const replay = await loginWith(h, u.email, u.codeAt(T));
      expect(replay.status).toBe(401);
      expect(replay.body.token).toBeUndefined();
      expect(refusal(replay)).toEqual(refusal(wrong));
      expect(refusal(replay)).toMatchObject({ status: 401, code: 'INVALID_SECOND_FACTOR' });

      // A later step's code (inside the window) still works, once.
      const later = await loginWith(h, u.email, u.codeAt(T + 1));
      expect(later.status).toBe(200);
      expect((await loginWith(h, u.email, u.codeAt(T + 1))).status).toBe(401);
      // The accepted step is stored with the user (committed with the session it opened).
      const row = await h.c.db.query<{ s: string }>('SELECT totp_last_step::text AS s FROM users WHERE user_id = $1', [
        u.user_id,
      ]);
      expect(row[0]?.s).toBe(String(T + 1));
    });
  });

  it('a code that opened a session cannot also disable TOTP', async () => {
    await withHarness('pglite', async (h) => {
      const T = alignToStep(h);
      const u = await totpUser(h, T - 1);
      const s = await loginWith(h, u.email, u.codeAt(T));
      expect(s.status).toBe(200);
      const token = s.body.token as string;
      const replay = await h.req('POST', '/admin/v1/me/totp/disable', { token, body: { code: u.codeAt(T) } });
      expect(replay.status).toBe(401);
      expect(replay.body.code).toBe('INVALID_SECOND_FACTOR');
      expect((await h.req('GET', '/admin/v1/me', { token })).body.totp_enabled).toBe(true);
      const ok = await h.req('POST', '/admin/v1/me/totp/disable', { token, body: { code: u.codeAt(T + 1) } });
      expect(ok.status).toBe(200);
      expect(ok.body.totp_enabled).toBe(false);
    });
  });

  it("an earlier step's code still inside the window is refused once a later step was accepted", async () => {
    await withHarness('pglite', async (h) => {
      const T = alignToStep(h);
      const u = await totpUser(h, T - 1);
      expect((await loginWith(h, u.email, u.codeAt(T + 1))).status).toBe(200);
      // Both T and T-1 are inside the ±1 window of the clock, and neither opened a session yet.
      expect(refusal(await loginWith(h, u.email, u.codeAt(T)))).toMatchObject({
        status: 401,
        code: 'INVALID_SECOND_FACTOR',
      });
      expect((await loginWith(h, u.email, u.codeAt(T - 1))).status).toBe(401);
      // When the clock reaches the next step after the accepted one, its code works.
      h.clockOffset.ms += 2 * PERIOD_MS;
      expect((await loginWith(h, u.email, u.codeAt(T + 2))).status).toBe(200);
    });
  });

  it('the code that confirmed the enrollment cannot be used to log in', async () => {
    await withHarness('pglite', async (h) => {
      const T = alignToStep(h);
      const u = await totpUser(h, T);
      expect((await loginWith(h, u.email, u.codeAt(T))).status).toBe(401);
      expect((await loginWith(h, u.email, u.codeAt(T + 1))).status).toBe(200);
    });
  });

  for (const kind of ['pglite', 'postgres'] as const) {
    it(`concurrent logins with one code open exactly one session (${kind})`, async (ctx) => {
      if (kind === 'postgres' && !(await postgresReachable())) ctx.skip();
      await withHarness(kind, async (h) => {
        const T = alignToStep(h);
        const u = await totpUser(h, T - 1);
        const N = 8;
        const challenges: string[] = [];
        for (let i = 0; i < N; i++) {
          const l = await h.req('POST', '/admin/v1/login', { body: { email: u.email, password: PW } });
          expect(l.status).toBe(200);
          challenges.push(l.body.challenge_id);
        }
        const code = u.codeAt(T);
        const results = await Promise.all(
          challenges.map((challenge_id) => h.req('POST', '/admin/v1/login/verify', { body: { challenge_id, code } })),
        );
        const statuses = results.map((r) => r.status).sort();
        expect(statuses).toEqual([200, ...Array(N - 1).fill(401)]);
        const sessions = await h.c.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM sessions WHERE user_id = $1 AND revoked_at IS NULL',
          [u.user_id],
        );
        // one session from the email login used to enroll, one from the TOTP race
        expect(sessions[0]?.n).toBe(2);
      });
    });
  }
});
