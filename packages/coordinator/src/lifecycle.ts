/**
 * The lifecycle contract of the coordinator's long-running components (the HTTP server, the
 * device hub, the signing services, the presignature pool, the webhook worker, the transfer
 * pipeline, the deposit watchers, the database) and the {@link Lifecycle} that the composition
 * root (`coordinator.ts`) runs them with — js-libp2p's `Startable` in miniature.
 */

/**
 * A component with background work or open resources.
 * - `start()`: begin work; idempotent (a second call while started does nothing).
 * - `stop()`: end work and release what the component holds — what `start()` acquired AND what
 *   its construction acquired (a database connection, a libp2p host); idempotent, and harmless on
 *   a component never started.
 */
export interface Startable {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** One component of a {@link Lifecycle}: a name for logs and errors, and whether to start it. */
export interface LifecycleEntry {
  readonly name: string;
  readonly component: Startable;
  /** false: never started (configuration turned it off), still stopped. Default true. */
  readonly enabled?: boolean;
}

/**
 * Starts components in order and stops them in reverse order.
 * - {@link start}: each enabled component in turn, each after the previous one's start resolved.
 *   When one rejects, every component is stopped (reverse order: the already-started ones, and
 *   the others, whose stop releases what their construction holds) and `start()` rejects with
 *   that error. Concurrent and repeated calls share one run; after {@link stop} it rejects.
 * - {@link stop}: every component (started or not), last first, each awaited; a component whose
 *   stop rejects does not keep the others from stopping (the first error is rethrown at the end).
 *   Waits for a start in progress first. Repeated calls share one run.
 */
export class Lifecycle implements Startable {
  readonly #entries: readonly LifecycleEntry[];
  #starting: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  /** The one run of {@link #stopAll} (by {@link stop}, or by a failed start). */
  #halt: Promise<void> | undefined;
  /** Components not stopped yet during {@link #stopAll} (for the log of a drain that timed out). */
  #unstopped: string[] = [];

  constructor(entries: readonly LifecycleEntry[]) {
    this.#entries = [...entries];
  }

  /** Names of the components, in start order. */
  get names(): string[] {
    return this.#entries.map((e) => e.name);
  }

  /** Names of the components whose stop has not finished, in stop order (empty outside a stop). */
  get stopping(): string[] {
    return [...this.#unstopped];
  }

  start(): Promise<void> {
    if (this.#stopping) return Promise.reject(new Error('lifecycle: stopped; build a new instance to start again'));
    this.#starting ??= this.#startAll();
    return this.#starting;
  }

  async #startAll(): Promise<void> {
    for (const e of this.#entries) {
      if (e.enabled === false) continue;
      try {
        await e.component.start();
      } catch (err) {
        // the caller sees the start's error; a stop error here is dropped (stop() reports it again)
        this.#halt ??= this.#stopAll();
        await this.#halt.catch(() => undefined);
        throw err;
      }
    }
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      await this.#starting?.catch(() => undefined);
      this.#halt ??= this.#stopAll();
      await this.#halt;
    })();
    return this.#stopping;
  }

  async #stopAll(): Promise<void> {
    let first: unknown;
    this.#unstopped = [...this.#entries].reverse().map((e) => e.name);
    for (const e of [...this.#entries].reverse()) {
      try {
        await e.component.stop();
      } catch (err) {
        first ??= new Error(`lifecycle: stopping ${e.name} failed`, { cause: err });
      }
      this.#unstopped.shift();
    }
    if (first !== undefined) throw first;
  }
}
