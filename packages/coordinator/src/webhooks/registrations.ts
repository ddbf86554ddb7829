/**
 * Webhook registrations of the webhooks room, for the admin API: a profile's webhooks and the
 * instance-level ones (`profileId` null: instance and security events only), with the URL checks
 * (HTTPS; in production every resolved address global unicast), redelivery of a FAILED
 * notification and signing key rotation — each change audited.
 */
import { randomUUID } from 'node:crypto';
import type { AdminOptions } from '../admin/options.js';
import type { AuditLog } from '../audit/service.js';
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import { notFound, type Page, type PageRequest, pageOffset } from '../store.js';
import { type Clock, iso } from '../util.js';
import { isInstanceEvent } from './events.js';
import type { WebhookSigningKeys } from './keys.js';
import type { WebhookService } from './service.js';
import type { WebhookTargetAllowlist } from './target-allowlist.js';
import { checkWebhookTarget, isLoopbackHost } from './targets.js';

/** Dependencies of {@link WebhookRegistrations}. */
export interface WebhookRegistrationComponents {
  readonly db: Db;
  readonly clock: Clock;
  readonly audit: AuditLog;
  /** Notification queries and redelivery. */
  readonly notifications: WebhookService;
  readonly signingKeys: WebhookSigningKeys;
  /** The wallets room's profiles: a profile webhook needs an existing profile. */
  readonly profiles: { requireProfile(q: Queryable, profileId: string): Promise<void> };
  readonly options: Pick<AdminOptions, 'mode'>;
  /** DNS resolution of webhook hosts in production mode (all addresses); default: the system resolver. */
  readonly resolveHost?: ((host: string) => Promise<string[]>) | undefined;
  /** Production exceptions to the SSRF rule (`webhooks.allowedTargets`); default none. */
  readonly allowedTargets?: WebhookTargetAllowlist | undefined;
}

/** Webhook registrations (admin). */
export class WebhookRegistrations {
  constructor(private readonly c: WebhookRegistrationComponents) {}

  /**
   * Check a webhook URL: HTTPS; plain HTTP only to a loopback host and only in development mode.
   * @throws ApiError VALIDATION_FAILED naming `body.url`
   */
  checkWebhookUrl(raw: string): string {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw new ApiError('VALIDATION_FAILED', 'url is not an absolute URL', [
        { field: 'body.url', message: 'must be an absolute URL' },
      ]);
    }
    const okHttp = u.protocol === 'http:' && this.c.options.mode === 'development' && isLoopbackHost(u.hostname);
    if (u.protocol !== 'https:' && !okHttp) {
      throw new ApiError(
        'VALIDATION_FAILED',
        'webhook URLs must use HTTPS (plain HTTP only to loopback in development mode)',
        [{ field: 'body.url', message: 'must be https://' }],
      );
    }
    if (u.hash !== '')
      throw new ApiError('VALIDATION_FAILED', 'url must not have a fragment', [
        { field: 'body.url', message: 'no #fragment' },
      ]);
    return u.toString();
  }

  /**
   * {@link checkWebhookUrl}, then in production mode resolve the host and accept it only when
   * every address is global unicast (SSRF; `webhooks/targets.ts` `nonGlobalReason`) or allowed by
   * `webhooks.allowedTargets`.
   */
  async checkWebhookTarget(raw: string): Promise<string> {
    const url = this.checkWebhookUrl(raw);
    return checkWebhookTarget(url, this.c.options.mode, this.c.resolveHost, this.c.allowedTargets);
  }

  /**
   * Redeliver a FAILED notification (a fresh series of up to five attempts on the seed schedule).
   * @throws ApiError RESOURCE_NOT_FOUND, CONFLICT when it is not FAILED
   */
  async redeliverNotification(actor: string, profileId: string | null, webhookId: string, notificationId: string) {
    return this.c.notifications.redeliver(profileId, webhookId, notificationId, (q) =>
      this.c.audit.record(q, actor, 'webhook.notification_redelivered', 'webhook_notification', notificationId, {
        profile_id: profileId,
        webhook_id: webhookId,
      }),
    );
  }

  /** Rotate the webhook signing key (published now, signs after `leadMs`); audited. */
  async rotateSigningKey(actor: string, leadMs?: number) {
    const k = await this.c.signingKeys.rotate(leadMs);
    await this.c.audit.record(this.c.db, actor, 'webhook.signing_key_rotated', 'webhook_signing_key', k.kid, {
      activates_at: k.activates_at,
    });
    return k;
  }

  private webhookView(r: Record<string, unknown>) {
    return {
      webhook_id: r.webhook_id,
      profile_id: r.profile_id,
      url: r.url,
      event_types: r.event_types,
      description: r.description,
      created_at: iso(r.created_at as Date),
      updated_at: iso(r.updated_at as Date),
    };
  }

  /**
   * Refuse event types of the other scope: a profile webhook takes only profile events, an
   * instance-level one (`profileId` null) only instance/security events (`INSTANCE_EVENT_TYPES` of webhooks/events.ts).
   * @throws ApiError VALIDATION_FAILED naming `body.event_types[i]`
   */
  private checkEventScope(profileId: string | null, types: readonly string[]) {
    const i = types.findIndex((t) => isInstanceEvent(t) !== (profileId === null));
    if (i < 0) return;
    const message =
      profileId === null
        ? `${types[i]} is a profile event: register it on a profile's webhook`
        : `${types[i]} is an instance event: only instance-level webhooks (/admin/v1/webhooks) receive it`;
    throw new ApiError('VALIDATION_FAILED', message, [{ field: `body.event_types[${i}]`, message }]);
  }

  /** One page of the live webhooks of a profile, or of the instance-level ones when `profileId` is null; oldest first. */
  async listWebhooks(profileId: string | null, p: PageRequest) {
    const where = 'WHERE profile_id IS NOT DISTINCT FROM $1::uuid AND deleted_at IS NULL';
    const rows = await this.c.db.query<Record<string, unknown>>(
      `SELECT * FROM webhooks ${where} ORDER BY created_at, webhook_id LIMIT $2 OFFSET $3`,
      [profileId, p.page_size, pageOffset(p)],
    );
    const [count] = await this.c.db.query<{ n: string }>(`SELECT COUNT(*)::text AS n FROM webhooks ${where}`, [
      profileId,
    ]);
    const data = rows.map((r) => this.webhookView(r));
    const page: Page<(typeof data)[number]> = {
      data,
      page: p.page,
      page_size: p.page_size,
      total: Number(count?.n ?? 0),
    };
    return page;
  }

  /** One live webhook of the profile (null: instance-level); 404 RESOURCE_NOT_FOUND otherwise. */
  async getWebhook(profileId: string | null, id: string, q: Queryable = this.c.db) {
    const r = (
      await q.query<Record<string, unknown>>(
        'SELECT * FROM webhooks WHERE profile_id IS NOT DISTINCT FROM $1::uuid AND webhook_id = $2 AND deleted_at IS NULL',
        [profileId, id],
      )
    )[0];
    if (r === undefined) throw notFound('webhook');
    return this.webhookView(r);
  }

  /**
   * Register a webhook of a profile, or an instance-level one (`profileId` null); audited.
   * @throws ApiError VALIDATION_FAILED (URL, or an event type of the other scope); RESOURCE_NOT_FOUND (profile)
   */
  async createWebhook(
    actor: string,
    profileId: string | null,
    input: { url: string; event_types: string[]; description?: string | null },
  ) {
    this.checkEventScope(profileId, input.event_types);
    const url = await this.checkWebhookTarget(input.url);
    return this.c.db.tx(async (q) => {
      if (profileId !== null) await this.c.profiles.requireProfile(q, profileId);
      const id = randomUUID();
      const now = this.c.clock();
      await q.query(
        `INSERT INTO webhooks (webhook_id, profile_id, url, event_types, description, created_at, updated_at)
         VALUES ($1,$2,$3,$4::jsonb,$5,$6,$6)`,
        [id, profileId, url, JSON.stringify([...new Set(input.event_types)]), input.description ?? null, now],
      );
      await this.c.audit.record(q, actor, 'webhook.created', 'webhook', id, { profile_id: profileId, url });
      return this.getWebhook(profileId, id, q);
    });
  }

  /** Update a webhook of a profile or an instance-level one (`profileId` null); same checks as create. */
  async updateWebhook(
    actor: string,
    profileId: string | null,
    id: string,
    input: { url?: string; event_types?: string[]; description?: string | null },
  ) {
    if (input.event_types !== undefined) this.checkEventScope(profileId, input.event_types);
    const url = input.url === undefined ? undefined : await this.checkWebhookTarget(input.url);
    return this.c.db.tx(async (q) => {
      const cur = await this.getWebhook(profileId, id, q);
      await q.query(
        `UPDATE webhooks SET url = $2, event_types = $3::jsonb, description = $4, updated_at = $5
         WHERE webhook_id = $1`,
        [
          id,
          url ?? cur.url,
          JSON.stringify(input.event_types ? [...new Set(input.event_types)] : cur.event_types),
          input.description === undefined ? cur.description : input.description,
          this.c.clock(),
        ],
      );
      await this.c.audit.record(q, actor, 'webhook.updated', 'webhook', id, { profile_id: profileId });
      return this.getWebhook(profileId, id, q);
    });
  }

  /** Delete (soft) a webhook of a profile or an instance-level one (`profileId` null); audited. */
  async deleteWebhook(actor: string, profileId: string | null, id: string): Promise<void> {
    await this.c.db.tx(async (q) => {
      await this.getWebhook(profileId, id, q);
      await q.query('UPDATE webhooks SET deleted_at = $2 WHERE webhook_id = $1', [id, this.c.clock()]);
      await this.c.audit.record(q, actor, 'webhook.deleted', 'webhook', id, { profile_id: profileId });
    });
  }
}
