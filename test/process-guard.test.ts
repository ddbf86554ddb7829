/**
 * The run's leak check (test/process-guard.ts): a child left running with the run's marker is
 * found, killed and makes the teardown throw; with nothing left, the teardown passes. Uses a
 * marker of its own, so the real run's check never sees this test's child.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { killTrees, spawnTracked, type TrackedChild } from './helpers/processes.js';
import setup, { leakedProcesses, markedProcesses, RUN_MARKER_ENV } from './process-guard.js';

describe('process leak check', () => {
  const children: TrackedChild[] = [];
  afterEach(async () => {
    await killTrees(children.splice(0));
  });

  const LIVES = "process.stdout.write('up\\n'); setInterval(() => {}, 1000)";

  it('finds a child still running with the marker, kills it, and reports it', async () => {
    const marker = randomUUID();
    const c = spawnTracked(process.execPath, ['-e', LIVES], { env: { ...process.env, [RUN_MARKER_ENV]: marker } });
    children.push(c);
    await c.waitFor(/^up/m);
    expect(markedProcesses(marker).map((p) => p.pid)).toContain(c.pid);
    const leaks = await leakedProcesses(marker, process.pid, 200);
    expect(leaks.map((p) => p.pid)).toEqual([c.pid]);
    // killed by the check
    expect((await c.exited).signal).toBe('SIGKILL');
    expect(markedProcesses(marker)).toEqual([]);
  });

  it('the teardown throws naming the leak, and passes once nothing is left', async () => {
    const saved = process.env[RUN_MARKER_ENV];
    try {
      // a marker of its own, not the run's
      delete process.env[RUN_MARKER_ENV];
      const teardown = setup();
      const marker = process.env[RUN_MARKER_ENV] as string;
      const c = spawnTracked(process.execPath, ['-e', LIVES], { env: { ...process.env, [RUN_MARKER_ENV]: marker } });
      children.push(c);
      await c.waitFor(/^up/m);
      await expect(teardown()).rejects.toThrow(
        new RegExp(`left 1 process\\(es\\) running \\(now killed\\): ${c.pid} `),
      );
      await c.exited;
      delete process.env[RUN_MARKER_ENV];
      await expect(setup()()).resolves.toBeUndefined();
    } finally {
      process.env[RUN_MARKER_ENV] = saved;
      // the failing teardown above marked this worker's exit code
      process.exitCode = undefined;
    }
  });
});
