/**
 * Chain transaction builds across coordinator replicas (issue #25 [ha]) on real PostgreSQL: two
 * transfer pipelines, each with its own pool on ONE schema (two replicas), build transfers of one
 * UTXO wallet at the same time. Without a cross-process build lock both select the same outpoint
 * (PgUtxoSource excludes only what is already stored) and one of the two transactions can never be
 * mined. Also: a consolidation (self-spend) created while a build selects, and Ethereum nonces
 * decided by two replicas for one sender.
 *
 * The chain node is the same RPC double the other UTXO unit tests use (fee estimates only); the
 * UTXO source is the real {@link PgUtxoSource} of each replica's pool, wrapped so that a selection
 * waits (up to 2 s) for the other replica's selection — the widest race two replicas can run into.
 */
import { randomUUID } from 'node:crypto';
import { BitcoinAdapter, UTXO_NETWORKS, type Utxo } from '@custodian/chains';
import { signPolicy } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Db, openPostgres } from '../src/db/db.js';
import { assetId, BLOCKCHAINS, blockchainId } from '../src/directory.js';
import { ChainRegistry, PgUtxoSource } from '../src/transfers/chains.js';
import { ethereumNonce } from '../src/transfers/eth-nonce.js';
import { requestFeeBump } from '../src/transfers/fee-bump-request.js';
import { DEFAULT_PIPELINE_OPTIONS, TransferPipeline } from '../src/transfers/pipeline.js';
import { consolidate } from '../src/transfers/self-spend.js';
import { nextChangeAddress, recordChangeAddress, walletKeys } from '../src/transfers/utxo-sources.js';
import { enrollmentBody, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, type Json, PG_URL, postgresReachable, startHarness } from './helpers.js';

const BTC = blockchainId('bitcoin-mainnet');
const BTC_DEF = BLOCKCHAINS.find((b) => b.key === 'bitcoin-mainnet')!;
const BITCOIN = UTXO_NETWORKS.find((n) => n.id === 'bitcoin')!;
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const txid = () => hex(crypto.getRandomValues(new Uint8Array(32)));

const pgUp = await postgresReachable();

let h: Harness;
/** The second replica's pool on the same schema as the harness coordinator's. */
let db2: Db;
beforeAll(async () => {
  if (!pgUp) return;
  // the harness coordinator's own pipeline stays off: the test's two pipelines are the replicas
  h = await startHarness({ db: 'postgres', coordinator: { transfers: { runPipeline: false } } });
  const schema = (await h.c.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
  db2 = await openPostgres(PG_URL, { schema, max: 10 });
});
afterAll(async () => {
  await db2?.close();
  await h?.close();
});

/** A signed policy over the profile's BTC transfers to `destination` (so a consolidation to it is a live transfer, PENDING_APPROVAL). */
async function btcPolicy(destination: string): Promise<void> {
  const sk = p256.utils.randomSecretKey();
  const e = await h.req('POST', '/devices/v1/enrollments', {
    body: enrollmentBody(await phoneKeys(sk), 'admin phone'),
  });
  await h.req('POST', `/admin/v1/devices/${e.body.device_id}/approve`, {
    token: h.adminToken,
    body: { fingerprint: e.body.fingerprint, user_id: await userIdOf(h, ADMIN_EMAIL) },
  });
  const p = await h.req('POST', `/admin/v1/profiles/${h.profileId}/policies`, {
    token: h.adminToken,
    body: {
      name: `btc ${destination}`,
      scope: { asset_id: assetId('bitcoin-mainnet', 'BTC') },
      whitelist: [destination],
    },
  });
  expect(p.status, JSON.stringify(p.body)).toBe(201);
  const signature = signPolicy(p.body.versions[0].document, e.body.device_id, sk).signature;
  const s = await h.req('POST', `/admin/v1/profiles/${h.profileId}/policies/${p.body.policy_id}/versions/1/signature`, {
    token: h.adminToken,
    body: { device_id: e.body.device_id, signature },
  });
  expect(s.status).toBe(200);
}

/** Two-party rendezvous: each arrival waits for the other one, or `ms` at most. */
function rendezvous(ms: number) {
  let arrived = 0;
  let open: () => void = () => {};
  const both = new Promise<void>((r) => {
    open = r;
  });
  return async () => {
    if (++arrived >= 2) open();
    await Promise.race([both, new Promise((r) => setTimeout(r, ms))]);
  };
}

const rpc = {
  call: async (m: string) => {
    if (m === 'getnetworkinfo') return { relayfee: 0.00001, incrementalfee: 0.00001 };
    if (m === 'estimatesmartfee') return { feerate: 0.0002 };
    throw new Error(`unexpected rpc ${m}`);
  },
};

/** A replica's chains: bitcoin-mainnet over the RPC double, UTXOs from PgUtxoSource on `db` (then `meet`). */
function replicaChains(db: Db, meet: () => Promise<void>): ChainRegistry {
  const chains = new ChainRegistry({ 'bitcoin-mainnet': { rpcUrl: 'http://127.0.0.1:9' } }, undefined, db);
  const source = new PgUtxoSource(db, 'bitcoin', 'bitcoin-mainnet', 2);
  const adapter = new BitcoinAdapter({
    network: BITCOIN,
    rpc: rpc as never,
    utxos: {
      listUnspent: async (addresses: readonly string[]): Promise<Utxo[]> => {
        const list = await source.listUnspent(addresses);
        await meet();
        return list;
      },
    },
  });
  (chains as unknown as { adapter: (k: string) => unknown }).adapter = (k) =>
    k === 'bitcoin-mainnet' ? adapter : undefined;
  return chains;
}

function pipeline(db: Db, chains: ChainRegistry): TransferPipeline {
  return new TransferPipeline({
    db,
    clock: () => new Date(),
    chains,
    service: h.c.transfers.service,
    gateway: undefined, // no signers: the step stores the build, then waits (SIGNERS_UNAVAILABLE)
    // one transfer at a time: each replica claims one of the two
    options: { ...DEFAULT_PIPELINE_OPTIONS, concurrency: 1, log: () => {} },
  });
}

async function createWallet(): Promise<Json> {
  const r = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
    key: h.apiKey,
    headers: { 'idempotency-key': randomUUID() },
    body: { blockchain_ids: [BTC] },
  });
  expect(r.status).toBe(201);
  return r.body;
}

/** Confirmed outputs of `address` in the watcher's set, one per value (base units). */
async function fund(address: string, values: number[]): Promise<void> {
  for (const v of values)
    await h.c.db.query(
      `INSERT INTO watcher_utxos (chain, outpoint, address, value, height) VALUES ('bitcoin',$1,$2,$3,5)`,
      [`${txid()}:0`, address, v],
    );
}

/** A PENDING_SIGNATURE Bitcoin transfer of wallet `w` (nothing built yet), `amount` sats to its own deposit address. */
async function pendingTransfer(w: Json, amount: number): Promise<string> {
  const mk = (
    await h.c.db.query<{ master_key_id: string }>('SELECT master_key_id FROM wallets WHERE wallet_id = $1', [
      w.wallet_id,
    ])
  )[0]!;
  const source = w.addresses[0];
  const now = new Date();
  const id = randomUUID();
  const intent = {
    transfer_id: id,
    blockchain: 'bitcoin-mainnet',
    asset_symbol: 'BTC',
    asset_decimals: 8,
    asset_contract: null,
    source_address: source.address,
    destination_address: source.address,
    amount: String(amount),
    max_fee: '100000',
    key_algorithm: 'SECP256K1_ECDSA',
    derivation_path: [44, 0, 0, 0, 0],
  };
  await h.c.db.query(
    `INSERT INTO transfers (transfer_id, profile_id, wallet_id, asset_id, blockchain_id, master_key_id, source_address,
       destination_address, amount, status, day, intent, intent_digest, tx_hashes, signing_since, created_at, updated_at)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$7,$8,'PENDING_SIGNATURE',$9,$10::jsonb,'x','[]'::jsonb,$11,$11,$11)`,
    [
      id,
      h.profileId,
      w.wallet_id,
      assetId('bitcoin-mainnet', 'BTC'),
      BTC,
      mk.master_key_id,
      source.address,
      amount,
      now.toISOString().slice(0, 10),
      JSON.stringify(intent),
      now,
    ],
  );
  return id;
}

/** Every outpoint the wallet's live transfers hold (as PgUtxoSource counts them): built inputs and self-spends' fixed inputs. */
async function heldOutpoints(walletId: string): Promise<{ transfer_id: string; outpoint: string }[]> {
  return h.c.db.query<{ transfer_id: string; outpoint: string }>(
    `SELECT t.transfer_id, (i->>'txid') || ':' || (i->>'vout') AS outpoint
     FROM transfers t, jsonb_array_elements(
       COALESCE(t.unsigned->'context'->'inputs', '[]'::jsonb) || COALESCE(t.self_spend->'inputs', '[]'::jsonb)) i
     WHERE t.wallet_id = $1 AND t.delivered_at IS NULL
       AND t.status IN ('PENDING', 'PENDING_APPROVAL', 'PENDING_SIGNATURE', 'READY_TO_SEND', 'SENT')
     ORDER BY 2, 1`,
    [walletId],
  );
}

function sharedOutpoints(held: { transfer_id: string; outpoint: string }[]): string[] {
  const by = new Map<string, Set<string>>();
  for (const r of held) by.set(r.outpoint, (by.get(r.outpoint) ?? new Set()).add(r.transfer_id));
  return [...by].filter(([, ids]) => ids.size > 1).map(([o]) => o);
}

describe.skipIf(!pgUp)('UTXO builds on two replicas (one PostgreSQL schema)', () => {
  it('two replicas building transfers of one wallet at once never select the same outpoint', async () => {
    const w = await createWallet();
    // transfers that spend one whole output each (no change output: the rest is below dust and goes
    // to the fee), so no change-address index collides to make one of the two builds start over
    await fund(w.addresses[0].address, [3_000_100, 3_000_000, 1_000_000]);
    const a = await pendingTransfer(w, 2_997_500);
    const b = await pendingTransfer(w, 2_997_500);
    const meet = rendezvous(2000);
    const p1 = pipeline(h.c.db, replicaChains(h.c.db, meet));
    const p2 = pipeline(db2, replicaChains(db2, meet));
    await Promise.all([p1.tick(), p2.tick()]);
    const built = await h.c.db.query<{ transfer_id: string }>(
      'SELECT transfer_id FROM transfers WHERE wallet_id = $1 AND unsigned IS NOT NULL',
      [w.wallet_id],
    );
    expect(built.map((r) => r.transfer_id).sort()).toEqual([a, b].sort());
    const held = await heldOutpoints(w.wallet_id);
    expect(held.length).toBeGreaterThanOrEqual(2);
    expect(sharedOutpoints(held)).toEqual([]);
  });

  it('a consolidation created while another replica builds never takes an outpoint the build spends', async () => {
    const w = await createWallet();
    await btcPolicy(w.addresses[0].address);
    // the build takes the largest output; the consolidation every one (smallest first)
    await fund(w.addresses[0].address, [3_000_000, 20_000, 10_000]);
    const t = await pendingTransfer(w, 10_000);
    const meet = rendezvous(2000);
    const chains1 = replicaChains(h.c.db, meet);
    const p2 = pipeline(db2, replicaChains(db2, meet));
    // replica 1 serves the admin API (consolidation), replica 2 runs the pipeline
    const s = { ...(h.c.transfers.service as unknown as { ctx: object }).ctx, chains: chains1 };
    const actor = (await h.c.db.query<{ user_id: string }>('SELECT user_id FROM users LIMIT 1'))[0]!.user_id;
    const [, consolidation] = await Promise.all([
      p2.tick(),
      consolidate(s as never, actor, h.profileId, w.wallet_id, { blockchain_id: 'bitcoin-mainnet' }).then(
        (v) => v.transfer_id,
        (e: { code?: string }) => e.code ?? String(e),
      ),
    ]);
    const held = await heldOutpoints(w.wallet_id);
    const statusOf = async (id: string) =>
      (
        await h.c.db.query<{ status: string; error: string | null }>(
          'SELECT status, error FROM transfers WHERE transfer_id = $1',
          [id],
        )
      )[0];
    // one after the other, whichever came first: the build stored on the largest output and the
    // consolidation took the two others; or the consolidation took all three and the build found
    // nothing left to spend
    expect((await statusOf(consolidation))?.status).toBe('PENDING_APPROVAL');
    const build = await statusOf(t);
    if (held.some((r) => r.transfer_id === t))
      expect(held.filter((r) => r.transfer_id === consolidation)).toHaveLength(2);
    else expect(build).toMatchObject({ status: 'FAILED', error: expect.stringMatching(/insufficient/i) });
    expect(sharedOutpoints(held)).toEqual([]);
  });
});

describe.skipIf(!pgUp)('CPFP on one replica while another builds (one PostgreSQL schema)', () => {
  it('a CPFP child is refused when a build of another replica selected the same change output meanwhile', async () => {
    const w = await createWallet();
    const deposit = w.addresses[0];
    await btcPolicy(deposit.address);
    const change = await h.c.db.tx(async (q) => {
      const c = await nextChangeAddress(q, await walletKeys(q, w.wallet_id), BTC, BTC_DEF);
      await recordChangeAddress(q, w.wallet_id, BTC, c, new Date());
      return c;
    });
    // parent: SENT, unconfirmed, its change (output 1) the wallet's only spendable output
    const parent = await pendingTransfer(w, 10_000);
    const parentTx = txid();
    const context = {
      network: 'bitcoin',
      inputs: [
        {
          txid: txid(),
          vout: 0,
          value: '520000',
          address: deposit.address,
          kind: 'p2wpkh',
          path: [44, 0, 0, 0, 0],
          publicKey: deposit.public_key,
        },
      ],
      change: { address: change.address, value: '500000', kind: 'p2wpkh', path: [44, 0, 0, 1, change.index] },
      fee: '10000',
      feeRate: '5',
    };
    await h.c.db.query(
      `UPDATE transfers SET status = 'SENT', unsigned = $2::jsonb, tx_hash = $3, tx_hashes = $4::jsonb, sent_at = now()
       WHERE transfer_id = $1`,
      [parent, JSON.stringify({ context }), parentTx, JSON.stringify([parentTx])],
    );
    const child = await pendingTransfer(w, 100_000);
    // replica 2 builds `child`: it lists (the parent's change), then takes its time before storing
    let listed: () => void = () => {};
    const hasListed = new Promise<void>((r) => {
      listed = r;
    });
    const p2 = pipeline(
      db2,
      replicaChains(db2, async () => {
        listed();
        await new Promise((r) => setTimeout(r, 1000));
      }),
    );
    // replica 1 serves the admin API: a CPFP bump of the parent (a child spending that same change)
    const chains1 = replicaChains(h.c.db, async () => {});
    (chains1 as unknown as { lookup: () => Promise<unknown> }).lookup = async () => ({ state: 'pending' });
    const s = { ...(h.c.transfers.service as unknown as { ctx: object }).ctx, chains: chains1 };
    const actor = (await h.c.db.query<{ user_id: string }>('SELECT user_id FROM users LIMIT 1'))[0]!.user_id;
    const building = p2.tick();
    await hasListed;
    const cpfp = await requestFeeBump(s as never, actor, h.profileId, parent, 'FAST', 'CPFP').then(
      () => 'CPFP requested',
      (e: { code?: string }) => e.code ?? String(e),
    );
    await building;
    const built = (
      await h.c.db.query<{ unsigned: unknown }>('SELECT unsigned FROM transfers WHERE transfer_id = $1', [child])
    )[0]!;
    expect(built.unsigned).not.toBeNull();
    // the build took the change first (it was selected before the bump): the CPFP child must not
    expect(cpfp).toBe('TRANSFER_STATE_CONFLICT');
    expect(sharedOutpoints(await heldOutpoints(w.wallet_id))).toEqual([]);
  });
});

describe.skipIf(!pgUp)('Ethereum nonces on two replicas (one PostgreSQL schema)', () => {
  it('concurrent nonce decisions for one sender on two pools never hand out the same nonce', async () => {
    const w = await createWallet();
    const sender = `0x${hex(crypto.getRandomValues(new Uint8Array(20)))}`;
    // the node's pending count is 7 for both replicas; each decision stores its nonce in the same
    // transaction, as buildStored does
    const node = { getTransactionCount: async () => 7 };
    const ids = await Promise.all(Array.from({ length: 6 }, () => pendingTransfer(w, 1000)));
    await h.c.db.query(
      `UPDATE transfers SET source_address = $2, unsigned = NULL WHERE transfer_id = ANY($1::uuid[])`,
      [ids, sender],
    );
    const decide = (db: Db, id: string) =>
      db.tx(async (q) => {
        const nonce = await ethereumNonce(q, node, { transferId: id, sourceAddress: sender, blockchainId: BTC });
        await new Promise((r) => setTimeout(r, 20)); // the rest of the store transaction
        await q.query(`UPDATE transfers SET unsigned = $2::jsonb WHERE transfer_id = $1`, [
          id,
          JSON.stringify({ context: { nonce } }),
        ]);
        return nonce;
      });
    const nonces = await Promise.all(ids.map((id, i) => decide(i % 2 === 0 ? h.c.db : db2, id)));
    expect([...nonces].sort((x, y) => x - y)).toEqual([7, 8, 9, 10, 11, 12]);
  });
});
