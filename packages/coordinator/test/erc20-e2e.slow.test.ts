/**
 * ERC-20 end to end with REAL components: three signer processes (CGGMP21 2-of-3 ECDSA,
 * enforcement on: pinned Admin device key, approver devices learnt at the master key ceremony),
 * the signer gateway over libp2p, a coordinator on PGlite persisted to a folder, and anvil with a
 * standard ERC-20 (packages/chains/test/fixtures/TestToken.sol) deployed by the test. The token is
 * the directory's `ethereum-local` TST: the first contract anvil's dev account 0 deploys on a
 * fresh chain (its CREATE address at nonce 0), so it is a known asset of the coordinator.
 *
 * - a token deposit is detected by the watcher (TRANSACTION_DETECTED, BALANCE_UPDATED for the
 *   token) into the wallet's token balance;
 * - a token transfer: policy, quorum of two device approvals, MPC signature, broadcast, SENT,
 *   confirmed (TRANSFER_DELIVERED); the recipient's token balance grows by exactly the amount, the
 *   wallet's ETH pays the gas;
 * - fee replacement of a stuck token transfer: fresh approvals, the replacement (same nonce, same
 *   call) is mined and the original is not.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlClient } from '@custodian/signer-client';
import { p256 } from '@noble/curves/nist.js';
import { decodeFunctionData, encodeDeployData, encodeFunctionData, formatUnits, getAddress, type Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import token from '../../chains/test/fixtures/TestToken.json' with { type: 'json' };
import { type AnvilNode, startAnvil } from '../../chains/test/helpers/anvil.js';
import { buildSigner, type NodeSpec, stopNode, tempDir } from '../../signer/test/cluster.js';
import type { Coordinator } from '../src/coordinator.js';
import { ASSETS } from '../src/directory.js';
import type { SignerGateway } from '../src/signing/gateway.js';
import { createEcdsaMasterKey, startEnforcingSigners } from './enforcing-signers.js';
import type { Json } from './helpers.js';
import { approveAs, CoordinatorApi, hexPub, jsonRpc, pipelineCoordinator } from './pipeline-harness.js';

const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const FUNDER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'; // anvil's unlocked dev account 0
const ETH = 10n ** 18n;
const UNIT = 10n ** 6n; // TestToken has 6 decimals
const adminDevice = p256.utils.randomSecretKey();
const dev1 = p256.utils.randomSecretKey();
const dev2 = p256.utils.randomSecretKey();
const serverIds = [
  '11111111-0000-4000-8000-000000000001',
  '11111111-0000-4000-8000-000000000002',
  '11111111-0000-4000-8000-000000000003',
];
const TST = ASSETS.find((a) => a.blockchain === 'ethereum-local' && a.symbol === 'TST');

let dir = '';
let anvil: AnvilNode;
let nodes: NodeSpec[] = [];
let control: ControlClient;
let gateway: SignerGateway;
let coord: Coordinator;
const api = new CoordinatorApi();
const { req, waitStatus, enroll } = api;
let token_ = '';
let apiKey = '';
let profileId = '';
let walletId = '';
let ethAsset = '';
let tstAsset = '';
let source = '';
let dev1Id = '';
let dev2Id = '';
let tokenAddress = '';

const rpc = (method: string, params: unknown[] = []) => jsonRpc(anvil.url, method, params);
const abi = token.abi;
const tokenBalance = async (who: string): Promise<bigint> =>
  BigInt(
    await rpc('eth_call', [
      { to: tokenAddress, data: encodeFunctionData({ abi, functionName: 'balanceOf', args: [who] }) },
      'latest',
    ]),
  );

/** The wallet's balance of `asset` as the API shows it, in base units (`decimals`). */
async function apiBalance(asset: string, decimals: number): Promise<bigint> {
  const b = await req('GET', `/api/v1/profiles/${profileId}/wallets/${walletId}/balances/${asset}`, { key: apiKey });
  const [whole = '0', frac = ''] = String(b.body.amount ?? '0').split('.');
  return BigInt(whole) * 10n ** BigInt(decimals) + BigInt(frac.padEnd(decimals, '0') || '0');
}

/**
 * Funds the wallet: `eth` wei from anvil's account 0, then `tst` TST base units by a token
 * `transfer` call; waits until the API shows both; returns the token transaction's hash.
 */
async function fund(tst: bigint, eth: bigint): Promise<string> {
  const tstBefore = await apiBalance(tstAsset, 6);
  const ethBefore = await apiBalance(ethAsset, 18);
  await rpc('eth_sendTransaction', [{ from: FUNDER, to: source, value: `0x${eth.toString(16)}` }]);
  const data = encodeFunctionData({ abi, functionName: 'transfer', args: [source, tst] });
  const hash = await rpc('eth_sendTransaction', [{ from: FUNDER, to: tokenAddress, data }]);
  await api.waitBalance(walletId, tstAsset, formatUnits(tstBefore + tst, 6), 60_000, 'TST balance');
  await api.waitBalance(walletId, ethAsset, formatUnits(ethBefore + eth, 18), 60_000, 'ETH balance');
  return hash;
}

async function createTransfer(amount: string): Promise<Json> {
  const r = await req('POST', `/api/v1/profiles/${profileId}/transfers`, {
    key: apiKey,
    idem: true,
    body: { wallet_id: walletId, asset_id: tstAsset, destination_address: DEST, amount },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

async function eventsOf(transferId: string): Promise<string[]> {
  const r = await coord.db.query<{ event_type: string }>(
    `SELECT event_type FROM webhook_events WHERE body::jsonb->'data'->>'transfer_id' = $1 ORDER BY occurred_at`,
    [transferId],
  );
  return r.map((x) => x.event_type);
}

beforeAll(async () => {
  if (TST === undefined || TST.contractAddress === null) throw new Error('no TST asset on ethereum-local');
  buildSigner();
  dir = tempDir('erc20-e2e');
  anvil = await startAnvil();
  // the token first, from dev account 0 at nonce 0: the directory's TST address
  const data = encodeDeployData({ abi, bytecode: token.bytecode as Hex, args: ['Test Token', 'TST', 10n ** 15n] });
  const hash = await rpc('eth_sendTransaction', [{ from: FUNDER, data }]);
  const receipt = await rpc('eth_getTransactionReceipt', [hash]);
  tokenAddress = getAddress(receipt.contractAddress);
  expect(tokenAddress).toBe(TST.contractAddress);

  ({ nodes, control, gateway } = await startEnforcingSigners(dir, hexPub(adminDevice), serverIds));
  const dataDir = join(dir, 'coord');
  coord = await pipelineCoordinator(dataDir, {
    chains: { 'ethereum-local': { rpcUrl: anvil.url, pollIntervalMs: 300 } },
    transfers: {
      gateway,
      trustedAdminKeys: [hexPub(adminDevice)],
      pipeline: { pollMs: 200, confirmationRecheckMs: 200, signDeadlineMs: 180_000 },
    },
  });
  api.url = await coord.start();
  await api.signIn(join(dataDir, 'mailbox'), 'erc20');
  ({ token: token_, apiKey, profileId } = api);
  const adminDeviceId = await enroll(adminDevice, 'admin phone');
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
  ethAsset = await api.assetId((a) => a.blockchain === 'ethereum-local' && a.kind === 'native');
  tstAsset = await api.assetId((a) => a.blockchain === 'ethereum-local' && a.symbol === 'TST');
  const w = await api.createWallet('ethereum-local');
  walletId = w.body.wallet_id;
  source = w.body.addresses[0].address;
  // TST: whitelist DEST, a quorum of two approvals for any amount
  await api.signedPolicy(
    {
      name: 'tst',
      scope: { blockchain: 'ethereum-local', asset_id: tstAsset },
      whitelist: [DEST],
      daily_limit: (10_000n * UNIT).toString(),
      approvals: { quorum: 2, above_amount: '0' },
    },
    { deviceId: adminDeviceId, secretKey: adminDevice },
  );
}, 600_000);

afterAll(async () => {
  await coord?.stop().catch(() => {});
  await control?.stop().catch(() => {});
  await Promise.all(nodes.map((n) => stopNode(n)));
  await anvil?.stop();
  if (dir && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(dir, { recursive: true, force: true });
});

describe('ERC-20 end to end (signer processes, anvil, a deployed standard token)', () => {
  it('a token deposit is detected into the wallet token balance (TRANSACTION_DETECTED, BALANCE_UPDATED)', async () => {
    const before = await apiBalance(tstAsset, 6);
    const hash = await fund(1000n * UNIT, ETH / 10n);
    const ev = await coord.db.query<{ event_type: string; body: string }>(
      `SELECT event_type, body FROM webhook_events WHERE event_type IN ('TRANSACTION_DETECTED','BALANCE_UPDATED')
         AND body::jsonb->'data'->>'asset_id' = $1 ORDER BY occurred_at`,
      [tstAsset],
    );
    const detected = ev.filter((e) => e.event_type === 'TRANSACTION_DETECTED').map((e) => JSON.parse(e.body).data);
    expect(detected.length).toBeGreaterThanOrEqual(1);
    expect(detected.at(-1)).toMatchObject({
      wallet_id: walletId,
      tx_hash: hash,
      direction: 'incoming',
      amount: '1000',
      amount_base_units: (1000n * UNIT).toString(),
    });
    const updated = ev.filter((e) => e.event_type === 'BALANCE_UPDATED').map((e) => JSON.parse(e.body).data);
    expect(updated.at(-1)).toMatchObject({ wallet_id: walletId, balance: formatUnits(before + 1000n * UNIT, 6) });
  }, 120_000);

  it('a token transfer: two approvals, MPC signature, SENT, delivered; the recipient gets exactly the amount, ETH pays the gas', async () => {
    await fund(100n * UNIT, ETH / 10n);
    const apiBefore = await apiBalance(tstAsset, 6);
    const destBefore = await tokenBalance(DEST);
    const srcBefore = await tokenBalance(source);
    const ethBefore = BigInt(await rpc('eth_getBalance', [source, 'latest']));
    const t = await createTransfer('12.5');
    expect(t).toMatchObject({ status: 'PENDING_APPROVAL', approvals_required: 2, fee_currency: 'ETH' });
    expect((await approveAs(coord, t.transfer_id, dev1, dev1Id)).status).toBe('PENDING_APPROVAL');
    expect((await approveAs(coord, t.transfer_id, dev2, dev2Id)).status).toBe('PENDING_SIGNATURE');
    const done = await waitStatus(
      t.transfer_id,
      (x) => x.delivered_at !== null || ['FAILED', 'REJECTED'].includes(x.status),
    );
    expect(done.status, JSON.stringify(done)).toBe('SENT');
    const amount = 12_500_000n;
    expect((await tokenBalance(DEST)) - destBefore).toBe(amount);
    expect(srcBefore - (await tokenBalance(source))).toBe(amount);
    const receipt = await rpc('eth_getTransactionReceipt', [done.tx_hash]);
    expect(receipt.status).toBe('0x1');
    expect(receipt.from.toLowerCase()).toBe(source.toLowerCase());
    expect(getAddress(receipt.to)).toBe(tokenAddress);
    // the gas, in ETH, from the wallet: exactly gasUsed × effectiveGasPrice, no ETH value sent
    const gasPaid = BigInt(receipt.gasUsed) * BigInt(receipt.effectiveGasPrice);
    expect(ethBefore - BigInt(await rpc('eth_getBalance', [source, 'latest']))).toBe(gasPaid);
    const tx = await rpc('eth_getTransactionByHash', [done.tx_hash]);
    expect(BigInt(tx.value)).toBe(0n);
    expect(decodeFunctionData({ abi, data: tx.input })).toMatchObject({
      functionName: 'transfer',
      args: [DEST, amount],
    });
    const list = await eventsOf(t.transfer_id);
    expect(list[0]).toBe('TRANSFER_CREATED');
    expect(list.at(-1)).toBe('TRANSFER_DELIVERED');
    // the coordinator's token balance follows the chain
    await api.waitBalance(walletId, tstAsset, formatUnits(apiBefore - amount, 6), 60_000, 'TST after the transfer');
  }, 300_000);

  it('fee replacement of a stuck token transfer: fresh approvals, same nonce, the replacement is mined and the original is not', async () => {
    await fund(100n * UNIT, ETH / 10n);
    const destBefore = await tokenBalance(DEST);
    await rpc('evm_setAutomine', [false]);
    try {
      const t = await createTransfer('2');
      await approveAs(coord, t.transfer_id, dev1, dev1Id);
      await approveAs(coord, t.transfer_id, dev2, dev2Id);
      const sent = await waitStatus(t.transfer_id, (x) => x.status === 'SENT' || x.status === 'FAILED');
      expect(sent.status, JSON.stringify(sent)).toBe('SENT');
      const original = await rpc('eth_getTransactionByHash', [sent.tx_hash]);
      const bump = await req('POST', `/admin/v1/profiles/${profileId}/transfers/${t.transfer_id}/fee-bump`, {
        token: token_,
        body: { priority: 'FAST' },
      });
      expect(bump.status, JSON.stringify(bump.body)).toBe(200);
      expect(bump.body.fee_bump.status).toBe('PENDING_APPROVAL');
      // the bump's own round: the policy's quorum of two fresh decisions
      await approveAs(coord, t.transfer_id, dev1, dev1Id);
      await approveAs(coord, t.transfer_id, dev2, dev2Id);
      const bumped = await waitStatus(t.transfer_id, (x) =>
        ['DONE', 'FAILED', 'REJECTED'].includes(x.fee_bump?.status),
      );
      expect(bumped.fee_bump.status, JSON.stringify(bumped.fee_bump)).toBe('DONE');
      expect(bumped.tx_hash).not.toBe(sent.tx_hash);
      const replacement = await rpc('eth_getTransactionByHash', [bumped.tx_hash]);
      expect(replacement.nonce).toBe(original.nonce);
      expect(replacement.input).toBe(original.input); // the same transfer(DEST, amount) call
      expect(BigInt(replacement.maxFeePerGas)).toBeGreaterThan(BigInt(original.maxFeePerGas));
      await rpc('evm_mine');
      const done = await waitStatus(t.transfer_id, (x) => x.delivered_at !== null);
      expect(done.tx_hash).toBe(bumped.tx_hash);
      expect((await rpc('eth_getTransactionReceipt', [bumped.tx_hash])).status).toBe('0x1');
      expect(await rpc('eth_getTransactionReceipt', [sent.tx_hash])).toBeNull();
      expect((await tokenBalance(DEST)) - destBefore).toBe(2n * UNIT); // once, not twice
      await rpc('evm_mine');
      expect(await rpc('eth_getTransactionReceipt', [sent.tx_hash])).toBeNull();
    } finally {
      await rpc('evm_setAutomine', [true]);
    }
  }, 400_000);
});
