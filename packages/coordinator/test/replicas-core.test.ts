/**
 * Issue #25 (coordinator replicas): the core on a REAL PostgreSQL server — several `Db` handles
 * (each its own pool, as separate replica processes have) on ONE private schema.
 *
 * - `Db.lock`: mutual exclusion under contention (no lost update), a holder whose backend is
 *   killed frees the lock (and its `fn` is told: the signal aborts), waiters never exhaust a small
 *   pool; locks of the same name in two schemas are independent.
 * - `Db.listen`: delivery, and after the LISTEN backend is killed: a reconnect that calls
 *   `onNotify('')` once.
 * - ReplicaRegistry: row, heartbeat, stop, liveness with a short TTL, cleanup of the dead.
 * - SingletonLease: exactly one of three runs the component at any time; release, crash, a
 *   renewal that hangs (before the fix the holder kept running past its lease), a lost row.
 * - PgReplicaBus: targeted, broadcast (self included), order, transactions (rolled back: never
 *   delivered; committed: delivered, to self too), delivered once with racing drains, 64 KiB.
 * - COORDINATOR_IDENTITY_MISMATCH between two coordinators on one schema.
 */
import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createCoordinator } from '../src/coordinator.js';
import { type Db, openPglite, openPostgres } from '../src/db/db.js';
import { migrate } from '../src/db/migrations.js';
import type { Startable } from '../src/lifecycle.js';
import { ALL_REPLICAS, PgReplicaBus } from '../src/replicas/bus.js';
import { SingletonLease } from '../src/replicas/leases.js';
import { isReplicaAlive, liveReplicas, ReplicaRegistry } from '../src/replicas/registry.js';
import { COORDINATOR_KEY_FILE } from '../src/signing/services.js';
import { PG_URL, postgresReachable } from './helpers.js';

const pgUp = await postgresReachable();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const noLog = () => {};

/** Wait until `cond()` holds; fails after `ms` (a bound for a hang, not a speed assertion). */
async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** An admin connection (no schema), closed after the test. */
async function admin(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  cleanups.push(() => c.end());
  return c;
}

/** `n` Db handles (own pools of `max`) on one fresh migrated schema, dropped after the test. */
async function shared(n: number, max = 10): Promise<{ dbs: Db[]; schema: string }> {
  const schema = `t_${randomBytes(8).toString('hex')}`;
  const a = await admin();
  await a.query(`CREATE SCHEMA ${schema}`);
  cleanups.push(() => a.query(`DROP SCHEMA ${schema} CASCADE`));
  const dbs: Db[] = [];
  for (let i = 0; i < n; i++) {
    const db = await openPostgres(PG_URL, { schema, max });
    cleanups.push(() => db.close());
    dbs.push(db);
  }
  await migrate(dbs[0] as Db);
  return { dbs, schema };
}

/** Backend pid holding the advisory lock `name` of `db`'s schema. */
async function lockHolderPid(a: pg.Client, db: Db, name: string): Promise<number | undefined> {
  const [k] = await db.query<{ k: string }>(
    "SELECT hashtextextended(coalesce(current_schema(), '') || '/' || $1, 0)::text AS k",
    [name],
  );
  const r = await a.query<{ pid: number }>(
    `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
       AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`,
    [k?.k],
  );
  return r.rows[0]?.pid;
}

describe.skipIf(!pgUp)('Db.lock on PostgreSQL', () => {
  it('two handles: no lost update over 100 contended read-modify-writes, one holder at a time', async () => {
    const { dbs } = await shared(2);
    const [a, b] = dbs as [Db, Db];
    await a.exec('CREATE TABLE counter (n int NOT NULL); INSERT INTO counter VALUES (0)');
    let inside = 0;
    let overlap = 0;
    const bump = (db: Db) =>
      db.lock('counter', async () => {
        inside++;
        if (inside > 1) overlap++;
        const [row] = await db.query<{ n: number }>('SELECT n FROM counter');
        await sleep(Math.floor(Math.random() * 3));
        await db.query('UPDATE counter SET n = $1', [(row?.n ?? 0) + 1]);
        inside--;
      });
    await Promise.all(Array.from({ length: 50 }, () => [bump(a), bump(b)]).flat());
    const [row] = await a.query<{ n: number }>('SELECT n FROM counter');
    expect(row?.n).toBe(100);
    expect(overlap).toBe(0);
  });

  it('a holder whose backend is killed frees the lock; its fn is told through the signal', async () => {
    const { dbs } = await shared(2);
    const [a, b] = dbs as [Db, Db];
    const ad = await admin();
    let release!: () => void;
    let aborted = false;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let entered = false;
    const first = a.lock('k', async (signal) => {
      entered = true;
      signal?.addEventListener('abort', () => {
        aborted = true;
      });
      await held;
      return 'first';
    });
    await until(() => entered, 'the first holder');
    const pid = await lockHolderPid(ad, a, 'k');
    expect(pid).toBeTypeOf('number');
    let second = false;
    const other = b.lock('k', async () => {
      second = true;
    });
    await sleep(200);
    expect(second).toBe(false);
    await ad.query('SELECT pg_terminate_backend($1)', [pid]);
    await other;
    expect(second).toBe(true);
    await until(() => aborted, 'the abort of the first holder');
    release();
    expect(await first).toBe('first');
    // the handle still works, and the lock is free again
    expect(await a.lock('k', async () => 'again')).toBe('again');
  });

  it('waiters do not exhaust a pool of 2: the holder and other queries keep running', async () => {
    const { dbs } = await shared(2, 2);
    const [a, b] = dbs as [Db, Db];
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let entered = false;
    const first = a.lock('k', async () => {
      entered = true;
      await held;
      // fn uses the pool while 20 waiters of this handle and 20 of the other wait
      const [r] = await a.query<{ x: number }>('SELECT 1 AS x');
      return r?.x;
    });
    await until(() => entered, 'the holder');
    let done = 0;
    const waiters = Array.from({ length: 20 }, (_, i) =>
      (i % 2 === 0 ? a : b).lock('k', async () => {
        await (i % 2 === 0 ? a : b).query('SELECT 1');
        done++;
      }),
    );
    await sleep(300);
    expect((await a.query<{ x: number }>('SELECT 2 AS x'))[0]?.x).toBe(2);
    expect((await b.query<{ x: number }>('SELECT 3 AS x'))[0]?.x).toBe(3);
    expect(done).toBe(0);
    release();
    expect(await first).toBe(1);
    await Promise.all(waiters);
    expect(done).toBe(20);
  });

  it('the same lock name in two schemas: two holders at once (a schema is its own instance)', async () => {
    const x = await shared(1);
    const y = await shared(1);
    let both = false;
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const first = (x.dbs[0] as Db).lock('k', () => held);
    await sleep(100);
    await (y.dbs[0] as Db).lock('k', async () => {
      both = true;
    });
    release();
    await first;
    expect(both).toBe(true);
  });
});

describe.skipIf(!pgUp)('Db.listen on PostgreSQL', () => {
  it('delivers notifications; after its backend is killed it reconnects and calls onNotify("") once', async () => {
    const { dbs } = await shared(1);
    const db = dbs[0] as Db;
    const ad = await admin();
    const channel = `chan_${randomBytes(6).toString('hex')}`;
    const got: string[] = [];
    const stop = await (db.listen as NonNullable<Db['listen']>)(channel, (p) => got.push(p));
    cleanups.push(stop);
    expect(got).toEqual(['']);
    await ad.query('SELECT pg_notify($1, $2)', [channel, 'hello']);
    await until(() => got.includes('hello'), 'the notification');
    const r = await ad.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE query = $1', [
      `LISTEN ${channel}`,
    ]);
    expect(r.rows.length).toBe(1);
    got.length = 0;
    await ad.query('SELECT pg_terminate_backend($1)', [r.rows[0]?.pid]);
    await until(() => got.length > 0, 'the reconnect');
    await sleep(1500);
    expect(got).toEqual(['']);
    await ad.query('SELECT pg_notify($1, $2)', [channel, 'again']);
    await until(() => got.includes('again'), 'a notification after the reconnect');
    await stop();
    await ad.query('SELECT pg_notify($1, $2)', [channel, 'after stop']);
    await sleep(300);
    expect(got).not.toContain('after stop');
  });
});

describe.skipIf(!pgUp)('ReplicaRegistry on PostgreSQL', () => {
  it('start, heartbeat, stop; liveness with a short ttl; cleanup of what dead replicas left', async () => {
    const { dbs } = await shared(3);
    const [a, b, obs] = dbs as [Db, Db, Db];
    const options = { heartbeatMs: 100, ttlMs: 800, leaseMs: 1000, busPollMs: 200 };
    const ra = new ReplicaRegistry({ db: a, options, log: noLog });
    const rb = new ReplicaRegistry({ db: b, options, log: noLog });
    cleanups.push(
      () => ra.stop(),
      () => rb.stop(),
    );
    await ra.start();
    await rb.start();
    const [row] = await obs.query<{ pid: number; stopped_at: unknown }>(
      'SELECT pid, stopped_at FROM coordinator_replicas WHERE replica_id = $1',
      [ra.id],
    );
    expect(row).toEqual({ pid: process.pid, stopped_at: null });
    expect(await liveReplicas(obs, options.ttlMs)).toEqual([ra.id, rb.id].sort());
    // the heartbeat keeps both alive well past the ttl
    await sleep(options.ttlMs * 2);
    expect(await liveReplicas(obs, options.ttlMs)).toEqual([ra.id, rb.id].sort());
    // b leaves device routes and a queued message, then "crashes": its pool closes, no stop()
    await obs.query(
      "INSERT INTO device_connections VALUES ('dev-b', 'peer-b', $1, now()), ('dev-a', 'peer-a', $2, now())",
      [rb.id, ra.id],
    );
    await obs.query(
      "INSERT INTO replica_messages (target, topic, sender, body, created_at) VALUES ($1, 't', $2, '\\x00', now()), ($2, 't', $1, '\\x00', now())",
      [rb.id, ra.id],
    );
    await b.close();
    await until(async () => !(await isReplicaAlive(obs, rb.id, options.ttlMs)), 'b dead');
    expect(await isReplicaAlive(obs, ra.id, options.ttlMs)).toBe(true);
    expect(await liveReplicas(obs, options.ttlMs)).toEqual([ra.id]);
    await until(
      async () =>
        (await obs.query('SELECT 1 FROM replica_messages WHERE target = $1', [rb.id])).length === 0 &&
        (await obs.query("SELECT 1 FROM device_connections WHERE device_id = 'dev-b'")).length === 0,
      "the cleanup of b's rows by a's heartbeat",
    );
    // a's own rows stay
    expect((await obs.query("SELECT 1 FROM device_connections WHERE device_id = 'dev-a'")).length).toBe(1);
    expect((await obs.query('SELECT 1 FROM replica_messages WHERE target = $1', [ra.id])).length).toBe(1);
    // a clean stop: dead at once
    await ra.stop();
    expect(await isReplicaAlive(obs, ra.id, options.ttlMs)).toBe(false);
    const [stopped] = await obs.query<{ s: boolean }>(
      'SELECT stopped_at IS NOT NULL AS s FROM coordinator_replicas WHERE replica_id = $1',
      [ra.id],
    );
    expect(stopped?.s).toBe(true);
  });
});

/** A component recording who runs; a start while another runs is a violation. */
function probes() {
  const running = new Set<string>();
  const violations: string[] = [];
  let starts = 0;
  const make = (name: string): Startable => ({
    async start() {
      starts++;
      if (running.size > 0) violations.push(`${name} started while ${[...running].join(',')} ran`);
      running.add(name);
    },
    async stop() {
      running.delete(name);
    },
  });
  const timer = setInterval(() => {
    if (running.size > 1) violations.push(`sampled ${[...running].join(',')}`);
  }, 5);
  cleanups.push(async () => clearInterval(timer));
  return { running, violations, make, starts: () => starts };
}

describe.skipIf(!pgUp)('SingletonLease on PostgreSQL', () => {
  const leaseMs = 600;
  function contenders(dbs: Db[], p: ReturnType<typeof probes>) {
    return dbs.map((db, i) => {
      const l = new SingletonLease({
        db,
        owner: `replica-${i}`,
        name: 'watcher:test',
        leaseMs,
        component: p.make(`replica-${i}`),
        log: noLog,
      });
      cleanups.push(() => l.stop());
      return l;
    });
  }

  it('three contenders: exactly one runs; stop() hands over within a poll; a crash after the lease', async () => {
    const { dbs } = await shared(4);
    const obs = dbs[3] as Db;
    const p = probes();
    const ls = contenders(dbs.slice(0, 3), p);
    await Promise.all(ls.map((l) => l.start()));
    await until(() => p.running.size === 1, 'one holder');
    await sleep(leaseMs * 2);
    expect(ls.filter((l) => l.held).length).toBe(1);
    expect(p.starts()).toBe(1);
    // clean stop: the lease row ends at once, another takes over
    const first = ls.find((l) => l.held) as SingletonLease;
    await first.stop();
    const [row] = await obs.query<{ over: boolean }>(
      "SELECT lease_until <= now() AS over FROM coordinator_leases WHERE name = 'watcher:test'",
    );
    expect(row?.over).toBe(true);
    await until(() => p.running.size === 1, 'the takeover after stop()');
    // crash: the holder's database goes away (its timers keep running, nothing released)
    const second = ls.find((l) => l.held) as SingletonLease;
    await dbs[ls.indexOf(second)]?.close();
    await until(() => !second.held, 'the crashed holder to stop its component', leaseMs * 10);
    await until(() => p.running.size === 1, 'the takeover after the crash', leaseMs * 10);
    expect(ls.filter((l) => l.held).length).toBe(1);
    expect(p.violations).toEqual([]);
  });

  it('a holder whose renewal hangs stops its component before its lease can expire', async () => {
    const { dbs } = await shared(2);
    const p = probes();
    const [l] = contenders([dbs[0] as Db], p);
    await (l as SingletonLease).start();
    expect(l?.held).toBe(true);
    // another session locks the lease row: the holder's renewal blocks (a hung database)
    const blocker = new pg.Client({ connectionString: PG_URL });
    await blocker.connect();
    cleanups.push(() => blocker.end());
    const [{ schema } = { schema: '' }] = await (dbs[1] as Db).query<{ schema: string }>(
      'SELECT current_schema() AS schema',
    );
    await blocker.query('BEGIN');
    await blocker.query(`SELECT * FROM ${schema}.coordinator_leases FOR UPDATE`);
    await sleep(leaseMs * 1.5);
    const stillHeld = l?.held;
    await blocker.query('ROLLBACK');
    expect(stillHeld).toBe(false);
    // once the database answers again the lease is renewed or retaken
    await until(() => l?.held === true, 'the holder to run again');
    expect(p.violations).toEqual([]);
  });

  it('a holder that finds another owner on its row stops its component', async () => {
    const { dbs } = await shared(2);
    const p = probes();
    const [l] = contenders([dbs[0] as Db], p);
    await (l as SingletonLease).start();
    expect(l?.held).toBe(true);
    await (dbs[1] as Db).query(
      "UPDATE coordinator_leases SET owner = 'intruder', lease_until = now() + interval '1 hour' WHERE name = 'watcher:test'",
    );
    await until(() => l?.held === false && p.running.size === 0, 'the holder to stop');
  });
  it('acquired_at records when this owner took the lease: kept by its renewals, new when it takes it again', async () => {
    const { dbs } = await shared(2);
    const obs = dbs[1] as Db;
    const p = probes();
    const [l] = contenders([dbs[0] as Db], p);
    const row = async () =>
      (
        await obs.query<{ acquired_at: string; lease_until: string }>(
          `SELECT (extract(epoch FROM acquired_at) * 1e6)::bigint::text AS acquired_at,
             (extract(epoch FROM lease_until) * 1e6)::bigint::text AS lease_until
           FROM coordinator_leases WHERE name = 'watcher:test'`,
        )
      ).map((r) => ({ acquired_at: Number(r.acquired_at), lease_until: Number(r.lease_until) }))[0] as {
        acquired_at: number;
        lease_until: number;
      };
    await (l as SingletonLease).start();
    expect(l?.held).toBe(true);
    const first = await row();
    // renewals by the same owner move lease_until, never acquired_at
    await until(async () => (await row()).lease_until !== first.lease_until, 'a renewal');
    await sleep(leaseMs);
    const renewed = await row();
    expect(renewed.lease_until > first.lease_until).toBe(true);
    expect(renewed.acquired_at).toBe(first.acquired_at);
    // released (stop), then taken again by the same owner: a new acquisition
    await (l as SingletonLease).stop();
    await (l as SingletonLease).start();
    expect(l?.held).toBe(true);
    const again = await row();
    expect(again.acquired_at > first.acquired_at).toBe(true);
    // the same owner takes an expired lease it did not release (its renewals stopped): new too
    await obs.query(
      "UPDATE coordinator_leases SET lease_until = now() - interval '1 second' WHERE name = 'watcher:test'",
    );
    await until(async () => (await row()).acquired_at > again.acquired_at, 'the expired lease taken again');
  });
});

describe.skipIf(!pgUp)('PgReplicaBus on PostgreSQL', () => {
  const options = { heartbeatMs: 200, ttlMs: 5000, leaseMs: 1000, busPollMs: 300 };

  /** `n` replicas (registry + bus, own pools) on one schema, each recording what it receives. */
  async function replicas(n: number) {
    const { dbs } = await shared(n + 1);
    const out = [];
    for (const db of dbs.slice(0, n)) {
      const registry = new ReplicaRegistry({ db, options, log: noLog });
      await registry.start();
      const bus = new PgReplicaBus({ db, replicaId: registry.id, options, log: noLog });
      const got: { topic: string; body: Uint8Array; sender: string }[] = [];
      for (const topic of ['t', 'u'])
        bus.subscribe(topic, (body, sender) => got.push({ topic, body: new Uint8Array(body), sender }));
      await bus.start();
      cleanups.push(
        () => registry.stop(),
        () => bus.stop(),
      );
      out.push({ db, registry, bus, got });
    }
    return { rs: out, obs: dbs[n] as Db };
  }
  const text = (s: string) => new TextEncoder().encode(s);
  const texts = (got: { body: Uint8Array }[]) => got.map((g) => new TextDecoder().decode(g.body));

  it('targeted delivery reaches only its target; a broadcast every live replica, self included', async () => {
    const { rs } = await replicas(3);
    const [a, b, c] = rs as [(typeof rs)[0], (typeof rs)[0], (typeof rs)[0]];
    await a.bus.publish(b.bus.replicaId, 't', text('to b'));
    await until(() => b.got.length === 1, 'b');
    expect(b.got[0]?.sender).toBe(a.bus.replicaId);
    await a.bus.publish(ALL_REPLICAS, 'u', text('all'));
    await until(() => rs.every((r) => r.got.some((g) => g.topic === 'u')), 'the broadcast');
    await sleep(options.busPollMs * 2);
    expect(texts(a.got)).toEqual(['all']);
    expect(texts(b.got)).toEqual(['to b', 'all']);
    expect(texts(c.got)).toEqual(['all']);
  });

  it("keeps one publisher's order over 500 messages, and passes a 64 KiB body", async () => {
    const { rs } = await replicas(2);
    const [a, b] = rs as [(typeof rs)[0], (typeof rs)[0]];
    for (let i = 0; i < 500; i++) await a.bus.publish(b.bus.replicaId, 't', text(String(i)));
    await until(() => b.got.length === 500, '500 messages');
    expect(texts(b.got)).toEqual(Array.from({ length: 500 }, (_, i) => String(i)));
    const big = new Uint8Array(randomBytes(64 * 1024));
    await a.bus.publish(b.bus.replicaId, 'u', big);
    await until(() => b.got.length === 501, 'the large body');
    expect(Buffer.from(b.got[500]?.body ?? []).equals(Buffer.from(big))).toBe(true);
  });

  it('a publish inside a rolled-back transaction is never delivered; inside a committed one it is', async () => {
    const { rs } = await replicas(2);
    const [a, b] = rs as [(typeof rs)[0], (typeof rs)[0]];
    await expect(
      a.db.tx(async (q) => {
        await a.bus.publish(b.bus.replicaId, 't', text('rolled back: b'), q);
        await a.bus.publish(a.bus.replicaId, 't', text('rolled back: self'), q);
        await a.bus.publish(ALL_REPLICAS, 't', text('rolled back: all'), q);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    await a.db.tx(async (q) => {
      await a.bus.publish(b.bus.replicaId, 'u', text('committed: b'), q);
      await a.bus.publish(a.bus.replicaId, 'u', text('committed: self'), q);
      await a.bus.publish(ALL_REPLICAS, 'u', text('committed: all'), q);
    });
    await until(() => a.got.length === 2 && b.got.length === 2, 'the committed messages');
    await sleep(options.busPollMs * 3);
    expect(texts(a.got)).toEqual(['committed: self', 'committed: all']);
    expect(texts(b.got)).toEqual(['committed: b', 'committed: all']);
  });

  it('two drains racing on one queue deliver each message once', async () => {
    const { rs, obs } = await replicas(1);
    const a = rs[0] as (typeof rs)[0];
    // a second bus with the SAME replica id on another pool: two drainers of one queue
    const twinDb = await openPostgres(PG_URL, {
      schema: (await obs.query<{ s: string }>('SELECT current_schema() AS s'))[0]?.s as string,
    });
    cleanups.push(() => twinDb.close());
    const twin = new PgReplicaBus({ db: twinDb, replicaId: a.bus.replicaId, options, log: noLog });
    const twinGot: string[] = [];
    twin.subscribe('t', (body) => twinGot.push(new TextDecoder().decode(body)));
    await twin.start();
    cleanups.push(() => twin.stop());
    const sender = new PgReplicaBus({ db: obs, replicaId: 'sender', options, log: noLog });
    await Promise.all(
      Array.from({ length: 20 }, async (_, k) => {
        for (let i = 0; i < 30; i++) {
          await sender.publish(a.bus.replicaId, 't', text(`${k}:${i}`));
          if (i % 5 === 0) {
            a.bus.drain();
            twin.drain();
          }
        }
      }),
    );
    await until(() => a.got.length + twinGot.length >= 600, 'every message');
    await sleep(options.busPollMs * 2);
    const all = [...texts(a.got), ...twinGot];
    expect(all.length).toBe(600);
    expect(new Set(all).size).toBe(600);
  });
});

describe('PgReplicaBus on PGlite (one process)', () => {
  it('delivers in process; a rolled-back transaction delivers nothing, a committed one delivers', async () => {
    const db = await openPglite();
    cleanups.push(() => db.close());
    await migrate(db);
    const options = { heartbeatMs: 200, ttlMs: 5000, leaseMs: 1000, busPollMs: 100 };
    const bus = new PgReplicaBus({ db, replicaId: 'only', options, log: noLog });
    const got: string[] = [];
    bus.subscribe('t', (b) => got.push(new TextDecoder().decode(b)));
    await bus.start();
    cleanups.push(() => bus.stop());
    await bus.publish(ALL_REPLICAS, 't', new TextEncoder().encode('now'));
    await until(() => got.length === 1, 'the direct message');
    await expect(
      db.tx(async (q) => {
        await bus.publish('only', 't', new TextEncoder().encode('rolled back'), q);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    await db.tx(async (q) => {
      await bus.publish(ALL_REPLICAS, 't', new TextEncoder().encode('committed'), q);
    });
    await until(() => got.length === 2, 'the committed message');
    await sleep(300);
    expect(got).toEqual(['now', 'committed']);
  });
});

describe.skipIf(!pgUp)('COORDINATOR_IDENTITY_MISMATCH', () => {
  it('a second coordinator with another coordinator-p2p.key is refused; with the key copied both start', async () => {
    const { dbs } = await shared(3);
    const dirs = await Promise.all([0, 1, 2].map(() => mkdtemp(join(tmpdir(), 'custodian-replica-'))));
    cleanups.push(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
    const make = (i: number) =>
      createCoordinator({
        db: dbs[i] as Db,
        dataDir: dirs[i] as string,
        mode: 'development',
        listen: { port: 0 },
        logger: false,
        signing: { enabled: true, presignaturePool: 0 },
        transfers: { runPipeline: false },
        replicas: { heartbeatMs: 200, ttlMs: 2000, leaseMs: 1000, busPollMs: 200 },
      });
    const first = await make(0);
    cleanups.push(() => first.stop());
    await expect(make(1)).rejects.toMatchObject({ code: 'COORDINATOR_IDENTITY_MISMATCH' });
    await copyFile(join(dirs[0] as string, COORDINATOR_KEY_FILE), join(dirs[2] as string, COORDINATOR_KEY_FILE));
    // and the webhook KEK (operator guide), else WEBHOOK_KEK_MISMATCH
    await copyFile(join(dirs[0] as string, 'webhook-kek.key'), join(dirs[2] as string, 'webhook-kek.key'));
    const third = await make(2);
    cleanups.push(() => third.stop());
    expect(third.signing?.peerId).toBe(first.signing?.peerId);
  });
});
