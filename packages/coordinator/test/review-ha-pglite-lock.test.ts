/**
 * Review of issue #25 (hostile): db.ts `lockFolder` says "a second open in this process is
 * refused too", but a lock file naming THIS process's pid is treated as stale (`holder.pid ===
 * me.pid`) and taken over, and the in-process set `heldFolders` is keyed by `path.resolve(dir)`,
 * which does not resolve symbolic links. The same data folder reached through a symlink is opened
 * a second time: two PGlite instances on one folder (the corruption the lock exists to prevent).
 * (PGlite then fails on it — but the failed open's unlock deletes the lock file, so the folder
 * stays open with NO lock file, and another process can open it too.) Expected: the second open is
 * refused (REPLICA_NEEDS_POSTGRES) and the lock file stays, e.g. `heldFolders` keyed by `realpath`,
 * and a lock file naming our own pid that is not in `heldFolders` is not "stale".
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Db, openPglite, PGLITE_LOCK_FILE } from '../src/db/db.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

describe('review #25: the PGlite folder lock and a symlinked path', () => {
  it('refuses a second open of one data folder reached through a symlink', async () => {
    const root = await mkdtemp(join(tmpdir(), 'custodian-review-pglite-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const dir = join(root, 'data');
    const first = await openPglite(dir);
    cleanups.push(() => first.close());
    const alias = join(root, 'alias');
    await symlink(dir, alias);
    let second: Db | undefined;
    let refused: unknown;
    try {
      second = await openPglite(alias);
      cleanups.push(() => (second as Db).close());
    } catch (e) {
      refused = e;
    }
    // on integrate: the lock file (ours: our pid) is taken as stale and taken over; PGlite then
    // fails on the folder in use (a non-Error object) and the failed open's unlock DELETES the
    // lock file — the folder is open (by `first`) with no lock file: another process opens it next
    expect(existsSync(join(dir, PGLITE_LOCK_FILE))).toBe(true);
    expect(second).toBeUndefined();
    expect((refused as { code?: string } | undefined)?.code).toBe('REPLICA_NEEDS_POSTGRES');
  });

  it('a lock file naming this pid left by an earlier process (the pid reused, e.g. a restarted container) is taken over; close and reopen works', async () => {
    const root = await mkdtemp(join(tmpdir(), 'custodian-review-pglite-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const dir = join(root, 'data');
    await mkdir(dir);
    // an earlier process with our pid on this host: another process token (or none: an older format)
    await writeFile(join(dir, PGLITE_LOCK_FILE), `${process.pid}\n${hostname()}\nearlier0token000\nx\n`);
    const db = await openPglite(dir);
    const mine = await readFile(join(dir, PGLITE_LOCK_FILE), 'utf8');
    expect(mine).not.toContain('earlier0token000');
    await db.close();
    expect(existsSync(join(dir, PGLITE_LOCK_FILE))).toBe(false);
    await writeFile(join(dir, PGLITE_LOCK_FILE), `${process.pid}\n${hostname()}\n`);
    const again = await openPglite(dir);
    await again.close();
  });
});
