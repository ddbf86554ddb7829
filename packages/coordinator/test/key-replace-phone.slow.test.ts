/**
 * Issue #22, first test: a lost phone replaced end to end with REAL components — a coordinator
 * (PGlite, its own libp2p host, device hub and pipeline), two server signer processes and three
 * mobile simulator processes (packages/mobile `mobile run`, enforcement on: the Admin device key
 * pinned), CGGMP21 ECDSA at SECURITY_112 from the committed TEST-ONLY safe primes (the second aux
 * info of the members kept by the reshare comes from their background prime pools), and anvil.
 *
 * Master key 3-of-4 over {server A, server B, phone 1, phone 2}; a wallet funded on anvil; phone 3
 * enrolled; replace-signer phone 1 → phone 3 signed by the Admin's device. Then: the same public
 * keys and address; the old set's presignatures are gone and the pool refills for the new set;
 * phone 1 removed (revoked at the signers); a transfer approved by phone 3 is signed with phone 3
 * in the signing set and arrives on anvil; phone 1's approval is refused at the coordinator and at
 * the signers; a ceremony naming the old set is refused; a deposit after the change is detected.
 *
 * Longer than 400 lines: one scenario whose steps build on each other (a single test, ~2 minutes),
 * plus the phone processes' enrolment and supervision it needs (not shared by another test).
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type EthereumContext, recomputeEthereumDigests } from '@custodian/chains';
import { fingerprint } from '@custodian/signer-client';
import { CeremonyKind, deviceSign, Outcome, type SignedPolicy, signApproval } from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { bytesToHex, hexToBytes } from '@noble/curves/utils.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signalTree } from '../../../test/helpers/processes.js';
import { type AnvilNode, startAnvil } from '../../chains/test/helpers/anvil.js';
import { unlockVault } from '../../mobile/src/vault.js';
import {
  freePort,
  initNode,
  type NodeSpec,
  ROOT,
  readLog,
  startNode,
  stopNode,
  tempDir,
  writeConfig,
} from '../../signer/test/cluster.js';
import { signingSetKey } from '../src/signing/presignature-reconcile.js';
import { coordinatorPeerId } from '../src/signing/services.js';
import { signingParties } from '../src/transfers/signing-attempt.js';
import { enrollPhone, type PhoneKeys, phoneKeys, userIdOf } from './device-fixtures.js';
import { TEST_CHAINS } from './enforcing-signers.js';
import { ADMIN_EMAIL, type Harness, type Json, startHarness } from './helpers.js';
import { settled } from './key-env.js';
import { CoordinatorApi, intentOf, jsonRpc } from './pipeline-harness.js';

const MOBILE_MAIN = join(ROOT, 'packages/mobile/dist/main.js');
const PIN = '482916';
const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const FUNDER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'; // anvil's unlocked dev account 0
const ETH = 10n ** 18n;

interface PhoneProc {
  name: string;
  dir: string;
  deviceId: string;
  fingerprint: string;
  mpcPeerId: string;
  seed: string;
  proc?: ChildProcess;
  stdout: string;
  logFile: string;
}

let dir = '';
let anvil: AnvilNode;
let h: Harness;
let nodes: NodeSpec[] = [];
const phones: PhoneProc[] = [];
const api = new CoordinatorApi();
let admin: { keys: PhoneKeys; deviceId: string };
const serverIds: string[] = [];
let chainsFile = '';
let primes: string[] = [];

const rpc = (method: string, params: unknown[] = []) => jsonRpc(anvil.url, method, params);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, f: () => Promise<T | undefined> | T | undefined, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timeout waiting for ${what}`);
    await sleep(250);
  }
}

/** Enrol a phone with the mobile CLI and approve it (Admin, by fingerprint) for the Admin user. */
async function enrollMobile(name: string, seedPrimes: string[]): Promise<PhoneProc> {
  const mdir = join(dir, name);
  mkdirSync(mdir, { recursive: true });
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [MOBILE_MAIN, 'mobile', 'enroll', '--url', h.url, '--data', mdir, '--pin-file', join(dir, 'pin')],
    { encoding: 'utf8' },
  );
  const r = JSON.parse(stdout.trim().split('\n').at(-1) as string) as {
    device_id: string;
    fingerprint: string;
    mpc_peer_id: string;
  };
  const a = await h.req('POST', `/admin/v1/devices/${r.device_id}/approve`, {
    token: h.adminToken,
    body: { fingerprint: r.fingerprint, user_id: await userIdOf(h, ADMIN_EMAIL) },
  });
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  const seed = join(dir, `${name}-primes.json`);
  writeFileSync(seed, JSON.stringify({ safePrimes: seedPrimes }));
  const p: PhoneProc = {
    name,
    dir: mdir,
    deviceId: r.device_id,
    fingerprint: r.fingerprint,
    mpcPeerId: r.mpc_peer_id,
    seed,
    stdout: '',
    logFile: join(dir, `${name}.log`),
  };
  phones.push(p);
  return p;
}

/** Run the phone (auto-approve, enforcement on: the Admin device key pinned, prime pool of 2). */
async function runMobile(p: PhoneProc): Promise<void> {
  const log = createWriteStream(p.logFile, { flags: 'a' });
  const before = p.stdout.length;
  const proc = spawn(
    process.execPath,
    [
      MOBILE_MAIN,
      'mobile',
      'run',
      '--data',
      p.dir,
      '--pin-file',
      join(dir, 'pin'),
      '--auto-approve',
      '--store-scrypt-n',
      '1024',
      '--ecdsa-level',
      'SECURITY_112',
      '--prime-seed-file',
      p.seed,
      '--prime-pool',
      '2',
      '--trusted-admin-key',
      admin.keys.publicKey,
      '--chains',
      chainsFile,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  proc.stdout?.on('data', (b: Buffer) => {
    p.stdout += b.toString();
  });
  proc.stderr?.pipe(log);
  p.proc = proc;
  await until(
    `${p.name} connected`,
    () => p.stdout.slice(before).includes('"event":"connected"') || proc.exitCode !== null,
    60_000,
  );
  if (proc.exitCode !== null) throw new Error(`${p.name} exited: ${readFileSync(p.logFile, 'utf8')}`);
}

async function stopMobile(p: PhoneProc): Promise<void> {
  const c = p.proc;
  if (!c || c.exitCode !== null || c.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const t = setTimeout(() => signalTree(c.pid as number, 'SIGKILL'), 20_000);
    c.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    signalTree(c.pid as number, 'SIGTERM');
  });
}

/** Whether a signer's or phone's log shows its prime pool refilled to 2 ("safe prime added to the pool", pool 2). */
const refilled = (log: string) => log.split('\n').some((l) => l.includes('safe prime added') && l.includes('"pool":2'));

const masterKeys = async (): Promise<Json[]> =>
  (await h.req('GET', '/admin/v1/master-keys', { token: h.adminToken })).body.data;

const pooled = async () =>
  h.c.db.query<{ key_id: string; signing_set: string }>('SELECT key_id, signing_set FROM presignatures');

beforeAll(async () => {
  execFileSync(join(ROOT, 'node_modules/.bin/tsc'), ['-b', 'packages/signer', 'packages/mobile'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  dir = tempDir('key-replace-phone');
  writeFileSync(join(dir, 'pin'), `${PIN}\n`, { mode: 0o600 });
  chainsFile = join(dir, 'chains.json');
  writeFileSync(chainsFile, JSON.stringify(TEST_CHAINS));
  primes = (
    JSON.parse(readFileSync(join(ROOT, 'packages/paillier/test/fixtures/test-only-safe-primes.json'), 'utf8')) as {
      safePrimes1024: string[];
    }
  ).safePrimes1024;
  anvil = await startAnvil();
  const coordDir = join(dir, 'coord');
  const coordPeer = await coordinatorPeerId(coordDir);
  admin = { keys: await phoneKeys(), deviceId: '' };
  // server signers A and B: enforcement on (the Admin device pinned), fixture primes, a pool of 2
  const ports = [await freePort(), await freePort()];
  nodes = ports.map((port, i) => initNode(dir, `signer${i}`, port));
  nodes.forEach((n, i) => {
    const seed = join(dir, `signer${i}-primes.json`);
    writeFileSync(seed, JSON.stringify({ safePrimes: primes.slice(2 * i, 2 * i + 2) }));
    writeConfig(
      n,
      nodes,
      { peerId: coordPeer },
      {
        ecdsa: { level: 'SECURITY_112', primePool: 2, primeSeedFile: seed },
        trustedAdminDevices: [{ deviceId: 'admin-phone', publicKey: admin.keys.publicKey }],
        chains: TEST_CHAINS,
      },
    );
  });
  await Promise.all(nodes.map((n) => startNode(n)));
  h = await startHarness({
    masterKey: false,
    coordinator: {
      dataDir: coordDir,
      signing: { enabled: true, presignaturePool: 2 },
      chains: { 'ethereum-local': { rpcUrl: anvil.url, pollIntervalMs: 300 } },
      transfers: {
        trustedAdminKeys: [admin.keys.publicKey],
        pipeline: { pollMs: 200, confirmationRecheckMs: 200, signDeadlineMs: 180_000 },
      },
      keys: { commitRetry: { initialMs: 200, maxMs: 1000 } },
      admin: {
        stepUpTtlMs: 8 * 3600_000,
        sessionIdleMs: 8 * 3600_000,
        scrypt: { N: 1 << 10, r: 8, p: 1 },
        loginRateLimit: { max: 10_000, windowMs: 60_000 },
        accountLockout: { maxFailures: 1000, windowMs: 60_000 },
        maxOpenChallenges: 100,
        emailCodes: { max: 1000, windowMs: 60_000 },
      },
    },
  });
  Object.assign(api, { url: h.url, token: h.adminToken, apiKey: h.apiKey, profileId: h.profileId });
  admin.deviceId = await enrollPhone(h, admin.keys, 'admin phone', { userId: await userIdOf(h, ADMIN_EMAIL) });
  for (const n of nodes) {
    const r = await h.req('POST', '/admin/v1/signers', {
      token: h.adminToken,
      body: {
        name: n.name,
        peer_id: n.peerId,
        address: `/ip4/127.0.0.1/tcp/${n.port}`,
        fingerprint: fingerprint((peerIdFromString(n.peerId).publicKey as { raw: Uint8Array }).raw),
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    serverIds.push(r.body.signer_id);
  }
  // phones 1 and 2: the fixture's third and fourth prime pairs
  for (const k of [1, 2]) await runMobile(await enrollMobile(`phone${k}`, primes.slice(2 * (k + 1), 2 * (k + 2))));
}, 300_000);

afterAll(async () => {
  await h?.close().catch(() => undefined);
  await Promise.all(phones.map((p) => stopMobile(p)));
  await Promise.all(nodes.map((n) => stopNode(n)));
  await anvil?.stop();
  if (dir && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('replace a lost phone (3-of-4: 2 servers + 2 phones), real processes and anvil', () => {
  it('same keys and address, the new phone signs a transfer, the old phone and its approvals are refused', async () => {
    const [phone1, phone2] = phones as [PhoneProc, PhoneProc];
    const [A, B] = serverIds as [string, string];
    // ---- master key 3-of-4 (ECDSA, Ed25519, Taproot) ----
    const dkg = await h.req('POST', '/admin/v1/master-keys', {
      token: h.adminToken,
      body: {
        threshold: 3,
        signers: [
          { kind: 'server', id: A },
          { kind: 'server', id: B },
          { kind: 'device', id: phone1.deviceId },
          { kind: 'device', id: phone2.deviceId },
        ],
      },
    });
    expect(dkg.status, JSON.stringify(dkg.body)).toBe(202);
    const made = await settled(h, dkg.body.ceremony_id);
    expect(made.status, JSON.stringify(made)).toBe('SUCCEEDED');
    const masterKeyId = made.master_key_id as string;
    const K = `/admin/v1/master-keys/${masterKeyId}`;
    const before = (await masterKeys()).find((m) => m.master_key_id === masterKeyId);
    expect(before.secp256k1_public_key).toMatch(/^0[23][0-9a-f]{64}$/);

    // ---- wallet, address, funded on anvil; a policy signed by the Admin device ----
    const assetId = await api.assetId((a) => a.blockchain === 'ethereum-local' && a.kind === 'native');
    const w = await api.createWallet('ethereum-local');
    expect(w.status, JSON.stringify(w.body)).toBe(201);
    const walletId = w.body.wallet_id as string;
    const source = w.body.addresses[0].address as string;
    await rpc('eth_sendTransaction', [{ from: FUNDER, to: source, value: `0x${(20n * ETH).toString(16)}` }]);
    await api.waitBalance(walletId, assetId, '20', 60_000);
    const policy: SignedPolicy = await api.signedPolicy(
      {
        name: 'eth',
        scope: { blockchain: 'ethereum-local', asset_id: assetId },
        whitelist: [DEST],
        per_transaction_limit: (5n * ETH).toString(),
        daily_limit: (10n * ETH).toString(),
      },
      { deviceId: admin.deviceId, secretKey: admin.keys.sk },
    );
    // the old set's presignatures exist before the change (the pool serves {A, B, phone 1})
    const oldSet = signingSetKey(signingParties(before.parties, 3));
    expect(oldSet).toContain(`device:${phone1.deviceId}`);
    await until(
      'presignatures of the old set',
      async () => (await pooled()).some((p) => p.signing_set === oldSet),
      150_000,
    );

    // … held by the signers too (the coordinator holds ids only)
    const control = h.c.signing?.control;
    if (!control) throw new Error('no control client');
    const keyId = (await pooled())[0]!.key_id;
    const oldPeers = [nodes[0]!.peerId, nodes[1]!.peerId, phone1.mpcPeerId];
    const heldBefore = await control.presignatureInventory(nodes[0]!.peerId, keyId, oldPeers);
    expect(heldBefore.length).toBeGreaterThan(0);

    // ---- phone 3 enrolled and approved; the members' prime pools refilled (second aux info) ----
    const phone3 = await enrollMobile('phone3', primes.slice(8, 10));
    await runMobile(phone3);
    await until(
      'the prime pools of A, B and phone 2 refilled',
      () =>
        nodes.every((n) => refilled(readLog(n))) && refilled(readFileSync(phone2.logFile, 'utf8')) ? true : undefined,
      240_000,
    );

    // ---- replace-signer phone 1 → phone 3, signed by the Admin's device ----
    const c = await h.req('POST', `${K}/key-changes`, {
      token: h.adminToken,
      body: {
        reason: 'replace-signer',
        old: { kind: 'device', id: phone1.deviceId },
        new: { kind: 'device', id: phone3.deviceId },
      },
    });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    // the document the Admin signs: every key of the master key as the old set reports it (Taproot
    // too), unchanged by the change; phone 3 replaces phone 1 among the approver devices
    const docKeys = new Map<string, string>(
      c.body.document.public_keys.map((k: Json) => [k.algorithm, k.public_key] as [string, string]),
    );
    expect([...docKeys.keys()].sort()).toEqual(['ED25519', 'SECP256K1_ECDSA', 'SECP256K1_TAPROOT']);
    expect(docKeys.get('SECP256K1_ECDSA')).toBe(before.secp256k1_public_key);
    expect(docKeys.get('ED25519')).toBe(before.ed25519_public_key);
    expect(docKeys.get('SECP256K1_TAPROOT')).toMatch(/^0[23][0-9a-f]{64}$/);
    expect(c.body.document.approver_devices.map((d: Json) => d.device_id).sort()).toEqual(
      [phone2.deviceId, phone3.deviceId].sort(),
    );
    const s = await h.req('POST', `${K}/key-changes/${c.body.change_id}/signature`, {
      token: h.adminToken,
      body: { device_id: admin.deviceId, signature: bytesToHex(deviceSign(hexToBytes(c.body.digest), admin.keys.sk)) },
    });
    expect(s.status, JSON.stringify(s.body)).toBe(202);
    const reshare = await settled(h, s.body.ceremony_id);
    expect(reshare.status, JSON.stringify(reshare)).toBe('SUCCEEDED');
    // a test signature under the new set for every key type, verified by the coordinator
    expect(reshare.result.signatures.map((x: Json) => x.algorithm).sort()).toEqual([
      'ED25519',
      'SECP256K1_ECDSA',
      'SECP256K1_TAPROOT',
    ]);
    // … each verified under the key of the document (Taproot: its x-only form or key-path tweak, keys/verify.ts)
    expect(reshare.result.signatures.every((x: Json) => x.verified === true)).toBe(true);
    const change = await until(
      'the key change SUCCEEDED',
      async () => {
        const v = (await h.req('GET', `${K}/key-changes/${c.body.change_id}`, { token: h.adminToken })).body;
        return v.status === 'SUCCEEDED' || v.status === 'FAILED' ? v : undefined;
      },
      60_000,
    );
    expect(change.status, JSON.stringify(change)).toBe('SUCCEEDED');

    // ---- same public keys, same address ----
    const after = (await masterKeys()).find((m) => m.master_key_id === masterKeyId);
    expect(after.secp256k1_public_key).toBe(before.secp256k1_public_key);
    expect(after.secp256k1_chain_code).toBe(before.secp256k1_chain_code);
    expect(after.ed25519_public_key).toBe(before.ed25519_public_key);
    expect(after.ed25519_chain_code).toBe(before.ed25519_chain_code);
    expect(after.parties.map((p: Json) => p.id).sort()).toEqual([A, B, phone2.deviceId, phone3.deviceId].sort());
    const addr = await api.req('GET', `/api/v1/profiles/${h.profileId}/wallets/${walletId}/addresses`, {
      key: h.apiKey,
    });
    expect(addr.status, JSON.stringify(addr.body)).toBe(200);
    expect(addr.body.data.map((a: Json) => [a.address, a.public_key])).toEqual([
      [source, w.body.addresses[0].public_key],
    ]);

    // ---- the pool: the old set's presignatures discarded at the commit, the new set's refilled ----
    expect((await pooled()).filter((p) => p.signing_set === oldSet)).toEqual([]);
    // the signers deleted theirs at the commit (made with the old shares): the old set is no set of the key
    for (const n of nodes)
      await expect(control.presignatureInventory(n.peerId, keyId, oldPeers)).rejects.toThrow(
        /not all are parties of the key/,
      );
    const newSet = signingSetKey(signingParties(after.parties, 3));
    await until(
      'presignatures of the new set',
      async () => (await pooled()).some((p) => p.signing_set === newSet),
      150_000,
    );
    expect((await pooled()).every((p) => !p.signing_set.includes(phone1.deviceId))).toBe(true);
    const newPeers = signingParties(after.parties, 3).map((p) =>
      p.kind === 'server' ? nodes[serverIds.indexOf(p.id)]!.peerId : phones.find((x) => x.deviceId === p.id)!.mpcPeerId,
    );
    const heldAfter = await control.presignatureInventory(nodes[0]!.peerId, keyId, newPeers);
    expect(heldAfter.length).toBeGreaterThan(0);
    const oldIds = new Set(heldBefore.map((x) => x.id));
    expect(heldAfter.filter((x) => oldIds.has(x.id))).toEqual([]);

    // ---- phone 1 removed: revoked at every signer before the answer ----
    const del = await h.req('DELETE', `/admin/v1/devices/${phone1.deviceId}`, { token: h.adminToken });
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    const acks = await h.c.db.query<{ peer_id: string }>('SELECT peer_id FROM revocation_acks WHERE device_id = $1', [
      phone1.deviceId,
    ]);
    expect(acks.map((a) => a.peer_id)).toEqual(expect.arrayContaining(nodes.map((n) => n.peerId)));
    // the thief's copy of phone 1: its device key, read from its vault with the PIN
    const stolen = await unlockVault(phone1.dir, PIN);
    const phone1Key = Uint8Array.from(stolen.deviceSecretKey);
    stolen.wipe();
    await until('phone 1 stopped (revoked)', () => phone1.proc?.exitCode !== null || undefined, 30_000);
    expect(phone1.stdout).toContain('"event":"revoked"');

    // ---- a transfer approved and signed with phone 3 (phone 2 offline: the set is {A, B, phone 3}) ----
    await stopMobile(phone2);
    const destBefore = BigInt(await rpc('eth_getBalance', [DEST, 'latest']));
    const t = await api.req('POST', `/api/v1/profiles/${h.profileId}/transfers`, {
      key: h.apiKey,
      idem: true,
      body: { wallet_id: walletId, asset_id: assetId, destination_address: DEST, amount: '1' },
    });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    const done = await api.waitStatus(
      t.body.transfer_id,
      (x) => x.delivered_at !== null || ['FAILED', 'REJECTED'].includes(x.status),
    );
    expect(done.status, JSON.stringify(done)).toBe('SENT');
    expect(BigInt(await rpc('eth_getBalance', [DEST, 'latest'])) - destBefore).toBe(ETH);
    const receipt = await rpc('eth_getTransactionReceipt', [done.tx_hash]);
    expect(receipt.status).toBe('0x1');
    expect(receipt.from.toLowerCase()).toBe(source.toLowerCase());
    const approvals = await h.c.db.query<{ device_id: string }>(
      'SELECT device_id::text AS device_id FROM transfer_approvals WHERE transfer_id = $1',
      [t.body.transfer_id],
    );
    expect(approvals.map((a) => a.device_id)).toEqual([phone3.deviceId]);
    const attempts = await h.c.db.query<{ signing_set: string; outcome: string | null }>(
      `SELECT signing_set, outcome FROM signing_attempts WHERE algorithm = 'SECP256K1_ECDSA' ORDER BY started_at`,
    );
    expect(attempts.at(-1)?.signing_set).toBe(
      signingSetKey([
        { kind: 'server', id: A },
        { kind: 'server', id: B },
        { kind: 'device', id: phone3.deviceId },
      ]),
    );

    // ---- phone 1's approval refused at the coordinator (a transfer awaiting approval: phone 3 off) ----
    await stopMobile(phone3);
    const t2 = await api.req('POST', `/api/v1/profiles/${h.profileId}/transfers`, {
      key: h.apiKey,
      idem: true,
      body: { wallet_id: walletId, asset_id: assetId, destination_address: DEST, amount: '0.5' },
    });
    expect(t2.body.status, JSON.stringify(t2.body)).toBe('PENDING_APPROVAL');
    const intent2 = await intentOf(h.c, t2.body.transfer_id);
    await expect(
      h.c.transfers.service.submitApproval(
        signApproval(intent2, 'APPROVE', phone1.deviceId, phone1Key, new Date().toISOString()),
      ),
    ).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    expect((await api.getTransfer(t2.body.transfer_id)).status).toBe('PENDING_APPROVAL');

    // ---- … and at the signers: the compromised coordinator sends phone 1's approval straight to them ----
    await runMobile(phone3);
    const gateway = h.c.signing?.gateway;
    if (!gateway) throw new Error('no gateway');
    const ctx: EthereumContext = {
      chainId: 31337,
      from: source,
      fromPublicKey: (
        await h.c.db.query<{ public_key: string }>('SELECT public_key FROM addresses WHERE wallet_id = $1', [walletId])
      )[0]!.public_key,
      fromPath: [...intent2.derivation_path],
      nonce: 1000,
      gas: '21000',
      maxFeePerGas: '3000000000',
      maxPriorityFeePerGas: '1000000000',
    };
    const forged = { ...intent2, transfer_id: crypto.randomUUID(), created_at: new Date().toISOString() };
    const send = (approvals: ReturnType<typeof signApproval>[]) =>
      gateway.sign({
        keyId: intent2.key_id,
        algorithm: 'SECP256K1_ECDSA',
        parties: [
          { kind: 'server', id: A },
          { kind: 'server', id: B },
          { kind: 'device', id: phone3.deviceId },
        ],
        derivationPath: [...intent2.derivation_path],
        digests: recomputeEthereumDigests(
          { asset: { kind: 'native' }, destination: forged.destination_address, amount: BigInt(forged.amount) },
          ctx,
        ).map((d) => d.digest),
        evidence: {
          intent: forged,
          policy,
          approvals,
          chainContext: JSON.stringify(ctx),
        },
        deadline: new Date(Date.now() + 60_000),
      });
    // the control: no approval at all is refused for its count (the policy asks for one)
    expect(await send([])).toMatchObject({ ok: false, reason: 'REFUSED', refusal: 'INSUFFICIENT_APPROVALS' });
    const r = await send([signApproval(forged, 'APPROVE', phone1.deviceId, phone1Key, new Date().toISOString())]);
    // an approval not from one of the key's approver devices (APPROVAL_SIGNATURE_INVALID, wire/refusals.ts)
    expect(r, JSON.stringify(r)).toMatchObject({ ok: false, reason: 'REFUSED', refusal: 'APPROVAL_SIGNATURE_INVALID' });

    // ---- phone 1's share takes no part: a drill naming the old set is refused by the signers ----
    const oldParties = oldPeers.map((peerId) => ({ peerId }));
    for (const n of nodes) {
      const d = await control.startCeremony(
        n.peerId,
        {
          ceremonyId: crypto.getRandomValues(new Uint8Array(16)),
          kind: CeremonyKind.DRILL,
          parties: oldParties,
          threshold: 3,
          deadlineUnixMs: Date.now() + 30_000,
          keyId: intent2.key_id,
        },
        30_000,
      );
      expect(d.outcome, JSON.stringify(d)).toBe(Outcome.REFUSED);
      expect(d.error).toMatch(/^parties\[2\]: not a party of the key/); // phone 1
    }

    // ---- a deposit to the (unchanged) address after the change is detected ----
    const txHash = await rpc('eth_sendTransaction', [
      { from: FUNDER, to: source, value: `0x${(2n * ETH).toString(16)}` },
    ]);
    await until(
      'the deposit detected',
      async () =>
        (
          await h.c.db.query(
            `SELECT 1 FROM webhook_events WHERE event_type = 'TRANSACTION_DETECTED' AND lower(body) LIKE $1`,
            [`%${String(txHash).toLowerCase()}%`],
          )
        ).length > 0 || undefined,
      60_000,
    );
  }, 900_000);
});
