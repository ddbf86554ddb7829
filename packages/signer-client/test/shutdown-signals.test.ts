/**
 * Issue #29 (process lifecycle), review fixes of `handleShutdownSignals` in a real child process
 * (the built `dist/shutdown.js`, as the daemons run it):
 * - a drain whose `stop()` never settles and holds no handle (nothing else keeps the event loop
 *   alive) still logs `drain timed out` and exits 1; before the fix the unref'd timer let Node
 *   exit 0 silently;
 * - SIGHUP (terminal closed) drains like SIGTERM by default; a daemon that reloads on SIGHUP (the
 *   signer) passes `signals: ['SIGTERM', 'SIGINT']` and SIGHUP is left to it.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { killTrees, spawnTracked, type TrackedChild } from '../../../test/helpers/processes.js';

const HELPER = fileURLToPath(new URL('../dist/shutdown.js', import.meta.url));

/** A node process that installs the helper with `opts` (an object literal), runs `setup`, prints `ready`. */
function daemon(opts: string, stop: string, setup = ''): TrackedChild {
  const script = `
    import { handleShutdownSignals } from ${JSON.stringify(HELPER)};
    const line = (level) => (fields, msg) => process.stdout.write(level + ' ' + msg + ' ' + JSON.stringify(fields) + '\\n');
    const log = { info: line('info'), warn: line('warn'), error: line('error') };
    handleShutdownSignals({ name: 'demo', log, stop: ${stop}, ...${opts} });
    globalThis.keep = setInterval(() => {}, 1000);
    ${setup}
    process.stdout.write('ready\\n');
  `;
  return spawnTracked(process.execPath, ['--input-type=module', '-e', script]);
}

describe('handleShutdownSignals in a process', () => {
  const children: TrackedChild[] = [];
  afterEach(async () => {
    await killTrees(children.splice(0));
  });

  it('a stop() that never settles and holds no handle: logs the timeout and exits 1', async () => {
    // the interval is cleared in stop(): afterwards only the drain timer can keep the process up
    const c = daemon('{ timeoutMs: 300 }', '() => { clearInterval(globalThis.keep); return new Promise(() => {}); }');
    children.push(c);
    await c.waitFor(/ready/);
    c.child.kill('SIGTERM');
    const { code, signal } = await c.exited;
    expect(c.output()).toMatch(/demo stopping \(SIGTERM\)/);
    expect(c.output()).toMatch(/demo drain timed out after 300 ms/);
    expect({ code, signal }).toEqual({ code: 1, signal: null });
  });

  it('SIGHUP drains like SIGTERM by default: logs stopping (SIGHUP), stopped, exits 0', async () => {
    const c = daemon('{}', '() => { clearInterval(globalThis.keep); return Promise.resolve(); }');
    children.push(c);
    await c.waitFor(/ready/);
    c.child.kill('SIGHUP');
    const { code, signal } = await c.exited;
    expect(c.output()).toMatch(/demo stopping \(SIGHUP\)/);
    expect(c.output()).toMatch(/demo stopped/);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  });

  it("signals: ['SIGTERM', 'SIGINT'] leaves SIGHUP to the daemon (the signer's reload)", async () => {
    const c = daemon(
      "{ signals: ['SIGTERM', 'SIGINT'] }",
      '() => { clearInterval(globalThis.keep); return Promise.resolve(); }',
      "process.on('SIGHUP', () => process.stdout.write('reload\\n'));",
    );
    children.push(c);
    await c.waitFor(/ready/);
    c.child.kill('SIGHUP');
    await c.waitFor(/reload/);
    expect(c.output()).not.toMatch(/demo stopping/);
    c.child.kill('SIGTERM');
    const { code } = await c.exited;
    expect(c.output()).toMatch(/demo stopping \(SIGTERM\)/);
    expect(code).toBe(0);
  });
});
