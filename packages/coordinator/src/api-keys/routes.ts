/** Admin API of the API keys room (`Admin: API keys`). */
import { type AdminRouter, actor, B, P } from '../admin/route.js';
import { ADMIN, anyObject, name, obj, pageEnvelope } from '../admin/schemas.js';
import { MAX_ALLOWED_CIDRS } from '../api/cidrs.js';
import { PAGE_QUERY, UUID } from '../api/schemas.js';
import type { PageRequest } from '../store.js';
import type { ApiKeyService } from './service.js';

/** Register the API key routes. */
export function apiKeyRoutes(r: AdminRouter, apiKeys: ApiKeyService): void {
  r.route(
    'GET',
    '/admin/v1/api-keys',
    {
      roles: ADMIN,
      tags: ['Admin: API keys'],
      summary: 'List API keys (never the secret)',
      querystring: { type: 'object', additionalProperties: false, properties: { profile_id: UUID, ...PAGE_QUERY } },
      status: 200,
      response: pageEnvelope('API keys'),
    },
    async (req) => {
      const q = req.query as PageRequest & { profile_id?: string };
      return apiKeys.list(q.profile_id, q);
    },
  );
  r.route(
    'POST',
    '/admin/v1/api-keys',
    {
      roles: ADMIN,
      tags: ['Admin: API keys'],
      summary: 'Create a named API key for a profile; `api_key` is shown only in this response',
      description:
        '`allowed_cidrs` (optional): IPv4/IPv6 CIDR ranges or single addresses the key may be used from, e.g. ' +
        '`["10.0.0.0/8", "2001:db8::/32"]`; host bits must be zero; stored normalised (`192.0.2.7` → `192.0.2.7/32`, ' +
        'IPv4-mapped IPv6 ranges as IPv4). A request from another client address (the socket peer, or the forwarded ' +
        'client behind a trusted proxy) → 403 `API_KEY_ADDRESS_NOT_ALLOWED`. Omitted: any address.',
      stepUp: true,
      body: obj(
        {
          profile_id: UUID,
          name,
          allowed_cidrs: {
            type: 'array',
            minItems: 1,
            maxItems: MAX_ALLOWED_CIDRS,
            items: { type: 'string', minLength: 1, maxLength: 64 },
          },
        },
        ['profile_id', 'name'],
      ),
      status: 201,
      response: anyObject('The key record (with `allowed_cidrs`, null when unrestricted) and its secret `api_key`'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const b = B<{ profile_id: string; name: string; allowed_cidrs?: string[] }>(req);
      return apiKeys.create(actor(req), b.profile_id, b.name, b.allowed_cidrs);
    },
  );
  r.route(
    'DELETE',
    '/admin/v1/api-keys/:api_key_id',
    {
      roles: ADMIN,
      tags: ['Admin: API keys'],
      summary: 'Revoke an API key (effective immediately; idempotent)',
      stepUp: true,
      params: obj({ api_key_id: UUID }, ['api_key_id']),
      status: 204,
      response: { description: 'Revoked', type: 'null' },
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => apiKeys.revoke(actor(req), P<{ api_key_id: string }>(req).api_key_id),
  );
}
