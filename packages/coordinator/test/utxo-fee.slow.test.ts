/**
 * Bitcoin-family fee bumping and UTXO consolidation through the PIPELINE, with REAL components:
 * three signer processes (CGGMP21 2-of-3 ECDSA, enforcement on), the signer gateway over libp2p,
 * a coordinator on PGlite and litecoind regtest (setup as the Litecoin case of
 * transfers-e2e.slow.test.ts).
 *
 * - RBF: a SENT transfer's replacement (new approval round) is mined; the original is not;
 * - CPFP: a child self-spend of the stuck transaction's change output (its own approvals) is
 *   mined in the same block as its parent, and the package pays at least the target rate;
 * - consolidation: ≥ 3 UTXOs of the wallet → one output to its own address, mined; refused (422)
 *   when fewer than 2 UTXOs qualify.
 * Each test creates and funds its own wallet and its own wallet-scoped policy.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { formatUnits } from '@custodian/chains';
import type { ControlClient } from '@custodian/signer-client';
import { signApproval, type TransferIntent } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LitecoindNode, startLitecoind } from '../../chains/test/helpers/litecoind.js';
import { buildSigner, type NodeSpec, stopNode, tempDir } from '../../signer/test/cluster.js';
import type { Coordinator } from '../src/coordinator.js';
import type { SignerGateway } from '../src/signing/gateway.js';
import { createEcdsaMasterKey, startEnforcingSigners } from './enforcing-signers.js';
import type { Json } from './helpers.js';
import { approveAs, CoordinatorApi, hexPub, localChains, pipelineCoordinator } from './pipeline-harness.js';

const adminDevice = p256.utils.randomSecretKey();
const dev1 = p256.utils.randomSecretKey();
const dev2 = p256.utils.randomSecretKey();
const serverIds = [
  '11111111-0000-4000-8000-000000000001',
  '11111111-0000-4000-8000-000000000002',
  '11111111-0000-4000-8000-000000000003',
];

let dir = '';
let ltc: LitecoindNode;
let nodes: NodeSpec[] = [];
let control: ControlClient;
let gateway: SignerGateway;
let coord: Coordinator;
const api = new CoordinatorApi();
const { req, waitStatus, enroll } = api;
let adminDeviceId = '';
let dev1Id = '';
let dev2Id = '';
let ltcAsset = '';

beforeAll(async () => {
  buildSigner();
  dir = tempDir('utxo-fee');
  ltc = await startLitecoind();
  ({ nodes, control, gateway } = await startEnforcingSigners(dir, hexPub(adminDevice), serverIds));
  coord = await pipelineCoordinator(join(dir, 'coord'), {
    chains: { 'litecoin-regtest': localChains('', ltc.url)['litecoin-regtest']! },
    transfers: {
      gateway,
      trustedAdminKeys: [hexPub(adminDevice)],
      pipeline: { pollMs: 200, confirmationRecheckMs: 200, signDeadlineMs: 180_000 },
    },
  });
  api.url = await coord.start();
  await api.signIn(join(dir, 'coord', 'mailbox'), 'utxo-fee');
  adminDeviceId = await enroll(adminDevice, 'admin phone');
  dev1Id = await enroll(dev1, 'approver 1');
  dev2Id = await enroll(dev2, 'approver 2');
  await createEcdsaMasterKey(
    { nodes, control, gateway },
    coord,
    serverIds,
    [
      { id: dev1Id, secretKey: dev1 },
      { id: dev2Id, secretKey: dev2 },
    ],
    300_000,
  );
  ltcAsset = await api.assetId((a) => a.blockchain === 'litecoin-regtest');
}, 600_000);

afterAll(async () => {
  await coord?.stop().catch(() => {});
  await control?.stop().catch(() => {});
  await Promise.all(nodes.map((n) => stopNode(n)));
  await ltc?.stop();
  if (dir && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(dir, { recursive: true, force: true });
});

/** A new Litecoin wallet funded with `amounts` (one UTXO each, mined), with a policy scoped to it whitelisting `dest` and its own address. */
async function fundedWallet(
  amounts: number[],
  total: string,
  dest: string,
): Promise<{ walletId: string; address: string }> {
  const w = await api.createWallet('litecoin-regtest');
  const walletId = w.body.wallet_id as string;
  const address = w.body.addresses[0].address as string;
  for (const a of amounts) await ltc.walletCall('sendtoaddress', [address, a]);
  await ltc.mine(1);
  await api.waitBalance(walletId, ltcAsset, total, 60_000, 'LTC balance');
  await api.signedPolicy(
    {
      name: `ltc ${walletId}`,
      scope: { wallet_ids: [walletId], asset_id: ltcAsset },
      whitelist: [dest, address],
      daily_limit: '10000000000',
    },
    { deviceId: adminDeviceId, secretKey: adminDevice },
  );
  return { walletId, address };
}

/** A transfer of `amount` LTC to `dest`, approved and SENT (not mined). */
async function sentTransfer(walletId: string, dest: string, amount: string): Promise<Json> {
  const c = await req('POST', `/api/v1/profiles/${api.profileId}/transfers`, {
    key: api.apiKey,
    idem: true,
    body: { wallet_id: walletId, asset_id: ltcAsset, destination_address: dest, amount },
  });
  expect(c.body.status, JSON.stringify(c.body)).toBe('PENDING_APPROVAL');
  await approveAs(coord, c.body.transfer_id, dev1, dev1Id);
  const sent = await waitStatus(c.body.transfer_id, (x) => ['SENT', 'FAILED', 'REJECTED'].includes(x.status));
  expect(sent.status, JSON.stringify(sent)).toBe('SENT');
  return sent;
}

/** Approve the intent of a transfer's current round (a fee bump's own intent when it has one). */
async function approveRound(transferId: string, sk: Uint8Array, deviceId: string) {
  const r = await coord.db.query<{ intent: TransferIntent; bump: TransferIntent | null }>(
    "SELECT intent, fee_bump->'intent' AS bump FROM transfers WHERE transfer_id = $1",
    [transferId],
  );
  const intent = r[0]?.bump ?? r[0]?.intent;
  if (intent === undefined) throw new Error('no transfer');
  return coord.transfers.service.submitApproval(
    signApproval(intent, 'APPROVE', deviceId, sk, new Date().toISOString()),
  );
}

/** Txids of the block that mined `txid`. */
async function blockOf(txid: string): Promise<{ hash: string; txids: string[] }> {
  const tx = await ltc.rpc.call<{ blockhash?: string }>('getrawtransaction', [txid, true]);
  if (tx.blockhash === undefined) throw new Error(`${txid} not mined`);
  const b = await ltc.rpc.call<{ tx: string[] }>('getblock', [tx.blockhash, 1]);
  return { hash: tx.blockhash, txids: b.tx };
}

describe('Bitcoin-family fee bumping and consolidation (litecoind regtest, signer processes)', () => {
  it('RBF: the replacement of a SENT transfer, after a new approval round, is mined; the original is not', async () => {
    const dest = await ltc.walletCall<string>('getnewaddress', ['', 'bech32']);
    const { walletId } = await fundedWallet([5], '5', dest);
    const sent = await sentTransfer(walletId, dest, '1.25');
    const original = await ltc.rpc.call<Json>('getmempoolentry', [sent.tx_hash]);
    const bump = await req('POST', `/admin/v1/profiles/${api.profileId}/transfers/${sent.transfer_id}/fee-bump`, {
      token: api.token,
      body: { priority: 'FAST', method: 'RBF' },
    });
    expect(bump.status, JSON.stringify(bump.body)).toBe(200);
    expect(bump.body.fee_bump.status).toBe('PENDING_APPROVAL');
    expect(bump.body.fee_bump.method).toBe('RBF');
    await approveRound(sent.transfer_id, dev2, dev2Id);
    const bumped = await waitStatus(sent.transfer_id, (x) =>
      ['DONE', 'FAILED', 'REJECTED'].includes(x.fee_bump?.status),
    );
    expect(bumped.fee_bump.status, JSON.stringify(bumped.fee_bump)).toBe('DONE');
    expect(bumped.tx_hash).not.toBe(sent.tx_hash);
    const mempool = Object.keys(await ltc.rpc.call<Json>('getrawmempool', [true]));
    expect(mempool).toContain(bumped.tx_hash);
    expect(mempool).not.toContain(sent.tx_hash); // replaced (BIP125)
    const replacement = await ltc.rpc.call<Json>('getmempoolentry', [bumped.tx_hash]);
    const [f0, f1] = [Math.round(original.fees.base * 1e8), Math.round(replacement.fees.base * 1e8)];
    console.log(
      `RBF figures: original ${original.vsize} vB fee ${f0} lit, replacement ${replacement.vsize} vB fee ${f1} lit`,
    );
    expect(f1).toBeGreaterThan(f0);
    // the FAST fallback rate 40 lit/vB × the estimated vsize (up to ½ vB below the node's ⌈weight / 4⌉)
    expect(f1 / replacement.vsize).toBeGreaterThanOrEqual(40 * (1 - 0.5 / replacement.vsize));
    await ltc.mine(1);
    const done = await waitStatus(sent.transfer_id, (x) => x.delivered_at !== null);
    expect(done.tx_hash).toBe(bumped.tx_hash);
    const block = await blockOf(bumped.tx_hash);
    expect(block.txids).toContain(bumped.tx_hash);
    expect(block.txids).not.toContain(sent.tx_hash);
    await expect(ltc.rpc.call('getrawtransaction', [sent.tx_hash, true])).rejects.toThrow();
    expect(await ltc.walletCall<number>('getreceivedbyaddress', [dest, 1])).toBe(1.25);
  }, 400_000);

  it('CPFP: a child self-spend of the change output, with its own approval, is mined with its parent', async () => {
    const dest = await ltc.walletCall<string>('getnewaddress', ['', 'bech32']);
    const { walletId, address } = await fundedWallet([3], '3', dest);
    const sent = await sentTransfer(walletId, dest, '1');
    const bump = await req('POST', `/admin/v1/profiles/${api.profileId}/transfers/${sent.transfer_id}/fee-bump`, {
      token: api.token,
      body: { priority: 'FAST', method: 'CPFP' },
    });
    expect(bump.status, JSON.stringify(bump.body)).toBe(200);
    expect(bump.body.fee_bump.method).toBe('CPFP');
    expect(bump.body.fee_bump.status).toBe('DONE');
    const childId = bump.body.fee_bump.child_transfer_id as string;
    const child = await api.getTransfer(childId);
    expect(child.status, JSON.stringify(child)).toBe('PENDING_APPROVAL');
    expect(child.destination_address).toBe(address);
    // no bypass: the child waits for a device approval like any transfer
    await approveAs(coord, childId, dev1, dev1Id);
    const childSent = await waitStatus(childId, (x) => ['SENT', 'FAILED', 'REJECTED'].includes(x.status));
    expect(childSent.status, JSON.stringify(childSent)).toBe('SENT');
    const raw = await ltc.rpc.call<Json>('getrawtransaction', [childSent.tx_hash, true]);
    expect(raw.vin.map((i: Json) => `${i.txid}:${i.vout}`)).toEqual([`${sent.tx_hash}:1`]);
    expect(raw.vout.length).toBe(1);
    const entry = await ltc.rpc.call<Json>('getmempoolentry', [childSent.tx_hash]);
    const parent = await ltc.rpc.call<Json>('getmempoolentry', [sent.tx_hash]);
    const packageRate = Math.round(entry.fees.ancestor * 1e8) / entry.ancestorsize;
    const parentRate = (parent.fees.base * 1e8) / parent.vsize;
    console.log(
      `CPFP figures: parent ${parent.vsize} vB at ${parentRate.toFixed(2)} lit/vB, child ${entry.vsize} vB fee ${Math.round(entry.fees.base * 1e8)}, package ${packageRate.toFixed(2)} lit/vB`,
    );
    expect(packageRate).toBeGreaterThanOrEqual(40); // the FAST fallback rate of Litecoin regtest, 40 lit/vB
    expect(packageRate).toBeGreaterThan(parentRate);
    await ltc.mine(1);
    const done = await waitStatus(childId, (x) => x.delivered_at !== null);
    await waitStatus(sent.transfer_id, (x) => x.delivered_at !== null);
    const block = await blockOf(done.tx_hash);
    expect(block.txids).toContain(sent.tx_hash);
  }, 400_000);

  it('consolidation: 3 small UTXOs of the wallet → one output to its own address, approved and mined', async () => {
    const dest = await ltc.walletCall<string>('getnewaddress', ['', 'bech32']);
    const { walletId, address } = await fundedWallet([0.1, 0.2, 0.3, 2], '2.6', dest);
    const c = await req('POST', `/admin/v1/profiles/${api.profileId}/wallets/${walletId}/consolidations`, {
      token: api.token,
      body: { blockchain_id: 'litecoin-regtest', below: '50000000', max_inputs: 10, priority: 'STANDARD' },
    });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    expect(c.body.status).toBe('PENDING_APPROVAL');
    expect(c.body.destination_address).toBe(address);
    await approveAs(coord, c.body.transfer_id, dev1, dev1Id);
    const sent = await waitStatus(c.body.transfer_id, (x) => ['SENT', 'FAILED', 'REJECTED'].includes(x.status));
    expect(sent.status, JSON.stringify(sent)).toBe('SENT');
    await ltc.mine(1);
    await waitStatus(c.body.transfer_id, (x) => x.delivered_at !== null);
    const raw = await ltc.rpc.call<Json>('getrawtransaction', [sent.tx_hash, true]);
    expect(raw.vin.length).toBe(3);
    expect(raw.vout.length).toBe(1);
    expect(raw.vout[0].scriptPubKey.addresses?.[0] ?? raw.vout[0].scriptPubKey.address).toBe(address);
    const out = BigInt(Math.round(raw.vout[0].value * 1e8));
    const fee = 60_000_000n - out;
    console.log(`consolidation figures: 3 inputs, ${raw.vsize} vB, fee ${fee} lit`);
    expect(fee > 0n && fee < 100_000n).toBe(true);
    await api.waitBalance(
      walletId,
      ltcAsset,
      formatUnits(200_000_000n + out, 8),
      60_000,
      'balance after consolidation',
    );
  }, 400_000);

  it('consolidation refused with 422 when fewer than 2 UTXOs qualify', async () => {
    const dest = await ltc.walletCall<string>('getnewaddress', ['', 'bech32']);
    const { walletId } = await fundedWallet([0.1, 2], '2.1', dest);
    const c = await req('POST', `/admin/v1/profiles/${api.profileId}/wallets/${walletId}/consolidations`, {
      token: api.token,
      body: { blockchain_id: 'litecoin-regtest', below: '50000000' },
    });
    expect(c.status, JSON.stringify(c.body)).toBe(422);
    expect(JSON.stringify(c.body)).toMatch(/at least 2/);
    const n = await coord.db.query('SELECT 1 FROM transfers WHERE wallet_id = $1', [walletId]);
    expect(n.length).toBe(0);
  }, 400_000);
});
