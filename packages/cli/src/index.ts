/**
 * The `custodian` command (commander). Subcommands are registered by the packages that own them:
 * `signer` (signer daemon, @custodian/signer), `mobile` (mobile signer simulator,
 * @custodian/mobile); this package holds `coordinator` (REST + admin API server), `admin` (the
 * operator CLI over the admin API, `src/admin/`) and `dev` (a whole local instance).
 */
import { readFileSync } from 'node:fs';
import { registerMobileCommands } from '@custodian/mobile';
import { registerSignerCommands } from '@custodian/signer';
import { Command } from 'commander';
import { registerAdminCommands } from './admin/index.js';
import { registerCoordinatorCommands } from './coordinator.js';
import { registerDevCommand } from './dev.js';

// Errors (the `cli` family)

export { AdminCliError } from './admin/index.js';
export { CliError } from './errors.js';

// The typed admin API client the `admin` commands use

export type { AdminHttpOptions } from './admin/index.js';
export { AdminClient } from './admin/index.js';

// `custodian dev`'s local instance (the slow tests and bench/src/replicas.ts start it; issue #25)

export type { Instance, InstanceOptions, InstanceState } from './dev/instance.js';
export { startInstance } from './dev/instance.js';
export type { ScratchDatabase } from './dev/replicas.js';
export { createScratchDatabase } from './dev/replicas.js';

/** The CLI's version: the root package version. */
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
