/**
 * The webhook outbox (DESIGN.md §7): an event is a row of `webhook_events` written in the SAME
 * database transaction as the change it announces, together with one `webhook_notifications` row
 * (a delivery attempt series, seed §2 "Webhook notification") per subscribed webhook: for a profile
 * event, the webhooks of that profile; for an instance/security event ({@link INSTANCE_EVENT_TYPES}),
 * the instance-level webhooks (`webhooks.profile_id IS NULL`) only — never a profile's. A rolled-back change therefore leaves no event, and a committed
 * change always has its event; the delivery worker ({@link WebhookWorker}) sends it later.
 *
 * How another module announces a change — inside its own `db.tx`:
 *
 * ```ts
 * await db.tx(async (q) => {
 *   await q.query('UPDATE transfers SET status = $2 …', [...]);
 *   await emitEvent(q, clock, { profileId, type: 'TRANSFER_UPDATED', data: { transfer_id, status, external_id } });
 * });
 * ```
 *
 * The delivery body (seed §2 "Webhook delivery body") is serialised ONCE here and stored as text,
 * so its bytes — and `event_id` — are identical in every retry and redelivery:
 * `{"event_id":…,"event_type":…,"profile_id":…,"timestamp":"…Z","data":{…}}`.
 *
 * Ordering aid (#29): every transfer, wallet and address event ({@link SEQUENCED_EVENTS}) gets
 * `data.sequence` — a counter per resource (per transfer, per wallet, per address) kept in
 * `webhook_resource_sequences` and incremented in the event's transaction, so it survives restarts
 * and is strictly increasing in commit order across the events of one resource (the row lock
 * serialises concurrent transactions on the same resource) — and `data.updated_at` (ISO 8601 UTC;
 * the emitter's value, else the event time). Receivers keep, per resource, the highest sequence
 * applied and ignore older deliveries (docs/integrator-guide.md "Ordering deliveries").
 */
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/db.js';
import type { Clock } from '../util.js';
import {
  INSTANCE_PROFILE_ID,
  isInstanceEvent,
  SEQUENCED_EVENTS,
  WEBHOOK_EVENT_TYPE_SET,
  type WebhookEventType,
} from './events.js';

/** Input of {@link emitEvent}. */
export interface EmitEventInput {
  /**
   * Profile the event belongs to (UUID): its webhooks receive a profile event. For an instance
   * event ({@link INSTANCE_EVENT_TYPES}) that concerns one profile (a policy's signature failure)
   * it is only named in the body; the event goes to the instance-level webhooks.
   */
  readonly profileId: string;
  /** One of the seed §6 event types ({@link WEBHOOK_EVENT_TYPES}). */
  readonly type: WebhookEventType;
  /** The event's `data` object (JSON-serialisable; see the per-type shapes in `events.ts`). No secrets. */
  readonly data: Record<string, unknown>;
}

/** What {@link emitEvent} wrote. */
export interface EmittedEvent {
  /** UUID v4, the receiver's deduplication key (X-Webhook-Event-ID). */
  readonly event_id: string;
  /** Notification ids created (one per subscribed webhook; empty when none is subscribed). */
  readonly notification_ids: string[];
}

/**
 * Write one event and its notifications in the caller's transaction `q`.
 *
 * The first attempt of every notification is due at once (`next_attempt_at` = the event time);
 * the worker picks it up after the transaction commits. Profile events go to the subscribed
 * webhooks of `profileId`; instance events to the subscribed instance-level webhooks.
 * @param q an open transaction (`db.tx` callback argument) — passing the database itself would
 *   break the all-or-nothing guarantee, so always pass the transaction of the change
 * @param clock time source of the event's `timestamp` (ISO 8601 UTC, millisecond precision)
 * @throws TypeError for an unknown event type, a `data` that is not a plain object, or a transfer,
 *   wallet or address event whose `data` lacks its resource id (`transfer_id`, `wallet_id`, `address_id`)
 */
export async function emitEvent(q: Queryable, clock: Clock, input: EmitEventInput): Promise<EmittedEvent> {
  return writeEvent(q, clock, input.profileId, input.type, input.data);
}

/**
 * Emit an instance event that concerns no single profile (users, devices, server signers, keys,
 * logins): ONE event, delivered to the subscribed instance-level webhooks only, its body's
 * `profile_id` the nil UUID ({@link INSTANCE_PROFILE_ID}). Same transaction rules as {@link emitEvent}.
 * @throws TypeError for a type that is not an instance event, or a bad `data`
 */
export async function emitInstanceEvent(
  q: Queryable,
  clock: Clock,
  type: WebhookEventType,
  data: Record<string, unknown>,
): Promise<EmittedEvent> {
  if (!isInstanceEvent(type)) throw new TypeError(`${String(type)} is a profile event; use emitEvent`);
  return writeEvent(q, clock, null, type, data);
}

async function writeEvent(
  q: Queryable,
  clock: Clock,
  profileId: string | null,
  type: WebhookEventType,
  data: Record<string, unknown>,
): Promise<EmittedEvent> {
  if (!WEBHOOK_EVENT_TYPE_SET.has(type)) throw new TypeError(`unknown webhook event type ${String(type)}`);
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new TypeError('event data must be a JSON object');
  }
  const instance = isInstanceEvent(type);
  const eventId = randomUUID();
  const now = clock();
  const body = JSON.stringify({
    event_id: eventId,
    event_type: type,
    profile_id: profileId ?? INSTANCE_PROFILE_ID,
    timestamp: now.toISOString(),
    data: await withOrdering(q, type, data, now),
  });
  await q.query(
    `INSERT INTO webhook_events (event_id, profile_id, event_type, occurred_at, body) VALUES ($1,$2,$3,$4,$5)`,
    [eventId, profileId, type, now, body],
  );
  // Instance events: instance-level webhooks only (profile_id IS NULL); profile events: that profile's.
  const scope = instance ? 'w.profile_id IS NULL' : 'w.profile_id = $4';
  const rows = await q.query<{ notification_id: string }>(
    `INSERT INTO webhook_notifications (notification_id, webhook_id, event_id, status, attempt_count, next_attempt_at,
       created_at, updated_at)
     SELECT gen_random_uuid(), w.webhook_id, $1, 'PENDING', 0, $2, $2, $2
     FROM webhooks w
     WHERE ${scope} AND w.deleted_at IS NULL AND w.event_types ? $3
     RETURNING notification_id`,
    instance ? [eventId, now, type] : [eventId, now, type, profileId],
  );
  return { event_id: eventId, notification_ids: rows.map((r) => r.notification_id) };
}

/**
 * `data` plus `sequence` and `updated_at` for a transfer, wallet or address event; other events unchanged.
 * Increments the resource's counter in `q` (row-locked until the transaction ends).
 */
async function withOrdering(
  q: Queryable,
  type: WebhookEventType,
  data: Record<string, unknown>,
  now: Date,
): Promise<Record<string, unknown>> {
  const resource = SEQUENCED_EVENTS[type];
  if (resource === undefined) return data;
  const id = data[resource.idField];
  if (typeof id !== 'string' || id === '') throw new TypeError(`${type} data needs ${resource.idField}`);
  const [row] = await q.query<{ sequence: string }>(
    `INSERT INTO webhook_resource_sequences (resource_type, resource_id, sequence) VALUES ($1, $2, 1)
     ON CONFLICT (resource_type, resource_id) DO UPDATE SET sequence = webhook_resource_sequences.sequence + 1
     RETURNING sequence`,
    [resource.kind, id],
  );
  const given = data.updated_at;
  const updatedAt = given instanceof Date ? given.toISOString() : typeof given === 'string' ? given : now.toISOString();
  return { ...data, sequence: Number(row!.sequence), updated_at: updatedAt };
}
