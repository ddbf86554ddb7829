/**
 * `custodian admin wallet-groups …` (named sets of wallets; assigned users are scoped to them) and
 * `custodian admin address-groups …` (named address-book sets referenced by whitelist policies).
 * Both kinds have the same verbs; only the members differ (`--wallet` ids or `--entry`
 * `blockchain_id:address[:label]`), and only wallet groups have `assign`.
 */

import type { AddressGroupInput, WalletGroupInput } from '@custodian/coordinator/admin-api-types';
import type { AdminClient } from './client.js';
import type { AdminContext } from './context.js';

type GroupKind = 'wallet' | 'address';
type GroupInput = WalletGroupInput & AddressGroupInput;

/** The client's routes of one kind of group. */
function groupRoutes(api: AdminClient, kind: GroupKind) {
  return kind === 'wallet'
    ? {
        list: (p: string) => api.listWalletGroups(p),
        get: (p: string, id: string) => api.getWalletGroup(p, id),
        create: (p: string, b: GroupInput & { name: string }) => api.createWalletGroup(p, b),
        update: (p: string, id: string, b: GroupInput) => api.updateWalletGroup(p, id, b),
        delete: (p: string, id: string) => api.deleteWalletGroup(p, id),
      }
    : {
        list: (p: string) => api.listAddressGroups(p),
        get: (p: string, id: string) => api.getAddressGroup(p, id),
        create: (p: string, b: GroupInput & { name: string }) => api.createAddressGroup(p, b),
        update: (p: string, id: string, b: GroupInput) => api.updateAddressGroup(p, id, b),
        delete: (p: string, id: string) => api.deleteAddressGroup(p, id),
      };
}

/** The members part of a create/update body from the flags (absent flag: members unchanged). */
function members(kind: GroupKind, o: { wallet?: string[]; entry?: string[] }): GroupInput {
  if (kind === 'wallet') return o.wallet === undefined ? {} : { wallet_ids: o.wallet };
  if (o.entry === undefined) return {};
  return {
    entries: o.entry.map((e) => {
      const [blockchain_id, address, ...label] = e.split(':');
      return { blockchain_id: blockchain_id!, address: address!, label: label.length > 0 ? label.join(':') : null };
    }),
  };
}

/** Register `wallet-groups` and `address-groups` on `admin`. */
export function registerGroupCommands(ctx: AdminContext): void {
  for (const kind of ['wallet', 'address'] as const) {
    const grp = ctx.admin
      .command(`${kind}-groups`)
      .description(
        kind === 'wallet'
          ? 'wallet groups: named sets of wallets; assigned users are scoped to them'
          : 'address groups: named address-book sets referenced by whitelist policies',
      );
    const routes = async () => groupRoutes(await ctx.client(), kind);
    grp
      .command('list <profile_id>')
      .action(
        ctx.run(async (p: string) =>
          ctx.print(await (await routes()).list(p), [`${kind}_group_id`, 'name', 'description']),
        ),
      );
    grp
      .command('show <profile_id> <group_id>')
      .action(ctx.run(async (p: string, id: string) => ctx.print(await (await routes()).get(p, id))));
    for (const verb of ['create', 'update'] as const) {
      const c = grp.command(verb === 'create' ? 'create <profile_id>' : 'update <profile_id> <group_id>');
      if (verb === 'create') c.requiredOption('--name <name>');
      else c.option('--name <name>');
      c.option('--description <text>');
      if (kind === 'wallet') c.option('--wallet <wallet_ids...>', 'the group wallets (replaces the set)');
      else c.option('--entry <entries...>', 'address-book entries blockchain_id:address[:label] (replaces the set)');
      c.action(
        ctx.run(async (...args: unknown[]) => {
          const p = args[0] as string;
          const id = verb === 'update' ? (args[1] as string) : undefined;
          const o = args[verb === 'update' ? 2 : 1] as {
            name?: string;
            description?: string;
            wallet?: string[];
            entry?: string[];
          };
          const body = {
            ...(o.name !== undefined ? { name: o.name } : {}),
            ...(o.description !== undefined ? { description: o.description } : {}),
            ...members(kind, o),
          };
          const r = await routes();
          // create: commander enforces --name (requiredOption)
          ctx.print(id ? await r.update(p, id, body) : await r.create(p, body as GroupInput & { name: string }));
        }),
      );
    }
    grp
      .command('delete <profile_id> <group_id>')
      .action(ctx.run(async (p: string, id: string) => ctx.print(await (await routes()).delete(p, id))));
    if (kind === 'wallet') {
      grp
        .command('assign <profile_id> <group_id> <user_id>')
        .description('assign a user to the group')
        .option('--remove', 'remove the user instead')
        .action(
          ctx.run(async (p: string, id: string, u: string, o: { remove?: boolean }) => {
            const api = await ctx.client();
            ctx.print(
              o.remove ? await api.unassignWalletGroupUser(p, id, u) : await api.assignWalletGroupUser(p, id, u),
            );
          }),
        );
    }
  }
}
