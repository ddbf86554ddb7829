/**
 * The webhook outbox (DESIGN.md §7): an event is a row of `webhook_events` written in the SAME
 * database transaction as the change it announces, together with one `webhook_notifications` row
 * (a delivery attempt series, seed §2 "Webhook notification") per webhook of the profile that is
 * subscribed to the event type. A rolled-back change therefore leaves no event, and a committed
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
 */
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/db.js';
import type { Clock } from '../util.js';
import { WEBHOOK_EVENT_TYPE_SET, type WebhookEventType } from './events.js';

/** Input of {@link emitEvent}. */
export interface EmitEventInput {
  /** Profile whose webhooks receive the event (UUID). */
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
 * the worker picks it up after the transaction commits.
 * @param q an open transaction (`db.tx` callback argument) — passing the database itself would
 *   break the all-or-nothing guarantee, so always pass the transaction of the change
 * @param clock time source of the event's `timestamp` (ISO 8601 UTC, millisecond precision)
 * @throws TypeError for an unknown event type or a `data` that is not a plain object
 */
export async function emitEvent(q: Queryable, clock: Clock, input: EmitEventInput): Promise<EmittedEvent> {
  if (!WEBHOOK_EVENT_TYPE_SET.has(input.type)) throw new TypeError(`unknown webhook event type ${String(input.type)}`);
  if (input.data === null || typeof input.data !== 'object' || Array.isArray(input.data)) {
    throw new TypeError('event data must be a JSON object');
  }
  const eventId = randomUUID();
  const now = clock();
  const body = JSON.stringify({
    event_id: eventId,
    event_type: input.type,
    profile_id: input.profileId,
    timestamp: now.toISOString(),
    data: input.data,
  });
  await q.query(
    `INSERT INTO webhook_events (event_id, profile_id, event_type, occurred_at, body) VALUES ($1,$2,$3,$4,$5)`,
    [eventId, input.profileId, input.type, now, body],
  );
  const rows = await q.query<{ notification_id: string }>(
    `INSERT INTO webhook_notifications (notification_id, webhook_id, event_id, status, attempt_count, next_attempt_at,
       created_at, updated_at)
     SELECT gen_random_uuid(), w.webhook_id, $1, 'PENDING', 0, $3, $3, $3
     FROM webhooks w
     WHERE w.profile_id = $2 AND w.deleted_at IS NULL AND w.event_types ? $4
     RETURNING notification_id`,
    [eventId, input.profileId, now, input.type],
  );
  return { event_id: eventId, notification_ids: rows.map((r) => r.notification_id) };
}

/**
 * Emit an instance-wide event (users, devices, server signers, keys, security): one event — with
 * its own `event_id` — per profile of the instance, since every delivery body names one
 * `profile_id` (seed §2). Same transaction rules as {@link emitEvent}.
 */
export async function emitInstanceEvent(
  q: Queryable,
  clock: Clock,
  type: WebhookEventType,
  data: Record<string, unknown>,
): Promise<EmittedEvent[]> {
  const profiles = await q.query<{ profile_id: string }>(
    'SELECT profile_id FROM profiles ORDER BY created_at, profile_id',
  );
  const out: EmittedEvent[] = [];
  for (const p of profiles) out.push(await emitEvent(q, clock, { profileId: p.profile_id, type, data }));
  return out;
}
