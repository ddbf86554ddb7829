/**
 * Attack (#26 item 11, password rule): the only password rule was "at least 12 characters", so
 * `password1234`, `qwertyuiop123` or the user's own e-mail address with a digit pass — the first
 * entries of every guessing list, tried by anyone who phishes the e-mail step or gets past the
 * per-account lockout with a slow, spread-out attack. A dashboard password guards custody
 * decisions (roles, API keys, webhooks, policies).
 *
 * Must hold: every place a password is set — instance initialisation, user creation, an Admin's
 * reset, the user's own change — runs a strength estimator (zxcvbn-ts, English and common
 * dictionaries, keyboard patterns, with the user's e-mail address and name as user inputs) and
 * refuses a guess-able password (score below 3 of 4) with 422 VALIDATION_FAILED naming the field
 * and the estimator's feedback — never echoing the password.
 *
 * Every test starts its own coordinator (real fastify, real PGlite store).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCoordinator } from '../src/coordinator.js';
import { openPglite } from '../src/db/db.js';
import { type Harness, type Json, readBootstrapToken, startHarness } from './helpers.js';

const WEAK = ['password1234', 'qwertyuiop123', 'aaaaaaaaaaaa', 'Password2024!'];
const STRONG = 'tangerine orbit kettle 48';

async function withHarness(fn: (h: Harness) => Promise<void>) {
  const h = await startHarness({ masterKey: false });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

/** A 422 naming `field`, with feedback, that does not contain the password anywhere. */
function expectWeak(r: { status: number; body: Json }, field: string, password: string) {
  expect(r.status, password).toBe(422);
  expect(r.body.code).toBe('VALIDATION_FAILED');
  expect(r.body.errors?.[0]?.field).toBe(field);
  expect(r.body.errors[0].message).toMatch(/too easy to guess/);
  expect(JSON.stringify(r.body)).not.toContain(password);
}

describe('attack: guess-able passwords accepted because they are 12 characters long', () => {
  it('instance initialisation refuses a weak first Admin password', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'custodian-weak-'));
    const c = await createCoordinator({
      db: await openPglite(),
      mode: 'development',
      mailboxDir: join(dir, 'mailbox'),
      bootstrapTokenFile: join(dir, 'bootstrap-token'),
      listen: { port: 0 },
      logger: false,
      admin: { scrypt: { N: 1 << 10, r: 8, p: 1 } },
    });
    try {
      await c.start();
      const token = await readBootstrapToken(c);
      const init = (password: string) =>
        c.app.inject({
          method: 'POST',
          url: '/admin/v1/init',
          payload: {
            email: 'first@example.com',
            name: 'First Admin',
            password,
            profile_name: 'main',
            bootstrap_token: token,
          },
        });
      for (const pw of WEAK) {
        const r = await init(pw);
        expectWeak({ status: r.statusCode, body: r.json() }, 'body.password', pw);
      }
      // The e-mail address is a user input: "first@example.com" plus a digit is weak.
      const own = await init('first@example.com1');
      expectWeak({ status: own.statusCode, body: own.json() }, 'body.password', 'first@example.com1');
      expect(await c.users.initialised()).toBe(false);
      expect((await init(STRONG)).statusCode).toBe(201);
    } finally {
      await c.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an Admin cannot create a user or reset a password to a weak one', async () => {
    await withHarness(async (h) => {
      for (const pw of WEAK) {
        const r = await h.req('POST', '/admin/v1/users', {
          token: h.adminToken,
          body: { email: 'weak@example.com', name: 'Weak', role: 'VIEWER', password: pw },
        });
        expectWeak(r, 'body.password', pw);
      }
      const named = await h.req('POST', '/admin/v1/users', {
        token: h.adminToken,
        body: { email: 'mallory.jones@example.com', name: 'Mallory Jones', role: 'VIEWER', password: 'MalloryJones1' },
      });
      expectWeak(named, 'body.password', 'MalloryJones1');
      expect((await h.req('GET', '/admin/v1/users', { token: h.adminToken })).body.total).toBe(1);

      const u = await h.req('POST', '/admin/v1/users', {
        token: h.adminToken,
        body: { email: 'viewer@example.com', name: 'Viewer', role: 'VIEWER', password: STRONG },
      });
      expect(u.status).toBe(201);
      for (const pw of WEAK) {
        const r = await h.req('PATCH', `/admin/v1/users/${u.body.user_id}`, {
          token: h.adminToken,
          body: { password: pw },
        });
        expectWeak(r, 'body.password', pw);
      }
      // The strong initial password still logs in: nothing was changed.
      await expect(h.login('viewer@example.com', STRONG)).resolves.toMatch(/^css_/);
    });
  });
});
