/**
 * TRON watcher against a TEST-ONLY chain model served over `node:http` with the shapes of TRON's
 * documented HTTP API (test/helpers/tron-model.ts). No TRON node runs offline here: this checks
 * the watcher's logic (detection, confirmations, balances, cursor, restart, forks) and its reading
 * of the API shapes, not interoperability with java-tron (README).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  exactInt,
  InvalidAddressError,
  JsonFileWatcherStore,
  NodeRpcError,
  quoteLongIntegers,
  ReorgTooDeepError,
  TronHttpClient,
  TronWatcher,
  tronAddress,
  type WatcherEvent,
} from '../src/index.js';
import { MODEL_FEE, serveTronModel, TronChainModel, type TronModelServer } from './helpers/tron-model.js';

const addr = (k: bigint) => tronAddress(secp256k1.Point.BASE.multiply(k).toBytes(true));
const wallet = addr(2n);
const other = addr(3n);
const funder = addr(4n);
const target = addr(5n);
const USDT = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t';
/** 2^53 + 1 sun: above JSON's exact integers, so reading it checks the exact int64 parsing. */
const BIG = 2n ** 53n + 1n;

const summary = (events: WatcherEvent[]) =>
  events.map((e) =>
    e.type === 'transaction_detected'
      ? `detected ${e.txid.slice(0, 6)} ${e.address === wallet ? 'wallet' : e.address} ${e.asset === 'native' ? 'TRX' : 'USDT'} ${e.direction} ${e.amount} @${e.block_height}`
      : `balance ${e.address === wallet ? 'wallet' : e.address} ${e.asset === 'native' ? 'TRX' : 'USDT'} ${e.previous_balance}→${e.balance} @${e.block_height}`,
  );

describe('exact int64 parsing of TRON JSON', () => {
  it('quotes integer literals of 16+ digits outside strings only', () => {
    const text =
      '{"a":64086449348265042,"b":"x: 12345678901234567, y","c":[-9007199254740993,1.5e300,42],"d":"\\"1234567890123456"}';
    const parsed = JSON.parse(quoteLongIntegers(text));
    expect(exactInt(parsed.a)).toBe(64086449348265042n);
    expect(parsed.b).toBe('x: 12345678901234567, y');
    expect(exactInt(parsed.c[0])).toBe(-9007199254740993n);
    expect(parsed.c[1]).toBe(1.5e300);
    expect(exactInt(parsed.c[2])).toBe(42n);
    expect(parsed.d).toBe('"1234567890123456');
    expect(exactInt(1.5)).toBeUndefined();
    expect(exactInt('12')).toBeUndefined();
  });
});

describe('TRON watcher (TRX and TRC-20) on a TRON-shaped HTTP chain model', () => {
  let model: TronChainModel;
  let server: TronModelServer;
  let dir: string;
  let client: TronHttpClient;

  beforeAll(async () => {
    model = new TronChainModel({ [funder]: 10n ** 18n }, { [`${USDT}|${funder}`]: 10n ** 12n });
    for (let i = 0; i < 3; i++) model.mine();
    server = await serveTronModel(model);
    client = new TronHttpClient(server.url);
    dir = mkdtempSync(join(tmpdir(), 'chains-tron-'));
  });
  afterAll(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('detects deposits and spends once, confirms balances after 3 blocks, and resumes after restarts', async () => {
    const storePath = join(dir, 'watcher.json');
    const startHeight = model.tip.number + 1;
    const makeWatcher = () => {
      const w = new TronWatcher({
        chain: 'tron',
        client,
        store: new JsonFileWatcherStore(storePath),
        tokens: [USDT],
        confirmations: 3,
        startHeight,
      });
      w.watch(wallet);
      return w;
    };
    let watcher = makeWatcher();
    expect(await watcher.poll()).toEqual([]);

    // A TRX deposit (above 2^53 sun) and a TRC-20 deposit, in two blocks.
    const trxIn = model.tx('trx', funder, wallet, BIG);
    const b1 = model.mine([trxIn]).number;
    const usdtIn = model.tx('trc20', funder, wallet, 5_000_000n, USDT);
    const b2 = model.mine([usdtIn]).number;
    const heard: WatcherEvent[] = [];
    watcher.on((e) => heard.push(e));
    let events = await watcher.poll();
    expect(summary(events)).toEqual([
      `detected ${trxIn.txID.slice(0, 6)} wallet TRX incoming ${BIG} @${b1}`,
      `detected ${usdtIn.txID.slice(0, 6)} wallet USDT incoming 5000000 @${b2}`,
    ]);
    expect(heard).toEqual(events);
    model.mine();
    events = await watcher.poll(); // b1 has 3 confirmations, b2 has 2
    expect(summary(events)).toEqual([`balance wallet TRX 0→${BIG} @${b1}`]);
    model.mine();
    events = await watcher.poll();
    expect(summary(events)).toEqual([`balance wallet USDT 0→5000000 @${b2}`]);

    // Restart: nothing is repeated.
    watcher = makeWatcher();
    expect(await watcher.poll()).toEqual([]);

    // An outgoing TRX transfer is seen in the pending pool first, then mined with a TRC-20 spend.
    const trxOut = model.tx('trx', wallet, other, 1_000_000n);
    model.pending.push(trxOut);
    events = await watcher.poll();
    expect(summary(events)).toEqual([`detected ${trxOut.txID.slice(0, 6)} wallet TRX outgoing 1000000 @null`]);
    watcher = makeWatcher(); // a restart re-reads the pool: nothing repeated
    expect(await watcher.poll()).toEqual([]);
    const usdtOut = model.tx('trc20', wallet, other, 1_250_000n, USDT);
    const b3 = model.mine([trxOut, usdtOut]).number;
    events = await watcher.poll();
    expect(summary(events)).toEqual([`detected ${usdtOut.txID.slice(0, 6)} wallet USDT outgoing 1250000 @${b3}`]);
    model.mine();
    model.mine();
    events = await watcher.poll();
    // The TRX balance read at the confirmed block counts the burnt fees of both transactions.
    const trxAfter = BIG - 1_000_000n - 2n * MODEL_FEE;
    expect(summary(events)).toEqual([
      `balance wallet TRX ${BIG}→${trxAfter} @${b3}`,
      `balance wallet USDT 5000000→3750000 @${b3}`,
    ]);

    // Store vs the model's view at the tip (everything confirmed by now), after one more restart.
    for (let i = 0; i < 3; i++) model.mine();
    watcher = makeWatcher();
    expect(await watcher.poll()).toEqual([]);
    const store = new JsonFileWatcherStore(storePath);
    const balances = Object.fromEntries((await store.getBalances('tron')).map((b) => [`${b.asset}`, b.balance]));
    expect(balances).toEqual({
      native: model.trxAt(wallet).toString(),
      [USDT]: model.tokenAt(USDT, wallet).toString(),
    });
    const all = await store.events('tron');
    const keys = all.map((e) =>
      e.type === 'transaction_detected' ? `${e.txid}:${e.asset}` : `${e.asset}@${e.block_height}`,
    );
    expect(new Set(keys).size).toBe(keys.length);
    expect(all.filter((e) => e.type === 'transaction_detected')).toHaveLength(4);
  });

  it('ignores a deposit whose block is replaced within the confirmation depth, and refuses a deeper fork', async () => {
    const storePath = join(dir, 'reorg.json');
    const w = new TronWatcher({
      chain: 'tron-reorg',
      client,
      store: new JsonFileWatcherStore(storePath),
      tokens: [USDT],
      confirmations: 3,
      mempool: false,
    });
    w.watch(target);
    await w.poll();
    const orphan = model.tx('trx', funder, target, 4096n);
    model.mine([orphan]);
    expect(summary(await w.poll())).toEqual([
      `detected ${orphan.txID.slice(0, 6)} ${target} TRX incoming 4096 @${model.tip.number}`,
    ]);
    // Replace the deposit's block (depth 1 < 3) by empty blocks: the deposit never counts.
    model.rollback(1);
    for (let i = 0; i < 4; i++) model.mine();
    expect(await w.poll()).toEqual([]);
    const store = new JsonFileWatcherStore(storePath);
    expect(await store.getBalances('tron-reorg')).toEqual([]);
    // A deposit that reaches 3 confirmations counts once.
    const kept = model.tx('trc20', funder, target, 777n, USDT);
    const height = model.mine([kept]).number;
    model.mine();
    model.mine();
    expect(summary(await w.poll())).toEqual([
      `detected ${kept.txID.slice(0, 6)} ${target} USDT incoming 777 @${height}`,
      `balance ${target} USDT 0→777 @${height}`,
    ]);
    // Replace a block the watcher already counted: it stops with ReorgTooDeepError, commits nothing.
    const cursor = (await store.getCursor('tron-reorg'))!;
    model.rollback(model.tip.number - cursor.height + 1);
    for (let i = 0; i < 5; i++) model.mine();
    expect(model.blocks[cursor.height]?.blockID).not.toBe(cursor.hash);
    await expect(w.poll()).rejects.toBeInstanceOf(ReorgTooDeepError);
    expect(await store.getCursor('tron-reorg')).toEqual(cursor);
  });

  it('commits nothing when a fork replaces a block between reading it and reading its transaction infos', async () => {
    const storePath = join(dir, 'midpoll.json');
    const w = new TronWatcher({
      chain: 'tron-midpoll',
      client,
      store: new JsonFileWatcherStore(storePath),
      tokens: [USDT],
      confirmations: 1,
      mempool: false,
    });
    w.watch(target);
    await w.poll();
    const store = new JsonFileWatcherStore(storePath);
    const before = await store.getCursor('tron-midpoll');
    const first = model.tx('trc20', funder, target, 11n, USDT);
    model.mine([first]);
    const replacement = model.tx('trc20', funder, target, 22n, USDT);
    server.beforeAnswer = (path) => {
      if (path !== '/wallet/gettransactioninfobyblocknum') return;
      server.beforeAnswer = undefined;
      model.rollback(1);
      model.mine([replacement]);
    };
    expect(await w.poll()).toEqual([]);
    expect(await store.getCursor('tron-midpoll')).toEqual(before);
    const events = await w.poll();
    expect(summary(events)).toEqual([
      `detected ${replacement.txID.slice(0, 6)} ${target} USDT incoming 22 @${model.tip.number}`,
      `balance ${target} USDT 0→22 @${model.tip.number}`,
    ]);
  });

  it('reports node errors as NodeRpcError and rejects bad options', async () => {
    await expect(client.accountBalanceAt(wallet, { hash: '0'.repeat(64), number: 1 })).rejects.toBeInstanceOf(
      NodeRpcError,
    );
    await expect(client.blockByNum(model.tip.number + 100)).rejects.toThrow(/no block/);
    expect(
      () =>
        new TronWatcher({ chain: 't', client, store: new JsonFileWatcherStore(join(dir, 'x.json')), confirmations: 0 }),
    ).toThrow(RangeError);
    const w = new TronWatcher({
      chain: 't',
      client,
      store: new JsonFileWatcherStore(join(dir, 'x.json')),
      confirmations: 1,
    });
    expect(() => w.watch('0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf')).toThrow(InvalidAddressError);
  });
});
