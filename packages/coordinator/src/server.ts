/**
 * The coordinator's HTTP server: fastify with one error path (every failure becomes an RFC 9457
 * problem from the catalogue — route errors, fastify's framework errors, Node's HTTP parser
 * errors and requests arriving during shutdown alike), Ajv validation (no type coercion of JSON
 * bodies; query strings coerced), security headers on every response (http-headers.ts `SECURITY_HEADERS`), a
 * rate limit per resolved credential or client address, and the OpenAPI 3.1 document at
 * `/api/openapi.json`; problems outside the routes in http-errors.ts. {@link HttpServer} runs it
 * as a `Startable` (listen, close).
 */
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { CustodianError } from '@custodian/crypto';
import cookie from '@fastify/cookie';
import helmet from '@fastify/helmet';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyRequest } from 'fastify';
import { SHARED_SCHEMAS } from './api/schemas.js';
import { ApiError, ERROR_CATALOGUE, type FieldError, ROUTELESS_ERRORS } from './errors.js';
import {
  clientError,
  fastifyError,
  frameworkErrors,
  ROUTELESS_WHEN,
  sendProblem,
  writeRawProblem,
} from './http-errors.js';
import { cacheAndTransportHeaders, HELMET_OPTIONS } from './http-headers.js';
import type { Startable } from './lifecycle.js';
import { documentRoute } from './operation-ids.js';
import { OneLineRequestLog } from './request-log.js';

export { fastifyError } from './http-errors.js';
export { isLoopbackHostname, SECURITY_HEADERS } from './http-headers.js';

/**
 * Rate limit of every route without its own: per resolved credential (a verified API key, a live
 * admin session's user) or, without one — no header, or a header that does not verify — per
 * client address ({@link clientAddressKey}).
 */
export interface RateLimitOptions {
  /** Requests allowed per window. Default 600. */
  max: number;
  /** Window length in ms. Default 60 000. */
  windowMs: number;
}

/** Options of {@link createServer}. */
export interface ServerOptions {
  rateLimit: RateLimitOptions;
  /**
   * Proxies whose `X-Forwarded-For` is believed: addresses or CIDR ranges (`10.0.0.0/8`,
   * `::1`), checked by {@link parseTrustProxy}. Empty (default): no proxy is trusted and the
   * client address is the socket's peer — behind a proxy every client then shares its bucket.
   */
  trustProxy: readonly string[];
  /**
   * Resolve the request's credential to a stable bucket name (e.g. `key:<api_key_id>`), only when
   * it verifies; `undefined` puts the request in its client address's bucket. Never return a value
   * derived from an unverified header: the client chooses those.
   */
  resolveCredential?: (req: FastifyRequest) => Promise<string | undefined>;
  /** pino logger options, or false. */
  logger: boolean | Record<string, unknown>;
  /** Public base URL for the OpenAPI `servers` entry. */
  baseUrl?: string;
  /** Extra description appended to the OpenAPI info. */
  description: string;
  /** OpenAPI 3.1 `webhooks` object (outgoing event deliveries). */
  webhooks?: Record<string, unknown>;
}

function makeAjv(coerce: boolean) {
  const ajv = new Ajv({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
  });
  addFormats.default(ajv);
  return ajv;
}

function fieldOf(part: string, e: { instancePath?: string; params?: Record<string, unknown> }): string {
  const path = (e.instancePath ?? '')
    .split('/')
    .filter((s) => s !== '')
    .map((s) => (/^[0-9]+$/.test(s) ? `[${s}]` : `.${s}`))
    .join('');
  const missing = e.params?.missingProperty ?? e.params?.additionalProperty;
  const prefix = part === 'headers' ? 'header' : part === 'querystring' ? 'query' : part;
  return `${prefix}${path}${typeof missing === 'string' ? `.${missing}` : ''}`;
}

/**
 * Create the fastify instance with error handling, validation, rate limiting and OpenAPI.
 * Routes are registered by the caller.
 */
export async function createServer(opts: ServerOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger:
      opts.logger === false
        ? false
        : {
            level: 'info',
            redact: [
              'req.headers["x-api-key"]',
              'req.headers.authorization',
              'req.headers.cookie',
              'req.headers["x-csrf-token"]',
              'res.headers["set-cookie"]',
            ],
            ...(typeof opts.logger === 'object' ? opts.logger : {}),
          },
    bodyLimit: 64 * 1024,
    trustProxy: opts.trustProxy.length === 0 ? false : parseTrustProxy(opts.trustProxy),
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    routerOptions: { maxParamLength: 200 },
    ajv: { customOptions: { strict: false } },
    // Problem+json for what fastify and Node would otherwise answer themselves (#27 item 6):
    // undecodable or overlong paths, HTTP parser errors, a missing Host, shutdown (see below).
    frameworkErrors,
    clientErrorHandler: clientError,
    return503OnClosing: false,
    http: { requireHostHeader: false },
    // one line per request instead of fastify's two (#29): see OneLineRequestLog
    logController: new OneLineRequestLog(),
  });

  // An `Expect` other than 100-continue: Node would answer a bare 417 itself; we ignore the
  // expectation (RFC 9110 §10.1.1 allows it) and answer the request as usual.
  app.server.on('checkExpectation', (req, res) => app.routing(req, res));
  // CONNECT (proxy tunnels): Node would drop the connection without an answer.
  app.server.on('connect', (_req, socket: Duplex) =>
    writeRawProblem(socket, new ApiError('BAD_REQUEST', 'CONNECT is not supported: this is not a proxy')),
  );

  // Security headers first (before the shutdown and Host checks below), so that every later hook's early answer (a 429, a 401) carries them.
  await app.register(helmet, { global: true, ...HELMET_OPTIONS });
  app.addHook('onRequest', async (req, reply) => cacheAndTransportHeaders(req, reply));
  // Cookie parsing (the dashboard's admin session, admin/cookies.ts) before the rate limit's key.
  await app.register(cookie, { hook: 'onRequest' });

  // First hook of every request: refuse requests once shutdown has begun (503, the connection
  // closes) and HTTP/1.1 requests without Host (RFC 9112 §3.2), both as problems.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (req) => {
    if (closing) {
      throw new ApiError('SHUTTING_DOWN', 'the coordinator is shutting down; retry shortly', undefined, {
        connection: 'close',
        'retry-after': '1',
      });
    }
    if (req.raw.httpVersion === '1.1' && req.headers.host === undefined) {
      throw new ApiError('BAD_REQUEST', 'an HTTP/1.1 request must carry a Host header');
    }
  });

  // JSON only: without this, text/plain bodies would reach validation as strings (422 instead of 415).
  app.removeContentTypeParser('text/plain');

  // Strings in a JSON body must be well-formed UTF-16: a lone surrogate (`"\ud800"` is valid JSON)
  // has no UTF-8 form and is refused by the canonical encoding that every digest uses (#20 item 9),
  // so it is a 422 naming the field here rather than a failure deep in a digest.
  app.addHook('preValidation', async (req) => {
    const at = loneSurrogateAt(req.body, 'body');
    if (at !== undefined) {
      throw new ApiError('VALIDATION_FAILED', `${at}: not a well-formed string (lone UTF-16 surrogate)`, [
        { field: at, message: 'not a well-formed string (lone UTF-16 surrogate)' },
      ]);
    }
  });

  const bodyAjv = makeAjv(false);
  const otherAjv = makeAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : otherAjv).compile(schema as object),
  );
  for (const s of SHARED_SCHEMAS) app.addSchema(s);

  app.setErrorHandler(async (err: FastifyError | ApiError, req, reply) => {
    let api: ApiError;
    if (err instanceof ApiError) {
      api = err;
    } else if ((err as FastifyError).validation) {
      const fe = err as FastifyError;
      const part = fe.validationContext ?? 'body';
      const errors: FieldError[] = (fe.validation ?? []).map((v) => ({
        field: fieldOf(part, v as { instancePath?: string; params?: Record<string, unknown> }),
        message: v.message ?? 'invalid',
      }));
      const first = errors[0];
      api = new ApiError('VALIDATION_FAILED', first ? `${first.field}: ${first.message}` : 'invalid request', errors);
    } else {
      const fe = err as FastifyError;
      const mapped = fastifyError(fe);
      if (mapped !== undefined) {
        api = mapped;
      } else {
        // another family's error (chains, signer…): its code and family are logged, the client
        // sees the catalogue's INTERNAL_ERROR (no internal detail leaves the process)
        const family = err instanceof CustodianError ? { family: err.family, code: err.code } : {};
        req.log.error({ err, ...family }, 'unhandled error');
        api = new ApiError('INTERNAL_ERROR', 'an unexpected error occurred; it has been logged');
      }
    }
    return sendProblem(reply, api, req.url.split('?')[0]);
  });

  app.setNotFoundHandler(async (req, reply) => {
    const api = new ApiError('ROUTE_NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`);
    return sendProblem(reply, api);
  });

  await app.register(rateLimit, {
    global: true,
    max: opts.rateLimit.max,
    timeWindow: opts.rateLimit.windowMs,
    keyGenerator: async (req) => (await opts.resolveCredential?.(req)) ?? clientAddressKey(req),
    errorResponseBuilder: (_req, context) => {
      const seconds = Math.max(1, Math.ceil(context.ttl / 1000));
      return new ApiError('RATE_LIMITED', `rate limit of ${context.max} requests per window exceeded`, undefined, {
        'retry-after': String(seconds),
      });
    },
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Custodian custody API',
        version: '1.0.0',
        description: opts.description,
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      // Without a public base URL: the coordinator that serves the document (a relative server URL).
      servers: [{ url: opts.baseUrl ?? '/' }],
      ...(opts.webhooks ? { webhooks: opts.webhooks } : {}),
      components: {
        responses: {
          ...Object.fromEntries(
            ROUTELESS_ERRORS.map((code) => [
              code,
              {
                description: `${ROUTELESS_WHEN[code]}: ${ERROR_CATALOGUE[code].status} \`${code}\`: ${ERROR_CATALOGUE[code].title}`,
                content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
              },
            ]),
          ),
        },
        securitySchemes: {
          ApiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'X-API-Key',
            description:
              'API key created in the admin API (named, shown once, stored as SHA-256, revocable), scoped to one profile.',
          },
          AdminSession: {
            type: 'http',
            scheme: 'bearer',
            description:
              'Admin session token from POST /admin/v1/login/verify; expires. The dashboard instead uses the `__Host-custodian_session` cookie (`custodian_session` on plain http to loopback; login with `transport: cookie`) plus `X-CSRF-Token` on state-changing requests.',
          },
        },
      },
    },
    transform: documentRoute,
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });

  app.get('/api/openapi.json', { schema: { hide: true }, config: { rateLimit: false } }, async () => app.swagger());
  return app;
}

/**
 * Check the `trustProxy` list: each entry an IPv4/IPv6 address or CIDR range.
 * @returns a copy, for fastify's `trustProxy` (proxy-addr)
 * @throws RangeError naming `trustProxy[i]` for an entry that is neither
 */
export function parseTrustProxy(list: readonly string[]): string[] {
  return list.map((entry, i) => {
    const [addr = '', prefix, ...rest] = entry.trim().split('/');
    const family = isIP(addr);
    const bits = family === 4 ? 32 : 128;
    const okPrefix = prefix === undefined || (/^[0-9]{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || !okPrefix || rest.length > 0) {
      throw new RangeError(`trustProxy[${i}]: expected an IP address or CIDR range, got ${JSON.stringify(entry)}`);
    }
    return entry.trim();
  });
}

/**
 * Rate-limit bucket of the client address: `req.ip` (the socket peer, or the nearest untrusted
 * `X-Forwarded-For` hop behind a trusted proxy). IPv6 clients are bucketed by their /64, since one
 * host usually holds a whole /64; IPv4-mapped IPv6 addresses count as the IPv4 address. Never
 * derived from a credential header.
 */
export function clientAddressKey(req: FastifyRequest): string {
  return `ip:${addressBucket(req.ip)}`;
}

/** `a.b.c.d` for IPv4 (and `::ffff:a.b.c.d`), the first four hextets + `::/64` for IPv6. */
export function addressBucket(ip: string): string {
  const mapped = /^::ffff:([0-9.]+)$/i.exec(ip);
  if (mapped?.[1] !== undefined && isIP(mapped[1]) === 4) return mapped[1];
  if (isIP(ip) !== 6) return ip;
  const [head = '', tail = ''] = ip.toLowerCase().split('%')[0]!.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = ip.includes('::') ? (tail === '' ? [] : tail.split(':')) : [];
  const full = ip.includes('::') ? [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t] : h;
  return `${full
    .slice(0, 4)
    .map((x) => Number.parseInt(x, 16).toString(16))
    .join(':')}::/64`;
}

const LONE_SURROGATE = /\p{Surrogate}/u;

/** Path (`body.a.b[2]`) of the first string or record key in a parsed JSON value with a lone surrogate. */
export function loneSurrogateAt(value: unknown, path: string, depth = 0): string | undefined {
  if (typeof value === 'string') return LONE_SURROGATE.test(value) ? path : undefined;
  if (typeof value !== 'object' || value === null || depth > 64) return undefined;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const at = loneSurrogateAt(v, `${path}[${i}]`, depth + 1);
      if (at !== undefined) return at;
    }
    return undefined;
  }
  for (const [k, v] of Object.entries(value)) {
    if (LONE_SURROGATE.test(k)) return path;
    const at = loneSurrogateAt(v, `${path}.${k}`, depth + 1);
    if (at !== undefined) return at;
  }
  return undefined;
}

/** Where {@link HttpServer} listens. */
export interface HttpServerComponents {
  app: FastifyInstance;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8080; 0 = any free port. */
  port?: number;
  /**
   * How long (ms) `stop()` lets requests in flight finish before it closes every connection still
   * open (a stuck or slow client must not keep the process up, #29). Default 5000.
   */
  drainMs?: number;
}

/** The fastify app as a {@link Startable}: `start()` listens, `stop()` closes (both idempotent). */
export class HttpServer implements Startable {
  #url: string | undefined;
  #listening: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(private readonly c: HttpServerComponents) {}

  /** The base URL once listening (e.g. `http://127.0.0.1:8080`). */
  get url(): string | undefined {
    return this.#url;
  }

  /** Listen. @throws the listen error (e.g. `EADDRINUSE`) */
  start(): Promise<void> {
    this.#listening ??= this.c.app
      .listen({ host: this.c.host ?? '127.0.0.1', port: this.c.port ?? 8080 })
      .then((url) => {
        this.#url = url;
      });
    return this.#listening;
  }

  /**
   * Stop listening and close the app (its onClose hooks run): idle connections close at once,
   * requests in flight get `drainMs` to finish, then every connection left is closed.
   */
  stop(): Promise<void> {
    this.#closing ??= (async () => {
      const cut = setTimeout(() => this.c.app.server.closeAllConnections(), this.c.drainMs ?? 5_000);
      try {
        await this.c.app.close();
      } finally {
        clearTimeout(cut);
      }
    })();
    return this.#closing;
  }
}
