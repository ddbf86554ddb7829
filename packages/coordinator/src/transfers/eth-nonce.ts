/**
 * The nonce of a new Ethereum transaction (see {@link ethereumNonce}).
 */
import type { Queryable } from '../db/db.js';

/** What {@link ethereumNonce} asks the node: the account's transaction count at a block tag. */
export interface NonceNode {
  getTransactionCount(a: { address: `0x${string}`; blockTag: 'latest' | 'pending' }): Promise<number>;
}

/** The transfer a nonce is decided for. */
export interface NonceRequest {
  transferId: string;
  /** Sender address (as stored in `transfers.source_address`). */
  sourceAddress: string;
  blockchainId: string;
}

/**
 * The nonce of a new Ethereum transaction, decided under a per-sender lock from the node's
 * pending count and the transactions this coordinator built but has not broadcast yet. Must run
 * in the transaction that stores the transfer's unsigned transaction (the lock is
 * transaction-scoped).
 */
export async function ethereumNonce(q: Queryable, node: NonceNode, t: NonceRequest): Promise<number> {
  await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`custodian.eth-nonce:${t.sourceAddress.toLowerCase()}`]);
  const pending = await node.getTransactionCount({ address: t.sourceAddress as `0x${string}`, blockTag: 'pending' });
  const r = await q.query<{ n: number | null }>(
    `SELECT max((unsigned->'context'->>'nonce')::int) AS n FROM transfers
     WHERE source_address = $1 AND blockchain_id = $2 AND status IN ('PENDING_SIGNATURE', 'READY_TO_SEND')
       AND unsigned IS NOT NULL AND transfer_id <> $3`,
    [t.sourceAddress, t.blockchainId, t.transferId],
  );
  return Math.max(pending, (r[0]?.n ?? -1) + 1);
}
