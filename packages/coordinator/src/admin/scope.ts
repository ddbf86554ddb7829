/**
 * Wallet-group user scoping (#26 item 9), enforced for every admin route under
 * `/admin/v1/profiles/{profile_id}` by one preHandler hook ({@link walletScopeHook}) and the list
 * handlers' filters:
 *
 * - an **Admin** is never scoped: the whole instance, even when assigned to a group;
 * - a **Finance Manager or Viewer assigned to no live wallet group** sees the whole profile;
 * - one **assigned to ≥1 live wallet group** (of any profile) sees and acts on only the wallets of
 *   those groups: lists are filtered, and a foreign wallet, its balances or addresses, a transfer
 *   on it, or a group it is not assigned to, answer exactly like a nonexistent one (404
 *   WALLET_NOT_FOUND / TRANSFER_NOT_FOUND / RESOURCE_NOT_FOUND), so existence is not revealed. In a
 *   profile where none of their groups lies they see no wallet.
 * - **policies** for such a user: a policy is visible when every version's `scope.wallet_ids` is
 *   null (profile-wide) or inside the scope, otherwise 404 POLICY_NOT_FOUND and left out of the
 *   list (its wallet ids would reveal foreign wallets); it is writable (new version, delete) only
 *   when every version names wallets and all are inside the scope — a profile-wide policy governs
 *   foreign wallets too, so changing it, or creating one, is 403 ROLE_FORBIDDEN; a body naming a
 *   foreign wallet is the same 422 as an unknown wallet.
 *
 * Read at every request from `wallet_group_users` / `wallet_group_wallets`, so an assignment, a
 * removal or a group's new wallet takes effect on the next request.
 */
import type { FastifyRequest } from 'fastify';
import type { Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { Role } from './options.js';

/** What a user may see in one profile: everything, or exactly `walletIds` (maybe none). */
export type WalletScope =
  | { readonly all: true }
  | { readonly all: false; readonly walletIds: readonly string[]; readonly groupIds: readonly string[] };

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by {@link walletScopeHook} on admin routes with a `profile_id` (absent: not computed). */
    walletScope?: WalletScope;
  }
}

const ALL: WalletScope = { all: true };

/**
 * The wallet scope of `user` in `profileId` (see the module text for the rules).
 * @returns `{ all: true }`, or the wallet ids (lowercase UUIDs) and the group ids the user is assigned to in the profile
 */
export async function walletScope(
  q: Queryable,
  user: { readonly user_id: string; readonly role: Role },
  profileId: string,
): Promise<WalletScope> {
  if (user.role === 'ADMIN') return ALL;
  const rows = await q.query<{ profile_id: string; wallet_group_id: string; wallet_id: string | null }>(
    `SELECT g.profile_id, g.wallet_group_id, gw.wallet_id
     FROM wallet_group_users gu
     JOIN wallet_groups g ON g.wallet_group_id = gu.wallet_group_id AND g.deleted_at IS NULL
     LEFT JOIN wallet_group_wallets gw ON gw.wallet_group_id = g.wallet_group_id
     WHERE gu.user_id = $1`,
    [user.user_id],
  );
  if (rows.length === 0) return ALL;
  const pid = profileId.toLowerCase();
  const here = rows.filter((r) => r.profile_id === pid);
  return {
    all: false,
    walletIds: [...new Set(here.flatMap((r) => (r.wallet_id === null ? [] : [r.wallet_id])))],
    groupIds: [...new Set(here.map((r) => r.wallet_group_id))],
  };
}

/** Whether `walletId` is inside `scope`. */
export function inScope(scope: WalletScope | undefined, walletId: string): boolean {
  return scope === undefined || scope.all || scope.walletIds.includes(walletId.toLowerCase());
}

/** The wallet-id filter for a list query: undefined = no filter (whole profile). */
export function scopeFilter(scope: WalletScope | undefined): readonly string[] | undefined {
  return scope === undefined || scope.all ? undefined : scope.walletIds;
}

/**
 * preHandler hook for the admin routes (after the session hook and validation): computes
 * `req.walletScope` when the route has a `profile_id` and a session, then refuses — like a
 * nonexistent resource — a `wallet_id` outside the scope (404 WALLET_NOT_FOUND), a `transfer_id`
 * of a wallet outside it (404 TRANSFER_NOT_FOUND) and a `wallet_group_id` the user is not
 * assigned to (404 RESOURCE_NOT_FOUND). Routes without a session (`req.adminUser` unset) pass.
 */
export function walletScopeHook(db: Queryable) {
  return async (req: FastifyRequest): Promise<void> => {
    const user = req.adminUser;
    const params = (req.params ?? {}) as Record<string, string | undefined>;
    if (user === undefined || params.profile_id === undefined) return;
    const scope = await walletScope(db, user, params.profile_id);
    req.walletScope = scope;
    if (scope.all) return;
    if (params.wallet_id !== undefined && !inScope(scope, params.wallet_id)) {
      throw new ApiError('WALLET_NOT_FOUND', `no wallet ${params.wallet_id} in this profile`);
    }
    if (params.wallet_group_id !== undefined && !scope.groupIds.includes(params.wallet_group_id.toLowerCase())) {
      throw new ApiError('RESOURCE_NOT_FOUND', 'no such wallet group');
    }
    if (params.policy_id !== undefined) await checkPolicy(db, req, scope, params.profile_id, params.policy_id);
    else if (req.method === 'POST' && /\/policies$/.test(req.routeOptions.url ?? '')) checkPolicyBody(req, scope);
    if (params.transfer_id !== undefined) {
      const t = (
        await db.query<{ wallet_id: string }>(
          'SELECT wallet_id FROM transfers WHERE transfer_id = $1 AND profile_id = $2',
          [params.transfer_id.toLowerCase(), params.profile_id.toLowerCase()],
        )
      )[0];
      if (t !== undefined && !inScope(scope, t.wallet_id)) {
        throw new ApiError('TRANSFER_NOT_FOUND', `no transfer ${params.transfer_id.toLowerCase()} in this profile`);
      }
    }
  };
}

/** SQL: policy ids of `$1` (profile) not deleted, every version of which names only wallets in `$2` or none. */
const VISIBLE_POLICIES = `SELECT p.policy_id, p.created_at FROM policies p
  WHERE p.profile_id = $1 AND p.deleted_at IS NULL AND NOT EXISTS (
    SELECT 1 FROM policy_versions v,
      jsonb_array_elements_text(CASE WHEN jsonb_typeof(v.document->'scope'->'wallet_ids') = 'array'
        THEN v.document->'scope'->'wallet_ids' ELSE '[]'::jsonb END) AS w(id)
    WHERE v.policy_id = p.policy_id AND NOT (w.id::uuid = ANY($2::uuid[])))`;

/**
 * The policies a scoped user may see in a profile, oldest first (the order of `PolicyService.list`),
 * one page of ids and the total.
 */
export async function visiblePolicyIds(
  q: Queryable,
  profileId: string,
  scope: Extract<WalletScope, { all: false }>,
  page: { page: number; page_size: number },
): Promise<{ ids: string[]; total: number }> {
  const params = [profileId.toLowerCase(), scope.walletIds];
  const rows = await q.query<{ policy_id: string }>(
    `${VISIBLE_POLICIES} ORDER BY p.created_at, p.policy_id LIMIT $3 OFFSET $4`,
    [...params, page.page_size, (page.page - 1) * page.page_size],
  );
  const total = (await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${VISIBLE_POLICIES}) x`, params))[0]?.n;
  return { ids: rows.map((r) => r.policy_id), total: total ?? 0 };
}

/** A policy body's `scope.wallet_ids` must name only wallets of the scope (403 when absent or null). */
function checkPolicyBody(req: FastifyRequest, scope: Extract<WalletScope, { all: false }>): void {
  const ids = (req.body as { scope?: { wallet_ids?: string[] | null } } | undefined)?.scope?.wallet_ids;
  if (ids === undefined || ids === null) {
    throw new ApiError(
      'ROLE_FORBIDDEN',
      'a profile-wide policy governs wallets outside your wallet groups: set scope.wallet_ids to wallets of your groups',
    );
  }
  if (!ids.every((w) => inScope(scope, w))) {
    // The same answer as for a wallet that does not exist (PolicyService.document).
    throw new ApiError('VALIDATION_FAILED', 'body.scope.wallet_ids: unknown wallet', [
      { field: 'body.scope.wallet_ids', message: 'unknown wallet' },
    ]);
  }
}

/** Visibility and, for writes, writability of one policy (see the module text). */
async function checkPolicy(
  db: Queryable,
  req: FastifyRequest,
  scope: Extract<WalletScope, { all: false }>,
  profileId: string,
  policyId: string,
): Promise<void> {
  const id = policyId.toLowerCase();
  const visible = await db.query(`${VISIBLE_POLICIES} AND p.policy_id = $3`, [
    profileId.toLowerCase(),
    scope.walletIds,
    id,
  ]);
  if (visible.length === 0) throw new ApiError('POLICY_NOT_FOUND', `no policy ${id} in this profile`);
  if (req.method === 'GET') return;
  const wide = await db.query(
    `SELECT 1 FROM policy_versions WHERE policy_id = $1 AND jsonb_typeof(document->'scope'->'wallet_ids') IS DISTINCT FROM 'array'`,
    [id],
  );
  if (wide.length > 0) {
    throw new ApiError('ROLE_FORBIDDEN', 'this policy governs wallets outside your wallet groups');
  }
  if (req.method === 'PUT') checkPolicyBody(req, scope);
}
