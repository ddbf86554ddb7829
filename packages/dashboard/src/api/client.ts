/**
 * The typed admin API client of the dashboard: openapi-fetch over the `paths` generated from
 * docs/api/openapi.json (`@custodian/sdk/api`), so every path, parameter and body is checked
 * against the document. Same origin as the coordinator; the session rides in the HttpOnly
 * `__Host-custodian_session` cookie (`custodian_session` on plain http to a loopback host), and
 * every state-changing request carries the CSRF token (`X-CSRF-Token`, the value of the readable
 * `__Host-custodian_csrf` cookie, or `custodian_csrf` on loopback http) that the coordinator checks
 * for cookie sessions.
 *
 * Response bodies: the document gives most admin answers only as objects, so screens name their
 * shape with the admin API types of `@custodian/coordinator/admin-api-types` ({@link call}).
 */
import type { paths } from '@custodian/sdk/api';
import createClient, { type Middleware } from 'openapi-fetch';
import { ApiProblem, toApiProblem } from './problem';

/** Cookie holding the CSRF token (readable by the page; the session cookie is not), off loopback http. */
export const HOST_CSRF_COOKIE = '__Host-custodian_csrf';
/** The CSRF cookie on plain http to a loopback host (development: no Secure, so no `__Host-`). */
export const CSRF_COOKIE = 'custodian_csrf';
/** Header the coordinator compares with the session's CSRF token on POST/PUT/PATCH/DELETE. */
export const CSRF_HEADER = 'X-CSRF-Token';

/**
 * The CSRF token from `document.cookie` — the `__Host-custodian_csrf` cookie when there is one,
 * else `custodian_csrf` — or undefined before login.
 */
export function csrfToken(): string | undefined {
  if (typeof document === 'undefined') return undefined;
  const found = new Map<string, string>();
  for (const part of document.cookie.split(';')) {
    const [k = '', ...v] = part.trim().split('=');
    if ((k === HOST_CSRF_COOKIE || k === CSRF_COOKIE) && !found.has(k)) found.set(k, decodeURIComponent(v.join('=')));
  }
  return found.get(HOST_CSRF_COOKIE) ?? found.get(CSRF_COOKIE);
}

const csrf: Middleware = {
  onRequest({ request }) {
    if (!['GET', 'HEAD', 'OPTIONS'].includes(request.method)) {
      const t = csrfToken();
      if (t !== undefined) request.headers.set(CSRF_HEADER, t);
    }
    return request;
  },
};

/** Listeners told when any call answers 401 `SESSION_REQUIRED` (the session expired or was revoked). */
const expiredListeners = new Set<() => void>();
/** Be told when the session ends under the page; returns the unsubscribe function. */
export function onSessionExpired(f: () => void): () => void {
  expiredListeners.add(f);
  return () => expiredListeners.delete(f);
}

const expiry: Middleware = {
  onResponse({ response, request }) {
    if (response.status === 401 && !new URL(request.url).pathname.startsWith('/admin/v1/login')) {
      for (const f of expiredListeners) f();
    }
    return response;
  },
};

/** The openapi-fetch client (`api.GET('/admin/v1/users', { params: { query } })`). */
export const api = createClient<paths>({
  baseUrl: typeof window === 'undefined' ? 'http://localhost' : window.location.origin,
  credentials: 'same-origin',
  // the fetch of the moment of each call (not of module load), so tests can replace it
  fetch: (r) => globalThis.fetch(r),
});
api.use(csrf, expiry);

/**
 * Unwrap an openapi-fetch result: the body as `T`, or throw the problem.
 * @throws ApiProblem with the problem+json title, detail and code (network failures: code `NETWORK`)
 */
export async function call<T>(p: Promise<{ data?: unknown; error?: unknown; response: Response }>): Promise<T> {
  let r: Awaited<typeof p>;
  try {
    r = await p;
  } catch (e) {
    throw new ApiProblem({
      title: 'The coordinator could not be reached',
      status: 0,
      code: 'NETWORK',
      detail: (e as Error).message,
    });
  }
  if (!r.response.ok) throw toApiProblem(r.response.status, r.error);
  return r.data as T;
}
