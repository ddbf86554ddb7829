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
  /** Sender address (as stored in `transfers.source_address`; compared case-insensitively). */
  sourceAddress: string;
  blockchainId: string;
}

/**
 * The nonce of a new Ethereum transaction of `t.sourceAddress`: the lowest nonce ≥ the node's
 * `pending` transaction count that no live transaction of this sender holds. Live: a transfer of
 * the same sender and chain whose stored unsigned transaction is PENDING_SIGNATURE or
 * READY_TO_SEND (built, maybe signed, not broadcast yet), or SENT and not yet delivered (the node
 * may hold it unmined: queued behind a gap, which its pending count does not include, or in a pool
 * that automine does not empty).
 *
 * - Never reuses a live transaction's nonce (a reuse either replaces a SENT transaction in the
 *   node's pool or is refused at broadcast: "nonce too low" once the other one is mined).
 * - Never leaves a gap: a nonce stored for a transfer that then ended FAILED / REJECTED / EXPIRED
 *   without broadcast is free again and is the first one taken. That is safe: its transaction never
 *   reached a node (READY_TO_SEND resumes ask the node for the hash before broadcasting again, and a
 *   failed broadcast is FAILED only when the node does not know the hash), and if it was signed,
 *   mining another transaction with that nonce makes the signed one invalid forever.
 * - Nonces below the pending count are taken on the node (mined, or executable in its pool,
 *   possibly sent by someone else), so they are never candidates.
 *
 * Serialised per sender by a transaction-scoped advisory lock: call it inside the transaction that
 * stores the transfer's unsigned transaction, so the next decision sees that nonce as held.
 * Independent of process memory: a restarted coordinator decides the same way.
 * @throws the node's error when `eth_getTransactionCount` fails (nothing is stored then)
 */
export async function ethereumNonce(q: Queryable, node: NonceNode, t: NonceRequest): Promise<number> {
  await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`custodian.eth-nonce:${t.sourceAddress.toLowerCase()}`]);
  const pending = await node.getTransactionCount({ address: t.sourceAddress as `0x${string}`, blockTag: 'pending' });
  const rows = await q.query<{ n: number }>(
    `SELECT DISTINCT (unsigned->'context'->>'nonce')::int AS n FROM transfers
     WHERE lower(source_address) = lower($1) AND blockchain_id = $2 AND transfer_id <> $3 AND unsigned IS NOT NULL
       AND (status IN ('PENDING_SIGNATURE', 'READY_TO_SEND') OR (status = 'SENT' AND delivered_at IS NULL))
       AND (unsigned->'context'->>'nonce')::int >= $4`,
    [t.sourceAddress, t.blockchainId, t.transferId, pending],
  );
  const held = new Set(rows.map((r) => Number(r.n)));
  let nonce = pending;
  while (held.has(nonce)) nonce++;
  return nonce;
}
