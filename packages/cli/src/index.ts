/**
 * The `custodian` command (commander). Subcommands are registered by the packages that own them:
 * `signer` (signer daemon), `coordinator` (REST + admin API), `admin` (operator CLI), `mobile`
 * (mobile signer simulator), `dev` (a whole local instance).
 */
import { readFileSync } from 'node:fs';
import { registerAdminCommands } from '@custodian/coordinator';
import { registerMobileCommands } from '@custodian/mobile';
import { registerSignerCommands } from '@custodian/signer';
import { Command } from 'commander';
import { registerCoordinatorCommands } from './coordinator.js';
import { registerDevCommand } from './dev.js';

export { HttpError } from './dev/http.js';
/** The CLI's version: the root package version. */
export { CliError } from './errors.js';

export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** Build the `custodian` program with every subcommand registered. */
export function createProgram(): Command {
  const program = new Command('custodian')
    .description(
      'Custodian — self-hosted MPC custody: threshold ECDSA (CGGMP21) and FROST signer nodes, a custody REST API',
    )
    .version(VERSION, '-v, --version', 'print the version')
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ sortSubcommands: true });
  registerDevCommand(program);
  registerSignerCommands(program);
  registerCoordinatorCommands(program);
  registerAdminCommands(program);
  registerMobileCommands(program);
  return program;
}
