/**
 * The part of a poll every account-model watcher (Ethereum, TRON) shares, once the chain-specific
 * detection has run over the blocks above the cursor:
 *
 * 1. drop detections already reported (key `txid:address:asset`, the store's `seen` set) and
 *    duplicates within the poll;
 * 2. move the cursor to the block with the configured confirmations, after checking that every
 *    block read links to its parent: the counted cursor block replaced → {@link ReorgTooDeepError};
 *    a fork met higher up while the blocks were read → nothing is committed and the next poll
 *    retries;
 * 3. read each watched balance at the new cursor block and emit `balance_updated` where it
 *    differs from the stored value;
 * 4. commit cursor, seen keys, balances and events in one store commit.
 *
 * A crash before (4) repeats the poll; after (4) nothing is repeated.
 */
import { ReorgTooDeepError } from '../errors.js';
import type { BalanceRow, Cursor, TransactionDetectedEvent, WatcherEvent, WatcherStore } from './types.js';

/** A block as the settle step needs it: its hash and its parent's, hex as the node prints them. */
export interface LinkedBlock {
  readonly hash: string;
  readonly parentHash: string;
}

/** Inputs of {@link settleAccountPoll}. */
export interface AccountPoll {
  chain: string;
  store: WatcherStore;
  confirmations: number;
  /** The stored cursor (or the starting point when the store had none). */
  cursor: Cursor;
  /** Height of the highest block with `confirmations` confirmations (tip − confirmations + 1). */
  confirmedTarget: number;
  /** Every block read above the cursor, up to the tip, by height. */
  blocks: ReadonlyMap<number, LinkedBlock>;
  /** This poll's detections (duplicates and already-reported ones are dropped here). */
  detected: readonly TransactionDetectedEvent[];
  addresses: Iterable<string>;
  /** Assets followed per address: `native` first, then tokens as the chain writes them. */
  assets: readonly string[];
  /**
   * Balance of `address` in `asset` at the confirmed block `at` (base units); `previous` is the
   * stored balance (decimal string, "0" when none), for chains that derive token balances from it.
   */
  balanceAt(address: string, asset: string, at: Cursor, previous: string): Promise<bigint>;
}

/** Key of a detection in the store's `seen` set. */
export const detectionKey = (e: TransactionDetectedEvent): string => `${e.txid}:${e.address}:${e.asset}`;

/**
 * Steps 1–4 of the module comment.
 * @returns the events committed (empty when nothing changed), or null when a fork was met while
 *   the blocks were read (nothing committed: the next poll retries)
 * @throws ReorgTooDeepError when the counted cursor block was replaced; the store's and
 *   `balanceAt`'s errors as they come
 */
export async function settleAccountPoll(p: AccountPoll): Promise<WatcherEvent[] | null> {
  const { chain, store, cursor } = p;
  const already = await store.seen(chain, p.detected.map(detectionKey));
  const fresh = new Map<string, TransactionDetectedEvent>();
  for (const e of p.detected) {
    const k = detectionKey(e);
    if (!already.has(k) && !fresh.has(k)) fresh.set(k, e);
  }
  const events: WatcherEvent[] = [...fresh.values()];

  let next = cursor;
  const balances: BalanceRow[] = [];
  if (p.confirmedTarget > cursor.height) {
    let prevHash = cursor.hash;
    for (let h = cursor.height + 1; p.blocks.has(h); h++) {
      const b = p.blocks.get(h) as LinkedBlock;
      if (b.parentHash !== prevHash) {
        if (h === cursor.height + 1) throw new ReorgTooDeepError(cursor.height, p.confirmations);
        return null;
      }
      prevHash = b.hash;
      if (h === p.confirmedTarget) next = { height: h, hash: b.hash };
    }
    if (next === cursor) throw new Error(`block ${p.confirmedTarget} was not read`);
    const stored = new Map((await store.getBalances(chain)).map((r) => [`${r.address}|${r.asset}`, r.balance]));
    for (const address of p.addresses) {
      for (const asset of p.assets) {
        const previous = stored.get(`${address}|${asset}`) ?? '0';
        const value = (await p.balanceAt(address, asset, next, previous)).toString();
        if (value === previous) continue;
        balances.push({ address, asset, balance: value });
        events.push({
          type: 'balance_updated',
          chain,
          address,
          asset,
          balance: value,
          previous_balance: previous,
          block_height: next.height,
          block_hash: next.hash,
        });
      }
    }
  }
  if (events.length === 0 && next === cursor && (await store.getCursor(chain)) !== null) return [];
  await store.commit(chain, {
    cursor: next,
    seen: [...fresh.keys()],
    balances,
    utxosAdded: [],
    utxosSpent: [],
    events,
  });
  return events;
}
