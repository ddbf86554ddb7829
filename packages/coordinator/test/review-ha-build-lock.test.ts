/**
 * Review of issue #25 (hostile): the UTXO build lock (transfers/utxo-sources.ts
 * `withUtxoBuildLock`) is documented as exclusive across every coordinator process on the
 * database "from the moment it reads what is spendable until its choice is committed". It is a
 * session advisory lock on ONE pooled connection that sits idle while `fn` runs on other
 * connections; when that session ends (idle_session_timeout, a proxy or firewall dropping an idle
 * connection, pg_terminate_backend, a failover), PostgreSQL releases the lock, `Db.lock` aborts
 * its `signal` — and `withUtxoBuildLock` drops that signal: `fn` (buildStored: select outpoints,
 * then store them) keeps running and stores its choice while another replica already holds the
 * lock and selects the same outpoints. Expected: no second holder's `fn` runs while the first
 * one's is still running (or the first one must learn it lost the lock before it stores).
 *
 * Fix (fixlock): no second holder can be kept out once the session is gone, so the first one
 * learns it (the `signal` reaches `fn`) and, above all, a choice is stored only through
 * `claimOutpoints` — in the storing transaction, under a transaction-scoped advisory lock of the
 * wallet, none of the chosen outpoints may be held by another live transfer. The tests below: the
 * holder learns the loss before it stores; two replicas' pipelines whose build lock session drops
 * mid-build never store one outpoint twice (failed before the fix: both stored the same one); two
 * stores of one outpoint at once: the second waits for the first and is refused.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { BitcoinAdapter, UTXO_NETWORKS, type Utxo } from '@custodian/chains';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type Db, openPostgres } from '../src/db/db.js';
import { assetId, blockchainId } from '../src/directory.js';
import { ChainRegistry, PgUtxoSource } from '../src/transfers/chains.js';
import { DEFAULT_PIPELINE_OPTIONS, TransferPipeline } from '../src/transfers/pipeline.js';
import { claimOutpoints, OutpointsTakenError, withUtxoBuildLock } from '../src/transfers/utxo-sources.js';
import { type Harness, type Json, PG_URL, postgresReachable, startHarness } from './helpers.js';

const pgUp = await postgresReachable();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function schemaWithTwoHandles(): Promise<[Db, Db, string]> {
  const schema = `t_${randomBytes(8).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const a = await openPostgres(PG_URL, { schema, max: 4 });
  const b = await openPostgres(PG_URL, { schema, max: 4 });
  cleanups.push(async () => {
    await a.close();
    await b.close();
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA ${schema} CASCADE`);
    await c.end();
  });
  return [a, b, schema];
}

describe.skipIf(!pgUp)('review #25: UTXO build lock when the holding session ends', () => {
  it('the holder of a build lock whose session drops learns it before it stores (signal), while the next holder runs', async () => {
    const [a, b, schema] = await schemaWithTwoHandles();
    const chain = 'litecoin-regtest';
    const wallet = '11111111-2222-3333-4444-555555555555';
    let inA = false;
    let overlap = false;
    let aSignal: AbortSignal | undefined;
    let releaseA: () => void = () => {};
    const aHolds = new Promise<void>((r) => {
      releaseA = r;
    });
    let aEntered: () => void = () => {};
    const entered = new Promise<void>((r) => {
      aEntered = r;
    });
    // replica A: a build (select outpoints … store them) that takes a while
    const buildA = withUtxoBuildLock(a, chain, wallet, async (signal) => {
      aSignal = signal;
      inA = true;
      aEntered();
      await aHolds;
      inA = false;
      return 'A stored its choice';
    });
    await entered;
    // the idle session holding A's advisory lock ends (a dropped idle connection, a timeout)
    const killer = new pg.Client({ connectionString: PG_URL });
    await killer.connect();
    // only the session holding THIS schema's lock (Db.lock's key: hashtextextended(schema/name, 0))
    const holders = await killer.query<{ pid: number }>(
      `WITH k AS (SELECT hashtextextended($1, 0) AS key)
       SELECT l.pid FROM pg_locks l, k WHERE l.locktype = 'advisory' AND l.granted
         AND l.classid::bigint = ((k.key >> 32) & 4294967295) AND l.objid::bigint = (k.key & 4294967295)`,
      [`${schema}/custodian.build:${chain}:${wallet}`],
    );
    expect(holders.rows.length).toBeGreaterThan(0);
    for (const h of holders.rows) await killer.query('SELECT pg_terminate_backend($1)', [h.pid]);
    await killer.end();
    // replica B: the next build of the same wallet
    const buildB = withUtxoBuildLock(b, chain, wallet, async () => {
      if (inA) overlap = true;
      return 'B stored its choice';
    });
    const bFirst = await Promise.race([
      buildB.then(() => 'B done'),
      new Promise<string>((r) => setTimeout(() => r('B waiting'), 2000)),
    ]);
    // A learns, before it goes on to store, that it no longer holds the lock
    const aLostBeforeStore = aSignal?.aborted === true;
    releaseA();
    await buildA;
    await buildB;
    // B cannot be kept out (the lock died with A's session): B runs while A's build still runs —
    // so A must never store without claimOutpoints (the tests below)
    expect({ bFirst, overlap, aLostBeforeStore }).toEqual({ bFirst: 'B done', overlap: true, aLostBeforeStore: true });
  });
});

const BITCOIN = UTXO_NETWORKS.find((n) => n.id === 'bitcoin')!;
const BTC = blockchainId('bitcoin-mainnet');
const txid = () => randomBytes(32).toString('hex');
const rpc = {
  call: async (m: string) => {
    if (m === 'getnetworkinfo') return { relayfee: 0.00001, incrementalfee: 0.00001 };
    if (m === 'estimatesmartfee') return { feerate: 0.0002 };
    throw new Error(`unexpected rpc ${m}`);
  },
};

/** A replica's chains: bitcoin-mainnet over the RPC double (fee estimates), UTXOs from the real PgUtxoSource on `db`, then `after`. */
function replicaChains(db: Db, after: (list: Utxo[]) => Promise<void>): ChainRegistry {
  const chains = new ChainRegistry({ 'bitcoin-mainnet': { rpcUrl: 'http://127.0.0.1:9' } }, undefined, db);
  const source = new PgUtxoSource(db, 'bitcoin', 'bitcoin-mainnet', 2);
  const adapter = new BitcoinAdapter({
    network: BITCOIN,
    rpc: rpc as never,
    utxos: {
      listUnspent: async (addresses: readonly string[]): Promise<Utxo[]> => {
        const list = await source.listUnspent(addresses);
        await after(list);
        return list;
      },
    },
  });
  (chains as unknown as { adapter: (k: string) => unknown }).adapter = (k) =>
    k === 'bitcoin-mainnet' ? adapter : undefined;
  return chains;
}

async function harnessWithSecondPool(): Promise<[Harness, Db, string]> {
  const h = await startHarness({ db: 'postgres', coordinator: { transfers: { runPipeline: false } } });
  const schema = (await h.c.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
  const db2 = await openPostgres(PG_URL, { schema, max: 10 });
  cleanups.push(async () => {
    await db2.close();
    await h.close();
  });
  return [h, db2, schema];
}

async function createWallet(h: Harness): Promise<Json> {
  const r = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
    key: h.apiKey,
    headers: { 'idempotency-key': randomUUID() },
    body: { blockchain_ids: [BTC] },
  });
  expect(r.status).toBe(201);
  return r.body;
}

async function fund(h: Harness, address: string, values: number[]): Promise<void> {
  for (const v of values)
    await h.c.db.query(
      `INSERT INTO watcher_utxos (chain, outpoint, address, value, height) VALUES ('bitcoin',$1,$2,$3,5)`,
      [`${txid()}:0`, address, v],
    );
}

/** A PENDING_SIGNATURE Bitcoin transfer of wallet `w` (nothing built yet), `amount` sats to its own deposit address. */
async function pendingTransfer(h: Harness, w: Json, amount: number): Promise<string> {
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

/** The built inputs (`txid:vout`) of each transfer of the wallet. */
async function builtInputs(h: Harness, walletId: string): Promise<{ transfer_id: string; outpoint: string }[]> {
  return h.c.db.query<{ transfer_id: string; outpoint: string }>(
    `SELECT t.transfer_id, (i->>'txid') || ':' || (i->>'vout') AS outpoint
     FROM transfers t, jsonb_array_elements(COALESCE(t.unsigned->'context'->'inputs', '[]'::jsonb)) i
     WHERE t.wallet_id = $1 ORDER BY 2, 1`,
    [walletId],
  );
}

describe.skipIf(!pgUp)('review #25: UTXO builds when the build lock session drops mid-build', () => {
  it('two replicas never store one outpoint twice, even when the first one loses its build lock while it builds', async () => {
    const [h, db2, schema] = await harnessWithSecondPool();
    const w = await createWallet(h);
    // each transfer spends one whole output (no change): the largest output is what both choose
    await fund(h, w.addresses[0].address, [3_000_100, 3_000_000]);
    const t1 = await pendingTransfer(h, w, 2_997_500);
    const t2 = await pendingTransfer(h, w, 2_997_500);
    // replica A: its first selection is held (after reading what is spendable) until the gate opens
    let aSelected: (list: Utxo[]) => void = () => {};
    const selected = new Promise<Utxo[]>((r) => {
      aSelected = r;
    });
    let openGate: () => void = () => {};
    const gate = new Promise<void>((r) => {
      openGate = r;
    });
    let firstA = true;
    const logs: string[] = [];
    const options = { ...DEFAULT_PIPELINE_OPTIONS, concurrency: 1, log: (_l: string, m: string) => void logs.push(m) };
    const pA = new TransferPipeline({
      db: h.c.db,
      clock: () => new Date(),
      chains: replicaChains(h.c.db, async (list) => {
        if (!firstA) return;
        firstA = false;
        aSelected(list);
        await gate;
      }),
      service: h.c.transfers.service,
      gateway: undefined,
      options,
    });
    const pB = new TransferPipeline({
      db: db2,
      clock: () => new Date(),
      chains: replicaChains(db2, async () => {}),
      service: h.c.transfers.service,
      gateway: undefined,
      options,
    });
    const tickA = pA.tick();
    const offeredToA = await selected;
    // A's build lock session ends while A builds
    const killer = new pg.Client({ connectionString: PG_URL });
    await killer.connect();
    const holders = await killer.query<{ pid: number }>(
      `WITH k AS (SELECT hashtextextended($1, 0) AS key)
       SELECT l.pid FROM pg_locks l, k WHERE l.locktype = 'advisory' AND l.granted
         AND l.classid::bigint = ((k.key >> 32) & 4294967295) AND l.objid::bigint = (k.key & 4294967295)`,
      [`${schema}/custodian.build:bitcoin-mainnet:${w.wallet_id}`],
    );
    expect(holders.rows.length).toBe(1);
    await killer.query('SELECT pg_terminate_backend($1)', [holders.rows[0]!.pid]);
    await killer.end();
    // replica B builds the other transfer meanwhile (it takes the lock A lost) and stores its choice
    await pB.tick();
    const afterB = await builtInputs(h, w.wallet_id);
    expect(afterB.length).toBe(1);
    // what B stored was offered to A too: A's held selection may well be that same outpoint
    expect(offeredToA.map((u) => `${u.txid}:${u.vout}`)).toContain(afterB[0]!.outpoint);
    openGate();
    await tickA;
    const held = await builtInputs(h, w.wallet_id);
    const byOutpoint = new Map<string, string[]>();
    for (const r of held) byOutpoint.set(r.outpoint, [...(byOutpoint.get(r.outpoint) ?? []), r.transfer_id]);
    // on integrate: A stores the outpoint B stored (both transfers spend it; one can never be mined)
    expect([...byOutpoint.values()].filter((ids) => ids.length > 1)).toEqual([]);
    // A chose again under a lock taken anew: both transfers are built, on different outpoints
    expect(new Set(held.map((r) => r.transfer_id))).toEqual(new Set([t1, t2]));
  });

  it('two stores claiming one outpoint at once: the second waits for the first and is refused', async () => {
    const [h, db2] = await harnessWithSecondPool();
    const w = await createWallet(h);
    const t1 = await pendingTransfer(h, w, 1000);
    const t2 = await pendingTransfer(h, w, 1000);
    const outpoint = `${txid()}:0`;
    const [tx, vout] = outpoint.split(':');
    const inputs = JSON.stringify({ context: { inputs: [{ txid: tx, vout: Number(vout) }] } });
    let commitFirst: () => void = () => {};
    const firstMayCommit = new Promise<void>((r) => {
      commitFirst = r;
    });
    let firstClaimed: () => void = () => {};
    const claimed = new Promise<void>((r) => {
      firstClaimed = r;
    });
    const first = h.c.db.tx(async (q) => {
      await claimOutpoints(q, 'bitcoin-mainnet', w.wallet_id, [outpoint], { except: t1 });
      await q.query('UPDATE transfers SET unsigned = $2::jsonb WHERE transfer_id = $1', [t1, inputs]);
      firstClaimed();
      await firstMayCommit;
    });
    await claimed;
    let secondSettled = false;
    const second = db2
      .tx(async (q) => {
        await claimOutpoints(q, 'bitcoin-mainnet', w.wallet_id, [outpoint], { except: t2 });
        await q.query('UPDATE transfers SET unsigned = $2::jsonb WHERE transfer_id = $1', [t2, inputs]);
      })
      .then(
        () => 'stored',
        (e: unknown) => e,
      )
      .finally(() => {
        secondSettled = true;
      });
    // the second store waits on the wallet's store lock while the first one's transaction is open
    await new Promise((r) => setTimeout(r, 300));
    expect(secondSettled).toBe(false);
    commitFirst();
    await first;
    const out = await second;
    expect(out).toBeInstanceOf(OutpointsTakenError);
    expect((out as OutpointsTakenError).taken).toEqual([{ outpoint, transfer_id: t1 }]);
    const rows = await h.c.db.query<{ transfer_id: string }>(
      'SELECT transfer_id FROM transfers WHERE wallet_id = $1 AND unsigned IS NOT NULL',
      [w.wallet_id],
    );
    expect(rows.map((r) => r.transfer_id)).toEqual([t1]);
    // a store of another outpoint is not refused
    await db2.tx((q) => claimOutpoints(q, 'bitcoin-mainnet', w.wallet_id, [`${txid()}:1`], { except: t2 }));
  });
});
