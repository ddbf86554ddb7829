/**
 * Child processes in tests: each is spawned in its own process group (`detached: true`) so that
 * teardown can end it AND everything it started (`process.kill(-pid, sig)`), also when the test
 * failed or timed out. The run's leak check (test/process-guard.ts) catches what slips through.
 */
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';

/** A spawned child: its merged stdout + stderr so far, and its exit. */
export interface TrackedChild {
  readonly child: ChildProcess;
  readonly pid: number;
  /** stdout and stderr so far, as text. */
  output(): string;
  /** Resolves with the exit code (null when ended by a signal) and the signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once `re` matches the output; rejects when the child exits first or after `timeoutMs`. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

/**
 * Spawn `command` in its own process group with stdout and stderr piped (and stdin ignored) unless
 * `opts.stdio` says otherwise. The environment defaults to `process.env` (keeps the run marker).
 * @throws Error when the spawn gives no pid
 */
export function spawnTracked(command: string, args: readonly string[], opts: SpawnOptions = {}): TrackedChild {
  const child = spawn(command, [...args], { stdio: ['ignore', 'pipe', 'pipe'], ...opts, detached: true });
  if (child.pid === undefined) throw new Error(`spawn ${command}: no pid`);
  const pid = child.pid;
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (b: Buffer) => {
    out += b.toString('utf8');
    for (const l of listeners) l();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      for (const l of listeners) l();
      resolve({ code, signal });
    });
  });
  let done = false;
  void exited.then(() => {
    done = true;
  });
  const waitFor = (re: RegExp, timeoutMs = 60_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const m = out.match(re);
        if (m) {
          cleanup();
          resolve(m);
        } else if (done || child.exitCode !== null || child.signalCode !== null) {
          cleanup();
          reject(new Error(`process ${pid} exited before ${re}; output:\n${out.slice(-4000)}`));
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out waiting for ${re}; output:\n${out.slice(-4000)}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });
  return { child, pid, output: () => out, exited, waitFor };
}

/**
 * Send `signal` to the process group led by `pid` (the child and everything it started); no error
 * when it is gone already.
 */
export function signalTree(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone
  }
}

/**
 * Teardown: SIGKILL the group of every child given (spawned with {@link spawnTracked} or
 * `detached: true`) and wait for the children's exit. Safe on children already gone.
 */
export async function killTrees(children: Iterable<ChildProcess | TrackedChild | undefined>): Promise<void> {
  const waits: Promise<unknown>[] = [];
  for (const c of children) {
    if (c === undefined) continue;
    const child = 'child' in c ? c.child : c;
    if (child.pid === undefined) continue;
    signalTree(child.pid, 'SIGKILL');
    if (child.exitCode === null && child.signalCode === null) waits.push(new Promise((r) => child.once('exit', r)));
  }
  await Promise.all(waits);
}
