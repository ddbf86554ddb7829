/**
 * `custodian admin chains list|enable|disable`: the blockchains of a profile by their directory
 * key (`ethereum-mainnet`, `ethereum-local`, …), never by database id. `list` shows the enabled
 * ones, `list --all` every blockchain of the directory with ENABLED and DEVELOPMENT columns
 * (development networks are off by default in production mode); `enable KEY` / `disable KEY`
 * resolve the key through that list and set it (`PUT /admin/v1/profiles/{id}/blockchains/{id}`,
 * Admin only, audited `profile.blockchain_enabled|disabled`). The profile is `--profile`, or the
 * instance's only profile.
 */
import type { AdminClient, DirectoryBlockchain } from './client.js';
import type { AdminContext } from './context.js';
import { AdminCliError } from './http.js';

const COLUMNS = ['key', 'name', 'enabled', 'development', 'testnet', 'blockchain_id'];

/** The `--profile` given, else the only profile. @throws AdminCliError when there are several or none */
async function profileOf(api: AdminClient, given: string | undefined): Promise<string> {
  if (given !== undefined) return given;
  const all = await api.listProfiles();
  if (all.length === 1) return (all[0] as { profile_id: string }).profile_id;
  throw new AdminCliError(
    all.length === 0
      ? 'no profile yet: create one with `custodian admin profiles create <name>`'
      : `${all.length} profiles: pass --profile <profile_id> (see \`custodian admin profiles list\`)`,
  );
}

/** Every blockchain of the directory for `profile` (all pages). */
async function directory(api: AdminClient, profile: string): Promise<DirectoryBlockchain[]> {
  const out: DirectoryBlockchain[] = [];
  for (let page = 1; ; page++) {
    const p = await api.listProfileDirectory(profile, { page, page_size: 200 });
    out.push(...p.data);
    if (out.length >= p.total || p.data.length === 0) return out;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Blockchain ids for `values`: a UUID is taken as an id, anything else as a directory key.
 * @throws AdminCliError naming an unknown key and the keys of the directory
 */
export async function blockchainIds(api: AdminClient, profile: string, values: readonly string[]): Promise<string[]> {
  if (values.every((v) => UUID.test(v))) return [...values];
  const rows = await directory(api, profile);
  return values.map((v) => {
    if (UUID.test(v)) return v;
    const chain = rows.find((r) => r.key === v);
    if (!chain)
      throw new AdminCliError(
        `no blockchain with key ${JSON.stringify(v)}; the directory has: ${rows.map((r) => r.key).join(', ')}`,
      );
    return chain.blockchain_id;
  });
}

/** Register `chains` on `admin`. */
export function registerChainCommands(ctx: AdminContext): void {
  const chains = ctx.admin
    .command('chains')
    .description('blockchains of a profile, by directory key (enable a development network in production)');
  chains
    .command('list')
    .description('blockchains enabled for the profile; --all: every blockchain of the directory')
    .option('--profile <profile_id>', 'profile (default: the only one)')
    .option('--all', 'every blockchain of the directory, enabled or not')
    .action(
      ctx.run(async (o: { profile?: string; all?: boolean }) => {
        const api = await ctx.client();
        const rows = await directory(api, await profileOf(api, o.profile));
        ctx.print(o.all ? rows : rows.filter((r) => r.enabled), COLUMNS);
      }),
    );
  for (const enabled of [true, false]) {
    chains
      .command(`${enabled ? 'enable' : 'disable'} <key>`)
      .description(`${enabled ? 'enable' : 'disable'} a blockchain for the profile by its key, e.g. ethereum-mainnet`)
      .option('--profile <profile_id>', 'profile (default: the only one)')
      .action(
        ctx.run(async (key: string, o: { profile?: string }) => {
          const api = await ctx.client();
          const profile = await profileOf(api, o.profile);
          const [id] = await blockchainIds(api, profile, [key]);
          const chain = (await directory(api, profile)).find((r) => r.blockchain_id === id) as DirectoryBlockchain;
          await api.setProfileBlockchain(profile, chain.blockchain_id, enabled);
          if (ctx.json) return ctx.print({ ...chain, enabled });
          ctx.io.out(`${chain.key} ${enabled ? 'enabled' : 'disabled'} for profile ${profile}`);
        }),
      );
  }
}
