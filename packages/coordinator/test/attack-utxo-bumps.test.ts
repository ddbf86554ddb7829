/**
 * Attacks on UTXO fee bumps (hostile review of issue #28 [utxo], branch `review`), kept as
 * regression tests: each failed on `integrate` (the attack succeeded) before branch `fix-bump` —
 * a refused replacement's change offered as spendable (sent-step.ts / PgUtxoSource), a CPFP child
 * double-spending change a later transfer spends, an RBF evicting a live descendant
 * (fee-bump-request.ts `liveSpenders`).
 */
import { randomUUID } from 'node:crypto';
import { BitcoinAdapter, UTXO_NETWORKS } from '@custodian/chains';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assetId, BLOCKCHAINS, blockchainId } from '../src/directory.js';
import { PgUtxoSource } from '../src/transfers/chains.js';
import type { StepContext } from '../src/transfers/pipeline-context.js';
import { bumpBroadcastStep } from '../src/transfers/sent-step.js';
import { storeUnsigned } from '../src/transfers/unsigned.js';
import { nextChangeAddress, recordChangeAddress, walletKeys, walletSources } from '../src/transfers/utxo-sources.js';
import { loadTransfer } from '../src/transfers/view.js';
import { type Harness, type Json, startHarness } from './helpers.js';

const BTC = blockchainId('bitcoin-mainnet');
const BTC_DEF = BLOCKCHAINS.find((b) => b.key === 'bitcoin-mainnet')!;
const BITCOIN = UTXO_NETWORKS.find((n) => n.id === 'bitcoin')!;
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const txid = () => hex(crypto.getRandomValues(new Uint8Array(32)));

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

async function createWallet(): Promise<Json> {
  const r = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
    key: h.apiKey,
    headers: { 'idempotency-key': randomUUID() },
    body: { blockchain_ids: [BTC] },
  });
  expect(r.status).toBe(201);
  return r.body;
}

async function allocateChange(walletId: string): Promise<string> {
  return h.c.db.tx(async (q) => {
    const c = await nextChangeAddress(q, await walletKeys(q, walletId), BTC, BTC_DEF);
    await recordChangeAddress(q, walletId, BTC, c, new Date());
    return c.address;
  });
}

/** A SENT (or other) Bitcoin transfer row of wallet `w` as the pipeline leaves it. */
async function insertTransfer(
  w: Json,
  o: {
    status: string;
    txHash: string;
    txHashes?: string[];
    inputs: { txid: string; vout: number; value: string; address: string }[];
    change: { address: string; value: string } | null;
    feeBump?: unknown;
    unsigned?: unknown;
  },
): Promise<string> {
  const mk = (
    await h.c.db.query<{ master_key_id: string }>('SELECT master_key_id FROM wallets WHERE wallet_id = $1', [
      w.wallet_id,
    ])
  )[0]!;
  const source = w.addresses[0];
  const now = new Date();
  const id = randomUUID();
  const context = {
    network: 'bitcoin',
    inputs: o.inputs.map((i) => ({ ...i, kind: 'p2wpkh', path: [44, 0, 0, 0, 0], publicKey: source.public_key })),
    change: o.change === null ? null : { ...o.change, kind: 'p2wpkh', path: [44, 0, 0, 1, 0] },
    fee: '1000',
    feeRate: '5',
  };
  const intent = {
    transfer_id: id,
    blockchain: 'bitcoin-mainnet',
    asset_symbol: 'BTC',
    asset_contract: null,
    source_address: source.address,
    destination_address: source.address,
    amount: '10000',
    max_fee: '100000',
    key_algorithm: 'SECP256K1_ECDSA',
    derivation_path: [44, 0, 0, 0, 0],
  };
  await h.c.db.query(
    `INSERT INTO transfers (transfer_id, profile_id, wallet_id, asset_id, blockchain_id, master_key_id, source_address,
       destination_address, amount, status, day, intent, intent_digest, unsigned, tx_hash, tx_hashes, fee_bump, created_at, updated_at)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$7,10000,$8,$9,$10::jsonb,'x',$11::jsonb,$12,$13::jsonb,$14::jsonb,$15,$15)`,
    [
      id,
      h.profileId,
      w.wallet_id,
      assetId('bitcoin-mainnet', 'BTC'),
      BTC,
      mk.master_key_id,
      source.address,
      o.status,
      now.toISOString().slice(0, 10),
      JSON.stringify(intent),
      JSON.stringify(o.unsigned ?? { context }),
      o.txHash,
      JSON.stringify(o.txHashes ?? [o.txHash]),
      o.feeBump === undefined ? null : JSON.stringify(o.feeBump),
      now,
    ],
  );
  return id;
}

const list = (addrs: string[]) =>
  new PgUtxoSource(h.c.db, 'bitcoin', 'bitcoin-mainnet', 2)
    .listUnspent(addrs)
    .then((u) => u.map((x) => `${x.txid}:${x.vout}`).sort());

describe('review: PgUtxoSource after a refused RBF replacement', () => {
  it('does not offer the change output of a replacement the node refused (it never existed)', async () => {
    const w = await createWallet();
    const c1 = await allocateChange(w.wallet_id);
    const original = txid();
    const replacement = txid();
    // bumpSignStep stored the replacement as tx_hash; bumpBroadcastStep: the node refused it →
    // fee_bump FAILED / BROADCAST_FAILED, tx_hash stays the replacement's
    await insertTransfer(w, {
      status: 'SENT',
      txHash: replacement,
      txHashes: [original, replacement],
      inputs: [{ txid: txid(), vout: 0, value: '20000', address: w.addresses[0].address }],
      change: { address: c1, value: '8000' },
      feeBump: { status: 'FAILED', sub_status: 'BROADCAST_FAILED', method: 'RBF', error: 'insufficient fee' },
    });
    // the outpoint replacement:1 does not exist on chain or in any mempool: a transfer built on it
    // is refused at broadcast (missing inputs)
    expect(await list([c1])).not.toContain(`${replacement}:1`);
  });
});

describe('review: the pipeline after the node refuses a replacement', () => {
  it('restores the transaction actually broadcast (tx_hash, unsigned, signed_tx, tx_hashes)', async () => {
    const w = await createWallet();
    const c1 = await allocateChange(w.wallet_id);
    const original = txid();
    const replacement = txid();
    const input = { txid: txid(), vout: 0, value: '20000', address: w.addresses[0].address };
    const ctxOf = (changeValue: string) => ({
      network: 'bitcoin',
      inputs: [{ ...input, kind: 'p2wpkh', path: [44, 0, 0, 0, 0], publicKey: w.addresses[0].public_key }],
      change: { address: c1, value: changeValue, kind: 'p2wpkh', path: [44, 0, 0, 1, 0] },
      fee: '1000',
      feeRate: '5',
    });
    const originalUnsigned = { context: ctxOf('9000') };
    // as bumpSignStep leaves a signed replacement: it is the transfer's transaction, the one it
    // replaces kept with the bump
    const id = await insertTransfer(w, {
      status: 'SENT',
      txHash: replacement,
      txHashes: [original, replacement],
      inputs: [],
      change: null,
      unsigned: { context: ctxOf('8000') },
      feeBump: {
        status: 'SIGNED',
        method: 'RBF',
        round: 1,
        priority: 'FAST',
        requested_by: null,
        requested_at: new Date().toISOString(),
        deadline: new Date().toISOString(),
        previous: { tx_hash: original, signed_tx: 'aa', unsigned: originalUnsigned },
      },
    });
    await h.c.db.query("UPDATE transfers SET signed_tx = 'bb' WHERE transfer_id = $1", [id]);
    const rpc = {
      call: async (m: string) => {
        throw new Error(m === 'sendrawtransaction' ? 'insufficient fee, rejecting replacement' : `unexpected rpc ${m}`);
      },
    };
    const adapter = new BitcoinAdapter({ network: BITCOIN, rpc: rpc as never });
    const x = {
      db: h.c.db,
      clock: () => new Date(),
      metrics: undefined,
      chains: { adapter: () => adapter, lookup: async () => ({ state: 'unknown' }) },
      opts: { log: () => {} },
      owned: <T>(tid: string, f: (q: never, cur: never) => Promise<T>) =>
        h.c.db.tx(async (q) => f(q as never, (await loadTransfer(q, tid, true)) as never)),
    } as unknown as StepContext;
    const row = (await h.c.db.tx((q) => loadTransfer(q, id)))!;
    const after = await bumpBroadcastStep(x, row);
    expect(after?.fee_bump).toMatchObject({
      status: 'FAILED',
      sub_status: 'BROADCAST_FAILED',
      refused_tx_hash: replacement,
    });
    expect(after?.fee_bump?.previous).toBeUndefined();
    expect({ tx_hash: after?.tx_hash, tx_hashes: after?.tx_hashes, signed_tx: after?.signed_tx }).toEqual({
      tx_hash: original,
      tx_hashes: [original],
      signed_tx: 'aa',
    });
    expect(after?.unsigned).toEqual(originalUnsigned);
    // the change offered is the broadcast transaction's, never the refused replacement's
    const offered = await list([c1]);
    expect(offered).toContain(`${original}:1`);
    expect(offered).not.toContain(`${replacement}:1`);
  });
});

describe('review: CPFP of a transfer whose change a later transfer already spends', () => {
  it('refuses the CPFP child: the change output is the input of a live transfer (double spend)', async () => {
    const w = await createWallet();
    const c1 = await allocateChange(w.wallet_id);
    const c2 = await allocateChange(w.wallet_id);
    const a = txid();
    const parent = await insertTransfer(w, {
      status: 'SENT',
      txHash: a,
      inputs: [{ txid: txid(), vout: 0, value: '200000', address: w.addresses[0].address }],
      change: { address: c1, value: '150000' },
    });
    // PgUtxoSource offered a:1 (unconfirmed own change, depth 1) to a later customer transfer B,
    // which is built and sent spending it
    expect(await list([c1])).toContain(`${a}:1`);
    await insertTransfer(w, {
      status: 'SENT',
      txHash: txid(),
      inputs: [{ txid: a, vout: 1, value: '150000', address: c1 }],
      change: { address: c2, value: '100000' },
    });
    expect(await list([c1])).not.toContain(`${a}:1`);
    // a node for bitcoin-mainnet that holds `a` in its mempool
    const chains = h.c.transfers.chains as unknown as Record<string, unknown>;
    const rpc = {
      call: async (m: string) => {
        if (m === 'getnetworkinfo') return { relayfee: 0.00001, incrementalfee: 0.00001 };
        if (m === 'estimatesmartfee') return { feerate: 0.0002 };
        throw new Error(`unexpected rpc ${m}`);
      },
    };
    const adapter = new BitcoinAdapter({ network: BITCOIN, rpc: rpc as never });
    const origAdapter = chains.adapter as (k: string) => unknown;
    const origLookup = chains.lookup as (k: string, t: string) => unknown;
    chains.adapter = (k: string) => (k === 'bitcoin-mainnet' ? adapter : origAdapter.call(h.c.transfers.chains, k));
    chains.lookup = async () => ({ state: 'pending' });
    try {
      const actor = (await h.c.db.query<{ user_id: string }>('SELECT user_id FROM users LIMIT 1'))[0]!.user_id;
      let outcome: string;
      try {
        const v = await h.c.transfers.service.requestFeeBump(actor, h.profileId, parent, 'FAST', 'CPFP');
        outcome = `created child ${JSON.stringify((v as unknown as Json).fee_bump)}`;
      } catch (e) {
        outcome = (e as { code?: string }).code ?? String(e);
      }
      // the child would spend a:1, already the input of B: one of the two can never be mined
      // (B stays SENT forever if the child — which pays more — replaces it, or the child fails)
      expect(outcome).toBe('TRANSFER_STATE_CONFLICT');
    } finally {
      chains.adapter = origAdapter;
      chains.lookup = origLookup;
    }
  });
});

describe('review: RBF of a transfer whose change a later transfer already spends', () => {
  it('refuses the replacement: it would evict the live child transfer, which then stays SENT forever', async () => {
    const w = await createWallet();
    const deposit = w.addresses[0].address;
    const funding = txid();
    const sources = await walletSources(h.c.db, w.wallet_id, BTC);
    const change = await h.c.db.tx(async (q) => {
      const c = await nextChangeAddress(q, await walletKeys(q, w.wallet_id), BTC, BTC_DEF);
      await recordChangeAddress(q, w.wallet_id, BTC, c, new Date());
      return c;
    });
    const rpc = {
      call: async (m: string) => {
        if (m === 'getnetworkinfo') return { relayfee: 0.00001, incrementalfee: 0.00001 };
        if (m === 'estimatesmartfee') return { feerate: 0.0002 };
        throw new Error(`unexpected rpc ${m}`);
      },
    };
    const adapter = new BitcoinAdapter({
      network: BITCOIN,
      rpc: rpc as never,
      utxos: { listUnspent: async () => [{ txid: funding, vout: 0, value: 1_000_000n, address: deposit }] },
    });
    // A: the real unsigned transaction the pipeline would have built and sent (change to `change`)
    const built = await adapter.buildTransfer({
      fields: { asset: { kind: 'native' }, destination: deposit, amount: 10_000n },
      sources,
      change,
      feeLevel: 'STANDARD',
    });
    const a = txid();
    const ctx = built.context as unknown as { change: { value: string; address: string } };
    const parent = await insertTransfer(w, {
      status: 'SENT',
      txHash: a,
      inputs: [],
      change: null,
      unsigned: storeUnsigned(built, '100000'),
    });
    // B: a later transfer, offered A's unconfirmed change by PgUtxoSource, built and SENT on it
    expect(await list([change.address])).toContain(`${a}:1`);
    await insertTransfer(w, {
      status: 'SENT',
      txHash: txid(),
      inputs: [{ txid: a, vout: 1, value: ctx.change.value, address: ctx.change.address }],
      change: null,
    });
    const chains = h.c.transfers.chains as unknown as Record<string, unknown>;
    const origAdapter = chains.adapter as (k: string) => unknown;
    chains.adapter = (k: string) => (k === 'bitcoin-mainnet' ? adapter : origAdapter.call(h.c.transfers.chains, k));
    try {
      const actor = (await h.c.db.query<{ user_id: string }>('SELECT user_id FROM users LIMIT 1'))[0]!.user_id;
      let outcome: string;
      try {
        const v = await h.c.transfers.service.requestFeeBump(actor, h.profileId, parent, 'FAST', 'RBF');
        outcome = `bump requested ${JSON.stringify((v as unknown as Json).fee_bump)}`;
      } catch (e) {
        outcome = (e as { code?: string }).code ?? String(e);
      }
      // a replacement of A (new txid) evicts B from every mempool: B's input a:1 never exists
      // again, B (a customer withdrawal) stays SENT forever and its coins are re-offered
      expect(outcome).toBe('TRANSFER_STATE_CONFLICT');
    } finally {
      chains.adapter = origAdapter;
    }
  });
});
