/**
 * A small process supervisor for the local instance: spawns each component as its own process,
 * prefixes its output with a coloured name (pino JSON lines become one readable line each), waits
 * for a readiness line, and stops everything (SIGTERM, then SIGKILL after a grace period) on exit.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const COLOURS = [36, 35, 33, 32, 34, 91, 92, 93, 94, 95];
const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** One supervised process. */
export interface Managed {
  readonly name: string;
  readonly child: ChildProcess;
  /** Resolves with the first output line matching `ready` (or immediately without a pattern). */
  readonly ready: Promise<string>;
  /** Resolves when the process exits. */
  readonly exited: Promise<number | null>;
}

/** Options of {@link Supervisor.spawn}. */
export interface SpawnOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** A line that means "ready"; `ready` rejects if the process exits first or after `timeoutMs`. */
  readonly ready?: RegExp;
  readonly timeoutMs?: number;
  /** Print the process's output (default true). */
  readonly quiet?: boolean;
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
  private readonly procs: Managed[] = [];
  private colour = 0;
  private stopping = false;

  constructor(private readonly out: (line: string) => void = (l) => process.stdout.write(`${l}\n`)) {}

  /** Spawn `command args…` as `name`. */
  spawn(name: string, command: string, args: readonly string[], opts: SpawnOptions = {}): Managed {
    const colour = COLOURS[this.colour++ % COLOURS.length] as number;
    const tag = `\u001b[${colour}m${name.padEnd(12)}\u001b[0m│ `;
    const child = spawn(command, [...args], {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let resolveReady: (l: string) => void = () => {};
    let rejectReady: (e: Error) => void = () => {};
    const ready = new Promise<string>((res, rej) => {
      resolveReady = res;
      rejectReady = rej;
    });
    ready.catch(() => {});
    if (!opts.ready) resolveReady('');
    const timer = opts.ready
      ? setTimeout(
          () => rejectReady(new Error(`${name}: not ready after ${opts.timeoutMs ?? 60_000} ms`)),
          opts.timeoutMs ?? 60_000,
        )
      : undefined;
    const onLine = (line: string) => {
      if (opts.quiet !== true) this.out(`${tag}${formatLine(line)}`);
      if (opts.ready?.test(line)) {
        if (timer) clearTimeout(timer);
        resolveReady(line);
      }
    };
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', onLine);
    createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', onLine);
    const exited = new Promise<number | null>((res) =>
      child.on('exit', (code) => {
        if (timer) clearTimeout(timer);
        rejectReady(new Error(`${name} exited (code ${code}) before it was ready`));
        if (!this.stopping) this.out(`${tag}exited with code ${code}`);
        res(code);
      }),
    );
    const managed: Managed = { name, child, ready, exited };
    this.procs.push(managed);
    return managed;
  }

  /** Stop every process: SIGTERM, then SIGKILL after `graceMs`. */
  async stopAll(graceMs = 5_000): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.procs].reverse().map(async (p) => {
        if (p.child.exitCode !== null || p.child.signalCode !== null) return;
        p.child.kill('SIGTERM');
        const t = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
        await p.exited;
        clearTimeout(t);
      }),
    );
  }
}
