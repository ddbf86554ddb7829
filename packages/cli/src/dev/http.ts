/** Tiny JSON-over-HTTP client for the local instance's admin and REST APIs (errors carry the problem body). */
import { CliError } from '../errors.js';

export class HttpError extends CliError {
  constructor(
    readonly status: number,
    readonly body: unknown,
    what: string,
  ) {
    const code = (body as { code?: string })?.code;
    const detail = (body as { detail?: string })?.detail;
    super(
      typeof code === 'string' && code !== '' ? code : `HTTP_${status}`,
      `${what}: HTTP ${status}${code ? ` ${code}` : ''}${detail ? ` — ${detail}` : ''}`,
    );
  }
}

/** Call `method url` with an optional JSON body and headers; returns the parsed JSON (or null). */
export async function call<T = Record<string, unknown>>(
  method: string,
  url: string,
  opts: { body?: unknown; headers?: Record<string, string>; ok?: number[] } = {},
): Promise<{ status: number; body: T }> {
  const res = await fetch(url, {
    method,
    headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
  });
  const text = await res.text();
  const body = (text ? JSON.parse(text) : null) as T;
  const ok = opts.ok ?? [200, 201, 202, 204];
  if (!ok.includes(res.status)) throw new HttpError(res.status, body, `${method} ${new URL(url).pathname}`);
  return { status: res.status, body };
}

/** JSON-RPC call to a node (anvil). */
export async function rpc<T = unknown>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const j = (await res.json()) as { result?: T; error?: { message: string } };
  if (j.error) throw new Error(`${method}: ${j.error.message}`);
  return j.result as T;
}

/** Poll `fn` until it returns a value that is not undefined, or throw after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 250,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
