/**
 * Admin API of the webhooks room (`Admin: webhooks`): webhook registrations of a profile and
 * instance-level ones (instance and security events only), their delivery notifications and
 * redelivery, and the signing keys (list, rotate).
 */
import type { FastifyRequest } from 'fastify';
import { type AdminRouter, actor, B, P } from '../admin/route.js';
import { ADMIN, anyObject, listOf, obj, pageEnvelope, pageQuery } from '../admin/schemas.js';
import { PAGE_QUERY, UUID } from '../api/schemas.js';
import type { PageRequest } from '../store.js';
import { INSTANCE_EVENT_TYPES, PROFILE_EVENT_TYPES, WEBHOOK_EVENT_TYPES } from './events.js';
import type { WebhookSigningKeys } from './keys.js';
import type { WebhookRegistrations } from './registrations.js';
import type { WebhookService } from './service.js';

/** What the webhook admin routes use. */
export interface WebhookAdminServices {
  readonly registrations: WebhookRegistrations;
  readonly notifications: WebhookService;
  readonly signingKeys: WebhookSigningKeys;
}

/** Register the webhook admin routes. */
export function webhookAdminRoutes(r: AdminRouter, hooks: WebhookAdminServices): void {
  const profileParams = obj({ profile_id: UUID }, ['profile_id']);
  const webhookParams = obj({ profile_id: UUID, webhook_id: UUID }, ['profile_id', 'webhook_id']);
  // A profile webhook takes only profile events; instance/security events go to /admin/v1/webhooks.
  const eventTypes = {
    type: 'array',
    minItems: 1,
    maxItems: WEBHOOK_EVENT_TYPES.length,
    items: { type: 'string', enum: PROFILE_EVENT_TYPES },
  };
  const url = {
    type: 'string',
    minLength: 1,
    maxLength: 2000,
    description: 'HTTPS URL (plain http only to loopback in development mode)',
  };
  const description = { type: ['string', 'null'], maxLength: 500 };
  r.route(
    'GET',
    '/admin/v1/profiles/:profile_id/webhooks',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Webhook registrations of a profile',
      params: profileParams,
      querystring: pageQuery,
      status: 200,
      response: pageEnvelope('Webhooks, oldest first'),
    },
    async (req) => {
      const { page, page_size } = req.query as PageRequest;
      return hooks.registrations.listWebhooks(P<{ profile_id: string }>(req).profile_id, { page, page_size });
    },
  );
  r.route(
    'POST',
    '/admin/v1/profiles/:profile_id/webhooks',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Register a webhook: URL, event types, optional description (several per profile allowed)',
      stepUp: true,
      params: profileParams,
      body: obj({ url, event_types: eventTypes, description }, ['url', 'event_types']),
      status: 201,
      response: anyObject('Webhook'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => hooks.registrations.createWebhook(actor(req), P<{ profile_id: string }>(req).profile_id, B(req)),
  );
  r.route(
    'GET',
    '/admin/v1/profiles/:profile_id/webhooks/:webhook_id',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'One webhook registration',
      params: webhookParams,
      status: 200,
      response: anyObject('Webhook'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; webhook_id: string }>(req);
      return hooks.registrations.getWebhook(p.profile_id, p.webhook_id);
    },
  );
  r.route(
    'PATCH',
    '/admin/v1/profiles/:profile_id/webhooks/:webhook_id',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Update a webhook registration',
      stepUp: true,
      params: webhookParams,
      body: { ...obj({ url, event_types: eventTypes, description }), minProperties: 1 },
      status: 200,
      response: anyObject('Webhook'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; webhook_id: string }>(req);
      return hooks.registrations.updateWebhook(actor(req), p.profile_id, p.webhook_id, B(req));
    },
  );
  r.route(
    'DELETE',
    '/admin/v1/profiles/:profile_id/webhooks/:webhook_id',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Delete a webhook registration',
      stepUp: true,
      params: webhookParams,
      status: 204,
      response: { description: 'Deleted', type: 'null' },
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; webhook_id: string }>(req);
      await hooks.registrations.deleteWebhook(actor(req), p.profile_id, p.webhook_id);
    },
  );

  // ---- webhook notifications and signing keys ----
  const notificationQuery = {
    type: 'object',
    additionalProperties: false,
    properties: { ...PAGE_QUERY, status: { type: 'string', enum: ['PENDING', 'DELIVERED', 'FAILED'] } },
  };
  const listNotifications = (req: FastifyRequest, profileId: string | null, webhookId: string) => {
    const q = req.query as PageRequest & { status?: 'PENDING' | 'DELIVERED' | 'FAILED' };
    return hooks.notifications.listNotifications(
      profileId,
      webhookId,
      { page: q.page, page_size: q.page_size },
      q.status,
    );
  };
  const notificationParams = obj({ profile_id: UUID, webhook_id: UUID, notification_id: UUID }, [
    'profile_id',
    'webhook_id',
    'notification_id',
  ]);
  r.route(
    'GET',
    '/admin/v1/profiles/:profile_id/webhooks/:webhook_id/notifications',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Delivery notifications of a webhook, newest first, with attempts (optional status filter)',
      params: webhookParams,
      querystring: notificationQuery,
      status: 200,
      response: pageEnvelope('Notifications'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; webhook_id: string }>(req);
      return listNotifications(req, p.profile_id, p.webhook_id);
    },
  );
  r.route(
    'POST',
    '/admin/v1/profiles/:profile_id/webhooks/:webhook_id/notifications/:notification_id/redeliver',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Redeliver a FAILED notification',
      description:
        'The notification becomes PENDING with a fresh series of up to 5 attempts on the seed schedule (the first at ' +
        'once), for the same event (same event_id and body). 409 CONFLICT unless it is FAILED.',
      params: notificationParams,
      status: 200,
      response: anyObject('The notification, now PENDING'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
    },
    async (req) => {
      const p = P<{ profile_id: string; webhook_id: string; notification_id: string }>(req);
      return hooks.registrations.redeliverNotification(actor(req), p.profile_id, p.webhook_id, p.notification_id);
    },
  );
  // ---- instance-level webhooks (#26 item 8): instance and security events only ----
  const instanceEventTypes = { ...eventTypes, items: { type: 'string', enum: INSTANCE_EVENT_TYPES } };
  const instanceHook = obj({ webhook_id: UUID }, ['webhook_id']);
  const instanceText =
    'Instance-level webhooks (no profile; `profile_id` null) receive the instance and security events — servers ' +
    'and keys, devices, users, security (ROLE_SCOPE_LOGIN, …) — and only those; profile webhooks never do. ' +
    'The delivery body names the nil UUID as `profile_id` unless the event concerns one profile.';
  r.route(
    'GET',
    '/admin/v1/webhooks',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Instance-level webhook registrations',
      description: instanceText,
      querystring: pageQuery,
      status: 200,
      response: pageEnvelope('Webhooks, oldest first'),
    },
    async (req) => {
      const { page, page_size } = req.query as PageRequest;
      return hooks.registrations.listWebhooks(null, { page, page_size });
    },
  );
  r.route(
    'POST',
    '/admin/v1/webhooks',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Register an instance-level webhook (instance and security event types only)',
      description: instanceText,
      body: obj({ url, event_types: instanceEventTypes, description }, ['url', 'event_types']),
      stepUp: true,
      status: 201,
      response: anyObject('Webhook'),
    },
    async (req) => hooks.registrations.createWebhook(actor(req), null, B(req)),
  );
  r.route(
    'GET',
    '/admin/v1/webhooks/:webhook_id',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'One instance-level webhook',
      params: instanceHook,
      status: 200,
      response: anyObject('Webhook'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => hooks.registrations.getWebhook(null, P<{ webhook_id: string }>(req).webhook_id),
  );
  r.route(
    'PATCH',
    '/admin/v1/webhooks/:webhook_id',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Update an instance-level webhook',
      params: instanceHook,
      body: { ...obj({ url, event_types: instanceEventTypes, description }), minProperties: 1 },
      stepUp: true,
      status: 200,
      response: anyObject('Webhook'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) =>
      hooks.registrations.updateWebhook(actor(req), null, P<{ webhook_id: string }>(req).webhook_id, B(req)),
  );
  r.route(
    'DELETE',
    '/admin/v1/webhooks/:webhook_id',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Delete an instance-level webhook',
      params: instanceHook,
      stepUp: true,
      status: 204,
      response: { description: 'Deleted', type: 'null' },
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => hooks.registrations.deleteWebhook(actor(req), null, P<{ webhook_id: string }>(req).webhook_id),
  );
  r.route(
    'GET',
    '/admin/v1/webhooks/:webhook_id/notifications',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Delivery notifications of an instance-level webhook, newest first, with attempts',
      params: instanceHook,
      querystring: notificationQuery,
      status: 200,
      response: pageEnvelope('Notifications'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => listNotifications(req, null, P<{ webhook_id: string }>(req).webhook_id),
  );
  r.route(
    'POST',
    '/admin/v1/webhooks/:webhook_id/notifications/:notification_id/redeliver',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Redeliver a FAILED notification of an instance-level webhook',
      params: obj({ webhook_id: UUID, notification_id: UUID }, ['webhook_id', 'notification_id']),
      status: 200,
      response: anyObject('The notification, now PENDING'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
    },
    async (req) => {
      const p = P<{ webhook_id: string; notification_id: string }>(req);
      return hooks.registrations.redeliverNotification(actor(req), null, p.webhook_id, p.notification_id);
    },
  );
  r.route(
    'GET',
    '/admin/v1/webhook-signing-keys',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Webhook signing keys (public metadata only): PUBLISHED, ACTIVE, RETIRED, EXPIRED',
      status: 200,
      response: listOf('Keys'),
    },
    async () => hooks.signingKeys.list(),
  );
  r.route(
    'POST',
    '/admin/v1/webhook-signing-keys/rotate',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Rotate the webhook signing key',
      description:
        'Creates a P-256 key published in the JWKS at once that signs from now + lead_seconds (default: the configured ' +
        'publish lead, 1 h); the current key stops signing then and stays published for the overlap (24 h). 409 when ' +
        'a new key is already waiting.',
      body: obj({ lead_seconds: { type: 'integer', minimum: 0, maximum: 30 * 86400 } }),
      stepUp: true,
      status: 201,
      response: anyObject('The new key (kid, created_at, activates_at, state)'),
      errors: ['CONFLICT'],
    },
    async (req) => {
      const b = (req.body ?? {}) as { lead_seconds?: number };
      return hooks.registrations.rotateSigningKey(
        actor(req),
        b.lead_seconds === undefined ? undefined : b.lead_seconds * 1000,
      );
    },
  );
}
