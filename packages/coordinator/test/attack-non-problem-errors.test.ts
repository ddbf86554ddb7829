/**
 * Attack (issue #27 item 6): every 4xx/5xx the coordinator emits is `application/problem+json`
 * with a code from the catalogue — including the responses Node's HTTP parser and fastify used to
 * write themselves before any route or error handler ran (header too large 431, parameter too long
 * 414, bad URL encoding 400, malformed request lines and headers 400, missing Host 400, unknown
 * expectations 417, shutting down 503). Requests go over raw sockets (node:net), so nothing is
 * normalised by an HTTP client; a fast-check property throws random bytes at the request line.
 */
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../src/errors.js';
import { type Harness, startHarness } from './helpers.js';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

let h: Harness;
let port = 0;

beforeAll(async () => {
  h = await startHarness({ coordinator: { rateLimit: { max: 100_000 } } });
  port = Number(new URL(h.url).port);
});
afterAll(async () => {
  await h?.close();
});

/**
 * Write `data` on a fresh connection and read the first response (null when the server closes
 * without answering). Bounded: gives up after `timeoutMs`.
 */
function raw(data: string | Uint8Array, timeoutMs = 5000, p = port): Promise<RawResponse | null> {
  return new Promise((resolve, reject) => {
    const s = connect(p, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s.destroy();
      resolve(parse(Buffer.concat(chunks)));
    };
    const timer = setTimeout(() => {
      settled = true;
      s.destroy();
      reject(
        new Error(`no complete response within ${timeoutMs} ms; got ${JSON.stringify(String(Buffer.concat(chunks)))}`),
      );
    }, timeoutMs);
    s.on('connect', () => s.write(data));
    s.on('data', (d) => {
      chunks.push(d);
      const r = parse(Buffer.concat(chunks));
      if (r !== null && Buffer.byteLength(r.body) >= Number(r.headers['content-length'] ?? Number.POSITIVE_INFINITY)) {
        finish();
      }
    });
    s.on('end', finish);
    s.on('close', finish);
    s.on('error', () => finish());
  });
}

function parse(buf: Buffer): RawResponse | null {
  const text = buf.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (m === null) return null;
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  return {
    status: Number(m[1]),
    headers,
    body: buf.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1')).toString(),
  };
}

/** The response is an RFC 9457 problem from the catalogue with the expected status and code. */
function expectProblem(r: RawResponse | null, status: number, code: string, what: string) {
  expect(r, `${what}: no response`).not.toBeNull();
  const res = r!;
  expect({ what, status: res.status, type: res.headers['content-type'] }).toEqual({
    what,
    status,
    type: expect.stringContaining('application/problem+json'),
  });
  const body = JSON.parse(res.body);
  expect({ what, code: body.code, status: body.status }).toEqual({ what, code, status });
  expect(ERROR_CATALOGUE[body.code as keyof typeof ERROR_CATALOGUE]?.status).toBe(status);
}

const get = (path: string, extra = '') =>
  `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${extra}\r\n`;
const post = (path: string, contentType: string, body: string, extra = '') =>
  `POST ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: ${contentType}\r\n` +
  `Content-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

describe('every error response is problem+json from the catalogue (raw sockets)', () => {
  it('framework errors: headers too large, parameter too long, bad URL encodings', async () => {
    const wallets = () => `/api/v1/profiles/${h.profileId}/wallets`;
    expectProblem(
      await raw(get(wallets(), `X-Big: ${'a'.repeat(20_000)}\r\n`)),
      431,
      'HEADERS_TOO_LARGE',
      'huge header',
    );
    expectProblem(await raw(get(`/api/v1/profiles/${'a'.repeat(300)}/wallets`)), 414, 'URI_TOO_LONG', 'long parameter');
    expectProblem(await raw(get(`/api/v1/${'a'.repeat(20_000)}`)), 431, 'HEADERS_TOO_LARGE', 'huge request line');
    for (const path of ['/api/v1/profiles/%E0%A4%A/wallets', '/api/v1/profiles/%ZZ/wallets', '/admin/v1/users/%']) {
      expectProblem(await raw(get(path)), 400, 'BAD_REQUEST', `bad encoding ${path}`);
    }
  });

  it('Node parser errors: malformed request lines, headers, lengths, a missing Host, an unknown expectation', async () => {
    const cases: [string, string | Uint8Array, number, string][] = [
      ['garbage line', 'GARBAGE\r\n\r\n', 400, 'BAD_REQUEST'],
      ['no target', 'GET\r\n\r\n', 400, 'BAD_REQUEST'],
      ['bad version', 'GET / HTTP/9.9\r\nHost: x\r\n\r\n', 400, 'BAD_REQUEST'],
      ['unknown method', 'FOO / HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'BAD_REQUEST'],
      ['binary', Uint8Array.from([0, 1, 2, 255, 254, 13, 10, 13, 10]), 400, 'BAD_REQUEST'],
      ['bad header name', 'GET / HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n', 400, 'BAD_REQUEST'],
      ['bad content-length', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400, 'BAD_REQUEST'],
      [
        'content-length and chunked',
        'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
        400,
        'BAD_REQUEST',
      ],
      ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n', 400, 'BAD_REQUEST'],
      ['missing host', 'GET /api/v1/profiles HTTP/1.1\r\nConnection: close\r\n\r\n', 400, 'BAD_REQUEST'],
      [
        'unknown expectation',
        get(`/api/v1/profiles/${h.profileId}/wallets`, 'Expect: teapot\r\n'),
        401,
        'API_KEY_MISSING',
      ],
      ['no route', get('/nope'), 404, 'ROUTE_NOT_FOUND'],
    ];
    for (const [what, data, status, code] of cases) expectProblem(await raw(data), status, code, what);
  });

  it('body errors: bad JSON, wrong content types, a body too large', async () => {
    const path = `/api/v1/profiles/${h.profileId}/wallets`;
    const key = `X-API-Key: ${h.apiKey}\r\nIdempotency-Key: ${crypto.randomUUID()}\r\n`;
    expectProblem(await raw(post(path, 'application/json', '{', key)), 400, 'MALFORMED_JSON', 'bad JSON');
    expectProblem(await raw(post(path, 'application/json', '', key)), 400, 'MALFORMED_JSON', 'empty JSON');
    expectProblem(await raw(post(path, 'text/plain', '{}', key)), 415, 'UNSUPPORTED_MEDIA_TYPE', 'text/plain');
    expectProblem(await raw(post(path, 'application/xml', '<a/>', key)), 415, 'UNSUPPORTED_MEDIA_TYPE', 'xml');
    const big = JSON.stringify({ name: 'x'.repeat(70_000) });
    expectProblem(await raw(post(path, 'application/json', big, key)), 413, 'PAYLOAD_TOO_LARGE', 'large body');
  });

  it('a request arriving while the coordinator shuts down gets 503 problem+json', async () => {
    const own = await startHarness();
    try {
      // A connection whose request has begun (so the shutdown waits for it) and whose headers end
      // only once the shutdown is under way.
      const s = connect(Number(new URL(own.url).port), '127.0.0.1');
      await new Promise<void>((r) => s.on('connect', () => r()));
      const chunks: Buffer[] = [];
      s.on('data', (d) => chunks.push(d));
      s.write('GET /nope HTTP/1.1\r\nHost: loc');
      await new Promise((r) => setTimeout(r, 50));
      const closing = own.c.app.close();
      await new Promise((r) => setTimeout(r, 50));
      s.write('alhost\r\n\r\n');
      await expect.poll(() => parse(Buffer.concat(chunks)) !== null, { timeout: 5000 }).toBe(true);
      s.destroy();
      await closing;
      expectProblem(parse(Buffer.concat(chunks)), 503, 'SHUTTING_DOWN', 'during shutdown');
    } finally {
      await own.close();
    }
  });

  it('property: random bytes in the request line never yield an error that is not problem+json', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ minLength: 1, maxLength: 64 }),
          fc
            .tuple(
              fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'G\0T', ''),
              fc.string({ maxLength: 40 }),
              fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2', '', 'http/1.1'),
            )
            .map(([m, target, v]) => new TextEncoder().encode(`${m} /${target} ${v}`)),
        ),
        fc.boolean(),
        async (line, withHost) => {
          const tail = withHost ? '\r\nHost: localhost\r\nConnection: close\r\n\r\n' : '\r\nConnection: close\r\n\r\n';
          const r = await raw(Buffer.concat([line, Buffer.from(tail)]));
          if (r === null || r.status < 400) return;
          expect(r.headers['content-type']).toContain('application/problem+json');
          if (Buffer.from(line).toString('latin1').startsWith('HEAD ')) return; // a HEAD answer has no body
          const body = JSON.parse(r.body);
          expect(ERROR_CATALOGUE[body.code as keyof typeof ERROR_CATALOGUE]?.status).toBe(r.status);
        },
      ),
      { numRuns: 150 },
    );
  });
});
