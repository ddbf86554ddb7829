#!/usr/bin/env node
import '@custodian/signer-client/polyfills';
import { createProgram } from './index.js';

createProgram()
  .parseAsync(process.argv)
  .catch((err: unknown) => {
    process.stderr.write(`custodian: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
