import type { NonceLedger } from '@custodian/frost';
import type { CeremonyStore, StoreOp } from './storage.js';

/**
 * FROST nonce-commitment ledger backed by the store (sublevel `nonces`, key: the commitment's
 * encoded point in hex, empty value), loaded at start. The signing round that computes this
 * signer's share (packages/frost sign.ts, RFC 9591 §5.2) {@link add}s every commitment of the
 * session, its own included; the runner then holds the share until {@link persist}'s synced batch
 * is durable (`SessionParams.beforeRelease`), so a crash after the share left can never forget
 * the nonce it used: after a restart a repeated own commitment (an RNG failure, a VM snapshot
 * restored) is refused by `signProtocol` before any share is computed.
 */
export class StoredNonceLedger implements NonceLedger {
  private readonly seen = new Set<string>();
  /** Added, not yet handed to a batch. */
  private readonly fresh = new Set<string>();
  /** Batches under way (scheduled or being written). */
  private readonly writing = new Set<Promise<void>>();
  #scheduled: Promise<void> | undefined;
  constructor(private readonly store: CeremonyStore) {}
  async load(): Promise<void> {
    for (const k of await this.store.keys('nonces')) this.seen.add(k);
  }
  has(h: string): boolean {
    return this.seen.has(h);
  }
  add(h: string): void {
    if (!this.seen.has(h)) this.fresh.add(h);
    this.seen.add(h);
  }
  /**
   * Make every commitment added so far durable: one synced batch (LevelDB `sync: true`) with the
   * entries added in this turn of the event loop (the rounds of concurrent sessions share it).
   * @returns a promise that resolves once every entry added before the call is durable, or
   *   undefined when all of them already are; it rejects when the write fails (the entries are
   *   then written by a later call)
   */
  persist(): Promise<void> | undefined {
    if (this.fresh.size > 0 && !this.#scheduled) {
      const w = new Promise<void>((r) => setImmediate(r)).then(async () => {
        this.#scheduled = undefined;
        const keys = [...this.fresh];
        this.fresh.clear();
        try {
          await this.store.batch(
            keys.map((k): StoreOp => ({ type: 'put', sublevel: 'nonces', key: k, value: new Uint8Array(0) })),
          );
        } catch (e) {
          for (const k of keys) this.fresh.add(k);
          throw e;
        }
      });
      this.#scheduled = w;
      this.writing.add(w);
      const done = () => this.writing.delete(w);
      w.then(done, done);
    }
    if (this.writing.size === 0) return undefined;
    return Promise.all([...this.writing]).then(() => undefined);
  }
  /** {@link persist} and wait (nothing to do when every entry is durable). */
  async flush(): Promise<void> {
    await this.persist();
  }
}
