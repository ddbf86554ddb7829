/**
 * What the ceremony code needs from storage: a small encrypted key-value store with named
 * sublevels, atomic multi-key batches, and ordered key listing. The ceremony package never opens
 * a database itself; the process that runs ceremonies hands one in (`CeremonyContext.store`).
 *
 * Implementations: `SecureStore` (`@custodian/ceremony/level-store`: LevelDB, every value sealed
 * with XChaCha20-Poly1305 under a key derived from the operator passphrase or the phone PIN), used
 * by the server signer and by the phone simulator. An implementation must:
 * - keep every value secret at rest (values are key shares, presignatures, ledger entries); keys
 *   are not secret (key ids, ceremony ids, transfer ids);
 * - apply a {@link StoreOp} batch atomically and, unless `sync: false`, durably before it resolves
 *   (a consumed presignature or a used nonce must never come back after a power loss);
 * - fail a read of a value that does not authenticate (an error, never other bytes).
 *
 * Sublevels and what lives there: `shares` (key records and key shares, ceremonies/keys.ts), `aux`,
 * `presignatures` (presignatures.ts), `nonces` (FROST nonce commitments, nonce-ledger.ts), `primes`
 * (primes.ts), `ceremonies` (audit records), `ledger` (transfers signed, enforce/ledger.ts),
 * `state` (the store generation and a detected rollback, the signer's generation.ts; the revoked
 * approver devices, ceremonies/keys.ts), `pending` (shares of a finished RESHARE awaiting its
 * RESHARE_COMMIT, and the marks of keys this signer left, ceremonies/keys.ts), `sessions` (every
 * protocol session started, so none runs twice, session-ledger.ts).
 */

/** Names of the encrypted sublevels. */
export type Sublevel =
  | 'shares'
  | 'aux'
  | 'presignatures'
  | 'nonces'
  | 'primes'
  | 'ceremonies'
  | 'ledger'
  | 'state'
  | 'pending'
  | 'sessions';

/** Every {@link Sublevel}, in a fixed order. */
export const SUBLEVELS: readonly Sublevel[] = [
  'shares',
  'aux',
  'presignatures',
  'nonces',
  'primes',
  'ceremonies',
  'ledger',
  'state',
  'pending',
  'sessions',
];

/** One write of a batch. */
export type StoreOp =
  | { readonly type: 'put'; readonly sublevel: Sublevel; readonly key: string; readonly value: Uint8Array }
  | { readonly type: 'del'; readonly sublevel: Sublevel; readonly key: string };

/** The encrypted key-value store ceremonies run on (see the module comment for the contract). */
export interface CeremonyStore {
  /** Read and decrypt one value (undefined when absent). Rejects when the stored value does not authenticate. */
  get(sublevel: Sublevel, key: string): Promise<Uint8Array | undefined>;
  /** Encrypt and write one value (a batch of one, synced). */
  put(sublevel: Sublevel, key: string, value: Uint8Array): Promise<void>;
  /**
   * Apply several writes atomically; synced to disk before it resolves unless `sync: false` (for
   * writes whose loss in a power cut only loses detail written durably before).
   */
  batch(ops: readonly StoreOp[], options?: { sync?: boolean }): Promise<void>;
  /** {@link batch}, begun on a later turn of the event loop; a clean close of the store waits for it. */
  batchLater(ops: readonly StoreOp[], options?: { sync?: boolean }): Promise<void>;
  /** Keys of a sublevel, optionally only those starting with `prefix`, in ascending order. */
  keys(sublevel: Sublevel, prefix?: string): Promise<string[]>;
}
