/**
 * Transfers end to end with REAL components: three signer processes (CGGMP21 2-of-3 ECDSA,
 * enforcement on: pinned Admin device key, approver devices learnt at the master key ceremony),
 * the signer gateway over libp2p, a coordinator on PGlite persisted to a folder, and anvil.
 *
 * - deposit detected by the watcher (TRANSACTION_DETECTED, BALANCE_UPDATED) → the wallet balance;
 * - happy path: policy signed by the Admin device, transfer, device approval, MPC signature,
 *   broadcast, SENT, confirmed (TRANSFER_DELIVERED), the ETH arrives;
 * - a tampered policy in the coordinator's database: the signers refuse
 *   (REJECTED / POLICY_SIGNATURE_VERIFICATION_FAILED + the security event);
 * - coordinator restart mid-pipeline (PENDING_SIGNATURE, and READY_TO_SEND after a broadcast whose
 *   SENT was lost): resumed, nothing broadcast twice;
 * - fee bump of a stuck transaction with a fresh round of approvals;
 * - coordinator-compromise requests sent straight to the signers: non-whitelisted destination,
 *   forged approvals, too few approvals, tampered policy, digests not matching the fields — refused.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { type EthereumContext, recomputeEthereumDigests } from '@custodian/chains';
import { bytesToHex, deriveSecp256k1 } from '@custodian/crypto';
import type { ControlClient } from '@custodian/signer-client';
import {
  CeremonyKind,
  KeyAlgorithm,
  Outcome,
  type SignedPolicy,
  signApproval,
  signPolicy,
  type TransferIntent,
} from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnvilNode, startAnvil } from '../../chains/test/helpers/anvil.js';
import { type LitecoindNode, startLitecoind } from '../../chains/test/helpers/litecoind.js';
import { buildSigner, type NodeSpec, stopNode, tempDir } from '../../signer/test/cluster.js';
import type { Coordinator } from '../src/coordinator.js';
import type { GatewaySignResult, SignerGateway } from '../src/signing/gateway.js';
import { createEcdsaMasterKey, startEnforcingSigners } from './enforcing-signers.js';
import type { Json } from './helpers.js';
import { approveAs, CoordinatorApi, hexPub, jsonRpc, localChains, pipelineCoordinator } from './pipeline-harness.js';

const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const OTHER = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
const FUNDER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'; // anvil's unlocked dev account 0
const ETH = 10n ** 18n;
const adminDevice = p256.utils.randomSecretKey();
const dev1 = p256.utils.randomSecretKey();
const dev2 = p256.utils.randomSecretKey();

let dir = '';
let anvil: AnvilNode;
let ltc: LitecoindNode;
let nodes: NodeSpec[] = [];
let control: ControlClient;
let gateway: SignerGateway;
/** What the gateway answered the pipeline, in order (the pipeline's signing requests). */
const signResults: GatewaySignResult[] = [];
let coord: Coordinator;
const api = new CoordinatorApi();
const { req, waitStatus, enroll } = api;
let token = '';
let apiKey = '';
let profileId = '';
let walletId = '';
let assetId = '';
let source = '';
let keyId = '';
let masterKeyId = '';
let adminDeviceId = '';
let dev1Id = '';
let dev2Id = '';
let policy: SignedPolicy;
const serverIds = [
  '11111111-0000-4000-8000-000000000001',
  '11111111-0000-4000-8000-000000000002',
  '11111111-0000-4000-8000-000000000003',
];

const rpc = (method: string, params: unknown[] = []) => jsonRpc(anvil.url, method, params);

async function startCoordinator(dataDir: string): Promise<Coordinator> {
  const c = await pipelineCoordinator(dataDir, {
    chains: localChains(anvil.url, ltc.url),
    transfers: {
      gateway: {
        sign: async (r) => {
          const res = await gateway.sign(r);
          signResults.push(res);
          return res;
        },
      },
      trustedAdminKeys: [hexPub(adminDevice)],
      pipeline: { pollMs: 200, confirmationRecheckMs: 200, signDeadlineMs: 180_000 },
    },
  });
  api.url = await c.start();
  return c;
}

async function createTransfer(amount: string, dest = DEST): Promise<Json> {
  const r = await req('POST', `/api/v1/profiles/${profileId}/transfers`, {
    key: apiKey,
    idem: true,
    body: { wallet_id: walletId, asset_id: assetId, destination_address: dest, amount },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

beforeAll(async () => {
  buildSigner();
  dir = tempDir('pipeline-e2e');
  anvil = await startAnvil();
  ltc = await startLitecoind();
  // signers: enforcement on, pinned Admin device key
  ({ nodes, control, gateway } = await startEnforcingSigners(dir, hexPub(adminDevice), serverIds));

  coord = await startCoordinator(join(dir, 'coord'));
  await api.signIn(join(dir, 'coord', 'mailbox'), 'e2e');
  ({ token, apiKey, profileId } = api);
  adminDeviceId = await enroll(adminDevice, 'admin phone');
  dev1Id = await enroll(dev1, 'approver 1');
  dev2Id = await enroll(dev2, 'approver 2');

  // master key ceremony (ECDSA) among the 3 signers, with the 2 approver devices
  const created = await createEcdsaMasterKey(
    { nodes, control, gateway },
    coord,
    serverIds,
    [
      { id: dev1Id, secretKey: dev1 },
      { id: dev2Id, secretKey: dev2 },
    ],
    300_000,
  );
  ({ keyId, masterKeyId } = created);
  const { ek } = created;

  assetId = await api.assetId((a) => a.blockchain === 'ethereum-local' && a.kind === 'native');
  const w = await api.createWallet('ethereum-local');
  walletId = w.body.wallet_id;
  source = w.body.addresses[0].address;
  // the address is the derived key of the threshold key
  const path = w.body.addresses[0].derivation_path.split('/').slice(1).map(Number);
  expect(bytesToHex(deriveSecp256k1(ek.publicKey, ek.chainCode, path).publicKey)).toBe(w.body.addresses[0].public_key);

  // policy: whitelist DEST, ≤ 5 ETH per transfer, 8 ETH a day, 2 approvals above 2 ETH
  policy = await api.signedPolicy(
    {
      name: 'eth',
      scope: { blockchain: 'ethereum-local', asset_id: assetId },
      whitelist: [DEST],
      per_transaction_limit: (5n * ETH).toString(),
      daily_limit: (8n * ETH).toString(),
      approvals: { quorum: 2, above_amount: (2n * ETH).toString() },
    },
    { deviceId: adminDeviceId, secretKey: adminDevice },
  );
}, 600_000);

afterAll(async () => {
  await coord?.stop().catch(() => {});
  await control?.stop().catch(() => {});
  await Promise.all(nodes.map((n) => stopNode(n)));
  await anvil?.stop();
  await ltc?.stop();
  if (dir && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(dir, { recursive: true, force: true });
});

describe('transfers end to end (signer processes, anvil)', () => {
  it('a deposit is detected and confirmed by the watcher into the wallet balance', async () => {
    await rpc('eth_sendTransaction', [{ from: FUNDER, to: source, value: `0x${(20n * ETH).toString(16)}` }]);
    await api.waitBalance(walletId, assetId, '20', 30_000);
    const ev = await coord.db.query<{ event_type: string }>(
      `SELECT DISTINCT event_type FROM webhook_events WHERE event_type IN ('TRANSACTION_DETECTED','BALANCE_UPDATED')`,
    );
    expect(ev.map((e) => e.event_type).sort()).toEqual(['BALANCE_UPDATED', 'TRANSACTION_DETECTED']);
  }, 60_000);

  it('fee estimate from the node (seed §4) and a dry run', async () => {
    const body = { wallet_id: walletId, asset_id: assetId, destination_address: DEST, amount: '1' };
    const slow = await req('POST', `/api/v1/profiles/${profileId}/fee-estimate`, {
      key: apiKey,
      idem: true,
      body: { ...body, priority: 'SLOW' },
    });
    expect(slow.status, JSON.stringify(slow.body)).toBe(200);
    expect(slow.body).toMatchObject({ fee_currency: 'ETH', fee_value_usd: null, priority: 'SLOW' });
    expect(Number(slow.body.fee_value)).toBeGreaterThan(0);
    expect(BigInt(slow.body.metadata.gas_limit)).toBeGreaterThanOrEqual(21000n);
    const dry = await req('POST', `/api/v1/profiles/${profileId}/transfers/dry-run`, {
      key: apiKey,
      body: { ...body, amount: '3' },
    });
    expect(dry.body).toMatchObject({ decision: 'ALLOW', approvals_required: 2 });
  }, 60_000);

  it('happy path: quorum of 2 device approvals, MPC signature, broadcast, SENT, delivered; the ETH arrives', async () => {
    const before = BigInt(await rpc('eth_getBalance', [DEST, 'latest']));
    const t = await createTransfer('3');
    expect(t).toMatchObject({ status: 'PENDING_APPROVAL', approvals_required: 2 });
    // quorum of 2 distinct devices: one approval is not enough
    expect((await approveAs(coord, t.transfer_id, dev1, dev1Id)).status).toBe('PENDING_APPROVAL');
    expect((await approveAs(coord, t.transfer_id, dev2, dev2Id)).status).toBe('PENDING_SIGNATURE');
    const done = await waitStatus(
      t.transfer_id,
      (x) => x.delivered_at !== null || ['FAILED', 'REJECTED'].includes(x.status),
    );
    expect(done.status, JSON.stringify(done)).toBe('SENT');
    // server signers only: the gateway combined the ECDSA signature from the signers' shares itself
    expect(signResults.at(-1)).toMatchObject({ ok: true, combinedByCoordinator: true });
    expect(BigInt(await rpc('eth_getBalance', [DEST, 'latest'])) - before).toBe(3n * ETH);
    const receipt = await rpc('eth_getTransactionReceipt', [done.tx_hash]);
    expect(receipt.status).toBe('0x1');
    expect(receipt.from.toLowerCase()).toBe(source.toLowerCase());
    const types = await coord.db.query<{ event_type: string }>(
      `SELECT event_type FROM webhook_events WHERE body::jsonb->'data'->>'transfer_id' = $1 ORDER BY occurred_at`,
      [t.transfer_id],
    );
    const list = types.map((x) => x.event_type);
    expect(list[0]).toBe('TRANSFER_CREATED');
    expect(list.at(-1)).toBe('TRANSFER_DELIVERED');
  }, 300_000);

  it('a policy tampered in the coordinator database: the signers refuse (POLICY_SIGNATURE_VERIFICATION_FAILED)', async () => {
    // the compromised coordinator widens the whitelist in its own copy of the signed policy
    await coord.db.query(
      `UPDATE policy_versions SET signed = jsonb_set(signed, '{document,whitelist}', $1::jsonb) WHERE status = 'ACTIVE'`,
      [JSON.stringify([DEST, OTHER])],
    );
    const t = await createTransfer('1', OTHER);
    expect(t.status).toBe('PENDING_APPROVAL');
    await approveAs(coord, t.transfer_id, dev1, dev1Id);
    const done = await waitStatus(t.transfer_id, (x) => !['PENDING_APPROVAL', 'PENDING_SIGNATURE'].includes(x.status));
    expect(done).toMatchObject({ status: 'REJECTED', sub_status: 'POLICY_SIGNATURE_VERIFICATION_FAILED' });
    const sec = await coord.db.query(
      `SELECT 1 FROM webhook_events WHERE event_type = 'POLICY_SIGNATURE_VERIFICATION_FAILED'`,
    );
    expect(sec.length).toBe(1);
    await coord.db.query(`UPDATE policy_versions SET signed = $1::jsonb WHERE status = 'ACTIVE'`, [
      JSON.stringify(policy),
    ]);
  }, 120_000);

  it('coordinator restart mid-pipeline: resumed, nothing broadcast twice', async () => {
    // 1. stop the pipeline with a transfer in PENDING_SIGNATURE, restart, it completes
    await coord.transfers.pipeline.stop();
    const t = await createTransfer('0.25');
    await approveAs(coord, t.transfer_id, dev2, dev2Id);
    expect(
      (await req('GET', `/api/v1/profiles/${profileId}/transfers/${t.transfer_id}`, { key: apiKey })).body.status,
    ).toBe('PENDING_SIGNATURE');
    await coord.stop();
    coord = await startCoordinator(join(dir, 'coord'));
    const done = await waitStatus(
      t.transfer_id,
      (x) => x.delivered_at !== null || ['FAILED', 'REJECTED'].includes(x.status),
    );
    expect(done.status, JSON.stringify(done)).toBe('SENT');

    // 2. crash after the broadcast but before SENT was persisted: back to READY_TO_SEND, restart
    const nonceBefore = Number(await rpc('eth_getTransactionCount', [source, 'latest']));
    await coord.transfers.pipeline.stop();
    await coord.db.query(
      `UPDATE transfers SET status = 'READY_TO_SEND', sent_at = NULL, delivered_at = NULL WHERE transfer_id = $1`,
      [t.transfer_id],
    );
    await coord.stop();
    coord = await startCoordinator(join(dir, 'coord'));
    const again = await waitStatus(t.transfer_id, (x) => x.status === 'SENT' && x.delivered_at !== null);
    expect(again.tx_hash).toBe(done.tx_hash);
    expect(Number(await rpc('eth_getTransactionCount', [source, 'latest']))).toBe(nonceBefore);
    const sent = await coord.db.query(
      `SELECT 1 FROM webhook_events WHERE event_type = 'TRANSFER_DELIVERED' AND body::jsonb->'data'->>'transfer_id' = $1`,
      [t.transfer_id],
    );
    expect(sent.length).toBe(2); // delivered announced again after the simulated crash; one transaction on chain
  }, 400_000);

  it('fee bump of a stuck transaction: new approvals, replacement signed, the replacement is mined', async () => {
    await rpc('evm_setAutomine', [false]);
    try {
      const t = await createTransfer('0.5');
      await approveAs(coord, t.transfer_id, dev1, dev1Id);
      const sent = await waitStatus(t.transfer_id, (x) => x.status === 'SENT' || x.status === 'FAILED');
      expect(sent.status).toBe('SENT');
      const bump = await req('POST', `/admin/v1/profiles/${profileId}/transfers/${t.transfer_id}/fee-bump`, {
        token,
        body: { priority: 'FAST' },
      });
      expect(bump.status, JSON.stringify(bump.body)).toBe(200);
      expect(bump.body.fee_bump.status).toBe('PENDING_APPROVAL');
      // the bump needs its own approval: a fresh decision of a device
      await approveAs(coord, t.transfer_id, dev2, dev2Id);
      const bumped = await waitStatus(t.transfer_id, (x) =>
        ['DONE', 'FAILED', 'REJECTED'].includes(x.fee_bump?.status),
      );
      expect(bumped.fee_bump.status, JSON.stringify(bumped.fee_bump)).toBe('DONE');
      expect(bumped.tx_hash).not.toBe(sent.tx_hash);
      await rpc('evm_mine');
      const done = await waitStatus(t.transfer_id, (x) => x.delivered_at !== null);
      expect(done.tx_hash).toBe(bumped.tx_hash);
      expect((await rpc('eth_getTransactionReceipt', [bumped.tx_hash])).status).toBe('0x1');
    } finally {
      await rpc('evm_setAutomine', [true]);
    }
  }, 400_000);

  it('Litecoin regtest: deposit (UTXO watcher), P2WPKH transfer signed by the threshold key, confirmed', async () => {
    const ltcAsset = await api.assetId((a) => a.blockchain === 'litecoin-regtest');
    const w = await api.createWallet('litecoin-regtest');
    const ltcWallet = w.body.wallet_id;
    const addr = w.body.addresses[0].address as string;
    expect(addr.startsWith('rltc1q')).toBe(true);
    await ltc.walletCall('sendtoaddress', [addr, 5]);
    await ltc.mine(1);
    await api.waitBalance(ltcWallet, ltcAsset, '5', 60_000, 'LTC balance');
    const dest = await ltc.walletCall<string>('getnewaddress', ['', 'bech32']);
    const p = await req('POST', `/admin/v1/profiles/${profileId}/policies`, {
      token,
      body: { name: 'ltc', scope: { asset_id: ltcAsset }, whitelist: [dest], daily_limit: '1000000000' },
    });
    const sig = signPolicy(p.body.versions[0].document, adminDeviceId, adminDevice).signature;
    await req('POST', `/admin/v1/profiles/${profileId}/policies/${p.body.policy_id}/versions/1/signature`, {
      token,
      body: { device_id: adminDeviceId, signature: sig },
    });
    const c = await req('POST', `/api/v1/profiles/${profileId}/transfers`, {
      key: apiKey,
      idem: true,
      body: { wallet_id: ltcWallet, asset_id: ltcAsset, destination_address: dest, amount: '1.25' },
    });
    expect(c.body.status, JSON.stringify(c.body)).toBe('PENDING_APPROVAL');
    await approveAs(coord, c.body.transfer_id, dev1, dev1Id);
    const sent = await waitStatus(c.body.transfer_id, (x) => ['SENT', 'FAILED', 'REJECTED'].includes(x.status));
    expect(sent.status, JSON.stringify(sent)).toBe('SENT');
    await ltc.mine(1);
    const done = await waitStatus(c.body.transfer_id, (x) => x.delivered_at !== null);
    expect(done.tx_hash).toBe(sent.tx_hash);
    expect(await ltc.walletCall<number>('getreceivedbyaddress', [dest, 1])).toBe(1.25);
  }, 300_000);

  it('coordinator-compromise requests sent straight to the signers are refused', async () => {
    const mk = (
      await coord.db.query<{ secp256k1_public_key: string }>(
        'SELECT secp256k1_public_key FROM master_keys WHERE master_key_id = $1',
        [masterKeyId],
      )
    )[0]!;
    const addr = (
      await coord.db.query<{ public_key: string; derivation_path: string }>(
        'SELECT public_key, derivation_path FROM addresses WHERE wallet_id = $1',
        [walletId],
      )
    )[0]!;
    expect(mk.secp256k1_public_key).toHaveLength(66);
    const path = addr.derivation_path.split('/').slice(1).map(Number);
    const base: TransferIntent = {
      transfer_id: crypto.randomUUID(),
      profile_id: profileId,
      wallet_id: walletId,
      blockchain: 'ethereum-local',
      asset_id: assetId,
      asset_symbol: 'ETH',
      asset_decimals: 18,
      asset_contract: null,
      source_address: source,
      destination_address: DEST,
      amount: ETH.toString(),
      derivation_path: path,
      key_algorithm: 'SECP256K1_ECDSA',
      key_id: keyId,
      created_at: new Date().toISOString(),
      max_fee: '10000000000000000',
    };
    const ctx: EthereumContext = {
      chainId: 31337,
      from: source,
      fromPublicKey: addr.public_key,
      fromPath: path,
      nonce: 1000,
      gas: '21000',
      maxFeePerGas: '3000000000',
      maxPriorityFeePerGas: '1000000000',
    };
    const digestsOf = (i: TransferIntent) =>
      recomputeEthereumDigests(
        { asset: { kind: 'native' }, destination: i.destination_address, amount: BigInt(i.amount) },
        ctx,
      ).map((d) => d.digest);
    const send = (
      intent: TransferIntent,
      o: { policy?: SignedPolicy; approvals?: ReturnType<typeof signApproval>[]; digests?: Uint8Array[] },
    ) =>
      gateway.sign({
        keyId,
        algorithm: 'SECP256K1_ECDSA',
        parties: [
          { kind: 'server', id: serverIds[0] as string },
          { kind: 'server', id: serverIds[1] as string },
        ],
        derivationPath: path,
        digests: o.digests ?? digestsOf(intent),
        evidence: {
          intent,
          policy: o.policy ?? policy,
          approvals: o.approvals ?? [signApproval(intent, 'APPROVE', dev1Id, dev1, new Date().toISOString())],
          chainContext: JSON.stringify(ctx),
        },
        deadline: new Date(Date.now() + 60_000),
      });
    const refusal = async (p: ReturnType<typeof send>) => {
      const r = await p;
      return r.ok ? 'SIGNED' : r.reason === 'REFUSED' ? r.refusal : r.reason;
    };
    // non-whitelisted destination
    const other = { ...base, transfer_id: crypto.randomUUID(), destination_address: OTHER };
    expect(await refusal(send(other, {}))).toBe('DESTINATION_NOT_WHITELISTED');
    // forged approval (signed by a key that is not the device's)
    const big = { ...base, transfer_id: crypto.randomUUID(), amount: (3n * ETH).toString() };
    const forged = signApproval(big, 'APPROVE', dev2Id, p256.utils.randomSecretKey(), new Date().toISOString());
    const good = signApproval(big, 'APPROVE', dev1Id, dev1, new Date().toISOString());
    expect(await refusal(send(big, { approvals: [good, { ...forged, device_public_key: hexPub(dev2) }] }))).toBe(
      'APPROVAL_SIGNATURE_INVALID',
    );
    // too few approvals (quorum 2 above 2 ETH)
    expect(await refusal(send(big, { approvals: [good] }))).toBe('INSUFFICIENT_APPROVALS');
    // tampered policy (limit lifted after the Admin signed)
    const lifted: SignedPolicy = { ...policy, document: { ...policy.document, per_transaction_limit: null } };
    const huge = { ...base, transfer_id: crypto.randomUUID(), amount: (6n * ETH).toString() };
    expect(
      await refusal(
        send(huge, {
          policy: lifted,
          approvals: [
            signApproval(huge, 'APPROVE', dev1Id, dev1, new Date().toISOString()),
            signApproval(huge, 'APPROVE', dev2Id, dev2, new Date().toISOString()),
          ],
        }),
      ),
    ).toBe('POLICY_SIGNATURE_VERIFICATION_FAILED');
    // digests of another destination than the evidence says
    const honest = { ...base, transfer_id: crypto.randomUUID() };
    expect(await refusal(send(honest, { digests: digestsOf({ ...honest, destination_address: OTHER }) }))).toBe(
      'DIGEST_MISMATCH',
    );
    // no evidence at all
    const bare = await control.startCeremony(
      (nodes[0] as NodeSpec).peerId,
      {
        ceremonyId: crypto.getRandomValues(new Uint8Array(24)),
        kind: CeremonyKind.SIGN,
        parties: [{ peerId: (nodes[0] as NodeSpec).peerId }, { peerId: (nodes[1] as NodeSpec).peerId }],
        threshold: 2,
        deadlineUnixMs: Date.now() + 30_000,
        sign: { keyId, algorithm: KeyAlgorithm.SECP256K1_ECDSA, derivationPath: path, digests: digestsOf(honest) },
      },
      30_000,
    );
    expect(bare.outcome).toBe(Outcome.REFUSED);
    expect(bare.error).toMatch(/^EVIDENCE_MISSING/);
  }, 120_000);
});
