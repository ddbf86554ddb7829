/** `custodian admin api-keys …`: named API keys of a profile, shown once, revocable, optionally pinned to address ranges. */
import { type AdminContext, type PageFlags, pageOpts, pageQuery } from './context.js';

/** Register `api-keys` on `admin`. */
export function registerApiKeyCommands(ctx: AdminContext): void {
  const { io } = ctx;
  const keys = ctx.admin.command('api-keys').description('API keys (named, shown once, revocable)');
  pageOpts(keys.command('list').description('list API keys').option('--profile <profile_id>')).action(
    ctx.run(async (o: PageFlags & { profile?: string }) =>
      ctx.print(await (await ctx.client()).listApiKeys({ profile_id: o.profile, ...pageQuery(o) }), [
        'api_key_id',
        'profile_id',
        'name',
        'key_prefix',
        'allowed_cidrs',
        'created_at',
        'revoked_at',
      ]),
    ),
  );
  keys
    .command('create')
    .description('create an API key; the key is printed once')
    .requiredOption('--profile <profile_id>')
    .requiredOption('--name <name>')
    .option(
      '--allowed-cidr <range...>',
      'only from these IPv4/IPv6 ranges or addresses, e.g. 10.0.0.0/8 2001:db8::/32 (default: any address)',
    )
    .action(
      ctx.run(async (o: { profile: string; name: string; allowedCidr?: string[] }) => {
        const k = await (await ctx.client()).createApiKey({
          profile_id: o.profile,
          name: o.name,
          ...(o.allowedCidr === undefined ? {} : { allowed_cidrs: o.allowedCidr }),
        });
        if (ctx.json) return ctx.print(k);
        io.out(
          `API key ${k.api_key_id} (${k.name}) for profile ${k.profile_id}` +
            `${k.allowed_cidrs ? `, usable only from ${k.allowed_cidrs.join(', ')}` : ''}:`,
        );
        io.out(k.api_key);
        io.out('Store it now: it is not shown again.');
      }),
    );
  keys
    .command('revoke <api_key_id>')
    .description('revoke an API key')
    .action(ctx.run(async (id: string) => ctx.print(await (await ctx.client()).revokeApiKey(id))));
}
