/**
 * vitest globalSetup of both projects: fails the run when a process the tests started is still
 * alive at the end (issue #29: phone simulators left running after a CI run).
 *
 * How: setup puts a random marker in the environment (`CUSTODIAN_TEST_RUN`) before the test
 * workers are forked; every process the tests start inherits it (a spawn with its own `env` must
 * spread `process.env`), and so do their children. Teardown lists the live processes whose
 * environment holds this run's marker (Linux `/proc/<pid>/environ`), leaving out the vitest
 * process itself and its test workers (its direct children running vitest). Any left: they are killed (SIGKILL,
 * their process group too) and the teardown throws, naming them, which makes the run fail.
 * Other runs on the same machine carry another marker and are never touched.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

/** The environment variable holding the run's marker. */
export const RUN_MARKER_ENV = 'CUSTODIAN_TEST_RUN';

/** One live process carrying a marker. */
export interface MarkedProcess {
  pid: number;
  ppid: number;
  pgid: number;
  command: string;
}

/**
 * The live processes (not zombies) whose initial environment holds `RUN_MARKER_ENV=marker`.
 * Linux only: elsewhere (no `/proc`) returns an empty list.
 */
export function markedProcesses(marker: string): MarkedProcess[] {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  const needle = `${RUN_MARKER_ENV}=${marker}`;
  const out: MarkedProcess[] = [];
  for (const d of pids) {
    try {
      const env = readFileSync(`/proc/${d}/environ`, 'latin1').split('\0');
      if (!env.includes(needle)) continue;
      // stat: "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses
      const stat = readFileSync(`/proc/${d}/stat`, 'latin1');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (rest[0] === 'Z' || rest[0] === 'X') continue;
      const command = readFileSync(`/proc/${d}/cmdline`, 'latin1').split('\0').join(' ').trim().slice(0, 200);
      out.push({ pid: Number(d), ppid: Number(rest[1]), pgid: Number(rest[2]), command });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

/**
 * The processes of run `marker` still alive, other than `runner` (the vitest process) and its
 * workers (direct children running vitest), after waiting up to `graceMs` for them to go (a teardown's SIGTERM may
 * still be in flight). The leaks found are killed (SIGKILL, group and pid) before returning.
 */
export async function leakedProcesses(marker: string, runner: number, graceMs = 5_000): Promise<MarkedProcess[]> {
  // the runner's own workers (its children running vitest) carry the marker and are not leaks
  const live = () =>
    markedProcesses(marker).filter((p) => p.pid !== runner && !(p.ppid === runner && p.command.includes('vitest')));
  const deadline = Date.now() + graceMs;
  let left = live();
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = live();
  }
  for (const p of left) {
    // the whole group only when the leak leads its own (spawned detached); never the runner's group
    const targets = p.pgid === p.pid ? [-p.pgid, p.pid] : [p.pid];
    for (const target of targets) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  return left;
}

/** vitest globalSetup: mark the run; the returned teardown throws when processes leaked. */
export default function setup(): () => Promise<void> {
  // one marker for the whole run (both projects' setups run in the same vitest process)
  const marker = process.env[RUN_MARKER_ENV] ?? randomUUID();
  process.env[RUN_MARKER_ENV] = marker;
  return async () => {
    const leaks = await leakedProcesses(marker, process.pid);
    if (leaks.length > 0) {
      // vitest reports a teardown error but keeps its exit code: set it
      process.exitCode = 1;
      throw new Error(
        `tests left ${leaks.length} process(es) running (now killed): ${leaks.map((p) => `${p.pid} ${p.command}`).join('; ')}`,
      );
    }
  };
}
