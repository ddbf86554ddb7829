/**
 * Singletons among replicas (issue #25): work that exactly one replica may do at a time (a chain's
 * deposit watcher, the key lifecycle scheduler, the presignature reconciliation) runs under a named
 * lease row in `coordinator_leases`. Leader election by lease, on PostgreSQL itself:
 *
 * - acquire: an upsert that succeeds only when the row is absent, expired, or already ours;
 * - renew: the same statement, every `leaseMs / 3`;
 * - lose: a renewal that finds another owner, or no successful renewal for `leaseMs * 2/3` (the
 *   database unreachable), stops the component BEFORE the lease can expire for the others;
 * - takeover: when the holder dies, its lease runs out and the next replica's poll (every
 *   `leaseMs / 3`) takes it: within `leaseMs + leaseMs / 3` of the holder's last renewal;
 * - release: `stop()` stops the component and ends the lease at once, so a clean shutdown hands
 *   over within one poll.
 *
 * Times are the database's (`now()`).
 */
import type { Db } from '../db/db.js';
import type { Startable } from '../lifecycle.js';

/** Dependencies of {@link SingletonLease}. */
export interface SingletonLeaseComponents {
  readonly db: Db;
  /** This replica's id (replicas/registry.ts). */
  readonly owner: string;
  /** Lease name, e.g. `watcher:ethereum-local`, `scheduler:keys`. */
  readonly name: string;
  /** Lease length, ms. */
  readonly leaseMs: number;
  /** What runs while the lease is held (started on acquisition, stopped on loss or stop). */
  readonly component: Startable;
  readonly log: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
}

/** Run one component on exactly one replica at a time. */
export class SingletonLease implements Startable {
  readonly #c: SingletonLeaseComponents;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #stopped = true;
  /** `performance.now()` of the last successful acquisition or renewal. */
  #renewedAt = 0;
  #tick: Promise<void> = Promise.resolve();

  constructor(c: SingletonLeaseComponents) {
    this.#c = c;
  }

  /** The lease name (`watcher:<chain key>`, `scheduler:keys`, …). */
  get name(): string {
    return this.#c.name;
  }

  /** Whether this replica holds the lease and runs the component. */
  get held(): boolean {
    return this.#running;
  }

  /** Try to take the lease at once (the component starts now when it is free), then keep polling. Idempotent. */
  async start(): Promise<void> {
    if (!this.#stopped) return;
    this.#stopped = false;
    await this.#step();
    this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(
      () => {
        this.#tick = this.#step().finally(() => this.#schedule());
      },
      Math.max(50, Math.floor(this.#c.leaseMs / 3)),
    );
    this.#timer.unref();
  }

  async #step(): Promise<void> {
    const { db, owner, name, leaseMs, log } = this.#c;
    let mine: boolean;
    try {
      const rows = await db.query(
        `INSERT INTO coordinator_leases (name, owner, lease_until, acquired_at)
         VALUES ($1, $2, now() + $3::int * interval '1 millisecond', now())
         ON CONFLICT (name) DO UPDATE SET
           lease_until = EXCLUDED.lease_until,
           acquired_at = CASE WHEN coordinator_leases.owner = EXCLUDED.owner THEN coordinator_leases.acquired_at ELSE now() END,
           owner = EXCLUDED.owner
         WHERE coordinator_leases.owner = EXCLUDED.owner OR coordinator_leases.lease_until <= now()
         RETURNING owner`,
        [name, owner, leaseMs],
      );
      mine = rows.length === 1;
      if (mine) this.#renewedAt = performance.now();
    } catch (err) {
      log('warn', 'singleton lease renewal failed', {
        lease: name,
        err: err instanceof Error ? err.message : String(err),
      });
      // unknown: keep running only while the last renewal is surely still valid
      mine = this.#running && performance.now() - this.#renewedAt < (leaseMs * 2) / 3;
    }
    if (this.#stopped) return;
    if (mine && !this.#running) {
      this.#running = true;
      log('info', 'singleton lease acquired', { lease: name, owner });
      try {
        await this.#c.component.start();
      } catch (err) {
        log('warn', 'singleton failed to start: lease released', {
          lease: name,
          err: err instanceof Error ? err.message : String(err),
        });
        this.#running = false;
        await this.#release();
      }
    } else if (!mine && this.#running) {
      this.#running = false;
      log('warn', 'singleton lease lost: stopped', { lease: name, owner });
      await this.#c.component.stop().catch(() => undefined);
    }
  }

  async #release(): Promise<void> {
    await this.#c.db
      .query('UPDATE coordinator_leases SET lease_until = now() WHERE name = $1 AND owner = $2', [
        this.#c.name,
        this.#c.owner,
      ])
      .catch(() => undefined);
  }

  /** Stop the component (when running) and end the lease at once. Idempotent. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#tick.catch(() => undefined);
    if (this.#running) {
      this.#running = false;
      await this.#c.component.stop().catch(() => undefined);
    }
    await this.#release();
  }
}
