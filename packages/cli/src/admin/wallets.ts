/**
 * `custodian admin profiles …` (profiles and the blockchains and assets enabled for each) and
 * `custodian admin wallets …` (list, create with addresses derived at once, show, balances, rename,
 * archive / unarchive / delete; addresses with labels and archival; UTXO consolidation). Archive,
 * delete and archiving an address need a fresh step-up (`custodian admin step-up`).
 */
import { blockchainIds } from './chains.js';
import { type AdminContext, formatTable, type PageFlags, pageOpts, pageQuery } from './context.js';

/** Register `profiles` on `admin`. */
export function registerProfileCommands(ctx: AdminContext): void {
  const profiles = ctx.admin.command('profiles').description('profiles and their enabled blockchains and assets');
  profiles
    .command('list')
    .description('list profiles')
    .action(ctx.run(async () => ctx.print(await (await ctx.client()).listProfiles())));
  profiles
    .command('create <name>')
    .description('create a profile')
    .action(ctx.run(async (name: string) => ctx.print(await (await ctx.client()).createProfile(name))));
  for (const kind of ['blockchains', 'assets'] as const) {
    pageOpts(profiles.command(`${kind} <profile_id>`).description(`${kind} enabled for a profile`)).action(
      ctx.run(async (p: string, o: PageFlags) => {
        const api = await ctx.client();
        if (kind === 'blockchains')
          ctx.print(await api.listProfileBlockchains(p, pageQuery(o)), [
            'blockchain_id',
            'key',
            'name',
            'account_model',
            'testnet',
          ]);
        else
          ctx.print(await api.listProfileAssets(p, pageQuery(o)), [
            'asset_id',
            'symbol',
            'decimals',
            'blockchain',
            'kind',
          ]);
      }),
    );
    for (const enabled of [true, false]) {
      const singular = kind.slice(0, -1);
      profiles
        .command(`${enabled ? 'enable' : 'disable'}-${singular} <profile_id> <${singular}_id>`)
        .description(`${enabled ? 'enable' : 'disable'} a ${singular} for a profile`)
        .action(
          ctx.run(async (p: string, id: string) => {
            const api = await ctx.client();
            ctx.print(
              kind === 'blockchains'
                ? await api.setProfileBlockchain(p, id, enabled)
                : await api.setProfileAsset(p, id, enabled),
            );
          }),
        );
    }
  }
}

/** Register `wallets` on `admin`. */
export function registerWalletCommands(ctx: AdminContext): void {
  const { io } = ctx;
  const wallets = ctx.admin.command('wallets').description('wallets (view; create as Admin)');
  pageOpts(wallets.command('list <profile_id>').description('wallet ids of a profile')).action(
    ctx.run(async (p: string, o: PageFlags) => ctx.print(await (await ctx.client()).listWallets(p, pageQuery(o)))),
  );
  wallets
    .command('create <profile_id>')
    .description('create a wallet on one or more blockchains (addresses are derived at once)')
    .requiredOption('--blockchain <keys...>', 'blockchain keys (e.g. ethereum-mainnet) or ids')
    .option('--name <name>')
    .action(
      ctx.run(async (p: string, o: { blockchain: string[]; name?: string }) => {
        const api = await ctx.client();
        const w = await api.createWallet(p, {
          blockchain_ids: await blockchainIds(api, p, o.blockchain),
          ...(o.name ? { name: o.name } : {}),
        });
        if (ctx.json) return ctx.print(w);
        io.out(`wallet ${w.wallet_id}${w.name ? ` (${w.name})` : ''}`);
        io.out(formatTable(w.addresses, ['blockchain_id', 'address', 'derivation_path']));
      }),
    );
  wallets
    .command('show <profile_id> <wallet_id>')
    .description('a wallet and its addresses')
    .action(
      ctx.run(async (p: string, w: string) => {
        const r = await (await ctx.client()).getWallet(p, w);
        if (ctx.json) return ctx.print(r);
        io.out(`wallet ${r.wallet_id}${r.name ? ` (${r.name})` : ''}, created ${r.created_at}`);
        io.out(formatTable(r.addresses, ['blockchain_id', 'address', 'address_type', 'derivation_path']));
      }),
    );
  pageOpts(wallets.command('balances <profile_id> <wallet_id>').description('balances of a wallet')).action(
    ctx.run(async (p: string, w: string, o: PageFlags) =>
      ctx.print(await (await ctx.client()).listBalances(p, w, pageQuery(o)), [
        'asset_id',
        'symbol',
        'amount',
        'updated_at',
      ]),
    ),
  );
  for (const archived of [true, false])
    wallets
      .command(`${archived ? 'archive' : 'unarchive'} <profile_id> <wallet_id>`)
      .description(
        archived
          ? 'archive a wallet: no new transfers or addresses; deposits still watched and credited (Admin, step-up)'
          : 'unarchive a wallet (Admin)',
      )
      .action(
        ctx.run(async (p: string, id: string) =>
          ctx.print(await (await ctx.client()).setWalletArchived(p, id, archived)),
        ),
      );
  wallets
    .command('delete <profile_id> <wallet_id>')
    .description('delete an empty wallet with no unfinished transfer (Admin, step-up; emits WALLET_DELETED)')
    .action(
      ctx.run(async (p: string, id: string) => {
        await (await ctx.client()).deleteWallet(p, id);
        if (ctx.json) return ctx.print({ wallet_id: id, deleted: true });
        io.out(`wallet ${id} deleted`);
      }),
    );
  pageOpts(
    wallets
      .command('addresses <profile_id> <wallet_id>')
      .description('every address of a wallet, archived ones included, with its label'),
  ).action(
    ctx.run(async (p: string, w: string, o: PageFlags) =>
      ctx.print(await (await ctx.client()).listWalletAddresses(p, w, pageQuery(o)), [
        'address_id',
        'address',
        'address_type',
        'label',
        'archived_at',
      ]),
    ),
  );
  wallets
    .command('address <profile_id> <wallet_id> <address_id>')
    .description('label an address (ADDRESS_UPDATED), archive it (step-up; ADDRESS_DELETED) or unarchive it')
    .option('--label <label>', 'set the label')
    .option('--clear-label', 'remove the label')
    .option('--archive', 'archive: no longer listed as a deposit address, still watched and spendable')
    .option('--unarchive', 'list it again')
    .action(
      ctx.run(
        async (
          p: string,
          w: string,
          a: string,
          o: { label?: string; clearLabel?: boolean; archive?: boolean; unarchive?: boolean },
        ) => {
          if (o.archive && o.unarchive) ctx.fail('--archive and --unarchive exclude each other');
          if (o.label !== undefined && o.clearLabel) ctx.fail('--label and --clear-label exclude each other');
          const body = {
            ...(o.label !== undefined ? { label: o.label } : o.clearLabel ? { label: null } : {}),
            ...(o.archive ? { archived: true } : o.unarchive ? { archived: false } : {}),
          };
          if (Object.keys(body).length === 0)
            ctx.fail('nothing to change: give --label, --clear-label, --archive or --unarchive');
          ctx.print(await (await ctx.client()).updateAddress(p, w, a, body));
        },
      ),
    );
  wallets
    .command('consolidate <profile_id> <wallet_id>')
    .description(
      "UTXO consolidation: the wallet's smallest UTXOs in one output to its own address, under policy and approvals",
    )
    .requiredOption('--blockchain <key>', 'Bitcoin-family blockchain key or id (e.g. litecoin-regtest)')
    .option('--max-inputs <n>', 'at most this many inputs (2..200)')
    .option('--below <base_units>', 'only UTXOs below this value, base units')
    .option('--priority <level>', 'SLOW, STANDARD or FAST', 'STANDARD')
    .action(
      ctx.run(
        async (
          p: string,
          w: string,
          o: { blockchain: string; maxInputs?: string; below?: string; priority: string },
        ) => {
          const api = await ctx.client();
          const [blockchainId] = await blockchainIds(api, p, [o.blockchain]);
          const maxInputs = o.maxInputs === undefined ? undefined : Number(o.maxInputs);
          if (maxInputs !== undefined && !Number.isInteger(maxInputs)) ctx.fail('--max-inputs: an integer is expected');
          ctx.print(
            await api.consolidate(p, w, {
              blockchain_id: blockchainId as string,
              priority: o.priority as 'SLOW' | 'STANDARD' | 'FAST',
              ...(maxInputs !== undefined ? { max_inputs: maxInputs } : {}),
              ...(o.below !== undefined ? { below: o.below } : {}),
            }),
          );
        },
      ),
    );
  wallets
    .command('rename <profile_id> <wallet_id>')
    .description('rename a wallet (emits WALLET_UPDATED)')
    .requiredOption('--name <name>')
    .action(
      ctx.run(async (p: string, id: string, o: { name: string }) =>
        ctx.print(await (await ctx.client()).renameWallet(p, id, o.name)),
      ),
    );
}
