/**
 * Attack (#26 item 11, self-service password change): a user whose password leaked (phished, seen,
 * reused elsewhere) had no way to change it — only an Admin's reset — so the thief's password kept
 * working, and any session the thief already held stayed alive. The opposite abuse must fail too:
 * someone holding only a stolen session (an unlocked laptop, a leaked bearer token) must not be
 * able to change the password and lock the owner out, nor guess the current password through
 * this route without limit.
 *
 * Must hold: `POST /admin/v1/me/password` with the current password and a strong new one sets the
 * new hash, revokes every OTHER session of the user (the calling one stays), writes the audit
 * entry `user.password_changed` and e-mails the user; a wrong current password is 401
 * INVALID_CREDENTIALS, changes nothing and counts toward the account lockout (429 RATE_LIMITED on
 * this route and on login once locked); a weak new password, or the current one again, is 422
 * naming `body.new_password`. No password appears in a response, the audit log or the e-mail.
 *
 * Every test starts its own coordinator (real fastify, real PGlite store, file mailbox).
 */
import { describe, expect, it } from 'vitest';
import type { CoordinatorOptions } from '../src/coordinator.js';
import { readMailbox } from '../src/mailer.js';
import { type Harness, type Json, startHarness } from './helpers.js';

const OLD = 'tangerine orbit kettle 48';
const NEW = 'violet harbour quiz 9173';
const SCRYPT = { N: 1 << 10, r: 8, p: 1 };

async function withHarness(fn: (h: Harness) => Promise<void>, coordinator: Partial<CoordinatorOptions> = {}) {
  const h = await startHarness({ masterKey: false, coordinator });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

async function makeUser(h: Harness, email: string) {
  const r = await h.req('POST', '/admin/v1/users', {
    token: h.adminToken,
    body: { email, name: 'Pat Example', role: 'FINANCE_MANAGER', password: OLD },
  });
  expect(r.status).toBe(201);
  return r.body.user_id as string;
}

const change = (h: Harness, token: string, current_password: string, new_password: string) =>
  h.req('POST', '/admin/v1/me/password', { token, body: { current_password, new_password } });

function expectProblem(r: { status: number; body: Json }, status: number, code: string) {
  expect(r.status).toBe(status);
  expect(r.body).toMatchObject({ status, code });
}

describe('attack: a leaked password cannot be changed by its owner; a stolen session can change it', () => {
  it('the owner changes the password: old one dead, other sessions revoked, this one kept, audited, e-mailed', async () => {
    await withHarness(async (h) => {
      const email = 'pat@example.com';
      const userId = await makeUser(h, email);
      const mine = await h.login(email, OLD);
      const thief = await h.login(email, OLD); // the thief logged in with the leaked password

      const r = await change(h, mine, OLD, NEW);
      expect(r.status).toBe(204);
      expect(r.body).toBeUndefined();

      expectProblem(await h.req('GET', '/admin/v1/me', { token: thief }), 401, 'SESSION_REQUIRED');
      expect((await h.req('GET', '/admin/v1/me', { token: mine })).status).toBe(200);
      expectProblem(
        await h.req('POST', '/admin/v1/login', { body: { email, password: OLD } }),
        401,
        'INVALID_CREDENTIALS',
      );
      await expect(h.login(email, NEW)).resolves.toMatch(/^css_/);

      const audit = await h.req('GET', '/admin/v1/audit', { token: h.adminToken, headers: {} });
      const entry = audit.body.data.find((e: Json) => e.action === 'user.password_changed');
      expect(entry).toMatchObject({ actor_user_id: userId, target_type: 'user', target_id: userId });
      expect(JSON.stringify(audit.body)).not.toContain(NEW);
      expect(JSON.stringify(audit.body)).not.toContain(OLD);

      const mail = (await readMailbox(h.c.mailboxDir!)).filter(
        (m) => m.to.includes(email) && /password was changed/i.test(m.subject),
      );
      expect(mail).toHaveLength(1);
      expect(mail[0]!.text).not.toContain(NEW);
      expect(mail[0]!.text).not.toContain(OLD);
    });
  });

  it('a stolen session without the current password changes nothing, and its guesses lock the account', async () => {
    await withHarness(
      async (h) => {
        const email = 'sam@example.com';
        await makeUser(h, email);
        const stolen = await h.login(email, OLD);
        for (let i = 0; i < 3; i++) {
          const r = await change(h, stolen, `guess number ${i} zebra`, NEW);
          expectProblem(r, 401, 'INVALID_CREDENTIALS');
          expect(JSON.stringify(r.body)).not.toContain(NEW);
        }
        // Locked: the route and the login answer 429 from now on, even with the right password.
        const locked = await change(h, stolen, OLD, NEW);
        expectProblem(locked, 429, 'RATE_LIMITED');
        expect(Number(locked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expectProblem(await h.req('POST', '/admin/v1/login', { body: { email, password: OLD } }), 429, 'RATE_LIMITED');
        // Nothing changed: after the window the old password still works and the new one does not.
        h.clockOffset.ms += 61_000;
        await expect(h.login(email, OLD)).resolves.toMatch(/^css_/);
        expectProblem(
          await h.req('POST', '/admin/v1/login', { body: { email, password: NEW } }),
          401,
          'INVALID_CREDENTIALS',
        );
      },
      {
        admin: {
          scrypt: SCRYPT,
          loginRateLimit: { max: 10_000, windowMs: 60_000 },
          accountLockout: { maxFailures: 3, windowMs: 60_000 },
          maxOpenChallenges: 100,
          emailCodes: { max: 1000, windowMs: 60_000 },
        },
      },
    );
  });

  it('a weak new password, or the current one again, is a 422 naming body.new_password', async () => {
    await withHarness(async (h) => {
      const email = 'kim@example.com';
      await makeUser(h, email);
      const token = await h.login(email, OLD);
      for (const weak of ['password1234', 'kim@example.com2', OLD]) {
        const r = await change(h, token, OLD, weak);
        expectProblem(r, 422, 'VALIDATION_FAILED');
        expect(r.body.errors[0].field).toBe('body.new_password');
        expect(JSON.stringify(r.body)).not.toContain(weak);
      }
      await expect(h.login(email, OLD)).resolves.toMatch(/^css_/);
    });
  });

  it('needs a session', async () => {
    await withHarness(async (h) => {
      const r = await h.req('POST', '/admin/v1/me/password', { body: { current_password: OLD, new_password: NEW } });
      expectProblem(r, 401, 'SESSION_REQUIRED');
    });
  });
});
