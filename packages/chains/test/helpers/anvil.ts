import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { signalTree } from '../../../../test/helpers/processes.js';

/** A free TCP port on 127.0.0.1 (bound then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a !== null ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export async function waitForRpc(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      if (r.status === 200) return;
      last = `HTTP ${r.status}`;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`RPC at ${url} not up after ${timeoutMs} ms: ${String(last)}`);
}

export interface AnvilNode {
  url: string;
  port: number;
  chainId: number;
  stop(): Promise<void>;
}

const ANVIL_BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'node_modules', '.bin', 'anvil');

/** Starts anvil (from the `@foundry-rs/anvil` npm package) on a free 127.0.0.1 port. */
export async function startAnvil(args: string[] = []): Promise<AnvilNode> {
  const port = await freePort();
  const chainId = 31337;
  const child: ChildProcess = spawn(
    ANVIL_BIN,
    ['--host', '127.0.0.1', '--port', String(port), '--chain-id', String(chainId), '--silent', ...args],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      // its own process group: the npm launcher and the anvil binary end together (#29)
      detached: true,
    },
  );
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += String(d);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForRpc(url, { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] });
  } catch (e) {
    signalTree(child.pid as number, 'SIGKILL');
    throw new Error(`anvil did not start: ${(e as Error).message}\n${stderr}`);
  }
  return {
    url,
    port,
    chainId,
    async stop() {
      if (child.exitCode === null) signalTree(child.pid as number, 'SIGTERM');
      await exited;
    },
  };
}
