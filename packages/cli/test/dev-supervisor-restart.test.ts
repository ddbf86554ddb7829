/**
 * Issue #27 item 1: `custodian dev` restarts a child process that dies. The supervisor
 * (src/dev/supervisor.ts) with real child processes (`node -e …`) and short restart delays.
 *
 * Must hold: a child that exits unexpectedly (killed from outside, crashed) is logged and started
 * again after a capped, jittered backoff; never during shutdown nor after it was stopped on
 * purpose; one that keeps crashing right after it starts is given up after a few tries with a clear
 * message; an exit code declared final (a revoked phone) is not restarted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Supervisor } from '../src/dev/supervisor.js';

const LIVES = 'console.log("up " + process.pid); setInterval(() => {}, 1000)';
const FAST = { initialMs: 40, maxMs: 80, stableMs: 5_000, giveUpAfter: 3 };

async function until(pred: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timeout waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sups: Supervisor[] = [];
afterEach(async () => {
  for (const s of sups.splice(0)) await s.stopAll(1000);
});

function supervisor(): { sup: Supervisor; lines: string[]; text(): string } {
  const lines: string[] = [];
  const sup = new Supervisor((l) => lines.push(l));
  sups.push(sup);
  return { sup, lines, text: () => lines.join('\n') };
}

describe('custodian dev supervisor: restarts of dead children', () => {
  it('a child killed from outside is logged and restarted after a backoff, ready again', async () => {
    const { sup, text } = supervisor();
    const m = sup.spawn('phone', process.execPath, ['-e', LIVES], { ready: /^up /, restart: FAST });
    await m.ready;
    const first = m.child.pid;
    m.child.kill('SIGKILL');
    await until(() => m.child.pid !== first && /up \d+[\s\S]*up \d+/.test(text()), 5_000, 'the restart');
    expect(m.restarts).toBe(1);
    expect(text()).toMatch(/exited unexpectedly \(signal SIGKILL\); restarting in \d+ ms \(attempt 1\)/);
    expect(text()).toMatch(/restarted \(attempt 1\)/);
    expect(m.child.exitCode).toBe(null);
  });

  it('a child that keeps crashing as soon as it starts is given up after a few tries, with a clear message', async () => {
    const { sup, text } = supervisor();
    const m = sup.spawn('broken', process.execPath, ['-e', 'process.exit(7)'], { restart: FAST });
    expect(await m.exited).toBe(7);
    expect(m.restarts).toBe(2);
    expect(text()).toMatch(/exited 3 times in a row within 5000 ms of starting: giving up \(not restarted\)/);
  });

  it('no restart after a deliberate stop, nor during shutdown', async () => {
    const { sup, text } = supervisor();
    const a = sup.spawn('a', process.execPath, ['-e', LIVES], { ready: /^up /, restart: FAST });
    const b = sup.spawn('b', process.execPath, ['-e', LIVES], { ready: /^up /, restart: FAST });
    await Promise.all([a.ready, b.ready]);
    await a.stop();
    await new Promise((r) => setTimeout(r, 300));
    expect(a.restarts).toBe(0);
    expect(a.child.exitCode !== null || a.child.signalCode !== null).toBe(true);
    await sup.stopAll(1000);
    await new Promise((r) => setTimeout(r, 300));
    expect(b.restarts).toBe(0);
    expect(text()).not.toMatch(/restarting/);
  });

  it('an exit code declared final is not restarted', async () => {
    const { sup, text } = supervisor();
    const m = sup.spawn('revoked', process.execPath, ['-e', 'setTimeout(() => process.exit(3), 50)'], {
      restart: { ...FAST, finalExitCodes: [3] },
    });
    expect(await m.exited).toBe(3);
    await new Promise((r) => setTimeout(r, 200));
    expect(m.restarts).toBe(0);
    expect(text()).toMatch(/exited with code 3 \(final: not restarted\)/);
  });

  it('a kill with a held restart stays down for the chosen time, then comes back; it never counts toward giving up', async () => {
    const { sup, text } = supervisor();
    // giveUpAfter 2: two plain crashes in a row would be given up — two held kills must not be
    const m = sup.spawn('signer', process.execPath, ['-e', LIVES], {
      ready: /^up /,
      restart: { ...FAST, giveUpAfter: 2 },
    });
    await m.ready;
    for (const round of [1, 2]) {
      const before = m.child.pid;
      const killedAt = Date.now();
      m.kill('SIGKILL', { restartAfterMs: 700 });
      await until(() => m.child.pid !== before, 5_000, `restart ${round}`);
      // a lower bound only (the chosen downtime; a timer may fire a millisecond early)
      expect(Date.now() - killedAt).toBeGreaterThanOrEqual(690);
      await until(() => (text().match(/up \d+/g) ?? []).length === round + 1, 5_000, `up again ${round}`);
    }
    expect(m.restarts).toBe(2);
    expect(text()).toMatch(/exited unexpectedly \(signal SIGKILL\); restarting in 700 ms \(held\) \(attempt 1\)/);
    expect(text()).toMatch(/restarting in 700 ms \(held\) \(attempt 2\)/);
    expect(text()).not.toMatch(/giving up/);
    expect(m.child.exitCode).toBe(null);
  });
});
