import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signalTree } from '../../../../test/helpers/processes.js';
import { BitcoinRpc } from '../../src/index.js';
import { freePort, waitForRpc } from './anvil.js';

export interface LitecoindNode {
  rpc: BitcoinRpc;
  url: string;
  wallet: string;
  /** Calls the node's wallet RPC. */
  walletCall<T>(method: string, params?: unknown[]): Promise<T>;
  /** Mines `n` blocks to the wallet. */
  mine(n: number): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * Starts `litecoind -regtest` (Debian package `litecoind`, installed by scripts/install-litecoind.sh)
 * on free 127.0.0.1 ports with a temporary datadir, creates a wallet and mines 101 blocks so it
 * has spendable coins. Throws a clear error when litecoind is not installed (CI installs it).
 */
export async function startLitecoind(): Promise<LitecoindNode> {
  const which = spawnSync('sh', ['-c', 'command -v litecoind'], { encoding: 'utf8' });
  if (which.status !== 0)
    throw new Error(
      'litecoind is not installed: run `bash scripts/install-litecoind.sh` (apt-get install -y litecoind); the Bitcoin-family tests need a real regtest node',
    );
  const [rpcPort, p2pPort] = [await freePort(), await freePort()];
  const datadir = mkdtempSync(join(tmpdir(), 'chains-ltc-'));
  const user = 'test';
  const password = 'regtest-only';
  const child: ChildProcess = spawn(
    'litecoind',
    [
      '-regtest',
      '-server',
      `-datadir=${datadir}`,
      `-rpcuser=${user}`,
      `-rpcpassword=${password}`,
      `-rpcport=${rpcPort}`,
      `-port=${p2pPort}`,
      '-rpcbind=127.0.0.1',
      '-rpcallowip=127.0.0.1',
      '-listen=0',
      '-fallbackfee=0.0002',
      '-txindex',
      // Litecoin Core accepts BIP125 replacements only with this option (off by default).
      '-mempoolreplacement=1',
      '-printtoconsole=0',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += String(d);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${rpcPort}`;
  const auth = { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
  const rpc = new BitcoinRpc({ url, username: user, password });
  try {
    await waitForRpc(url, { jsonrpc: '1.0', id: 1, method: 'getblockcount', params: [] }, auth, 30_000);
  } catch (e) {
    signalTree(child.pid as number, 'SIGKILL');
    rmSync(datadir, { recursive: true, force: true });
    throw new Error(`litecoind did not start: ${(e as Error).message}\n${stderr}`);
  }
  const wallet = 'test';
  await rpc.call('createwallet', [wallet]);
  const walletCall = <T>(method: string, params: unknown[] = []) => rpc.call<T>(method, params, wallet);
  const minerAddress = await walletCall<string>('getnewaddress', ['', 'bech32']);
  const mine = (n: number) => rpc.call<string[]>('generatetoaddress', [n, minerAddress]);
  await mine(101);
  return {
    rpc,
    url,
    wallet,
    walletCall,
    mine,
    async stop() {
      try {
        await rpc.call('stop');
      } catch {
        signalTree(child.pid as number, 'SIGTERM');
      }
      await exited;
      rmSync(datadir, { recursive: true, force: true });
    },
  };
}
