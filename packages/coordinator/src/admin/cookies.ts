/**
 * Cookie transport of admin sessions (the dashboard's; bearer tokens stay for the CLI and SDK).
 * `POST /admin/v1/login/verify` with `transport: 'cookie'` opens a `cookie` session (its own kind:
 * `sessions.transport`) and sets two cookies whose names depend on the request's mode:
 * - secure mode (https, or any non-loopback Host — the normal deployment behind a TLS proxy):
 *   `__Host-custodian_session=<token>; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=<ttl s>`
 *   and `__Host-custodian_csrf=<csrf token>; Path=/; Secure; SameSite=Strict; Max-Age=<ttl s>`.
 *   The `__Host-` prefix makes browsers refuse either cookie when it comes from a sibling
 *   subdomain (`Domain=`), with another Path, or without Secure — so it cannot be tossed.
 * - loopback mode (plain http to localhost / 127.0.0.0/8 / ::1, development; browsers may refuse
 *   Secure there): `custodian_session` (Path=/admin, HttpOnly) and `custodian_csrf` (Path=/),
 *   SameSite=Strict, no Secure.
 * The server reads only the session cookie name of the request's mode, and refuses (401
 * SESSION_REQUIRED) a request whose raw `Cookie` header carries that name more than once (a planted
 * cookie with a longer Path is sent first; the cookie parser would keep it). The CSRF token is 32
 * random bytes (base64url), only its SHA-256 is stored (`sessions.csrf_hash`), and
 * `X-CSRF-Token` is compared with it in constant time. A bearer session presented as a cookie, or a
 * cookie session presented as Bearer, is no session.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { isLoopbackHostname } from '../http-headers.js';
import type { SessionUser } from '../users/store.js';
import { sha256Hex } from '../util.js';

/** The HttpOnly session cookie in secure mode (https or a non-loopback Host). */
export const HOST_SESSION_COOKIE = '__Host-custodian_session';
/** The page-readable CSRF cookie in secure mode. */
export const HOST_CSRF_COOKIE = '__Host-custodian_csrf';
/** The HttpOnly session cookie on plain http to a loopback Host (development). */
export const SESSION_COOKIE = 'custodian_session';
/** The page-readable CSRF cookie on plain http to a loopback Host (development). */
export const CSRF_COOKIE = 'custodian_csrf';
/** Header a cookie-authenticated unsafe request must carry: the CSRF cookie's value. */
export const CSRF_HEADER = 'x-csrf-token';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const TOKEN = /^[A-Za-z0-9_-]{1,200}$/;

/** How a session token travels: `Authorization: Bearer` (CLI, SDK) or the session cookie (dashboard). */
export type SessionTransport = 'bearer' | 'cookie';

/** A session looked up for one transport, with the SHA-256 (hex) of its CSRF token (cookie sessions). */
export interface SessionLookup {
  readonly user: SessionUser;
  readonly csrfHash: string | null;
}

/** What {@link authenticateSession} needs of the session service. */
export interface SessionSource {
  sessionFor(token: string, transport: SessionTransport): Promise<SessionLookup | null>;
}

/** Cookie names and attributes of one request's mode. */
interface CookieMode {
  readonly secure: boolean;
  readonly session: string;
  readonly csrf: string;
  readonly sessionPath: string;
}

/** Secure mode unless the request is plain http to a loopback host (development). */
function modeOf(req: FastifyRequest): CookieMode {
  const secure = req.protocol === 'https' || !isLoopbackHostname(req.host);
  return secure
    ? { secure, session: HOST_SESSION_COOKIE, csrf: HOST_CSRF_COOKIE, sessionPath: '/' }
    : { secure, session: SESSION_COOKIE, csrf: CSRF_COOKIE, sessionPath: '/admin' };
}

/**
 * Set both session cookies on the reply (names and attributes by the request's mode).
 * @param token the session token (`css_…`)
 * @param csrfToken the session's CSRF token (its SHA-256 is `sessions.csrf_hash`)
 * @param maxAgeSeconds lifetime of the session in whole seconds (the cookies' `Max-Age`)
 */
export function setSessionCookies(
  req: FastifyRequest,
  reply: FastifyReply,
  token: string,
  csrfToken: string,
  maxAgeSeconds: number,
) {
  const m = modeOf(req);
  const common = { sameSite: 'strict', secure: m.secure, maxAge: maxAgeSeconds } as const;
  reply.setCookie(m.session, token, { ...common, path: m.sessionPath, httpOnly: true });
  reply.setCookie(m.csrf, csrfToken, { ...common, path: '/', httpOnly: false });
}

/** Clear both session cookies of the request's mode (`Max-Age=0`, same attributes as when set). */
export function clearSessionCookies(req: FastifyRequest, reply: FastifyReply) {
  const m = modeOf(req);
  const common = { sameSite: 'strict', secure: m.secure, maxAge: 0 } as const;
  reply.setCookie(m.session, '', { ...common, path: m.sessionPath, httpOnly: true });
  reply.setCookie(m.csrf, '', { ...common, path: '/', httpOnly: false });
}

/**
 * The values of every cookie called `name` in the raw `Cookie` header(s), in order (RFC 6265
 * §5.4: the browser may send several with one name; `req.cookies` keeps only the first).
 */
function rawCookieValues(req: FastifyRequest, name: string): string[] {
  const raw = req.headers.cookie;
  const header = Array.isArray(raw) ? raw.join('; ') : (raw ?? '');
  const out: string[] = [];
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i >= 0 && part.slice(0, i).trim() === name) out.push(part.slice(i + 1).trim());
  }
  return out;
}

/**
 * The session cookie of the request's mode: absent, exactly one (its token when well-formed, else
 * `malformed`), or `ambiguous` when the name occurs more than once (a tossed cookie).
 */
export function cookieSession(req: FastifyRequest): { token?: string; problem?: 'ambiguous' | 'malformed' } {
  const values = rawCookieValues(req, modeOf(req).session);
  if (values.length === 0) return {};
  if (values.length > 1) return { problem: 'ambiguous' };
  const v = values[0]!;
  return TOKEN.test(v) ? { token: v } : { problem: 'malformed' };
}

/** The session token of the mode's session cookie, when present exactly once and well-formed. */
export function cookieSessionToken(req: FastifyRequest): string | undefined {
  return cookieSession(req).token;
}

/**
 * Check a cookie-authenticated request: an unsafe method (not GET/HEAD/OPTIONS) needs
 * `X-CSRF-Token` whose SHA-256 equals the session's `csrf_hash` (constant-time compare), and an
 * `Origin` header, when present, equal to the request's own origin.
 * @param csrfHash SHA-256 (hex) of the session's CSRF token; null (not a cookie session) always fails
 * @throws ApiError CSRF_TOKEN_INVALID (403)
 */
export function checkCsrf(req: FastifyRequest, csrfHash: string | null): void {
  if (SAFE_METHODS.has(req.method)) return;
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `${req.protocol}://${req.host}`) {
    throw new ApiError('CSRF_TOKEN_INVALID', 'a cookie-authenticated request from another origin is refused');
  }
  const raw = req.headers[CSRF_HEADER];
  const sent = typeof raw === 'string' && raw !== '' ? raw : undefined;
  // both sides are 64 hex characters, so the compare's time does not depend on the header
  const got = Buffer.from(sha256Hex(sent ?? ''));
  const want = Buffer.from(csrfHash ?? '');
  if (sent === undefined || csrfHash === null || got.length !== want.length || !timingSafeEqual(got, want)) {
    throw new ApiError('CSRF_TOKEN_INVALID', 'send the value of the CSRF cookie in the X-CSRF-Token header');
  }
}

/**
 * The admin session of a request: `Authorization: Bearer <token>` of a `bearer` session (CLI,
 * SDK), else the mode's session cookie of a `cookie` session, whose unsafe requests must pass
 * {@link checkCsrf}. A session of the other transport is no session.
 * @throws ApiError SESSION_REQUIRED (401) without a live session of the transport used, or when
 *   the session cookie occurs more than once; CSRF_TOKEN_INVALID (403)
 */
export async function authenticateSession(req: FastifyRequest, sessions: SessionSource): Promise<SessionUser> {
  const h = req.headers.authorization;
  const m = typeof h === 'string' ? /^Bearer ([A-Za-z0-9_-]{1,200})$/.exec(h) : null;
  if (m?.[1] !== undefined) {
    const s = await sessions.sessionFor(m[1], 'bearer');
    if (s === null) {
      throw new ApiError('SESSION_REQUIRED', 'log in and send Authorization: Bearer <token> (or the session cookie)');
    }
    return s.user;
  }
  const c = cookieSession(req);
  if (c.problem === 'ambiguous') {
    throw new ApiError(
      'SESSION_REQUIRED',
      'the request carries more than one session cookie (one was planted); clear this site’s cookies and log in again',
    );
  }
  const s = c.token !== undefined ? await sessions.sessionFor(c.token, 'cookie') : null;
  if (s === null) {
    throw new ApiError('SESSION_REQUIRED', 'log in and send Authorization: Bearer <token> (or the session cookie)');
  }
  checkCsrf(req, s.csrfHash);
  return s.user;
}
