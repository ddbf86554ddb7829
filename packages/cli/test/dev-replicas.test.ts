/**
 * `custodian dev --replicas N` (issue #25), the parts that need no cluster (dev/replicas.ts): the
 * replica count check (N ≥ 2 needs PostgreSQL, refused before anything starts), the sharing of
 * replica 1's coordinator identity and webhook key-encryption key with the other replicas' data
 * folders (mode 0600, same bytes, same peer id), the instance state tied to its database, and the
 * scratch database of a test run (PostgreSQL at TEST_DATABASE_URL / 127.0.0.1:5432, skipped when
 * unreachable). The whole two-replica cluster: replicas.slow.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { coordinatorPeerId, openPostgres } from '@custodian/coordinator';
import { afterEach, describe, expect, it } from 'vitest';
import { startInstance } from '../src/dev/instance.js';
import { checkReplicas, createScratchDatabase, replicaDataDir, shareReplicaSecrets } from '../src/dev/replicas.js';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const dirs: string[] = [];
const tmp = async () => {
  const d = await mkdtemp(join(tmpdir(), 'custodian-dev-replicas-'));
  dirs.push(d);
  return d;
};
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function pgReachable(): Promise<boolean> {
  try {
    const db = await openPostgres(PG_URL, { max: 1 });
    try {
      await db.query('SELECT 1');
      return true;
    } finally {
      await db.close();
    }
  } catch {
    return false;
  }
}

describe('custodian dev --replicas: the count and the database', () => {
  it('2 or more replicas without a PostgreSQL URL are refused with DEV_REPLICAS_NEED_POSTGRES', () => {
    for (const url of [undefined, '', '/tmp/pgdata', 'mysql://x@y/z'])
      expect(() => checkReplicas(2, url), String(url)).toThrow(
        expect.objectContaining({ code: 'DEV_REPLICAS_NEED_POSTGRES', family: 'cli' }),
      );
    for (const n of [0, -1, 1.5, Number.NaN, 17])
      expect(() => checkReplicas(n, PG_URL), String(n)).toThrow(
        expect.objectContaining({ code: 'DEV_REPLICAS_INVALID' }),
      );
    expect(() => checkReplicas(1, undefined)).not.toThrow();
    expect(() => checkReplicas(3, 'postgresql://u@h:5432/d')).not.toThrow();
  });

  it('the command refuses --replicas 2 without --database-url before starting anything', async () => {
    const d = join(await tmp(), 'dev');
    const env = { ...process.env };
    delete env.DATABASE_URL;
    const r = spawnSync(process.execPath, [BIN, 'dev', '--replicas', '2', '--data-dir', d], { env, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/--replicas 2 needs a PostgreSQL database .*--database-url/);
    expect(existsSync(d)).toBe(false);
  });

  it('startInstance refuses the same, and a data folder whose state lives in another database', async () => {
    const d = await tmp();
    const base = { dataDir: d, apiPort: 0, anvilPort: 0, receiverPort: 0, signerPorts: [0, 0] as const, say: () => {} };
    await expect(startInstance({ ...base, replicas: 2 })).rejects.toMatchObject({ code: 'DEV_REPLICAS_NEED_POSTGRES' });
    // an instance bootstrapped on the embedded store, then started on PostgreSQL (and the reverse)
    await writeFile(
      join(d, 'instance.json'),
      JSON.stringify({ version: 1, admin: { email: 'a@b' }, devices: [], signers: [], profile_id: 'p' }),
    );
    await expect(startInstance({ ...base, replicas: 2, databaseUrl: 'postgres://u:secret@h/db' })).rejects.toThrow(
      /belongs to an instance on the embedded store/,
    );
    await writeFile(
      join(d, 'instance.json'),
      JSON.stringify({
        version: 1,
        database: 'postgres://u:***@h/other',
        admin: { email: 'a@b' },
        devices: [],
        signers: [],
      }),
    );
    const refused = startInstance({ ...base, databaseUrl: 'postgres://u:secret@h/db' });
    await expect(refused).rejects.toThrow(
      /belongs to an instance on postgres:\/\/u:\*\*\*@h\/other, not postgres:\/\/u:\*\*\*@h\/db/,
    );
    // the password never reaches the message
    await expect(refused).rejects.not.toThrow(/secret/);
  });
});

describe('custodian dev --replicas: one identity and one webhook KEK for every replica', () => {
  it("copies replica 1's identity and KEK (0600) over whatever the others held", async () => {
    const d = await tmp();
    const ds = [0, 1, 2].map((k) => replicaDataDir(d, k));
    expect(ds.map((x) => x.slice(d.length + 1))).toEqual(['coordinator', 'coordinator-2', 'coordinator-3']);
    // replica 3 has an identity and a KEK of its own from an earlier run: both replaced
    const other = await coordinatorPeerId(ds[2] as string, { create: true });
    await writeFile(join(ds[2] as string, 'webhook-kek.key'), randomBytes(32), { mode: 0o600 });
    const env = { ...process.env };
    delete env.CUSTODIAN_WEBHOOK_KEK;
    const peer = await shareReplicaSecrets(ds, env);
    expect(peer).not.toBe(other);
    const first = await Promise.all(
      ['coordinator-p2p.key', 'webhook-kek.key'].map((f) => readFile(join(ds[0] as string, f))),
    );
    expect(first[1]).toHaveLength(32);
    for (const x of ds) {
      expect(await coordinatorPeerId(x, { create: false })).toBe(peer);
      for (const [i, f] of ['coordinator-p2p.key', 'webhook-kek.key'].entries()) {
        expect((await readFile(join(x, f))).equals(first[i] as Buffer), `${x}/${f}`).toBe(true);
        expect((await stat(join(x, f))).mode & 0o777, `${x}/${f}`).toBe(0o600);
      }
      expect((await stat(x)).mode & 0o077, x).toBe(0);
    }
    // again: the same identity (kept, not regenerated)
    expect(await shareReplicaSecrets(ds, env)).toBe(peer);
  });

  it('leaves the KEK to CUSTODIAN_WEBHOOK_KEK when the environment sets it', async () => {
    const d = await tmp();
    const ds = [0, 1].map((k) => replicaDataDir(d, k));
    await mkdir(ds[0] as string, { recursive: true });
    await shareReplicaSecrets(ds, { CUSTODIAN_WEBHOOK_KEK: randomBytes(32).toString('hex') });
    for (const x of ds) expect(existsSync(join(x, 'webhook-kek.key'))).toBe(false);
    expect(existsSync(join(ds[1] as string, 'coordinator-p2p.key'))).toBe(true);
  });
});

describe.skipIf(!(await pgReachable()))('custodian dev --replicas: a scratch database per run', () => {
  it('creates an empty database on the server and drops it', async () => {
    const s = await createScratchDatabase(PG_URL, 'custodian_ha_unit');
    expect(s.name).toMatch(/^custodian_ha_unit_[0-9a-f]{16}$/);
    const db = await openPostgres(s.url, { max: 1 });
    try {
      const [row] = await db.query<{ db: string }>('SELECT current_database() AS db');
      expect(row?.db).toBe(s.name);
      expect(await db.query("SELECT 1 FROM information_schema.tables WHERE table_schema = 'public'")).toEqual([]);
    } finally {
      await db.close();
    }
    await s.drop();
    await s.drop();
    const admin = await openPostgres(PG_URL, { max: 1 });
    try {
      expect(await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [s.name])).toEqual([]);
    } finally {
      await admin.close();
    }
  });
});
