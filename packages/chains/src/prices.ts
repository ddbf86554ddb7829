/**
 * USD price sources behind {@link PriceSource} (units.ts): an operator's HTTP price endpoint with
 * a cache ({@link HttpPriceSource}), and a chain of sources ({@link FirstPriceSource}). Prices are
 * decimal strings end to end — never floats in arithmetic (`usdValue` multiplies base units by the
 * price in bigint).
 */
import type { PriceSource } from './units.js';

/** Most decimals a price keeps (more are truncated): `usdValue` reads prices with 18 decimals. */
export const PRICE_DECIMALS = 18;

/** Settings of {@link HttpPriceSource}. */
export interface HttpPriceSourceOptions {
  /**
   * Endpoint URL with the placeholder `{symbol}` (the fee currency's symbol, upper case,
   * URL-encoded), e.g. `https://prices.internal/usd/{symbol}`. `http:` or `https:`.
   */
  url: string;
  /**
   * Extra request headers, e.g. an API key (`{ "x-api-key": "…" }`): sent with every request,
   * never logged. Put credentials here, not in the URL (a user name or password in it is refused).
   */
  headers?: Readonly<Record<string, string>>;
  /**
   * Dot-separated path of the price in the JSON answer, e.g. `usd` for `{"usd":"3012.45"}` or
   * `data.price` for `{"data":{"price":3012.45}}`. Default `usd`.
   */
  path?: string;
  /** How long a fetched price is reused, ms. Default 60 000; 0 = fetch every time. */
  ttlMs?: number;
  /** Deadline of one request, ms. Default 2000. */
  timeoutMs?: number;
  /** Time source of the cache, ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /**
   * Where a failed lookup is reported: symbol, host and a reason — an HTTP status or the error's
   * name/code, never an error message (it may quote the URL or a header), path, query or header.
   */
  log?: (msg: string, fields: Record<string, unknown>) => void;
}

/**
 * Prices from an HTTP endpoint: `GET <url with {symbol}>` answering 2xx with a JSON object whose
 * value at `path` is the USD price of one whole coin — a decimal string (`"3012.45"`, taken
 * exactly) or a JSON number (taken from its shortest round-trip text, exact for up to 15
 * significant digits). Each symbol's price is cached for `ttlMs`; concurrent lookups of one symbol
 * share one request. A failure (network error, timeout, non-2xx, not JSON, no non-negative number
 * at `path`) yields null and one `log` line, and is not cached: the next lookup asks again.
 */
export class HttpPriceSource implements PriceSource {
  readonly #url: string;
  readonly #path: string[];
  readonly #ttlMs: number;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  readonly #log: (msg: string, fields: Record<string, unknown>) => void;
  readonly #cache = new Map<string, { price: string; until: number }>();
  readonly #inFlight = new Map<string, Promise<string | null>>();
  readonly #host: string;
  readonly #headers: Record<string, string>;

  /**
   * @throws RangeError naming `url`, `headers`, `path`, `ttlMs` or `timeoutMs` when one is
   *   malformed (a URL that is not http(s), lacks `{symbol}` or holds a user name or password; a
   *   header value that is not a string; an empty path segment; a negative or non-integer time)
   */
  constructor(o: HttpPriceSourceOptions) {
    let u: URL;
    try {
      u = new URL(o.url.replaceAll('{symbol}', 'X'));
    } catch {
      throw new RangeError('url: not an absolute URL');
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new RangeError('url: must be http:// or https://');
    if (u.username !== '' || u.password !== '') {
      throw new RangeError('url: no user name or password in the URL (put an API key in headers)');
    }
    const headers: Record<string, string> = {};
    if (o.headers !== undefined) {
      if (o.headers === null || typeof o.headers !== 'object' || Array.isArray(o.headers)) {
        throw new RangeError('headers: expected an object of header name → string');
      }
      for (const [k, v] of Object.entries(o.headers)) {
        if (typeof v !== 'string') throw new RangeError(`headers.${k}: expected a string`);
        headers[k] = v;
      }
    }
    if (!o.url.includes('{symbol}')) throw new RangeError('url: must contain the placeholder {symbol}');
    const path = (o.path ?? 'usd').split('.');
    if (path.some((p) => p === '')) throw new RangeError('path: dot-separated field names, e.g. "usd" or "data.price"');
    for (const [k, v] of [
      ['ttlMs', o.ttlMs],
      ['timeoutMs', o.timeoutMs],
    ] as const) {
      if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) throw new RangeError(`${k}: a non-negative integer`);
    }
    if (o.timeoutMs === 0) throw new RangeError('timeoutMs: must be positive');
    this.#url = o.url;
    this.#path = path;
    this.#ttlMs = o.ttlMs ?? 60_000;
    this.#timeoutMs = o.timeoutMs ?? 2000;
    this.#now = o.now ?? Date.now;
    this.#log = o.log ?? (() => {});
    this.#host = u.host;
    this.#headers = headers;
  }

  /** The USD price of one whole `symbol` coin (decimal string, ≤ 18 decimals), or null (logged). */
  async usdPrice(symbol: string): Promise<string | null> {
    const key = symbol.toUpperCase();
    const hit = this.#cache.get(key);
    if (hit !== undefined && this.#now() < hit.until) return hit.price;
    const running = this.#inFlight.get(key);
    if (running !== undefined) return running;
    const p = this.#fetch(key).finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, p);
    return p;
  }

  async #fetch(symbol: string): Promise<string | null> {
    const fail = (error: string) => {
      this.#log('price lookup failed; fee_value_usd is null', { symbol, host: this.#host, error });
      return null;
    };
    let body: unknown;
    try {
      const res = await fetch(this.#url.replaceAll('{symbol}', encodeURIComponent(symbol)), {
        headers: { ...this.#headers, accept: 'application/json' },
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      if (!res.ok) {
        await res.body?.cancel().catch(() => {});
        return fail(`HTTP ${res.status}`);
      }
      body = await res.json();
    } catch (e) {
      const name = (e as Error).name;
      if (name === 'TimeoutError' || name === 'AbortError') return fail(`no answer within ${this.#timeoutMs} ms`);
      // Only the name and code: a message may quote the URL (query key) or a header value.
      const code = (e as { code?: unknown }).code ?? (e as { cause?: { code?: unknown } }).cause?.code;
      return fail(typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code) ? `${name} ${code}` : name);
    }
    let v: unknown = body;
    for (const k of this.#path) {
      v = v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>)[k] : undefined;
    }
    const price = priceText(v);
    if (price === null) return fail(`no non-negative decimal at "${this.#path.join('.')}"`);
    this.#cache.set(symbol, { price, until: this.#now() + this.#ttlMs });
    return price;
  }
}

/** A decimal string or JSON number as a plain decimal string with ≤ 18 decimals (truncated), or null. */
export function priceText(v: unknown): string | null {
  let s: string;
  if (typeof v === 'string') s = v.trim();
  else if (typeof v === 'number' && Number.isFinite(v)) s = plainNumber(v);
  else return null;
  const m = /^(\d+)(?:\.(\d+))?$/.exec(s);
  if (m === null) return null;
  const frac = (m[2] ?? '').slice(0, PRICE_DECIMALS).replace(/0+$/, '');
  return frac === '' ? m[1]! : `${m[1]}.${frac}`;
}

/** The shortest round-trip text of `n` without exponent (`1e-7` → `0.0000001`). */
function plainNumber(n: number): string {
  const s = String(n);
  const m = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (m === null) return s;
  const digits = m[2]! + (m[3] ?? '');
  const point = m[2]!.length + Number(m[4]);
  const body =
    point <= 0
      ? `0.${'0'.repeat(-point)}${digits}`
      : point >= digits.length
        ? digits + '0'.repeat(point - digits.length)
        : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return m[1] + body;
}

/** Asks each source in turn; the first non-null price wins (e.g. an operator's static table before HTTP). */
export class FirstPriceSource implements PriceSource {
  readonly #sources: readonly PriceSource[];
  constructor(sources: readonly PriceSource[]) {
    this.#sources = sources;
  }
  async usdPrice(symbol: string): Promise<string | null> {
    for (const s of this.#sources) {
      const p = await s.usdPrice(symbol);
      if (p !== null) return p;
    }
    return null;
  }
}
