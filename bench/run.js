#!/usr/bin/env node
// `pnpm bench [area…]`: runs bench/dist/<area>.js for each area (all when none given).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = join(dirname(fileURLToPath(import.meta.url)), 'dist');
const all = readdirSync(dist)
  .filter((f) => f.endsWith('.js') && f !== 'harness.js')
  .map((f) => f.slice(0, -3));
const areas = process.argv.slice(2).length ? process.argv.slice(2) : all;
for (const area of areas) {
  if (!all.includes(area)) {
    console.error(`unknown bench area "${area}"; known: ${all.join(', ')}`);
    process.exit(2);
  }
  const r = spawnSync(process.execPath, [join(dist, `${area}.js`)], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
