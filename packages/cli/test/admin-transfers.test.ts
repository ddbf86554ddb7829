/**
 * `custodian admin policies …` and `custodian admin transfers …` against a real coordinator
 * (PGlite, pipeline off): create a policy from a file, sign it with a device key file, list and
 * cancel a transfer (moved from packages/coordinator/test/transfers.test.ts with the admin CLI).
 * The set-up gives the transfer the state it had there after the file's earlier tests: an Admin
 * device, two approver devices in the master key, a funded wallet and a signed policy that sends
 * a transfer to DEST for approval.
 */

import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { signPolicy } from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollmentBody, phoneKeys, userIdOf } from '../../coordinator/test/device-fixtures.js';
import { ADMIN_EMAIL, type Harness, type Json, startHarness } from '../../coordinator/test/helpers.js';
import { type CliIo, registerAdminCommands } from '../src/admin/index.js';

let h: Harness;
let walletId = '';
let assetId = '';
const adminDevice = p256.utils.randomSecretKey();
const dev1 = p256.utils.randomSecretKey();
const dev2 = p256.utils.randomSecretKey();
let adminDeviceId = '';
const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const OTHER = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
const ETH = 10n ** 18n;

async function enrollDevice(sk: Uint8Array, name: string): Promise<string> {
  const e = await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(await phoneKeys(sk), name) });
  expect(e.status).toBe(201);
  const a = await h.req('POST', `/admin/v1/devices/${e.body.device_id}/approve`, {
    token: h.adminToken,
    body: { fingerprint: e.body.fingerprint, user_id: await userIdOf(h, ADMIN_EMAIL) },
  });
  expect(a.status).toBe(200);
  return e.body.device_id;
}

const P = () => `/admin/v1/profiles/${h.profileId}`;
const A = () => `/api/v1/profiles/${h.profileId}`;

async function transfer(amount: string, dest = DEST) {
  return h.req('POST', `${A()}/transfers`, {
    key: h.apiKey,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: { wallet_id: walletId, asset_id: assetId, destination_address: dest, amount },
  });
}

beforeAll(async () => {
  h = await startHarness({
    masterKey: false,
    coordinator: { transfers: { runPipeline: false, approvalWindowMs: 3600_000 } },
  });
  adminDeviceId = await enrollDevice(adminDevice, 'admin phone');
  const dev1Id = await enrollDevice(dev1, 'approver 1');
  const dev2Id = await enrollDevice(dev2, 'approver 2');
  await h.c.signers.masterKeys.insertMasterKey({
    ceremonyId: null,
    threshold: 2,
    parties: [
      { kind: 'server', id: crypto.randomUUID(), peer: 'x', address: null },
      { kind: 'device', id: dev1Id, peer: 'y', address: null },
      { kind: 'device', id: dev2Id, peer: 'z', address: null },
    ],
    secp256k1: {
      publicKey: secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true),
      chainCode: randomBytes(32),
    },
    ed25519: { publicKey: ed25519.getPublicKey(ed25519.utils.randomSecretKey()), chainCode: randomBytes(32) },
  });
  const chains = await h.req('GET', `${A()}/blockchains?page_size=200`, { key: h.apiKey });
  const blockchainId = chains.body.data.find((b: Json) => b.key === 'ethereum-local').blockchain_id;
  const assets = await h.req('GET', `${A()}/assets?page_size=200`, { key: h.apiKey });
  assetId = assets.body.data.find((a: Json) => a.blockchain === 'ethereum-local' && a.symbol === 'ETH').asset_id;
  const w = await h.req('POST', `${A()}/wallets`, {
    key: h.apiKey,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: { blockchain_ids: [blockchainId], name: 'ops' },
  });
  expect(w.status).toBe(201);
  walletId = w.body.wallet_id;
  await h.c.wallets.balances.setBalance(walletId, assetId, (1000n * ETH).toString());
  // the policy under which a transfer to DEST waits for device approval (PENDING_APPROVAL)
  const policy = await h.req('POST', `${P()}/policies`, {
    token: h.adminToken,
    body: {
      name: 'ETH ops',
      scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: assetId },
      whitelist: [DEST],
      per_transaction_limit: (100n * ETH).toString(),
      daily_limit: (150n * ETH).toString(),
      approvals: { quorum: 2, above_amount: (10n * ETH).toString() },
    },
  });
  expect(policy.status).toBe(201);
  const v = policy.body.versions[0];
  const signed = await h.req('POST', `${P()}/policies/${policy.body.policy_id}/versions/1/signature`, {
    token: h.adminToken,
    body: { device_id: adminDeviceId, signature: signPolicy(v.document, adminDeviceId, adminDevice).signature },
  });
  expect(signed.status).toBe(200);
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('CLI', () => {
  async function cli(...args: string[]): Promise<{ out: string; err: string; code: number }> {
    const out: string[] = [];
    const err: string[] = [];
    const io: CliIo = { out: (x) => out.push(x), err: (x) => err.push(x), env: { HOME: h.dir } };
    const program = new Command('custodian').exitOverride();
    registerAdminCommands(program, io);
    process.exitCode = 0;
    await program.parseAsync([
      'node',
      'custodian',
      'admin',
      '--coordinator-url',
      h.url,
      '--token',
      h.adminToken,
      '--json',
      ...args,
    ]);
    const code = Number(process.exitCode ?? 0);
    process.exitCode = 0;
    return { out: out.join('\n'), err: err.join('\n'), code };
  }

  it('policies create / sign with a device key file / list; transfers list and cancel', async () => {
    const file = join(h.dir, 'policy.json');
    await writeFile(
      file,
      JSON.stringify({ name: 'cli policy', scope: { blockchain: 'ethereum-local' }, whitelist: [OTHER] }),
    );
    const created = await cli('policies', 'create', h.profileId, '--file', file);
    expect(created.code, created.err).toBe(0);
    const policy = JSON.parse(created.out);
    const keyFile = join(h.dir, 'admin-device.key');
    await writeFile(keyFile, `${Buffer.from(adminDevice).toString('hex')}\n`, { mode: 0o600 });
    const signed = await cli(
      'policies',
      'sign',
      h.profileId,
      policy.policy_id,
      '--device-id',
      adminDeviceId,
      '--device-key',
      keyFile,
    );
    expect(signed.code, signed.err).toBe(0);
    expect(JSON.parse(signed.out).active_version).toBe(1);
    expect(signed.out).not.toContain(Buffer.from(adminDevice).toString('hex'));
    const bad = join(h.dir, 'bad.key');
    await writeFile(bad, 'not a key');
    const refused = await cli(
      'policies',
      'sign',
      h.profileId,
      policy.policy_id,
      '--device-id',
      adminDeviceId,
      '--device-key',
      bad,
      '--version',
      '1',
    );
    expect(refused.code).toBe(1);
    const t = (await transfer('1')).body;
    const cancelled = await cli('transfers', 'cancel', h.profileId, t.transfer_id);
    expect(cancelled.code, cancelled.err).toBe(0);
    expect(JSON.parse(cancelled.out).sub_status).toBe('CANCELLED_BY_USER');
    const list = await cli('transfers', 'list', h.profileId, '--status', 'REJECTED');
    expect(JSON.parse(list.out).data.map((x: Json) => x.transfer_id)).toContain(t.transfer_id);
    await cli('policies', 'delete', h.profileId, policy.policy_id);
  });
});
