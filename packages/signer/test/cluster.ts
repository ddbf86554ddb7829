/**
 * Multi-process test cluster: real signer processes (`node packages/signer/dist/main.js signer
 * start`) on 127.0.0.1, and the test acting as the coordinator over `/custodian/control/2`.
 * The signer package is built with `tsc -b` first (incremental), so a clean clone works.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { signalTree } from '../../../test/helpers/processes.js';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const MAIN = join(ROOT, 'packages/signer/dist/main.js');
export const PASS = 'correct horse battery staple (test only)';

export function buildSigner(): void {
  execFileSync(join(ROOT, 'node_modules/.bin/tsc'), ['-b', 'packages/signer'], { cwd: ROOT, stdio: 'inherit' });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export interface NodeSpec {
  readonly name: string;
  readonly dir: string;
  readonly dataDir: string;
  readonly config: string;
  readonly logFile: string;
  readonly peerId: string;
  readonly port: number;
  proc?: ChildProcess;
  logOffset: number;
}

export function tempDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `custodian-${label}-`));
}

export function initNode(dir: string, name: string, port: number): NodeSpec {
  const dataDir = join(dir, name);
  const out = execFileSync(
    process.execPath,
    [MAIN, 'signer', 'init', '-d', dataDir, '--passphrase-env', 'CUSTODIAN_TEST_PASS'],
    {
      env: { ...process.env, CUSTODIAN_TEST_PASS: PASS },
      encoding: 'utf8',
    },
  );
  const { peerId } = JSON.parse(out) as { peerId: string };
  return {
    name,
    dir,
    dataDir,
    config: join(dir, `${name}.json`),
    logFile: join(dir, `${name}.log`),
    peerId,
    port,
    logOffset: 0,
  };
}

export function writeConfig(
  node: NodeSpec,
  peers: { peerId: string; port: number }[],
  coordinator: { peerId: string; port?: number },
  extra: Record<string, unknown> = {},
): void {
  const all = [...peers.filter((p) => p.peerId !== node.peerId)];
  const cfg = {
    listen: `/ip4/127.0.0.1/tcp/${node.port}`,
    dataDir: `./${node.name}`,
    peers: [
      ...all.map((p) => ({ peerId: p.peerId, addrs: [`/ip4/127.0.0.1/tcp/${p.port}`] })),
      ...(coordinator.port ? [{ peerId: coordinator.peerId, addrs: [`/ip4/127.0.0.1/tcp/${coordinator.port}`] }] : []),
    ],
    coordinator: { peerId: coordinator.peerId },
    passphrase: { env: 'CUSTODIAN_TEST_PASS' },
    logLevel: 'info',
    scrypt: { N: 1 << 14, r: 8, p: 1 },
    ...extra,
  };
  writeFileSync(node.config, JSON.stringify(cfg, null, 2));
}

export function readLog(node: NodeSpec): string {
  try {
    return readFileSync(node.logFile, 'utf8');
  } catch {
    return '';
  }
}

export async function waitFor(pred: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timeout waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Per started child: resolves once its log file has every line the child wrote. */
const logWritten = new WeakMap<ChildProcess, Promise<void>>();

export async function startNode(node: NodeSpec): Promise<void> {
  const before = readLog(node).length;
  const out = createWriteStream(node.logFile, { flags: 'a' });
  const proc = spawn(process.execPath, [MAIN, 'signer', 'start', '-c', node.config], {
    env: { ...process.env, CUSTODIAN_TEST_PASS: PASS },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  // both streams into one file, closed once the child's stdio closed: a stop waits for the last
  // lines (a child's 'exit' can come before its last output has been read and written)
  proc.stdout?.pipe(out, { end: false });
  proc.stderr?.pipe(out, { end: false });
  logWritten.set(
    proc,
    new Promise<void>((resolve) => {
      out.once('close', () => resolve());
      proc.once('close', () => out.end());
    }),
  );
  node.proc = proc;
  await waitFor(
    () => readLog(node).slice(before).includes('"signer started"') || proc.exitCode !== null,
    30_000,
    `${node.name} start`,
  );
  if (proc.exitCode !== null) throw new Error(`${node.name} exited: ${readLog(node).slice(before)}`);
}

export async function stopNode(node: NodeSpec, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const p = node.proc;
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    // SIGKILL after 20 s: a node ignoring its signal must not outlive the test (#29)
    const t = setTimeout(() => signalTree(p.pid as number, 'SIGKILL'), 20_000);
    p.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    signalTree(p.pid as number, signal);
  });
  // the child's last log lines are in its file before the caller reads it (at most 5 s)
  const written = logWritten.get(p);
  if (written) await Promise.race([written, new Promise((r) => setTimeout(r, 5_000))]);
}

/**
 * Init `count` signers in `dir` (`signer<i>`, free ports on 127.0.0.1), each with two of the
 * committed TEST-ONLY safe primes of packages/paillier as its prime seed (ECDSA at SECURITY_112, no
 * prime pool), the others as peers, the coordinator `coordinatorPeerId` and the config `extra`;
 * start them all.
 */
export async function startSeededNodes(
  dir: string,
  count: number,
  coordinatorPeerId: string,
  extra: Record<string, unknown> = {},
): Promise<NodeSpec[]> {
  const fixture = JSON.parse(
    readFileSync(join(ROOT, 'packages/paillier/test/fixtures/test-only-safe-primes.json'), 'utf8'),
  ) as { safePrimes1024: string[] };
  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await freePort());
  const nodes = ports.map((p, i) => initNode(dir, `signer${i}`, p));
  nodes.forEach((n, i) => {
    const seed = join(dir, `primes${i}.json`);
    writeFileSync(seed, JSON.stringify({ safePrimes: fixture.safePrimes1024.slice(2 * i, 2 * i + 2) }));
    writeConfig(
      n,
      nodes,
      { peerId: coordinatorPeerId },
      { ecdsa: { level: 'SECURITY_112', primePool: 0, primeSeedFile: seed }, ...extra },
    );
  });
  await Promise.all(nodes.map((n) => startNode(n)));
  return nodes;
}
