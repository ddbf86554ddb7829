/**
 * Review of issue #25 (hostile): replicas/leases.ts promises that a holder whose renewals stop
 * succeeding "stops the component BEFORE the lease can expire for the others". It only STARTS the
 * stop at `leaseMs * 2/3` and does not wait for it: a component whose stop waits for work in
 * flight — the deposit watcher's `stop()` waits for the poll in flight, which then COMMITS
 * (transfers/chains.ts #stopWatcher; PgWatcherStore.commit checks no lease) — is still running
 * when the lease runs out and the next replica starts its own: the singleton runs twice, and both
 * commit the same blocks' events. Expected: the next replica's component never starts while the
 * previous holder's has not stopped (or the holder's writes are fenced by the lease).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type Db, openPostgres } from '../src/db/db.js';
import { migrate } from '../src/db/migrations.js';
import type { Startable } from '../src/lifecycle.js';
import { SingletonLease } from '../src/replicas/leases.js';
import { PG_URL, postgresReachable } from './helpers.js';

const pgUp = await postgresReachable();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function sharedSchema(): Promise<() => Promise<Db>> {
  const schema = `t_${randomBytes(8).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const handles: Db[] = [];
  cleanups.push(async () => {
    for (const h of handles) await h.close().catch(() => undefined);
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA ${schema} CASCADE`);
    await c.end();
  });
  const first = await openPostgres(PG_URL, { schema, max: 4 });
  handles.push(first);
  await migrate(first);
  return async () => {
    const h = await openPostgres(PG_URL, { schema, max: 4 });
    handles.push(h);
    return h;
  };
}

describe.skipIf(!pgUp)('review #25: a singleton whose holder loses the lease', () => {
  it('never runs on two replicas at once, even when the stop waits for work in flight', async () => {
    const open = await sharedSchema();
    const leaseMs = 900;
    const running = new Set<string>();
    let overlap: string[] | undefined;
    let finishInFlight: () => void = () => {};
    const inFlight = new Promise<void>((r) => {
      finishInFlight = r;
    });
    // like the deposit watcher: stop() waits for the poll in flight (which then commits)
    const component = (name: string, slowStop: boolean): Startable => ({
      start: async () => {
        running.add(name);
        if (running.size > 1) overlap ??= [...running];
      },
      stop: async () => {
        if (slowStop) await inFlight;
        running.delete(name);
      },
    });
    const dbA = await open();
    const a = new SingletonLease({
      db: dbA,
      owner: 'replica-a',
      name: 'watcher:test',
      leaseMs,
      component: component('A', true),
      log: () => {},
    });
    await a.start();
    cleanups.push(() => a.stop());
    expect(a.held).toBe(true);
    // A's renewals stop succeeding: its pool's connections are all taken (a hung database path)
    let unhold: () => void = () => {};
    const hold = new Promise<void>((r) => {
      unhold = r;
    });
    void dbA.lock('review-hold', () => hold);
    void dbA.tx(() => hold);
    void dbA.tx(() => hold);
    void dbA.tx(() => hold);
    const b = new SingletonLease({
      db: await open(),
      owner: 'replica-b',
      name: 'watcher:test',
      leaseMs,
      component: component('B', false),
      log: () => {},
    });
    await b.start();
    cleanups.push(() => b.stop());
    cleanups.push(async () => unhold());
    const end = Date.now() + 6 * leaseMs;
    while (!b.held && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
    expect(b.held).toBe(true); // B took over once A's lease ran out
    finishInFlight();
    // on integrate: B's component started while A's was still stopping (its poll in flight)
    expect(overlap).toBeUndefined();
  });
});
