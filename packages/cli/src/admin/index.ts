/**
 * `custodian admin …`: every admin function of the coordinator from the command line, over the
 * admin HTTP API through the typed {@link AdminClient}. Output: human tables by default, `--json`
 * for machines; a refusal prints `error: <status> <code>: <detail>` (with `--json`: the problem)
 * and exits with code 1. The session token from `admin login` is kept in a 0600 file (default
 * `$XDG_CONFIG_HOME/custodian/admin-session.json`), or given by `--token` / `CUSTODIAN_ADMIN_TOKEN`.
 *
 * One file per area; they register in the order `admin --help` lists them.
 */
import { type Command, Option } from 'commander';
import { registerApiKeyCommands } from './api-keys.js';
import { registerAuditCommands } from './audit.js';
import { registerChainCommands } from './chains.js';
import { AdminContext, type CliIo, defaultIo } from './context.js';
import { registerDeviceCommands } from './devices.js';
import { registerGroupCommands } from './groups.js';
import { registerKeyCommands } from './keys.js';
import { registerPolicyCommands } from './policies.js';
import { registerSessionCommands } from './session.js';
import { registerMasterKeyCommands, registerSignerCommands } from './signers.js';
import { registerUserCommands } from './users.js';
import { registerProfileCommands, registerWalletCommands } from './wallets.js';
import { registerInstanceWebhookCommands, registerWebhookCommands } from './webhooks.js';

export { AdminClient } from './client.js';
export { type CliIo, formatTable } from './context.js';
export { AdminCliError, type AdminHttpOptions, DEFAULT_TIMEOUT_MS, type Problem } from './http.js';
export { readDeviceKeyFile } from './policies.js';

/**
 * Register `admin` and all its subcommands on a commander program.
 * @param program the root `custodian` command
 * @param io output and environment (tests pass their own)
 * @returns the `admin` command
 */
export function registerAdminCommands(program: Command, io: CliIo = defaultIo): Command {
  const admin = program
    .command('admin')
    .description(
      'administer a coordinator: users, API keys, signers, devices, master key and its lifecycle, webhooks, audit',
    )
    .addOption(
      new Option(
        '--coordinator-url <url>',
        'coordinator base URL (default: the saved login, else http://127.0.0.1:8080)',
      ).env('CUSTODIAN_URL'),
    )
    .addOption(
      new Option('--token <token>', 'admin session token (default: the saved login)').env('CUSTODIAN_ADMIN_TOKEN'),
    )
    .option('--session-file <path>', 'where `admin login` saves the session')
    .option('--json', 'print JSON instead of tables');
  const ctx = new AdminContext(admin, io);
  registerSessionCommands(ctx);
  registerUserCommands(ctx);
  registerProfileCommands(ctx);
  registerChainCommands(ctx);
  registerWalletCommands(ctx);
  registerApiKeyCommands(ctx);
  registerSignerCommands(ctx);
  registerDeviceCommands(ctx);
  registerMasterKeyCommands(ctx);
  registerKeyCommands(ctx);
  registerWebhookCommands(ctx);
  registerInstanceWebhookCommands(ctx);
  registerGroupCommands(ctx);
  registerAuditCommands(ctx);
  registerPolicyCommands(ctx);
  return admin;
}
