/**
 * The custody REST API of seed §4 over real HTTP (wallets, addresses, balances, assets,
 * blockchains): success paths, every error status, pagination bounds, idempotency, the auth
 * matrix and the rate limit. The concurrency suite also runs on PostgreSQL when reachable.
 */
import { randomUUID } from 'node:crypto';
import { deriveSecp256k1 } from '@custodian/crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASSETS, assetId, BLOCKCHAINS, blockchainId } from '../src/directory.js';
import { type Harness, type Json, postgresReachable, startHarness } from './helpers.js';

const ETH = blockchainId('ethereum-mainnet');
const BTC = blockchainId('bitcoin-mainnet');
const TRX = blockchainId('tron-mainnet');
const LTC_REG = blockchainId('litecoin-regtest');

let h: Harness;
let base: string;
const idem = () => ({ 'idempotency-key': randomUUID() });

beforeAll(async () => {
  h = await startHarness();
  base = `/api/v1/profiles/${h.profileId}`;
});
afterAll(async () => {
  await h?.close();
});

async function createWallet(ids: string[], name?: string) {
  const r = await h.req('POST', `${base}/wallets`, {
    key: h.apiKey,
    headers: idem(),
    body: { blockchain_ids: ids, ...(name !== undefined ? { name } : {}) },
  });
  expect(r.status).toBe(201);
  return r.body;
}

function expectProblem(r: { status: number; headers: Headers; body: Json }, status: number, code: string) {
  expect(r.status).toBe(status);
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.body).toMatchObject({ status, code, type: expect.stringMatching(/^https:\/\//), title: expect.any(String) });
}

describe('directory (seed §2 Asset, Blockchain)', () => {
  it('lists every built-in blockchain with stable UUIDv5 ids (development mode enables local networks)', async () => {
    const r = await h.req('GET', `${base}/blockchains?page_size=200`, { key: h.apiKey });
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(BLOCKCHAINS.length);
    expect(r.body.data.map((b: Json) => b.key)).toEqual(BLOCKCHAINS.map((b) => b.key));
    const local = r.body.data.find((b: Json) => b.key === 'ethereum-local');
    expect(local).toMatchObject({
      blockchain_id: blockchainId('ethereum-local'),
      chain_id: '31337',
      account_model: 'account',
    });
    expect(r.body.data.find((b: Json) => b.key === 'bitcoin-mainnet').address_types).toEqual(['p2wpkh', 'p2tr']);
  });

  it('lists assets with symbol (string), decimals (integer) and blockchain (key)', async () => {
    const r = await h.req('GET', `${base}/assets?page=1&page_size=200`, { key: h.apiKey });
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(ASSETS.length);
    const usdt = r.body.data.find((a: Json) => a.asset_id === assetId('tron-mainnet', 'USDT'));
    expect(usdt).toMatchObject({ symbol: 'USDT', decimals: 6, blockchain: 'tron-mainnet', kind: 'trc20' });
  });

  it('paginates: defaults, pages, past the end, and out-of-range values are 422', async () => {
    const d = await h.req('GET', `${base}/assets`, { key: h.apiKey });
    expect(d.body).toMatchObject({ page: 1, page_size: 50 });
    const p2 = await h.req('GET', `${base}/assets?page=2&page_size=5`, { key: h.apiKey });
    expect(p2.body.data.map((a: Json) => a.asset_id)).toEqual(
      ASSETS.slice(5, 10).map((a) => assetId(a.blockchain, a.symbol)),
    );
    const past = await h.req('GET', `${base}/blockchains?page=99&page_size=200`, { key: h.apiKey });
    expect(past.status).toBe(200);
    expect(past.body).toMatchObject({ data: [], page: 99, total: BLOCKCHAINS.length });
    const max = await h.req('GET', `${base}/blockchains?page_size=200`, { key: h.apiKey });
    expect(max.status).toBe(200);
    for (const q of ['page=0', 'page=-1', 'page_size=0', 'page_size=201', 'page_size=abc', 'page=1.5', 'bogus=1']) {
      const r = await h.req('GET', `${base}/assets?${q}`, { key: h.apiKey });
      expectProblem(r, 422, 'VALIDATION_FAILED');
      expect(r.body.errors[0].field).toMatch(/^query\./);
    }
  });
});

describe('wallets', () => {
  it('creates a wallet with addresses derived at m/44/{coin}/{wallet}/0/0 from the master public key', async () => {
    const w = await createWallet([ETH, BTC, TRX], 'Treasury');
    expect(w).toMatchObject({ profile_id: h.profileId, name: 'Treasury', blockchain_ids: [ETH, BTC, TRX] });
    const [mk] = await h.c.signers.masterKeys.listMasterKeys();
    const pub = Uint8Array.from(Buffer.from(mk!.secp256k1_public_key, 'hex'));
    const cc = Uint8Array.from(Buffer.from(mk!.secp256k1_chain_code, 'hex'));
    const eth = w.addresses.find((a: Json) => a.blockchain_id === ETH);
    const idx = Number(eth.derivation_path.split('/')[3]);
    expect(eth.derivation_path).toBe(`m/44/60/${idx}/0/0`);
    // Independent check of the Ethereum encoding: keccak256(X||Y)[12..] with EIP-55 checksum.
    const child = deriveSecp256k1(pub, cc, eth.derivation_path);
    const xy = secp256k1.Point.fromBytes(child.publicKey).toBytes(false).subarray(1);
    expect(eth.address).toBe(getAddress(`0x${Buffer.from(keccak_256(xy).subarray(12)).toString('hex')}`));
    expect(eth.public_key).toBe(Buffer.from(child.publicKey).toString('hex'));
    expect(w.addresses.find((a: Json) => a.blockchain_id === BTC).address).toMatch(/^bc1q[02-9ac-hj-np-z]{38}$/);
    expect(w.addresses.find((a: Json) => a.blockchain_id === TRX).address).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/);
  });

  it('allocates a new wallet index per wallet and lists identifiers only, paginated', async () => {
    const a = await createWallet([ETH]);
    const b = await createWallet([ETH]);
    expect(a.addresses[0].address).not.toBe(b.addresses[0].address);
    const r = await h.req('GET', `${base}/wallets?page_size=200`, { key: h.apiKey });
    expect(r.status).toBe(200);
    expect(r.body.data.length).toBe(r.body.total);
    expect(Object.keys(r.body.data[0])).toEqual(['wallet_id']);
    expect(r.body.data.map((x: Json) => x.wallet_id)).toEqual(expect.arrayContaining([a.wallet_id, b.wallet_id]));
  });

  it('rejects bad bodies with 422 naming the field, malformed JSON with 400', async () => {
    const cases: [unknown, string][] = [
      [{}, 'body.blockchain_ids'],
      [{ blockchain_ids: [] }, 'body.blockchain_ids'],
      [{ blockchain_ids: ['nope'] }, 'body.blockchain_ids[0]'],
      [{ blockchain_ids: [ETH], name: 5 }, 'body.name'],
      [{ blockchain_ids: [ETH], extra: true }, 'body.extra'],
      [{ blockchain_ids: [randomUUID()] }, 'body.blockchain_ids[0]'],
    ];
    for (const [body, field] of cases) {
      const r = await h.req('POST', `${base}/wallets`, { key: h.apiKey, headers: idem(), body });
      expect(r.status).toBe(422);
      expect(r.body.errors.map((e: Json) => e.field)).toContain(field);
    }
    const unknown = await h.req('POST', `${base}/wallets`, {
      key: h.apiKey,
      headers: idem(),
      body: { blockchain_ids: [randomUUID()] },
    });
    expectProblem(unknown, 422, 'UNKNOWN_BLOCKCHAIN');
    const bad = await h.req('POST', `${base}/wallets`, {
      key: h.apiKey,
      headers: { ...idem(), 'content-type': 'application/json' },
      raw: '{"blockchain_ids": [',
    });
    expectProblem(bad, 400, 'MALFORMED_JSON');
    const proto = await h.req('POST', `${base}/wallets`, {
      key: h.apiKey,
      headers: { ...idem(), 'content-type': 'application/json' },
      raw: `{"blockchain_ids":["${ETH}"],"__proto__":{"x":1}}`,
    });
    expect(proto.status).toBe(400);
    const text = await h.req('POST', `${base}/wallets`, {
      key: h.apiKey,
      headers: { ...idem(), 'content-type': 'text/plain' },
      raw: 'hi',
    });
    expectProblem(text, 415, 'UNSUPPORTED_MEDIA_TYPE');
    const big = await h.req('POST', `${base}/wallets`, {
      key: h.apiKey,
      headers: idem(),
      body: { blockchain_ids: [ETH], name: 'x'.repeat(70_000) },
    });
    expectProblem(big, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('refuses blockchains disabled for the profile (admin setting)', async () => {
    const put = await h.req('PUT', `/admin/v1/profiles/${h.profileId}/blockchains/${LTC_REG}`, {
      token: h.adminToken,
      body: { enabled: false },
    });
    expect(put.status).toBe(204);
    const r = await h.req('POST', `${base}/wallets`, {
      key: h.apiKey,
      headers: idem(),
      body: { blockchain_ids: [LTC_REG] },
    });
    expectProblem(r, 422, 'UNKNOWN_BLOCKCHAIN');
    const list = await h.req('GET', `${base}/blockchains?page_size=200`, { key: h.apiKey });
    expect(list.body.data.map((b: Json) => b.blockchain_id)).not.toContain(LTC_REG);
    await h.req('PUT', `/admin/v1/profiles/${h.profileId}/blockchains/${LTC_REG}`, {
      token: h.adminToken,
      body: { enabled: true },
    });
  });
});

describe('addresses', () => {
  it('creates further addresses on UTXO chains only', async () => {
    const w = await createWallet([ETH, BTC]);
    const path = `${base}/wallets/${w.wallet_id}/addresses`;
    const second = await h.req('POST', path, { key: h.apiKey, headers: idem(), body: { blockchain_id: BTC } });
    expect(second.status).toBe(201);
    expect(second.body).toMatchObject({ address_index: 1, address_type: 'p2wpkh', wallet_id: w.wallet_id });
    const tr = await h.req('POST', path, {
      key: h.apiKey,
      headers: idem(),
      body: { blockchain_id: BTC, address_type: 'p2tr' },
    });
    expect(tr.status).toBe(201);
    expect(tr.body.address).toMatch(/^bc1p/);
    expect(tr.body.address_index).toBe(2);
    const eth = await h.req('POST', path, { key: h.apiKey, headers: idem(), body: { blockchain_id: ETH } });
    expectProblem(eth, 422, 'ADDRESS_LIMIT_REACHED');
    const notIn = await h.req('POST', path, { key: h.apiKey, headers: idem(), body: { blockchain_id: TRX } });
    expectProblem(notIn, 422, 'BLOCKCHAIN_NOT_IN_WALLET');
    const badType = await h.req('POST', path, {
      key: h.apiKey,
      headers: idem(),
      body: { blockchain_id: BTC, address_type: 'eoa' },
    });
    expectProblem(badType, 422, 'VALIDATION_FAILED');
    const list = await h.req('GET', path, { key: h.apiKey });
    expect(list.body.total).toBe(4);
    const btcOnly = await h.req('GET', `${path}?blockchain_id=${BTC}&page_size=2`, { key: h.apiKey });
    expect(btcOnly.body).toMatchObject({ total: 3, page_size: 2 });
    expect(btcOnly.body.data.map((a: Json) => a.address_index)).toEqual([0, 1]);
    const none = await h.req('POST', `${base}/wallets/${randomUUID()}/addresses`, {
      key: h.apiKey,
      headers: idem(),
      body: { blockchain_id: BTC },
    });
    expectProblem(none, 404, 'WALLET_NOT_FOUND');
    const noneList = await h.req('GET', `${base}/wallets/${randomUUID()}/addresses`, { key: h.apiKey });
    expectProblem(noneList, 404, 'WALLET_NOT_FOUND');
  });
});

describe('balances', () => {
  it('lists zero balances per wallet blockchain × enabled asset, exact decimal amounts, filters and one asset', async () => {
    const w = await createWallet([ETH, TRX]);
    const bal = `${base}/wallets/${w.wallet_id}/balances`;
    const all = await h.req('GET', bal, { key: h.apiKey });
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(
      ASSETS.filter((a) => ['ethereum-mainnet', 'tron-mainnet'].includes(a.blockchain)).length,
    );
    expect(all.body.data.every((b: Json) => b.amount === '0' && b.updated_at === null)).toBe(true);
    const ethAsset = assetId('ethereum-mainnet', 'ETH');
    await h.c.wallets.balances.setBalance(w.wallet_id, ethAsset, '1500000000000000001');
    const one = await h.req('GET', `${bal}/${ethAsset}`, { key: h.apiKey });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      amount: '1.500000000000000001',
      amount_base_units: '1500000000000000001',
      decimals: 18,
    });
    const big = (2n ** 255n).toString();
    await h.c.wallets.balances.setBalance(w.wallet_id, ethAsset, big);
    expect((await h.req('GET', `${bal}/${ethAsset}`, { key: h.apiKey })).body.amount_base_units).toBe(big);
    const tron = await h.req('GET', `${bal}?blockchain_id=${TRX}`, { key: h.apiKey });
    expect(tron.body.data.map((b: Json) => b.symbol).sort()).toEqual(['TRX', 'USDC', 'USDT']);
    const usdt = assetId('tron-mainnet', 'USDT');
    const both = await h.req('GET', `${bal}?blockchain_id=${TRX}&asset_id=${usdt}`, { key: h.apiKey });
    expect(both.body.data).toHaveLength(1);
    const missing = await h.req('GET', `${bal}/${assetId('bitcoin-mainnet', 'BTC')}`, { key: h.apiKey });
    expectProblem(missing, 404, 'ASSET_NOT_FOUND');
    const noWallet = await h.req('GET', `${base}/wallets/${randomUUID()}/balances`, { key: h.apiKey });
    expectProblem(noWallet, 404, 'WALLET_NOT_FOUND');
    const badId = await h.req('GET', `${bal}/not-a-uuid`, { key: h.apiKey });
    expectProblem(badId, 422, 'VALIDATION_FAILED');
  });
});

describe('idempotency', () => {
  it('replays the first response, rejects a different body (422), and accepts the Idempotency_key alias', async () => {
    const key = randomUUID();
    const body = { blockchain_ids: [ETH], name: 'idem' };
    const a = await h.req('POST', `${base}/wallets`, { key: h.apiKey, headers: { 'idempotency-key': key }, body });
    expect(a.status).toBe(201);
    const b = await h.req('POST', `${base}/wallets`, {
      key: h.apiKey,
      headers: { idempotency_key: key },
      body: { name: 'idem', blockchain_ids: [ETH] },
    });
    expect(b.status).toBe(201);
    expect(b.body).toEqual(a.body);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    const c = await h.req('POST', `${base}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': key },
      body: { blockchain_ids: [BTC] },
    });
    expectProblem(c, 422, 'IDEMPOTENCY_KEY_REUSED');
    const other = await h.req('POST', `${base}/wallets/${a.body.wallet_id}/addresses`, {
      key: h.apiKey,
      headers: { 'idempotency-key': key },
      body,
    });
    expect(other.status).toBe(422);
  });

  it('400 when missing or not a UUID (before body validation)', async () => {
    expectProblem(
      await h.req('POST', `${base}/wallets`, { key: h.apiKey, body: { blockchain_ids: [] } }),
      400,
      'IDEMPOTENCY_KEY_MISSING',
    );
    expectProblem(
      await h.req('POST', `${base}/wallets`, {
        key: h.apiKey,
        headers: { 'idempotency-key': 'abc' },
        body: { blockchain_ids: [ETH] },
      }),
      400,
      'IDEMPOTENCY_KEY_INVALID',
    );
    expectProblem(
      await h.req('POST', `${base}/wallets`, {
        key: h.apiKey,
        headers: { 'idempotency-key': randomUUID(), idempotency_key: randomUUID() },
        body: { blockchain_ids: [ETH] },
      }),
      400,
      'IDEMPOTENCY_KEY_INVALID',
    );
  });

  it('a request waits for the first one with its key: replays it once committed, 409 after the wait (PostgreSQL)', async (ctx) => {
    if (!(await postgresReachable())) ctx.skip();
    const pg = await startHarness({ db: 'postgres', coordinator: { idempotencyInFlightWaitMs: 300 } });
    try {
      const path = `/api/v1/profiles/${pg.profileId}/wallets`;
      const body = { blockchain_ids: [ETH] };
      const { sha256Hex, canonicalJson } = await import('../src/util.js');
      const send = (key: string) => pg.req('POST', path, { key: pg.apiKey, headers: { 'idempotency-key': key }, body });
      const stored = (await send(randomUUID())).body; // a well-formed wallet response to record
      // A first request with `key` that has claimed it and is still running (its transaction is open).
      const firstRequest = (key: string, until: Promise<void>) => {
        let claimed!: () => void;
        const isClaimed = new Promise<void>((r) => {
          claimed = r;
        });
        const done = pg.c.db.tx(async (q) => {
          const c = await pg.c.idempotency.claimIdempotent(
            q,
            pg.profileId,
            key,
            'POST',
            path.toLowerCase(),
            sha256Hex(canonicalJson(body)),
            60_000,
            1000,
          );
          if (c.kind !== 'started') throw new Error(`unexpected claim ${c.kind}`);
          claimed();
          await until;
          await pg.c.idempotency.completeIdempotent(q, pg.profileId, key, c.claimId, 201, stored);
        });
        return { isClaimed, done };
      };

      const k1 = randomUUID();
      let release!: () => void;
      const first = firstRequest(
        k1,
        new Promise<void>((r) => {
          release = r;
        }),
      );
      await first.isClaimed;
      const waiting = send(k1);
      await new Promise((r) => setTimeout(r, 100));
      release();
      await first.done;
      const replayed = await waiting;
      expect(replayed.status).toBe(201);
      expect(replayed.body).toEqual(stored);
      expect(replayed.headers.get('idempotent-replayed')).toBe('true');

      const k2 = randomUUID();
      let release2!: () => void;
      const slow = firstRequest(
        k2,
        new Promise<void>((r) => {
          release2 = r;
        }),
      );
      await slow.isClaimed;
      const r = await send(k2);
      expectProblem(r, 409, 'IDEMPOTENCY_REQUEST_IN_PROGRESS');
      expect(r.headers.get('retry-after')).toBe('1');
      release2();
      await slow.done;
    } finally {
      await pg.close();
    }
  });

  it('releases the key after a failed request and forgets keys after the retention window', async () => {
    const key = randomUUID();
    const fail = await h.req('POST', `${base}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': key },
      body: { blockchain_ids: [randomUUID()] },
    });
    expect(fail.status).toBe(422);
    const ok = await h.req('POST', `${base}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': key },
      body: { blockchain_ids: [ETH] },
    });
    expect(ok.status).toBe(201);
    h.clockOffset.ms += 24 * 3600_000 + 1000;
    try {
      const again = await h.req('POST', `${base}/wallets`, {
        key: h.apiKey,
        headers: { 'idempotency-key': key },
        body: { blockchain_ids: [BTC] },
      });
      expect(again.status).toBe(201);
      expect(again.body.wallet_id).not.toBe(ok.body.wallet_id);
    } finally {
      h.clockOffset.ms -= 24 * 3600_000 + 1000;
    }
  });
});

async function concurrentCreates(hh: Harness) {
  const key = randomUUID();
  const body = { blockchain_ids: [blockchainId('ethereum-sepolia')], name: 'race' };
  const before = (await hh.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM wallets'))[0]!.n;
  const k = await hh.req('POST', '/admin/v1/api-keys', {
    token: hh.adminToken,
    body: { profile_id: hh.profileId, name: 'race' },
  });
  const results = await Promise.all(
    Array.from({ length: 100 }, () =>
      hh.req('POST', `/api/v1/profiles/${hh.profileId}/wallets`, {
        key: k.body.api_key,
        headers: { 'idempotency-key': key },
        body,
      }),
    ),
  );
  const after = (await hh.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM wallets'))[0]!.n;
  expect(after - before).toBe(1);
  const created = results.filter((r) => r.status === 201);
  expect(created.length).toBeGreaterThanOrEqual(1);
  expect(new Set(created.map((r) => r.body.wallet_id)).size).toBe(1);
  expect(
    results.every((r) => r.status === 201 || (r.status === 409 && r.body.code === 'IDEMPOTENCY_REQUEST_IN_PROGRESS')),
  ).toBe(true);
  const replay = await hh.req('POST', `/api/v1/profiles/${hh.profileId}/wallets`, {
    key: k.body.api_key,
    headers: { 'idempotency-key': key },
    body,
  });
  expect(replay.status).toBe(201);
  expect(replay.body).toEqual(created[0]!.body);
}

describe('concurrency', () => {
  it('100 concurrent creates with one idempotency key make one wallet (PGlite)', async () => {
    await concurrentCreates(h);
  });
  it('100 concurrent creates with one idempotency key make one wallet (PostgreSQL)', async (ctx) => {
    if (!(await postgresReachable())) ctx.skip();
    const pg = await startHarness({ db: 'postgres' });
    try {
      await concurrentCreates(pg);
      // Concurrent distinct creates on a real pool get distinct wallet indices (row lock).
      const ws = await Promise.all(
        Array.from({ length: 20 }, () =>
          pg.req('POST', `/api/v1/profiles/${pg.profileId}/wallets`, {
            key: pg.apiKey,
            headers: idem(),
            body: { blockchain_ids: [BTC] },
          }),
        ),
      );
      expect(ws.every((r) => r.status === 201)).toBe(true);
      const paths = ws.map((r) => r.body.addresses[0].derivation_path);
      expect(new Set(paths).size).toBe(20);
    } finally {
      await pg.close();
    }
  });
});

describe('authentication (seed §5)', () => {
  it('401 without a key, with a bad key and with a revoked key; 403 on another profile, before any validation', async () => {
    expectProblem(await h.req('GET', `${base}/wallets`), 401, 'API_KEY_MISSING');
    expectProblem(await h.req('GET', `${base}/wallets`, { key: 'cst_nope' }), 401, 'API_KEY_INVALID');
    expectProblem(await h.req('POST', `${base}/wallets`, { key: 'x'.repeat(300), body: {} }), 401, 'API_KEY_INVALID');
    const k = await h.req('POST', '/admin/v1/api-keys', {
      token: h.adminToken,
      body: { profile_id: h.profileId, name: 'to revoke' },
    });
    expect((await h.req('GET', `${base}/wallets`, { key: k.body.api_key })).status).toBe(200);
    expect((await h.req('DELETE', `/admin/v1/api-keys/${k.body.api_key_id}`, { token: h.adminToken })).status).toBe(
      204,
    );
    expectProblem(await h.req('GET', `${base}/wallets`, { key: k.body.api_key }), 401, 'API_KEY_INVALID');

    const p2 = await h.req('POST', '/admin/v1/profiles', { token: h.adminToken, body: { name: 'other' } });
    const k2 = await h.req('POST', '/admin/v1/api-keys', {
      token: h.adminToken,
      body: { profile_id: p2.body.profile_id, name: 'other' },
    });
    const w = await createWallet([ETH]);
    // The other profile's key learns nothing: same 403 for an existing wallet, a random one, a bad id, a bad body.
    for (const [m, p] of [
      ['GET', `${base}/wallets`],
      ['GET', `${base}/wallets/${w.wallet_id}/addresses`],
      ['GET', `${base}/wallets/${randomUUID()}/balances`],
      ['GET', `/api/v1/profiles/${randomUUID()}/assets`],
      ['GET', '/api/v1/profiles/not-a-uuid/assets'],
      ['POST', `${base}/wallets`],
    ] as const) {
      const r = await h.req(m, p, { key: k2.body.api_key, ...(m === 'POST' ? { body: { bad: 1 } } : {}) });
      expectProblem(r, 403, 'PROFILE_FORBIDDEN');
      expect(r.body.detail).not.toContain(w.wallet_id);
    }
    const own = await h.req('GET', `/api/v1/profiles/${p2.body.profile_id}/wallets`, { key: k2.body.api_key });
    expect(own.body).toMatchObject({ data: [], total: 0 });
  });

  it('unknown routes are 404 problems', async () => {
    expectProblem(await h.req('GET', '/api/v2/nothing'), 404, 'ROUTE_NOT_FOUND');
  });

  it('rate-limits per key with 429 and Retry-After', async () => {
    const k = await h.req('POST', '/admin/v1/api-keys', {
      token: h.adminToken,
      body: { profile_id: h.profileId, name: 'burst' },
    });
    let last: Awaited<ReturnType<Harness['req']>> | undefined;
    for (let i = 0; i < 260; i++) {
      last = await h.req('GET', `${base}/blockchains?page_size=1`, { key: k.body.api_key });
      if (last.status === 429) break;
    }
    expectProblem(last!, 429, 'RATE_LIMITED');
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another key is unaffected.
    expect((await h.req('GET', `${base}/blockchains?page_size=1`, { key: h.apiKey })).status).toBe(200);
    // Guessing keys is rate-limited too: the limit runs before authentication.
    let guess: Awaited<ReturnType<Harness['req']>> | undefined;
    for (let i = 0; i < 260; i++) {
      guess = await h.req('GET', `${base}/wallets`, { key: 'cst_guess' });
      if (guess.status === 429) break;
      expect(guess.status).toBe(401);
    }
    expectProblem(guess!, 429, 'RATE_LIMITED');
  });
});
