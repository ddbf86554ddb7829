/**
 * Issue #25 [ha]: a phone facing several coordinator replicas. Two real coordinators in this
 * process on ONE PostgreSQL schema (each its own pool), sharing one libp2p identity (the same
 * `coordinator-p2p.key` in both data folders), each with its device hub on its own HTTP socket; a
 * device enrolled over HTTP with both URLs and approved; a {@link MobileSigner} in process.
 *
 * Must hold: the phone connects to the first URL; when that replica dies it moves to the next URL
 * (the existing backoff) and is connected there within seconds, receiving the approvals pending
 * for it; a URL presenting another coordinator identity is refused (as an identity change always
 * was) and the phone moves on. Before the vault kept a list of URLs the phone retried the dead
 * replica's URL forever.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Coordinator, createCoordinator, type Db, openPostgres } from '@custodian/coordinator';
import { KeyAlgorithm, type TransferIntent } from '@custodian/wire';
import { generateKeyPair, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import { Command } from 'commander';
import { type Logger, pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { PG_URL, postgresReachable } from '../../coordinator/test/helpers.js';
import { tempDir, waitFor } from '../../signer/test/cluster.js';
import { registerMobileCommands } from '../src/cli.js';
import { MobileSigner } from '../src/device.js';
import { enrollDevice } from '../src/enroll.js';
import { createVault, readVaultInfo, VAULT_FILE } from '../src/vault.js';
import { PIN } from './harness.js';

const KDF = { N: 1024, r: 8, p: 1 };
process.env.CUSTODIAN_SIGNING_LOG ??= 'silent';

function intent(id: string): TransferIntent {
  return {
    transfer_id: id,
    profile_id: 'p',
    wallet_id: 'w',
    blockchain: 'test',
    asset_id: 'a',
    asset_symbol: 'TST',
    asset_decimals: 0,
    asset_contract: null,
    source_address: 's',
    destination_address: 'd',
    amount: '1',
    derivation_path: [0, 7],
    key_algorithm: 'ED25519',
    key_id: 'k',
    created_at: new Date().toISOString(),
    max_fee: '1',
  };
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** Pino JSON lines of a phone, kept in memory. */
function capture(): { lines: Record<string, unknown>[]; log: Logger; text(): string } {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { lines, log, text: () => lines.map((l) => String(l.msg)).join('\n') };
}

/** A private schema on the test PostgreSQL server, dropped at cleanup. */
async function freshSchema(): Promise<string> {
  const schema = `t_${randomBytes(8).toString('hex')}`;
  const admin = await openPostgres(PG_URL, { max: 1 });
  await admin.query(`CREATE SCHEMA ${schema}`);
  cleanups.push(async () => {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.close();
  });
  return schema;
}

/** A coordinator replica in `dir` on its own pool of `schema`, listening on port 0; stopped at cleanup. */
async function replica(dir: string, db: Db): Promise<{ coord: Coordinator; url: string }> {
  const coord = await createCoordinator({
    mode: 'development',
    dataDir: dir,
    db,
    logger: false,
    listen: { host: '127.0.0.1', port: 0 },
    signing: { enabled: true, algorithms: [KeyAlgorithm.ED25519], presignaturePool: 0 },
    webhooks: { runWorker: false },
  });
  const url = await coord.start();
  cleanups.push(() => coord.stop());
  return { coord, url };
}

/** Two replicas on one schema sharing one coordinator identity key and one webhook KEK. */
async function twoReplicas(root: string) {
  const schema = await freshSchema();
  const key = privateKeyToProtobuf(await generateKeyPair('Ed25519'));
  const kek = randomBytes(32);
  const dirs = [join(root, 'replica-a'), join(root, 'replica-b')];
  for (const d of dirs) {
    mkdirSync(d, { recursive: true, mode: 0o700 });
    writeFileSync(join(d, 'coordinator-p2p.key'), key, { mode: 0o600 });
    writeFileSync(join(d, 'webhook-kek.key'), kek, { mode: 0o600 });
  }
  const dbs: Db[] = [];
  for (let i = 0; i < 2; i++) {
    const db = await openPostgres(PG_URL, { schema, max: 10 });
    cleanups.push(() => db.close());
    dbs.push(db);
  }
  const a = await replica(dirs[0] as string, dbs[0] as Db);
  const b = await replica(dirs[1] as string, dbs[1] as Db);
  return { a, b };
}

describe('a phone with several coordinator URLs', () => {
  it('its replica dies: the phone connects to the next URL (same identity) and answers the approvals pending there', async (ctx) => {
    if (!(await postgresReachable())) ctx.skip();
    const root = tempDir('mobile-failover');
    const { a, b } = await twoReplicas(root);
    // another coordinator (its own identity and database) between them: refused, skipped
    const other = await createCoordinator({
      mode: 'development',
      dataDir: join(root, 'other'),
      logger: false,
      listen: { host: '127.0.0.1', port: 0 },
      signing: { enabled: true, algorithms: [KeyAlgorithm.ED25519], presignaturePool: 0 },
      webhooks: { runWorker: false },
    });
    const otherUrl = await other.start();
    cleanups.push(() => other.stop());

    const phoneDir = join(root, 'phone');
    mkdirSync(phoneDir, { recursive: true });
    const r = await enrollDevice({ url: [a.url, otherUrl, b.url], dataDir: phoneDir, pin: PIN, name: 'p', kdf: KDF });
    await a.coord.db.query(`UPDATE devices SET status = 'APPROVED', decided_at = now() WHERE device_id = $1`, [
      r.device_id,
    ]);
    expect((await readVaultInfo(phoneDir)).urls).toEqual([a.url, otherUrl, b.url]);

    const out = capture();
    const decided: string[] = [];
    const connectedTo: string[] = [];
    const phone = await MobileSigner.start(
      {
        dataDir: phoneDir,
        pin: PIN,
        decide: async (i) => {
          decided.push(i.transfer_id);
          return 'APPROVE';
        },
        log: out.log,
        storeScrypt: KDF,
        allowUnenforcedSigning: true,
        reconnectMs: 100,
        reconnectMaxMs: 400,
      },
      { onConnected: (_c, info) => connectedTo.push(info.url) },
    );
    cleanups.push(() => phone.stop());
    await phone.ready;
    expect(connectedTo).toEqual([a.url]);
    expect(phone.url).toBe(a.url);
    const pinned = (await readVaultInfo(phoneDir)).coordinatorPeerId;
    expect(pinned).toBe(b.coord.signing?.peerId);

    // an approval through replica A
    const hubA = a.coord.signing?.hub;
    const hubB = b.coord.signing?.hub;
    if (!hubA || !hubB) throw new Error('no device hub');
    const onA: string[] = [];
    const onB: string[] = [];
    hubA.onApproval((e) => onA.push(`${e.requestId}:${e.approval.decision}`));
    hubB.onApproval((e) => onB.push(`${e.requestId}:${e.approval.decision}`));
    hubA.notifyApprovalRequest(r.device_id, intent('t-on-a'));
    await waitFor(() => onA.length === 1, 10_000, 'the approval through A');

    // replica A dies; an approval is pending for the phone on replica B
    await a.coord.stop();
    hubB.notifyApprovalRequest(r.device_id, intent('t-on-b'));
    await waitFor(() => phone.url === b.url && onB.length === 1, 10_000, 'the phone on B, answering there');
    expect(onA).toEqual(['t-on-a:APPROVE']);
    expect(onB).toEqual(['t-on-b:APPROVE']);
    expect(decided).toEqual(['t-on-a', 't-on-b']);
    expect(connectedTo).toEqual([a.url, b.url]);
    // the request answered through A was withdrawn from B's queue too: B did not ask for it again
    expect(out.lines.filter((l) => /already answered/.test(String(l.msg)))).toEqual([]);
    // the other identity was refused on the way, and the pin kept
    expect(out.text()).toMatch(/coordinator identity changed: refusing to connect/);
    const refused = out.lines.find((l) => l.msg === 'coordinator identity changed: refusing to connect');
    expect(refused?.url).toBe(otherUrl);
    expect((await readVaultInfo(phoneDir)).coordinatorPeerId).toBe(pinned);
    const back = out.lines.find((l) => /^reconnected to the coordinator; resuming/.test(String(l.msg)));
    expect(back?.url).toBe(b.url);
  }, 90_000);
});

describe('coordinator URLs of the vault', () => {
  it('a vault holding a single `url` reads as that one URL; `mobile set-urls` replaces them (repeatable, comma-separated)', async () => {
    const dir = tempDir('mobile-urls');
    (await createVault(dir, PIN, { url: 'http://127.0.0.1:1/', name: 'p', kdf: KDF })).wipe();
    // the format before `urls`: only `url`
    const path = join(dir, VAULT_FILE);
    const old = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    delete old.urls;
    writeFileSync(path, JSON.stringify(old));
    const info = await readVaultInfo(dir);
    expect(info.urls).toEqual(['http://127.0.0.1:1']);
    expect(info.url).toBe('http://127.0.0.1:1');

    const printed: string[] = [];
    const program = new Command().exitOverride();
    registerMobileCommands(program, { out: (t) => void printed.push(t), err: () => undefined, env: {} });
    await program.parseAsync([
      'node',
      'custodian',
      'mobile',
      'set-urls',
      '--data',
      dir,
      '--url',
      'http://10.0.0.1:8080, http://10.0.0.2:8080/',
      '--url',
      'https://c.example',
    ]);
    const urls = ['http://10.0.0.1:8080', 'http://10.0.0.2:8080', 'https://c.example'];
    expect((await readVaultInfo(dir)).urls).toEqual(urls);
    expect(JSON.parse(printed.join(''))).toEqual({ device_id: null, urls });
    // the file keeps `url` (the first) for older readers
    expect(JSON.parse(readFileSync(path, 'utf8')).url).toBe(urls[0]);
    await expect(
      program.parseAsync(['node', 'custodian', 'mobile', 'set-urls', '--data', dir, '--url', 'ftp://x']),
    ).rejects.toThrow(/http or https/);
    expect((await readVaultInfo(dir)).urls).toEqual(urls);
  });
});
