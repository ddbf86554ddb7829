/**
 * Balances of wallets (wallets room): one entry per (blockchain of the wallet) × (asset enabled for
 * the profile on that blockchain), set by the chain indexer in integer base units.
 */
import { formatUnits } from 'viem';
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import { type Page, type PageRequest, pageOffset } from '../store.js';
import { type Clock, iso } from '../util.js';
import { ASSET_ENABLED } from './profiles.js';
import type { WalletStore } from './store.js';

/** Balance object: one wallet × asset; `amount` in asset units, `amount_base_units` integer. */
export interface BalanceView {
  wallet_id: string;
  blockchain_id: string;
  asset_id: string;
  symbol: string;
  decimals: number;
  amount: string;
  amount_base_units: string;
  updated_at: string | null;
}

/** Dependencies of {@link BalanceStore}. */
export interface BalanceStoreComponents {
  readonly db: Db;
  readonly clock: Clock;
  /** The wallets whose balances these are. */
  readonly wallets: WalletStore;
}

/** Wallet balances. */
export class BalanceStore {
  constructor(private readonly c: BalanceStoreComponents) {}

  /**
   * Balances of a wallet: one entry per (blockchain of the wallet) × (asset enabled for the
   * profile on that blockchain), zero when nothing was ever observed.
   */
  async listBalances(
    profileId: string,
    walletId: string,
    filter: { blockchain_id?: string; asset_id?: string },
    p: PageRequest,
  ): Promise<Page<BalanceView>> {
    await this.c.wallets.requireWallet(this.c.db, profileId, walletId);
    const conds = ['wb.wallet_id = $2', ASSET_ENABLED];
    const params: unknown[] = [profileId, walletId];
    if (filter.blockchain_id !== undefined) {
      params.push(filter.blockchain_id);
      conds.push(`a.blockchain_id = $${params.length}`);
    }
    if (filter.asset_id !== undefined) {
      params.push(filter.asset_id);
      conds.push(`a.asset_id = $${params.length}`);
    }
    const from = `FROM wallet_blockchains wb JOIN blockchains b ON b.blockchain_id = wb.blockchain_id
      JOIN assets a ON a.blockchain_id = wb.blockchain_id
      LEFT JOIN balances bal ON bal.wallet_id = wb.wallet_id AND bal.asset_id = a.asset_id
      WHERE ${conds.join(' AND ')}`;
    const rows = await this.c.db.query<{
      blockchain_id: string;
      asset_id: string;
      symbol: string;
      decimals: number;
      amount: string;
      updated_at: Date | null;
    }>(
      `SELECT a.blockchain_id, a.asset_id, a.symbol, a.decimals, COALESCE(bal.amount, 0)::text AS amount, bal.updated_at
       ${from} ORDER BY b.sort, a.sort LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, p.page_size, pageOffset(p)],
    );
    const total = (await this.c.db.query<{ n: number }>(`SELECT count(*)::int AS n ${from}`, params))[0]?.n ?? 0;
    return {
      data: rows.map((r) => ({
        wallet_id: walletId,
        blockchain_id: r.blockchain_id,
        asset_id: r.asset_id,
        symbol: r.symbol,
        decimals: r.decimals,
        amount: formatUnits(BigInt(r.amount), r.decimals),
        amount_base_units: r.amount,
        updated_at: iso(r.updated_at),
      })),
      page: p.page,
      page_size: p.page_size,
      total,
    };
  }

  /** Balance of one asset of a wallet; 404 ASSET_NOT_FOUND when the wallet cannot hold it. */
  async getBalance(profileId: string, walletId: string, assetId: string): Promise<BalanceView> {
    const r = await this.listBalances(profileId, walletId, { asset_id: assetId }, { page: 1, page_size: 1 });
    const b = r.data[0];
    if (b === undefined) {
      throw new ApiError('ASSET_NOT_FOUND', `asset ${assetId} is not enabled on any blockchain of this wallet`);
    }
    return b;
  }

  /**
   * Set a wallet's balance of an asset (integer base units, decimal string). Used by the chain
   * indexer; never takes floats.
   * @throws RangeError when `amount` is not a non-negative integer string
   */
  async setBalance(walletId: string, assetId: string, amount: string, q: Queryable = this.c.db): Promise<void> {
    if (!/^(0|[1-9][0-9]{0,77})$/.test(amount)) throw new RangeError('amount must be a non-negative integer string');
    await q.query(
      `INSERT INTO balances (wallet_id, asset_id, amount, updated_at) VALUES ($1,$2,$3::numeric,$4)
       ON CONFLICT (wallet_id, asset_id) DO UPDATE SET amount = EXCLUDED.amount, updated_at = EXCLUDED.updated_at`,
      [walletId, assetId, amount, this.c.clock()],
    );
  }
}
