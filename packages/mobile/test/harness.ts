/**
 * Multi-process test instance: a real coordinator (in the test process, signing services on: libp2p
 * host, device hub on its HTTP server), server signer PROCESSES (`packages/signer/dist/main.js`)
 * and mobile simulator PROCESSES (`packages/mobile/dist/main.js mobile …`) on 127.0.0.1.
 * Enrollment goes through the real HTTP endpoint; registration of the server signers and approval
 * of the devices are written to the coordinator's database directly (the admin API flows have
 * their own tests in packages/coordinator).
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Coordinator, createCoordinator } from '@custodian/coordinator';
import { signalTree } from '../../../test/helpers/processes.js';
import {
  freePort,
  initNode,
  type NodeSpec,
  ROOT,
  readLog,
  startNode,
  stopNode,
  tempDir,
  waitFor,
  writeConfig,
} from '../../signer/test/cluster.js';

export const MOBILE_MAIN = join(ROOT, 'packages/mobile/dist/main.js');
export const PIN = '482916';

/** Build the signer and mobile packages (incremental). */
export function buildAll(): void {
  execFileSync(join(ROOT, 'node_modules/.bin/tsc'), ['-b', 'packages/signer', 'packages/mobile'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
}

export interface MobileProc {
  name: string;
  dir: string;
  deviceId: string;
  fingerprint: string;
  mpcPeerId: string;
  proc?: ChildProcess;
  stdout: string;
  logFile: string;
}

export interface Instance {
  dir: string;
  coord: Coordinator;
  url: string;
  signers: (NodeSpec & { signerId: string })[];
  mobiles: MobileProc[];
  stop(): Promise<void>;
}

export function primeFixture(): string[] {
  return (
    JSON.parse(readFileSync(join(ROOT, 'packages/paillier/test/fixtures/test-only-safe-primes.json'), 'utf8')) as {
      safePrimes1024: string[];
    }
  ).safePrimes1024;
}

/** Start a coordinator, `servers` signer processes and `devices` enrolled+approved mobile processes. */
export async function startInstance(opts: {
  label: string;
  servers: number;
  devices: number;
  algorithms: number[];
  ecdsa?: boolean;
  approve?: 'auto-approve' | 'auto-reject';
}): Promise<Instance> {
  const dir = tempDir(opts.label);
  const coord = await createCoordinator({
    mode: 'development',
    mailboxDir: join(dir, 'mailbox'),
    logger: false,
    listen: { host: '127.0.0.1', port: 0 },
    signing: { enabled: true, algorithms: opts.algorithms },
    webhooks: { runWorker: false },
  });
  const url = await coord.start();
  const signing = coord.signing;
  if (!signing) throw new Error('signing services not started');
  const primes = opts.ecdsa ? primeFixture() : [];
  const ports = await Promise.all(Array.from({ length: opts.servers }, () => freePort()));
  const nodes = ports.map((port, i) => initNode(dir, `signer${i}`, port));
  const signers: Instance['signers'] = [];
  for (const [i, n] of nodes.entries()) {
    // the gateway tests sign raw digests without transfer evidence: enforcement explicitly off (test only)
    let extra: Record<string, unknown> = { allowUnenforcedSigning: true };
    if (opts.ecdsa) {
      const seed = join(dir, `signer${i}-primes.json`);
      writeFileSync(seed, JSON.stringify({ safePrimes: primes.slice(2 * i, 2 * i + 2) }));
      extra = { ...extra, ecdsa: { level: 'SECURITY_112', primePool: 0, primeSeedFile: seed } };
    }
    writeConfig(n, nodes, { peerId: signing.peerId }, extra);
    await startNode(n);
    const signerId = randomUUID();
    await coord.db.query(
      'INSERT INTO server_signers (signer_id, name, peer_id, address, fingerprint, created_at) VALUES ($1,$2,$3,$4,$5,$6)',
      [signerId, n.name, n.peerId, `/ip4/127.0.0.1/tcp/${n.port}`, 'test', new Date()],
    );
    signers.push(Object.assign(n, { signerId }));
  }
  const pinFile = join(dir, 'pin');
  writeFileSync(pinFile, `${PIN}\n`, { mode: 0o600 });
  const mobiles: MobileProc[] = [];
  for (let i = 0; i < opts.devices; i++) {
    const mdir = join(dir, `mobile${i}`);
    mkdirSync(mdir, { recursive: true });
    // Asynchronously: the coordinator answering the enrollment runs in this process.
    const { stdout: out } = await promisify(execFile)(
      process.execPath,
      [MOBILE_MAIN, 'mobile', 'enroll', '--url', url, '--data', mdir, '--pin-file', pinFile, '--kdf-n', '1024'],
      { encoding: 'utf8' },
    );
    const r = JSON.parse(out) as { device_id: string; fingerprint: string; mpc_peer_id: string };
    // The administrator compares the fingerprint and approves (admin API tested elsewhere).
    const rows = await coord.db.query<{ fingerprint: string }>('SELECT fingerprint FROM devices WHERE device_id = $1', [
      r.device_id,
    ]);
    if (rows[0]?.fingerprint !== r.fingerprint) throw new Error('fingerprint mismatch');
    await coord.db.query(`UPDATE devices SET status = 'APPROVED', decided_at = now() WHERE device_id = $1`, [
      r.device_id,
    ]);
    const m: MobileProc = {
      name: `mobile${i}`,
      dir: mdir,
      deviceId: r.device_id,
      fingerprint: r.fingerprint,
      mpcPeerId: r.mpc_peer_id,
      stdout: '',
      logFile: join(dir, `mobile${i}.log`),
    };
    const args = [
      MOBILE_MAIN,
      'mobile',
      'run',
      '--data',
      mdir,
      '--pin-file',
      pinFile,
      `--${opts.approve ?? 'auto-approve'}`,
      '--store-scrypt-n',
      '1024',
      '--allow-unenforced-signing',
    ];
    if (opts.ecdsa) {
      const seed = join(dir, `mobile${i}-primes.json`);
      const j = opts.servers + i;
      writeFileSync(seed, JSON.stringify({ safePrimes: primes.slice(2 * j, 2 * j + 2) }));
      args.push('--ecdsa-level', 'SECURITY_112', '--prime-seed-file', seed);
    }
    const log = createWriteStream(m.logFile, { flags: 'a' });
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    proc.stdout?.on('data', (b: Buffer) => {
      m.stdout += b.toString();
    });
    proc.stderr?.pipe(log);
    m.proc = proc;
    mobiles.push(m);
  }
  for (const m of mobiles)
    await waitFor(
      () => m.stdout.includes('"event":"connected"') || m.proc?.exitCode !== null,
      30_000,
      `${m.name} connect`,
    );
  for (const m of mobiles) if (m.proc?.exitCode !== null) throw new Error(`${m.name} exited: ${readMobileLog(m)}`);
  return {
    dir,
    coord,
    url,
    signers,
    mobiles,
    async stop() {
      await Promise.all(mobiles.map((m) => stopProc(m.proc)));
      await Promise.all(signers.map((s) => stopNode(s)));
      await coord.stop();
    },
  };
}

export function readMobileLog(m: MobileProc): string {
  try {
    return readFileSync(m.logFile, 'utf8');
  } catch {
    return '';
  }
}

async function stopProc(p: ChildProcess | undefined): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    // SIGKILL after 20 s: a phone ignoring SIGTERM must not outlive the test (#29)
    const t = setTimeout(() => signalTree(p.pid as number, 'SIGKILL'), 20_000);
    p.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    signalTree(p.pid as number, 'SIGTERM');
  });
}

export { readLog, waitFor };
