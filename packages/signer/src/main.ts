#!/usr/bin/env node
/**
 * Stand-alone entry of the signer daemon: `node packages/signer/dist/main.js signer start -c cfg.json`
 * (the same commands as `custodian signer …`). Imports the Node.js 20 polyfills first.
 */
import '@custodian/signer-client/polyfills';
import { createSignerProgram } from './cli.js';

createSignerProgram()
  .parseAsync(process.argv)
  .catch((err: unknown) => {
    process.stderr.write(`custodian signer: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
