import type { Command } from 'commander';

/** Register `custodian dev`. */
export function registerDevCommand(program: Command): void {
  program.command('dev').description('run a local instance (work in progress)');
}
