/**
 * Issue #25: PGlite is ONE process. A second coordinator process on the same data folder
 * (`<dataDir>/pgdata`) must refuse at once with REPLICA_NEEDS_POSTGRES (naming the holder's pid
 * and pointing to PostgreSQL), not open the folder beside the first (which may corrupt it: before
 * the fix, both opened). A lock whose process died is stale and taken over; `close()` removes it.
 * Real processes: the holder is a child process (the BUILT coordinator, `npx tsc -b` first), and
 * the CLI (`custodian coordinator start`) prints the refusal.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { killTrees, spawnTracked, type TrackedChild } from '../../../test/helpers/processes.js';
import { openPglite, PGLITE_LOCK_FILE } from '../src/db/db.js';

const DB_JS = new URL('../dist/db/db.js', import.meta.url).href;
const CLI = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));
/** A child that opens the folder and stays. */
const HOLDER = `const { openPglite } = await import(process.argv.at(-2));
await openPglite(process.argv.at(-1));
process.stdout.write('holding\\n');
setInterval(() => {}, 60_000);`;

const children: TrackedChild[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await killTrees(children.splice(0));
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function folder(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'custodian-pglite-lock-'));
  dirs.push(d);
  return d;
}

async function holder(pgdata: string): Promise<TrackedChild> {
  const c = spawnTracked(process.execPath, ['--input-type=module', '-e', HOLDER, DB_JS, pgdata]);
  children.push(c);
  await c.waitFor(/holding/, 60_000);
  return c;
}

describe('a PGlite data folder is held by one process', () => {
  it('a second process is refused (REPLICA_NEEDS_POSTGRES, the pid); after the holder dies it opens', async () => {
    const dir = await folder();
    const pgdata = join(dir, 'pgdata');
    const child = await holder(pgdata);
    const err = await openPglite(pgdata).then(
      async (db) => {
        await db.close();
        return undefined;
      },
      (e: unknown) => e as { code?: string; message: string },
    );
    expect(err?.code).toBe('REPLICA_NEEDS_POSTGRES');
    expect(err?.message).toContain(`held by pid ${child.pid}`);
    expect(err?.message).toContain('PGlite is single-process');
    expect(err?.message).toContain('--database-url / DATABASE_URL');
    expect(err?.message).toContain('"Several coordinator replicas"');
    // the holder dies without closing: its lock is stale and taken over
    await killTrees([child]);
    const db = await openPglite(pgdata);
    expect((await db.query<{ x: number }>('SELECT 1 AS x'))[0]?.x).toBe(1);
    // a second open in this same process is refused too
    await expect(openPglite(pgdata)).rejects.toMatchObject({ code: 'REPLICA_NEEDS_POSTGRES' });
    await db.close();
    expect(existsSync(join(pgdata, PGLITE_LOCK_FILE))).toBe(false);
    // closed: free again
    const again = await openPglite(pgdata);
    await again.close();
  });

  it('`custodian coordinator start` on a data folder in use prints the refusal and exits 1', async () => {
    const dir = await folder();
    const child = await holder(join(dir, 'pgdata'));
    const cli = spawnTracked(process.execPath, [CLI, 'coordinator', 'start', '--data-dir', dir, '--port', '0'], {
      env: { ...process.env, DATABASE_URL: undefined, CUSTODIAN_WEBHOOK_KEK: undefined },
    });
    children.push(cli);
    const exit = await cli.exited;
    expect(exit.code).toBe(1);
    expect(cli.output()).toContain(`custodian: REPLICA_NEEDS_POSTGRES: the data folder ${join(dir, 'pgdata')}`);
    expect(cli.output()).toContain(`held by pid ${child.pid}`);
  });
});
