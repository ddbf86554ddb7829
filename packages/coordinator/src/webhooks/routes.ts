/**
 * Webhook routes of the REST API (seed §4) under `/api/v1/profiles/{profile_id}` (X-API-Key), and
 * the JWKS at `/.well-known/jwks.json` (not under /api, no authentication).
 */
import type { FastifyInstance } from 'fastify';
import { API_COMMON_ERRORS, errorResponses, PAGE_QUERY, UUID } from '../api/schemas.js';
import type { PageRequest } from '../store.js';
import type { WebhookSigningKeys } from './keys.js';
import type { WebhookService } from './service.js';

const security = [{ ApiKey: [] }];
const dateTime = { type: 'string', format: 'date-time' };
const nullable = (t: string, extra: object = {}) => ({ type: [t, 'null'], ...extra });

const WEBHOOK = {
  type: 'object',
  description: 'A webhook registration (seed §2; created, updated and deleted only in the admin API, seed §4 rule 4).',
  required: ['webhook_id', 'profile_id', 'url', 'event_types', 'description', 'created_at', 'updated_at'],
  properties: {
    webhook_id: UUID,
    profile_id: UUID,
    url: { type: 'string', format: 'uri' },
    event_types: { type: 'array', items: { type: 'string' } },
    description: nullable('string'),
    created_at: dateTime,
    updated_at: dateTime,
  },
};

const ATTEMPT = {
  type: 'object',
  required: ['attempt', 'scheduled_at', 'started_at', 'finished_at', 'response_code', 'error', 'duration_ms'],
  properties: {
    attempt: { type: 'integer', minimum: 1, description: '1–5; continues at 6 after a redelivery' },
    scheduled_at: dateTime,
    started_at: dateTime,
    finished_at: nullable('string', { format: 'date-time' }),
    response_code: nullable('integer', { description: 'HTTP status returned by the receiver; null when none' }),
    error: nullable('string', { description: 'why the attempt failed (timeout, connection error, non-2xx)' }),
    duration_ms: nullable('integer'),
  },
};

const NOTIFICATION = {
  type: 'object',
  description:
    'A webhook notification (seed §2): the delivery of one event to one webhook, as a series of up to 5 attempts. ' +
    'status PENDING (attempts remain or one is in flight), DELIVERED (a 2xx within 30 s) or FAILED (five attempts failed; ' +
    'not retried automatically; an Admin may redeliver).',
  required: [
    'notification_id',
    'webhook_id',
    'event_id',
    'event_type',
    'status',
    'attempt_count',
    'next_attempt_at',
    'last_response_code',
    'last_error',
    'delivered_at',
    'redeliveries',
    'created_at',
    'updated_at',
    'attempts',
  ],
  properties: {
    notification_id: UUID,
    webhook_id: UUID,
    event_id: UUID,
    event_type: { type: 'string' },
    status: { type: 'string', enum: ['PENDING', 'DELIVERED', 'FAILED'] },
    attempt_count: { type: 'integer', minimum: 0 },
    next_attempt_at: nullable('string', { format: 'date-time', description: 'when PENDING and not in flight' }),
    last_response_code: nullable('integer'),
    last_error: nullable('string'),
    delivered_at: nullable('string', { format: 'date-time' }),
    redeliveries: { type: 'integer', minimum: 0 },
    created_at: dateTime,
    updated_at: dateTime,
    attempts: { type: 'array', items: ATTEMPT },
  },
};

const page = (item: object, description: string) => ({
  description,
  type: 'object',
  required: ['data', 'page', 'page_size', 'total'],
  properties: {
    data: { type: 'array', items: item },
    page: { type: 'integer' },
    page_size: { type: 'integer' },
    total: { type: 'integer' },
  },
});

/** JSON Schemas of the webhook API (also used by the admin routes). */
export const WEBHOOK_SCHEMAS = { WEBHOOK, NOTIFICATION, ATTEMPT } as const;

/** Register the seed §4 webhook endpoints. Mount under `/api/v1/profiles/:profile_id` with the API-key hook. */
export async function webhookRoutes(app: FastifyInstance, svc: WebhookService) {
  const params = (extra: Record<string, unknown>) => ({
    type: 'object',
    required: ['profile_id', ...Object.keys(extra)],
    properties: { profile_id: UUID, ...extra },
  });
  const errors = (...extra: Parameters<typeof errorResponses>[0]) => errorResponses([...API_COMMON_ERRORS, ...extra]);
  const pid = (p: unknown) => (p as { profile_id: string }).profile_id.toLowerCase();

  app.get(
    '/webhooks',
    {
      schema: {
        tags: ['Webhooks'],
        summary: 'Registered webhooks of the profile',
        description: 'Oldest first, in the paginated envelope. Registration is an admin (dashboard) function.',
        security,
        params: params({}),
        querystring: { type: 'object', additionalProperties: false, properties: PAGE_QUERY },
        response: { 200: page(WEBHOOK, 'Webhooks'), ...errors() },
      },
    },
    async (req) => svc.listWebhooks(pid(req.params), req.query as PageRequest),
  );

  app.get(
    '/webhooks/:webhook_id',
    {
      schema: {
        tags: ['Webhooks'],
        summary: 'One webhook',
        security,
        params: params({ webhook_id: UUID }),
        response: { 200: { ...WEBHOOK, description: 'The webhook' }, ...errors('RESOURCE_NOT_FOUND') },
      },
    },
    async (req) => svc.getWebhook(pid(req.params), (req.params as { webhook_id: string }).webhook_id),
  );

  app.get(
    '/webhooks/:webhook_id/notifications',
    {
      schema: {
        tags: ['Webhooks'],
        summary: 'Delivery notifications of a webhook (PENDING, DELIVERED, FAILED) with their attempts',
        description:
          'Newest first, in the paginated envelope; optional `status` filter. Each notification lists its attempts ' +
          'with response codes. FAILED notifications stay listed (seed §3).',
        security,
        params: params({ webhook_id: UUID }),
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { ...PAGE_QUERY, status: { type: 'string', enum: ['PENDING', 'DELIVERED', 'FAILED'] } },
        },
        response: { 200: page(NOTIFICATION, 'Notifications'), ...errors('RESOURCE_NOT_FOUND') },
      },
    },
    async (req) => {
      const q = req.query as PageRequest & { status?: 'PENDING' | 'DELIVERED' | 'FAILED' };
      return svc.listNotifications(
        pid(req.params),
        (req.params as { webhook_id: string }).webhook_id,
        { page: q.page, page_size: q.page_size },
        q.status,
      );
    },
  );

  app.get(
    '/webhooks/:webhook_id/notifications/:notification_id',
    {
      schema: {
        tags: ['Webhooks'],
        summary: 'One delivery notification with its attempts',
        security,
        params: params({ webhook_id: UUID, notification_id: UUID }),
        response: { 200: { ...NOTIFICATION, description: 'The notification' }, ...errors('RESOURCE_NOT_FOUND') },
      },
    },
    async (req) => {
      const p = req.params as { webhook_id: string; notification_id: string };
      return svc.getNotification(pid(req.params), p.webhook_id, p.notification_id);
    },
  );
}

/** `GET /.well-known/jwks.json`: the webhook signing public keys (RFC 7517 §5) with Cache-Control. */
export async function jwksRoute(app: FastifyInstance, keys: WebhookSigningKeys) {
  app.get(
    '/.well-known/jwks.json',
    {
      schema: {
        tags: ['Webhooks'],
        summary: 'JWKS of the webhook signing public keys',
        security: [],
        description:
          `Not under /api; no authentication. P-256 keys (kty EC, crv P-256, alg ES256, use sig; kid = RFC 7638 ` +
          `thumbprint). A new key is published ${Math.round(keys.opts.publishLeadMs / 60_000)} min before it signs; ` +
          `a retired key stays ${Math.round(keys.opts.overlapMs / 3600_000)} h after it stopped signing. ` +
          `Cache-Control: public, max-age=${keys.opts.jwksMaxAgeSeconds}. On an unknown kid, refetch once.`,
        response: {
          200: {
            description: 'JWK Set',
            type: 'object',
            required: ['keys'],
            properties: {
              keys: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['kty', 'crv', 'x', 'y', 'kid', 'alg', 'use'],
                  properties: {
                    kty: { type: 'string', const: 'EC' },
                    crv: { type: 'string', const: 'P-256' },
                    x: { type: 'string' },
                    y: { type: 'string' },
                    kid: { type: 'string' },
                    alg: { type: 'string', const: 'ES256' },
                    use: { type: 'string', const: 'sig' },
                  },
                },
              },
            },
          },
          ...errorResponses(['RATE_LIMITED', 'INTERNAL_ERROR']),
        },
      },
    },
    async (_req, reply) => {
      reply.header('cache-control', `public, max-age=${keys.opts.jwksMaxAgeSeconds}`);
      return keys.jwks();
    },
  );
}
