/**
 * Issue #27 item 1, server signers: the coordinator dials the server signers (they listen; it is
 * dial-only), so the coordinator is the side that reconnects. Real libp2p hosts on 127.0.0.1: the
 * coordinator's signing services (createSigningServices, PGlite in memory with a registered server
 * signer) and a signer host (`@custodian/signer` createHost) stopped and started again on the
 * same port with the same identity.
 *
 * Must hold: the coordinator keeps a link to every registered server signer — without waiting for
 * a ceremony — and when the signer goes away it retries forever with a capped, jittered backoff,
 * says so in its log, and says when the link is back.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createIdentity, type SignerConfig, type SignerDaemon, startSigner } from '@custodian/signer';
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { type Logger, pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, tempDir } from '../../signer/test/cluster.js';
import { type Db, openPglite } from '../src/db/db.js';
import { migrate } from '../src/db/migrations.js';
import { DeviceStore } from '../src/devices/store.js';
import { MasterKeyStore, ServerSignerStore } from '../src/signers/store.js';
import { createSigningServices, type SigningServices } from '../src/signing/services.js';

const PASS_ENV = 'CUSTODIAN_TEST_SIGNER_LINKS_PASSPHRASE';
process.env[PASS_ENV] = 'signer links test passphrase (test only)';
const SCRYPT = { N: 1024, r: 8, p: 1 };

async function until(pred: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timeout waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** Pino JSON lines kept in memory. */
function capture(): { lines: Record<string, unknown>[]; log: Logger; text(): string } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _e, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, log: pino({ level: 'info' }, sink), text: () => lines.map((l) => String(l.msg)).join('\n') };
}

/** A coordinator's signing services (PGlite in memory) with one registered server signer, and that signer. */
async function setup(label: string): Promise<{
  db: Db;
  coordinatorKey: PrivateKey;
  signerPeerId: string;
  config: SignerConfig;
}> {
  const db: Db = await openPglite(undefined);
  cleanups.push(() => db.close());
  await migrate(db);
  const coordinatorKey = await generateKeyPair('Ed25519');
  const dataDir = join(tempDir(label), 'signer');
  const id = await createIdentity(dataDir, process.env[PASS_ENV] as string, SCRYPT);
  const port = await freePort();
  const config: SignerConfig = {
    listen: `/ip4/127.0.0.1/tcp/${port}`,
    dataDir,
    peers: [],
    coordinator: { peerId: peerIdFromPrivateKey(coordinatorKey).toString() },
    passphrase: { env: PASS_ENV },
    logLevel: 'info',
    scrypt: SCRYPT,
  };
  await db.query(
    'INSERT INTO server_signers (signer_id, name, peer_id, address, fingerprint, created_at) VALUES ($1,$2,$3,$4,$5,$6)',
    [randomUUID(), 'signer-1', id.peerId, config.listen, 'test', new Date()],
  );
  return { db, coordinatorKey, signerPeerId: id.peerId, config };
}

async function services(db: Db, key: PrivateKey, log: Logger): Promise<SigningServices> {
  const s = await createSigningServices({
    db,
    ...stores(db),
    privateKey: key,
    log,
    presignaturePool: 0,
    signerLinks: { initialMs: 40, maxMs: 160 },
  });
  cleanups.push(() => s.stop());
  await s.start();
  return s;
}

async function daemon(config: SignerConfig, log: Logger): Promise<SignerDaemon> {
  const d = await startSigner(config, log);
  cleanups.push(() => d.stop());
  return d;
}

describe('the coordinator keeps its links to the server signers', () => {
  it('connects without a ceremony, and reconnects with backoff after the signer restarts, saying so', async () => {
    const { db, coordinatorKey, signerPeerId, config } = await setup('signer-links-restart');
    const signerOut = capture();
    let signer = await daemon(config, signerOut.log);
    const out = capture();
    const svc = await services(db, coordinatorKey, out.log);
    const linked = () => svc.control.host.connectedPeers().includes(signerPeerId);

    // no ceremony asked for: the link is there, and both sides say so
    await until(linked, 10_000, 'the first link');
    expect(out.text()).toMatch(/connected to server signer/);
    await until(() => /coordinator connected/.test(signerOut.text()), 5_000, "the signer's log");

    await signer.stop();
    await until(() => out.lines.filter((l) => /reconnecting in/.test(String(l.msg))).length >= 4, 10_000, 'retries');
    const retries = out.lines.filter((l) => /reconnecting in/.test(String(l.msg)));
    expect(String(retries[0]?.msg)).toMatch(
      /^server signer \S+ unreachable \(.*\); reconnecting in \d+ ms \(attempt 1\)$|^disconnected from server signer \S+; reconnecting in \d+ ms \(attempt 1\)$/,
    );
    for (const r of retries) {
      expect(r.signer).toBe(signerPeerId);
      expect(Number(r.delayMs)).toBeLessThanOrEqual(160);
    }
    expect(retries.slice(0, 4).map((r) => Number(r.attempt))).toEqual([1, 2, 3, 4]);

    // back on the same port with the same identity: the link comes back by itself
    signer = await daemon(config, capture().log);
    await until(() => linked() && /reconnected to server signer/.test(out.text()), 10_000, 'the reconnection');
    expect(svc.control.host.connectedPeers()).toContain(signerPeerId);
  });

  it('a restarted coordinator links to the signer again; the signer logs the loss and the return', async () => {
    const { db, coordinatorKey, signerPeerId, config } = await setup('signer-links-coordinator');
    const signerOut = capture();
    await daemon(config, signerOut.log);
    let svc = await services(db, coordinatorKey, capture().log);
    await until(() => svc.control.host.connectedPeers().includes(signerPeerId), 10_000, 'the first link');
    await svc.stop();
    await until(() => /coordinator disconnected/.test(signerOut.text()), 5_000, 'the loss in the signer log');
    const before = signerOut.lines.filter((l) => /coordinator connected/.test(String(l.msg))).length;
    svc = await services(db, coordinatorKey, capture().log);
    await until(() => svc.control.host.connectedPeers().includes(signerPeerId), 10_000, 'the link again');
    await until(
      () => signerOut.lines.filter((l) => /coordinator connected/.test(String(l.msg))).length > before,
      5_000,
      'the return in the signer log',
    );
  });
});

/** The rooms' stores the signing services read, over `db`. */
function stores(db: Db) {
  return {
    masterKeys: new MasterKeyStore({ db, clock: () => new Date() }),
    signers: new ServerSignerStore({ db }),
    devices: new DeviceStore({ db }),
  };
}
