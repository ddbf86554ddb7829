/**
 * TRON transfers (TRX and TRC-20) through the coordinator's pipeline with REAL components: three
 * signer processes (CGGMP21 2-of-3 ECDSA, enforcement on: pinned Admin device key, approver
 * devices learnt at the master key ceremony), the signer gateway over libp2p, a coordinator on
 * PGlite persisted to a folder — and, as the chain, the TEST-ONLY TRON-shaped HTTP model of
 * packages/chains/test/helpers/tron-model.ts (no TRON node runs offline here; the model checks
 * each broadcast transaction's signature against its owner and computes txID = SHA-256(raw_data)
 * itself, so it is not a TRON node, but what it accepts is a signed TRON protobuf transaction).
 *
 * - deposits (TRX, TRC-20) detected by the TRON watcher into the wallet balances;
 * - TRX: policy, one device approval, threshold signature, broadcast to the node, SENT, mined,
 *   confirmed (TRANSFER_DELIVERED), the TRX arrives;
 * - TRC-20: the same with a quorum of two approvals;
 * - a request whose digest does not match the TRON fields, sent straight to the signers: refused;
 * - expiry: a SENT transaction the node lost, once a block past its expiration has the chain's
 *   confirmations, ends FAILED / EXPIRED_ON_CHAIN (TRANSFER_FAILED), decided again after a restart.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { recomputeTronDigests, type TronContext, tronAddress } from '@custodian/chains';
import { hexToBytes } from '@custodian/crypto';
import type { ControlClient } from '@custodian/signer-client';
import { type SignedPolicy, signApproval, type TransferIntent } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveTronModel, TronChainModel, type TronModelServer } from '../../chains/test/helpers/tron-model.js';
import { buildSigner, type NodeSpec, stopNode, tempDir } from '../../signer/test/cluster.js';
import type { Coordinator } from '../src/coordinator.js';
import type { SignerGateway } from '../src/signing/gateway.js';
import { createEcdsaMasterKey, startEnforcingSigners } from './enforcing-signers.js';
import type { Json } from './helpers.js';
import { approveAs, CoordinatorApi, hexPub, pipelineCoordinator } from './pipeline-harness.js';

const addr = (k: bigint) => tronAddress(secp256k1.Point.BASE.multiply(k).toBytes(true));
const FUNDER = addr(11n);
const DEST = addr(12n);
const OTHER = addr(13n);
/** The Nile USDT contract of the directory (the model holds its balances). */
const USDT = 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf';
const TRX = 1_000_000n;
const adminDevice = p256.utils.randomSecretKey();
const dev1 = p256.utils.randomSecretKey();
const dev2 = p256.utils.randomSecretKey();
const serverIds = [
  '11111111-0000-4000-8000-000000000001',
  '11111111-0000-4000-8000-000000000002',
  '11111111-0000-4000-8000-000000000003',
];

let dir = '';
let model: TronChainModel;
let server: TronModelServer;
let nodes: NodeSpec[] = [];
let control: ControlClient;
let gateway: SignerGateway;
let coord: Coordinator;
const api = new CoordinatorApi();
const { req, enroll, getTransfer } = api;
let apiKey = '';
let profileId = '';
let walletId = '';
let trxAsset = '';
let usdtAsset = '';
let source = '';
let keyId = '';
let adminDeviceId = '';
let dev1Id = '';
let dev2Id = '';
let trxPolicy: SignedPolicy;

async function waitFor<T>(what: string, f: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A policy (`body` as POSTed) signed by the Admin device. */
const signedPolicy = (body: Json): Promise<SignedPolicy> =>
  api.signedPolicy(body, { deviceId: adminDeviceId, secretKey: adminDevice });

async function eventsOf(transferId: string): Promise<string[]> {
  const r = await coord.db.query<{ event_type: string }>(
    `SELECT event_type FROM webhook_events WHERE body::jsonb->'data'->>'transfer_id' = $1 ORDER BY occurred_at`,
    [transferId],
  );
  return r.map((x) => x.event_type);
}

/** The coordinator on `dataDir` (a restart reopens the same folder); sets `api.url`. */
async function startCoordinator(dataDir: string): Promise<Coordinator> {
  const c = await pipelineCoordinator(dataDir, {
    chains: { 'tron-nile': { rpcUrl: server.url, confirmations: 2, pollIntervalMs: 200 } },
    transfers: {
      gateway,
      // 20 TRX: below the adapter's TRC-20 fee_limit (30 TRX), which the coordinator lowers to the cap
      feeCaps: { 'tron-nile': '20000000' },
      trustedAdminKeys: [hexPub(adminDevice)],
      pipeline: { pollMs: 200, confirmationRecheckMs: 200, signDeadlineMs: 60_000 },
    },
  });
  api.url = await c.start();
  return c;
}

beforeAll(async () => {
  buildSigner();
  dir = tempDir('tron-pipeline');
  model = new TronChainModel({ [FUNDER]: 1000n * TRX }, { [`${USDT}|${FUNDER}`]: 1_000_000n * TRX });
  for (let i = 0; i < 3; i++) model.mine();
  server = await serveTronModel(model);

  ({ nodes, control, gateway } = await startEnforcingSigners(dir, hexPub(adminDevice), serverIds));

  const dataDir = join(dir, 'coord');
  coord = await startCoordinator(dataDir);
  await api.signIn(join(dataDir, 'mailbox'), 'tron');
  ({ apiKey, profileId } = api);
  adminDeviceId = await enroll(adminDevice, 'admin phone');
  dev1Id = await enroll(dev1, 'approver 1');
  dev2Id = await enroll(dev2, 'approver 2');

  // master key ceremony (ECDSA) among the 3 signers, with the 2 approver devices
  ({ keyId } = await createEcdsaMasterKey(
    { nodes, control, gateway },
    coord,
    serverIds,
    [
      { id: dev1Id, secretKey: dev1 },
      { id: dev2Id, secretKey: dev2 },
    ],
    120_000,
  ));

  trxAsset = await api.assetId((a) => a.blockchain === 'tron-nile' && a.kind === 'native');
  usdtAsset = await api.assetId((a) => a.blockchain === 'tron-nile' && a.symbol === 'USDT');
  const w = await api.createWallet('tron-nile');
  expect(w.status, JSON.stringify(w.body)).toBe(201);
  walletId = w.body.wallet_id;
  source = w.body.addresses[0].address;
  // the address is the TRON address of the threshold key's derived public key
  expect(tronAddress(hexToBytes(w.body.addresses[0].public_key))).toBe(source);

  // TRX: whitelist DEST, ≤ 10 TRX per transfer, 2 approvals above 5 TRX; USDT: 2 approvals always
  trxPolicy = await signedPolicy({
    name: 'trx',
    scope: { blockchain: 'tron-nile', asset_id: trxAsset },
    whitelist: [DEST],
    per_transaction_limit: (10n * TRX).toString(),
    daily_limit: (20n * TRX).toString(),
    approvals: { quorum: 2, above_amount: (5n * TRX).toString() },
  });
  await signedPolicy({
    name: 'usdt',
    scope: { blockchain: 'tron-nile', asset_id: usdtAsset },
    whitelist: [DEST],
    daily_limit: (1000n * TRX).toString(),
    approvals: { quorum: 2, above_amount: '0' },
  });
}, 120_000);

afterAll(async () => {
  await coord?.stop().catch(() => {});
  await control?.stop().catch(() => {});
  await Promise.all(nodes.map((n) => stopNode(n)));
  await server?.close();
  if (dir && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(dir, { recursive: true, force: true });
});

describe('TRON transfers through the pipeline (signer processes, TRON-shaped model node)', () => {
  it('TRX and TRC-20 deposits are detected by the TRON watcher into the wallet balances', async () => {
    model.mine([model.tx('trx', FUNDER, source, 50n * TRX)]);
    model.mine([model.tx('trc20', FUNDER, source, 100n * TRX, USDT)]);
    model.mine(); // 2 confirmations for both
    const balance = async (asset: string) =>
      (await req('GET', `/api/v1/profiles/${profileId}/wallets/${walletId}/balances/${asset}`, { key: apiKey })).body
        .amount;
    await waitFor('the TRX balance', async () => ((await balance(trxAsset)) === '50' ? true : undefined));
    await waitFor('the USDT balance', async () => ((await balance(usdtAsset)) === '100' ? true : undefined));
    const ev = await coord.db.query<{ event_type: string }>(
      `SELECT DISTINCT event_type FROM webhook_events WHERE event_type IN ('TRANSACTION_DETECTED','BALANCE_UPDATED')`,
    );
    expect(ev.map((e) => e.event_type).sort()).toEqual(['BALANCE_UPDATED', 'TRANSACTION_DETECTED']);
  }, 30_000);

  it('TRX: approval, threshold signature, broadcast, SENT, mined, delivered; the TRX arrives', async () => {
    const c = await req('POST', `/api/v1/profiles/${profileId}/transfers`, {
      key: apiKey,
      idem: true,
      body: { wallet_id: walletId, asset_id: trxAsset, destination_address: DEST, amount: '3' },
    });
    expect(c.body, JSON.stringify(c.body)).toMatchObject({ status: 'PENDING_APPROVAL', approvals_required: 1 });
    expect((await approveAs(coord, c.body.transfer_id, dev1, dev1Id)).status).toBe('PENDING_SIGNATURE');
    const sent = await waitFor('SENT', async () => {
      const t = await getTransfer(c.body.transfer_id);
      return ['SENT', 'FAILED', 'REJECTED'].includes(t.status) ? t : undefined;
    });
    expect(sent.status, JSON.stringify(sent)).toBe('SENT');
    expect(sent.delivered_at).toBeNull(); // in the pending pool, not mined
    // the node accepted it: signed by the source's key (checked by the model), txID = SHA-256(raw_data)
    expect(model.pending.map((t) => ({ ...t }))).toEqual([
      { txID: sent.tx_hash, kind: 'trx', from: source, to: DEST, amount: 3n * TRX },
    ]);
    model.mine([...model.pending]);
    model.mine();
    const done = await waitFor('delivery', async () => {
      const t = await getTransfer(c.body.transfer_id);
      return t.delivered_at !== null ? t : undefined;
    });
    expect(done).toMatchObject({ status: 'SENT', tx_hash: sent.tx_hash });
    expect(model.trxAt(DEST)).toBe(3n * TRX);
    const list = await eventsOf(c.body.transfer_id);
    expect(list[0]).toBe('TRANSFER_CREATED');
    expect(list.at(-1)).toBe('TRANSFER_DELIVERED');
    // what the signers were given to recompute the digest: the TRON chain context
    const stored = (
      await coord.db.query<{ unsigned: { context: TronContext; digests: { digest: string }[] } }>(
        'SELECT unsigned FROM transfers WHERE transfer_id = $1',
        [c.body.transfer_id],
      )
    )[0]!.unsigned;
    expect(stored.context.from).toBe(source);
    expect(stored.digests[0]?.digest).toBe(sent.tx_hash);
  }, 60_000);

  it('TRC-20: a quorum of two approvals, signature, broadcast, delivered; the tokens arrive', async () => {
    const c = await req('POST', `/api/v1/profiles/${profileId}/transfers`, {
      key: apiKey,
      idem: true,
      body: { wallet_id: walletId, asset_id: usdtAsset, destination_address: DEST, amount: '7.5' },
    });
    expect(c.body, JSON.stringify(c.body)).toMatchObject({
      status: 'PENDING_APPROVAL',
      approvals_required: 2,
      max_fee: '20',
      fee_currency: 'TRX',
    });
    expect((await approveAs(coord, c.body.transfer_id, dev1, dev1Id)).status).toBe('PENDING_APPROVAL');
    expect((await approveAs(coord, c.body.transfer_id, dev2, dev2Id)).status).toBe('PENDING_SIGNATURE');
    const sent = await waitFor('SENT', async () => {
      const t = await getTransfer(c.body.transfer_id);
      return ['SENT', 'FAILED', 'REJECTED'].includes(t.status) ? t : undefined;
    });
    expect(sent.status, JSON.stringify(sent)).toBe('SENT');
    expect(model.pending.map((t) => ({ ...t }))).toEqual([
      { txID: sent.tx_hash, kind: 'trc20', from: source, to: DEST, amount: 7_500_000n, token: USDT },
    ]);
    model.mine([...model.pending]);
    model.mine();
    const done = await waitFor('delivery', async () => {
      const t = await getTransfer(c.body.transfer_id);
      return t.delivered_at !== null ? t : undefined;
    });
    expect(done.tx_hash).toBe(sent.tx_hash);
    expect(model.tokenAt(USDT, DEST)).toBe(7_500_000n);
    // the fee cap the approvers signed bounds the call's fee_limit (lowered from the adapter's 30 TRX)
    const stored = (
      await coord.db.query<{ unsigned: { context: TronContext; maxFee: string } }>(
        'SELECT unsigned FROM transfers WHERE transfer_id = $1',
        [c.body.transfer_id],
      )
    )[0]!.unsigned;
    expect(stored.context.feeLimit).toBe('20000000');
    expect(stored.maxFee).toBe('20000000');
    expect((await eventsOf(c.body.transfer_id)).at(-1)).toBe('TRANSFER_DELIVERED');
  }, 60_000);

  it('the signers refuse a TRON request whose digest does not match the fields (DIGEST_MISMATCH)', async () => {
    const a = (
      await coord.db.query<{ public_key: string; derivation_path: string }>(
        'SELECT public_key, derivation_path FROM addresses WHERE wallet_id = $1',
        [walletId],
      )
    )[0]!;
    const path = a.derivation_path.split('/').slice(1).map(Number);
    const intent: TransferIntent = {
      transfer_id: crypto.randomUUID(),
      profile_id: profileId,
      wallet_id: walletId,
      blockchain: 'tron-nile',
      asset_id: trxAsset,
      asset_symbol: 'TRX',
      asset_decimals: 6,
      asset_contract: null,
      source_address: source,
      destination_address: DEST,
      amount: TRX.toString(),
      derivation_path: path,
      key_algorithm: 'SECP256K1_ECDSA',
      key_id: keyId,
      created_at: new Date().toISOString(),
      max_fee: '50000000',
    };
    const ctx: TronContext = {
      network: 'nile',
      from: source,
      fromPublicKey: a.public_key,
      fromPath: path,
      refBlockBytes: '0001',
      refBlockHash: '0011223344556677',
      expiration: Date.now() + 600_000,
      timestamp: Date.now(),
      feeLimit: '0',
    };
    const digestOf = (destination: string, amount: bigint) =>
      recomputeTronDigests({ asset: { kind: 'native' }, destination, amount }, ctx).map((d) => d.digest);
    const send = (digests: Uint8Array[]) =>
      gateway.sign({
        keyId,
        algorithm: 'SECP256K1_ECDSA',
        parties: [
          { kind: 'server', id: serverIds[0] as string },
          { kind: 'server', id: serverIds[1] as string },
        ],
        derivationPath: path,
        digests,
        evidence: {
          intent,
          policy: trxPolicy,
          approvals: [signApproval(intent, 'APPROVE', dev1Id, dev1, new Date().toISOString())],
          chainContext: JSON.stringify(ctx),
        },
        deadline: new Date(Date.now() + 30_000),
      });
    const refusal = async (p: ReturnType<typeof send>) => {
      const r = await p;
      return r.ok ? 'SIGNED' : r.reason === 'REFUSED' ? r.refusal : r.reason;
    };
    // the evidence says 1 TRX to DEST; the digest pays OTHER, or 9 TRX
    expect(await refusal(send(digestOf(OTHER, TRX)))).toBe('DIGEST_MISMATCH');
    expect(await refusal(send(digestOf(DEST, 9n * TRX)))).toBe('DIGEST_MISMATCH');
  }, 60_000);

  it('expiry: a SENT transaction the node lost, past its expiration with the confirmations → FAILED / EXPIRED_ON_CHAIN, also after a restart', async () => {
    // its own funds: 5 TRX, confirmed
    const trxBalance = async (): Promise<bigint> => {
      const b = await req('GET', `/api/v1/profiles/${profileId}/wallets/${walletId}/balances/${trxAsset}`, {
        key: apiKey,
      });
      const [whole = '0', frac = ''] = String(b.body.amount ?? '0').split('.');
      return BigInt(whole) * TRX + BigInt(frac.padEnd(6, '0') || '0');
    };
    const funded = (await trxBalance()) + 5n * TRX;
    model.mine([model.tx('trx', FUNDER, source, 5n * TRX)]);
    model.mine();
    await waitFor('the TRX deposit', async () => ((await trxBalance()) === funded ? true : undefined));
    const sourceBefore = model.trxAt(source);
    const c = await req('POST', `/api/v1/profiles/${profileId}/transfers`, {
      key: apiKey,
      idem: true,
      body: { wallet_id: walletId, asset_id: trxAsset, destination_address: DEST, amount: '1' },
    });
    expect(c.body, JSON.stringify(c.body)).toMatchObject({ status: 'PENDING_APPROVAL' });
    await approveAs(coord, c.body.transfer_id, dev1, dev1Id);
    const sent = await waitFor('SENT', async () => {
      const t = await getTransfer(c.body.transfer_id);
      return ['SENT', 'FAILED', 'REJECTED'].includes(t.status) ? t : undefined;
    });
    expect(sent.status, JSON.stringify(sent)).toBe('SENT');
    const txid = sent.tx_hash as string;
    const tx = model.pending.find((p) => p.txID === txid);
    const expiration = model.expirations.get(txid);
    if (tx === undefined || expiration === undefined) throw new Error('the node did not receive the transaction');
    // the coordinator is down while the transaction expires
    await coord.transfers.pipeline.stop();
    const chains = coord.transfers.chains;
    // block time jumps past the expiration: one block there, the transaction still pending
    model.skipTime(expiration - model.tip.timestamp);
    model.mine();
    expect(model.tip.timestamp).toBeGreaterThanOrEqual(expiration);
    expect(() => model.mine([tx])).toThrow(/expired/); // no block can hold it any more
    expect(await chains.tronExpired('tron-nile', txid, expiration)).toBe(false); // pending
    model.drop(txid);
    expect(await chains.tronExpired('tron-nile', txid, expiration)).toBe(false); // 1 of 2 confirmations
    model.mine();
    expect(await chains.tronExpired('tron-nile', txid, expiration)).toBe(true);
    expect((await getTransfer(c.body.transfer_id)).status).toBe('SENT'); // nobody looked yet
    // restart: the new process reaches the outcome from the node alone
    await coord.stop();
    coord = await startCoordinator(join(dir, 'coord'));
    const failed = await waitFor('FAILED', async () => {
      const t = await getTransfer(c.body.transfer_id);
      return t.status !== 'SENT' ? t : undefined;
    });
    expect(failed).toMatchObject({ status: 'FAILED', sub_status: 'EXPIRED_ON_CHAIN', tx_hash: txid });
    expect(failed.delivered_at).toBeNull();
    const stored = (
      await coord.db.query<{ error: string }>('SELECT error FROM transfers WHERE transfer_id = $1', [
        c.body.transfer_id,
      ])
    )[0]!.error;
    expect(stored).toMatch(/^EXPIRED_ON_CHAIN: transaction [0-9a-f]{64} expired at .* without being mined/);
    const list = await eventsOf(c.body.transfer_id);
    expect(list.at(-1)).toBe('TRANSFER_FAILED');
    expect(list).not.toContain('TRANSFER_DELIVERED');
    const body = (
      await coord.db.query<{ body: string }>(
        `SELECT body FROM webhook_events WHERE event_type = 'TRANSFER_FAILED' AND body::jsonb->'data'->>'transfer_id' = $1`,
        [c.body.transfer_id],
      )
    )[0]!.body;
    expect(JSON.parse(body).data).toMatchObject({ status: 'FAILED', sub_status: 'EXPIRED_ON_CHAIN' });
    // the funds never left the wallet (no fee either: nothing was mined)
    expect(model.trxAt(source)).toBe(sourceBefore);
    expect(model.blockOf(txid)).toBeUndefined();
  }, 120_000);
});
