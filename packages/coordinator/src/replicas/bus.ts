/**
 * The cross-replica bus (issue #25): a message one replica addresses to another (a frame for a
 * phone connected there, a ceremony answer for the replica running the ceremony) or to every live
 * replica (a new approval request, a device revocation, a policy activation). On PostgreSQL
 * itself, no broker:
 *
 * - **publish** inserts one `replica_messages` row per recipient (a broadcast is fanned out to the
 *   live replicas at publish time) and `pg_notify('custodian_replicas', <target>)`; given the
 *   transaction `q` of the change it reports, both take effect at its commit (never a message about
 *   a change that rolled back). A message to this replica itself is delivered in process, at once
 *   (or after `q` commits: see {@link ReplicaBus.publish}).
 * - **delivery**: each replica LISTENs on the channel and drains its queue on a notification for it,
 *   and at least every `busPollMs` (a notification lost with a dropped connection costs at most
 *   that). Draining DELETEs its rows (`FOR UPDATE SKIP LOCKED`) and hands them to the topic's
 *   handlers in `seq` order, so each message is delivered once, in the order one publisher sent
 *   them. At-most-once: a replica that dies with messages in flight loses them — every topic is
 *   a push whose state is also in the database (a phone re-reads its pending approvals at hello; a
 *   ceremony waiting for a dead replica's phone hits its deadline).
 * - Rows addressed to a replica that died are deleted by the registry's cleanup.
 *
 * PGlite (one process): no other replica, so every message is delivered in process.
 */
import type { Db, Queryable } from '../db/db.js';
import type { Startable } from '../lifecycle.js';
import { liveReplicaSql, type ReplicaOptions } from './registry.js';

/** Target of a broadcast: every live replica, this one included. */
export const ALL_REPLICAS = '*';
/** The LISTEN/NOTIFY channel. */
export const BUS_CHANNEL = 'custodian_replicas';

/** A handler of one topic: `body` as published, `sender` the publishing replica's id. */
export type BusHandler = (body: Uint8Array, sender: string) => void;

/** The bus as the rooms use it. */
export interface ReplicaBus {
  /** This replica's id. */
  readonly replicaId: string;
  /**
   * Send `body` on `topic` to replica `target` (or {@link ALL_REPLICAS}). With `q` (an open
   * transaction), the message is sent when it commits and not at all when it rolls back (to
   * this replica too: then through the queue, at the commit's NOTIFY; on PGlite at the next drain,
   * ≤ busPollMs). Without `q`, a message to this replica is delivered in process at once.
   * @throws the database's error (the message is not sent; inside `q`, the transaction fails)
   */
  publish(target: string, topic: string, body: Uint8Array, q?: Queryable): Promise<void>;
  /** Receive `topic`; returns the unsubscribe function. A throwing handler is logged, never breaks the bus. */
  subscribe(topic: string, handler: BusHandler): () => void;
}

/** JSON body helpers (topics whose payload is small and not binary). */
export const jsonBody = (v: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(v));
export const readJson = <T>(b: Uint8Array): T => JSON.parse(new TextDecoder().decode(b)) as T;

/** Dependencies of {@link PgReplicaBus}. */
export interface ReplicaBusComponents {
  readonly db: Db;
  readonly replicaId: string;
  readonly options: Pick<ReplicaOptions, 'busPollMs' | 'ttlMs'>;
  readonly log: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
}

/** The bus on the coordinator's database (PostgreSQL: LISTEN/NOTIFY + polled queue; PGlite: in process). */
export class PgReplicaBus implements ReplicaBus, Startable {
  readonly replicaId: string;
  readonly #c: ReplicaBusComponents;
  readonly #handlers = new Map<string, Set<BusHandler>>();
  #unlisten: (() => Promise<void>) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #draining: Promise<void> | undefined;
  #again = false;

  constructor(c: ReplicaBusComponents) {
    this.#c = c;
    this.replicaId = c.replicaId;
  }

  subscribe(topic: string, handler: BusHandler): () => void {
    let set = this.#handlers.get(topic);
    if (!set) {
      set = new Set();
      this.#handlers.set(topic, set);
    }
    set.add(handler);
    return () => set.delete(handler);
  }

  async publish(target: string, topic: string, body: Uint8Array, q?: Queryable): Promise<void> {
    const { db, options } = this.#c;
    const self = target === this.replicaId || target === ALL_REPLICAS;
    if (db.dialect === 'pglite') {
      if (self) await this.#dispatchLater(topic, body, q);
      return;
    }
    const via = q ?? db;
    let rows: { target: string }[] = [];
    if (target === ALL_REPLICAS) {
      rows = await via.query<{ target: string }>(
        `INSERT INTO replica_messages (target, topic, sender, body, created_at)
         SELECT r.replica_id, $1, $2, $3, now() FROM coordinator_replicas r
         WHERE ${liveReplicaSql('$4')} AND r.replica_id <> $2 RETURNING target`,
        [topic, this.replicaId, body, options.ttlMs],
      );
    } else if (target !== this.replicaId) {
      rows = await via.query<{ target: string }>(
        `INSERT INTO replica_messages (target, topic, sender, body, created_at)
         VALUES ($1, $2, $3, $4, now()) RETURNING target`,
        [target, topic, this.replicaId, body],
      );
    }
    for (const t of new Set(rows.map((r) => r.target))) await via.query('SELECT pg_notify($1, $2)', [BUS_CHANNEL, t]);
    if (self) await this.#dispatchLater(topic, body, q);
  }

  /**
   * Local delivery: now (a microtask), or inside a transaction through the table, so a rollback
   * drops it and the commit delivers it (announced by the same NOTIFY, at commit; PGlite: the next
   * poll).
   * @throws the database's error when the row cannot be queued (the caller's transaction fails)
   */
  async #dispatchLater(topic: string, body: Uint8Array, q: Queryable | undefined): Promise<void> {
    if (q === undefined) {
      queueMicrotask(() => this.#dispatch(topic, body, this.replicaId));
      return;
    }
    await q.query(
      `INSERT INTO replica_messages (target, topic, sender, body, created_at) VALUES ($1, $2, $1, $3, now())`,
      [this.replicaId, topic, body],
    );
    if (this.#c.db.dialect === 'postgres') await q.query('SELECT pg_notify($1, $2)', [BUS_CHANNEL, this.replicaId]);
  }

  #dispatch(topic: string, body: Uint8Array, sender: string): void {
    for (const h of this.#handlers.get(topic) ?? []) {
      try {
        h(body, sender);
      } catch (err) {
        this.#c.log('warn', 'bus handler failed', { topic, err: err instanceof Error ? err.message : String(err) });
      }
    }
  }

  /** Listen (PostgreSQL) and start the polling drain. Idempotent. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    const { db } = this.#c;
    if (db.listen !== undefined) {
      this.#unlisten = await db.listen(BUS_CHANNEL, (payload) => {
        if (payload === '' || payload === this.replicaId) this.drain();
      });
    }
    const poll = () => {
      if (!this.#running) return;
      this.#timer = setTimeout(() => {
        this.drain();
        poll();
      }, this.#c.options.busPollMs);
      this.#timer.unref();
    };
    poll();
    this.drain();
  }

  /** Drain this replica's queue now (coalesced: one drain at a time, one more if asked meanwhile). */
  drain(): void {
    if (!this.#running) return;
    if (this.#draining) {
      this.#again = true;
      return;
    }
    this.#draining = this.#drainOnce()
      .catch((err: unknown) =>
        this.#c.log('warn', 'bus drain failed', { err: err instanceof Error ? err.message : String(err) }),
      )
      .finally(() => {
        this.#draining = undefined;
        if (this.#again) {
          this.#again = false;
          this.drain();
        }
      });
  }

  async #drainOnce(): Promise<void> {
    for (;;) {
      const rows = await this.#c.db.query<{ seq: string; topic: string; sender: string; body: Uint8Array }>(
        `DELETE FROM replica_messages WHERE seq IN (
           SELECT seq FROM replica_messages WHERE target = $1 ORDER BY seq LIMIT 256 FOR UPDATE SKIP LOCKED)
         RETURNING seq::text AS seq, topic, sender, body`,
        [this.replicaId],
      );
      rows.sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1));
      for (const r of rows) this.#dispatch(r.topic, new Uint8Array(r.body), r.sender);
      if (rows.length < 256 || !this.#running) return;
    }
  }

  /** Stop listening and polling. Idempotent. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    clearTimeout(this.#timer);
    await this.#unlisten?.().catch(() => undefined);
    this.#unlisten = undefined;
    await this.#draining;
  }
}
