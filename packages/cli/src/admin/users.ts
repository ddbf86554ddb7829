/** `custodian admin users …`: dashboard users and their roles (ADMIN, FINANCE_MANAGER, VIEWER). */

import type { Role, UpdateUserInput } from '@custodian/coordinator/admin-api-types';
import { Option } from 'commander';
import { type AdminContext, type PageFlags, pageOpts, pageQuery } from './context.js';

const ROLES = ['ADMIN', 'FINANCE_MANAGER', 'VIEWER'];

/** Register `users` on `admin`. */
export function registerUserCommands(ctx: AdminContext): void {
  const users = ctx.admin.command('users').description('users and roles (ADMIN, FINANCE_MANAGER, VIEWER)');
  pageOpts(users.command('list').description('list users')).action(
    ctx.run(async (o: PageFlags) =>
      ctx.print(await (await ctx.client()).listUsers(pageQuery(o)), [
        'user_id',
        'email',
        'name',
        'role',
        'totp_enabled',
        'blocked',
      ]),
    ),
  );
  users
    .command('create')
    .description('create a user')
    .requiredOption('--email <email>')
    .requiredOption('--name <name>')
    .addOption(new Option('--role <role>').choices(ROLES).makeOptionMandatory())
    .option('--password <password>', 'initial password (or CUSTODIAN_NEW_USER_PASSWORD, or prompt)')
    .action(
      ctx.run(async (o: { email: string; name: string; role: Role; password?: string }) => {
        const password = await ctx.ask(o.password, 'CUSTODIAN_NEW_USER_PASSWORD', 'Initial password: ', true);
        ctx.print(await (await ctx.client()).createUser({ email: o.email, name: o.name, role: o.role, password }));
      }),
    );
  users
    .command('show <user_id>')
    .description('one user')
    .action(ctx.run(async (id: string) => ctx.print(await (await ctx.client()).getUser(id))));
  users
    .command('update <user_id>')
    .description('change role, name, blocked state or password')
    .addOption(new Option('--role <role>').choices(ROLES))
    .option('--name <name>')
    .option('--block', 'block the user (revokes sessions)')
    .option('--unblock', 'unblock the user')
    .option('--password <password>', 'set a new password (revokes sessions)')
    .action(
      ctx.run(
        async (
          id: string,
          o: { role?: Role; name?: string; block?: boolean; unblock?: boolean; password?: string },
        ) => {
          const body: UpdateUserInput = {};
          if (o.role) body.role = o.role;
          if (o.name) body.name = o.name;
          if (o.block) body.blocked = true;
          if (o.unblock) body.blocked = false;
          if (o.password) body.password = o.password;
          ctx.print(await (await ctx.client()).updateUser(id, body));
        },
      ),
    );
  users
    .command('delete <user_id>')
    .description('delete a user')
    .action(ctx.run(async (id: string) => ctx.print(await (await ctx.client()).deleteUser(id))));
}
