import { InvalidTransferError } from './errors.js';

/** Formats integer base units as a decimal string with `decimals` places, trailing zeros trimmed ("1.5", "0"). */
export function formatUnits(value: bigint, decimals: number): string {
  const negative = value < 0n;
  const abs = negative ? -value : value;
  const base = 10n ** BigInt(decimals);
  const whole = abs / base;
  const frac = (abs % base).toString().padStart(decimals, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${frac.length > 0 ? `.${frac}` : ''}`;
}

/** Parses a non-negative decimal string into base units; more decimals than `decimals` is an error, never rounded. */
export function parseUnits(text: string, decimals: number, field = 'amount'): bigint {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (m === null) throw new InvalidTransferError(field, `not a decimal number: ${JSON.stringify(text)}`);
  const frac = m[2] ?? '';
  if (frac.length > decimals) throw new InvalidTransferError(field, `more than ${decimals} decimals`);
  return BigInt(m[1] ?? '0') * 10n ** BigInt(decimals) + BigInt(frac.padEnd(decimals, '0') || '0');
}

/**
 * Where USD prices come from. `usdPrice` returns the price of one whole coin as a decimal string
 * (at most 18 decimals), or null when unknown; it never rejects. Implementations: the static table
 * below, the HTTP endpoint and the chain of sources of prices.ts.
 */
export interface PriceSource {
  usdPrice(symbol: string): Promise<string | null>;
}

/**
 * Prices configured by the operator (e.g. from the coordinator's config file). This is the
 * offline default: with no table configured it knows no price and fees carry `fee_value_usd: null`.
 */
export class StaticPriceSource implements PriceSource {
  readonly #prices: ReadonlyMap<string, string>;
  constructor(prices: Record<string, string> = {}) {
    for (const [symbol, price] of Object.entries(prices)) parseUnits(price, 18, `prices.${symbol}`);
    this.#prices = new Map(Object.entries(prices).map(([k, v]) => [k.toUpperCase(), v]));
  }
  async usdPrice(symbol: string): Promise<string | null> {
    return this.#prices.get(symbol.toUpperCase()) ?? null;
  }
}

/** fee (base units) × price (decimal string per whole coin) → USD with 2 decimals, rounded half up. */
export function usdValue(fee: bigint, decimals: number, price: string | null): string | null {
  if (price === null) return null;
  const p = parseUnits(price, 18, 'price');
  // fee/10^decimals * p/10^18 in cents = fee*p*100 / 10^(decimals+18)
  const den = 10n ** BigInt(decimals + 18);
  const cents = (fee * p * 100n + den / 2n) / den;
  return formatFixed2(cents);
}

function formatFixed2(cents: bigint): string {
  return `${cents / 100n}.${(cents % 100n).toString().padStart(2, '0')}`;
}
