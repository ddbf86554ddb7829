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
 *   every coordinator process on the database (replicas, issue #25).
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
 * Scope: one wallet — a wallet's UTXOs are those of its own addresses and its change indices its
 * own, so builds of different wallets never contend and run in parallel.
 */
export function withUtxoBuildLock<T>(db: Db, chainKey: string, walletId: string, fn: () => Promise<T>): Promise<T> {
  return db.lock(utxoBuildLockName(chainKey, walletId), fn);
}
