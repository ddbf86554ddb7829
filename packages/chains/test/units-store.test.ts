import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  addressPath,
  formatUnits,
  InvalidTransferError,
  JsonFileWatcherStore,
  parseUnits,
  StaticPriceSource,
  usdValue,
} from '../src/index.js';

describe('decimal units', () => {
  it('parseUnits ∘ formatUnits is the identity on base units', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 30n }), fc.integer({ min: 0, max: 18 }), (v, d) => {
        expect(parseUnits(formatUnits(v, d), d)).toBe(v);
      }),
    );
  });
  it('refuses more decimals than the asset has, and non-numbers, with a 422 error', () => {
    expect(() => parseUnits('1.0000001', 6)).toThrow(InvalidTransferError);
    for (const bad of ['', '-1', '1e5', '0x10', '1.', '.5'])
      expect(() => parseUnits(bad, 6)).toThrow(InvalidTransferError);
    expect(formatUnits(1_500_000n, 6)).toBe('1.5');
    expect(formatUnits(0n, 18)).toBe('0');
  });
  it('USD values round half up to cents; no price → null', async () => {
    expect(usdValue(21_000n * 10n ** 9n, 18, '3000')).toBe('0.06'); // 0.000021 ETH × 3000 = 0.063
    expect(usdValue(5_000n, 8, '100000')).toBe('5.00');
    expect(usdValue(1n, 8, null)).toBeNull();
    expect(await new StaticPriceSource({ eth: '1' }).usdPrice('ETH')).toBe('1');
    expect(() => new StaticPriceSource({ ETH: 'lots' })).toThrow(InvalidTransferError);
  });
});

describe('derivation paths', () => {
  it('m/44/{coin_type}/{wallet}/{branch}/{index}, non-hardened', () => {
    expect(addressPath(60, 3, 7)).toEqual([44, 60, 3, 0, 7]);
    expect(addressPath(2, 0, 1, 1)).toEqual([44, 2, 0, 1, 1]);
    expect(() => addressPath(60, 0x8000_0000, 0)).toThrow(RangeError);
  });
});

describe('JsonFileWatcherStore (development store)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'chains-store-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it('commits atomically (no temp files left), merges balances and UTXOs, and is read back by a new instance', async () => {
    const path = join(dir, 'a', 'store.json');
    const s = new JsonFileWatcherStore(path);
    expect(await s.getCursor('x')).toBeNull();
    await s.commit('x', {
      cursor: { height: 5, hash: 'h5' },
      seen: ['t1:a:native'],
      balances: [{ address: 'a', asset: 'native', balance: '10' }],
      utxosAdded: [{ outpoint: 't1:0', address: 'a', value: '10', height: 5 }],
      utxosSpent: [],
      events: [
        {
          type: 'balance_updated',
          chain: 'x',
          address: 'a',
          asset: 'native',
          balance: '10',
          previous_balance: '0',
          block_height: 5,
          block_hash: 'h5',
        },
      ],
    });
    await s.commit('x', {
      cursor: { height: 6, hash: 'h6' },
      seen: ['t2:a:native'],
      balances: [{ address: 'a', asset: 'native', balance: '0' }],
      utxosAdded: [],
      utxosSpent: ['t1:0'],
      events: [],
    });
    const t = new JsonFileWatcherStore(path);
    expect(await t.getCursor('x')).toEqual({ height: 6, hash: 'h6' });
    expect(await t.seen('x', ['t1:a:native', 't3:a:native'])).toEqual(new Set(['t1:a:native']));
    expect(await t.getBalances('x')).toEqual([{ address: 'a', asset: 'native', balance: '0' }]);
    expect(await t.getUtxos('x')).toEqual([]);
    expect((await t.events('x')).length).toBe(1);
    expect(await t.getCursor('other')).toBeNull();
    expect(readdirSync(join(dir, 'a'))).toEqual(['store.json']);
  });
  it('refuses a file that is not a store', async () => {
    const path = join(dir, 'bad.json');
    writeFileSync(path, '{"version":2}');
    await expect(new JsonFileWatcherStore(path).getCursor('x')).rejects.toThrow(/not a watcher store/);
  });
});
