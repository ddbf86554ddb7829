/**
 * Read side of webhooks for the REST API (seed §4: webhooks, one webhook, its notifications, one
 * notification) and the admin redelivery of a FAILED notification. A `profileId` of null names the
 * instance-level webhooks (admin API only); a profile id never reaches those, nor null a profile's.
 */
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { Page, PageRequest } from '../store.js';
import { type Clock, iso } from '../util.js';

/**
 * A webhook as the REST API returns it (seed §2 "Webhook"; fields beyond URL/types/description are
 * ours). `profile_id` null: an instance-level webhook (admin API only; instance/security events).
 */
export interface WebhookView {
  webhook_id: string;
  profile_id: string | null;
  url: string;
  event_types: string[];
  description: string | null;
  created_at: string;
  updated_at: string;
}

/** One delivery attempt of a notification. */
export interface AttemptView {
  attempt: number;
  scheduled_at: string;
  started_at: string;
  finished_at: string | null;
  response_code: number | null;
  error: string | null;
  duration_ms: number | null;
}

/** A notification (seed §2 "Webhook notification"): one event's delivery series to one webhook. */
export interface NotificationView {
  notification_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: 'PENDING' | 'DELIVERED' | 'FAILED';
  attempt_count: number;
  next_attempt_at: string | null;
  last_response_code: number | null;
  last_error: string | null;
  delivered_at: string | null;
  redeliveries: number;
  created_at: string;
  updated_at: string;
  attempts: AttemptView[];
}

const offset = (p: PageRequest) => (p.page - 1) * p.page_size;

interface NotificationRow {
  notification_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: NotificationView['status'];
  attempt_count: number;
  claim_id: string | null;
  next_attempt_at: Date | null;
  last_response_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  redeliveries: number;
  created_at: Date;
  updated_at: Date;
}

/** Webhook queries and redelivery. */
export class WebhookService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  private webhookView(r: Record<string, unknown>): WebhookView {
    return {
      webhook_id: r.webhook_id as string,
      profile_id: (r.profile_id as string | null) ?? null,
      url: r.url as string,
      event_types: r.event_types as string[],
      description: (r.description as string | null) ?? null,
      created_at: iso(r.created_at as Date)!,
      updated_at: iso(r.updated_at as Date)!,
    };
  }

  /** Registered (not deleted) webhooks of a profile, oldest first, in the page envelope. */
  async listWebhooks(profileId: string, p: PageRequest): Promise<Page<WebhookView>> {
    const rows = await this.db.query<Record<string, unknown>>(
      `SELECT * FROM webhooks WHERE profile_id = $1 AND deleted_at IS NULL ORDER BY created_at, webhook_id
       LIMIT $2 OFFSET $3`,
      [profileId, p.page_size, offset(p)],
    );
    const total =
      (
        await this.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM webhooks WHERE profile_id = $1 AND deleted_at IS NULL',
          [profileId],
        )
      )[0]?.n ?? 0;
    return { data: rows.map((r) => this.webhookView(r)), page: p.page, page_size: p.page_size, total };
  }

  /**
   * One webhook; 404 RESOURCE_NOT_FOUND when unknown, deleted or of another profile.
   * @param profileId the profile, or null for an instance-level webhook (never matches a profile's)
   */
  async getWebhook(profileId: string | null, webhookId: string, q: Queryable = this.db): Promise<WebhookView> {
    const r = (
      await q.query<Record<string, unknown>>(
        'SELECT * FROM webhooks WHERE profile_id IS NOT DISTINCT FROM $1::uuid AND webhook_id = $2 AND deleted_at IS NULL',
        [profileId, webhookId],
      )
    )[0];
    if (r === undefined) throw new ApiError('RESOURCE_NOT_FOUND', 'no such webhook');
    return this.webhookView(r);
  }

  private async attempts(q: Queryable, ids: string[]): Promise<Map<string, AttemptView[]>> {
    const rows = await q.query<{
      notification_id: string;
      attempt: number;
      scheduled_at: Date;
      started_at: Date;
      finished_at: Date | null;
      response_code: number | null;
      error: string | null;
      duration_ms: number | null;
    }>(
      `SELECT notification_id, attempt, scheduled_at, started_at, finished_at, response_code, error, duration_ms
       FROM webhook_attempts WHERE notification_id = ANY($1::uuid[]) ORDER BY notification_id, attempt`,
      [ids],
    );
    const m = new Map<string, AttemptView[]>();
    for (const r of rows) {
      const list = m.get(r.notification_id) ?? [];
      list.push({
        attempt: r.attempt,
        scheduled_at: iso(r.scheduled_at)!,
        started_at: iso(r.started_at)!,
        finished_at: iso(r.finished_at),
        response_code: r.response_code,
        error: r.error,
        duration_ms: r.duration_ms,
      });
      m.set(r.notification_id, list);
    }
    return m;
  }

  private view(r: NotificationRow, attempts: AttemptView[]): NotificationView {
    return {
      notification_id: r.notification_id,
      webhook_id: r.webhook_id,
      event_id: r.event_id,
      event_type: r.event_type,
      status: r.status,
      attempt_count: r.attempt_count,
      // While an attempt is in flight the row holds the claim's lease, not a schedule.
      next_attempt_at: r.status === 'PENDING' && r.claim_id === null ? iso(r.next_attempt_at) : null,
      last_response_code: r.last_response_code,
      last_error: r.last_error,
      delivered_at: iso(r.delivered_at),
      redeliveries: r.redeliveries,
      created_at: iso(r.created_at)!,
      updated_at: iso(r.updated_at)!,
      attempts,
    };
  }

  private static readonly SELECT = `SELECT n.notification_id, n.webhook_id, n.event_id, e.event_type, n.status,
      n.attempt_count, n.claim_id, n.next_attempt_at, n.last_response_code, n.last_error, n.delivered_at,
      n.redeliveries, n.created_at, n.updated_at
    FROM webhook_notifications n JOIN webhook_events e ON e.event_id = n.event_id`;

  /**
   * Notifications of a webhook, newest first, optionally of one status.
   * @throws ApiError RESOURCE_NOT_FOUND for an unknown webhook
   */
  async listNotifications(
    profileId: string | null,
    webhookId: string,
    p: PageRequest,
    status?: NotificationView['status'],
  ): Promise<Page<NotificationView>> {
    await this.getWebhook(profileId, webhookId);
    const params: unknown[] = [webhookId];
    let where = 'n.webhook_id = $1';
    if (status !== undefined) {
      params.push(status);
      where += ` AND n.status = $${params.length}`;
    }
    const rows = await this.db.query<NotificationRow>(
      `${WebhookService.SELECT} WHERE ${where} ORDER BY n.created_at DESC, n.notification_id
       LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, p.page_size, offset(p)],
    );
    const total =
      (
        await this.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM webhook_notifications n WHERE ${where}`,
          params,
        )
      )[0]?.n ?? 0;
    const att = await this.attempts(
      this.db,
      rows.map((r) => r.notification_id),
    );
    return {
      data: rows.map((r) => this.view(r, att.get(r.notification_id) ?? [])),
      page: p.page,
      page_size: p.page_size,
      total,
    };
  }

  /** One notification with its attempts; 404 RESOURCE_NOT_FOUND when unknown. */
  async getNotification(
    profileId: string | null,
    webhookId: string,
    notificationId: string,
    q: Queryable = this.db,
  ): Promise<NotificationView> {
    await this.getWebhook(profileId, webhookId, q);
    const r = (
      await q.query<NotificationRow>(`${WebhookService.SELECT} WHERE n.webhook_id = $1 AND n.notification_id = $2`, [
        webhookId,
        notificationId,
      ])
    )[0];
    if (r === undefined) throw new ApiError('RESOURCE_NOT_FOUND', 'no such notification');
    return this.view(r, (await this.attempts(q, [notificationId])).get(notificationId) ?? []);
  }

  /**
   * Redeliver a FAILED notification: it becomes PENDING with a fresh series of up to five attempts
   * on the seed schedule (first one at once); the same event (same `event_id`, same body bytes).
   * Attempt numbers continue (6–10 for the first redelivery) so the history is kept.
   * @param within extra work in the same transaction (the audit entry)
   * @throws ApiError RESOURCE_NOT_FOUND; CONFLICT when the notification is not FAILED or its
   *   webhook was deleted
   */
  async redeliver(
    profileId: string | null,
    webhookId: string,
    notificationId: string,
    within?: (q: Queryable) => Promise<void>,
  ): Promise<NotificationView> {
    return this.db.tx(async (q) => {
      await this.getWebhook(profileId, webhookId, q);
      const r = (
        await q.query<{ status: string }>(
          'SELECT status FROM webhook_notifications WHERE webhook_id = $1 AND notification_id = $2 FOR UPDATE',
          [webhookId, notificationId],
        )
      )[0];
      if (r === undefined) throw new ApiError('RESOURCE_NOT_FOUND', 'no such notification');
      if (r.status !== 'FAILED') {
        throw new ApiError('CONFLICT', `only FAILED notifications can be redelivered (this one is ${r.status})`);
      }
      const now = this.clock();
      await q.query(
        `UPDATE webhook_notifications SET status = 'PENDING', attempt_base = attempt_count, next_attempt_at = $2,
           claim_id = NULL, redeliveries = redeliveries + 1, updated_at = $2
         WHERE notification_id = $1`,
        [notificationId, now],
      );
      if (within !== undefined) await within(q);
      return this.getNotification(profileId, webhookId, notificationId, q);
    });
  }
}
