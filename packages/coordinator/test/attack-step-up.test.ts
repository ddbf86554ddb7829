/**
 * Attack (issue #26 item 5): someone who holds only a dashboard session token — copied from a
 * browser, a log, a shared machine left logged in — could replace the user's enabled TOTP factor
 * (and so keep the account after the token expires), create an API key, register a webhook that
 * ships every event to them, or raise a role, without knowing the password or the second factor.
 *
 * Must hold: those requests need a fresh step-up on the session (`POST /admin/v1/session/step-up`
 * with the current TOTP code when the user has TOTP, else the password; fresh for `stepUpTtlMs`);
 * without it they answer 403 `STEP_UP_REQUIRED` and change nothing. A wrong step-up proof counts
 * towards the per-account lockout. A factor change revokes the user's other sessions, is audited
 * and mailed to the user.
 *
 * Every test starts its own coordinator (real fastify, real PGlite store, development mailbox).
 */
import { randomUUID } from 'node:crypto';
import * as OTPAuth from 'otpauth';
import { describe, expect, it } from 'vitest';
import type { CoordinatorOptions } from '../src/coordinator.js';
import { readMailbox } from '../src/mailer.js';
import { enrollmentBody, phoneKeys } from './device-fixtures.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, type Json, startHarness } from './helpers.js';

const PW = 'a long enough password';
const PERIOD_MS = 30_000;
const STEP_UP_TTL_MS = 5 * 60_000;
/** Real step-up window, fast scrypt, generous login limits (the lockout test sets its own). */
const ADMIN_OPTS = {
  scrypt: { N: 1 << 10, r: 8, p: 1 },
  loginRateLimit: { max: 10_000, windowMs: 60_000 },
  accountLockout: { maxFailures: 1000, windowMs: 60_000 },
  maxOpenChallenges: 100,
  emailCodes: { max: 1000, windowMs: 60_000 },
  stepUpTtlMs: STEP_UP_TTL_MS,
};

async function withHarness(fn: (h: Harness) => Promise<void>, coordinator: Partial<CoordinatorOptions> = {}) {
  const h = await startHarness({ masterKey: false, coordinator: { admin: ADMIN_OPTS, ...coordinator } });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

const coordNow = (h: Harness) => Date.now() + h.clockOffset.ms;

/** Sit 3 s into a 30 s TOTP step (27 s before it changes under the test); returns the step. */
function alignToStep(h: Harness): number {
  const into = coordNow(h) % PERIOD_MS;
  h.clockOffset.ms += (PERIOD_MS - into + 3_000) % PERIOD_MS;
  return Math.floor(coordNow(h) / PERIOD_MS);
}

const totpOf = (secret: string) =>
  new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' });

/**
 * A user (role `role`) whose TOTP the user enrolled in the past, set up through the service (the
 * legitimate history, confirmed with a code of step `confirmStep`), and a session opened with the
 * TOTP code of step `loginStep` — the token the attacker holds.
 */
async function totpUserWithSession(h: Harness, confirmStep: number, loginStep: number, role = 'VIEWER') {
  const svc = h.c.users;
  const email = `victim-${randomUUID().slice(0, 8)}@example.com`;
  const u = await svc.createUser(randomUUID(), { email, name: 'victim', role: role as 'VIEWER', password: PW });
  const { secret } = await svc.totp.enroll(u.user_id);
  const totp = totpOf(secret);
  const codeAt = (step: number) => totp.generate({ timestamp: step * PERIOD_MS });
  await svc.totp.confirm(u.user_id, codeAt(confirmStep), randomUUID()); // no session of the user yet
  const l = await h.req('POST', '/admin/v1/login', { body: { email, password: PW } });
  expect(l.body.method).toBe('totp');
  const v = await h.req('POST', '/admin/v1/login/verify', {
    body: { challenge_id: l.body.challenge_id, code: codeAt(loginStep) },
  });
  expect(v.status).toBe(200);
  return { email, user_id: u.user_id, secret, codeAt, token: v.body.token as string };
}

/** A user without TOTP (login by e-mail code) and a session: the token the attacker holds. */
async function passwordUserWithSession(h: Harness, role: 'ADMIN' | 'VIEWER' = 'ADMIN') {
  const email = `victim-${randomUUID().slice(0, 8)}@example.com`;
  const u = await h.c.users.createUser(randomUUID(), { email, name: 'victim', role, password: PW });
  return { email, user_id: u.user_id, token: await h.login(email, PW) };
}

function expectStepUpRequired(r: { status: number; headers: Headers; body: Json }, what: string) {
  // status and code only: a 2xx body may hold a secret (an API key, a TOTP secret)
  expect(r.status, `${what}: ${r.body?.code ?? 'no problem code'}`).toBe(403);
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.body.code).toBe('STEP_UP_REQUIRED');
}

const totpSecretOf = async (h: Harness, userId: string) =>
  (await h.c.db.query<{ s: string | null }>('SELECT totp_secret AS s FROM users WHERE user_id = $1', [userId]))[0]?.s;

describe('attack: a session alone changes a second factor', () => {
  it('a session alone cannot replace an enabled TOTP factor (start and confirm need a step-up)', async () => {
    await withHarness(async (h) => {
      const T = alignToStep(h);
      const v = await totpUserWithSession(h, T - 1, T);
      const before = await totpSecretOf(h, v.user_id);
      expect(before).toBe(v.secret);

      // The attacker starts a new enrollment with the session alone …
      const start = await h.req('POST', '/admin/v1/me/totp', { token: v.token });
      expectStepUpRequired(start, 'start TOTP enrollment');
      expect(start.body.secret).toBeUndefined();
      // … or confirms one started earlier (planted directly), with a code of the attacker's secret.
      const planted = new OTPAuth.Secret({ size: 20 }).base32;
      await h.c.db.query('UPDATE users SET totp_pending_secret = $2 WHERE user_id = $1', [v.user_id, planted]);
      const confirm = await h.req('POST', '/admin/v1/me/totp/confirm', {
        token: v.token,
        body: { code: totpOf(planted).generate({ timestamp: coordNow(h) }) },
      });
      expectStepUpRequired(confirm, 'confirm TOTP enrollment');
      expect(await totpSecretOf(h, v.user_id)).toBe(before);
    });
  });

  it('a session alone cannot enroll a first TOTP factor on a password user (it would lock the owner out)', async () => {
    await withHarness(async (h) => {
      const v = await passwordUserWithSession(h, 'VIEWER');
      expectStepUpRequired(await h.req('POST', '/admin/v1/me/totp', { token: v.token }), 'start TOTP enrollment');
      expect(await totpSecretOf(h, v.user_id)).toBeNull();
    });
  });

  it('the TOTP user steps up with a current code (not the password, not the code that opened the session), then replaces the factor: other sessions revoked, audited, mailed', async () => {
    await withHarness(async (h) => {
      const T = alignToStep(h);
      const v = await totpUserWithSession(h, T - 1, T);
      // a second session of the same user (another browser) — the factor change must end it
      const l = await h.req('POST', '/admin/v1/login', { body: { email: v.email, password: PW } });
      h.clockOffset.ms += PERIOD_MS;
      const other = await h.req('POST', '/admin/v1/login/verify', {
        body: { challenge_id: l.body.challenge_id, code: v.codeAt(T + 1) },
      });
      expect(other.status).toBe(200);
      h.clockOffset.ms += PERIOD_MS; // clock now in step T + 2

      const byPassword = await h.req('POST', '/admin/v1/session/step-up', {
        token: v.token,
        body: { password: PW },
      });
      expect(byPassword.status).toBe(422);
      expect(byPassword.body.code).toBe('VALIDATION_FAILED');
      const replayed = await h.req('POST', '/admin/v1/session/step-up', {
        token: v.token,
        body: { code: v.codeAt(T + 1) },
      });
      expect(replayed.status).toBe(401);
      expect(replayed.body.code).toBe('INVALID_SECOND_FACTOR');
      expectStepUpRequired(await h.req('POST', '/admin/v1/me/totp', { token: v.token }), 'after a failed step-up');

      const before = coordNow(h);
      const ok = await h.req('POST', '/admin/v1/session/step-up', { token: v.token, body: { code: v.codeAt(T + 2) } });
      expect(ok.status).toBe(200);
      expect(ok.body.method).toBe('totp');
      const until = Date.parse(ok.body.step_up_expires_at);
      expect(until).toBeGreaterThanOrEqual(before + STEP_UP_TTL_MS);
      expect(until).toBeLessThanOrEqual(coordNow(h) + STEP_UP_TTL_MS);
      const me = await h.req('GET', '/admin/v1/me', { token: v.token });
      expect(me.body.step_up_expires_at).toBe(ok.body.step_up_expires_at);

      const start = await h.req('POST', '/admin/v1/me/totp', { token: v.token });
      expect(start.status).toBe(200);
      const fresh = totpOf(start.body.secret);
      const confirm = await h.req('POST', '/admin/v1/me/totp/confirm', {
        token: v.token,
        body: { code: fresh.generate({ timestamp: coordNow(h) }) },
      });
      expect(confirm.status).toBe(200);
      expect(await totpSecretOf(h, v.user_id)).toBe(start.body.secret);

      // the other session is revoked; the one that proved the factor stays
      expect((await h.req('GET', '/admin/v1/me', { token: other.body.token })).status).toBe(401);
      expect((await h.req('GET', '/admin/v1/me', { token: v.token })).status).toBe(200);
      const audit = await h.c.db.query<{ action: string }>(
        `SELECT action FROM audit_log WHERE target_id = $1 AND action IN ('session.step_up', 'session.step_up_failed', 'user.totp_replaced')
         ORDER BY seq`,
        [v.user_id],
      );
      expect(audit.map((a) => a.action)).toEqual(['session.step_up_failed', 'session.step_up', 'user.totp_replaced']);
      const mails = (await readMailbox(h.c.mailboxDir!)).filter((m) => m.to.includes(v.email));
      expect(mails.at(-1)?.subject).toMatch(/authenticator/i);
      expect(mails.at(-1)?.text).not.toContain(start.body.secret);
    });
  });

  it('disabling TOTP needs the current code (its own step-up) and revokes the other sessions, audited and mailed', async () => {
    await withHarness(async (h) => {
      const T = alignToStep(h);
      const v = await totpUserWithSession(h, T - 1, T);
      const second = await h.req('POST', '/admin/v1/login', { body: { email: v.email, password: PW } });
      h.clockOffset.ms += PERIOD_MS;
      const other = await h.req('POST', '/admin/v1/login/verify', {
        body: { challenge_id: second.body.challenge_id, code: v.codeAt(T + 1) },
      });
      expect(other.status).toBe(200);
      h.clockOffset.ms += PERIOD_MS;
      const wrong = await h.req('POST', '/admin/v1/me/totp/disable', { token: v.token, body: { code: '000000' } });
      expect(wrong.status).toBe(401);
      const failures = await h.c.db.query(
        `SELECT 1 FROM audit_log WHERE action = 'session.step_up_failed' AND target_id = $1`,
        [v.user_id],
      );
      expect(failures.length).toBe(1);
      const ok = await h.req('POST', '/admin/v1/me/totp/disable', { token: v.token, body: { code: v.codeAt(T + 2) } });
      expect(ok.status).toBe(200);
      expect(ok.body.totp_enabled).toBe(false);
      expect((await h.req('GET', '/admin/v1/me', { token: other.body.token })).status).toBe(401);
      expect((await h.req('GET', '/admin/v1/me', { token: v.token })).status).toBe(200);
      const mails = (await readMailbox(h.c.mailboxDir!)).filter((m) => m.to.includes(v.email));
      expect(mails.at(-1)?.subject).toMatch(/authenticator/i);
    });
  });

  it('wrong step-up proofs count towards the per-account lockout (then even the right one is refused)', async () => {
    await withHarness(
      async (h) => {
        const v = await passwordUserWithSession(h);
        const statuses: number[] = [];
        for (let i = 0; i < 4; i++) {
          const r = await h.req('POST', '/admin/v1/session/step-up', {
            token: v.token,
            body: { password: `wrong guess ${i}` },
          });
          statuses.push(r.status);
        }
        expect(statuses).toEqual([401, 401, 401, 429]);
        const right = await h.req('POST', '/admin/v1/session/step-up', { token: v.token, body: { password: PW } });
        expect(right.status).toBe(429);
        expect(right.body.code).toBe('RATE_LIMITED');
        // the same lockout closes the login door for the account
        const login = await h.req('POST', '/admin/v1/login', { body: { email: v.email, password: PW } });
        expect(login.status).toBe(429);
        expectStepUpRequired(
          await h.req('POST', '/admin/v1/api-keys', { token: v.token, body: { profile_id: h.profileId, name: 'x' } }),
          'create an API key while locked out',
        );
      },
      { admin: { ...ADMIN_OPTS, accountLockout: { maxFailures: 3, windowMs: 15 * 60_000 } } },
    );
  });
});

describe('attack: a session alone performs sensitive admin actions', () => {
  it('approving a phone, registering or removing a server signer, instance webhooks, key rotation and user deletion need a step-up', async () => {
    await withHarness(async (h) => {
      const v = await passwordUserWithSession(h, 'ADMIN');
      const target = await h.c.users.createUser(randomUUID(), {
        email: `target-${randomUUID().slice(0, 8)}@example.com`,
        name: 'target',
        role: 'VIEWER',
        password: PW,
      });
      // an attacker's phone, waiting for approval
      const e = await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(await phoneKeys(), 'phone') });
      expect(e.status).toBe(201);
      const attempts: [string, string, unknown?][] = [
        [
          'POST',
          `/admin/v1/devices/${e.body.device_id}/approve`,
          { fingerprint: e.body.fingerprint, user_id: v.user_id },
        ],
        [
          'POST',
          '/admin/v1/signers',
          { name: 'rogue', peer_id: '12D3KooWRogueSignerPeerIdXXXXXXXXXXXXXXXXXXXXXXX', fingerprint: 'x' },
        ],
        ['DELETE', `/admin/v1/signers/${randomUUID()}`],
        ['POST', '/admin/v1/webhooks', { url: 'http://127.0.0.1:9/exfil', event_types: ['USER_CREATED'] }],
        ['PATCH', `/admin/v1/webhooks/${randomUUID()}`, { url: 'http://127.0.0.1:9/exfil' }],
        ['DELETE', `/admin/v1/webhooks/${randomUUID()}`],
        ['POST', '/admin/v1/webhook-signing-keys/rotate'],
        ['DELETE', `/admin/v1/users/${target.user_id}`],
      ];
      const res = await Promise.all(
        attempts.map(([method, path, body]) =>
          h.req(method, path, { token: v.token, ...(body === undefined ? {} : { body }) }),
        ),
      );
      for (const [i, r] of res.entries()) expectStepUpRequired(r, `${attempts[i]![0]} ${attempts[i]![1]}`);
      expect((await h.c.devices.getDevice(e.body.device_id)).status).toBe('PENDING');
      expect((await h.c.users.getUser(target.user_id)).role).toBe('VIEWER');
      // after a step-up the approval goes through
      expect(
        (await h.req('POST', '/admin/v1/session/step-up', { token: v.token, body: { password: PW } })).status,
      ).toBe(200);
      const ok = await h.req('POST', `/admin/v1/devices/${e.body.device_id}/approve`, {
        token: v.token,
        body: { fingerprint: e.body.fingerprint, user_id: v.user_id },
      });
      expect(ok.status).toBe(200);
    });
  });

  it('creating an API key, registering, changing or deleting a webhook, changing a role or creating a user needs a step-up', async () => {
    await withHarness(async (h) => {
      const v = await passwordUserWithSession(h, 'ADMIN');
      const target = await h.c.users.createUser(randomUUID(), {
        email: `target-${randomUUID().slice(0, 8)}@example.com`,
        name: 'target',
        role: 'VIEWER',
        password: PW,
      });
      const hook = await h.c.webhooks.registrations.createWebhook(randomUUID(), h.profileId, {
        url: 'http://127.0.0.1:9/hook',
        event_types: ['WALLET_CREATED'],
      });
      const keyId = (await h.c.apiKeys.store.create(h.profileId, 'existing', null)).api_key_id;
      const hookId = String(hook.webhook_id);
      const hooks = `/admin/v1/profiles/${h.profileId}/webhooks`;
      const attempts: [string, string, unknown?][] = [
        ['POST', '/admin/v1/api-keys', { profile_id: h.profileId, name: 'exfil' }],
        ['DELETE', `/admin/v1/api-keys/${keyId}`],
        ['POST', hooks, { url: 'http://127.0.0.1:9/exfil', event_types: ['TRANSFER_CREATED'] }],
        ['PATCH', `${hooks}/${hookId}`, { url: 'http://127.0.0.1:9/exfil' }],
        ['DELETE', `${hooks}/${hookId}`],
        ['PATCH', `/admin/v1/users/${target.user_id}`, { role: 'ADMIN' }],
        ['PATCH', `/admin/v1/users/${target.user_id}`, { password: 'attacker chosen password' }],
        [
          'POST',
          '/admin/v1/users',
          { email: 'attacker@example.com', name: 'attacker', role: 'ADMIN', password: 'attacker password' },
        ],
      ];
      const run = () =>
        Promise.all(
          attempts.map(([method, path, body]) =>
            h.req(method, path, { token: v.token, ...(body === undefined ? {} : { body }) }),
          ),
        );
      for (const [i, r] of (await run()).entries()) expectStepUpRequired(r, `${attempts[i]![0]} ${attempts[i]![1]}`);
      // nothing changed
      expect((await h.c.users.getUser(target.user_id)).role).toBe('VIEWER');
      expect((await h.c.webhooks.registrations.getWebhook(h.profileId, hookId)).url).toBe('http://127.0.0.1:9/hook');
      const keys = await h.c.db.query<{ name: string; revoked_at: Date | null }>(
        'SELECT name, revoked_at FROM api_keys ORDER BY created_at',
      );
      expect(keys.map((k) => k.name)).toEqual(['test', 'existing']);
      expect(keys.every((k) => k.revoked_at === null)).toBe(true);
      expect(await h.c.db.query(`SELECT 1 FROM users WHERE email = 'attacker@example.com'`)).toEqual([]);
      // a renamed user is not sensitive: no step-up
      const rename = await h.req('PATCH', `/admin/v1/users/${target.user_id}`, {
        token: v.token,
        body: { name: 'renamed' },
      });
      expect(rename.status).toBe(200);

      // with the password, the session is step-up fresh for the window …
      const up = await h.req('POST', '/admin/v1/session/step-up', { token: v.token, body: { password: PW } });
      expect(up.status).toBe(200);
      expect(up.body.method).toBe('password');
      const k = await h.req('POST', '/admin/v1/api-keys', {
        token: v.token,
        body: { profile_id: h.profileId, name: 'legit' },
      });
      expect(k.status).toBe(201);
      const role = await h.req('PATCH', `/admin/v1/users/${target.user_id}`, {
        token: v.token,
        body: { role: 'FINANCE_MANAGER' },
      });
      expect(role.status).toBe(200);
      // … and only for the window; another session of the same user is not fresh at all
      const otherSession = await h.login(v.email, PW);
      expectStepUpRequired(
        await h.req('POST', hooks, {
          token: otherSession,
          body: { url: 'http://127.0.0.1:9/x', event_types: ['WALLET_CREATED'] },
        }),
        'another session of the stepped-up user',
      );
      h.clockOffset.ms += STEP_UP_TTL_MS + 1000;
      expectStepUpRequired(
        await h.req('POST', '/admin/v1/api-keys', { token: v.token, body: { profile_id: h.profileId, name: 'late' } }),
        'after the step-up window',
      );
    });
  });

  it('the harness Admin cannot skip the step-up either (the first Admin is not special)', async () => {
    await withHarness(async (h) => {
      const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
      expectStepUpRequired(
        await h.req('POST', '/admin/v1/api-keys', { token, body: { profile_id: h.profileId, name: 'x' } }),
        'first Admin, fresh login',
      );
    });
  });
});
