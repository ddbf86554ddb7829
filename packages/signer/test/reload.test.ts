/**
 * Reloading a running signer's configuration (issue #29: the Admin device key is known only after
 * the Admin's phone enrolled, and adding it must not need a restart). A real signer daemon process
 * (`signer start`, built binary), the test as its coordinator (signed control requests over
 * libp2p): a policy version signed by an Admin device the signer does not trust yet is refused;
 * the device is added to `trustedAdminDevices` in the config file, `custodian signer reload` (a
 * SIGHUP) makes the same process take it, and the same kind of push is then accepted. A config
 * that does not load is refused by the command before anything is signalled, and by the daemon
 * (keeping its running configuration) when it gets a SIGHUP anyway; removing the device again
 * takes effect the same way.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { bytesToHex } from '@custodian/crypto';
import { ControlClient, createHost, type Host } from '@custodian/signer-client';
import { type PolicyDocument, type SignedPolicy, signPolicy } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { p256 } from '@noble/curves/nist.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  waitFor,
  writeConfig,
} from './cluster.js';

const run = promisify(execFile);
const adminSk = p256.utils.randomSecretKey();
const admin = { deviceId: 'admin-phone', publicKey: bytesToHex(p256.getPublicKey(adminSk, true)) };
const CHAINS = { 'ethereum-local': { family: 'ethereum', chainId: 31337, maxFee: '10000000000000000' } };

function policy(v: number): SignedPolicy {
  const doc: PolicyDocument = {
    policy_id: '0b7e3f5c-52a8-4f0e-9a51-3f1c8d2a6b10',
    version: v,
    profile_id: '11111111-1111-4111-8111-111111111111',
    scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: null },
    whitelist: ['0x70997970C51812dc3A010C7d01b50e0d17dc79C8'],
    per_transaction_limit: '10',
    daily_limit: null,
    approvals: { quorum: 1, above_amount: '0' },
    created_at: `2026-01-0${v}T00:00:00.000Z`,
  };
  return signPolicy(doc, admin.deviceId, adminSk);
}

let dir = '';
let node: NodeSpec;
let coordinator: { peerId: string };
let host: Host;
let client: ControlClient;

/** Push a signed policy version as the coordinator does (control.proto PolicySync): its outcome. */
async function push(p: SignedPolicy): Promise<string> {
  const res = (await client.send(node.peerId, {
    policySync: { signedPoliciesJson: [JSON.stringify(p)] },
  } as never)) as { policySync?: { items?: { outcome: string }[] } };
  return res.policySync?.items?.[0]?.outcome ?? 'NO_ANSWER';
}

/** `custodian signer reload -c <config>` as a separate process: exit code and output. */
async function reloadCommand(): Promise<{ code: number; out: string; err: string }> {
  try {
    const r = await run(process.execPath, [MAIN, 'signer', 'reload', '-c', node.config], {
      env: { ...process.env, CUSTODIAN_TEST_PASS: PASS },
    });
    return { code: 0, out: r.stdout, err: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, out: x.stdout, err: x.stderr };
  }
}

const status = () =>
  JSON.parse(readFileSync(join(node.dataDir, 'status.json'), 'utf8')) as {
    pid: number;
    trustedAdminDevices: unknown;
    reload?: { at: string; ok: boolean; error?: string };
  };

beforeAll(async () => {
  buildSigner();
  dir = tempDir('signer-reload');
  const coordKey = await generateKeyPair('Ed25519');
  coordinator = { peerId: peerIdFromPrivateKey(coordKey).toString() };
  node = initNode(dir, 'signer', await freePort());
  // the guide's first config: enforcement on, no Admin device trusted yet
  writeConfig(node, [], coordinator, { trustedAdminDevices: [], chains: CHAINS });
  await startNode(node);
  host = await createHost({
    privateKey: coordKey,
    listen: [],
    peers: new Map([[node.peerId, [`/ip4/127.0.0.1/tcp/${node.port}`]]]),
    maxFrameBytes: 16 * 1024 * 1024,
    log: pino({ level: 'silent' }),
  });
  client = ControlClient.fromHost(host, Uint8Array.from(coordKey.raw.subarray(0, 32)));
}, 120_000);

afterAll(async () => {
  await host?.stop();
  if (node) await stopNode(node);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('custodian signer reload', () => {
  it('a trusted Admin device added to the config file is trusted by the running process after a reload', async () => {
    const pid = node.proc?.pid;
    expect(status().pid).toBe(pid);
    expect(status().trustedAdminDevices).toEqual([]);
    expect(await push(policy(1))).toBe('ENFORCEMENT_NOT_CONFIGURED');

    writeConfig(node, [], coordinator, { trustedAdminDevices: [admin], chains: CHAINS });
    const r = await reloadCommand();
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ ok: true, applied: ['trustedAdminDevices'], restartRequired: [] });
    expect(await push(policy(1))).toBe('STORED');
    // the same process: no restart
    expect(node.proc?.exitCode).toBeNull();
    expect(status().pid).toBe(pid);
    expect(status().trustedAdminDevices).toEqual([admin]);
    expect(readLog(node)).toContain('"configuration reloaded"');
  });

  it('an invalid config is refused by the command and, on a bare SIGHUP, by the daemon, which keeps its keys', async () => {
    writeConfig(node, [], coordinator, { trustedAdminDevices: [admin], chains: CHAINS });
    expect((await reloadCommand()).code).toBe(0);
    const good = readFileSync(node.config, 'utf8');
    const bad = JSON.parse(good) as Record<string, unknown>;
    bad.trustedAdminDevices = [{ deviceId: 'x', publicKey: 'not a key' }];
    writeFileSync(node.config, JSON.stringify(bad));
    const before = status().reload?.at;
    const r = await reloadCommand();
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/trustedAdminDevices\[0\]\.publicKey/);
    expect(status().reload?.at).toBe(before); // nothing was signalled
    process.kill(node.proc?.pid as number, 'SIGHUP');
    await waitFor(() => status().reload?.at !== before, 20_000, 'the daemon to answer the SIGHUP');
    expect(status().reload).toMatchObject({ ok: false, error: expect.stringMatching(/publicKey/) });
    expect(node.proc?.exitCode).toBeNull();
    // the running list is kept: a newer version by the trusted device is still accepted
    expect(await push(policy(2))).toBe('STORED');
    writeFileSync(node.config, good);
  });

  it('a device removed from the config is no longer trusted after a reload; restart-only changes are reported', async () => {
    writeConfig(node, [], coordinator, { trustedAdminDevices: [], chains: CHAINS, logLevel: 'debug' });
    const cfg = JSON.parse(readFileSync(node.config, 'utf8')) as Record<string, unknown>;
    cfg.listen = `/ip4/127.0.0.1/tcp/${await freePort()}`;
    writeFileSync(node.config, JSON.stringify(cfg));
    const r = await reloadCommand();
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({
      ok: true,
      applied: expect.arrayContaining(['trustedAdminDevices', 'logLevel']),
      restartRequired: ['listen'],
    });
    expect(await push(policy(3))).toBe('ENFORCEMENT_NOT_CONFIGURED');
    expect(node.proc?.exitCode).toBeNull();
  });

  it('a stale status.json naming another process is refused: that process is not signalled', async () => {
    const other = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const stale = { ...node, name: 'stale', dataDir: join(dir, 'stale'), config: join(dir, 'stale.json') };
      mkdirSync(stale.dataDir, { recursive: true });
      writeConfig(stale, [], coordinator, { trustedAdminDevices: [] });
      writeFileSync(join(stale.dataDir, 'status.json'), JSON.stringify({ pid: other.pid }));
      const r = await run(process.execPath, [MAIN, 'signer', 'reload', '-c', stale.config], {
        env: { ...process.env, CUSTODIAN_TEST_PASS: PASS },
      }).then(
        () => ({ code: 0, err: '' }),
        (e: { code: number; stderr: string }) => ({ code: e.code, err: e.stderr }),
      );
      expect(r.code).toBe(1);
      expect(r.err).toMatch(new RegExp(`process ${other.pid} named by .* is not a signer daemon`));
      expect(other.exitCode).toBeNull();
      expect(other.signalCode).toBeNull();
    } finally {
      other.kill('SIGKILL');
    }
  });
});
