/**
 * Cookie transport of admin sessions (the dashboard's; bearer tokens stay for the CLI and SDK).
 * `POST /admin/v1/login/verify` with `transport: 'cookie'` sets two cookies:
 * - `custodian_session=<session token>; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=<ttl s>`
 *   (the page never reads the token);
 * - `custodian_csrf=<csrf token>; Path=/; SameSite=Strict; Max-Age=<ttl s>` (readable by the page,
 *   which echoes it in `X-CSRF-Token` on every state-changing request).
 * Both get `Secure` unless the request is plain http to a loopback host. The CSRF token is derived
 * from the session token ({@link csrfTokenFor}: nothing stored), and compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { isLoopbackHostname } from '../http-headers.js';
import type { SessionUser } from '../users/store.js';

/** The HttpOnly cookie holding the session token. */
export const SESSION_COOKIE = 'custodian_session';
/** The page-readable cookie holding the CSRF token. */
export const CSRF_COOKIE = 'custodian_csrf';
/** Header a cookie-authenticated unsafe request must carry, equal to {@link csrfTokenFor}. */
export const CSRF_HEADER = 'x-csrf-token';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const CSRF_DOMAIN = 'custodian/admin-csrf/v1\0';

/** The CSRF token of a session token: base64url SHA-256 of a domain-separated prefix ‖ token. */
export function csrfTokenFor(sessionToken: string): string {
  return createHash('sha256').update(CSRF_DOMAIN).update(sessionToken).digest('base64url');
}

/** Whether the cookies get `Secure`: always, except plain http to a loopback host (development). */
function secure(req: FastifyRequest): boolean {
  return req.protocol === 'https' || !isLoopbackHostname(req.host);
}

/**
 * Set both session cookies on the reply.
 * @param maxAgeSeconds lifetime of the session in whole seconds (the cookies' `Max-Age`)
 */
export function setSessionCookies(req: FastifyRequest, reply: FastifyReply, token: string, maxAgeSeconds: number) {
  const common = { sameSite: 'strict', secure: secure(req), maxAge: maxAgeSeconds } as const;
  reply.setCookie(SESSION_COOKIE, token, { ...common, path: '/admin', httpOnly: true });
  reply.setCookie(CSRF_COOKIE, csrfTokenFor(token), { ...common, path: '/', httpOnly: false });
}

/** Clear both session cookies (`Max-Age=0`, same attributes as when set). */
export function clearSessionCookies(req: FastifyRequest, reply: FastifyReply) {
  const common = { sameSite: 'strict', secure: secure(req), maxAge: 0 } as const;
  reply.setCookie(SESSION_COOKIE, '', { ...common, path: '/admin', httpOnly: true });
  reply.setCookie(CSRF_COOKIE, '', { ...common, path: '/', httpOnly: false });
}

/** The session token of the `custodian_session` cookie, when well-formed. */
export function cookieSessionToken(req: FastifyRequest): string | undefined {
  const v = req.cookies?.[SESSION_COOKIE];
  return typeof v === 'string' && /^[A-Za-z0-9_-]{1,200}$/.test(v) ? v : undefined;
}

/**
 * Check a cookie-authenticated request: an unsafe method (not GET/HEAD/OPTIONS) needs
 * `X-CSRF-Token` equal to the session's CSRF token, and an `Origin` header, when present, equal to
 * the request's own origin.
 * @throws ApiError CSRF_TOKEN_INVALID (403)
 */
export function checkCsrf(req: FastifyRequest, sessionToken: string): void {
  if (SAFE_METHODS.has(req.method)) return;
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `${req.protocol}://${req.host}`) {
    throw new ApiError('CSRF_TOKEN_INVALID', 'a cookie-authenticated request from another origin is refused');
  }
  const raw = req.headers[CSRF_HEADER];
  const sent = Buffer.from(typeof raw === 'string' ? raw : '');
  const want = Buffer.from(csrfTokenFor(sessionToken));
  if (sent.length !== want.length || !timingSafeEqual(sent, want)) {
    throw new ApiError('CSRF_TOKEN_INVALID', 'send the value of the custodian_csrf cookie in the X-CSRF-Token header');
  }
}

/**
 * The admin session of a request: `Authorization: Bearer <token>` (CLI, SDK), else the
 * `custodian_session` cookie, whose unsafe requests must pass {@link checkCsrf}.
 * @throws ApiError SESSION_REQUIRED (401) without a live session; CSRF_TOKEN_INVALID (403)
 */
export async function authenticateSession(
  req: FastifyRequest,
  sessions: { sessionUser(token: string): Promise<SessionUser | null> },
): Promise<SessionUser> {
  const h = req.headers.authorization;
  const m = typeof h === 'string' ? /^Bearer ([A-Za-z0-9_-]{1,200})$/.exec(h) : null;
  const cookie = m === null ? cookieSessionToken(req) : undefined;
  const token = m?.[1] ?? cookie;
  const user = token !== undefined ? await sessions.sessionUser(token) : null;
  if (user === null) {
    throw new ApiError('SESSION_REQUIRED', 'log in and send Authorization: Bearer <token> (or the session cookie)');
  }
  if (cookie !== undefined) checkCsrf(req, cookie);
  return user;
}
