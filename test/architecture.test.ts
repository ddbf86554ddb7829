/**
 * Issue #21: the packages' import directions are those of the table in docs/architecture.md
 * ("Packages and import directions"). Every `@custodian/<name>` import (static or dynamic, type
 * imports included) in a package's `src/` must be listed on its row; every package must have a row.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url).pathname;

/** The table's rows: package → the packages it may import. */
function allowedTable(): Map<string, Set<string>> {
  const doc = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
  const section = doc.split('## Packages and import directions')[1]?.split('\n## ')[0] ?? '';
  const rows = new Map<string, Set<string>>();
  for (const line of section.split('\n')) {
    const m = /^\|\s*([a-z][a-z-]*)\s*\|([^|]+)\|/.exec(line); // cells are padded by the formatter
    if (!m || m[1] === 'package') continue;
    const allowed = (m[2] as string).trim() === '—' ? [] : (m[2] as string).split(',').map((s) => s.trim());
    rows.set(m[1] as string, new Set(allowed));
  }
  return rows;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return /\.(ts|tsx|js)$/.test(name) && !name.endsWith('.d.ts') ? [p] : [];
  });
}

/** `@custodian/<name>` imports of a package's sources, with the file of the first use. */
function importsOf(pkg: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of sources(join(root, 'packages', pkg, 'src'))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'@custodian\/([a-z-]+)[^']*'/g)) {
      const dep = m[1] as string;
      if (dep !== pkg && !found.has(dep)) found.set(dep, file.slice(root.length));
    }
  }
  return found;
}

const packages = readdirSync(join(root, 'packages')).filter((p) =>
  statSync(join(root, 'packages', p, 'src')).isDirectory(),
);

describe('import directions (docs/architecture.md)', () => {
  const table = allowedTable();

  it('every package has a row and every row is a package', () => {
    expect([...table.keys()].sort()).toEqual([...packages].sort());
  });

  it.each(packages)('%s imports only what its row allows', (pkg) => {
    const allowed = table.get(pkg) ?? new Set<string>();
    const violations = [...importsOf(pkg)]
      .filter(([dep]) => !allowed.has(dep))
      .map(([dep, file]) => `${dep} (${file})`);
    expect(violations, `@custodian/${pkg} imports outside its row`).toEqual([]);
  });

  it('the check sees imports (a package that imports nothing would pass vacuously)', () => {
    expect([...importsOf('signer').keys()]).toContain('cggmp');
    expect([...importsOf('coordinator').keys()]).toContain('wire');
  });
});

/**
 * Issue #21: public surfaces are explicit. An `export * from` (or `export * as ns from`) in a
 * package's `src/` re-exports whatever the module happens to export, internal helpers included;
 * each package lists its public names in `src/index.ts` instead (see the package's index).
 */
const EXPORT_STAR = /^\s*export\s+(?:type\s+)?\*(?:\s+as\s+\w+)?\s+from\s+['"]/m;

function exportStarFiles(pkg: string): string[] {
  return sources(join(root, 'packages', pkg, 'src'))
    .filter((file) => EXPORT_STAR.test(readFileSync(file, 'utf8')))
    .map((file) => file.slice(root.length));
}

describe('explicit public surfaces (no `export *`)', () => {
  it.each(packages)('%s/src has no `export *`', (pkg) => {
    expect(exportStarFiles(pkg), `files of @custodian/${pkg} with export *`).toEqual([]);
  });

  it('the check sees `export *` in its forms (and not a named re-export)', () => {
    expect(EXPORT_STAR.test("export * from './a.js';")).toBe(true);
    expect(EXPORT_STAR.test("  export type * from './a.js';")).toBe(true);
    expect(EXPORT_STAR.test("export * as a from './a.js';")).toBe(true);
    expect(EXPORT_STAR.test("export { a } from './a.js';")).toBe(false);
    expect(EXPORT_STAR.test("// export * from './a.js' in a comment")).toBe(false);
  });
});
