/**
 * Admin API of the wallets room's groups: wallet groups (`Admin: wallet groups`; assigned users are
 * scoped to their wallets) and address groups (`Admin: address groups`; whitelist policies
 * reference them), and the assignment of users to wallet groups.
 */
import type { FastifyRequest } from 'fastify';
import { type AdminRouter, actor, B, P } from '../admin/route.js';
import { ADMIN, ALL, anyObject, listOf, obj } from '../admin/schemas.js';
import { UUID } from '../api/schemas.js';
import type { WalletService } from './service.js';

/** Register the wallet-group and address-group routes. */
export function groupAdminRoutes(r: AdminRouter, wallets: WalletService): void {
  const profileParams = obj({ profile_id: UUID }, ['profile_id']);
  const groupName = { type: 'string', minLength: 1, maxLength: 200 };
  const groupDescription = { type: ['string', 'null'], maxLength: 500 };
  const walletIds = { type: 'array', maxItems: 10_000, items: UUID };
  const entries = {
    type: 'array',
    maxItems: 10_000,
    items: obj(
      {
        blockchain_id: UUID,
        address: { type: 'string', minLength: 1, maxLength: 200 },
        label: { type: ['string', 'null'], maxLength: 200 },
      },
      ['blockchain_id', 'address'],
    ),
  };
  for (const kind of ['wallet', 'address'] as const) {
    const base = `/admin/v1/profiles/:profile_id/${kind}-groups`;
    const idName = `${kind}_group_id`;
    const itemParams = obj({ profile_id: UUID, [idName]: UUID }, ['profile_id', idName]);
    const tag = kind === 'wallet' ? 'Admin: wallet groups' : 'Admin: address groups';
    const what =
      kind === 'wallet'
        ? 'Wallet group: a named set of wallets; assigned users are scoped to them'
        : 'Address group: a named address-book set that whitelist policies reference';
    const members = kind === 'wallet' ? { wallet_ids: walletIds } : { entries };
    const up = kind.toUpperCase();
    const id = (req: FastifyRequest) => (req.params as Record<string, string>)[idName]!;
    const pid = (req: FastifyRequest) => P<{ profile_id: string }>(req).profile_id;
    r.route(
      'GET',
      base,
      {
        roles: ALL,
        tags: [tag],
        summary: `List ${kind} groups`,
        description: what,
        params: profileParams,
        status: 200,
        response: listOf('Groups'),
      },
      async (req) => {
        if (kind === 'address') return wallets.groups.listAddressGroups(pid(req));
        const scope = req.walletScope;
        const groups = await wallets.groups.listWalletGroups(pid(req));
        return scope === undefined || scope.all
          ? groups
          : groups.filter((g) => scope.groupIds.includes(g.wallet_group_id));
      },
    );
    r.route(
      'POST',
      base,
      {
        roles: ADMIN,
        tags: [tag],
        summary: `Create a ${kind} group (emits ${up}_GROUP_CREATED)`,
        description: what,
        params: profileParams,
        body: obj({ name: groupName, description: groupDescription, ...members }, ['name']),
        status: 201,
        response: anyObject('Group'),
        errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
      },
      async (req) =>
        kind === 'wallet'
          ? wallets.groups.createWalletGroup(actor(req), pid(req), B(req))
          : wallets.groups.createAddressGroup(actor(req), pid(req), B(req)),
    );
    r.route(
      'GET',
      `${base}/:${idName}`,
      {
        roles: ALL,
        tags: [tag],
        summary: `One ${kind} group`,
        params: itemParams,
        status: 200,
        response: anyObject('Group'),
        errors: ['RESOURCE_NOT_FOUND'],
      },
      async (req) =>
        kind === 'wallet'
          ? wallets.groups.getWalletGroup(pid(req), id(req))
          : wallets.groups.getAddressGroup(pid(req), id(req)),
    );
    r.route(
      'PATCH',
      `${base}/:${idName}`,
      {
        roles: ADMIN,
        tags: [tag],
        summary: `Update a ${kind} group (emits ${up}_GROUP_UPDATED)`,
        description: kind === 'wallet' ? '`wallet_ids` replaces the set.' : '`entries` replaces the set.',
        params: itemParams,
        body: { ...obj({ name: groupName, description: groupDescription, ...members }), minProperties: 1 },
        status: 200,
        response: anyObject('Group'),
        errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
      },
      async (req) =>
        kind === 'wallet'
          ? wallets.groups.updateWalletGroup(actor(req), pid(req), id(req), B(req))
          : wallets.groups.updateAddressGroup(actor(req), pid(req), id(req), B(req)),
    );
    r.route(
      'DELETE',
      `${base}/:${idName}`,
      {
        roles: ADMIN,
        tags: [tag],
        summary: `Delete a ${kind} group (emits ${up}_GROUP_DELETED)`,
        // deleting a wallet group lifts its users' scoping: as sensitive as a role change
        stepUp: true,
        params: itemParams,
        status: 204,
        response: { description: 'Deleted', type: 'null' },
        errors: ['RESOURCE_NOT_FOUND'],
      },
      async (req) => {
        if (kind === 'wallet') await wallets.groups.deleteWalletGroup(actor(req), pid(req), id(req));
        else await wallets.groups.deleteAddressGroup(actor(req), pid(req), id(req));
      },
    );
  }
  for (const [method, assigned] of [
    ['PUT', true],
    ['DELETE', false],
  ] as const) {
    r.route(
      method,
      '/admin/v1/profiles/:profile_id/wallet-groups/:wallet_group_id/users/:user_id',
      {
        roles: ADMIN,
        tags: ['Admin: wallet groups'],
        summary: `${assigned ? 'Assign a user to' : 'Remove a user from'} a wallet group (emits WALLET_GROUP_USER_ASSIGNED)`,
        stepUp: true,
        params: obj({ profile_id: UUID, wallet_group_id: UUID, user_id: UUID }, [
          'profile_id',
          'wallet_group_id',
          'user_id',
        ]),
        status: 200,
        response: anyObject('Group'),
        errors: ['RESOURCE_NOT_FOUND'],
      },
      async (req) => {
        const p = P<{ profile_id: string; wallet_group_id: string; user_id: string }>(req);
        return wallets.groups.assignUser(actor(req), p.profile_id, p.wallet_group_id, p.user_id, assigned);
      },
    );
  }
}
