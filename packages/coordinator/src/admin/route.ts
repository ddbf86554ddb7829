/**
 * The admin API's shared route plumbing, used by every room's routes: the session authentication
 * hook (bearer token or session cookie with CSRF check → `req.adminUser`), the role check, the step-up guard, the per-address rate
 * limit of unauthenticated routes, and {@link AdminRouter.route}, which turns a {@link RouteSpec}
 * into a fastify route with its OpenAPI schema and error responses (problem+json, `errors.ts`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import { errorResponses } from '../api/schemas.js';
import { ApiError, type ErrorCode } from '../errors.js';
import { clientAddressKey } from '../server.js';
import type { SessionUser } from '../users/store.js';
import type { Clock } from '../util.js';
import { authenticateSession, type SessionSource } from './cookies.js';
import type { LiveStreams } from './live.js';
import type { AdminOptions, Role } from './options.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the session hook. */
    adminUser?: SessionUser;
  }
}

const COMMON: ErrorCode[] = [
  'SESSION_REQUIRED',
  'CSRF_TOKEN_INVALID',
  'ROLE_FORBIDDEN',
  'VALIDATION_FAILED',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
];
const BODY: ErrorCode[] = ['MALFORMED_JSON', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE'];

/** Per-client-address rate limit of a route (`@fastify/rate-limit` route config). */
export interface RouteRateLimit {
  max: number;
  timeWindow: number;
  keyGenerator: (req: FastifyRequest) => string;
}

/** One admin route: who may call it, its OpenAPI text and schemas, its success status. */
export interface RouteSpec {
  /** null = no session required. */
  roles: readonly Role[] | null;
  summary: string;
  description?: string;
  tags: string[];
  params?: object;
  querystring?: object;
  body?: object;
  status: number;
  response: object;
  errors?: ErrorCode[];
  rateLimit?: RouteRateLimit;
  /**
   * Needs a fresh step-up: `true` always (checked before the body is parsed), or a predicate on
   * the validated request (checked before the handler), e.g. only when the body changes a role.
   */
  stepUp?: true | ((req: FastifyRequest) => boolean);
}

/** A route handler: its result is the body of `spec.status` (none for 204). */
export type RouteHandler = (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** Dependencies of {@link createAdminRouter}. */
export interface AdminRouterComponents {
  readonly app: FastifyInstance;
  /**
   * Resolves a session token, for the transport it came by (bearer header or session cookie), to
   * its live session (users room, `SessionService.sessionFor`).
   */
  readonly sessions: SessionSource;
  readonly clock: Clock;
  readonly options: Pick<AdminOptions, 'stepUpTtlMs' | 'loginRateLimit'>;
  /** Live streams (SSE) of the admin API. */
  readonly live: LiveStreams;
}

/** What each room's routes register through. */
export interface AdminRouter {
  /** Register one route (see {@link RouteSpec}). */
  route(method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, spec: RouteSpec, handler: RouteHandler): void;
  /** Rate limit of the unauthenticated routes (init, login, verify, enrollment): per client address only. */
  readonly loginLimit: RouteRateLimit;
  /** Step-up window in whole minutes (for route descriptions). */
  readonly stepUpMinutes: number;
  /** Live streams (SSE): a handler returns `live.stream(…)`. */
  readonly live: LiveStreams;
  /** Whether the session of `req` has a step-up window open now. */
  stepUpFresh(req: FastifyRequest): boolean;
}

/** The acting user's id (a route with roles only). */
export const actor = (req: FastifyRequest): string => req.adminUser!.user_id;
/** The validated path parameters. */
export const P = <T>(req: FastifyRequest) => req.params as T;
/** The validated body. */
export const B = <T>(req: FastifyRequest) => req.body as T;

/** Build the router of one fastify context (all rooms' admin routes register through one). */
export function createAdminRouter(c: AdminRouterComponents): AdminRouter {
  const { app, sessions, clock, options } = c;
  // Both run as preParsing hooks: after the rate limit (onRequest), before body parsing and validation.
  const sessionHook = async <T>(req: FastifyRequest, _reply: unknown, payload: T): Promise<T> => {
    // Bearer (CLI, SDK) or the dashboard's cookie with its CSRF checks (cookies.ts).
    const user = await authenticateSession(req, sessions);
    req.adminUser = user;
    return payload;
  };
  const roleHook =
    (roles: readonly Role[]) =>
    async <T>(req: FastifyRequest, _reply: unknown, payload: T): Promise<T> => {
      if (!roles.includes(req.adminUser!.role)) {
        throw new ApiError('ROLE_FORBIDDEN', `this action needs role ${roles.join(' or ')}`);
      }
      return payload;
    };
  const fresh = (req: FastifyRequest) => {
    const until = req.adminUser!.step_up_until;
    return until !== null && until.getTime() > clock().getTime();
  };
  const requireStepUp = (req: FastifyRequest) => {
    if (!fresh(req)) {
      throw new ApiError(
        'STEP_UP_REQUIRED',
        'this action needs a fresh step-up: POST /admin/v1/session/step-up with your TOTP code (or password without TOTP)',
      );
    }
  };
  const stepUpHook = async <T>(req: FastifyRequest, _reply: unknown, payload: T): Promise<T> => {
    requireStepUp(req);
    return payload;
  };
  const stepUpMinutes = Math.round(options.stepUpTtlMs / 60_000);

  const route: AdminRouter['route'] = (method, url, spec, handler) => {
    const errors = [
      ...(spec.roles === null ? ['VALIDATION_FAILED', 'RATE_LIMITED', 'INTERNAL_ERROR'] : COMMON),
      ...(spec.body ? BODY : []),
      ...(spec.stepUp ? (['STEP_UP_REQUIRED'] as ErrorCode[]) : []),
      ...(spec.errors ?? []),
    ] as ErrorCode[];
    const stepUp = spec.stepUp;
    const roleText =
      (spec.roles === null ? 'No session required.' : `Roles: ${spec.roles.join(', ')}.`) +
      (stepUp === true
        ? ` Needs a fresh step-up (POST /admin/v1/session/step-up, valid ${stepUpMinutes} min), else 403 \`STEP_UP_REQUIRED\`.`
        : stepUp
          ? ` The sensitive changes named above need a fresh step-up (POST /admin/v1/session/step-up, valid ${stepUpMinutes} min), else 403 \`STEP_UP_REQUIRED\`.`
          : '');
    const opts: RouteShorthandOptions = {
      preParsing:
        spec.roles === null ? [] : [sessionHook, roleHook(spec.roles), ...(stepUp === true ? [stepUpHook] : [])],
      ...(typeof stepUp === 'function'
        ? {
            preHandler: async (req: FastifyRequest) => {
              if (stepUp(req)) requireStepUp(req);
            },
          }
        : {}),
      ...(spec.rateLimit ? { config: { rateLimit: spec.rateLimit } } : {}),
      schema: {
        tags: spec.tags,
        summary: spec.summary,
        description: `${spec.description ? `${spec.description} ` : ''}${roleText}`,
        security: spec.roles === null ? [] : [{ AdminSession: [] }],
        // machine-readable role and step-up rules: clients (the dashboard) hide what a role cannot do
        ...(spec.roles === null ? {} : { 'x-roles': [...spec.roles] }),
        ...(stepUp === undefined ? {} : { 'x-step-up': stepUp === true ? 'always' : 'conditional' }),
        ...(spec.params ? { params: spec.params } : {}),
        ...(spec.querystring ? { querystring: spec.querystring } : {}),
        ...(spec.body ? { body: spec.body } : {}),
        response: { [spec.status]: spec.response, ...errorResponses([...new Set(errors)]) },
      },
    };
    app.route({
      method,
      url,
      ...opts,
      handler: async (req, reply) => {
        const out = await handler(req, reply);
        if (reply.sent) return reply; // a live stream took the reply over (live.ts)
        reply.code(spec.status);
        return spec.status === 204 ? reply.send() : out;
      },
    });
  };
  // Unauthenticated routes: per client address only — never keyed by a header the client picks
  // (#26 item 1); the per-account counts are in the users room (SessionService.login / verifyLogin).
  const loginLimit = {
    max: options.loginRateLimit.max,
    timeWindow: options.loginRateLimit.windowMs,
    keyGenerator: clientAddressKey,
  };
  return { route, loginLimit, stepUpMinutes, stepUpFresh: fresh, live: c.live };
}
