/** Admin API of the audit room: `GET /admin/v1/audit`. */
import type { AdminRouter } from '../admin/route.js';
import { ADMIN, pageEnvelope, pageQuery } from '../admin/schemas.js';
import type { PageRequest } from '../store.js';
import type { AuditLog } from './service.js';

/** Register the audit route. */
export function auditRoutes(r: AdminRouter, audit: AuditLog): void {
  r.route(
    'GET',
    '/admin/v1/audit',
    {
      roles: ADMIN,
      tags: ['Admin: audit'],
      summary: 'Append-only audit log of admin actions, newest first',
      querystring: pageQuery,
      status: 200,
      response: pageEnvelope('Audit entries'),
    },
    async (req) => audit.list(req.query as PageRequest),
  );
}
