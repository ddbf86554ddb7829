/**
 * What a Bitcoin-family transfer spends from and where its change goes (issue #28, seed §2 "Only
 * UTXO blockchains allow several addresses per wallet"; docs/transfers.md "UTXO wallets"):
 *
 * - sources: EVERY address of the wallet on the chain — deposit (branch 0) and change (branch 1)
 *   addresses, archived ones included (an archived address may still hold coins) — each with the
 *   key that can spend it (P2WPKH ← the ECDSA master key, P2TR ← the Taproot master key: the
 *   stored `public_key` was derived from it, wallets/store.ts).
 * - change: a FRESH internal address (branch 1, the next index), P2WPKH, derived here before the
 *   build and inserted in the transaction that stores the unsigned transaction
 *   ({@link recordChangeAddress}); the UNIQUE (wallet_id, blockchain_id, branch, address_index)
 *   constraint makes two builds that picked the same index collide, the loser rebuilds.
 * - the build lock ({@link withUtxoBuildLock}): outpoint selection is serialised per wallet across
 *   every coordinator process on the database (replicas, issue #25); and because that session lock
 *   can be lost while a build runs, the transaction that stores a choice re-checks it under a
 *   transaction-scoped lock ({@link claimOutpoints}): two live transfers never hold one outpoint.
 */

import { randomUUID } from 'node:crypto';
import type { SourceAddress } from '@custodian/chains';
import { type MasterKeyHex, nextDerivedAddress } from '../addresses.js';
import type { Db, Queryable } from '../db/db.js';
import type { BlockchainDef } from '../directory.js';
import { parsePath } from './view.js';

/** A change address derived but not yet stored (inserted with the unsigned transaction). */
export interface PendingChange extends SourceAddress {
  /** Index on the internal branch (1). */
  index: number;
  /** BIP32 path text, `m/44/{coin}/{wallet}/1/{index}`. */
  derivationPath: string;
}

/**
 * Every address of wallet `walletId` on blockchain `blockchainId` as a spend source (address,
 * 33-byte compressed public key, path indices), deposit addresses first, in index order.
 */
export async function walletSources(q: Queryable, walletId: string, blockchainId: string): Promise<SourceAddress[]> {
  const rows = await q.query<{ address: string; public_key: string; derivation_path: string }>(
    `SELECT address, public_key, derivation_path FROM addresses WHERE wallet_id = $1 AND blockchain_id = $2
     ORDER BY branch, address_index`,
    [walletId, blockchainId],
  );
  return rows.map((r) => ({
    address: r.address,
    publicKey: Uint8Array.from(Buffer.from(r.public_key, 'hex')),
    path: parsePath(r.derivation_path),
  }));
}

/**
 * Derive the next change address (branch 1, P2WPKH, ECDSA master key) of a wallet on a chain:
 * the index after the highest stored one, skipping indices BIP32 declares invalid. Nothing is
 * stored.
 */
export async function nextChangeAddress(
  q: Queryable,
  w: { wallet_id: string; wallet_index: number } & MasterKeyHex,
  blockchainId: string,
  chain: BlockchainDef,
): Promise<PendingChange> {
  const r = await q.query<{ next: number }>(
    `SELECT COALESCE(max(address_index) + 1, 0)::int AS next FROM addresses
     WHERE wallet_id = $1 AND blockchain_id = $2 AND branch = 1`,
    [w.wallet_id, blockchainId],
  );
  const d = nextDerivedAddress(w, chain, w.wallet_index, 'p2wpkh', 1, r[0]?.next ?? 0);
  return {
    address: d.address,
    publicKey: d.publicKey,
    path: parsePath(d.derivationPath),
    index: d.index,
    derivationPath: d.derivationPath,
  };
}

/** Raised by {@link recordChangeAddress} when another build took the index first (rebuild). */
export class ChangeAddressTakenError extends Error {
  constructor(index: number) {
    super(`change address index ${index} was taken by a concurrent build`);
  }
}

/**
 * Insert a change address derived by {@link nextChangeAddress} (in the transaction storing the
 * unsigned transaction that pays to it).
 * @throws ChangeAddressTakenError when the index is already stored (the unique constraint; the
 *   surrounding transaction must be rolled back and the transfer rebuilt)
 */
export async function recordChangeAddress(
  q: Queryable,
  walletId: string,
  blockchainId: string,
  change: PendingChange,
  now: Date,
): Promise<void> {
  const rows = await q.query<{ address_id: string }>(
    `INSERT INTO addresses (address_id, wallet_id, blockchain_id, address_index, address, address_type, public_key,
       derivation_path, created_at, branch) VALUES ($1,$2,$3,$4,$5,'p2wpkh',$6,$7,$8,1)
     ON CONFLICT DO NOTHING RETURNING address_id`,
    [
      randomUUID(),
      walletId,
      blockchainId,
      change.index,
      change.address,
      Buffer.from(change.publicKey).toString('hex'),
      change.derivationPath,
      now,
    ],
  );
  if (rows.length === 0) throw new ChangeAddressTakenError(change.index);
}

/** The wallet row and its master keys, for {@link nextChangeAddress}. */
export async function walletKeys(q: Queryable, walletId: string) {
  const w = (
    await q.query<{ wallet_id: string; wallet_index: number } & MasterKeyHex>(
      `SELECT w.wallet_id, w.wallet_index, m.secp256k1_public_key, m.secp256k1_chain_code, m.taproot_public_key,
              m.taproot_chain_code
       FROM wallets w JOIN master_keys m USING (master_key_id) WHERE w.wallet_id = $1`,
      [walletId],
    )
  )[0];
  if (w === undefined) throw new Error(`wallet ${walletId} not found`);
  return w;
}

/** The {@link Db.lock} name of the UTXO build lock of wallet `walletId` on chain `chainKey` (directory key). */
export const utxoBuildLockName = (chainKey: string, walletId: string): string =>
  `custodian.build:${chainKey}:${walletId}`;

/**
 * Run `fn` holding the build lock of wallet `walletId` on the UTXO chain `chainKey` (directory key,
 * e.g. `litecoin-regtest`) — {@link Db.lock} `custodian.build:<chain key>:<wallet id>`, exclusive
 * across every coordinator process on the database (replicas; PGlite: in process), released when
 * `fn` settles or its process dies. Not re-entrant.
 *
 * Whatever chooses outpoints of the wallet runs in `fn` from the moment it reads what is spendable
 * ({@link PgUtxoSource}, which excludes only the inputs already STORED) until its choice is
 * committed, so the next holder sees it as spent: a transfer's build (signing-step.ts), a
 * consolidation (self-spend.ts), a CPFP child and an RBF bump's descendant check
 * (fee-bump-request.ts). Without it two processes may both select one outpoint, and one of the two
 * transactions can never be mined.
 *
 * Lost lock: the lock is a session lock, lost when its database session ends while `fn` runs;
 * `fn` gets {@link Db.lock}'s `signal` and must store its choice through {@link claimOutpoints}
 * (given that signal) in the storing transaction — which refuses a choice another live transfer
 * holds (a lost lock can never make two transfers hold one outpoint) and, once the signal fired,
 * stores nothing ({@link BuildLockLostError}): then `fn` runs again under the lock taken anew (at
 * most 3 runs in all; the last BuildLockLostError is rethrown).
 *
 * Scope: one wallet — a wallet's UTXOs are those of its own addresses and its change indices its
 * own, so builds of different wallets never contend and run in parallel.
 * @throws what `fn` throws; BuildLockLostError after 3 runs that each lost the lock
 */
export async function withUtxoBuildLock<T>(
  db: Db,
  chainKey: string,
  walletId: string,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.lock(utxoBuildLockName(chainKey, walletId), fn);
    } catch (e) {
      // the lock was lost before the choice was stored (claimOutpoints refused: nothing stored):
      // choose again under the lock taken anew
      if (!(e instanceof BuildLockLostError) || attempt >= BUILD_LOCK_ATTEMPTS) throw e;
    }
  }
}

/** How many times {@link withUtxoBuildLock} runs `fn` when each run loses the lock before storing. */
const BUILD_LOCK_ATTEMPTS = 3;

/**
 * The transaction-scoped lock name of {@link claimOutpoints} for wallet `walletId` on chain
 * `chainKey`. Not the build lock's own name: a store runs on another connection than the one
 * holding the build lock's session lock, so taking THAT key there would wait for its own process.
 */
export const utxoStoreLockName = (chainKey: string, walletId: string): string =>
  `custodian.build-store:${chainKey}:${walletId}`;

/** Raised by {@link claimOutpoints} when the build lock was lost before the store (nothing stored; retry later). */
export class BuildLockLostError extends Error {
  constructor(cause: unknown) {
    super('the UTXO build lock was lost before the choice was stored; nothing stored', { cause });
  }
}

/**
 * Raised by {@link claimOutpoints} when another live transfer already holds one of the chosen
 * outpoints (the surrounding transaction must be rolled back, nothing stored, and the choice made
 * again: the new selection no longer offers them).
 */
export class OutpointsTakenError extends Error {
  constructor(readonly taken: readonly { outpoint: string; transfer_id: string }[]) {
    super(
      `outpoint(s) ${taken.map((t) => `${t.outpoint} (transfer ${t.transfer_id})`).join(', ')} already held by a live transfer`,
    );
  }
}

/**
 * Claim the outpoints a choice spends, in the database transaction `q` that stores it (a built
 * transfer's unsigned transaction, a self-spend, a replacement): the last line of defence of the
 * build lock ({@link withUtxoBuildLock}), which is a session lock on one idle connection and is
 * LOST when that session ends (idle timeout, a proxy, `pg_terminate_backend`, a failover) — then
 * another process may select the same outpoints while this one still stores.
 *
 * 1. `signal` (the build lock's, when given) already aborted → {@link BuildLockLostError}, nothing
 *    read or written;
 * 2. `pg_advisory_xact_lock` on {@link utxoStoreLockName} (keyed like {@link Db.lock}: schema and
 *    name): every store of the wallet's choices is serialised; the lock lives on the storing
 *    connection and ends with its transaction, so it cannot be lost without the store being rolled
 *    back (PGlite: one connection, the lock is granted at once);
 * 3. under it (READ COMMITTED: this statement sees every store committed before the lock was
 *    granted), none of `outpoints` (`txid:vout`) may be held by a live transfer of the chain other
 *    than `except` — the condition `PgUtxoSource` (chains.ts) excludes them by: the built inputs of
 *    a PENDING_SIGNATURE / READY_TO_SEND / SENT transfer not delivered more than a day ago, or the
 *    fixed inputs of a self-spend not delivered, PENDING … SENT — else {@link OutpointsTakenError}.
 *
 * @param chainKey directory key, e.g. `litecoin-regtest`
 * @param except the transfer storing the choice (its own earlier inputs do not count), if any
 * @throws BuildLockLostError, OutpointsTakenError; the database's error
 */
export async function claimOutpoints(
  q: Queryable,
  chainKey: string,
  walletId: string,
  outpoints: readonly string[],
  opts: { except?: string; signal?: AbortSignal } = {},
): Promise<void> {
  if (opts.signal?.aborted) throw new BuildLockLostError(opts.signal.reason);
  await q.query(`SELECT pg_advisory_xact_lock(hashtextextended(coalesce(current_schema(), '') || '/' || $1, 0))`, [
    utxoStoreLockName(chainKey, walletId),
  ]);
  if (outpoints.length === 0) return;
  const taken = await q.query<{ outpoint: string; transfer_id: string }>(
    `SELECT DISTINCT o.outpoint, t.transfer_id
     FROM unnest($2::text[]) AS o(outpoint), transfers t JOIN blockchains b ON b.blockchain_id = t.blockchain_id
     WHERE b.key = $1 AND t.transfer_id::text IS DISTINCT FROM $3
       AND (
         (t.status IN ('PENDING_SIGNATURE', 'READY_TO_SEND', 'SENT')
           AND (t.delivered_at IS NULL OR t.delivered_at > now() - interval '1 day')
           AND EXISTS (SELECT 1 FROM jsonb_array_elements(COALESCE(t.unsigned->'context'->'inputs', '[]'::jsonb)) i
                       WHERE (i->>'txid') || ':' || (i->>'vout') = o.outpoint))
         OR (t.self_spend IS NOT NULL AND t.delivered_at IS NULL
           AND t.status IN ('PENDING', 'PENDING_APPROVAL', 'PENDING_SIGNATURE', 'READY_TO_SEND', 'SENT')
           AND EXISTS (SELECT 1 FROM jsonb_array_elements(t.self_spend->'inputs') i
                       WHERE (i->>'txid') || ':' || (i->>'vout') = o.outpoint)))
     ORDER BY 1, 2`,
    [chainKey, [...outpoints], opts.except ?? null],
  );
  if (taken.length > 0) throw new OutpointsTakenError(taken);
}

/** The outpoints (`txid:vout`) a built Bitcoin-family transaction spends (its context's `inputs`); none for other chains. */
export function inputsOf(context: unknown): string[] {
  const inputs = (context as { inputs?: unknown } | null)?.inputs;
  if (!Array.isArray(inputs)) return [];
  return inputs.map((i: { txid: string; vout: number }) => `${i.txid}:${i.vout}`);
}
