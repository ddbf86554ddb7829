/**
 * Issue #20 item 3 (fees), coordinator and phone side: the fee a transaction can pay is bounded by
 * the cap the approvers signed (`TransferIntent.max_fee`, native base units), and the coordinator
 * never asks the signers to sign more.
 *
 * Attacker: whoever makes the coordinator build a transaction (a fee spike on the node, an operator
 * cap below the chain's fees, an admin fee bump) — without these checks the coordinator sends the
 * signers a transaction whose fee exceeds what the approvers saw, and a fee bump is approved over
 * the old cap while the replacement pays more.
 *
 * REAL components: three signer processes (CGGMP21 2-of-3 ECDSA, enforcement on), the signer
 * gateway over libp2p (recorded: every request the pipeline sends is kept, then forwarded), a
 * coordinator on PGlite, anvil and litecoind regtest. The signers of this branch do not check fees
 * yet: these tests assert what the coordinator builds, stores, shows and sends.
 *
 * Operator caps of this coordinator (`transfers.feeCaps`): ethereum-local 0.005 ETH,
 * litecoin-regtest 100 litoshi (below any real fee: every build must fail).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { EthereumContext } from '@custodian/chains';
import { bytesToHex } from '@custodian/crypto';
import type { ControlClient } from '@custodian/signer-client';
import { type SignedPolicy, signApproval, type TransferIntent, transferIntentDigest } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnvilNode, startAnvil } from '../../chains/test/helpers/anvil.js';
import { type LitecoindNode, startLitecoind } from '../../chains/test/helpers/litecoind.js';
import { buildSigner, type NodeSpec, stopNode, tempDir } from '../../signer/test/cluster.js';
import type { Coordinator } from '../src/coordinator.js';
import type { GatewaySignRequest, SignerGateway } from '../src/signing/gateway.js';
import type { ApprovalRequest } from '../src/transfers/service.js';
import { createEcdsaMasterKey, startEnforcingSigners } from './enforcing-signers.js';
import type { Json } from './helpers.js';
import { CoordinatorApi, hexPub, jsonRpc, localChains, pipelineCoordinator } from './pipeline-harness.js';

const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const ETH = 10n ** 18n;
const GWEI = 10n ** 9n;
/** Operator cap of ethereum-local in this coordinator: 0.005 ETH. */
const ETH_CAP = 5_000_000_000_000_000n;
const adminDevice = p256.utils.randomSecretKey();
const dev1 = p256.utils.randomSecretKey();

let dir = '';
let anvil: AnvilNode;
let ltc: LitecoindNode;
let nodes: NodeSpec[] = [];
let control: ControlClient;
let gateway: SignerGateway;
/** Every signing request the pipeline sent to the signers, in order. */
const signRequests: GatewaySignRequest[] = [];
/** Approval requests pushed to devices (the coordinator's notifier), in order. */
const pushed: ApprovalRequest[] = [];
let coord: Coordinator;
const api = new CoordinatorApi();
const { req, waitStatus, enroll } = api;
let token = '';
let apiKey = '';
let profileId = '';
let walletId = '';
let assetId = '';
let source = '';
let adminDeviceId = '';
let dev1Id = '';
let policy: SignedPolicy;
const serverIds = [
  '22222222-0000-4000-8000-000000000001',
  '22222222-0000-4000-8000-000000000002',
  '22222222-0000-4000-8000-000000000003',
];

const rpc = (method: string, params: unknown[] = []) => jsonRpc(anvil.url, method, params);

/** The base fee of the next block (what the coordinator's fee estimate reads), wei per gas. */
const setNextBaseFee = (wei: bigint) => rpc('anvil_setNextBlockBaseFeePerGas', [`0x${wei.toString(16)}`]);

async function row(transferId: string) {
  return (
    await coord.db.query<{ intent: TransferIntent; intent_digest: string; unsigned: Json; fee_bump: Json }>(
      'SELECT intent, intent_digest, unsigned, fee_bump FROM transfers WHERE transfer_id = $1',
      [transferId],
    )
  )[0]!;
}

/** Approve as a phone does: over the intent of the approval request the device was pushed. */
async function approveRequest(r: ApprovalRequest) {
  return coord.transfers.service.submitApproval(
    signApproval(r.intent, 'APPROVE', dev1Id, dev1, new Date().toISOString()),
  );
}

async function pendingFor(transferId: string): Promise<ApprovalRequest> {
  const r = (await coord.transfers.service.pendingApprovals(dev1Id)).find((x) => x.transfer_id === transferId);
  if (r === undefined) throw new Error(`no pending approval request for ${transferId}`);
  return r;
}

async function createTransfer(amount: string, wallet = walletId, asset = assetId, dest = DEST): Promise<Json> {
  const r = await req('POST', `/api/v1/profiles/${profileId}/transfers`, {
    key: apiKey,
    idem: true,
    body: { wallet_id: wallet, asset_id: asset, destination_address: dest, amount },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

/** A policy (`body` as POSTed, named `name`) signed by the Admin device. */
const signedPolicy = (name: string, body: Record<string, unknown>): Promise<SignedPolicy> =>
  api.signedPolicy({ name, ...body }, { deviceId: adminDeviceId, secretKey: adminDevice });

const requestsFor = (transferId: string) => signRequests.filter((r) => r.evidence.intent.transfer_id === transferId);

beforeAll(async () => {
  buildSigner();
  dir = tempDir('attack-fee-cap');
  anvil = await startAnvil();
  ltc = await startLitecoind();
  ({ nodes, control, gateway } = await startEnforcingSigners(dir, hexPub(adminDevice), serverIds));
  coord = await pipelineCoordinator(join(dir, 'coord'), {
    chains: localChains(anvil.url, ltc.url),
    transfers: {
      feeCaps: { 'ethereum-local': ETH_CAP.toString(), 'litecoin-regtest': '100' },
      gateway: {
        sign: async (r) => {
          signRequests.push(r);
          return gateway.sign(r);
        },
      },
      trustedAdminKeys: [hexPub(adminDevice)],
      pipeline: { pollMs: 200, confirmationRecheckMs: 200, signDeadlineMs: 180_000 },
    },
  });
  coord.transfers.signals.approvalRequests.on((_devices, r) => void pushed.push(r));
  api.url = await coord.start();
  await api.signIn(join(dir, 'coord', 'mailbox'), 'fees');
  ({ token, apiKey, profileId } = api);
  adminDeviceId = await enroll(adminDevice, 'admin phone');
  dev1Id = await enroll(dev1, 'approver 1');
  await createEcdsaMasterKey({ nodes, control, gateway }, coord, serverIds, [{ id: dev1Id, secretKey: dev1 }], 300_000);

  assetId = await api.assetId((a) => a.blockchain === 'ethereum-local' && a.kind === 'native');
  const w = await api.createWallet('ethereum-local');
  walletId = w.body.wallet_id;
  source = w.body.addresses[0].address;
  await rpc('anvil_setBalance', [source, `0x${(100n * ETH).toString(16)}`]);
  await coord.wallets.balances.setBalance(walletId, assetId, (100n * ETH).toString());
  policy = await signedPolicy('eth', {
    scope: { blockchain: 'ethereum-local', asset_id: assetId },
    whitelist: [DEST],
    daily_limit: (50n * ETH).toString(),
    approvals: { quorum: 1, above_amount: '0' },
  });
  expect(policy.document.whitelist).toEqual([DEST]);
}, 600_000);

afterAll(async () => {
  await coord?.stop().catch(() => {});
  await control?.stop().catch(() => {});
  await Promise.all(nodes.map((n) => stopNode(n)));
  await anvil?.stop();
  await ltc?.stop();
  if (dir && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(dir, { recursive: true, force: true });
});

describe('attack: a fee above the approved cap (issue #20 item 3, coordinator side)', () => {
  it('the intent approvers sign carries the operator cap; the approval request, the phone summary and the API show it', async () => {
    const t = await createTransfer('0.1');
    expect(t.status).toBe('PENDING_APPROVAL');
    const { intent, intent_digest } = await row(t.transfer_id);
    // the operator's per-blockchain cap, not the directory default (0.01 ETH)
    expect(intent.max_fee).toBe(ETH_CAP.toString());
    expect(intent_digest).toBe(bytesToHex(transferIntentDigest(intent)));
    // API: decimal string in the native asset's units, with its symbol (as amounts are)
    expect(t).toMatchObject({ max_fee: '0.005', max_fee_base_units: ETH_CAP.toString(), fee_currency: 'ETH' });
    // the request pushed to the phones and the one a phone fetches on connect: that intent, its digest, the cap shown
    const push = pushed.find((r) => r.transfer_id === t.transfer_id);
    const pending = await pendingFor(t.transfer_id);
    for (const r of [push, pending]) {
      expect(r?.intent.max_fee).toBe(ETH_CAP.toString());
      expect(r?.intent_digest).toBe(intent_digest);
      expect(r?.summary).toMatchObject({ amount: '0.1', symbol: 'ETH', max_fee: '0.005', fee_currency: 'ETH' });
    }
    const cancelled = await req('POST', `/admin/v1/profiles/${profileId}/transfers/${t.transfer_id}/cancel`, { token });
    expect(cancelled.status).toBe(200);
  }, 120_000);

  it('EVM: gas × maxFeePerGas above the cap is lowered to floor(cap / gas) when that still covers base + priority fee', async () => {
    // 120 gwei base fee: the estimate (2·base + priority) × gas is above 0.005 ETH, base + priority is not
    await setNextBaseFee(120n * GWEI);
    const t = await createTransfer('0.2');
    await approveRequest(await pendingFor(t.transfer_id));
    const done = await waitStatus(
      t.transfer_id,
      (x) => !['PENDING_APPROVAL', 'PENDING_SIGNATURE', 'READY_TO_SEND'].includes(x.status),
    );
    expect(done.status, JSON.stringify(done)).toBe('SENT');
    const { unsigned } = await row(t.transfer_id);
    const ctx = unsigned.context as EthereumContext;
    const gas = BigInt(ctx.gas);
    expect(BigInt(ctx.maxFeePerGas)).toBe(ETH_CAP / gas);
    expect(gas * BigInt(ctx.maxFeePerGas)).toBeLessThanOrEqual(ETH_CAP);
    expect(BigInt(ctx.maxFeePerGas)).toBeGreaterThanOrEqual(120n * GWEI + BigInt(ctx.maxPriorityFeePerGas));
    // what the signers were asked: that transaction, under the intent carrying the cap
    const sent = requestsFor(t.transfer_id);
    expect(sent.length).toBe(1);
    expect(sent[0]?.evidence.intent.max_fee).toBe(ETH_CAP.toString());
    expect(JSON.parse(sent[0]?.evidence.chainContext ?? '{}').maxFeePerGas).toBe(ctx.maxFeePerGas);
    const tx = await rpc('eth_getTransactionByHash', [done.tx_hash]);
    expect(BigInt(tx.maxFeePerGas) * BigInt(tx.gas)).toBeLessThanOrEqual(ETH_CAP);
    await setNextBaseFee(GWEI);
  }, 300_000);

  it('EVM: a base fee the cap cannot cover fails the transfer FEE_CAP_EXCEEDED; nothing reaches the signers', async () => {
    // 300 gwei × gas alone is above 0.005 ETH
    await setNextBaseFee(300n * GWEI);
    const t = await createTransfer('0.3');
    await approveRequest(await pendingFor(t.transfer_id));
    const done = await waitStatus(t.transfer_id, (x) => !['PENDING_APPROVAL', 'PENDING_SIGNATURE'].includes(x.status));
    expect(done, JSON.stringify(done)).toMatchObject({ status: 'FAILED', sub_status: 'FEE_CAP_EXCEEDED' });
    expect(requestsFor(t.transfer_id)).toEqual([]);
    expect((await row(t.transfer_id)).unsigned).toBeNull();
    const failed = await coord.db.query(
      `SELECT 1 FROM webhook_events WHERE event_type = 'TRANSFER_FAILED' AND body::jsonb->'data'->>'transfer_id' = $1`,
      [t.transfer_id],
    );
    expect(failed.length).toBe(1);
    await setNextBaseFee(GWEI);
  }, 300_000);

  it('Bitcoin family: a UTXO fee above the cap fails the transfer FEE_CAP_EXCEEDED; nothing reaches the signers', async () => {
    const ltcAsset = await api.assetId((a) => a.blockchain === 'litecoin-regtest');
    const w = await api.createWallet('litecoin-regtest');
    const ltcWallet = w.body.wallet_id;
    await ltc.walletCall('sendtoaddress', [w.body.addresses[0].address, 2]);
    await ltc.mine(1);
    await api.waitBalance(ltcWallet, ltcAsset, '2', 60_000, 'LTC balance');
    const dest = await ltc.walletCall<string>('getnewaddress', ['', 'bech32']);
    await signedPolicy('ltc', { scope: { asset_id: ltcAsset }, whitelist: [dest], daily_limit: '1000000000' });
    const t = await createTransfer('0.5', ltcWallet, ltcAsset, dest);
    expect(t).toMatchObject({ status: 'PENDING_APPROVAL', max_fee: '0.000001', fee_currency: 'LTC' });
    await approveRequest(await pendingFor(t.transfer_id));
    const done = await waitStatus(t.transfer_id, (x) => !['PENDING_APPROVAL', 'PENDING_SIGNATURE'].includes(x.status));
    expect(done, JSON.stringify(done)).toMatchObject({ status: 'FAILED', sub_status: 'FEE_CAP_EXCEEDED' });
    expect(requestsFor(t.transfer_id)).toEqual([]);
    expect((await row(t.transfer_id)).unsigned).toBeNull();
  }, 300_000);

  it('a fee bump above the approved cap: the round approves a raised-cap intent, its digest is what the phone signs and what the signers get', async () => {
    await setNextBaseFee(GWEI);
    await rpc('evm_setAutomine', [false]);
    try {
      const t = await createTransfer('0.4');
      await approveRequest(await pendingFor(t.transfer_id));
      const sent = await waitStatus(t.transfer_id, (x) => x.status === 'SENT' || x.status === 'FAILED');
      expect(sent.status, JSON.stringify(sent)).toBe('SENT');
      const first = await row(t.transfer_id);
      // the fee spikes: the replacement's gas × maxFeePerGas (≈ 2 × 150 gwei × gas) is above 0.005 ETH
      await setNextBaseFee(150n * GWEI);
      const bump = await req('POST', `/admin/v1/profiles/${profileId}/transfers/${t.transfer_id}/fee-bump`, {
        token,
        body: { priority: 'FAST' },
      });
      expect(bump.status, JSON.stringify(bump.body)).toBe(200);
      const stored = await row(t.transfer_id);
      const bumpIntent = stored.fee_bump.intent as TransferIntent;
      const replacement = stored.fee_bump.unsigned.context as EthereumContext;
      const replacementFee = BigInt(replacement.gas) * BigInt(replacement.maxFeePerGas);
      expect(replacementFee).toBeGreaterThan(ETH_CAP);
      // the round's intent: the transfer's intent with max_fee raised to the replacement's fee, nothing else changed
      expect(bumpIntent).toEqual({ ...first.intent, max_fee: replacementFee.toString() });
      expect(stored.fee_bump.intent_digest).toBe(bytesToHex(transferIntentDigest(bumpIntent)));
      expect(stored.intent).toEqual(first.intent);
      expect(bump.body.fee_bump).toMatchObject({
        status: 'PENDING_APPROVAL',
        cap_raised: true,
        max_fee_base_units: replacementFee.toString(),
        fee_currency: 'ETH',
      });
      expect(bump.body.fee_bump.unsigned).toBeUndefined();
      // the phones are asked about that intent
      const ask = await pendingFor(t.transfer_id);
      expect(ask.round).toBe(1);
      expect(ask.intent).toEqual(bumpIntent);
      expect(ask.intent_digest).toBe(stored.fee_bump.intent_digest);
      expect(ask.summary).toMatchObject({ fee_bump: true, fee_currency: 'ETH' });
      expect(pushed.filter((r) => r.transfer_id === t.transfer_id).at(-1)?.intent).toEqual(bumpIntent);
      // an approval over the old cap is not one for this round
      await expect(
        coord.transfers.service.submitApproval(
          signApproval(first.intent, 'APPROVE', dev1Id, dev1, new Date().toISOString()),
        ),
      ).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
      await approveRequest(ask);
      const bumped = await waitStatus(t.transfer_id, (x) =>
        ['DONE', 'FAILED', 'REJECTED'].includes(x.fee_bump?.status),
      );
      // what the signers were asked for the bump round: the raised-cap intent and the approval over its digest
      const asked = requestsFor(t.transfer_id);
      expect(asked.length).toBe(2);
      expect(asked[1]?.evidence.intent).toEqual(bumpIntent);
      expect(asked[1]?.evidence.approvals.map((a) => a.intent_digest)).toEqual([stored.fee_bump.intent_digest]);
      expect(JSON.parse(asked[1]?.evidence.chainContext ?? '{}')).toEqual(replacement);
      expect(asked[0]?.evidence.intent).toEqual(first.intent);
      // the signers accept a replacement whose intent differs only by a higher max_fee, with fresh approvals
      expect(bumped.fee_bump.status, JSON.stringify(bumped.fee_bump)).toBe('DONE');
      await rpc('evm_mine');
      const done = await waitStatus(t.transfer_id, (x) => x.delivered_at !== null);
      expect(done.tx_hash).toBe(bumped.tx_hash);
    } finally {
      await rpc('evm_setAutomine', [true]);
      await setNextBaseFee(GWEI);
    }
  }, 400_000);
});
