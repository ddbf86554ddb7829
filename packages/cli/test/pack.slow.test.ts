/**
 * Issue #29 "Packaging": the `custodian` command as one npm tarball (scripts/pack-cli.mjs). The
 * tarball is installed with npm into an empty folder outside the repository, offline and with an
 * empty npm cache — so every dependency must come from inside the tarball — and its bin must:
 * print the CLI's version; show `coordinator start --help`; run a coordinator on the embedded
 * PGlite store (wasm) that answers HTTP; run a signer daemon on its LevelDB store (classic-level's
 * native prebuild) that pins that coordinator; serve the built dashboard (issue #24) at `/` — and
 * the dashboard's build-time dependencies (React, Mantine, Vite, …) are not in the tarball. Needs a
 * built workspace (`tsc -b` and `node scripts/build-dashboard.mjs`, as `pnpm test:slow` does
 * first); packing and installing take a few minutes on a loaded machine.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'packages/cli/package.json'), 'utf8')) as { version: string })
  .version;

let dir = '';
let bin = '';
let app = '';

/** Every installed package folder (`…/node_modules/<name>` or `…/node_modules/@scope/<name>`) under `root`, by name. */
function installedPackages(root: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const add = (name: string, p: string) => found.set(name, [...(found.get(name) ?? []), p]);
  const walk = (nm: string) => {
    if (!existsSync(nm)) return;
    for (const e of readdirSync(nm, { withFileTypes: true })) {
      if (!e.isDirectory() || e.name.startsWith('.')) continue;
      const scoped = e.name.startsWith('@');
      for (const name of scoped ? readdirSync(join(nm, e.name)) : [e.name]) {
        const p = scoped ? join(nm, e.name, name) : join(nm, name);
        add(scoped ? `${e.name}/${name}` : name, p);
        walk(join(p, 'node_modules'));
      }
    }
  };
  walk(join(root, 'node_modules'));
  return found;
}
const children: ChildProcess[] = [];

/** The environment of a user's shell: no test runner or workspace settings leak into the packed command. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'LANG', 'TMPDIR'];
  const env: NodeJS.ProcessEnv = {};
  for (const k of keep) if (process.env[k] !== undefined) env[k] = process.env[k];
  return { ...env, ...extra };
}

/** Start the installed `custodian` in its own process group; collects its output lines. */
function start(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string } {
  const child = spawn(bin, args, { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (b: Buffer) => {
    out += b.toString();
  });
  child.stderr?.on('data', (b: Buffer) => {
    out += b.toString();
  });
  return { child, output: () => out };
}

async function waitFor<T>(what: string, probe: () => T | undefined, ms: number, output: () => string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; output:\n${output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((r) => child.once('exit', (code) => r(code)));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'custodian-pack-'));
  const { stdout } = await run(
    process.execPath,
    [join(ROOT, 'scripts/pack-cli.mjs'), '--no-build', '--out', join(dir, 'pack')],
    {
      cwd: ROOT,
      maxBuffer: 1 << 26,
    },
  );
  const tarball = stdout.trim().split('\n').at(-1) as string;
  expect(tarball).toBe(join(dir, 'pack', `custodian-${VERSION}.tgz`));
  await rm(join(dir, 'pack', 'stage'), { recursive: true, force: true });

  app = join(dir, 'app');
  await mkdir(app);
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'packed-custodian-check', private: true }));
  await run(
    'npm',
    ['install', '--offline', '--omit=optional', '--no-audit', '--no-fund', '--cache', join(dir, 'npm-cache'), tarball],
    { cwd: app, env: cleanEnv(), maxBuffer: 1 << 26 },
  );
  bin = join(app, 'node_modules', '.bin', 'custodian');
}, 1_200_000);

afterAll(async () => {
  for (const c of children)
    if (c.exitCode === null && c.signalCode === null && c.pid)
      try {
        process.kill(-c.pid, 'SIGKILL');
      } catch {
        // already gone
      }
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('the packed custodian command, installed from its tarball into a clean folder', () => {
  it('prints its version', async () => {
    const { stdout } = await run(bin, ['--version'], { cwd: dir, env: cleanEnv() });
    expect(stdout.trim()).toBe(VERSION);
  });

  it('shows the coordinator start options', async () => {
    const { stdout } = await run(bin, ['coordinator', 'start', '--help'], { cwd: dir, env: cleanEnv() });
    expect(stdout).toContain('--database-url <url>');
    expect(stdout).toContain('--mode <mode>');
  });

  it('carries the built dashboard and none of its build-time dependencies', () => {
    const installed = installedPackages(app);
    const dashboards = installed.get('@custodian/dashboard') ?? [];
    expect(dashboards).toHaveLength(1);
    const [dashboard] = dashboards as [string];
    expect(readFileSync(join(dashboard, 'dist', 'index.html'), 'utf8')).toBe(
      readFileSync(join(ROOT, 'packages/dashboard/dist/index.html'), 'utf8'),
    );
    // only the built files: no sources, tests or dependencies of its own
    expect(readdirSync(dashboard).sort()).toEqual(['dist', 'package.json']);
    const manifest = JSON.parse(readFileSync(join(dashboard, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.dependencies ?? {}).toEqual({});
    const buildOnly = [
      'react',
      'react-dom',
      'react-router',
      '@mantine/core',
      '@mantine/hooks',
      '@mantine/form',
      '@mantine/notifications',
      '@tanstack/react-query',
      // (openapi-fetch stays: @custodian/sdk's client uses it at run time)
      'qrcode',
      'vite',
    ];
    expect(buildOnly.filter((n) => installed.has(n))).toEqual([]);
  });

  it('runs a coordinator on the embedded store and a signer daemon pinned to it', async () => {
    const coordinator = start(
      ['coordinator', 'start', '--data-dir', join(dir, 'coordinator'), '--host', '127.0.0.1', '--port', '0'],
      cleanEnv(),
    );
    const [, url, peerId] = await waitFor(
      'the coordinator to listen',
      () => /coordinator listening on (http:\/\/\S+) peer id (\S+)/.exec(coordinator.output()) ?? undefined,
      300_000,
      coordinator.output,
    );
    const res = await fetch(new URL('/.well-known/jwks.json', url));
    expect(res.status).toBe(200);
    expect(Array.isArray(((await res.json()) as { keys: unknown }).keys)).toBe(true);

    // the dashboard at / (the installed @custodian/dashboard's dist/index.html)
    const page = await fetch(new URL('/', url));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toBe(readFileSync(join(ROOT, 'packages/dashboard/dist/index.html'), 'utf8'));
    expect(html.match(/<div id="root">/g)).toHaveLength(1);

    const passphrase = { CUSTODIAN_SIGNER_PASSPHRASE: 'packed signer test passphrase' };
    const { stdout } = await run(
      bin,
      ['signer', 'init', '-d', join(dir, 'signer'), '--passphrase-env', 'CUSTODIAN_SIGNER_PASSPHRASE'],
      { cwd: dir, env: cleanEnv(passphrase) },
    );
    expect(JSON.parse(stdout)).toMatchObject({ peerId: expect.stringMatching(/^12D3KooW/) });
    const config = join(dir, 'signer.json');
    await writeFile(
      config,
      JSON.stringify({
        listen: '/ip4/127.0.0.1/tcp/0',
        dataDir: join(dir, 'signer'),
        peers: [],
        coordinator: { peerId },
        passphrase: { env: 'CUSTODIAN_SIGNER_PASSPHRASE' },
        scrypt: { N: 1 << 14, r: 8, p: 1 },
      }),
    );
    const signer = start(['signer', 'start', '-c', config], cleanEnv(passphrase));
    await waitFor(
      'the signer to start',
      () => (/"signer started"/.test(signer.output()) ? true : undefined),
      300_000,
      signer.output,
    );
    const status = JSON.parse(
      (await run(bin, ['signer', 'status', '-c', config], { cwd: dir, env: cleanEnv() })).stdout,
    );
    expect(status).toMatchObject({ running: true, pid: signer.child.pid });
    expect(JSON.parse(await readFile(join(dir, 'signer', 'status.json'), 'utf8'))).toMatchObject({
      pid: signer.child.pid,
    });

    signer.child.kill('SIGTERM');
    // SIGINT: the coordinator's own SIGTERM handling is another part of issue #29 (lifecycle)
    coordinator.child.kill('SIGINT');
    expect(await exited(signer.child)).toBe(0);
    expect(await exited(coordinator.child)).toBe(0);
  });
});
