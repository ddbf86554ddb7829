/**
 * Serving the built dashboard (`packages/dashboard/dist`) from the coordinator: `/` and every GET
 * outside the API prefixes answer the file when it exists, else `index.html` (the single-page
 * app's fallback, `Cache-Control: no-cache`); `/assets/*` (content-hashed by the build) are
 * `Cache-Control: public, max-age=31536000, immutable`. Dashboard answers carry
 * {@link DASHBOARD_CSP} instead of the API's `default-src 'none'`. Unknown paths under an API
 * prefix keep the problem+json 404. Hidden from the OpenAPI document.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { ApiError } from './errors.js';

/** The CSP of dashboard answers: the SPA's own scripts, styles (Mantine injects inline styles), images and API calls only. */
export const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'";

/** Path prefixes that belong to the APIs (never answered with the dashboard). */
export const API_PREFIXES = ['/api/', '/admin/', '/devices/', '/.well-known/', '/healthz', '/readyz', '/metrics'];

/**
 * Check `dir` holds a built dashboard.
 * @throws Error naming the folder when `index.html` is missing
 */
export function checkDashboardDir(dir: string): void {
  if (!existsSync(join(dir, 'index.html'))) {
    throw new Error(`dashboardDir ${dir} has no index.html: run pnpm build (the dashboard is not built)`);
  }
}

/** Register the dashboard routes on `app` (root context) serving `dir` (absolute path). */
export async function dashboardRoutes(app: FastifyInstance, dir: string): Promise<void> {
  checkDashboardDir(dir);
  await app.register(async (a) => {
    await a.register(fastifyStatic, {
      root: dir,
      wildcard: false,
      index: false,
      cacheControl: false,
      etag: true,
      lastModified: true,
      schemaHide: true,
      serveDotFiles: false,
    });
    a.addHook('onSend', async (req, reply, payload) => {
      // a problem (404 under an API prefix) keeps the API's headers
      if (String(reply.getHeader('content-type') ?? '').startsWith('application/problem+json')) return payload;
      reply.header('content-security-policy', DASHBOARD_CSP);
      const path = req.url.split('?')[0] ?? '';
      if (reply.statusCode < 300) {
        reply.header('cache-control', path.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
      }
      return payload;
    });
    const fallback = async (req: { url: string; method: string }, reply: { sendFile(f: string): unknown }) => {
      const path = req.url.split('?')[0] ?? '';
      if (
        API_PREFIXES.some((p) => path === p.replace(/\/$/, '') || path.startsWith(p)) ||
        path.startsWith('/assets/')
      ) {
        throw new ApiError('ROUTE_NOT_FOUND', `no route ${req.method} ${path}`);
      }
      return reply.sendFile('index.html');
    };
    a.get('/', { schema: { hide: true } }, fallback);
    a.get('/*', { schema: { hide: true } }, fallback);
  });
}
