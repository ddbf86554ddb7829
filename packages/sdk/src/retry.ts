/**
 * The client's retry loop, a `fetch` wrapper: retries an answer 429 (the request was not
 * processed) always, and an answer 503 or a network failure only when a repeat is harmless — an
 * idempotent method (GET, HEAD, PUT, DELETE, OPTIONS) or a request carrying an idempotency key
 * (the server replays the first result); a keyed request also on 409 with `Retry-After` (the
 * first request with that key is still running: `IDEMPOTENCY_REQUEST_IN_PROGRESS`). The wait is
 * the answer's `Retry-After` (delay-seconds or an HTTP-date), else exponential backoff with
 * jitter; every wait is capped.
 */

/** Retry policy of {@link fetchWithRetry}. */
export interface RetryOptions {
  /** Attempts in all, the first included (≥ 1). Default 4. */
  maxAttempts?: number;
  /** Backoff before the 2nd attempt when no `Retry-After` is given, ms; doubles per attempt. Default 500. */
  baseDelayMs?: number;
  /** Cap of every wait, ms (a longer `Retry-After` is shortened to it). Default 30 000. */
  maxDelayMs?: number;
}

const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);

/**
 * Milliseconds to wait from a `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an
 * HTTP-date (a date in the past → 0).
 * @returns undefined for a missing or unparseable value
 */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  if (!/^[A-Za-z]{3}/.test(v)) return undefined; // every HTTP-date form starts with the day name
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The policy with its defaults filled in.
 * @throws RangeError for `maxAttempts` not an integer ≥ 1, or a delay that is not a number ≥ 0
 */
export function retryPolicy(options: RetryOptions = {}): Required<RetryOptions> {
  const p = { maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 30_000, ...options };
  if (!Number.isInteger(p.maxAttempts) || p.maxAttempts < 1) {
    throw new RangeError('retry.maxAttempts must be an integer ≥ 1');
  }
  if (!(p.baseDelayMs >= 0) || !(p.maxDelayMs >= 0)) throw new RangeError('retry delays must be numbers ≥ 0 (ms)');
  return p;
}

/**
 * Send `request` through `send`, retrying per {@link RetryOptions}; each attempt sends a clone, so
 * the body and every header (the idempotency key included) are the same on every attempt.
 * @returns the first answer that is not retried, or the last attempt's answer
 * @throws the last network error when no attempt got an answer (or the first one when the request
 *   may not be repeated); the signal's reason when the request's signal aborts during a wait
 * @throws RangeError for an invalid policy ({@link retryPolicy})
 */
export async function fetchWithRetry(
  request: Request,
  send: (request: Request) => Promise<Response>,
  options: RetryOptions = {},
): Promise<Response> {
  const { maxAttempts, baseDelayMs, maxDelayMs } = retryPolicy(options);
  const keyed = request.headers.has('idempotency-key') || request.headers.has('idempotency_key');
  const repeatable = keyed || IDEMPOTENT_METHODS.has(request.method);
  const backoff = (attempt: number) =>
    Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2));
  for (let attempt = 1; ; attempt++) {
    let response: Response;
    try {
      response = await send(request.clone());
    } catch (e) {
      if (!repeatable || attempt >= maxAttempts || request.signal.aborted) throw e;
      await sleep(backoff(attempt), request.signal);
      continue;
    }
    const retry =
      response.status === 429 ||
      (response.status === 503 && repeatable) ||
      (response.status === 409 && keyed && response.headers.has('retry-after'));
    if (!retry || attempt >= maxAttempts) return response;
    const wait = retryAfterMs(response.headers.get('retry-after')) ?? backoff(attempt);
    await response.body?.cancel();
    await sleep(Math.min(wait, maxDelayMs), request.signal);
  }
}
