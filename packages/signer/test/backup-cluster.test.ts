/**
 * Backup and recovery of a server signer across real processes (issue #22): three signer daemons
 * on 127.0.0.1 and the test as the coordinator. A stopped signer is backed up with
 * `custodian signer backup create`, the machine is "lost", `backup restore` rebuilds it in a new
 * data folder on a "new machine" (no state file there), and the restored signer starts with the
 * same peer id, records the restore (`STORE_ROLLED_BACK`), and signs with the others. Its status
 * reports the backup (KeyInfo backupEpoch / backupUnixMs), which a REFRESH makes not current.
 * Every command's output and every daemon log is scanned for the backup's secrets.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { listKeys } from '@custodian/ceremony';
import { SecureStore } from '@custodian/ceremony/level-store';
import { bytesToHex } from '@custodian/crypto';
import { ControlClient, createHost, type Host } from '@custodian/signer-client';
import { CeremonyKind, type CeremonyResult, KeyAlgorithm, Outcome, type StartCeremony } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '@custodian/signer-client/polyfills';
import { decryptBackup, parseRecoveryKey } from '../src/index.js';
import {
  buildSigner,
  freePort,
  initNode,
  MAIN,
  type NodeSpec,
  PASS,
  readLog,
  startNode,
  stopNode,
  tempDir,
  writeConfig,
} from './cluster.js';

let dir = '';
let nodes: NodeSpec[] = [];
let restored: NodeSpec | undefined;
let host: Host;
let client: ControlClient;
let coordPeer = '';
let key: CeremonyResult;
/** stdout + stderr of every `custodian signer backup …` command run. */
const outputs: string[] = [];
const enc = new TextEncoder();
const cid = (label: string) => sha256(enc.encode(`${label}:${Math.random()}`)).subarray(0, 24);

/** Run `custodian signer …` (the built CLI) in its own process; resolves with its output and exit code. */
function cli(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, 'signer', ...args],
      { env: { ...process.env, CUSTODIAN_TEST_PASS: PASS }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const out = `${stdout}${stderr}`;
        outputs.push(out);
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out });
      },
    );
  });
}

async function ceremony(parties: NodeSpec[], start: Omit<StartCeremony, 'parties' | 'ceremonyId'>) {
  const req: StartCeremony = { ceremonyId: cid('c'), parties: parties.map((n) => ({ peerId: n.peerId })), ...start };
  return Promise.all(parties.map((n) => client.startCeremony(n.peerId, req)));
}

function edKey(): Uint8Array {
  return key.publicKeys?.find((k) => k.algorithm === KeyAlgorithm.ED25519)?.publicKey as Uint8Array;
}

beforeAll(async () => {
  buildSigner();
  dir = tempDir('backup-cluster');
  const coordKey = await generateKeyPair('Ed25519');
  coordPeer = peerIdFromPrivateKey(coordKey).toString();
  const ports = [await freePort(), await freePort(), await freePort()];
  nodes = ports.map((p, i) => initNode(dir, `signer${i}`, p));
  // raw digests, no transfer evidence: enforcement explicitly off (test only)
  for (const n of nodes) writeConfig(n, nodes, { peerId: coordPeer }, { allowUnenforcedSigning: true });
  await Promise.all(nodes.map((n) => startNode(n)));
  host = await createHost({
    privateKey: coordKey,
    listen: [],
    peers: new Map(nodes.map((n) => [n.peerId, [`/ip4/127.0.0.1/tcp/${n.port}`]])),
    maxFrameBytes: 16 * 1024 * 1024,
    log: pino({ level: 'silent' }),
  });
  client = ControlClient.fromHost(host, Uint8Array.from(coordKey.raw.subarray(0, 32)));
  const results = await ceremony(nodes, {
    kind: CeremonyKind.MASTER_KEY,
    threshold: 2,
    deadlineUnixMs: Date.now() + 120_000,
  });
  for (const r of results) expect(r.outcome, r.error).toBe(Outcome.OK);
  key = results[0] as CeremonyResult;
}, 180_000);

afterAll(async () => {
  await host?.stop();
  await Promise.all([...nodes, ...(restored ? [restored] : [])].map((n) => stopNode(n)));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('signer backup and recovery (real processes)', () => {
  it('backup of a stopped signer → restore on a new machine: same peer id, the restore is recorded, it signs with the others; no secret in any output', async () => {
    const n2 = nodes[2] as NodeSpec;
    const recoveryDir = join(dir, 'offline');
    const backupFile = join(dir, 'signer2.backup');
    const keygen = await cli(['backup', 'keygen', '--out', recoveryDir]);
    expect(keygen.code, keygen.out).toBe(0);
    expect(keygen.out).toMatch(/offline/);

    // a running signer holds its store: the backup says so and writes nothing
    const busy = await cli([
      'backup',
      'create',
      '-c',
      n2.config,
      '--recovery-key',
      join(recoveryDir, 'recovery.pub'),
      '--out',
      backupFile,
    ]);
    expect(busy.code).not.toBe(0);
    expect(busy.out).toMatch(/stop the signer first/);

    await stopNode(n2);
    const created = await cli([
      'backup',
      'create',
      '-c',
      n2.config,
      '--recovery-key',
      join(recoveryDir, 'recovery.pub'),
      '--out',
      backupFile,
    ]);
    expect(created.code, created.out).toBe(0);
    const summary = JSON.parse(created.out) as { createdAt: string; keys: { keyId: string; epoch: number }[] };
    expect(summary.keys).toEqual([{ keyId: key.keyId, epoch: 0 }]);
    const inspected = await cli(['backup', 'inspect', '--in', backupFile]);
    expect(JSON.parse(inspected.out)).toMatchObject({ peerId: n2.peerId, keys: [{ keyId: key.keyId, epoch: 0 }] });

    // the status of the backed-up signer reports the backup
    await startNode(n2);
    const st = await client.status(n2.peerId);
    const k = st.keys.find((x) => x.keyId === key.keyId);
    expect(k?.backupEpoch ?? 0).toBe(0);
    expect(Number(k?.backupUnixMs)).toBe(Date.parse(summary.createdAt));
    expect(st.storeId).toMatch(/^[0-9a-f]{32}$/);

    // the machine is lost; a new one gets a config, the backup and (briefly) the recovery key
    await stopNode(n2);
    rmSync(n2.dataDir, { recursive: true, force: true });
    const machine = join(dir, 'new-machine');
    const r: NodeSpec = {
      ...n2,
      dir: machine,
      dataDir: join(machine, n2.name),
      config: join(machine, `${n2.name}.json`),
      logFile: join(machine, `${n2.name}.log`),
      logOffset: 0,
    };
    restored = r;
    rmSync(machine, { recursive: true, force: true });
    mkdirSync(machine);
    writeConfig(r, nodes, { peerId: coordPeer }, { allowUnenforcedSigning: true });
    // a wrong recovery key first: refused, nothing written
    const otherDir = join(dir, 'other-offline');
    await cli(['backup', 'keygen', '--out', otherDir]);
    const wrong = await cli([
      'backup',
      'restore',
      '-c',
      r.config,
      '--in',
      backupFile,
      '--recovery-key',
      join(otherDir, 'recovery.key'),
    ]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.out).toMatch(/encrypted to recovery key/);
    const done = await cli([
      'backup',
      'restore',
      '-c',
      r.config,
      '--in',
      backupFile,
      '--recovery-key',
      join(recoveryDir, 'recovery.key'),
      '--peer-id',
      n2.peerId,
    ]);
    expect(done.code, done.out).toBe(0);
    expect(JSON.parse(done.out)).toMatchObject({ peerId: n2.peerId });

    await startNode(r);
    expect(readLog(r)).toContain('STORE_ROLLED_BACK');
    const st2 = await client.status(r.peerId);
    expect(st2.peerId).toBe(n2.peerId);
    // a restore is a new store: the coordinator sees a store id it has not pushed revocations to
    expect(st2.storeId).toMatch(/^[0-9a-f]{32}$/);
    expect(st2.storeId).not.toBe(st.storeId);
    expect(st2.keys.map((x) => x.keyId)).toEqual([key.keyId]);
    expect(Number(st2.keys[0]?.backupUnixMs)).toBe(Date.parse(summary.createdAt));

    const msg = sha256(enc.encode('signed by a restored signer'));
    const [s] = await ceremony([nodes[0] as NodeSpec, r], {
      kind: CeremonyKind.SIGN,
      threshold: 2,
      deadlineUnixMs: Date.now() + 30_000,
      sign: { keyId: key.keyId as string, algorithm: KeyAlgorithm.ED25519, derivationPath: [], digests: [msg] },
    });
    expect(s?.outcome, s?.error).toBe(Outcome.OK);
    expect(ed25519.verify(s?.signatures?.[0]?.signature as Uint8Array, msg, edKey())).toBe(true);

    // secrets: the recovery secret key, the signer's identity key and every share in the backup,
    // in hex and base64, never in a command's output nor in any daemon log
    const rk = parseRecoveryKey(readFileSync(join(recoveryDir, 'recovery.key'), 'utf8'));
    const { payload } = decryptBackup(new Uint8Array(readFileSync(backupFile)), rk);
    const secrets = [
      bytesToHex(rk.secretKey),
      payload.identity,
      Buffer.from(payload.identity, 'base64').toString('hex'),
      ...payload.entries.filter((e) => !e.k.endsWith('/meta')).map((e) => e.v.slice(0, 40)),
      PASS,
    ];
    expect(payload.entries.filter((e) => !e.k.endsWith('/meta')).length).toBeGreaterThan(0);
    const everything = [...outputs, ...[...nodes, r].map((n) => readLog(n))].join('\n');
    for (const secret of secrets) expect(everything.includes(secret), 'a secret in the output').toBe(false);
  }, 180_000);

  it('status reports the backup; a refresh moves the key epoch on and the backup is no longer current', async () => {
    const n0 = nodes[0] as NodeSpec;
    const recoveryDir = join(dir, 'offline-n0');
    expect((await cli(['backup', 'keygen', '--out', recoveryDir])).code).toBe(0);
    await stopNode(n0);
    const created = await cli([
      'backup',
      'create',
      '-c',
      n0.config,
      '--recovery-key',
      join(recoveryDir, 'recovery.pub'),
      '--out',
      join(dir, 'signer0.backup'),
    ]);
    expect(created.code, created.out).toBe(0);
    const summary = JSON.parse(created.out) as { createdAt: string; keys: { keyId: string; epoch: number }[] };
    const epoch = summary.keys.find((x) => x.keyId === key.keyId)?.epoch as number;
    await startNode(n0);
    const before = (await client.status(n0.peerId)).keys.find((x) => x.keyId === key.keyId);
    expect(before?.backupEpoch ?? 0).toBe(epoch);
    expect(Number(before?.backupUnixMs)).toBe(Date.parse(summary.createdAt));

    // every running holder of the key (the restored signer when the test above ran)
    const parties = [n0, nodes[1] as NodeSpec, restored ?? (nodes[2] as NodeSpec)];
    const results = await ceremony(parties, {
      kind: CeremonyKind.REFRESH,
      threshold: 2,
      deadlineUnixMs: Date.now() + 60_000,
      keyId: key.keyId as string,
    });
    for (const x of results) expect(x.outcome, x.error).toBe(Outcome.OK);
    const after = (await client.status(n0.peerId)).keys.find((x) => x.keyId === key.keyId);
    expect(after?.backupEpoch ?? 0).toBe(epoch);
    expect(Number(after?.backupUnixMs)).toBe(Date.parse(summary.createdAt));
    await stopNode(n0);
    const store = await SecureStore.open(join(n0.dataDir, 'db'), PASS, { N: 1 << 14, r: 8, p: 1 });
    try {
      const rec = (await listKeys(store)).find((x) => x.keyId === key.keyId);
      expect(rec?.epoch).toBe(epoch + 1);
    } finally {
      await store.close();
    }
  }, 120_000);
});
