/**
 * A local Ethereum node for development and tests: anvil, whose binary ships inside the npm
 * package `@foundry-rs/anvil` (no download at run time). Chain id 31337, 1-second block time off
 * (instant mining) by default.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type Managed, RESTART, type Supervisor } from './supervisor.js';

const require = createRequire(import.meta.url);

/**
 * Path of anvil's launcher script (`bin.mjs` of `@foundry-rs/anvil`).
 * @throws Error when the package is not installed (the packed `custodian` command has it as an
 *   optional dependency: `npm install --omit=optional` leaves it out)
 */
export function anvilLauncher(): string {
  let pkg: string;
  try {
    pkg = require.resolve('@foundry-rs/anvil/package.json');
  } catch {
    throw new Error(
      'anvil is not installed: install the optional dependency @foundry-rs/anvil (npm install @foundry-rs/anvil)',
    );
  }
  return join(dirname(pkg), 'bin.mjs');
}

/** Start anvil on 127.0.0.1:`port` under the supervisor; resolves once its RPC listens. */
export async function startAnvil(
  sup: Supervisor,
  port: number,
  opts: {
    quiet?: boolean /** persist the chain state here across restarts (`anvil --state`) */;
    stateFile?: string;
  } = {},
): Promise<Managed> {
  const m = sup.spawn(
    'anvil',
    process.execPath,
    [
      anvilLauncher(),
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--chain-id',
      '31337',
      '--silent',
      ...(opts.stateFile ? ['--state', opts.stateFile] : []),
    ],
    { quiet: opts.quiet ?? false, restart: RESTART },
  );
  // --silent prints nothing: poll the RPC instead
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      });
      if (r.ok) return m;
    } catch {
      // not yet listening
    }
    if (m.child.exitCode !== null) throw new Error('anvil exited during start-up');
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('anvil did not answer within 30 s');
}
