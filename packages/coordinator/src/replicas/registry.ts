/**
 * Coordinator replicas (issue #25): several coordinator processes on one PostgreSQL database, any
 * of them serving any client, phone and signer. This file is the membership: each process is a
 * replica with a random `replica_id` (one per start), a row in `coordinator_replicas` and a
 * heartbeat every `heartbeatMs`. A replica whose heartbeat is older than `ttlMs` is dead: the
 * others take over what it held (its device connections' routes, its RUNNING ceremonies, and —
 * through their own expiry — its singleton leases and transfer leases).
 *
 * Times are the DATABASE's (`now()`), never a replica's clock: replicas on machines whose clocks
 * disagree still agree on who is alive. PGlite is one process: the same rows, one replica.
 *
 * The cleanup of what dead replicas left (their bus messages, their device routes, replica rows
 * stopped for a day) runs with every heartbeat, on every replica: each statement is idempotent.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Db, Queryable } from '../db/db.js';
import { CoordinatorError } from '../errors.js';
import type { Startable } from '../lifecycle.js';

/** Timing of the replica machinery (ms). */
export interface ReplicaOptions {
  /** Heartbeat period (default 2 000). */
  readonly heartbeatMs: number;
  /** A replica silent for this long is dead (default 10 000; > 2 heartbeats). */
  readonly ttlMs: number;
  /** Singleton leases (replicas/leases.ts): lease length, renewed every third (default 10 000). */
  readonly leaseMs: number;
  /** The bus (replicas/bus.ts) re-reads its queue at least this often, besides LISTEN/NOTIFY (default 1 000). */
  readonly busPollMs: number;
}

export const DEFAULT_REPLICA_OPTIONS: ReplicaOptions = {
  heartbeatMs: 2000,
  ttlMs: 10_000,
  leaseMs: 10_000,
  busPollMs: 1000,
};

/** SQL condition (on `coordinator_replicas` aliased `r`) of a live replica; `$ttl` is the parameter index of ttlMs. */
export const liveReplicaSql = (ttl: string) =>
  `r.stopped_at IS NULL AND r.heartbeat_at > now() - ${ttl}::int * interval '1 millisecond'`;

/** Ids of the live replicas (heartbeat within `ttlMs`, not stopped). */
export async function liveReplicas(q: Queryable, ttlMs: number): Promise<string[]> {
  const rows = await q.query<{ replica_id: string }>(
    `SELECT r.replica_id FROM coordinator_replicas r WHERE ${liveReplicaSql('$1')} ORDER BY r.replica_id`,
    [ttlMs],
  );
  return rows.map((r) => r.replica_id);
}

/** Whether `replicaId` is a live replica. */
export async function isReplicaAlive(q: Queryable, replicaId: string, ttlMs: number): Promise<boolean> {
  const rows = await q.query(
    `SELECT 1 FROM coordinator_replicas r WHERE r.replica_id = $1 AND ${liveReplicaSql('$2')}`,
    [replicaId, ttlMs],
  );
  return rows.length > 0;
}

/**
 * Record `peerId` as the coordinator identity of this database, or check it against the recorded
 * one: every replica must share ONE libp2p identity (`coordinator-p2p.key`), the one signers
 * (`coordinator.peerId`) and phones (pinned at their first connection) trust.
 * @throws CoordinatorError COORDINATOR_IDENTITY_MISMATCH when the database records another identity
 */
export async function ensureSharedIdentity(db: Db, peerId: string): Promise<void> {
  await db.query(
    'INSERT INTO coordinator_identity (peer_id, created_at) VALUES ($1, now()) ON CONFLICT (singleton) DO NOTHING',
    [peerId],
  );
  const [row] = await db.query<{ peer_id: string }>('SELECT peer_id FROM coordinator_identity');
  if (row !== undefined && row.peer_id !== peerId) {
    throw new CoordinatorError(
      'COORDINATOR_IDENTITY_MISMATCH',
      `COORDINATOR_IDENTITY_MISMATCH: this database belongs to coordinator ${row.peer_id}, but this replica's identity is ${peerId}: ` +
        'every replica must run with the same coordinator-p2p.key (copy it from an existing replica into this ' +
        'replica\'s data dir, mode 0600; docs/operator-guide.md "Several coordinator replicas")',
    );
  }
}

/** Dependencies of {@link ReplicaRegistry}. */
export interface ReplicaRegistryComponents {
  readonly db: Db;
  readonly options: ReplicaOptions;
  /** Log sink (warnings: a heartbeat that failed). */
  readonly log: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
}

/** This process as a replica: its id, its row and its heartbeat. */
export class ReplicaRegistry implements Startable {
  /** This replica's id (random per start of the process). */
  readonly id: string = randomUUID();
  readonly #c: ReplicaRegistryComponents;
  #timer: NodeJS.Timeout | undefined;
  #started = false;
  /** The heartbeat in flight (stop() waits for it: no heartbeat after the stop mark). */
  #beating: Promise<void> = Promise.resolve();

  constructor(c: ReplicaRegistryComponents) {
    this.#c = c;
  }

  get options(): ReplicaOptions {
    return this.#c.options;
  }

  /** Insert this replica's row and start the heartbeat. Idempotent. */
  async start(): Promise<void> {
    if (this.#started) return;
    await this.#c.db.query(
      `INSERT INTO coordinator_replicas (replica_id, host, pid, started_at, heartbeat_at)
       VALUES ($1, $2, $3, now(), now()) ON CONFLICT (replica_id) DO UPDATE SET heartbeat_at = now(), stopped_at = NULL`,
      [this.id, hostname(), process.pid],
    );
    this.#started = true;
    const beat = () => {
      this.#timer = setTimeout(() => {
        this.#beating = this.heartbeat()
          .catch((err: unknown) =>
            this.#c.log('warn', 'replica heartbeat failed', { err: err instanceof Error ? err.message : String(err) }),
          )
          .finally(() => {
            if (this.#started) beat();
          });
      }, this.#c.options.heartbeatMs);
      this.#timer.unref();
    };
    beat();
  }

  /** One heartbeat and the cleanup of what dead replicas left (exposed for tests). */
  async heartbeat(): Promise<void> {
    const { db, options } = this.#c;
    await db.query(
      'UPDATE coordinator_replicas SET heartbeat_at = now() WHERE replica_id = $1 AND stopped_at IS NULL',
      [this.id],
    );
    const dead = `NOT EXISTS (SELECT 1 FROM coordinator_replicas r WHERE r.replica_id = %COL% AND ${liveReplicaSql('$1')})`;
    await db.query(
      `DELETE FROM replica_messages m WHERE ${dead.replace('%COL%', 'm.target')} AND m.created_at < now() - $1::int * interval '1 millisecond'`,
      [options.ttlMs],
    );
    await db.query(`DELETE FROM device_connections d WHERE ${dead.replace('%COL%', 'd.replica_id')}`, [options.ttlMs]);
    await db.query(
      "DELETE FROM coordinator_replicas WHERE heartbeat_at < now() - interval '1 day' AND replica_id <> $1",
      [this.id],
    );
  }

  /** Stop the heartbeat and mark this replica stopped (the others stop routing to it at once). Idempotent. */
  async stop(): Promise<void> {
    if (!this.#started) return;
    this.#started = false;
    clearTimeout(this.#timer);
    await this.#beating;
    await this.#c.db
      .query('UPDATE coordinator_replicas SET stopped_at = now() WHERE replica_id = $1', [this.id])
      .catch(() => undefined);
  }
}
