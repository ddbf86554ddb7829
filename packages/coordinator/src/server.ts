/**
 * The coordinator's HTTP server: fastify with one error path (every failure becomes an RFC 9457
 * problem from the catalogue), Ajv validation (no type coercion of JSON bodies; query strings
 * coerced), a per-credential rate limit, and the OpenAPI 3.1 document at `/api/openapi.json`.
 */
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { SHARED_SCHEMAS } from './api/schemas.js';
import { ApiError, ERROR_CATALOGUE, type FieldError, toProblem } from './errors.js';
import { sha256Hex } from './util.js';

/** Rate limit per credential (API key, admin session) or, without one, per client IP. */
export interface RateLimitOptions {
  /** Requests allowed per window. Default 600. */
  max: number;
  /** Window length in ms. Default 60 000. */
  windowMs: number;
}

/** Options of {@link createServer}. */
export interface ServerOptions {
  rateLimit: RateLimitOptions;
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
            redact: ['req.headers["x-api-key"]', 'req.headers.authorization'],
            ...(typeof opts.logger === 'object' ? opts.logger : {}),
          },
    bodyLimit: 64 * 1024,
    trustProxy: false,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    routerOptions: { maxParamLength: 200 },
    ajv: { customOptions: { strict: false } },
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
      const code = fe.code ?? '';
      if (fe.statusCode === 415 || code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
        api = new ApiError('UNSUPPORTED_MEDIA_TYPE', 'send Content-Type: application/json');
      } else if (fe.statusCode === 413 || code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        api = new ApiError('PAYLOAD_TOO_LARGE', 'request bodies are limited to 64 KiB');
      } else if (fe.statusCode === 429) {
        api = new ApiError('RATE_LIMITED', 'slow down and retry after the Retry-After delay');
      } else if (
        fe.statusCode === 400 ||
        (fe.statusCode !== undefined && fe.statusCode >= 400 && fe.statusCode < 500)
      ) {
        api = new ApiError('MALFORMED_JSON', 'the request body could not be parsed as JSON');
      } else {
        req.log.error({ err }, 'unhandled error');
        api = new ApiError('INTERNAL_ERROR', 'an unexpected error occurred; it has been logged');
      }
    }
    for (const [k, v] of Object.entries(api.headers ?? {})) reply.header(k, v);
    const path = req.url.split('?')[0];
    return reply
      .code(ERROR_CATALOGUE[api.code].status)
      .type('application/problem+json')
      .serializer(JSON.stringify)
      .send(toProblem(api, path));
  });

  app.setNotFoundHandler(async (req, reply) => {
    const api = new ApiError('ROUTE_NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`);
    return reply.code(404).type('application/problem+json').serializer(JSON.stringify).send(toProblem(api));
  });

  await app.register(rateLimit, {
    global: true,
    max: opts.rateLimit.max,
    timeWindow: opts.rateLimit.windowMs,
    keyGenerator: (req) => {
      const k = req.headers['x-api-key'];
      if (typeof k === 'string' && k !== '') return `key:${sha256Hex(k)}`;
      const a = req.headers.authorization;
      if (typeof a === 'string' && a !== '') return `auth:${sha256Hex(a)}`;
      return `ip:${req.ip}`;
    },
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
      ...(opts.baseUrl ? { servers: [{ url: opts.baseUrl }] } : {}),
      ...(opts.webhooks ? { webhooks: opts.webhooks } : {}),
      components: {
        responses: {
          ROUTE_NOT_FOUND: {
            description: `Any method and path without a route: 404 \`ROUTE_NOT_FOUND\`: ${ERROR_CATALOGUE.ROUTE_NOT_FOUND.title}`,
            content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
          },
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
            description: 'Admin session token from POST /admin/v1/login/verify; expires.',
          },
        },
      },
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });

  app.get('/api/openapi.json', { schema: { hide: true }, config: { rateLimit: false } }, async () => app.swagger());
  return app;
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
