/**
 * The coordinator's problem answers outside the routes (server.ts): the RFC 9457 reply of an
 * error, the catalogue error of each fastify and Node HTTP failure (framework errors, the HTTP
 * parser's client errors, written raw on the socket), and when each routeless error is answered.
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, ERROR_CATALOGUE, type ROUTELESS_ERRORS, toProblem } from './errors.js';
import { cacheAndTransportHeaders, rawHelmet, SECURITY_HEADERS } from './http-headers.js';

/**
 * Fastify answers a path it cannot decode (`%zz`) or a path parameter over `maxParamLength` before
 * routing, so no hook runs: give those the security headers too, and the problem of
 * {@link frameworkError} (400 `BAD_REQUEST`, 414 `URI_TOO_LONG`).
 */
export function frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  rawHelmet(req.raw, reply.raw, () => {});
  cacheAndTransportHeaders(req, reply);
  void sendProblem(reply, frameworkError(err), undefined, req);
}

/** When each of {@link ROUTELESS_ERRORS} is answered (OpenAPI `components.responses`). */
export const ROUTELESS_WHEN: Record<(typeof ROUTELESS_ERRORS)[number], string> = {
  ROUTE_NOT_FOUND: 'Any method and path without a route',
  BAD_REQUEST:
    'Any request that is not well-formed HTTP/1.1 (request line, header syntax, lengths, an HTTP/1.1 request without Host) or whose path does not decode',
  REQUEST_TIMEOUT: 'Any request whose headers or body do not arrive in time',
  URI_TOO_LONG: 'Any request whose path has a parameter longer than 200 characters',
  HEADERS_TOO_LARGE: 'Any request whose request line and headers exceed 16 KiB',
  SHUTTING_DOWN: 'Any request arriving while the coordinator shuts down (the connection closes)',
};

/** Render `api` as the RFC 9457 reply (status from the catalogue, its extra headers). */
export function sendProblem(reply: FastifyReply, api: ApiError, instance?: string, req?: FastifyRequest) {
  for (const [k, v] of Object.entries(api.headers ?? {})) reply.header(k, v);
  if (req !== undefined && api.status >= 500) req.log.error({ code: api.code }, api.message);
  return reply
    .code(ERROR_CATALOGUE[api.code].status)
    .type('application/problem+json')
    .serializer(JSON.stringify)
    .send(toProblem(api, instance));
}

/**
 * The catalogue error of a fastify error that is not a validation error, or `undefined` for an
 * unexpected one (a 500). JSON syntax errors and empty JSON bodies (also prototype poisoning) → MALFORMED_JSON;
 * other 4xx errors of the body reader (e.g. an invalid Content-Length) → BAD_REQUEST.
 */
export function fastifyError(fe: FastifyError): ApiError | undefined {
  const code = fe.code ?? '';
  const status = fe.statusCode;
  if (status === 415 || code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'send Content-Type: application/json');
  }
  if (status === 413 || code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new ApiError('PAYLOAD_TOO_LARGE', 'request bodies are limited to 64 KiB');
  }
  if (status === 429) return new ApiError('RATE_LIMITED', 'slow down and retry after the Retry-After delay');
  if (code === 'FST_ERR_CTP_INVALID_JSON_BODY' || code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || fe instanceof SyntaxError) {
    return new ApiError('MALFORMED_JSON', 'the request body could not be parsed as JSON');
  }
  if (status === 404) return new ApiError('ROUTE_NOT_FOUND', 'no such route');
  if (status === 408) return new ApiError('REQUEST_TIMEOUT', 'the request was not received in time');
  if (status === 414) return frameworkError(fe);
  if (status === 431) return new ApiError('HEADERS_TOO_LARGE', 'the request headers are too large');
  if (status !== undefined && status >= 400 && status < 500) {
    return new ApiError('BAD_REQUEST', 'the request could not be read (its body or framing is malformed)');
  }
  return undefined;
}

/** Fastify's routing errors (fastify `frameworkErrors`): bad URL encoding, overlong parameter. */
function frameworkError(err: FastifyError): ApiError {
  switch (err.code) {
    case 'FST_ERR_BAD_URL':
      return new ApiError('BAD_REQUEST', 'the request path is not a valid percent-encoded URL');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ApiError('URI_TOO_LONG', 'a path parameter is longer than 200 characters');
    default:
      return new ApiError('INTERNAL_ERROR', 'an unexpected error occurred; it has been logged');
  }
}

/**
 * Node's `clientError` (fastify `clientErrorHandler`): the HTTP parser refused the request before
 * any route ran — header overflow (431), request timeout (408), anything else malformed (400). The
 * answer is written raw on the socket as problem+json, then the connection closes (the parser's
 * state is lost). Nothing of the request is echoed.
 */
export function clientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const api =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new ApiError('HEADERS_TOO_LARGE', 'the request line and headers together are limited to 16 KiB')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new ApiError('REQUEST_TIMEOUT', 'the request was not received in time')
        : new ApiError('BAD_REQUEST', 'the request is not well-formed HTTP/1.1');
  // A response already under way on this connection cannot be followed by another one.
  const pending = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (pending?.headersSent === true) socket.destroy();
  else writeRawProblem(socket, api);
}

/** Write `api` as a complete problem+json response straight on the socket, then close it. */
export function writeRawProblem(socket: Duplex, api: ApiError): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(toProblem(api));
  socket.end(
    `HTTP/1.1 ${api.status} ${STATUS_CODES[api.status]}\r\nContent-Type: application/problem+json\r\n` +
      `X-Content-Type-Options: nosniff\r\nCache-Control: ${SECURITY_HEADERS.cacheControl}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}
