/**
 * Attack (review of #26 items 5, 9): with a stolen Admin session that never stepped up, the
 * attacker
 * - lifts a Finance Manager's wallet-group scoping — removing the user from their only wallet
 *   group, or deleting that group — which makes the user profile-wide (admin/scope.ts: "assigned
 *   to no live wallet group sees the whole profile"): an access grant exactly like a role change,
 *   which needs a step-up;
 * - blocks the other Admin (revoking their sessions), locking the defenders out, while deleting a
 *   user needs a step-up.
 *
 * Must hold: these need a fresh step-up (403 STEP_UP_REQUIRED) and change nothing without it.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, startHarness } from './helpers.js';

const PW = 'a long enough password';

describe('attack (review): scope lifting and blocking Admins without a step-up', () => {
  it('a session alone cannot unassign a scoped user, delete their group, or block an Admin', async () => {
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
      const stolen = await h.login(email, PW); // never stepped up

      const fmEmail = `fm-${randomUUID().slice(0, 8)}@example.com`;
      const fm = await h.c.users.createUser(randomUUID(), {
        email: fmEmail,
        name: 'fm',
        role: 'FINANCE_MANAGER',
        password: PW,
      });
      const g = await h.c.wallets.groups.createWalletGroup(randomUUID(), h.profileId, { name: 'desk A' });
      const g2 = await h.c.wallets.groups.createWalletGroup(randomUUID(), h.profileId, { name: 'desk B' });
      await h.c.wallets.groups.assignUser(randomUUID(), h.profileId, g.wallet_group_id, fm.user_id, true);
      await h.c.wallets.groups.assignUser(randomUUID(), h.profileId, g2.wallet_group_id, fm.user_id, true);
      const owner = (
        await h.c.db.query<{ user_id: string }>('SELECT user_id FROM users WHERE email = $1', [ADMIN_EMAIL])
      )[0]!.user_id;

      const base = `/admin/v1/profiles/${h.profileId}/wallet-groups`;
      const unassign = await h.req('DELETE', `${base}/${g.wallet_group_id}/users/${fm.user_id}`, { token: stolen });
      const delGroup = await h.req('DELETE', `${base}/${g2.wallet_group_id}`, { token: stolen });
      const block = await h.req('PATCH', `/admin/v1/users/${owner}`, { token: stolen, body: { blocked: true } });

      // What the attacker gained: the scoped Finance Manager is now profile-wide.
      const scoped = await h.c.db.query(
        `SELECT 1 FROM wallet_group_users gu JOIN wallet_groups g USING (wallet_group_id)
         WHERE gu.user_id = $1 AND g.deleted_at IS NULL`,
        [fm.user_id],
      );
      expect(
        {
          unassign: `${unassign.status} ${unassign.body?.code ?? ''}`.trim(),
          deleteGroup: `${delGroup.status} ${delGroup.body?.code ?? ''}`.trim(),
          blockAdmin: `${block.status} ${block.body?.code ?? ''}`.trim(),
          fmStillScoped: scoped.length > 0,
          ownerSessionAlive: (await h.req('GET', '/admin/v1/me', { token: h.adminToken })).status === 200,
        },
        'sensitive access changes with a session that never stepped up',
      ).toEqual({
        unassign: '403 STEP_UP_REQUIRED',
        deleteGroup: '403 STEP_UP_REQUIRED',
        blockAdmin: '403 STEP_UP_REQUIRED',
        fmStillScoped: true,
        ownerSessionAlive: true,
      });
    } finally {
      await h.close();
    }
  });
});
