/**
 * The one place where `custodian admin` talks HTTP to the coordinator's admin API: base URL, the
 * session bearer token, JSON bodies, query strings, a per-request timeout, and the mapping of an
 * RFC 9457 problem+json answer to one {@link AdminCliError} carrying the problem's `code`,
 * `detail` and HTTP `status` (a STEP_UP_REQUIRED refusal adds the `custodian admin step-up` hint).
 * The typed routes are in client.ts; no command calls `fetch` itself.
 */
import { CliError } from '../errors.js';

/** HTTP methods the admin API uses. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Query parameters; `undefined` values are left out, the others sent as `String(value)` in the given order. */
export type Query = Record<string, string | number | undefined>;

/** RFC 9457 problem details as the coordinator sends them (`errors`: one entry per invalid field). */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  code?: string;
  detail?: string;
  instance?: string;
  errors?: { field: string; message: string }[];
}

/**
 * A failed admin API call, or a command that cannot go on (missing input, unreadable file): the
 * CLI prints `error: <message>` (with `--json`: the problem body) and exits with code 1. For an
 * HTTP refusal, `status` is the HTTP status, `code`/`detail` the problem's, and `problem` the
 * parsed body; the message is `<status> <code>: <detail>` followed by `(field: message; …)` for
 * invalid fields. Secrets sent in the request are never part of the message.
 */
export class AdminCliError extends CliError {
  /** HTTP status of the refusal (absent: no HTTP answer, e.g. not logged in, unreachable, timed out). */
  readonly status: number | undefined;
  /** The problem's human-readable detail. */
  readonly detail: string | undefined;
  /**
   * `code`: the problem's stable error code (e.g. `STEP_UP_REQUIRED`); `HTTP_<status>` for an
   * answer without one; `ADMIN_REQUEST_FAILED` when there was no HTTP answer (not logged in,
   * unreachable, timed out) or the command could not go on.
   */
  constructor(
    message: string,
    readonly problem?: unknown,
    status?: number,
  ) {
    const p = problem !== null && typeof problem === 'object' ? (problem as Problem) : undefined;
    super(
      typeof p?.code === 'string' && p.code !== ''
        ? p.code
        : status !== undefined
          ? `HTTP_${status}`
          : 'ADMIN_REQUEST_FAILED',
      message,
    );
    this.status = status;
    this.detail = p?.detail;
  }

  /** The error for a non-2xx answer: `status`, the raw body `text` and its JSON parse (if any). */
  static fromResponse(status: number, text: string, data: unknown): AdminCliError {
    const p = data as Problem | undefined;
    const fields = p?.errors?.map((e) => `${e.field}: ${e.message}`).join('; ');
    const hint = p?.code === 'STEP_UP_REQUIRED' ? ' — run `custodian admin step-up`, then retry' : '';
    return new AdminCliError(
      `${status} ${p?.code ?? ''}: ${p?.detail ?? p?.title ?? text}${fields ? ` (${fields})` : ''}${hint}`,
      data,
      status,
    );
  }
}

/** Where and as whom the client calls. */
export interface AdminHttpOptions {
  /** Coordinator base URL, e.g. `http://127.0.0.1:8080` (trailing slashes are dropped). */
  baseUrl: string;
  /** Admin session token (`css_…`) from `admin login`; absent: only the unauthenticated routes work. */
  token?: string;
  /** Milliseconds to wait for a whole answer (headers and body) per request. Default {@link DEFAULT_TIMEOUT_MS}. */
  timeoutMs?: number;
}

/** Default per-request timeout: 30 s. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Request options of {@link AdminHttp.request}. */
export interface RequestOptions {
  /** Values of the `{name}` placeholders of the path template (percent-encoded here). */
  path?: Record<string, string | number>;
  query?: Query;
  /** JSON body; absent: no body and no content-type. */
  body?: unknown;
  /** Send the bearer token (default true); false for init and login. */
  auth?: boolean;
}

/** Build `?a=1&b=2` from the defined values of `params` ('' when none). */
export function queryString(params: Query): string {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) s.set(k, String(v));
  const t = s.toString();
  return t === '' ? '' : `?${t}`;
}

/** Replace each `{name}` of `template` with the percent-encoded `values[name]`. @throws Error on a missing value */
export function expandPath(template: string, values: Record<string, string | number> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`${template}: no value for {${name}}`);
    return encodeURIComponent(String(v));
  });
}

/** JSON over HTTP to the admin API with the session token. */
export class AdminHttp {
  /** The base URL without trailing slashes. */
  readonly baseUrl: string;
  readonly token: string | undefined;
  readonly timeoutMs: number;

  constructor(o: AdminHttpOptions) {
    this.baseUrl = o.baseUrl.replace(/\/+$/, '');
    this.token = o.token;
    this.timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * Call `method template` and return the parsed JSON answer (`undefined` for an empty body, e.g. 204).
   * @param template a path of docs/api/openapi.json, e.g. `/admin/v1/users/{user_id}`
   * @throws AdminCliError not logged in (an authenticated route without a token); the coordinator
   *   unreachable or silent for `timeoutMs`; a non-2xx answer ({@link AdminCliError.fromResponse})
   */
  async request<T>(method: HttpMethod, template: string, o: RequestOptions = {}): Promise<T> {
    const headers: Record<string, string> = {};
    if (o.auth !== false) {
      if (this.token === undefined)
        throw new AdminCliError('not logged in: run `custodian admin login` or pass --token');
      headers.authorization = `Bearer ${this.token}`;
    }
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const url = this.baseUrl + expandPath(template, o.path) + queryString(o.query ?? {});
    const signal = AbortSignal.timeout(this.timeoutMs);
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, {
        method,
        headers,
        signal,
        ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
      });
      text = await res.text();
    } catch (e) {
      if (signal.aborted)
        throw new AdminCliError(
          `cannot reach ${this.baseUrl}: no answer within ${this.timeoutMs} ms (${method} ${template})`,
        );
      throw new AdminCliError(`cannot reach ${this.baseUrl}: ${(e as Error).message}`);
    }
    let data: unknown;
    try {
      data = text === '' ? undefined : JSON.parse(text);
    } catch {
      // Not JSON (e.g. a proxy's HTML error page): a refusal quotes the text, a success is refused.
      if (res.ok) throw new AdminCliError(`${res.status}: the answer to ${method} ${template} is not JSON`);
    }
    if (!res.ok) throw AdminCliError.fromResponse(res.status, text, data);
    return data as T;
  }
}
