/**
 * Review of issue #27 item 2 (Ethereum nonces and the signing window): two transfers of one
 * Ethereum address wait for their signers; the first (nonce N) is built and stored first, the
 * second gets N + 1. The first's signing window ends (FAILED / SIGNING_WINDOW_EXPIRED, never
 * signed); the signers come back within the second's window. The second must then be signed with
 * nonce N — a transaction with N + 1 after a nonce nobody will ever use is never mined, and the
 * transfer would stay SENT, undelivered, for good (and block every later transaction of the
 * address). Safe only because the second was never sent to any signer before: its transaction
 * with N + 1 was never signed.
 *
 * REAL components: three signer processes (CGGMP21 2-of-3 ECDSA, enforcement on), the gateway over
 * libp2p, a coordinator on PGlite with its own pipeline (40 s signing window), anvil.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlClient } from '@custodian/signer-client';
import { signApproval } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnvilNode, startAnvil } from '../../chains/test/helpers/anvil.js';
import { buildSigner, type NodeSpec, startNode, stopNode, tempDir } from '../../signer/test/cluster.js';
import type { Coordinator } from '../src/coordinator.js';
import type { SignerGateway } from '../src/signing/gateway.js';
import { createEcdsaMasterKey, startEnforcingSigners } from './enforcing-signers.js';
import type { Json } from './helpers.js';
import { CoordinatorApi, hexPub, jsonRpc, pipelineCoordinator } from './pipeline-harness.js';

const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const ETH = 10n ** 18n;
const adminDevice = p256.utils.randomSecretKey();
const dev1 = p256.utils.randomSecretKey();
const serverIds = [
  '33333333-0000-4000-8000-000000000001',
  '33333333-0000-4000-8000-000000000002',
  '33333333-0000-4000-8000-000000000003',
];

let dir = '';
let anvil: AnvilNode;
let nodes: NodeSpec[] = [];
let control: ControlClient;
let gateway: SignerGateway;
let coord: Coordinator;
const api = new CoordinatorApi();
let dev1Id = '';
let walletId = '';
let assetId = '';

const nonceOf = async (id: string): Promise<number | null> =>
  (
    await coord.db.query<{ n: number | null }>(
      `SELECT (unsigned->'context'->>'nonce')::int AS n FROM transfers WHERE transfer_id = $1`,
      [id],
    )
  )[0]?.n ?? null;

async function approvedTransfer(amount: string): Promise<string> {
  const c = await api.req('POST', `/api/v1/profiles/${api.profileId}/transfers`, {
    key: api.apiKey,
    idem: true,
    body: { wallet_id: walletId, asset_id: assetId, destination_address: DEST, amount },
  });
  expect(c.body, JSON.stringify(c.body)).toMatchObject({ status: 'PENDING_APPROVAL' });
  const r = (await coord.transfers.service.pendingApprovals(dev1Id)).find((x) => x.transfer_id === c.body.transfer_id);
  if (r === undefined) throw new Error('no approval request');
  await coord.transfers.service.submitApproval(
    signApproval(r.intent, 'APPROVE', dev1Id, dev1, new Date().toISOString()),
  );
  return c.body.transfer_id;
}

beforeAll(async () => {
  buildSigner();
  dir = tempDir('faults-nonce-gap');
  anvil = await startAnvil();
  ({ nodes, control, gateway } = await startEnforcingSigners(dir, hexPub(adminDevice), serverIds));
  coord = await pipelineCoordinator(join(dir, 'coord'), {
    chains: { 'ethereum-local': { rpcUrl: anvil.url, pollIntervalMs: 300 } },
    transfers: {
      gateway,
      trustedAdminKeys: [hexPub(adminDevice)],
      pipeline: {
        pollMs: 200,
        confirmationRecheckMs: 200,
        signingWindowMs: 40_000,
        retryInitialMs: 300,
        retryMaxMs: 1000,
        signDeadlineMs: 60_000,
      },
    },
  });
  api.url = await coord.start();
  await api.signIn(join(dir, 'coord', 'mailbox'), 'nonce-gap');
  const adminDeviceId = await api.enroll(adminDevice, 'admin phone');
  dev1Id = await api.enroll(dev1, 'approver 1');
  await createEcdsaMasterKey({ nodes, control, gateway }, coord, serverIds, [{ id: dev1Id, secretKey: dev1 }], 300_000);
  assetId = await api.assetId((a) => a.blockchain === 'ethereum-local' && a.kind === 'native');
  const w = await api.createWallet('ethereum-local');
  walletId = w.body.wallet_id;
  await jsonRpc(anvil.url, 'anvil_setBalance', [w.body.addresses[0].address, `0x${(100n * ETH).toString(16)}`]);
  await coord.wallets.balances.setBalance(walletId, assetId, (100n * ETH).toString());
  await api.signedPolicy(
    {
      name: 'eth',
      scope: { blockchain: 'ethereum-local', asset_id: assetId },
      whitelist: [DEST],
      daily_limit: (50n * ETH).toString(),
      approvals: { quorum: 1, above_amount: '0' },
    },
    { deviceId: adminDeviceId, secretKey: adminDevice },
  );
}, 600_000);

afterAll(async () => {
  await coord?.stop().catch(() => {});
  await control?.stop().catch(() => {});
  await Promise.all(nodes.map((n) => stopNode(n, 'SIGKILL')));
  await anvil?.stop();
  if (dir && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(dir, { recursive: true, force: true });
});

describe('a nonce left behind by a transfer whose signing window ended', () => {
  it('the next transfer of the address is signed with that nonce and mined', async () => {
    await Promise.all([stopNode(nodes[1]!, 'SIGKILL'), stopNode(nodes[2]!, 'SIGKILL')]);
    const a = await approvedTransfer('0.1');
    for (let i = 0; i < 200 && (await nonceOf(a)) === null; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await nonceOf(a)).toBe(0);
    // B a while later: its window ends after A's
    await new Promise((r) => setTimeout(r, 12_000));
    const b = await approvedTransfer('0.2');
    for (let i = 0; i < 200 && (await nonceOf(b)) === null; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await nonceOf(b)).toBe(1);

    const failedA = await api.waitStatus(a, (t) => t.status !== 'PENDING_SIGNATURE', 90_000);
    expect(failedA, JSON.stringify(failedA)).toMatchObject({ status: 'FAILED', sub_status: 'SIGNING_WINDOW_EXPIRED' });
    await startNode(nodes[1]!);
    const sentB = await api.waitStatus(b, (t) => !['PENDING_SIGNATURE', 'READY_TO_SEND'].includes(t.status), 90_000);
    expect(sentB, JSON.stringify(sentB)).toMatchObject({ status: 'SENT' });
    await jsonRpc(anvil.url, 'evm_mine', []);
    const delivered: Json = await api
      .waitStatus(b, (t) => t.delivered_at !== null, 20_000)
      .catch(() => api.getTransfer(b));
    expect({ nonce: await nonceOf(b), delivered: delivered.delivered_at !== null }).toEqual({
      nonce: 0,
      delivered: true,
    });
  }, 400_000);
});
