import type { CeremonyStore, StoreOp } from '../storage.js';

/**
 * What must be durable before this signer's signature share leaves the process (DESIGN §3): the
 * ceremony's pending record (the ceremony id is then used for good) and, with enforcement, the
 * transfer's ledger entry (so a share never leaves unaccounted, even if the peers then abort). One
 * synced batch, written once; a pooled ECDSA signature writes it together with the presignature's
 * deletion. `ready` is the check that the ceremony id is unused (read while the request is
 * prepared); nothing is written before it passes.
 */
export class ReleaseGate {
  #written: Promise<void> | undefined;
  #done = false;
  readonly #submitted: { promise: Promise<void>; resolve: () => void };
  constructor(
    private readonly store: CeremonyStore,
    private readonly ready: Promise<void>,
    private readonly ops: readonly StoreOp[],
  ) {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    this.#submitted = { promise, resolve };
  }

  /** Has the batch been written? */
  get written(): boolean {
    return this.#done;
  }

  /** Wait for a write that was started (success or not). */
  async settled(): Promise<void> {
    await this.#written?.catch(() => undefined);
  }

  /**
   * Resolves once the batch has been handed to the store (its synced write under way) or has
   * failed before that; never rejects. Awaiting it before CPU-bound work (deriving the path,
   * computing the share) lets the write run during that work: the callbacks that start it (the
   * ceremony id check) would otherwise wait for the work to end.
   */
  get submitted(): Promise<void> {
    return this.#submitted.promise;
  }

  /** Write the batch with `extra` ops (the first caller's extra only); later calls await the same write. */
  commit(extra: readonly StoreOp[] = []): Promise<void> {
    this.#written ??= (async () => {
      try {
        await this.ready;
        const writing = this.store.batch([...extra, ...this.ops]);
        this.#submitted.resolve();
        await writing;
        this.#done = true;
      } finally {
        this.#submitted.resolve();
      }
    })();
    return this.#written;
  }
}
