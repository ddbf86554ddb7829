/**
 * Several coordinator replicas in `custodian dev --replicas N` (issue #25): N coordinator
 * processes on ONE PostgreSQL database, each with its own data folder and port, sharing what every
 * replica must share:
 *
 * - the coordinator's libp2p identity `coordinator-p2p.key` (signers and phones pin ONE peer id;
 *   a replica with another one refuses to start, COORDINATOR_IDENTITY_MISMATCH): replica 1's
 *   folder's key (created first when missing) is copied, mode 0600, into every other folder before
 *   any replica starts;
 * - the webhook key-encryption key (webhooks/keys.ts of the coordinator: `CUSTODIAN_WEBHOOK_KEK`,
 *   else `<dataDir>/webhook-kek.key`): when the environment sets none, replica 1's key file (32
 *   random bytes, created 0600 when missing) is copied, 0600, into the others — otherwise each
 *   replica would make its own and could not open the signing keys another one sealed.
 *
 * Also: a scratch database per test run or bench ({@link createScratchDatabase}), so runs never
 * share state on the one PostgreSQL server. Secrets are copied file to file, never logged.
 */
import { randomBytes } from 'node:crypto';
import { chmod, copyFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { coordinatorPeerId, openPostgres } from '@custodian/coordinator';
import { CliError } from '../errors.js';

/** The coordinator's identity file in its data folder (`COORDINATOR_KEY_FILE` of the coordinator's signing/services.ts). */
const IDENTITY_FILE = 'coordinator-p2p.key';
/** The webhook key-encryption key file in a data folder (`KEK_FILE` of the coordinator's webhooks/keys.ts). */
const KEK_FILE = 'webhook-kek.key';

/**
 * Data folder of replica `k` (0-based) under the instance folder `dir`: `coordinator` for the first
 * (the folder a one-replica instance has always used), `coordinator-<k+1>` for the others.
 */
export function replicaDataDir(dir: string, k: number): string {
  return k === 0 ? join(dir, 'coordinator') : join(dir, `coordinator-${k + 1}`);
}

/**
 * Check a replica count against the database: an integer in [1, 16]; 2 or more need PostgreSQL
 * (`databaseUrl`, a `postgres://` or `postgresql://` URL): the embedded PGlite store is one process's.
 * @throws CliError `DEV_REPLICAS_INVALID` (bad count), `DEV_REPLICAS_NEED_POSTGRES` (N ≥ 2 without a PostgreSQL URL)
 */
export function checkReplicas(replicas: number, databaseUrl: string | undefined): void {
  if (!Number.isSafeInteger(replicas) || replicas < 1 || replicas > 16)
    throw new CliError('DEV_REPLICAS_INVALID', `--replicas must be an integer in [1, 16], got ${String(replicas)}`);
  if (replicas >= 2 && (databaseUrl === undefined || !/^postgres(ql)?:\/\//.test(databaseUrl)))
    throw new CliError(
      'DEV_REPLICAS_NEED_POSTGRES',
      `--replicas ${replicas} needs a PostgreSQL database shared by the replicas: pass --database-url postgres://… ` +
        '(the embedded PGlite store belongs to one process)',
    );
}

/**
 * Make the replicas' data folders `dirs` (0700) share replica 1's (`dirs[0]`) coordinator identity
 * and, unless `env` sets `CUSTODIAN_WEBHOOK_KEK`, its webhook key-encryption key: both created in
 * `dirs[0]` when missing, then copied (mode 0600, atomically) over whatever the others hold.
 * Call it before any replica starts. Resolves with the shared peer id.
 * @throws Error when `dirs[0]`'s identity file is not an Ed25519 libp2p key, or its KEK file not 32 bytes
 */
export async function shareReplicaSecrets(
  dirs: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const first = dirs[0];
  if (first === undefined) throw new RangeError('shareReplicaSecrets: no data folder');
  for (const d of dirs) await mkdir(d, { recursive: true, mode: 0o700 });
  const peerId = await coordinatorPeerId(first, { create: true });
  const files = [IDENTITY_FILE];
  const kekFromEnv = env.CUSTODIAN_WEBHOOK_KEK !== undefined && env.CUSTODIAN_WEBHOOK_KEK !== '';
  if (!kekFromEnv) {
    const kekPath = join(first, KEK_FILE);
    await writeFile(kekPath, randomBytes(32), { mode: 0o600, flag: 'wx' }).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e;
    });
    if ((await readFile(kekPath)).length !== 32) throw new Error(`${kekPath} must hold exactly 32 bytes`);
    files.push(KEK_FILE);
  }
  for (const d of dirs.slice(1)) {
    for (const f of files) {
      const tmp = join(d, `${f}.${process.pid}.tmp`);
      await copyFile(join(first, f), tmp);
      await chmod(tmp, 0o600);
      await rename(tmp, join(d, f));
    }
  }
  return peerId;
}

/** A database made for one run (see {@link createScratchDatabase}). */
export interface ScratchDatabase {
  /** Its name (`<prefix>_<16 hex digits>`). */
  readonly name: string;
  /** Its URL: the server URL with this database as the path. */
  readonly url: string;
  /** Drop it (WITH (FORCE): connections still open are ended). Idempotent. */
  drop(): Promise<void>;
}

/**
 * Create an empty database `<prefix>_<random>` on the PostgreSQL server of `serverUrl` (connected
 * to the database that URL names, e.g. `postgres://postgres@127.0.0.1:5432/test`), for one test run
 * or bench: the replicas migrate it at their first start. The caller drops it at the end.
 * @param prefix lowercase SQL identifier (default `custodian_ha`)
 * @throws RangeError on a bad prefix; the server's error when it refuses CREATE DATABASE
 */
export async function createScratchDatabase(serverUrl: string, prefix = 'custodian_ha'): Promise<ScratchDatabase> {
  if (!/^[a-z_][a-z0-9_]{0,40}$/.test(prefix)) throw new RangeError('prefix must be a lowercase SQL identifier');
  const name = `${prefix}_${randomBytes(8).toString('hex')}`;
  const admin = await openPostgres(serverUrl, { max: 1 });
  try {
    await admin.exec(`CREATE DATABASE ${name}`);
  } finally {
    await admin.close();
  }
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  let dropped = false;
  return {
    name,
    url: u.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      const a = await openPostgres(serverUrl, { max: 1 });
      try {
        await a.exec(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await a.close();
      }
    },
  };
}

/** The URL without its password (what `instance.json` records to recognise its database). */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}
