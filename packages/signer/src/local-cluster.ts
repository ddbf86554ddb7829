/**
 * A local cluster of signer processes on 127.0.0.1 for development and benchmarks: creates n node
 * identities and configs in a folder, spawns `node dist/main.js signer start` for each, and returns
 * a {@link ControlClient} acting as the coordinator. The passphrase is passed through the
 * environment (never the command line).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChainsConfig } from '@custodian/ceremony';
import { ControlClient } from '@custodian/signer-client';
import { createIdentity } from './identity.js';

const MAIN = fileURLToPath(new URL('./main.js', import.meta.url));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** A running local cluster. */
export interface LocalCluster {
  readonly peerIds: readonly string[];
  readonly client: ControlClient;
  stop(): Promise<void>;
}

/** Options of {@link startLocalCluster}. */
export interface LocalClusterOptions {
  readonly passphrase?: string;
  /** pino level of the signers' logs (`<dir>/signer<i>.log`; default warn). */
  readonly logLevel?: string;
  /**
   * Enable CGGMP21 ECDSA: `primeSeeds[i]` are hex safe primes of 4κ bits imported into signer i's
   * prime pool (at least two each per key creation), `primePool` the background pool target.
   */
  readonly ecdsa?: {
    readonly level: 'SECURITY_128' | 'SECURITY_112';
    readonly primeSeeds: readonly (readonly string[])[];
    readonly primePool?: number;
  };
  /** Admin devices every signer trusts for policy signatures (enables enforcement, see enforce.ts). */
  readonly trustedAdminDevices?: readonly { readonly deviceId: string; readonly publicKey: string }[];
  /** Blockchains every signer signs for (config `chains`, see {@link ChainsConfig}); needed with enforcement. */
  readonly chains?: ChainsConfig;
  /**
   * Sign raw digests without evidence (config `allowUnenforcedSigning`; benchmarks and tests only).
   * Without it and without {@link trustedAdminDevices} the signers refuse every sign request.
   */
  readonly allowUnenforcedSigning?: boolean;
}

/**
 * Start `n` signers in `dir` (must be empty or absent). Only for development: the passphrase defaults to a
 * fixed string, and scrypt costs are lowered.
 * @throws Error if a process fails to start within 30 s
 */
export async function startLocalCluster(
  dir: string,
  n: number,
  options: LocalClusterOptions = {},
): Promise<LocalCluster> {
  const passphrase = options.passphrase ?? 'local-cluster-passphrase';
  const env = { ...process.env, CUSTODIAN_LOCAL_PASS: passphrase };
  const coord = await createIdentity(join(dir, 'coordinator'), passphrase);
  const ports = await Promise.all(Array.from({ length: n }, () => freePort()));
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const out = execFileSync(
      process.execPath,
      [MAIN, 'signer', 'init', '-d', join(dir, `signer${i}`), '--passphrase-env', 'CUSTODIAN_LOCAL_PASS'],
      { env, encoding: 'utf8' },
    );
    ids.push((JSON.parse(out) as { peerId: string }).peerId);
  }
  const procs: ChildProcess[] = [];
  for (let i = 0; i < n; i++) {
    const config = join(dir, `signer${i}.json`);
    let ecdsa: Record<string, unknown> | undefined;
    if (options.ecdsa) {
      const seed = join(dir, `signer${i}-primes.json`);
      writeFileSync(seed, JSON.stringify({ safePrimes: options.ecdsa.primeSeeds[i] ?? [] }));
      ecdsa = { level: options.ecdsa.level, primePool: options.ecdsa.primePool ?? 0, primeSeedFile: seed };
    }
    writeFileSync(
      config,
      JSON.stringify({
        listen: `/ip4/127.0.0.1/tcp/${ports[i]}`,
        dataDir: `./signer${i}`,
        peers: ids
          .map((peerId, j) => ({ peerId, addrs: [`/ip4/127.0.0.1/tcp/${ports[j]}`] }))
          .filter((_, j) => j !== i),
        coordinator: { peerId: coord.peerId },
        passphrase: { env: 'CUSTODIAN_LOCAL_PASS' },
        logLevel: options.logLevel ?? 'warn',
        scrypt: { N: 1 << 14, r: 8, p: 1 },
        ...(ecdsa ? { ecdsa } : {}),
        ...(options.trustedAdminDevices ? { trustedAdminDevices: options.trustedAdminDevices } : {}),
        ...(options.chains ? { chains: options.chains } : {}),
        ...(options.allowUnenforcedSigning ? { allowUnenforcedSigning: true } : {}),
      }),
    );
    const log = join(dir, `signer${i}.log`);
    const fd = openSync(log, 'a');
    // each in its own process group, ended as a group (#29: nothing left running)
    procs.push(
      spawn(process.execPath, [MAIN, 'signer', 'start', '-c', config], {
        env,
        stdio: ['ignore', fd, fd],
        detached: true,
      }),
    );
  }
  const end = Date.now() + 30_000;
  for (let i = 0; i < n; i++) {
    const status = join(dir, `signer${i}`, 'status.json');
    for (;;) {
      try {
        if ((JSON.parse(readFileSync(status, 'utf8')) as { pid?: number }).pid === procs[i]?.pid) break;
      } catch {
        // not written yet
      }
      if (Date.now() > end || procs[i]?.exitCode !== null) {
        for (const p of procs) signalGroup(p, 'SIGKILL');
        throw new Error(`signer${i} did not start (see ${dir}/signer${i}.log)`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const client = await ControlClient.create(
    coord.privateKey,
    new Map(ids.map((id, i) => [id, [`/ip4/127.0.0.1/tcp/${ports[i]}`]])),
  );
  return {
    peerIds: ids,
    client,
    async stop() {
      await client.stop();
      await Promise.all(
        procs.map(
          (p) =>
            new Promise<void>((resolve) => {
              if (p.exitCode !== null) return resolve();
              const t = setTimeout(() => signalGroup(p, 'SIGKILL'), 10_000);
              p.once('exit', () => {
                clearTimeout(t);
                resolve();
              });
              signalGroup(p, 'SIGTERM');
            }),
        ),
      );
    },
  };
}

/** Send `signal` to the process group `p` leads (spawned detached); nothing when it is gone. */
function signalGroup(p: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (p.pid !== undefined) process.kill(-p.pid, signal);
  } catch {
    // gone
  }
}
