/**
 * Capped exponential backoff with equal jitter, for whatever reconnects forever (a phone's
 * WebSocket to the coordinator, the coordinator's libp2p links to server signers, the processes of
 * `custodian dev`). Attempt k (from 1) waits a delay drawn uniformly from [b/2, b] with
 * b = min(maxMs, initialMs · 2^(k−1)): never more than the cap, never less than half the base (so
 * a crowd of clients spreads out after an outage instead of arriving in one burst).
 */

/** Options of {@link Backoff}. */
export interface BackoffOptions {
  /** Base delay of the first attempt, ms (> 0). */
  readonly initialMs: number;
  /** Cap of the base delay, ms (≥ initialMs). */
  readonly maxMs: number;
  /** Uniform random number in [0, 1) (default `Math.random`: jitter needs no secrecy). */
  readonly random?: () => number;
}

/**
 * Delay before attempt `attempt` (1, 2, …), ms: uniform in [b/2, b], b = min(maxMs, initialMs · 2^(attempt−1)).
 * @throws RangeError when `attempt` < 1, `initialMs` ≤ 0 or `maxMs` < `initialMs`
 */
export function backoffDelay(attempt: number, opts: BackoffOptions): number {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError('attempt: an integer ≥ 1');
  if (!(opts.initialMs > 0) || !(opts.maxMs >= opts.initialMs)) throw new RangeError('backoff: 0 < initialMs ≤ maxMs');
  const base = Math.min(opts.maxMs, opts.initialMs * 2 ** Math.min(attempt - 1, 40));
  const r = (opts.random ?? Math.random)();
  return Math.round(base / 2 + (r * base) / 2);
}

/** A sequence of reconnect attempts: {@link Backoff.next} for each wait, {@link Backoff.reset} once a connection lived. */
export class Backoff {
  private count = 0;

  /** @throws RangeError as {@link backoffDelay} */
  constructor(private readonly opts: BackoffOptions) {
    backoffDelay(1, opts);
  }

  /** Attempts counted since the last reset. */
  get attempt(): number {
    return this.count;
  }

  /** Count one more attempt and return it with the delay to wait before it, ms. */
  next(): { attempt: number; delayMs: number } {
    this.count++;
    return { attempt: this.count, delayMs: backoffDelay(this.count, this.opts) };
  }

  /** Start again from the first delay (after a connection that lived). */
  reset(): void {
    this.count = 0;
  }
}
