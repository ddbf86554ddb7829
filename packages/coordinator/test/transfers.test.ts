/**
 * Policies and transfers over real HTTP on PGlite (no signers: the pipeline is not started here;
 * signing, broadcast and the signer-side checks are in transfers-e2e.slow.test.ts):
 * policy roles and device signatures, default deny, whitelist, per-transaction and daily limits
 * (50 parallel transfers at the limit), amount validation, dry run, approvals (quorum of 2 distinct
 * devices, a rejection), expiry with the injectable clock, cancel, and that no API-key route can
 * approve, change a policy or cancel.
 */

import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { signApproval, signPolicy, type TransferIntent } from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCoordinator } from '../src/coordinator.js';
import { PgWatcherStore } from '../src/transfers/watcher-store.js';
import { enrollmentBody, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, type Json, startHarness } from './helpers.js';

let h: Harness;
let walletId = '';
let assetId = '';
let blockchainId = '';
let fmToken = '';
let viewerToken = '';
const adminDevice = p256.utils.randomSecretKey();
const dev1 = p256.utils.randomSecretKey();
const dev2 = p256.utils.randomSecretKey();
let adminDeviceId = '';
let dev1Id = '';
let dev2Id = '';
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

async function user(role: string, email: string): Promise<string> {
  const password = 'a long enough password 123';
  const r = await h.req('POST', '/admin/v1/users', {
    token: h.adminToken,
    body: { email, name: role, role, password },
  });
  expect(r.status).toBe(201);
  return h.login(email, password);
}

const P = () => `/admin/v1/profiles/${h.profileId}`;
const A = () => `/api/v1/profiles/${h.profileId}`;

async function createPolicy(body: Json, token = h.adminToken) {
  return h.req('POST', `${P()}/policies`, { token, body });
}

async function signVersion(policy: Json, version: number, sk = adminDevice, deviceId = adminDeviceId) {
  const v = policy.versions.find((x: Json) => x.version === version);
  const signed = signPolicy(v.document, deviceId, sk);
  return h.req('POST', `${P()}/policies/${policy.policy_id}/versions/${version}/signature`, {
    token: h.adminToken,
    body: { device_id: deviceId, signature: signed.signature },
  });
}

async function transfer(amount: string, dest = DEST, extra: Record<string, unknown> = {}) {
  return h.req('POST', `${A()}/transfers`, {
    key: h.apiKey,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: { wallet_id: walletId, asset_id: assetId, destination_address: dest, amount, ...extra },
  });
}

async function approve(t: Json, sk: Uint8Array, deviceId: string, decision: 'APPROVE' | 'REJECT' = 'APPROVE') {
  const intent = (
    await h.c.db.query<{ intent: TransferIntent }>('SELECT intent FROM transfers WHERE transfer_id = $1', [
      t.transfer_id,
    ])
  )[0]!.intent;
  return h.c.transfers.service.submitApproval(signApproval(intent, decision, deviceId, sk, new Date().toISOString()));
}

beforeAll(async () => {
  h = await startHarness({
    masterKey: false,
    coordinator: { transfers: { runPipeline: false, approvalWindowMs: 3600_000 } },
  });
  adminDeviceId = await enrollDevice(adminDevice, 'admin phone');
  dev1Id = await enrollDevice(dev1, 'approver 1');
  dev2Id = await enrollDevice(dev2, 'approver 2');
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
  blockchainId = chains.body.data.find((b: Json) => b.key === 'ethereum-local').blockchain_id;
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
  fmToken = await user('FINANCE_MANAGER', 'fm@example.com');
  viewerToken = await user('VIEWER', 'viewer@example.com');
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('policies', () => {
  it('default deny: without a policy every transfer ends NO_POLICY_FOUND', async () => {
    const r = await transfer('1', DEST, { external_id: 'ref-1' });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ status: 'NO_POLICY_FOUND', sub_status: 'NO_POLICY_FOUND', external_id: 'ref-1' });
  });

  it('roles: Finance Manager creates, Viewer only reads; a version takes effect only once an Admin device signs it', async () => {
    const body = {
      name: 'ETH ops',
      scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: assetId },
      whitelist: [DEST],
      per_transaction_limit: (100n * ETH).toString(),
      daily_limit: (150n * ETH).toString(),
      approvals: { quorum: 2, above_amount: (10n * ETH).toString() },
    };
    expect((await createPolicy(body, viewerToken)).status).toBe(403);
    const c = await createPolicy(body, fmToken);
    expect(c.status).toBe(201);
    expect(c.body.versions[0].status).toBe('PENDING_SIGNATURE');
    expect(c.body.active_version).toBeNull();
    // unsigned: still default deny
    expect((await transfer('1')).body.status).toBe('NO_POLICY_FOUND');
    // a signature by a non-enrolled key, or over another document, is refused
    const rogue = p256.utils.randomSecretKey();
    expect((await signVersion(c.body, 1, rogue)).status).toBe(422);
    // the Finance Manager cannot attach the Admin device signature
    const v = c.body.versions[0];
    const sig = signPolicy(v.document, adminDeviceId, adminDevice).signature;
    const fmSign = await h.req('POST', `${P()}/policies/${c.body.policy_id}/versions/1/signature`, {
      token: fmToken,
      body: { device_id: adminDeviceId, signature: sig },
    });
    expect(fmSign.status).toBe(403);
    const s = await signVersion(c.body, 1);
    expect(s.status).toBe(200);
    expect(s.body.active_version).toBe(1);
    const list = await h.req('GET', `${P()}/policies`, { token: viewerToken });
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(1);
    const events = await h.c.db.query<{ event_type: string }>(
      `SELECT event_type FROM webhook_events WHERE event_type LIKE 'POLICY_%' ORDER BY occurred_at`,
    );
    expect(events.map((e) => e.event_type)).toEqual(['POLICY_CREATED', 'POLICY_UPDATED']);
  });
});

describe('transfers', () => {
  it('validates amount and destination (422 naming the field, never rounded)', async () => {
    for (const [amount, why] of [
      ['1.0000000000000000001', 'decimals'],
      ['0', 'zero'],
      ['-1', 'negative'],
      ['1e3', 'format'],
      ['1000.5', 'balance'],
    ]) {
      const r = await transfer(amount as string);
      expect(r.status, why).toBe(422);
      expect(r.body.errors[0].field, why).toBe('body.amount');
    }
    const bad = await transfer('1', '0x70997970c51812dc3a010c7d01b50e0d17dc79C8');
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].field).toBe('body.destination_address');
    const missing = await h.req('POST', `${A()}/transfers`, {
      key: h.apiKey,
      body: { wallet_id: walletId, asset_id: assetId, destination_address: DEST, amount: '1' },
    });
    expect(missing.status).toBe(400);
  });

  it('fee cap: the intent carries the blockchain default (no operator cap here), the API shows it in native units', async () => {
    const r = await transfer('0.5');
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ max_fee: '0.01', max_fee_base_units: '10000000000000000', fee_currency: 'ETH' });
    const row = (
      await h.c.db.query<{ intent: TransferIntent }>('SELECT intent FROM transfers WHERE transfer_id = $1', [
        r.body.transfer_id,
      ])
    )[0]!;
    expect(row.intent.max_fee).toBe('10000000000000000');
    if (r.body.status === 'PENDING_APPROVAL')
      expect((await h.req('POST', `${P()}/transfers/${r.body.transfer_id}/cancel`, { token: fmToken })).status).toBe(
        200,
      );
  });

  it('operator fee caps are checked at start: an unknown blockchain or a value that is not base units is refused', async () => {
    const bad: Record<string, string>[] = [
      { 'ethereum-nowhere': '1' },
      { 'ethereum-local': '0.01' },
      { 'ethereum-local': '-5' },
    ];
    for (const feeCaps of bad) {
      await expect(
        createCoordinator({ mode: 'development', mailboxDir: join(h.dir, 'unused'), transfers: { feeCaps } }),
      ).rejects.toThrow(/transfers\.feeCaps\./);
    }
  });

  it('whitelist and per-transaction limit → REJECTED_BY_POLICY; dry run predicts without creating', async () => {
    expect((await transfer('1', OTHER)).body).toMatchObject({
      status: 'REJECTED_BY_POLICY',
      sub_status: 'DESTINATION_NOT_WHITELISTED',
    });
    expect((await transfer('100.000000000000000001')).body).toMatchObject({
      status: 'REJECTED_BY_POLICY',
      sub_status: 'TRANSACTION_LIMIT_EXCEEDED',
    });
    const before = await h.req('GET', `${A()}/transfers?page_size=1`, { key: h.apiKey });
    const dry = await h.req('POST', `${A()}/transfers/dry-run`, {
      key: h.apiKey,
      body: { wallet_id: walletId, asset_id: assetId, destination_address: DEST, amount: '11' },
    });
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({ decision: 'ALLOW', status: 'PENDING_APPROVAL', approvals_required: 2 });
    expect(dry.body.policy.policy_id).toBeDefined();
    const after = await h.req('GET', `${A()}/transfers?page_size=1`, { key: h.apiKey });
    expect(after.body.total).toBe(before.body.total);
  });

  it('quorum of 2 distinct devices; a rejection ends REJECTED_BY_APPROVER; expiry; cancel', async () => {
    const t = (await transfer('11', DEST, { external_id: 'q2' })).body;
    expect(t).toMatchObject({ status: 'PENDING_APPROVAL', approvals_required: 2 });
    const one = await approve(t, dev1, dev1Id);
    expect(one.status).toBe('PENDING_APPROVAL');
    expect(one.approvals_received).toBe(1);
    // the same device again does not count twice
    await expect(approve(t, dev1, dev1Id)).rejects.toThrow(/already decided/);
    // an enrolled device that is not an approver of the key
    await expect(approve(t, adminDevice, adminDeviceId)).rejects.toThrow(/approver/);
    const two = await approve(t, dev2, dev2Id);
    expect(two.status).toBe('PENDING_SIGNATURE');

    const r = (await transfer('1')).body;
    expect(r.approvals_required).toBe(1);
    expect((await approve(r, dev2, dev2Id, 'REJECT')).sub_status).toBe('REJECTED_BY_APPROVER');

    const e = (await transfer('1')).body;
    h.clockOffset.ms += 3600_001;
    expect(await h.c.transfers.pipeline.expire()).toBeGreaterThanOrEqual(1);
    const expired = await h.req('GET', `${A()}/transfers/${e.transfer_id}`, { key: h.apiKey });
    expect(expired.body).toMatchObject({ status: 'EXPIRED', sub_status: 'APPROVAL_EXPIRED' });
    await expect(approve(e, dev1, dev1Id)).rejects.toThrow(/EXPIRED|no approval/);
    h.clockOffset.ms = 0;

    const c = (await transfer('1')).body;
    expect((await h.req('POST', `${P()}/transfers/${c.transfer_id}/cancel`, { token: viewerToken })).status).toBe(403);
    const cancelled = await h.req('POST', `${P()}/transfers/${c.transfer_id}/cancel`, { token: fmToken });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'REJECTED', sub_status: 'CANCELLED_BY_USER' });
    expect((await h.req('POST', `${P()}/transfers/${c.transfer_id}/cancel`, { token: fmToken })).status).toBe(409);

    const types = await h.c.db.query<{ event_type: string }>(
      `SELECT event_type FROM webhook_events WHERE body::jsonb->'data'->>'transfer_id' = $1 ORDER BY occurred_at`,
      [c.transfer_id],
    );
    expect(types.map((x) => x.event_type)).toEqual([
      'TRANSFER_CREATED',
      'TRANSFER_UPDATED',
      'TRANSFER_UPDATED',
      'TRANSFER_FAILED',
    ]);
    const list = await h.req('GET', `${A()}/transfers?status=EXPIRED&wallet_id=${walletId}`, { key: h.apiKey });
    expect(list.body.data.map((x: Json) => x.transfer_id)).toContain(e.transfer_id);
  });

  it('a transfer on a chain without a node waits in PENDING_SIGNATURE with sub_status CHAIN_UNAVAILABLE, said once, still cancellable', async () => {
    // this harness configures no chain: ethereum-local has no adapter
    const t = (await transfer('1')).body;
    expect((await approve(t, dev1, dev1Id)).status).toBe('PENDING_SIGNATURE');
    await h.c.transfers.pipeline.tick();
    const view = await h.req('GET', `${A()}/transfers/${t.transfer_id}`, { key: h.apiKey });
    expect(view.body).toMatchObject({ status: 'PENDING_SIGNATURE', sub_status: 'CHAIN_UNAVAILABLE', tx_hash: null });
    const row = await h.c.db.query<{ error: string; lease_until: Date | null; unsigned: unknown }>(
      'SELECT error, lease_until, unsigned FROM transfers WHERE transfer_id = $1',
      [t.transfer_id],
    );
    expect(row[0]).toEqual({
      error: 'CHAIN_UNAVAILABLE: no node is configured for ethereum-local',
      lease_until: null, // never claimed: nothing was built, and an admin can cancel it
      unsigned: null,
    });
    const events = async () =>
      (
        await h.c.db.query<{ event_type: string; sub: string | null }>(
          `SELECT event_type, body::jsonb->'data'->>'sub_status' AS sub FROM webhook_events
           WHERE body::jsonb->'data'->>'transfer_id' = $1 ORDER BY occurred_at`,
          [t.transfer_id],
        )
      ).map((x) => `${x.event_type} ${x.sub}`);
    const once = await events();
    expect(once.at(-1)).toBe('TRANSFER_UPDATED CHAIN_UNAVAILABLE');
    await h.c.transfers.pipeline.tick();
    expect(await events()).toEqual(once); // a second pass says nothing new
    const cancelled = await h.req('POST', `${P()}/transfers/${t.transfer_id}/cancel`, { token: fmToken });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'REJECTED', sub_status: 'CANCELLED_BY_USER' });
  });

  it('daily limit: 50 parallel transfers at the limit never exceed it', async () => {
    // a second wallet with its own (wallet-scoped, more specific) policy: daily limit 10 ETH
    const w = await h.req('POST', `${A()}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: { blockchain_ids: [blockchainId] },
    });
    const wid = w.body.wallet_id as string;
    await h.c.wallets.balances.setBalance(wid, assetId, (1000n * ETH).toString());
    const p = await createPolicy({
      name: 'limited',
      scope: { wallet_ids: [wid], blockchain: 'ethereum-local', asset_id: assetId },
      whitelist: [DEST],
      per_transaction_limit: null,
      daily_limit: (10n * ETH).toString(),
    });
    await signVersion(p.body, 1);
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        h.req('POST', `${A()}/transfers`, {
          key: h.apiKey,
          headers: { 'idempotency-key': crypto.randomUUID() },
          body: { wallet_id: wid, asset_id: assetId, destination_address: DEST, amount: '0.3' },
        }),
      ),
    );
    expect(results.every((r) => r.status === 201)).toBe(true);
    const accepted = results.filter((r) => r.body.status === 'PENDING_APPROVAL');
    const limited = results.filter((r) => r.body.sub_status === 'DAILY_LIMIT_EXCEEDED');
    expect(accepted.length).toBe(33); // 33 × 0.3 = 9.9 ≤ 10 < 10.2
    expect(limited.length).toBe(17);
    const sum = await h.c.db.query<{ s: string }>(
      `SELECT sum(amount)::text AS s FROM transfers WHERE wallet_id = $1 AND status NOT IN
         ('REJECTED','REJECTED_BY_POLICY','NO_POLICY_FOUND','EXPIRED','FAILED')`,
      [wid],
    );
    expect(BigInt(sum[0]!.s) <= 10n * ETH).toBe(true);
  }, 60_000);

  it('no API-key route approves, changes a policy or cancels', async () => {
    const t = (await transfer('1')).body;
    const attempts: [string, string][] = [
      ['POST', `${A()}/transfers/${t.transfer_id}/approve`],
      ['POST', `${A()}/transfers/${t.transfer_id}/approvals`],
      ['POST', `${A()}/transfers/${t.transfer_id}/cancel`],
      ['POST', `${A()}/transfers/${t.transfer_id}/fee-bump`],
      ['POST', `${A()}/policies`],
      ['PUT', `${A()}/policies/${t.transfer_id}`],
      ['POST', `${P()}/transfers/${t.transfer_id}/cancel`],
      ['POST', `${P()}/policies`],
    ];
    for (const [m, path] of attempts) {
      const r = await h.req(m, path, { key: h.apiKey, body: {} });
      expect([401, 404], `${m} ${path}`).toContain(r.status);
    }
    // the route table has no approval, cancel or policy route under /api
    const api = h.c.routes.filter((r) => r.url.startsWith('/api/'));
    expect(api.some((r) => /approv|cancel|polic|fee-bump/.test(r.url))).toBe(false);
    expect((await h.req('GET', `${A()}/transfers/${t.transfer_id}`, { key: h.apiKey })).body.status).toBe(
      'PENDING_APPROVAL',
    );
  });
});

describe('admin views (issue #24 dashboard): transfer history, wallet archive state and deposits', () => {
  it('the admin transfer has timeline, approvals (device, owner) and signing attempts; the REST object does not', async () => {
    const t = (await transfer('11', DEST, { external_id: 'views' })).body;
    expect(t.approvals_required).toBe(2);
    await approve(t, dev1, dev1Id);
    await approve(t, dev2, dev2Id, 'REJECT');
    // a SIGN ceremony as the signing gateway records it (the pipeline is not started in this suite)
    const server = crypto.randomUUID();
    await h.c.db.query(
      `INSERT INTO signing_attempts (ceremony_id, key_id, algorithm, signing_set, transfer_id, started_at, finished_at, outcome)
       VALUES ($1, 'k', 'cggmp21', $2, $3, now(), now(), 'ABORTED')`,
      ['ab'.repeat(24), `device:${dev1Id},server:${server}`, t.transfer_id],
    );
    const r = await h.req('GET', `${P()}/transfers/${t.transfer_id}`, { token: viewerToken });
    expect(r.status).toBe(200);
    const final = r.body.status;
    expect(r.body.timeline.map((e: Json) => [e.status, e.sub_status])).toEqual([
      ['PENDING', null],
      ['PENDING_APPROVAL', null],
      [final, r.body.sub_status],
    ]);
    expect(final).toBe('REJECTED');
    for (const e of r.body.timeline) expect(Number.isNaN(Date.parse(e.at))).toBe(false);
    expect(r.body.approvals).toEqual([
      expect.objectContaining({ device_id: dev1Id, device_name: 'approver 1', decision: 'APPROVE', round: 0 }),
      expect.objectContaining({ device_id: dev2Id, device_name: 'approver 2', decision: 'REJECT', round: 0 }),
    ]);
    expect(r.body.approvals[0].user_email).toBe(ADMIN_EMAIL);
    expect(r.body.signing).toEqual([
      expect.objectContaining({
        attempt: 1,
        ceremony_id: 'ab'.repeat(24),
        outcome: 'ABORTED',
        signers: [
          { kind: 'device', id: dev1Id, name: 'approver 1' },
          { kind: 'server', id: server, name: null },
        ],
      }),
    ]);
    const rest = await h.req('GET', `${A()}/transfers/${t.transfer_id}`, { key: h.apiKey });
    expect(rest.body.status).toBe(final);
    expect(rest.body).not.toHaveProperty('timeline');
    expect(rest.body).not.toHaveProperty('approvals');
    expect(rest.body).not.toHaveProperty('signing');
  });

  it('the admin wallet says archived_at; deposits lists detected incoming transactions newest first, paginated', async () => {
    const w = await h.req('GET', `${P()}/wallets/${walletId}`, { token: viewerToken });
    expect(w.status).toBe(200);
    expect(w.body.archived_at).toBeNull();
    expect(w.body.addresses.length).toBeGreaterThan(0);
    const address = w.body.addresses[0].address as string;
    const empty = await h.req('GET', `${P()}/wallets/${walletId}/deposits`, { token: viewerToken });
    expect(empty.body).toEqual({ data: [], page: 1, page_size: 50, total: 0 });

    const store = new PgWatcherStore(h.c.db, () => new Date());
    const detected = (txid: string, amount: string, height: number | null, direction = 'incoming' as const) => ({
      type: 'transaction_detected' as const,
      chain: 'ethereum-local',
      txid,
      address,
      asset: 'native',
      direction,
      amount,
      block_height: height,
    });
    const poll = (height: number, events: ReturnType<typeof detected>[]) =>
      store.commit('ethereum-local', {
        cursor: { height, hash: `0x${height}` },
        seen: [],
        balances: [],
        utxosAdded: [],
        utxosSpent: [],
        events,
      });
    await poll(100, [detected('0xaa', '1500000000000000000', 100)]);
    await new Promise((res) => setTimeout(res, 5));
    await poll(105, [
      detected('0xbb', '2', null),
      { ...detected('0xcc', '7', 105), direction: 'outgoing' as unknown as 'incoming' },
    ]);

    const d = await h.req('GET', `${P()}/wallets/${walletId}/deposits`, { token: viewerToken });
    expect(d.status).toBe(200);
    expect(d.body.total).toBe(2);
    expect(d.body.data).toEqual([
      expect.objectContaining({
        tx_hash: '0xbb',
        amount: '0.000000000000000002',
        amount_base_units: '2',
        status: 'UNCONFIRMED',
        confirmations: 0,
        address,
        asset_id: assetId,
        asset_symbol: 'ETH',
      }),
      expect.objectContaining({
        tx_hash: '0xaa',
        amount: '1.5',
        status: 'CONFIRMED',
        block_height: 100,
        confirmations: 6,
        blockchain_id: blockchainId,
      }),
    ]);
    const page2 = await h.req('GET', `${P()}/wallets/${walletId}/deposits?page=2&page_size=1`, { token: viewerToken });
    expect(page2.body.data.map((x: Json) => x.tx_hash)).toEqual(['0xaa']);
    expect(page2.body.total).toBe(2);

    const other = await h.req('GET', `${P()}/wallets/${crypto.randomUUID()}/deposits`, { token: viewerToken });
    expect(other.status).toBe(404);
    expect(other.body.code ?? other.body.title).toBeTruthy();

    await h.req('POST', `${P()}/wallets/${walletId}/archive`, { token: h.adminToken });
    const archived = await h.req('GET', `${P()}/wallets/${walletId}`, { token: viewerToken });
    expect(Number.isNaN(Date.parse(archived.body.archived_at))).toBe(false);
    await h.req('POST', `${P()}/wallets/${walletId}/unarchive`, { token: h.adminToken });
    expect((await h.req('GET', `${P()}/wallets/${walletId}`, { token: viewerToken })).body.archived_at).toBeNull();
  });
});
