/**
 * UTXO consolidation (self-spend.ts): planning (`planConsolidation`, pure: which UTXOs are spent,
 * the fee with each input sized by its kind, and the 422 refusals — fewer than 2 qualify, result
 * below dust), and `consolidate` on PGlite: it reads every address of the wallet (change and
 * archived included) and pays the wallet's first live deposit address.
 */
import { randomUUID } from 'node:crypto';
import {
  BitcoinAdapter,
  estimateVsize,
  LITECOIN_REGTEST,
  UTXO_NETWORKS,
  type Utxo,
  type UtxoAddressKind,
  utxoAddress,
} from '@custodian/chains';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLOCKCHAINS, blockchainId } from '../src/directory.js';
import { ApiError } from '../src/errors.js';
import { planConsolidation } from '../src/transfers/self-spend.js';
import { nextChangeAddress, recordChangeAddress, walletKeys } from '../src/transfers/utxo-sources.js';
import { type Harness, type Json, startHarness } from './helpers.js';

const address = utxoAddress(
  LITECOIN_REGTEST,
  secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true),
  'p2wpkh',
);
const utxo = (n: number, value: bigint): Utxo => ({ txid: n.toString(16).padStart(64, '0'), vout: 0, value, address });
const base = {
  maxInputs: 50,
  reserved: new Set<string>(),
  rate: 20,
  kindOf: (): UtxoAddressKind => 'p2wpkh',
  vsizeOf: (k: readonly ('p2wpkh' | 'p2tr')[]) => estimateVsize(LITECOIN_REGTEST, k, address),
  dust: 294n,
};

describe('planConsolidation', () => {
  it('smallest first, below the bound, at most max_inputs, reserved outpoints left out; fee = ceil(rate × vsize)', () => {
    const utxos = [utxo(1, 500_000n), utxo(2, 10_000n), utxo(3, 30_000n), utxo(4, 20_000n), utxo(5, 90_000_000n)];
    const p = planConsolidation(utxos, {
      ...base,
      below: 1_000_000n,
      maxInputs: 3,
      reserved: new Set([`${utxo(2, 0n).txid}:0`]),
    });
    expect(p.chosen.map((u) => u.value)).toEqual([20_000n, 30_000n, 500_000n]);
    const vsize = estimateVsize(LITECOIN_REGTEST, ['p2wpkh', 'p2wpkh', 'p2wpkh'], address);
    expect(p.fee).toBe(BigInt(Math.ceil(20 * vsize)));
    expect(p.amount).toBe(550_000n - p.fee);
  });

  it('refuses (422) when fewer than 2 UTXOs qualify', () => {
    const utxos = [utxo(1, 500_000n), utxo(2, 90_000_000n)];
    const run = () => planConsolidation(utxos, { ...base, below: 1_000_000n });
    expect(run).toThrow(ApiError);
    expect(run).toThrow(/1 UTXO\(s\) qualify/);
    expect(() => planConsolidation([], base)).toThrow(/at least 2/);
  });

  it('refuses (422) when the consolidated output would be dust', () => {
    // two 1 800-litoshi outputs at 20 lit/vB: the fee (3 550 for 177.5 vB) leaves 50, below dust
    const run = () => planConsolidation([utxo(1, 1_800n), utxo(2, 1_800n)], base);
    expect(run).toThrow(/below dust/);
    try {
      run();
    } catch (e) {
      expect((e as ApiError).code).toBe('VALIDATION_FAILED');
    }
  });
});

describe('planConsolidation input sizes', () => {
  it('sizes each input by its address kind (a P2TR input is smaller than a P2WPKH one)', () => {
    const trAddress = utxoAddress(
      LITECOIN_REGTEST,
      secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true),
      'p2tr',
    );
    const tr = (n: number, value: bigint): Utxo => ({ ...utxo(n, value), address: trAddress });
    const utxos = [tr(1, 10_000n), tr(2, 20_000n), utxo(3, 30_000n)];
    const p = planConsolidation(utxos, { ...base, kindOf: (u) => (u.address === trAddress ? 'p2tr' : 'p2wpkh') });
    const kinds: UtxoAddressKind[] = ['p2tr', 'p2tr', 'p2wpkh'];
    expect(p.fee).toBe(BigInt(Math.ceil(20 * estimateVsize(LITECOIN_REGTEST, kinds, address))));
    expect(p.fee).toBeLessThan(
      BigInt(Math.ceil(20 * estimateVsize(LITECOIN_REGTEST, ['p2wpkh', 'p2wpkh', 'p2wpkh'], address))),
    );
  });
});

const BTC = blockchainId('bitcoin-mainnet');
const BTC_DEF = BLOCKCHAINS.find((b) => b.key === 'bitcoin-mainnet')!;
const BITCOIN = UTXO_NETWORKS.find((n) => n.id === 'bitcoin')!;

describe('consolidate (PGlite)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });
  const idem = () => ({ 'idempotency-key': randomUUID() });
  const addAddress = async (walletId: string, type: 'p2wpkh' | 'p2tr'): Promise<Json> => {
    const r = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets/${walletId}/addresses`, {
      key: h.apiKey,
      headers: idem(),
      body: { blockchain_id: BTC, address_type: type },
    });
    expect(r.status).toBe(201);
    return r.body;
  };

  it('spends change, archived and P2TR addresses of the wallet, sized by kind, to its first live deposit address', async () => {
    const r = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
      key: h.apiKey,
      headers: idem(),
      body: { blockchain_ids: [BTC] },
    });
    expect(r.status).toBe(201);
    const w = r.body;
    const first = w.addresses[0].address as string;
    const second = (await addAddress(w.wallet_id, 'p2wpkh')).address as string;
    const tr = (await addAddress(w.wallet_id, 'p2tr')).address as string;
    const change = await h.c.db.tx(async (q) => {
      const c = await nextChangeAddress(q, await walletKeys(q, w.wallet_id), BTC, BTC_DEF);
      await recordChangeAddress(q, w.wallet_id, BTC, c, new Date());
      return c.address;
    });
    // the lowest deposit address is archived: the consolidated output goes to the next live one
    await h.c.db.query('UPDATE addresses SET archived_at = now() WHERE address = $1', [first]);
    const held: Utxo[] = [
      { txid: randomUUID().replaceAll('-', '').padEnd(64, '0'), vout: 0, value: 10_000n, address: change },
      { txid: randomUUID().replaceAll('-', '').padEnd(64, '1'), vout: 1, value: 20_000n, address: tr },
      { txid: randomUUID().replaceAll('-', '').padEnd(64, '2'), vout: 0, value: 30_000n, address: first },
    ];
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
      utxos: { listUnspent: async (addrs: readonly string[]) => held.filter((u) => addrs.includes(u.address)) },
    });
    const chains = h.c.transfers.chains as unknown as Record<string, unknown>;
    const origAdapter = chains.adapter as (k: string) => unknown;
    chains.adapter = (k: string) => (k === 'bitcoin-mainnet' ? adapter : origAdapter.call(h.c.transfers.chains, k));
    try {
      const actor = (await h.c.db.query<{ user_id: string }>('SELECT user_id FROM users LIMIT 1'))[0]!.user_id;
      const v = (await h.c.transfers.service.consolidate(actor, h.profileId, w.wallet_id, {
        blockchain_id: BTC,
      })) as unknown as Json;
      const row = (
        await h.c.db.query<{ destination_address: string; self_spend: Json }>(
          'SELECT destination_address, self_spend FROM transfers WHERE transfer_id = $1',
          [v.transfer_id],
        )
      )[0]!;
      expect(row.destination_address).toBe(second);
      expect(row.self_spend.inputs.map((i: Json) => i.address)).toEqual([change, tr, first]);
      const kinds: UtxoAddressKind[] = ['p2wpkh', 'p2tr', 'p2wpkh'];
      expect(row.self_spend.fee).toBe(String(Math.ceil(20 * estimateVsize(BITCOIN, kinds, second))));
    } finally {
      chains.adapter = origAdapter;
    }
  });
});
