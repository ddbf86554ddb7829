/**
 * The LevelDB store (`level`) of the server signer and the phone simulator ({@link CeremonyStore},
 * storage.ts), with one sublevel per kind of record. Every value is encrypted at rest (see
 * `secretbox.ts`) with associated data `sublevel ‖ 0x00 ‖ key`; keys are not secret (key ids,
 * ceremony ids). Multi-key writes go through {@link SecureStore.batch}, one
 * LevelDB write batch, so a crash leaves the old state or the new.
 *
 * Layout: sublevel `meta` (plaintext: `salt`, `check`, `format`), and encrypted sublevels
 * `shares`, `aux`, `presignatures`, `nonces`, `primes`, `ceremonies`, `ledger` (transfers signed,
 * enforce/ledger.ts), `state` (the store generation and a detected rollback, the signer's
 * generation.ts).
 */
import { randomBytes } from 'node:crypto';
import { bytesToHex } from '@custodian/crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { Level } from 'level';
import { type CeremonyStore, type StoreOp, SUBLEVELS, type Sublevel } from '../storage.js';
import { DEFAULT_SCRYPT, deriveStorageKey, open, type ScryptParams, StoreIntegrityError, seal } from './secretbox.js';

const enc = new TextEncoder();
const CHECK = enc.encode('custodian.signer.store.check/v1');

function aad(sublevel: string, key: string): Uint8Array {
  return enc.encode(`${sublevel}\u0000${key}`);
}

// biome-ignore lint/suspicious/noExplicitAny: abstract-level sublevel generics do not compose
type Sub = any;

/** Encrypted LevelDB store, the {@link CeremonyStore} of the server signer and the phone. Open with {@link SecureStore.open}. */
export class SecureStore implements CeremonyStore {
  /** Batches being written ({@link close} waits for them). */
  readonly #writing = new Set<Promise<void>>();

  private constructor(
    private readonly db: Level<string, Uint8Array>,
    private readonly key: Uint8Array,
    private readonly subs: Map<Sublevel, Sub>,
    /**
     * Identifier of this store (hex, 32 chars): SHA-256 of its random salt, fixed when it was
     * created; a copy of the folder has the same id, a store created anew another. Not secret.
     */
    readonly id: string,
  ) {}

  /**
   * Open (creating if needed) the store in `path`, deriving the key from `passphrase`.
   * @throws StoreIntegrityError when the passphrase does not match the one the store was created with
   */
  static async open(
    path: string,
    passphrase: string,
    scryptParams: ScryptParams = DEFAULT_SCRYPT,
  ): Promise<SecureStore> {
    const db = new Level<string, Uint8Array>(path, { valueEncoding: 'view' });
    await db.open();
    try {
      const meta = db.sublevel<string, Uint8Array>('meta', { valueEncoding: 'view' });
      let salt = await meta.get('salt');
      let key: Uint8Array;
      if (salt === undefined) {
        salt = new Uint8Array(randomBytes(32));
        key = await deriveStorageKey(passphrase, salt, scryptParams);
        await meta.batch([
          { type: 'put', key: 'salt', value: salt },
          { type: 'put', key: 'scrypt', value: enc.encode(JSON.stringify(scryptParams)) },
          { type: 'put', key: 'check', value: seal(key, CHECK, aad('meta', 'check')) },
        ]);
      } else {
        const stored = await meta.get('scrypt');
        const params = stored ? (JSON.parse(new TextDecoder().decode(stored)) as ScryptParams) : scryptParams;
        key = await deriveStorageKey(passphrase, salt, params);
        const check = await meta.get('check');
        if (!check) throw new StoreIntegrityError('store: missing passphrase check value');
        open(key, check, aad('meta', 'check'), 'store passphrase check');
      }
      const subs = new Map<Sublevel, Sub>();
      for (const s of SUBLEVELS)
        subs.set(s, db.sublevel<string, Uint8Array>(s, { valueEncoding: 'view' }) as unknown as Sub);
      const id = bytesToHex(sha256(salt)).slice(0, 32);
      return new SecureStore(db, key, subs, id);
    } catch (e) {
      await db.close();
      throw e;
    }
  }

  private sub(s: Sublevel): Sub {
    const sub = this.subs.get(s);
    if (!sub) throw new RangeError(`sublevel: unknown ${s}`);
    return sub;
  }

  /** Read and decrypt one value (undefined when absent). @throws StoreIntegrityError on tampering */
  async get(sublevel: Sublevel, key: string): Promise<Uint8Array | undefined> {
    const v = await this.sub(sublevel).get(key);
    return v === undefined ? undefined : open(this.key, v, aad(sublevel, key), `${sublevel}/${key}`);
  }

  /** Encrypt and write one value. */
  async put(sublevel: Sublevel, key: string, value: Uint8Array): Promise<void> {
    await this.batch([{ type: 'put', sublevel, key, value }]);
  }

  /**
   * Apply several writes atomically (one LevelDB batch), synced to disk before it resolves (LevelDB
   * `sync: true`: fsync of the log), so that a power loss, not only a process crash, leaves the old
   * state or the new: a consumed presignature can never come back (≈ 0.08–1.3 ms on this VM's disk,
   * the fsync). `sync: false` is for writes whose loss in a power cut (never in a process crash:
   * the OS has them) only loses detail written durably before, e.g. a signing ceremony's final
   * record after its synced pending record.
   */
  async batch(ops: readonly StoreOp[], options: { sync?: boolean } = {}): Promise<void> {
    const b = this.db.batch();
    for (const op of ops) {
      if (op.type === 'put')
        b.put(op.key, seal(this.key, op.value, aad(op.sublevel, op.key)), { sublevel: this.sub(op.sublevel) });
      else b.del(op.key, { sublevel: this.sub(op.sublevel) });
    }
    const w = b.write({ sync: options.sync ?? true });
    this.#writing.add(w);
    try {
      await w;
    } finally {
      this.#writing.delete(w);
    }
  }

  /**
   * {@link batch}, begun on a later turn of the event loop (after what the caller does next, e.g.
   * answering a request), and waited for by {@link close} like any batch.
   */
  batchLater(ops: readonly StoreOp[], options: { sync?: boolean } = {}): Promise<void> {
    const w = new Promise<void>((r) => setImmediate(r)).then(() => this.batch(ops, options));
    this.#writing.add(w);
    void w.then(
      () => this.#writing.delete(w),
      () => this.#writing.delete(w),
    );
    return w;
  }

  /** Keys of a sublevel, optionally with a prefix, in order. */
  async keys(sublevel: Sublevel, prefix = ''): Promise<string[]> {
    const out: string[] = [];
    const range = prefix ? { gte: prefix, lt: `${prefix}\uffff` } : {};
    for await (const k of this.sub(sublevel).keys(range)) out.push(k);
    return out;
  }

  /** Close the database (after the batches being written) and forget the key. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#writing]);
    this.key.fill(0);
    await this.db.close();
  }
}
