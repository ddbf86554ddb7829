/**
 * The typed REST client of the custody API: openapi-fetch over the types generated from the
 * OpenAPI document (generated/api.ts, scripts/generate-openapi.mjs), with what every integration
 * needs added once — the `X-API-Key` header, an `Idempotency-Key` on the create operations (one
 * random UUID per call, the same on every retry of that call), retries (retry.ts: 429, 503, 409
 * in progress, lost connections) and errors thrown as {@link CustodianApiError} / {@link SdkError}
 * instead of returned.
 *
 * ```ts
 * const custody = createCustodianClient({ baseUrl: 'https://custody.example.com', apiKey });
 * const { data: wallet } = await custody.POST('/api/v1/profiles/{profile_id}/wallets', {
 *   params: { path: { profile_id } },
 *   body: { blockchain_ids: [ethereum] },
 * });
 * ```
 */
import createClient, { type Client, type FetchResponse, type MaybeOptionalInit } from 'openapi-fetch';
import { CustodianApiError, SdkError } from './errors.js';
import { IDEMPOTENCY_KEYED_OPERATIONS, type paths } from './generated/api.js';
import { fetchWithRetry, type RetryOptions, retryPolicy } from './retry.js';

const KEYED = new Set(IDEMPOTENCY_KEYED_OPERATIONS);

/** An operation whose idempotency header is filled in by the client: the header becomes optional. */
type KeyedByClient<Op> = Op extends { parameters: { header: infer H } }
  ? 'idempotency-key' extends keyof H
    ? Omit<Op, 'parameters'> & {
        parameters: Omit<Op['parameters'], 'header'> & {
          header?: Omit<H, 'idempotency-key'> & { 'idempotency-key'?: string };
        };
      }
    : Op
  : Op;

/** The API's paths as the client accepts them (`paths` of the document, idempotency header optional). */
export type CustodianPaths = { [P in keyof paths]: { [M in keyof paths[P]]: KeyedByClient<paths[P][M]> } };

type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'patch';
type PathsWith<M extends HttpMethod> = {
  [P in keyof CustodianPaths]: CustodianPaths[P] extends { [K in M]: unknown } ? P : never;
}[keyof CustodianPaths];
type RequiredKeysOf<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];
type InitParam<Init> =
  RequiredKeysOf<Init> extends never ? [(Init & { [key: string]: unknown })?] : [Init & { [key: string]: unknown }];
type OperationOf<P extends keyof CustodianPaths, M extends HttpMethod> = Extract<
  CustodianPaths[P][M & keyof CustodianPaths[P]],
  Record<string | number, unknown>
>;
/** The success branch of openapi-fetch's answer: errors are thrown, so `data` is the 2xx body. */
type Success<R> = R extends { data: infer D } ? { data: D; response: Response } : never;

/** One HTTP method of {@link CustodianClient}: path template, then params and body as the document types them. */
export type CustodianMethod<M extends HttpMethod> = <
  P extends PathsWith<M>,
  Init extends MaybeOptionalInit<CustodianPaths[P], M>,
>(
  path: P,
  ...init: InitParam<Init>
) => Promise<Success<FetchResponse<OperationOf<P, M>, Init, `${string}/${string}`>>>;

/** Options of {@link createCustodianClient}. */
export interface CustodianClientOptions {
  /** The coordinator's base URL (`https://custody.example.com`); paths start with `/api/v1`. */
  baseUrl: string | URL;
  /** API key (`cst_…`), sent as `X-API-Key`. Omit for the unauthenticated routes only. */
  apiKey?: string;
  /** Retry policy (retry.ts); `{ maxAttempts: 1 }` disables retries. */
  retry?: RetryOptions;
  /** Generates the idempotency keys (default `crypto.randomUUID`); must return a UUID. */
  idempotencyKey?: () => string;
  /** Further headers sent on every request. */
  headers?: Record<string, string>;
  /** The fetch to send with (default the global `fetch`). */
  fetch?: (request: Request) => Promise<Response>;
}

/** The client: one method per HTTP method, typed by path template, throwing on every error answer. */
export interface CustodianClient {
  GET: CustodianMethod<'get'>;
  POST: CustodianMethod<'post'>;
  PUT: CustodianMethod<'put'>;
  PATCH: CustodianMethod<'patch'>;
  DELETE: CustodianMethod<'delete'>;
  /**
   * The openapi-fetch client underneath (same headers, idempotency keys and retries) answering
   * `{ data, error, response }` without throwing on error answers.
   */
  readonly raw: Client<CustodianPaths>;
}

/**
 * Create a client of one coordinator. Every call: adds `X-API-Key`; on a create operation
 * (`createWallet`, `createAddress`, `createTransfer`, `estimateFee`) adds an `Idempotency-Key` unless
 * the call passes one in `params.header`, and reuses it on every retry; retries per `retry`.
 * A call resolves with `{ data, response }` for a 2xx answer, and rejects with
 * {@link CustodianApiError} (`code` from the problem details) for an error answer after the
 * retries, with {@link SdkError} `NETWORK_ERROR` when no attempt got an answer, and with the
 * signal's reason when the call's `signal` aborts.
 * @throws TypeError for a `baseUrl` that is not an absolute http(s) URL
 * @throws RangeError for an invalid `retry` policy
 */
export function createCustodianClient(options: CustodianClientOptions): CustodianClient {
  const base = new URL(options.baseUrl);
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new TypeError('baseUrl must be an http(s) URL');
  const retry = retryPolicy(options.retry);
  const send = options.fetch ?? ((r: Request) => fetch(r));
  const newKey = options.idempotencyKey ?? (() => globalThis.crypto.randomUUID());
  const raw = createClient<CustodianPaths>({
    baseUrl: base.href.replace(/\/$/, ''),
    headers: { ...options.headers, ...(options.apiKey !== undefined ? { 'x-api-key': options.apiKey } : {}) },
    fetch: (request) => fetchWithRetry(request, send, retry),
  });
  raw.use({
    onRequest({ request, schemaPath }) {
      const keyed = KEYED.has(`${request.method} ${schemaPath}`);
      if (keyed && !request.headers.has('idempotency-key') && !request.headers.has('idempotency_key')) {
        request.headers.set('idempotency-key', newKey());
      }
      return request;
    },
  });
  const method =
    (name: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE') =>
    async (path: string, ...init: unknown[]) => {
      let r: { error?: unknown; response: Response };
      try {
        r = await (raw[name] as (p: string, ...i: unknown[]) => Promise<{ error?: unknown; response: Response }>)(
          path,
          ...init,
        );
      } catch (e) {
        if ((init[0] as { signal?: AbortSignal } | undefined)?.signal?.aborted) throw e;
        throw new SdkError('NETWORK_ERROR', `${name} ${path}: no answer from the coordinator`, { cause: e });
      }
      if (!r.response.ok)
        throw new CustodianApiError(r.response.status, r.error, r.response.headers.get('retry-after'));
      return r;
    };
  return {
    GET: method('GET') as CustodianMethod<'get'>,
    POST: method('POST') as CustodianMethod<'post'>,
    PUT: method('PUT') as CustodianMethod<'put'>,
    PATCH: method('PATCH') as CustodianMethod<'patch'>,
    DELETE: method('DELETE') as CustodianMethod<'delete'>,
    raw,
  };
}
