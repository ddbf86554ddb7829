/**
 * Deposit watching: events, the storage interface the watcher writes through, and the watcher
 * interface. Storage is injected (STYLE.md item 11): the coordinator implements
 * {@link WatcherStore} over PostgreSQL (writing the events into its webhook outbox in the same
 * transaction as the cursor); {@link JsonFileWatcherStore} is the development store.
 */

/** Last block whose effects are counted in balances (it has the configured confirmations). */
export interface Cursor {
  readonly height: number;
  /** Block hash, hex as the node prints it. */
  readonly hash: string;
}

/** Asset id in events and balances: `native`, or the token contract address as the chain writes it. */
export type AssetId = string;

export interface TransactionDetectedEvent {
  readonly type: 'transaction_detected';
  readonly chain: string;
  readonly txid: string;
  readonly address: string;
  readonly asset: AssetId;
  readonly direction: 'incoming' | 'outgoing';
  /** Amount moved to (incoming) or from (outgoing) the address, base units, decimal string. */
  readonly amount: string;
  /** Block height when first seen in a block, null when first seen in the mempool. */
  readonly block_height: number | null;
}

export interface BalanceUpdatedEvent {
  readonly type: 'balance_updated';
  readonly chain: string;
  readonly address: string;
  readonly asset: AssetId;
  /** Confirmed balance, base units, decimal string. */
  readonly balance: string;
  readonly previous_balance: string;
  /** The confirmed block the balance is taken at. */
  readonly block_height: number;
  readonly block_hash: string;
}

export type WatcherEvent = TransactionDetectedEvent | BalanceUpdatedEvent;

export interface BalanceRow {
  readonly address: string;
  readonly asset: AssetId;
  /** Base units, decimal string. */
  readonly balance: string;
}

/** A confirmed unspent output owned by a watched address (UTXO chains). */
export interface UtxoRow {
  /** `txid:vout`. */
  readonly outpoint: string;
  readonly address: string;
  /** Base units, decimal string. */
  readonly value: string;
  readonly height: number;
}

/** One poll's changes; a store applies all of it or none of it. */
export interface WatcherCommit {
  readonly cursor: Cursor;
  /** Keys of transactions now reported (`txid:address:asset`). */
  readonly seen: readonly string[];
  readonly balances: readonly BalanceRow[];
  readonly utxosAdded: readonly UtxoRow[];
  readonly utxosSpent: readonly string[];
  /** Events to deliver; a store that feeds an outbox writes them in the same transaction. */
  readonly events: readonly WatcherEvent[];
}

/** Storage of one or more watchers, keyed by chain id. */
export interface WatcherStore {
  getCursor(chain: string): Promise<Cursor | null>;
  /** Which of `keys` were already reported. */
  seen(chain: string, keys: readonly string[]): Promise<Set<string>>;
  getBalances(chain: string): Promise<BalanceRow[]>;
  getUtxos(chain: string): Promise<UtxoRow[]>;
  /** Applies a commit atomically. */
  commit(chain: string, commit: WatcherCommit): Promise<void>;
}

export type WatcherListener = (event: WatcherEvent) => void;

/** A chain watcher. `poll` does one round; `start`/`stop` poll on a timer. */
export interface Watcher {
  /** Adds an address to watch (text form of the chain). */
  watch(address: string): void;
  /** Follows blocks (and the mempool where available) once; returns the events committed. */
  poll(): Promise<WatcherEvent[]>;
  on(listener: WatcherListener): void;
  start(intervalMs: number): void;
  stop(): Promise<void>;
}

/** Shared timer loop: runs `poll` every `intervalMs`, never two at once; errors go to `onError`. */
export abstract class PollingWatcher implements Watcher {
  readonly #listeners: WatcherListener[] = [];
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> = Promise.resolve();
  onError: (error: unknown) => void = () => {};

  abstract watch(address: string): void;
  protected abstract pollOnce(): Promise<WatcherEvent[]>;

  async poll(): Promise<WatcherEvent[]> {
    const run = this.#running.then(() => this.pollOnce());
    this.#running = run.catch(() => {});
    const events = await run;
    for (const e of events) for (const l of this.#listeners) l(e);
    return events;
  }

  on(listener: WatcherListener): void {
    this.#listeners.push(listener);
  }

  start(intervalMs: number): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      this.poll().catch((e) => this.onError(e));
    }, intervalMs);
  }

  async stop(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }
}
