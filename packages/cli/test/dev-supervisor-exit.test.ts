/**
 * Issue #29 review: `custodian dev` spawns its processes in process groups of their own
 * (`detached: true`), so they do not die with it. When the `custodian dev` process exits without a
 * drain (a second signal: "exiting at once", an uncaught error), the supervisor's `exit` hook
 * SIGKILLs every group still running; before the fix they kept running and held their ports.
 * A real `node` process running the built supervisor (`dist/dev/supervisor.js`) with a real child.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { killTrees, spawnTracked, type TrackedChild } from '../../../test/helpers/processes.js';

const SUPERVISOR = fileURLToPath(new URL('../dist/dev/supervisor.js', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const children: TrackedChild[] = [];
const strays: number[] = [];
afterEach(async () => {
  for (const pid of strays.splice(0)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {}
  }
  await killTrees(children.splice(0));
});

it('the supervisor kills the process groups still running when its process exits', async () => {
  const script = `
    import { Supervisor } from ${JSON.stringify(SUPERVISOR)};
    const sup = new Supervisor(() => {});
    const m = sup.spawn('sleeper', process.execPath, ['-e', 'console.log("up"); setInterval(() => {}, 1000)'], { ready: /^up/ });
    await m.ready;
    process.stdout.write('child ' + m.child.pid + '\\n');
    process.exit(3);
  `;
  const c = spawnTracked(process.execPath, ['--input-type=module', '-e', script]);
  children.push(c);
  const [, pid] = await c.waitFor(/child (\d+)/);
  strays.push(Number(pid));
  const { code } = await c.exited;
  expect(code).toBe(3);
  // SIGKILL is delivered before exit() returns; reaping by init can lag a moment
  for (let i = 0; i < 50 && alive(Number(pid)); i++) await new Promise((r) => setTimeout(r, 100));
  expect(alive(Number(pid))).toBe(false);
});
