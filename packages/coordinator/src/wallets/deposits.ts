/**
 * Deposit history of a wallet (admin API `GET …/wallets/{wallet_id}/deposits`): the incoming
 * transactions the chain watchers detected on the wallet's addresses. Source: the
 * TRANSACTION_DETECTED events of the webhook outbox (`webhook_events`), which the watcher writes in
 * the same transaction as its cursor whether or not a webhook is registered (transfers/watcher-store.ts),
 * and which carry tx hash, address, asset, amount and block height; `watcher_seen` / `watcher_utxos`
 * keep no amount or time for account chains. Confirmations are the watcher cursor's height minus the
 * block height plus one (0 while unconfirmed).
 */
import type { Db } from '../db/db.js';
import { ApiError } from '../errors.js';
import { type Page, type PageRequest, pageOffset } from '../store.js';
import { iso } from '../util.js';

/** One detected incoming transaction of a wallet. */
export interface DepositView {
  tx_hash: string;
  blockchain_id: string;
  /** The wallet's address that received it. */
  address: string;
  asset_id: string;
  /** Symbol of the asset (ETH, USDT, BTC…), null when the asset left the directory. */
  asset_symbol: string | null;
  /** Decimal string in asset units. */
  amount: string;
  /** Integer string in base units. */
  amount_base_units: string;
  /** Block of the transaction, null while unconfirmed (seen in the mempool). */
  block_height: number | null;
  /** Blocks on top of (and including) its block at the watcher's cursor; 0 while unconfirmed. */
  confirmations: number;
  /** `UNCONFIRMED` (no block yet) or `CONFIRMED` (in a block). */
  status: 'UNCONFIRMED' | 'CONFIRMED';
  /** When the watcher first saw it (ISO 8601 UTC). */
  detected_at: string;
}

interface DepositRow {
  tx_hash: string;
  blockchain_id: string;
  address: string;
  asset_id: string;
  asset_symbol: string | null;
  amount: string;
  amount_base_units: string;
  block_height: string | null;
  cursor_height: number | null;
  occurred_at: Date;
}

/** The TRANSACTION_DETECTED events of one wallet, incoming only ($1 profile, $2 wallet). */
const DEPOSITS_CTE = `WITH d AS (
  SELECT e.event_id, e.occurred_at, (e.body::jsonb)->'data' AS data FROM webhook_events e
  WHERE e.profile_id = $1 AND e.event_type = 'TRANSACTION_DETECTED'
), w AS (
  SELECT * FROM d WHERE d.data->>'wallet_id' = $2 AND COALESCE(d.data->>'direction', 'incoming') = 'incoming'
)`;

/**
 * Newest-first page of a live wallet's deposits.
 * @throws ApiError WALLET_NOT_FOUND when the wallet is not a live wallet of the profile
 */
export async function listDeposits(
  db: Db,
  profileId: string,
  walletId: string,
  p: PageRequest,
): Promise<Page<DepositView>> {
  const live = await db.query('SELECT 1 FROM wallets WHERE profile_id = $1 AND wallet_id = $2 AND deleted_at IS NULL', [
    profileId,
    walletId,
  ]);
  if (live.length === 0) throw new ApiError('WALLET_NOT_FOUND', `no wallet ${walletId} in this profile`);
  const rows = await db.query<DepositRow>(
    `${DEPOSITS_CTE}
     SELECT w.data->>'tx_hash' AS tx_hash, w.data->>'blockchain_id' AS blockchain_id, w.data->>'address' AS address,
       w.data->>'asset_id' AS asset_id, a.symbol AS asset_symbol, w.data->>'amount' AS amount,
       w.data->>'amount_base_units' AS amount_base_units, w.data->>'block_height' AS block_height,
       (SELECT max(c.height) FROM watcher_cursors c WHERE c.chain = b.key OR c.chain || '-mainnet' = b.key) AS cursor_height,
       w.occurred_at
     FROM w LEFT JOIN assets a ON a.asset_id::text = w.data->>'asset_id'
       LEFT JOIN blockchains b ON b.blockchain_id::text = w.data->>'blockchain_id'
     ORDER BY w.occurred_at DESC, w.event_id DESC LIMIT $3 OFFSET $4`,
    [profileId, walletId, p.page_size, pageOffset(p)],
  );
  const total = (
    await db.query<{ n: number }>(`${DEPOSITS_CTE} SELECT count(*)::int AS n FROM w`, [profileId, walletId])
  )[0]?.n;
  return {
    data: rows.map((r) => depositView(r)),
    page: p.page,
    page_size: p.page_size,
    total: total ?? 0,
  };
}

function depositView(r: DepositRow): DepositView {
  const height = r.block_height === null ? null : Number(r.block_height);
  const confirmations =
    height === null ? 0 : r.cursor_height === null ? 1 : Math.max(1, Number(r.cursor_height) - height + 1);
  return {
    tx_hash: r.tx_hash,
    blockchain_id: r.blockchain_id,
    address: r.address,
    asset_id: r.asset_id,
    asset_symbol: r.asset_symbol,
    amount: r.amount,
    amount_base_units: r.amount_base_units,
    block_height: height,
    confirmations,
    status: height === null ? 'UNCONFIRMED' : 'CONFIRMED',
    detected_at: iso(r.occurred_at)!,
  };
}
