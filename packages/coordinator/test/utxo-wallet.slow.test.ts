/**
 * UTXO wallets with several addresses end to end (issue #28 [utxo]) with REAL components: three
 * signer processes (2-of-3, ECDSA and FROST/Taproot master keys, enforcement on), the signer
 * gateway over libp2p, a coordinator on PGlite, and litecoind regtest (2 confirmations).
 *
 * - a wallet with three addresses (two P2WPKH, one P2TR) funded separately; one transfer that
 *   needs all three inputs lands (mined, delivered, the destination received the amount); its
 *   change went to a new internal address, and the NEXT transfer spends that change;
 * - a reorg of the deposit block before it reaches its confirmations: the deposit is not counted
 *   while reorged out, and is counted once mined again.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlClient } from '@custodian/signer-client';
import { KeyAlgorithm, signPolicy } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LitecoindNode, startLitecoind } from '../../chains/test/helpers/litecoind.js';
import { buildSigner, type NodeSpec, stopNode, tempDir } from '../../signer/test/cluster.js';
import type { Coordinator } from '../src/coordinator.js';
import { blockchainId } from '../src/directory.js';
import type { SignerGateway } from '../src/signing/gateway.js';
import { createEcdsaMasterKey, startEnforcingSigners } from './enforcing-signers.js';
import type { Json } from './helpers.js';
import { approveAs, CoordinatorApi, hexPub, pipelineCoordinator } from './pipeline-harness.js';

const adminDevice = p256.utils.randomSecretKey();
const dev1 = p256.utils.randomSecretKey();
const dev2 = p256.utils.randomSecretKey();
const serverIds = [
  '22222222-0000-4000-8000-000000000001',
  '22222222-0000-4000-8000-000000000002',
  '22222222-0000-4000-8000-000000000003',
];
const CONFIRMATIONS = 2;

let dir = '';
let ltc: LitecoindNode;
let nodes: NodeSpec[] = [];
let control: ControlClient;
let gateway: SignerGateway;
let coord: Coordinator;
const api = new CoordinatorApi();
const { req, waitStatus, enroll } = api;
let ltcAsset = '';
let dev1Id = '';
let adminDeviceId = '';

beforeAll(async () => {
  buildSigner();
  dir = tempDir('utxo-wallet-e2e');
  ltc = await startLitecoind();
  ({ nodes, control, gateway } = await startEnforcingSigners(dir, hexPub(adminDevice), serverIds));
  coord = await pipelineCoordinator(join(dir, 'coord'), {
    chains: {
      'litecoin-regtest': {
        rpcUrl: ltc.url,
        rpcUsername: 'test',
        rpcPassword: 'regtest-only',
        pollIntervalMs: 300,
        confirmations: CONFIRMATIONS,
      },
    },
    transfers: {
      gateway,
      trustedAdminKeys: [hexPub(adminDevice)],
      pipeline: { pollMs: 200, confirmationRecheckMs: 200, signDeadlineMs: 180_000 },
    },
  });
  api.url = await coord.start();
  await api.signIn(join(dir, 'coord', 'mailbox'), 'utxo');
  adminDeviceId = await enroll(adminDevice, 'admin phone');
  dev1Id = await enroll(dev1, 'approver 1');
  const dev2Id = await enroll(dev2, 'approver 2');
  await createEcdsaMasterKey(
    { nodes, control, gateway },
    coord,
    serverIds,
    [
      { id: dev1Id, secretKey: dev1 },
      { id: dev2Id, secretKey: dev2 },
    ],
    300_000,
    [KeyAlgorithm.SECP256K1_ECDSA, KeyAlgorithm.SECP256K1_TAPROOT],
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

async function addAddress(walletId: string, type: 'p2wpkh' | 'p2tr'): Promise<string> {
  const r = await req('POST', `/api/v1/profiles/${api.profileId}/wallets/${walletId}/addresses`, {
    key: api.apiKey,
    idem: true,
    body: { blockchain_id: blockchainId('litecoin-regtest'), address_type: type },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.address;
}

/** A signed policy allowing `dest` (one approval). */
async function allow(dest: string): Promise<void> {
  const p = await req('POST', `/admin/v1/profiles/${api.profileId}/policies`, {
    token: api.token,
    body: {
      name: `ltc ${dest.slice(-6)}`,
      scope: { asset_id: ltcAsset },
      whitelist: [dest],
      daily_limit: '100000000000',
    },
  });
  expect(p.status, JSON.stringify(p.body)).toBe(201);
  const sig = signPolicy(p.body.versions[0].document, adminDeviceId, adminDevice).signature;
  await req('POST', `/admin/v1/profiles/${api.profileId}/policies/${p.body.policy_id}/versions/1/signature`, {
    token: api.token,
    body: { device_id: adminDeviceId, signature: sig },
  });
}

/** Create, approve and wait for a transfer to be delivered (mining as it goes). */
async function transfer(walletId: string, dest: string, amount: string): Promise<Json> {
  const c = await req('POST', `/api/v1/profiles/${api.profileId}/transfers`, {
    key: api.apiKey,
    idem: true,
    body: { wallet_id: walletId, asset_id: ltcAsset, destination_address: dest, amount },
  });
  expect(c.body.status, JSON.stringify(c.body)).toBe('PENDING_APPROVAL');
  await approveAs(coord, c.body.transfer_id, dev1, dev1Id);
  const sent = await waitStatus(c.body.transfer_id, (x) => ['SENT', 'FAILED', 'REJECTED'].includes(x.status));
  expect(sent.status, JSON.stringify(sent)).toBe('SENT');
  await ltc.mine(CONFIRMATIONS);
  const done = await waitStatus(c.body.transfer_id, (x) => x.delivered_at !== null);
  expect(done.tx_hash).toBe(sent.tx_hash);
  return done;
}

/** The watcher's cursor (its confirmed height: tip − confirmations + 1) reached the node's tip. */
async function watcherAtTip(): Promise<void> {
  const tip = (await ltc.rpc.call<number>('getblockcount')) - CONFIRMATIONS + 1;
  for (;;) {
    // litecoin-regtest is the only chain configured: its watcher's cursor is the only one
    const c = await coord.db.query<{ height: number | null }>('SELECT max(height) AS height FROM watcher_cursors');
    if ((c[0]?.height ?? -1) >= tip) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('UTXO wallets end to end (signer processes, litecoind regtest)', () => {
  it('one transfer spends three addresses (two P2WPKH, one P2TR); its change is a new internal address the next transfer spends', async () => {
    const w = await api.createWallet('litecoin-regtest');
    const walletId = w.body.wallet_id as string;
    const a0 = w.body.addresses[0].address as string;
    const a1 = await addAddress(walletId, 'p2wpkh');
    const a2 = await addAddress(walletId, 'p2tr');
    expect(a2.startsWith('rltc1p')).toBe(true);
    for (const a of [a0, a1, a2]) await ltc.walletCall('sendtoaddress', [a, 1]);
    await ltc.mine(CONFIRMATIONS);
    await api.waitBalance(walletId, ltcAsset, '3', 60_000, 'LTC balance');
    const dest = await ltc.walletCall<string>('getnewaddress', ['', 'bech32']);
    await allow(dest);

    const first = await transfer(walletId, dest, '2.5');
    const tx = await ltc.rpc.call<Json>('getrawtransaction', [first.tx_hash, true]);
    expect(tx.vin).toHaveLength(3);
    expect(await ltc.walletCall<number>('getreceivedbyaddress', [dest, 1])).toBe(2.5);
    const changeOut = tx.vout.find(
      (o: Json) => ![dest].includes(o.scriptPubKey.address ?? o.scriptPubKey.addresses?.[0]),
    );
    const changeAddress = changeOut.scriptPubKey.address ?? changeOut.scriptPubKey.addresses[0];
    const row = await coord.db.query<{ branch: number; address_index: number }>(
      'SELECT branch, address_index FROM addresses WHERE wallet_id = $1 AND address = $2',
      [walletId, changeAddress],
    );
    expect(row).toEqual([{ branch: 1, address_index: 0 }]);
    expect([a0, a1, a2]).not.toContain(changeAddress);

    // only the change is left: the next transfer must spend it
    const second = await transfer(walletId, dest, '0.2');
    const tx2 = await ltc.rpc.call<Json>('getrawtransaction', [second.tx_hash, true]);
    expect(tx2.vin.map((i: Json) => `${i.txid}:${i.vout}`)).toEqual([`${first.tx_hash}:${changeOut.n}`]);
    expect(await ltc.walletCall<number>('getreceivedbyaddress', [dest, 1])).toBe(2.7);
  }, 600_000);

  it('a deposit reorged out before its confirmations is not counted, and is counted once mined again', async () => {
    const w = await api.createWallet('litecoin-regtest');
    const walletId = w.body.wallet_id as string;
    const addr = w.body.addresses[0].address as string;
    const txid = await ltc.walletCall<string>('sendtoaddress', [addr, 1]);
    const [block] = await ltc.mine(1);
    await watcherAtTip();
    // reorg: the deposit's block is replaced by two empty blocks (the deposit waits in the mempool)
    await ltc.rpc.call('invalidateblock', [block]);
    const miner = await ltc.walletCall<string>('getnewaddress', ['', 'bech32']);
    await ltc.rpc.call('generateblock', [miner, []]);
    await ltc.rpc.call('generateblock', [miner, []]);
    await watcherAtTip();
    const b = await req('GET', `/api/v1/profiles/${api.profileId}/wallets/${walletId}/balances/${ltcAsset}`, {
      key: api.apiKey,
    });
    expect(b.body.amount).toBe('0');
    expect((await ltc.rpc.call<string[]>('getrawmempool')).includes(txid)).toBe(true);
    // mined again: counted once it has its confirmations
    await ltc.mine(CONFIRMATIONS);
    await api.waitBalance(walletId, ltcAsset, '1', 60_000, 'LTC balance after the reorg');
  }, 300_000);
});
