/**
 * Attack (review of #26 items 5, 8): a stolen Admin session — no password, no second factor —
 * registers an instance-level webhook (`POST /admin/v1/webhooks`) that ships every security event
 * (logins, ROLE_SCOPE_LOGIN, user and device changes) to the attacker, re-points the SOC's existing
 * instance webhook to the attacker, or deletes it to blind the SOC. The profile-level webhook
 * routes demand a fresh step-up; their instance-level siblings (the more sensitive events) do not.
 *
 * Must hold: every instance-level webhook write answers 403 STEP_UP_REQUIRED without a fresh
 * step-up, and changes nothing.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startHarness } from './helpers.js';

const PW = 'a long enough password';

describe('attack (review): instance-level webhook writes without a step-up', () => {
  it('a session alone cannot create, re-point or delete an instance-level webhook', async () => {
    const h = await startHarness({
      masterKey: false,
      coordinator: {
        admin: {
          scrypt: { N: 1 << 10, r: 8, p: 1 },
          loginRateLimit: { max: 10_000, windowMs: 60_000 },
          accountLockout: { maxFailures: 1000, windowMs: 60_000 },
          maxOpenChallenges: 100,
          emailCodes: { max: 1000, windowMs: 60_000 },
          stepUpTtlMs: 5 * 60_000,
        },
      },
    });
    try {
      const email = `victim-${randomUUID().slice(0, 8)}@example.com`;
      await h.c.users.createUser(randomUUID(), { email, name: 'victim', role: 'ADMIN', password: PW });
      const stolen = await h.login(email, PW); // the token the attacker holds; never stepped up
      // the SOC's instance webhook, registered earlier by a legitimate Admin
      const soc = await h.c.webhooks.registrations.createWebhook(randomUUID(), null, {
        url: 'http://127.0.0.1:9/soc',
        event_types: ['ROLE_SCOPE_LOGIN', 'USER_CREATED'],
      });
      const socId = String(soc.webhook_id);

      const create = await h.req('POST', '/admin/v1/webhooks', {
        token: stolen,
        body: { url: 'http://127.0.0.1:9/exfil', event_types: ['ROLE_SCOPE_LOGIN', 'USER_CREATED'] },
      });
      const repoint = await h.req('PATCH', `/admin/v1/webhooks/${socId}`, {
        token: stolen,
        body: { url: 'http://127.0.0.1:9/exfil' },
      });
      const del = await h.req('DELETE', `/admin/v1/webhooks/${socId}`, { token: stolen });

      expect(
        [create, repoint, del].map((r) => `${r.status} ${r.body?.code ?? ''}`.trim()),
        'instance webhook POST, PATCH, DELETE with a session that never stepped up',
      ).toEqual(['403 STEP_UP_REQUIRED', '403 STEP_UP_REQUIRED', '403 STEP_UP_REQUIRED']);
      const hooks = await h.c.db.query<{ url: string; deleted_at: Date | null }>(
        'SELECT url, deleted_at FROM webhooks WHERE profile_id IS NULL ORDER BY created_at',
      );
      expect(hooks).toEqual([{ url: 'http://127.0.0.1:9/soc', deleted_at: null }]);
    } finally {
      await h.close();
    }
  });
});
