/**
 * Signal handling shared by the four daemons (coordinator, server signer, phone simulator,
 * `custodian dev`): SIGTERM, SIGINT and SIGHUP start a bounded drain, a second signal exits at once.
 * SIGHUP is the terminal closing (or its session leader ending): a daemon that does not reload on
 * it stops cleanly instead of being killed without a drain. The signer, whose SIGHUP reloads its
 * config, passes `signals: ['SIGTERM', 'SIGINT']`.
 *
 * - First handled signal: logs `stopping` (with the signal and the drain bound) at info, runs
 *   `stop()`; when it resolves, logs `stopped` and exits 0. When it rejects: logs the error and
 *   exits 1. When it has not settled after `timeoutMs`: logs `drain timed out` at error with
 *   what `pending()` says is still stopping, and exits 1.
 * - A second handled signal while draining: logs `second signal: exiting at once` at warn and
 *   exits 128 + the signal number (129 for SIGHUP, 130 for SIGINT, 143 for SIGTERM), as a shell reports a process
 *   killed by that signal.
 *
 * Install it BEFORE the daemon's start (a signal during a slow start drains too: the `stop()` of a
 * daemon waits for, or cuts short, its start). Lives here because every daemon links
 * `@custodian/signer-client` (docs/architecture.md); it has no libp2p import.
 */

/** Default drain bound (ms) of {@link handleShutdownSignals}. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/** The log calls {@link handleShutdownSignals} makes (a pino logger fits). */
export interface ShutdownLog {
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
  /** Write out buffered lines (pino's `flush`, for an asynchronous destination); awaited before exit. */
  flush?(cb?: (err?: Error) => void): void;
}

/** Options of {@link handleShutdownSignals}. */
export interface ShutdownOptions {
  /** What is stopping, for the log lines (`coordinator`, `signer`, `phone`, `dev`). */
  readonly name: string;
  readonly log: ShutdownLog;
  /** The drain: finish or hand back in-flight work, close stores, release ports. */
  readonly stop: () => Promise<void>;
  /** Drain bound in ms; default {@link DEFAULT_SHUTDOWN_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
  /** Names of what has not stopped yet (logged when the drain times out). */
  readonly pending?: () => readonly string[];
  /** Signals that drain; default {@link DEFAULT_SHUTDOWN_SIGNALS}. */
  readonly signals?: readonly ShutdownSignal[];
  /** Called after the final log line instead of `process.exit` (tests). */
  readonly exit?: (code: number) => void;
}

/** What {@link handleShutdownSignals} returns. */
export interface ShutdownHandle {
  /** Start the drain without a signal (e.g. the work ended by itself); `code` is the exit code on success. */
  shutdown(reason: string, code?: number): void;
  /** Remove the signal listeners (no exit happens any more through them). */
  dispose(): void;
}

const SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as const;

/** A signal {@link handleShutdownSignals} can drain on. */
export type ShutdownSignal = keyof typeof SIGNALS;

/** The signals that drain unless {@link ShutdownOptions.signals} says otherwise. */
export const DEFAULT_SHUTDOWN_SIGNALS: readonly ShutdownSignal[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/**
 * Parse a `--shutdown-timeout` value (milliseconds, integer in [0, 3 600 000]).
 * @throws Error naming the flag when the value is not such an integer
 */
export function parseShutdownTimeout(value: string | number | undefined): number {
  if (value === undefined) return DEFAULT_SHUTDOWN_TIMEOUT_MS;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isSafeInteger(n) || n < 0 || n > 3_600_000)
    throw new Error('--shutdown-timeout must be an integer number of milliseconds in [0, 3600000]');
  return n;
}

/**
 * Install the signal handlers described at the top of this file.
 * Never throws; the process exits through `opts.exit` (default `process.exit`).
 */
export function handleShutdownSignals(opts: ShutdownOptions): ShutdownHandle {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  let draining = false;
  let exited = false;
  const finish = (code: number) => {
    if (exited) return;
    exited = true;
    dispose();
    if (opts.log.flush === undefined) return exit(code);
    // the last lines reach the log before the exit (at most 1 s of waiting for a stuck output)
    const fallback = setTimeout(() => exit(code), 1_000);
    try {
      opts.log.flush(() => {
        clearTimeout(fallback);
        exit(code);
      });
    } catch {
      clearTimeout(fallback);
      exit(code);
    }
  };
  const shutdown = (reason: string, code = 0) => {
    if (draining) return;
    draining = true;
    const started = Date.now();
    opts.log.info({ signal: reason, shutdown_timeout_ms: timeoutMs }, `${opts.name} stopping (${reason})`);
    const timer = setTimeout(() => {
      const pending = opts.pending?.() ?? [];
      opts.log.error(
        { signal: reason, shutdown_timeout_ms: timeoutMs, not_stopped: pending },
        `${opts.name} drain timed out after ${timeoutMs} ms; exiting without: ${pending.length ? pending.join(', ') : 'unknown'}`,
      );
      finish(1);
    }, timeoutMs);
    // left ref'd: a stop() waiting on a promise with no live handle must still end in the timeout
    // line and exit 1, not in a silent exit 0 of an empty event loop (finish() exits anyway)
    opts.stop().then(
      () => {
        clearTimeout(timer);
        opts.log.info({ signal: reason, elapsed_ms: Date.now() - started }, `${opts.name} stopped`);
        finish(code);
      },
      (err: unknown) => {
        clearTimeout(timer);
        opts.log.error({ signal: reason, err: String(err) }, `${opts.name} stop failed`);
        finish(1);
      },
    );
  };
  const onSignal = (signal: ShutdownSignal) => {
    if (!draining) return shutdown(signal);
    opts.log.warn({ signal }, `${opts.name}: second signal (${signal}): exiting at once`);
    finish(128 + SIGNALS[signal]);
  };
  const listeners = [...new Set(opts.signals ?? DEFAULT_SHUTDOWN_SIGNALS)].map(
    (signal) => [signal, () => onSignal(signal)] as const,
  );
  for (const [signal, listener] of listeners) process.on(signal, listener);
  function dispose() {
    for (const [signal, listener] of listeners) process.off(signal, listener);
  }
  return { shutdown, dispose };
}
