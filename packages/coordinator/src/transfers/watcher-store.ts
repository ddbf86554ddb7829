/**
 * `WatcherStore` of `@custodian/chains` over the coordinator's PostgreSQL store (tables
 * `watcher_cursors`, `watcher_seen`, `watcher_balances`, `watcher_utxos`). One watcher poll is ONE
 * database transaction: cursor, seen keys, balances, UTXO changes, the wallet balances of the REST
 * API (`balances`), and the webhook events — TRANSACTION_DETECTED when a transaction is first seen
 * on one of a profile's addresses (possibly unconfirmed), BALANCE_UPDATED when a confirmed balance
 * changed (seed §6 rules 1, 2) — written into the outbox with `emitEvent` in that transaction.
 *
 * Event `data` (amounts as decimal strings in asset units, `*_base_units` as integer strings):
 * - TRANSACTION_DETECTED `{ wallet_id, blockchain_id, address, asset_id, tx_hash, direction, amount,
 *   amount_base_units, block_height }`
 * - BALANCE_UPDATED `{ wallet_id, blockchain_id, address, asset_id, balance, balance_base_units,
 *   previous_balance, wallet_balance, block_height, block_hash }`
 *
 * Compare-and-set (issue #25, replicas): every commit bumps `watcher_cursors.version`, and commits
 * only if the row still has the version this store last saw for the chain (its latest `getCursor`,
 * or its own previous commit; "no row" when it saw none). Two watchers of one chain that overlap
 * (a lease handover) both read the same cursor, but only the first commit lands; the other throws
 * CoordinatorError WATCHER_CURSOR_MOVED with nothing written (its poll fails, its listeners are
 * not told), and its next poll re-reads the cursor, seen keys, balances and UTXOs.
 */
import type { BalanceRow, Cursor, UtxoRow, WatcherCommit, WatcherEvent, WatcherStore } from '@custodian/chains';
import { formatUnits } from '@custodian/chains';
import type { Db, Queryable } from '../db/db.js';
import { CoordinatorError } from '../errors.js';
import type { Clock } from '../util.js';
import { emitEvent } from '../webhooks/outbox.js';

interface Owner {
  wallet_id: string;
  profile_id: string;
  blockchain_id: string;
}

interface AssetRow {
  asset_id: string;
  decimals: number;
}

/** PostgreSQL implementation of {@link WatcherStore} (one per watcher: it remembers the cursor version it read). */
export class PgWatcherStore implements WatcherStore {
  /** chain → `watcher_cursors.version` this store last read or wrote (null: no row). */
  readonly #seenVersion = new Map<string, string | null>();

  /**
   * @param fence called first inside every commit's transaction; throws when this watcher may no
   *   longer commit (its replica lost the chain's singleton lease: `SingletonLease.fence`)
   */
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly fence?: (q: Queryable) => Promise<void>,
  ) {}

  async getCursor(chain: string): Promise<Cursor | null> {
    const r = await this.db.query<{ height: number; hash: string; version: string }>(
      'SELECT height, hash, version::text AS version FROM watcher_cursors WHERE chain = $1',
      [chain],
    );
    const row = r[0];
    this.#seenVersion.set(chain, row?.version ?? null);
    return row === undefined ? null : { height: row.height, hash: row.hash };
  }

  async seen(chain: string, keys: readonly string[]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const r = await this.db.query<{ key: string }>(
      'SELECT key FROM watcher_seen WHERE chain = $1 AND key = ANY($2::text[])',
      [chain, [...keys]],
    );
    return new Set(r.map((x) => x.key));
  }

  async getBalances(chain: string): Promise<BalanceRow[]> {
    return this.db.query<BalanceRow>(
      'SELECT address, asset, balance::text AS balance FROM watcher_balances WHERE chain = $1',
      [chain],
    );
  }

  async getUtxos(chain: string): Promise<UtxoRow[]> {
    return this.db.query<UtxoRow>(
      'SELECT outpoint, address, value::text AS value, height FROM watcher_utxos WHERE chain = $1',
      [chain],
    );
  }

  /**
   * Apply one poll's commit in one transaction, if the cursor row is still the one this store
   * read (see the module comment).
   * @throws CoordinatorError WATCHER_CURSOR_MOVED when another watcher committed since (nothing written)
   */
  async commit(chain: string, c: WatcherCommit): Promise<void> {
    const expected = this.#seenVersion.get(chain) ?? null;
    const version = await this.db.tx(async (q) => {
      await this.fence?.(q);
      const now = this.clock();
      // compare-and-set: the row lock of the UPDATE (or the unique key of the INSERT) orders two
      // racing commits; the second re-checks the version against the first's committed row
      const set =
        expected === null
          ? await q.query<{ version: string }>(
              `INSERT INTO watcher_cursors (chain, height, hash, updated_at, version) VALUES ($1,$2,$3,$4,1)
               ON CONFLICT (chain) DO NOTHING RETURNING version::text AS version`,
              [chain, c.cursor.height, c.cursor.hash, now],
            )
          : await q.query<{ version: string }>(
              `UPDATE watcher_cursors SET height = $2, hash = $3, updated_at = $4, version = version + 1
               WHERE chain = $1 AND version = $5::bigint RETURNING version::text AS version`,
              [chain, c.cursor.height, c.cursor.hash, now, expected],
            );
      if (set[0] === undefined) {
        throw new CoordinatorError(
          'WATCHER_CURSOR_MOVED',
          `WATCHER_CURSOR_MOVED: another deposit watcher of ${chain} committed since this poll read the cursor; ` +
            'its batch is dropped and the next poll re-reads',
        );
      }
      for (const k of c.seen) {
        await q.query('INSERT INTO watcher_seen (chain, key) VALUES ($1,$2) ON CONFLICT DO NOTHING', [chain, k]);
      }
      for (const b of c.balances) {
        await q.query(
          `INSERT INTO watcher_balances (chain, address, asset, balance) VALUES ($1,$2,$3,$4::numeric)
           ON CONFLICT (chain, address, asset) DO UPDATE SET balance = EXCLUDED.balance`,
          [chain, b.address, b.asset, b.balance],
        );
      }
      for (const u of c.utxosAdded) {
        await q.query(
          `INSERT INTO watcher_utxos (chain, outpoint, address, value, height) VALUES ($1,$2,$3,$4::numeric,$5)
           ON CONFLICT (chain, outpoint) DO NOTHING`,
          [chain, u.outpoint, u.address, u.value, u.height],
        );
      }
      for (const o of c.utxosSpent) {
        await q.query('DELETE FROM watcher_utxos WHERE chain = $1 AND outpoint = $2', [chain, o]);
      }
      for (const e of c.events) await this.#event(q, chain, e);
      return set[0].version;
    });
    this.#seenVersion.set(chain, version);
  }

  async #owner(q: Queryable, chain: string, address: string): Promise<Owner | undefined> {
    const r = await q.query<Owner>(
      `SELECT a.wallet_id, w.profile_id, a.blockchain_id FROM addresses a
       JOIN blockchains b ON b.blockchain_id = a.blockchain_id JOIN wallets w ON w.wallet_id = a.wallet_id
       WHERE (b.key = $1 OR b.key = $1 || '-mainnet') AND lower(a.address) = lower($2)`,
      [chain, address],
    );
    return r[0];
  }

  async #asset(q: Queryable, blockchainId: string, asset: string): Promise<AssetRow | undefined> {
    const r = await q.query<AssetRow>(
      asset === 'native'
        ? `SELECT asset_id, decimals FROM assets WHERE blockchain_id = $1 AND kind = 'native'`
        : 'SELECT asset_id, decimals FROM assets WHERE blockchain_id = $1 AND lower(contract_address) = lower($2)',
      asset === 'native' ? [blockchainId] : [blockchainId, asset],
    );
    return r[0];
  }

  async #event(q: Queryable, chain: string, e: WatcherEvent): Promise<void> {
    const owner = await this.#owner(q, chain, e.address);
    if (owner === undefined) return;
    const asset = await this.#asset(q, owner.blockchain_id, e.asset);
    if (asset === undefined) return;
    if (e.type === 'transaction_detected') {
      await emitEvent(q, this.clock, {
        profileId: owner.profile_id,
        type: 'TRANSACTION_DETECTED',
        data: {
          wallet_id: owner.wallet_id,
          blockchain_id: owner.blockchain_id,
          address: e.address,
          asset_id: asset.asset_id,
          tx_hash: e.txid,
          direction: e.direction,
          amount: formatUnits(BigInt(e.amount), asset.decimals),
          amount_base_units: e.amount,
          block_height: e.block_height,
        },
      });
      return;
    }
    // wallet balance = the sum over the wallet's addresses on this chain
    const sum = await q.query<{ total: string }>(
      `SELECT COALESCE(sum(wb.balance), 0)::text AS total FROM watcher_balances wb
       JOIN addresses a ON lower(a.address) = lower(wb.address) AND a.blockchain_id = $3::uuid
       WHERE wb.chain = $1 AND wb.asset = $2 AND a.wallet_id = $4`,
      [chain, e.asset, owner.blockchain_id, owner.wallet_id],
    );
    const total = sum[0]?.total ?? '0';
    await q.query(
      `INSERT INTO balances (wallet_id, asset_id, amount, updated_at) VALUES ($1,$2,$3::numeric,$4)
       ON CONFLICT (wallet_id, asset_id) DO UPDATE SET amount = EXCLUDED.amount, updated_at = EXCLUDED.updated_at`,
      [owner.wallet_id, asset.asset_id, total, this.clock()],
    );
    await emitEvent(q, this.clock, {
      profileId: owner.profile_id,
      type: 'BALANCE_UPDATED',
      data: {
        wallet_id: owner.wallet_id,
        blockchain_id: owner.blockchain_id,
        address: e.address,
        asset_id: asset.asset_id,
        balance: formatUnits(BigInt(e.balance), asset.decimals),
        balance_base_units: e.balance,
        previous_balance: formatUnits(BigInt(e.previous_balance), asset.decimals),
        wallet_balance: formatUnits(BigInt(total), asset.decimals),
        block_height: e.block_height,
        block_hash: e.block_hash,
      },
    });
  }
}

/** The deposit watchers' cursor heights: watcher chain name → height (the watcher lag gauges). */
export async function watcherHeights(db: Db): Promise<Map<string, number>> {
  const r = await db.query<{ chain: string; height: number }>('SELECT chain, height FROM watcher_cursors');
  return new Map(r.map((x) => [x.chain, Number(x.height)]));
}
