/**
 * The USD price source of fee estimates (`fee_value_usd`, docs/transfers.md "Fee estimates"), built
 * from the coordinator's `prices` setting: an operator's static table and/or an HTTP price
 * endpoint with a cache (`@custodian/chains` prices.ts). Without either, fee estimates carry
 * `fee_value_usd: null`. A lookup never fails a request: errors and timeouts give null and a log line.
 */
import { FirstPriceSource, HttpPriceSource, type PriceSource, StaticPriceSource } from '@custodian/chains';

/** The `prices` setting of the coordinator (config file key `prices`). */
export interface PriceConfig {
  /**
   * Fixed prices: fee currency symbol → USD price of one whole coin (decimal string, ≤ 18
   * decimals), e.g. `{ "ETH": "3000.00" }`. Asked first; a symbol not listed goes to `http`.
   */
  static?: Record<string, string>;
  /**
   * An HTTP endpoint: `url` with `{symbol}` (e.g. `https://prices.internal/usd/{symbol}`), `path`
   * of the price in its JSON answer (default `usd`), `ttlMs` cache time (default 60 000),
   * `timeoutMs` per request (default 2000), `headers` sent with each request and never logged
   * (e.g. an API key; a user name or password in `url` is refused).
   */
  http?: { url: string; headers?: Record<string, string>; path?: string; ttlMs?: number; timeoutMs?: number };
}

/**
 * Build the price source of a `prices` setting.
 * @param log where failed HTTP lookups are reported (symbol, endpoint host, reason; never the URL's path or query)
 * @param now cache clock (ms), default `Date.now`
 * @returns the source, or undefined when nothing is configured (fees then carry `fee_value_usd: null`)
 * @throws RangeError naming the key (`prices.static.ETH`, `prices.http.url`, …) for a malformed value
 */
export function priceSourceFromConfig(
  cfg: PriceConfig | undefined,
  log: (msg: string, fields: Record<string, unknown>) => void,
  now?: () => number,
): PriceSource | undefined {
  if (cfg === undefined || cfg === null) return undefined;
  if (typeof cfg !== 'object' || Array.isArray(cfg)) throw new RangeError('prices: expected an object');
  for (const k of Object.keys(cfg)) {
    if (k !== 'static' && k !== 'http') throw new RangeError(`prices.${k}: unknown key (static, http)`);
  }
  const sources: PriceSource[] = [];
  if (cfg.static !== undefined) {
    if (cfg.static === null || typeof cfg.static !== 'object' || Array.isArray(cfg.static)) {
      throw new RangeError('prices.static: expected an object of symbol → decimal string');
    }
    for (const [symbol, price] of Object.entries(cfg.static)) {
      if (typeof price !== 'string' || !/^\d+(\.\d{1,18})?$/.test(price)) {
        throw new RangeError(`prices.static.${symbol}: a decimal string with at most 18 decimals, e.g. "3000.00"`);
      }
    }
    sources.push(new StaticPriceSource(cfg.static));
  }
  if (cfg.http !== undefined) {
    const h = cfg.http;
    if (h === null || typeof h !== 'object' || typeof h.url !== 'string') {
      throw new RangeError(
        'prices.http: expected { "url": "https://…/{symbol}", "headers"?, "path"?, "ttlMs"?, "timeoutMs"? }',
      );
    }
    try {
      sources.push(
        new HttpPriceSource({
          url: h.url,
          ...(h.path !== undefined ? { path: h.path } : {}),
          ...(h.headers !== undefined ? { headers: h.headers } : {}),
          ...(h.ttlMs !== undefined ? { ttlMs: h.ttlMs } : {}),
          ...(h.timeoutMs !== undefined ? { timeoutMs: h.timeoutMs } : {}),
          ...(now !== undefined ? { now } : {}),
          log,
        }),
      );
    } catch (e) {
      throw new RangeError(`prices.http.${(e as Error).message}`);
    }
  }
  if (sources.length === 0) return undefined;
  return sources.length === 1 ? sources[0] : new FirstPriceSource(sources);
}
