#!/usr/bin/env node
/**
 * Pack the `custodian` command as ONE npm tarball with every dependency bundled:
 * `dist-pack/custodian-<version>.tgz` (version: packages/cli/package.json).
 *
 *   node scripts/pack-cli.mjs [--no-build] [--out <dir>]
 *
 * Steps: `tsc -b` and `node scripts/build-dashboard.mjs` (both skipped with --no-build; the built
 * dashboard, packages/dashboard/dist, must exist either way); `pnpm deploy --prod` of @custodian/cli (the versions of
 * pnpm-lock.yaml) into a staging folder with a hoisted (npm-style, no symlinks) node_modules; the staged workspace packages get
 * their `workspace:` ranges replaced by their versions and lose tests, tsconfig files and dev
 * dependencies; the repository's `proto/` goes into @custodian/wire (its schema loader looks there
 * first); @custodian/dashboard travels as its built static files only (`files: ["dist"]`; React,
 * Mantine and the rest are its devDependencies, bundled by Vite into dist/, so none of them is in the
 * tarball); every dependency is listed in `bundleDependencies`, except `@foundry-rs/anvil`, whose
 * launcher picks a per-platform binary: it becomes an optional dependency fetched at install time
 * (needed only by `custodian dev`), so the tarball is the same for every platform. Native and wasm
 * parts travel inside the bundle: classic-level (LevelDB) ships prebuilds for every platform,
 * PGlite its wasm. `npm pack` then writes the tarball.
 *
 * Install anywhere with Node.js >= 20.19, also offline:
 *   npm install --offline --omit=optional ./custodian-<version>.tgz
 *
 * pnpm: $PNPM if set, else `pnpm` on PATH, else `npx -y pnpm@<packageManager version>`.
 * Exit status non-zero, with the failing command, when a step fails.
 */
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const build = !args.includes('--no-build');
const outIdx = args.indexOf('--out');
const OUT = resolve(outIdx >= 0 && args[outIdx + 1] ? args[outIdx + 1] : join(ROOT, 'dist-pack'));
const STAGE = join(OUT, 'stage');
/** Not bundled: a per-platform binary chosen at install time (optional dependency). */
const UNBUNDLED = ['@foundry-rs/anvil'];

const readJson = (p) => JSON.parse(readFileSync(p, 'utf8'));
/** Write a new file (never through a hard link into pnpm's store or the workspace). */
const writeJson = (p, v) => {
  rmSync(p, { force: true });
  writeFileSync(p, `${JSON.stringify(v, null, 2)}\n`);
};

function run(cmd, argv, cwd = ROOT) {
  process.stderr.write(`pack-cli: ${cmd} ${argv.join(' ')}\n`);
  execFileSync(cmd, argv, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
}

function pnpm() {
  if (process.env.PNPM) return [process.env.PNPM, []];
  try {
    execFileSync('pnpm', ['--version'], { stdio: 'ignore' });
    return ['pnpm', []];
  } catch {
    const pm = readJson(join(ROOT, 'package.json')).packageManager ?? 'pnpm@10';
    return ['npx', ['-y', pm]];
  }
}

const cli = readJson(join(ROOT, 'packages/cli/package.json'));
const version = cli.version;

if (build) {
  run('npx', ['tsc', '-b']);
  run(process.execPath, [join(ROOT, 'scripts/build-dashboard.mjs')]);
}
if (!existsSync(join(ROOT, 'packages/cli/dist/bin.js')))
  throw new Error('packages/cli/dist/bin.js missing: run tsc -b');
if (!existsSync(join(ROOT, 'packages/dashboard/dist/index.html')))
  throw new Error('packages/dashboard/dist/index.html missing: run node scripts/build-dashboard.mjs');

rmSync(STAGE, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
// pnpm deploys with hard links into its store and the workspace packages: deploy into a temporary
// folder, then copy it (new files) into the stage, so that nothing edited or packed below is shared
// with the workspace (npm pack also stalls on hard-linked files).
const DEPLOY = mkdtempSync(join(tmpdir(), 'custodian-deploy-'));
const [pm, pmArgs] = pnpm();
try {
  run(pm, [
    ...pmArgs,
    '--filter',
    '@custodian/cli',
    'deploy',
    '--prod',
    // the shared lockfile's versions (a legacy deploy would resolve the ranges afresh)
    '--config.inject-workspace-packages=true',
    '--config.node-linker=hoisted',
    '--config.confirm-modules-purge=false',
    join(DEPLOY, 'out'),
  ]);
  cpSync(join(DEPLOY, 'out'), STAGE, { recursive: true, verbatimSymlinks: true });
} finally {
  rmSync(DEPLOY, { recursive: true, force: true });
}

// pnpm's own bookkeeping is not part of an npm tree
const NM = join(STAGE, 'node_modules');
for (const f of ['.pnpm', '.modules.yaml', '.bin', '.pnpm-workspace-state.json', '.pnpm-workspace-state-v1.json'])
  rmSync(join(NM, f), { recursive: true, force: true });
rmSync(join(STAGE, 'pnpm-lock.yaml'), { force: true });
for (const name of UNBUNDLED) {
  rmSync(join(NM, name), { recursive: true, force: true });
  // the per-platform binary packages the launcher picks from (`@foundry-rs/anvil-linux-amd64`, …)
  const [scope, base] = name.split('/');
  if (existsSync(join(NM, scope)))
    for (const d of readdirSync(join(NM, scope)))
      if (d.startsWith(`${base}-`)) rmSync(join(NM, scope, d), { recursive: true, force: true });
}

// Third-party type declarations, source maps and test folders are not run: leave them out (half
// the files; installing is mostly unpacking)
function prune(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name === '@custodian') continue;
      if (['test', 'tests', '__tests__'].includes(e.name) && existsSync(join(dir, 'package.json')))
        rmSync(p, { recursive: true, force: true });
      else prune(p);
    } else if (/\.d\.[mc]?ts$|\.map$/.test(e.name)) rmSync(p, { force: true });
  }
}
prune(NM);

// The staged workspace packages: published-ready manifests, no tests or build files
const workspaceVersions = new Map();
const wsDir = join(NM, '@custodian');
for (const d of readdirSync(wsDir))
  workspaceVersions.set(`@custodian/${d}`, readJson(join(wsDir, d, 'package.json')).version);
workspaceVersions.set(cli.name, version);
function cleanManifest(pkgDir) {
  const p = readJson(join(pkgDir, 'package.json'));
  for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies'])
    for (const [dep, range] of Object.entries(p[field] ?? {}))
      if (String(range).startsWith('workspace:')) {
        const v = workspaceVersions.get(dep);
        if (!v) throw new Error(`${p.name}: ${dep} is a workspace dependency missing from the bundle`);
        p[field][dep] = v;
      }
  delete p.devDependencies;
  delete p.scripts;
  writeJson(join(pkgDir, 'package.json'), p);
  for (const f of readdirSync(pkgDir))
    if (f === 'test' || f === 'node_modules/.cache' || /^tsconfig.*\.json$/.test(f) || f.endsWith('.tsbuildinfo'))
      rmSync(join(pkgDir, f), { recursive: true, force: true });
  return p;
}
for (const d of readdirSync(wsDir)) cleanManifest(join(wsDir, d));
cpSync(join(ROOT, 'proto'), join(wsDir, 'wire', 'proto'), { recursive: true });
// the coordinator serves the dashboard from the installed @custodian/dashboard's dist/
if (!existsSync(join(wsDir, 'dashboard', 'dist', 'index.html')))
  throw new Error('the staged @custodian/dashboard has no dist/index.html');

const manifest = cleanManifest(STAGE);
const optional = {};
for (const name of UNBUNDLED)
  if (manifest.dependencies?.[name]) {
    optional[name] = manifest.dependencies[name];
    delete manifest.dependencies[name];
  }
manifest.optionalDependencies = { ...(manifest.optionalDependencies ?? {}), ...optional };
manifest.bundleDependencies = Object.keys(manifest.dependencies).sort();
manifest.engines = readJson(join(ROOT, 'package.json')).engines;
manifest.files = ['dist', 'src', 'README.md'];
writeJson(join(STAGE, 'package.json'), manifest);
cpSync(join(ROOT, 'README.md'), join(STAGE, 'README.md'));

const packed = execFileSync('npm', ['pack', '--json', '--pack-destination', OUT], {
  cwd: STAGE,
  encoding: 'utf8',
  maxBuffer: 1 << 30,
  stdio: ['ignore', 'pipe', 'inherit'],
});
const [{ filename, size, unpackedSize, bundled }] = JSON.parse(packed);
const target = join(OUT, `custodian-${version}.tgz`);
renameSync(join(OUT, filename), target);
process.stderr.write(
  `pack-cli: ${target} (${(size / 1e6).toFixed(1)} MB, ${(unpackedSize / 1e6).toFixed(1)} MB unpacked, ${bundled.length} bundled packages)\n`,
);
process.stdout.write(`${target}\n`);
