/**
 * A small process supervisor for the local instance: spawns each component as its own process,
 * prefixes its output with a coloured name (pino JSON lines become one readable line each), waits
 * for a readiness line, restarts a process that dies unexpectedly (with a {@link RestartPolicy}:
 * capped, jittered backoff; given up after a few crashes right after start; never during shutdown
 * or after a deliberate {@link Managed.stop}), and stops everything (SIGTERM, then SIGKILL after a
 * grace period) on exit. A caller injecting faults can {@link Managed.kill} a process and hold its
 * restart for a chosen time (the kill -9 sweep test); `custodian dev` itself never does.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Backoff } from '@custodian/signer-client';

const COLOURS = [36, 35, 33, 32, 34, 91, 92, 93, 94, 95];
const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** One supervised process (the same record across restarts). */
export interface Managed {
  readonly name: string;
  /** The current process (a new one after each restart). */
  readonly child: ChildProcess;
  /** Resolves with the first output line of the first process matching `ready` (or at once without a pattern). */
  readonly ready: Promise<string>;
  /**
   * Resolves, with the last exit code, when the process has exited for good: without a restart
   * policy at its first exit; with one once stopped, given up, or exited with a final code.
   */
  readonly exited: Promise<number | null>;
  /** How many times it was restarted. */
  readonly restarts: number;
  /** Stop it for good (SIGTERM, then SIGKILL after `graceMs`, default 5000): no restart. */
  stop(graceMs?: number): Promise<void>;
  /**
   * Kill the current process from outside (a fault injected on purpose), with `signal` (default
   * SIGKILL). With a restart policy it is restarted like any unexpected exit — but after exactly
   * `restartAfterMs` (ms) when given (a held restart: the downtime the caller chose, logged as
   * `restarting in N ms (held)`), and that exit does not count toward giving up. Without a
   * restart policy it stays down. No effect on a process that has already exited.
   */
  kill(signal?: NodeJS.Signals, opts?: { readonly restartAfterMs?: number }): void;
}

/**
 * When and how a process that exits unexpectedly is started again. Delays: attempt k waits a
 * delay drawn from [b/2, b], b = min(maxMs, initialMs · 2^(k−1)) (`@custodian/signer-client` backoff.ts).
 */
export interface RestartPolicy {
  /** Base of the first restart delay, ms (default 1000). */
  readonly initialMs?: number;
  /** Cap of the restart delay, ms (default 30 000). */
  readonly maxMs?: number;
  /** A process that ran this long, ms, counts as started well: the crash count and delays start over (default 10 000). */
  readonly stableMs?: number;
  /** Give up after this many exits in a row, each within `stableMs` of its start (default 5). */
  readonly giveUpAfter?: number;
  /** Exit codes that mean "done for good" (e.g. a revoked phone): not restarted. */
  readonly finalExitCodes?: readonly number[];
}

/**
 * Restart policy of `custodian dev`'s processes: from ≈ 1 s, doubling to 30 s, jittered; a process
 * that dies 5 times in a row within 10 s of starting is given up (the message says so).
 */
export const RESTART: RestartPolicy = { initialMs: 1000, maxMs: 30_000, stableMs: 10_000, giveUpAfter: 5 };

/** Options of {@link Supervisor.spawn}. */
export interface SpawnOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** A line that means "ready"; `ready` rejects if the process exits first or after `timeoutMs`. */
  readonly ready?: RegExp;
  readonly timeoutMs?: number;
  /** Print the process's output (default true). */
  readonly quiet?: boolean;
  /** Restart the process when it exits unexpectedly (default: never). */
  readonly restart?: RestartPolicy;
}

/** Format one output line of a child: pino JSON → `level msg key=value…`, anything else as is. */
export function formatLine(line: string): string {
  if (!line.startsWith('{')) return line;
  try {
    const o = JSON.parse(line) as Record<string, unknown>;
    const { level, msg, time: _t, pid: _p, hostname: _h, ...rest } = o;
    const extra = Object.entries(rest)
      .filter(([, v]) => v !== undefined && typeof v !== 'object')
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(' ');
    return `${LEVELS[level as number] ?? String(level ?? '')} ${String(msg ?? '')}${extra ? ` ${extra}` : ''}`;
  } catch {
    return line;
  }
}

export class Supervisor {
  private readonly procs: { managed: Managed; halt: (graceMs: number) => Promise<void> }[] = [];
  private colour = 0;
  private stopping = false;

  // the children lead process groups of their own (detached), so they outlive this process unless
  // told: when it exits without a drain (a second signal, an uncaught error), SIGKILL what still runs
  private readonly onExit = () => {
    for (const { managed } of this.procs) {
      const c = managed.child;
      if (c.exitCode === null && c.signalCode === null) signalGroup(c, 'SIGKILL');
    }
  };
  private hooked = false;

  constructor(private readonly out: (line: string) => void = (l) => process.stdout.write(`${l}\n`)) {}

  /** Spawn `command args…` as `name`. */
  spawn(name: string, command: string, args: readonly string[], opts: SpawnOptions = {}): Managed {
    if (!this.hooked) {
      this.hooked = true;
      process.on('exit', this.onExit);
    }
    const colour = COLOURS[this.colour++ % COLOURS.length] as number;
    const tag = `\u001b[${colour}m${name.padEnd(12)}\u001b[0m│ `;
    const policy = opts.restart;
    const backoff = policy
      ? new Backoff({ initialMs: policy.initialMs ?? 1000, maxMs: policy.maxMs ?? 30_000 })
      : undefined;
    const stableMs = policy?.stableMs ?? 10_000;
    const giveUpAfter = policy?.giveUpAfter ?? 5;
    let resolveReady: (l: string) => void = () => {};
    let rejectReady: (e: Error) => void = () => {};
    const ready = new Promise<string>((res, rej) => {
      resolveReady = res;
      rejectReady = rej;
    });
    ready.catch(() => {});
    if (!opts.ready) resolveReady('');
    let resolveExited: (code: number | null) => void = () => {};
    const exited = new Promise<number | null>((res) => {
      resolveExited = res;
    });
    let child: ChildProcess;
    let restarts = 0;
    let quickExits = 0;
    let stopped = false;
    let done = false;
    let restartTimer: NodeJS.Timeout | undefined;
    // set by `kill(…, { restartAfterMs })` for the current process only
    let heldRestartMs: number | undefined;
    const finish = (code: number | null) => {
      done = true;
      resolveExited(code);
    };
    const launch = (attempt: number) => {
      const startedAt = Date.now();
      const c = spawn(command, [...args], {
        cwd: opts.cwd,
        env: { ...process.env, ...opts.env },
        stdio: ['ignore', 'pipe', 'pipe'],
        // its own process group: a stop or kill reaches what it started too (anvil's binary, #29)
        detached: true,
      });
      child = c;
      const first = attempt === 0;
      const timer =
        first && opts.ready
          ? setTimeout(
              () => rejectReady(new Error(`${name}: not ready after ${opts.timeoutMs ?? 60_000} ms`)),
              opts.timeoutMs ?? 60_000,
            )
          : undefined;
      let readyAgain = false;
      const onLine = (line: string) => {
        if (opts.quiet !== true) this.out(`${tag}${formatLine(line)}`);
        if (opts.ready?.test(line)) {
          if (first) {
            if (timer) clearTimeout(timer);
            resolveReady(line);
          } else if (!readyAgain) {
            readyAgain = true;
            this.out(`${tag}ready again after restart ${attempt}`);
          }
        }
      };
      createInterface({ input: c.stdout as NodeJS.ReadableStream }).on('line', onLine);
      createInterface({ input: c.stderr as NodeJS.ReadableStream }).on('line', onLine);
      c.on('exit', (code, signal) => {
        if (timer) clearTimeout(timer);
        if (first) rejectReady(new Error(`${name} exited (code ${code}) before it was ready`));
        if (this.stopping || stopped) return finish(code);
        const how = signal ? `signal ${signal}` : `code ${code}`;
        if (!policy || !backoff) {
          this.out(`${tag}exited with ${how}`);
          return finish(code);
        }
        if (code !== null && policy.finalExitCodes?.includes(code)) {
          this.out(`${tag}exited with code ${code} (final: not restarted)`);
          return finish(code);
        }
        const held = heldRestartMs;
        heldRestartMs = undefined;
        let k: number;
        let delayMs: number;
        if (held !== undefined) {
          // killed on purpose with a chosen downtime: not a crash, so no backoff step and no give-up count
          k = restarts + 1;
          delayMs = held;
          this.out(`${tag}exited unexpectedly (${how}); restarting in ${delayMs} ms (held) (attempt ${k})`);
        } else {
          if (Date.now() - startedAt >= stableMs) {
            quickExits = 0;
            backoff.reset();
          }
          quickExits++;
          if (quickExits >= giveUpAfter) {
            this.out(
              `${tag}exited ${quickExits} times in a row within ${stableMs} ms of starting: giving up (not restarted); see its output above`,
            );
            return finish(code);
          }
          ({ attempt: k, delayMs } = backoff.next());
          this.out(`${tag}exited unexpectedly (${how}); restarting in ${delayMs} ms (attempt ${k})`);
        }
        restartTimer = setTimeout(() => {
          restartTimer = undefined;
          if (this.stopping || stopped) return finish(code);
          restarts++;
          this.out(`${tag}restarted (attempt ${k})`);
          launch(restarts);
        }, delayMs);
      });
    };
    launch(0);
    const halt = async (graceMs: number) => {
      stopped = true;
      if (restartTimer) {
        clearTimeout(restartTimer);
        restartTimer = undefined;
        if (!done) finish(child.exitCode);
      }
      const c = child;
      if (c.exitCode !== null || c.signalCode !== null) {
        if (!done) finish(c.exitCode);
        return;
      }
      const gone = new Promise<void>((r) => c.once('exit', () => r()));
      signalGroup(c, 'SIGTERM');
      const t = setTimeout(() => signalGroup(c, 'SIGKILL'), graceMs);
      await gone;
      clearTimeout(t);
    };
    const managed: Managed = {
      name,
      get child() {
        return child;
      },
      ready,
      exited,
      get restarts() {
        return restarts;
      },
      stop: (graceMs = 5_000) => halt(graceMs),
      kill: (signal = 'SIGKILL', o = {}) => {
        const c = child;
        if (c.exitCode !== null || c.signalCode !== null) return;
        if (o.restartAfterMs !== undefined) {
          if (!Number.isFinite(o.restartAfterMs) || o.restartAfterMs < 0)
            throw new RangeError(`${name}: restartAfterMs must be a finite number ≥ 0`);
          heldRestartMs = o.restartAfterMs;
        }
        signalGroup(c, signal);
      },
    };
    this.procs.push({ managed, halt });
    return managed;
  }

  /** Names of the processes alive now (e.g. what a stop is still waiting for). */
  running(): string[] {
    return this.procs
      .filter(({ managed: { child } }) => child.exitCode === null && child.signalCode === null)
      .map((p) => p.managed.name);
  }

  /** The process spawned last under `name`, if any. */
  find(name: string): Managed | undefined {
    return this.procs.findLast((p) => p.managed.name === name)?.managed;
  }

  /** Stop every process (no restart from now on): SIGTERM, then SIGKILL after `graceMs`. */
  async stopAll(graceMs = 5_000): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.procs].reverse().map((p) => p.halt(graceMs)));
    process.off('exit', this.onExit);
    this.hooked = false;
  }
}

/** Send `signal` to the process group `c` leads (spawned detached), else to `c` alone. */
function signalGroup(c: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (c.pid !== undefined) process.kill(-c.pid, signal);
    else c.kill(signal);
  } catch {
    c.kill(signal);
  }
}
