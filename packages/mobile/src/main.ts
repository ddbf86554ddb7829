#!/usr/bin/env node
/**
 * Stand-alone entry of the mobile simulator: `node packages/mobile/dist/main.js mobile run --data d`
 * (the same commands as `custodian mobile …`). Imports the Node.js 20 polyfills libp2p needs first.
 */
import '@custodian/signer-client/polyfills';
import { Command } from 'commander';
import { registerMobileCommands } from './cli.js';

const program = new Command('custodian').exitOverride((err) => {
  throw err;
});
registerMobileCommands(program);
program.parseAsync(process.argv).catch((err: unknown) => {
  if ((err as { code?: string }).code === 'commander.helpDisplayed') return;
  process.stderr.write(`custodian mobile: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
