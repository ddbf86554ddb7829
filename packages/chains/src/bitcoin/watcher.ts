import { bytesToHex } from '@noble/hashes/utils.js';
import { ReorgTooDeepError } from '../errors.js';
import { parseUnits } from '../units.js';
import {
  type BalanceRow,
  type Cursor,
  PollingWatcher,
  type TransactionDetectedEvent,
  type UtxoRow,
  type WatcherEvent,
  type WatcherStore,
} from '../watcher/types.js';
import { decodeUtxoAddress } from './adapter.js';
import type { UtxoNetwork } from './networks.js';
import type { BitcoinRpc } from './rpc.js';

export interface UtxoWatcherOptions {
  network: UtxoNetwork;
  rpc: BitcoinRpc;
  store: WatcherStore;
  /** Confirmations before an output counts in the balance (≥ 1). */
  confirmations: number;
  /** Height to start from when the store has no cursor (default: the confirmed tip at first poll). */
  startHeight?: number;
  /** Read the mempool (`getrawmempool` + `getrawtransaction`); default true. */
  mempool?: boolean;
}

interface RpcVout {
  value: number;
  n: number;
  scriptPubKey: { hex: string };
}
interface RpcTx {
  txid: string;
  vin: { txid?: string; vout?: number; coinbase?: string }[];
  vout: RpcVout[];
}
interface RpcBlock {
  hash: string;
  height: number;
  previousblockhash?: string;
  tx: RpcTx[];
}

const sat = (v: number) => parseUnits(v.toFixed(8), 8, 'value');

/**
 * Watches Bitcoin-family addresses by following blocks (`getblock` verbosity 2) and the mempool.
 * Keeps the confirmed UTXO set of the watched addresses in the store; a balance is the sum of its
 * confirmed outputs. `transaction_detected` fires once per (txid, address): incoming when an
 * output pays a watched address, outgoing when an input spends a known output of one. The cursor
 * moves to the block with `confirmations` confirmations after parent links are checked (a counted
 * block replaced → {@link ReorgTooDeepError}); a poll commits cursor, UTXO changes, balances,
 * seen keys and events together, so a restart neither misses nor repeats anything.
 */
export class UtxoWatcher extends PollingWatcher {
  readonly #o: UtxoWatcherOptions;
  /** scriptPubKey hex → address. */
  readonly #scripts = new Map<string, string>();
  /** Mempool txids already looked at and found irrelevant (memory only). */
  readonly #mempoolChecked = new Set<string>();

  constructor(options: UtxoWatcherOptions) {
    super();
    if (!Number.isInteger(options.confirmations) || options.confirmations < 1)
      throw new RangeError('confirmations: integer ≥ 1');
    this.#o = options;
  }

  watch(address: string): void {
    const { script } = decodeUtxoAddress(this.#o.network, address, 'address');
    this.#scripts.set(bytesToHex(script), address);
    this.#mempoolChecked.clear();
  }

  async #block(height: number): Promise<RpcBlock> {
    const hash = await this.#o.rpc.call<string>('getblockhash', [height]);
    return this.#o.rpc.call<RpcBlock>('getblock', [hash, 2]);
  }

  protected async pollOnce(): Promise<WatcherEvent[]> {
    const { rpc, store, network } = this.#o;
    const chain = network.id;
    const tip = await rpc.call<number>('getblockcount');
    const confirmedTarget = tip - this.#o.confirmations + 1;
    let cursor: Cursor | null = await store.getCursor(chain);
    const fresh = cursor === null;
    if (cursor === null) {
      const h = Math.max(0, (this.#o.startHeight ?? confirmedTarget + 1) - 1);
      cursor = { height: h, hash: await rpc.call<string>('getblockhash', [h]) };
    }
    const confirmed = new Map((await store.getUtxos(chain)).map((u) => [u.outpoint, u]));
    const known = new Map<string, { address: string; value: bigint }>();
    for (const u of confirmed.values()) known.set(u.outpoint, { address: u.address, value: BigInt(u.value) });
    const detected: TransactionDetectedEvent[] = [];
    const match = (tx: RpcTx, height: number | null): boolean => {
      let hit = false;
      for (const out of tx.vout) {
        const address = this.#scripts.get(out.scriptPubKey.hex);
        if (address === undefined) continue;
        hit = true;
        known.set(`${tx.txid}:${out.n}`, { address, value: sat(out.value) });
        detected.push({
          type: 'transaction_detected',
          chain,
          txid: tx.txid,
          address,
          asset: 'native',
          direction: 'incoming',
          amount: sat(out.value).toString(),
          block_height: height,
        });
      }
      const spentBy = new Map<string, bigint>();
      for (const i of tx.vin) {
        if (i.txid === undefined || i.vout === undefined) continue;
        const k = known.get(`${i.txid}:${i.vout}`);
        if (k !== undefined) spentBy.set(k.address, (spentBy.get(k.address) ?? 0n) + k.value);
      }
      for (const [address, value] of spentBy) {
        hit = true;
        detected.push({
          type: 'transaction_detected',
          chain,
          txid: tx.txid,
          address,
          asset: 'native',
          direction: 'outgoing',
          amount: value.toString(),
          block_height: height,
        });
      }
      return hit;
    };
    // (1) detection: blocks above the cursor, then the mempool.
    const blocks = new Map<number, RpcBlock>();
    for (let h = cursor.height + 1; h <= tip; h++) {
      const b = await this.#block(h);
      blocks.set(h, b);
      for (const tx of b.tx) match(tx, h);
    }
    if (this.#o.mempool ?? true) {
      for (const txid of await rpc.call<string[]>('getrawmempool')) {
        if (this.#mempoolChecked.has(txid)) continue;
        let tx: RpcTx;
        try {
          tx = await rpc.call<RpcTx>('getrawtransaction', [txid, true]);
        } catch {
          continue; // left the mempool meanwhile
        }
        if (!match(tx, null)) this.#mempoolChecked.add(txid);
      }
    }
    const keyOf = (e: TransactionDetectedEvent) => `${e.txid}:${e.address}:${e.direction}`;
    const already = await store.seen(chain, detected.map(keyOf));
    const reported = new Map<string, TransactionDetectedEvent>();
    for (const e of detected) if (!already.has(keyOf(e)) && !reported.has(keyOf(e))) reported.set(keyOf(e), e);
    const events: WatcherEvent[] = [...reported.values()];

    // (2) confirmation: apply blocks up to the confirmed target to the UTXO set.
    let next = cursor;
    const added = new Map<string, UtxoRow>();
    const spent = new Set<string>();
    const balances: BalanceRow[] = [];
    if (confirmedTarget > cursor.height) {
      let prev = cursor.hash;
      for (let h = cursor.height + 1; h <= confirmedTarget; h++) {
        const b = blocks.get(h) as RpcBlock;
        if (b.previousblockhash !== prev) {
          if (h === cursor.height + 1) throw new ReorgTooDeepError(cursor.height, this.#o.confirmations);
          return [];
        }
        prev = b.hash;
        for (const tx of b.tx) {
          for (const i of tx.vin) {
            if (i.txid === undefined) continue;
            const op = `${i.txid}:${i.vout}`;
            if (added.delete(op)) continue;
            if (confirmed.has(op)) spent.add(op);
          }
          for (const out of tx.vout) {
            const address = this.#scripts.get(out.scriptPubKey.hex);
            if (address !== undefined)
              added.set(`${tx.txid}:${out.n}`, {
                outpoint: `${tx.txid}:${out.n}`,
                address,
                value: sat(out.value).toString(),
                height: h,
              });
          }
        }
      }
      next = { height: confirmedTarget, hash: prev };
      const before = new Map<string, bigint>();
      const after = new Map<string, bigint>();
      for (const u of confirmed.values()) {
        before.set(u.address, (before.get(u.address) ?? 0n) + BigInt(u.value));
        if (!spent.has(u.outpoint)) after.set(u.address, (after.get(u.address) ?? 0n) + BigInt(u.value));
      }
      for (const u of added.values()) after.set(u.address, (after.get(u.address) ?? 0n) + BigInt(u.value));
      const stored = new Map((await store.getBalances(chain)).map((r) => [r.address, r.balance]));
      for (const address of new Set([...this.#scripts.values(), ...before.keys()])) {
        const value = (after.get(address) ?? 0n).toString();
        const previous = stored.get(address) ?? '0';
        if (value !== previous) {
          balances.push({ address, asset: 'native', balance: value });
          events.push({
            type: 'balance_updated',
            chain,
            address,
            asset: 'native',
            balance: value,
            previous_balance: previous,
            block_height: next.height,
            block_hash: next.hash,
          });
        }
      }
    }
    if (events.length === 0 && next === cursor && !fresh) return [];
    await store.commit(chain, {
      cursor: next,
      seen: [...reported.keys()],
      balances,
      utxosAdded: [...added.values()],
      utxosSpent: [...spent],
      events,
    });
    return events;
  }
}
