/**
 * The device hub across coordinator replicas (issue #25): a phone's WebSocket is held by ONE
 * replica, anything may start on any other. This file is what the hub (`hub.ts`) needs for that,
 * on the replica bus (`replicas/bus.ts`) and the `device_connections` table (migration 16):
 *
 * - **Routes** ({@link DeviceRoutes}): at an accepted hello the hub records `(device_id,
 *   mpc_peer_id, replica_id, connected_at)`; at the close, replacement or revocation of THAT
 *   connection it deletes the row only when it is still its own (same replica, same
 *   `connected_at`): a newer connection, here or elsewhere, wins. Rows of dead replicas are deleted
 *   by the registry's cleanup, and every lookup here reads only routes of live replicas.
 * - **Topics** ({@link HUB_TOPICS}): broadcasts (approval requests and withdrawals, revocations,
 *   pushes of signed policies and approver revocations, "connected here") that every replica acts
 *   on for its own sockets, and messages to one replica (a ceremony invitation or abort for the
 *   phone it holds, a relay frame for it, a ceremony answer for the replica running the ceremony:
 *   topic {@link ceremonyTopic}).
 * - **Bodies** ({@link packBody}): a small JSON header (ids, kinds; never a secret) and the raw
 *   bytes it carries (a signed control request, a device's encoded `ControlResponse`, a relayed
 *   `SignedEnvelope`) without re-encoding: u32 big-endian header length, header, payload.
 * - **Remote ceremonies** ({@link DeviceRoutes.runRemote}): the originator sends the invitation to
 *   the holder and waits for the answer on the ceremony's topic; it gives up when the device leaves
 *   the holder (the holder says so: "disconnected"), when the holder stops or dies (checked every
 *   third of the replica TTL) and at the ceremony's deadline.
 * - **Relay order** ({@link DeviceRoutes.forward}): frames for one destination peer go through one
 *   chain (route lookup, then publish), so they are published, hence delivered, in order.
 */
import { bytesToHex } from '@custodian/crypto';
import type { Queryable } from '../db/db.js';
import { ALL_REPLICAS, type ReplicaBus } from '../replicas/bus.js';
import { isReplicaAlive, liveReplicaSql } from '../replicas/registry.js';
import type { HubLog } from './hub-types.js';

/** Bus topics of the device hub. */
export const HUB_TOPICS = {
  /**
   * Broadcast: `{ op: 'add', deviceId, requestId, intent }` or `{ op: 'cancel', deviceId, requestId }`
   * (withdrawn, or answered by the device on the sender).
   */
  approvals: 'hub.approvals',
  /** Broadcast: `{ deviceId, status }`: the device left APPROVED. */
  revoke: 'hub.revoke',
  /** Broadcast: `{ kind: 'policies', signed }` or `{ kind: 'revocations', revoked }` for every phone. */
  push: 'hub.push',
  /** Broadcast: `{ deviceId }` connected on the sender: another replica closes its older socket of it. */
  connected: 'hub.connected',
  /** To the holder: `{ origin, deviceId, ceremonyId, deadlineUnixMs }` + the signed control request. */
  invite: 'hub.ceremony.invite',
  /** To the holder: `{ deviceId, ceremonyId }` + the signed abort control request. */
  abort: 'hub.ceremony.abort',
  /** To the holder: `{ from, to, direction }` + the relayed envelope. */
  relay: 'hub.relay',
} as const;

/** Topic of the answers of one ceremony (to the replica running it); `ceremonyIdHex` lower-case hex. */
export const ceremonyTopic = (ceremonyIdHex: string) => `hub.ceremony.${ceremonyIdHex}`;

/** Header of an answer on {@link ceremonyTopic}. */
export type RemoteAnswerHeader =
  | { deviceId: string; kind: 'result' }
  | { deviceId: string; kind: 'gone'; reason: string }
  | { deviceId: string; kind: 'refused'; status: string };

/** Encode a bus body: u32 BE length of the JSON header, the header, the payload. */
export function packBody(header: unknown, payload: Uint8Array = new Uint8Array()): Uint8Array {
  const h = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(4 + h.length + payload.length);
  new DataView(out.buffer).setUint32(0, h.length);
  out.set(h, 4);
  out.set(payload, 4 + h.length);
  return out;
}

/**
 * Decode a body of {@link packBody}.
 * @throws Error when the body is shorter than its header says (or the header is not JSON)
 */
export function unpackBody<T>(body: Uint8Array): { header: T; payload: Uint8Array } {
  if (body.length < 4) throw new Error('hub bus body: truncated');
  const n = new DataView(body.buffer, body.byteOffset, body.byteLength).getUint32(0);
  if (body.length < 4 + n) throw new Error('hub bus body: truncated');
  const header = JSON.parse(new TextDecoder().decode(body.subarray(4, 4 + n))) as T;
  return { header, payload: body.subarray(4 + n) };
}

/** What the hub takes to work across replicas (absent: one replica, nothing leaves the process). */
export interface HubReplicaComponents {
  /** The replica bus (its `replicaId` is this replica). */
  bus: ReplicaBus;
  /** The coordinator's database (`device_connections`, `coordinator_replicas`). */
  db: Queryable;
  /** A replica silent for this long is dead (ms; the registry's `ttlMs`). */
  ttlMs: number;
}

/** A remote ceremony's outcome at the originator (the holder's answer). */
export type RemoteOutcome = { kind: 'result'; response: Uint8Array } | { kind: 'refused'; status: string };

/** Device routes among replicas, remote ceremonies and ordered relay forwarding (module comment). */
export class DeviceRoutes {
  readonly #c: HubReplicaComponents;
  readonly #log: HubLog;
  /** Tail of the forwarding chain per destination peer id. */
  readonly #chains = new Map<string, Promise<unknown>>();

  constructor(c: HubReplicaComponents, log: HubLog) {
    this.#c = c;
    this.#log = log;
  }

  /** This replica's id. */
  get replicaId(): string {
    return this.#c.bus.replicaId;
  }

  /** The bus (subscriptions of the hub). */
  get bus(): ReplicaBus {
    return this.#c.bus;
  }

  /** Record that `deviceId` is connected here now; returns the row's `connected_at` (its token for {@link drop}). */
  async record(deviceId: string, mpcPeerId: string): Promise<string> {
    const [row] = await this.#c.db.query<{ connected_at: string }>(
      `INSERT INTO device_connections (device_id, mpc_peer_id, replica_id, connected_at) VALUES ($1, $2, $3, clock_timestamp())
       ON CONFLICT (device_id) DO UPDATE SET mpc_peer_id = EXCLUDED.mpc_peer_id, replica_id = EXCLUDED.replica_id,
         connected_at = EXCLUDED.connected_at
       RETURNING connected_at::text AS connected_at`,
      [deviceId, mpcPeerId, this.replicaId],
    );
    return (row as { connected_at: string }).connected_at;
  }

  /** Delete the route of one connection of this replica (`connectedAt` from {@link record}); a newer one stays. */
  async drop(deviceId: string, connectedAt: string): Promise<void> {
    await this.#c.db.query(
      'DELETE FROM device_connections WHERE device_id = $1 AND replica_id = $2 AND connected_at = $3::timestamptz',
      [deviceId, this.replicaId, connectedAt],
    );
  }

  /**
   * Restore the routes of this replica's connections that are missing (a replica whose heartbeat
   * was late for a TTL had its routes deleted by the others' cleanup): each `(device id, MPC peer
   * id, connected_at token)` is inserted again unless the device has a route (another replica's
   * newer connection stays).
   */
  async reassert(conns: readonly { deviceId: string; mpcPeerId: string; token: string }[]): Promise<void> {
    if (conns.length === 0) return;
    await this.#c.db.query(
      `INSERT INTO device_connections (device_id, mpc_peer_id, replica_id, connected_at)
       SELECT d, p, $4, t::timestamptz FROM unnest($1::text[], $2::text[], $3::text[]) AS x(d, p, t)
       ON CONFLICT (device_id) DO NOTHING`,
      [conns.map((c) => c.deviceId), conns.map((c) => c.mpcPeerId), conns.map((c) => c.token), this.replicaId],
    );
  }

  /** Delete every route of this replica (its hub stops). */
  async dropAll(): Promise<void> {
    await this.#c.db.query('DELETE FROM device_connections WHERE replica_id = $1', [this.replicaId]);
  }

  /** The live replica holding `deviceId` (this one included) and the device's MPC peer id; undefined: connected nowhere. */
  async holder(deviceId: string): Promise<{ replicaId: string; mpcPeerId: string } | undefined> {
    const [row] = await this.#c.db.query<{ replica_id: string; mpc_peer_id: string }>(
      `SELECT d.replica_id, d.mpc_peer_id FROM device_connections d JOIN coordinator_replicas r ON r.replica_id = d.replica_id
       WHERE d.device_id = $1 AND ${liveReplicaSql('$2')}`,
      [deviceId, this.#c.ttlMs],
    );
    return row ? { replicaId: row.replica_id, mpcPeerId: row.mpc_peer_id } : undefined;
  }

  /** The live replica holding the device of MPC peer id `mpcPeerId`; undefined: connected nowhere. */
  async holderOfPeer(mpcPeerId: string): Promise<string | undefined> {
    const [row] = await this.#c.db.query<{ replica_id: string }>(
      `SELECT d.replica_id FROM device_connections d JOIN coordinator_replicas r ON r.replica_id = d.replica_id
       WHERE d.mpc_peer_id = $1 AND ${liveReplicaSql('$2')} ORDER BY d.connected_at DESC LIMIT 1`,
      [mpcPeerId, this.#c.ttlMs],
    );
    return row?.replica_id;
  }

  /** Device ids connected on any live replica (lower case). */
  async online(): Promise<string[]> {
    const rows = await this.#c.db.query<{ device_id: string }>(
      `SELECT d.device_id FROM device_connections d JOIN coordinator_replicas r ON r.replica_id = d.replica_id
       WHERE ${liveReplicaSql('$1')} ORDER BY d.device_id`,
      [this.#c.ttlMs],
    );
    return rows.map((r) => r.device_id);
  }

  /** Publish to every replica (this one too: the hub's handlers skip their own messages). */
  broadcast(topic: string, header: unknown, payload?: Uint8Array): void {
    this.#c.bus.publish(ALL_REPLICAS, topic, packBody(header, payload)).catch((e: unknown) =>
      this.#log('warn', 'hub: broadcast to the other replicas failed', {
        topic,
        err: e instanceof Error ? e.message : String(e),
      }),
    );
  }

  /** Publish to one replica. */
  send(target: string, topic: string, header: unknown, payload?: Uint8Array): Promise<void> {
    return this.#c.bus.publish(target, topic, packBody(header, payload));
  }

  /**
   * Forward a relay frame for the device of MPC peer id `to` to the live replica holding it, after
   * every frame forwarded earlier for `to` (one chain per destination).
   * @returns whether a replica other than this one holds it (false: connected nowhere else)
   */
  forward(to: string, header: { from: string; to: string; direction: string }, envelope: Uint8Array): Promise<boolean> {
    const prev = this.#chains.get(to) ?? Promise.resolve();
    const next = prev.then(async () => {
      const holder = await this.holderOfPeer(to);
      if (holder === undefined || holder === this.replicaId) return false;
      await this.send(holder, HUB_TOPICS.relay, header, envelope);
      return true;
    });
    const tail = next.catch(() => false);
    this.#chains.set(to, tail);
    void tail.then(() => {
      if (this.#chains.get(to) === tail) this.#chains.delete(to);
    });
    return next;
  }

  /**
   * Run a device's part of a ceremony on the replica `holder` holding it: send the signed
   * invitation there and wait for the device's answer on the ceremony's topic.
   * @returns the device's raw `ControlResponse`, or `refused` (the holder found it not APPROVED)
   * @throws Error when the device disconnects there ("… disconnected during the ceremony"), the
   *   holder stops or dies ("replica … holding device … stopped or died …"), or at the deadline
   *   ("no answer … by the ceremony deadline")
   */
  runRemote(inv: {
    holder: string;
    deviceId: string;
    ceremonyId: Uint8Array;
    deadlineUnixMs: number;
    signedControl: Uint8Array;
  }): Promise<RemoteOutcome> {
    const cid = bytesToHex(inv.ceremonyId);
    const { holder, deviceId } = inv;
    return new Promise<RemoteOutcome>((resolve, reject) => {
      let done = false;
      const finish = (f: () => void) => {
        if (done) return;
        done = true;
        off();
        clearTimeout(deadline);
        clearTimeout(watch);
        f();
      };
      const off = this.#c.bus.subscribe(ceremonyTopic(cid), (body) => {
        let m: { header: RemoteAnswerHeader; payload: Uint8Array };
        try {
          m = unpackBody<RemoteAnswerHeader>(body);
        } catch {
          this.#log('warn', 'hub: malformed ceremony answer from another replica', { device: deviceId });
          return;
        }
        if (m.header.deviceId !== deviceId) return;
        const h = m.header;
        if (h.kind === 'result') finish(() => resolve({ kind: 'result', response: Uint8Array.from(m.payload) }));
        else if (h.kind === 'refused') finish(() => resolve({ kind: 'refused', status: h.status }));
        else finish(() => reject(new Error(h.reason)));
      });
      // a little after the deadline (an answer sent at the deadline still crosses the bus)
      const deadline = setTimeout(
        () =>
          finish(() =>
            reject(new Error(`no answer from device ${deviceId} (on replica ${holder}) by the ceremony deadline`)),
          ),
        Math.max(0, inv.deadlineUnixMs - Date.now() + 1000),
      );
      deadline.unref?.();
      let watch: NodeJS.Timeout | undefined;
      const check = () => {
        watch = setTimeout(
          () => {
            isReplicaAlive(this.#c.db, holder, this.#c.ttlMs)
              .then((alive) => {
                if (!alive)
                  finish(() =>
                    reject(
                      new Error(`replica ${holder} holding device ${deviceId} stopped or died during the ceremony`),
                    ),
                  );
                else if (!done) check();
              })
              .catch(() => {
                if (!done) check();
              });
          },
          Math.max(100, Math.floor(this.#c.ttlMs / 3)),
        );
        watch.unref?.();
      };
      check();
      this.send(
        holder,
        HUB_TOPICS.invite,
        { origin: this.replicaId, deviceId, ceremonyId: cid, deadlineUnixMs: inv.deadlineUnixMs },
        inv.signedControl,
      ).catch((e: unknown) => finish(() => reject(e instanceof Error ? e : new Error(String(e)))));
    });
  }
}
