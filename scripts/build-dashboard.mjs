#!/usr/bin/env node
// Builds the dashboard's static files (packages/dashboard/dist, Vite) unless they are newer than
// every source file — `pnpm start` and `pnpm test:slow` run it after `tsc -b`, so an unchanged
// dashboard costs nothing. `--force` always builds.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../packages/dashboard/', import.meta.url));
const stamp = join(dir, 'dist', 'index.html');

/** Newest modification time under `p` (files only). */
function newest(p) {
  const s = statSync(p);
  if (!s.isDirectory()) return s.mtimeMs;
  let m = 0;
  for (const e of readdirSync(p)) m = Math.max(m, newest(join(p, e)));
  return m;
}

const inputs = ['src', 'index.html', 'vite.config.ts', 'package.json'].map((f) => join(dir, f));
const fresh =
  !process.argv.includes('--force') &&
  existsSync(stamp) &&
  statSync(stamp).mtimeMs >= Math.max(...inputs.map(newest), newest(join(dir, '../sdk/src/generated')));
if (fresh) {
  console.log('dashboard: up to date (packages/dashboard/dist)');
} else {
  const { build } = await import(join(dir, 'node_modules/vite/dist/node/index.js'));
  const t = Date.now();
  await build({ configFile: join(dir, 'vite.config.ts'), logLevel: 'warn' });
  console.log(`dashboard: built packages/dashboard/dist in ${((Date.now() - t) / 1000).toFixed(1)} s`);
}
