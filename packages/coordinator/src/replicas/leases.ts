/**
 * Singletons among replicas (issue #25): work that exactly one replica may do at a time (a chain's
 * deposit watcher, the key lifecycle scheduler, the presignature reconciliation) runs under a named
 * lease row in `coordinator_leases`. Leader election by lease, on PostgreSQL itself:
 *
 * - acquire: an upsert that succeeds only when the row is absent, expired, or already ours;
 * - renew: the same statement, every `leaseMs / 3`; `acquired_at` is when this owner took the
 *   lease: a renewal keeps it, a new acquisition (another owner, or this one taking its own
 *   released or expired lease again) sets it to now;
 * - lose: a renewal that finds another owner, or no successful renewal for `leaseMs * 2/3` (the
 *   database unreachable, or a renewal that hangs: a timer of its own, not the next poll, checks
 *   this deadline, counted from when the last successful renewal was SENT), STARTS stopping the
 *   component before the lease can expire for the others — a component whose stop waits for work
 *   in flight may still be finishing it when the next holder starts, so a lease alone is not a
 *   fence: a singleton whose writes must never overlap fences them with {@link SingletonLease.fence}
 *   (the deposit watcher's commits do; they are also a compare-and-set on the chain's cursor);
 * - takeover: when the holder dies, its lease runs out and the next replica's poll (every
 *   `leaseMs / 3`) takes it: within `leaseMs + leaseMs / 3` of the holder's last renewal;
 * - release: `stop()` stops the component and ends the lease at once, so a clean shutdown hands
 *   over within one poll.
 *
 * Times are the database's (`now()`).
 */
import type { Db, Queryable } from '../db/db.js';
import { CoordinatorError } from '../errors.js';
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
  #deadline: NodeJS.Timeout | undefined;
  #running = false;
  #stopped = true;
  /** `performance.now()` until which the last successful renewal surely holds (sent + leaseMs * 2/3). */
  #validUntil = 0;
  /** The component's starts and stops, one after the other. */
  #chain: Promise<void> = Promise.resolve();

  constructor(c: SingletonLeaseComponents) {
    this.#c = c;
  }

  /** The lease name (`watcher:<chain key>`, `scheduler:keys`, …). */
  get name(): string {
    return this.#c.name;
  }

  /** Whether this replica holds the lease and runs the component. */
  /**
   * Fence a write with this lease: call inside the transaction `q` of the write. It passes only
   * while this replica holds the lease, and holds the lease row FOR SHARE until `q` ends, so the
   * next holder cannot take the lease (its upsert waits for the row) while the write is committing:
   * a write of a holder that lost the lease never lands after the takeover.
   * @throws CoordinatorError LEASE_LOST when this replica does not hold the lease (nothing may be written)
   */
  async fence(q: Queryable): Promise<void> {
    const rows = await q.query(
      'SELECT 1 FROM coordinator_leases WHERE name = $1 AND owner = $2 AND lease_until > now() FOR SHARE',
      [this.#c.name, this.#c.owner],
    );
    if (rows.length === 0)
      throw new CoordinatorError('LEASE_LOST', `LEASE_LOST: this replica no longer holds the lease ${this.#c.name}`);
  }

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
        void this.#step().finally(() => this.#schedule());
      },
      Math.max(50, Math.floor(this.#c.leaseMs / 3)),
    );
    this.#timer.unref();
  }

  async #step(): Promise<void> {
    const { db, owner, name, leaseMs, log } = this.#c;
    const sentAt = performance.now();
    let mine: boolean | undefined;
    try {
      const rows = await db.query(
        `INSERT INTO coordinator_leases (name, owner, lease_until, acquired_at)
         VALUES ($1, $2, now() + $3::int * interval '1 millisecond', now())
         ON CONFLICT (name) DO UPDATE SET
           lease_until = EXCLUDED.lease_until,
           acquired_at = CASE WHEN coordinator_leases.owner = EXCLUDED.owner AND coordinator_leases.lease_until > now()
             THEN coordinator_leases.acquired_at ELSE now() END,
           owner = EXCLUDED.owner
         WHERE coordinator_leases.owner = EXCLUDED.owner OR coordinator_leases.lease_until <= now()
         RETURNING owner`,
        [name, owner, leaseMs],
      );
      mine = rows.length === 1;
    } catch (err) {
      // unknown: the deadline timer stops the component once the last renewal may have run out
      log('warn', 'singleton lease renewal failed', {
        lease: name,
        err: err instanceof Error ? err.message : String(err),
      });
    }
    if (this.#stopped) {
      // stopped while this renewal was in flight: give back what it may have renewed
      if (mine === true) await this.#release();
      return;
    }
    if (mine === true) {
      this.#validUntil = sentAt + (leaseMs * 2) / 3;
      this.#armDeadline();
      if (!this.#running) await this.#transition(true);
    } else if (mine === false && this.#running) {
      log('warn', 'singleton lease lost: stopped', { lease: name, owner });
      await this.#transition(false);
    }
  }

  /** Stop the component when no renewal succeeded by {@link #validUntil}. */
  #armDeadline(): void {
    clearTimeout(this.#deadline);
    this.#deadline = setTimeout(
      () => {
        if (!this.#running) return;
        if (performance.now() < this.#validUntil) return this.#armDeadline();
        this.#c.log('warn', 'singleton lease not renewed in time: stopped', {
          lease: this.#c.name,
          owner: this.#c.owner,
        });
        void this.#transition(false);
      },
      Math.max(0, Math.ceil(this.#validUntil - performance.now()) + 1),
    );
    this.#deadline.unref();
  }

  /** Start (`up`) or stop the component, after the transitions before it. */
  #transition(up: boolean): Promise<void> {
    const { component, log, name, owner } = this.#c;
    const run = async () => {
      if (up) {
        if (this.#running || this.#stopped || performance.now() >= this.#validUntil) return;
        this.#running = true;
        log('info', 'singleton lease acquired', { lease: name, owner });
        try {
          await component.start();
        } catch (err) {
          log('warn', 'singleton failed to start: lease released', {
            lease: name,
            err: err instanceof Error ? err.message : String(err),
          });
          this.#running = false;
          await component.stop().catch(() => undefined);
          await this.#release();
        }
      } else if (this.#running) {
        this.#running = false;
        await component.stop().catch(() => undefined);
      }
    };
    this.#chain = this.#chain.then(run, run);
    return this.#chain;
  }

  async #release(): Promise<void> {
    await this.#c.db
      .query('UPDATE coordinator_leases SET lease_until = now() WHERE name = $1 AND owner = $2', [
        this.#c.name,
        this.#c.owner,
      ])
      .catch(() => undefined);
  }

  /**
   * Stop the component (when running) and end the lease at once. Does not wait for a renewal in
   * flight (a hung database must not hang the shutdown): that renewal, when it completes, gives
   * the lease back. Idempotent.
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#deadline);
    await this.#transition(false);
    await this.#release();
  }
}
