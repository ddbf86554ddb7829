/**
 * UTXO builds on two coordinator replicas (issue #25 [ha]) with REAL components: three signer
 * processes (2-of-3 ECDSA, enforcement on) behind one signer gateway over libp2p (the one
 * coordinator identity every replica shares), litecoind regtest, and TWO in-process coordinators,
 * each with its own pool on ONE PostgreSQL schema (separate pipelines, leases and REST APIs; in
 * process rather than two processes so both can share the gateway object of the test's signers).
 *
 * One wallet funded with 34 outputs; 30 transfers created at once, half through each replica's
 * API (half of them spend a whole output, without change), approved together, and built, signed and
 * broadcast by whichever replica's pipeline claims them: every one is SENT and mined, no outpoint is
 * spent twice (the mined transactions' inputs), and no broadcast was refused. On the contract commit
 * (builds serialised per process only) a transfer ended FAILED with the node's
 * `bad-txns-inputs-missingorspent`: two replicas had built on one output.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { type BitcoinAdapter, estimateVsize, formatUnits } from '@custodian/chains';
import type { ControlClient } from '@custodian/signer-client';
import { signPolicy } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LitecoindNode, startLitecoind } from '../../chains/test/helpers/litecoind.js';
import { buildSigner, type NodeSpec, stopNode, tempDir } from '../../signer/test/cluster.js';
import { type Coordinator, createCoordinator } from '../src/coordinator.js';
import { type Db, openPostgres } from '../src/db/db.js';
import type { SignerGateway } from '../src/signing/gateway.js';
import { createEcdsaMasterKey, startEnforcingSigners } from './enforcing-signers.js';
import { type Json, openTestDb, PG_URL, postgresReachable } from './helpers.js';
import { approveAs, CoordinatorApi, hexPub } from './pipeline-harness.js';

const adminDevice = p256.utils.randomSecretKey();
const dev1 = p256.utils.randomSecretKey();
const dev2 = p256.utils.randomSecretKey();
const serverIds = [
  '33333333-0000-4000-8000-000000000001',
  '33333333-0000-4000-8000-000000000002',
  '33333333-0000-4000-8000-000000000003',
];
const TRANSFERS = 30;
const FUNDING_OUTPUTS = 34;

let dir = '';
let ltc: LitecoindNode;
let nodes: NodeSpec[] = [];
let control: ControlClient;
let gateway: SignerGateway;
let drop: (() => Promise<void>) | undefined;
const dbs: Db[] = [];
const coords: Coordinator[] = [];
const apis = [new CoordinatorApi(), new CoordinatorApi()];
let ltcAsset = '';
let dev1Id = '';
let adminDeviceId = '';

const pgUp = await postgresReachable();

/** Replica `i` on pool `db`: its own mailbox, token file, REST API and pipeline; the shared signers. */
function replica(i: number, db: Db): Promise<Coordinator> {
  return createCoordinator({
    db,
    mode: 'development',
    mailboxDir: join(dir, `coord${i}`, 'mailbox'),
    bootstrapTokenFile: join(dir, `coord${i}`, 'bootstrap-token'),
    listen: { port: 0 },
    logger: false,
    admin: { scrypt: { N: 1 << 10, r: 8, p: 1 } },
    webhooks: { keyEncryptionKey: new Uint8Array(32).fill(7), runWorker: false },
    chains: {
      'litecoin-regtest': {
        rpcUrl: ltc.url,
        rpcUsername: 'test',
        rpcPassword: 'regtest-only',
        pollIntervalMs: 300,
        confirmations: 1,
      },
    },
    transfers: {
      gateway,
      trustedAdminKeys: [hexPub(adminDevice)],
      pipeline: { pollMs: 200, confirmationRecheckMs: 300, signDeadlineMs: 180_000, concurrency: 6 },
    },
  });
}

beforeAll(async () => {
  if (!pgUp) return;
  buildSigner();
  dir = tempDir('replicas-utxo');
  ltc = await startLitecoind();
  ({ nodes, control, gateway } = await startEnforcingSigners(dir, hexPub(adminDevice), serverIds));
  const t = await openTestDb('postgres');
  drop = t.drop;
  dbs.push(t.db);
  const schema = (await t.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
  dbs.push(await openPostgres(PG_URL, { schema }));
  coords.push(await replica(0, dbs[0]!));
  apis[0]!.url = await coords[0]!.start();
  await apis[0]!.signIn(join(dir, 'coord0', 'mailbox'), 'replicas');
  // the second replica joins the initialised instance (same schema): same session, same API key
  coords.push(await replica(1, dbs[1]!));
  apis[1]!.url = await coords[1]!.start();
  Object.assign(apis[1]!, { token: apis[0]!.token, apiKey: apis[0]!.apiKey, profileId: apis[0]!.profileId });
  adminDeviceId = await apis[0]!.enroll(adminDevice, 'admin phone');
  dev1Id = await apis[0]!.enroll(dev1, 'approver 1');
  const dev2Id = await apis[0]!.enroll(dev2, 'approver 2');
  await createEcdsaMasterKey(
    { nodes, control, gateway },
    coords[0]!,
    serverIds,
    [
      { id: dev1Id, secretKey: dev1 },
      { id: dev2Id, secretKey: dev2 },
    ],
    300_000,
  );
  ltcAsset = await apis[0]!.assetId((a) => a.blockchain === 'litecoin-regtest');
}, 600_000);

afterAll(async () => {
  await Promise.all(coords.map((c) => c.stop().catch(() => {})));
  await dbs[1]?.close().catch(() => {});
  await drop?.().catch(() => {});
  await control?.stop().catch(() => {});
  await Promise.all(nodes.map((n) => stopNode(n)));
  await ltc?.stop();
  if (dir && !process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(dir, { recursive: true, force: true });
});

/** A signed policy allowing `dest` (one approval). */
async function allow(dest: string): Promise<void> {
  const { req, profileId, token } = apis[0]!;
  const p = await req('POST', `/admin/v1/profiles/${profileId}/policies`, {
    token,
    body: { name: 'ltc replicas', scope: { asset_id: ltcAsset }, whitelist: [dest], daily_limit: '100000000000' },
  });
  expect(p.status, JSON.stringify(p.body)).toBe(201);
  const sig = signPolicy(p.body.versions[0].document, adminDeviceId, adminDevice).signature;
  const s = await req('POST', `/admin/v1/profiles/${profileId}/policies/${p.body.policy_id}/versions/1/signature`, {
    token,
    body: { device_id: adminDeviceId, signature: sig },
  });
  expect(s.status).toBe(200);
}

describe.skipIf(!pgUp)('UTXO transfers of one wallet over two replicas (litecoind regtest, one PG schema)', () => {
  it(`${TRANSFERS} concurrent transfers over both replicas: all SENT and mined, no outpoint spent twice, no broadcast refused`, async () => {
    const w = await apis[0]!.createWallet('litecoin-regtest');
    expect(w.status, JSON.stringify(w.body)).toBe(201);
    const walletId = w.body.wallet_id as string;
    const address = w.body.addresses[0].address as string;
    // one output per transfer and a few more, all of one value, to the wallet's address: every
    // transfer is built within moments of the others (approved at once), before any is broadcast
    // — when no change of the coordinator's own transactions is spendable yet
    for (let i = 0; i < FUNDING_OUTPUTS; i++) {
      await ltc.walletCall('sendtoaddress', [address, 0.2]);
      if (i % 10 === 9) await ltc.mine(1); // the node's own chain of unconfirmed change stays short
    }
    await ltc.mine(1);
    await apis[0]!.waitBalance(walletId, ltcAsset, (FUNDING_OUTPUTS * 0.2).toFixed(1), 60_000, 'LTC balance');
    const dest = await ltc.walletCall<string>('getnewaddress', ['', 'bech32']);
    await allow(dest);
    // two kinds of transfer, alternating: 0.05 LTC (with change), and a whole output — the output
    // less the fee of a one-input transaction without change (the rest below dust goes to the fee),
    // so no change address is allocated, whose unique index would otherwise make one of two builds
    // that chose one output start over
    const adapter = coords[0]!.transfers.chains.adapter('litecoin-regtest') as BitcoinAdapter;
    const { rate } = await adapter.feeRate('STANDARD');
    const whole = formatUnits(
      20_000_000n - BigInt(Math.ceil(estimateVsize(adapter.network, ['p2wpkh'], dest) * rate)) - 100n,
      8,
    );

    // a block every second meanwhile (change confirms and more outputs become spendable), and
    // which replica's pipeline holds which transfer's lease
    let mining = true;
    const holders = new Set<string>();
    const miner = (async () => {
      while (mining) {
        await ltc.mine(1).catch(() => {});
        for (const r of await dbs[0]!.query<{ o: string }>(
          'SELECT DISTINCT lease_owner AS o FROM transfers WHERE lease_owner IS NOT NULL',
        ))
          holders.add(r.o);
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();
    try {
      const created = await Promise.all(
        Array.from({ length: TRANSFERS }, async (_, i) => {
          const api = apis[i % 2]!;
          const c = await api.req('POST', `/api/v1/profiles/${api.profileId}/transfers`, {
            key: api.apiKey,
            idem: true,
            body: {
              wallet_id: walletId,
              asset_id: ltcAsset,
              destination_address: dest,
              amount: i % 2 ? '0.05' : whole,
            },
          });
          expect(c.body.status, JSON.stringify(c.body)).toBe('PENDING_APPROVAL');
          return c.body.transfer_id as string;
        }),
      );
      // approved together: both replicas' pipelines build them at the same time
      await Promise.all(created.map((id, i) => approveAs(coords[i % 2]!, id, dev1, dev1Id)));
      // until every one is delivered or ended (polled in the database: 30 API pollers would only load the machine)
      const end = Date.now() + 200_000;
      for (;;) {
        const open = await dbs[0]!.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM transfers WHERE transfer_id = ANY($1::uuid[]) AND delivered_at IS NULL
             AND status NOT IN ('FAILED', 'REJECTED', 'EXPIRED', 'CANCELLED')`,
          [created],
        );
        if (open[0]?.n === 0 || Date.now() > end) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      // as each replica's API shows them
      const done = await Promise.all(created.map((id, i) => apis[i % 2]!.getTransfer(id)));
      const failed = await dbs[0]!.query<{ status: string; error: string | null }>(
        "SELECT status, error FROM transfers WHERE wallet_id = $1 AND status <> 'SENT'",
        [walletId],
      );
      expect(failed).toEqual([]);
      for (const t of done) expect(t.status, JSON.stringify(t)).toBe('SENT');
      expect(done.every((t) => typeof t.delivered_at === 'string')).toBe(true);
      // both replicas' pipelines worked on them
      expect([...holders].sort()).toEqual(coords.map((c) => c.transfers.pipeline.owner).sort());
      // the mined transactions: each its transfer's, no outpoint spent twice, none replaced
      const spent = new Map<string, string>();
      for (const t of done) {
        const tx = await ltc.rpc.call<Json>('getrawtransaction', [t.tx_hash, true]);
        expect(tx.confirmations, t.tx_hash).toBeGreaterThanOrEqual(1);
        for (const vin of tx.vin as Json[]) {
          const o = `${vin.txid}:${vin.vout}`;
          expect(spent.get(o), `${o} spent by ${spent.get(o)} and ${t.transfer_id}`).toBeUndefined();
          spent.set(o, t.transfer_id);
        }
      }
      expect(await ltc.walletCall<number>('getreceivedbyaddress', [dest, 1])).toBeCloseTo(
        (0.05 + Number(whole)) * (TRANSFERS / 2),
        8,
      );
      // no broadcast was refused (a conflict): every transfer has one transaction, never a refused one
      const rows = await dbs[1]!.query<{ tx_hashes: string[]; error: string | null }>(
        'SELECT tx_hashes, error FROM transfers WHERE wallet_id = $1',
        [walletId],
      );
      expect(rows).toHaveLength(TRANSFERS);
      for (const r of rows) {
        expect(r.tx_hashes).toHaveLength(1);
        expect(r.error ?? '').not.toMatch(/BROADCAST|conflict|missing-inputs|insufficient/i);
      }
    } finally {
      mining = false;
      await miner;
    }
  }, 600_000);
});
