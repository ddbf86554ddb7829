/** Admin API of the audit room: `GET /admin/v1/audit`. */
import type { AdminRouter } from '../admin/route.js';
import { ADMIN, pageEnvelope } from '../admin/schemas.js';
import { PAGE_QUERY, UUID } from '../api/schemas.js';
import type { PageRequest } from '../store.js';
import type { AuditFilter, AuditLog } from './service.js';

/** Query of `GET /admin/v1/audit`: the page and the filters (AND-combined; `total` counts matches). */
const AUDIT_QUERY = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...PAGE_QUERY,
    action: {
      type: 'string',
      minLength: 1,
      maxLength: 100,
      pattern: '^[a-z0-9_]+(\\.[a-z0-9_]+)*(\\.|\\*|\\.\\*)?$',
      description:
        'Exact action (`policy.created`), or a prefix ending in `.` or `*` (`policy.`, `policy.*`, `user*`).',
    },
    actor_user_id: { ...UUID, description: 'The acting user' },
    target_type: { type: 'string', minLength: 1, maxLength: 100, description: 'Exact target type, e.g. `policy`' },
    target_id: { type: 'string', minLength: 1, maxLength: 200, description: 'Exact target id' },
    from: { type: 'string', format: 'date-time', description: 'Entries at or after this ISO date-time' },
    to: { type: 'string', format: 'date-time', description: 'Entries before this ISO date-time' },
  },
};

/** Register the audit route. */
export function auditRoutes(r: AdminRouter, audit: AuditLog): void {
  r.route(
    'GET',
    '/admin/v1/audit',
    {
      roles: ADMIN,
      tags: ['Admin: audit'],
      summary: 'Append-only audit log of admin actions, newest first, filtered on the server',
      querystring: AUDIT_QUERY,
      status: 200,
      response: pageEnvelope('Audit entries'),
    },
    async (req) => {
      const { page, page_size, ...filter } = req.query as PageRequest & AuditFilter;
      return audit.list({ page, page_size }, filter);
    },
  );
}
