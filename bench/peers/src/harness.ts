/**
 * Benchmark harness (a copy of `bench/src/harness.ts`, so this package stands alone): every figure
 * is printed as one JSON object per line, `{ name, unit, median, p95, n, ...extra }`.
 */
import { performance } from 'node:perf_hooks';

/** One benchmark figure. Times in milliseconds unless `unit` says otherwise. */
export interface Figure {
  readonly name: string;
  readonly unit: string;
  readonly median: number;
  readonly p95: number;
  readonly n: number;
  readonly [extra: string]: unknown;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[idx] as number;
}

/** Summarise samples into a figure (median, p95). */
export function summarise(name: string, samples: readonly number[], unit = 'ms', extra: object = {}): Figure {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    name,
    unit,
    median: round(quantile(sorted, 0.5)),
    p95: round(quantile(sorted, 0.95)),
    n: sorted.length,
    ...extra,
  };
}

/**
 * Time `fn` `n` times (after `warmup` untimed runs) and return the figure. `fn` may be async.
 * @param n number of timed runs (≥ 1)
 */
export async function measure(
  name: string,
  fn: () => unknown | Promise<unknown>,
  opts: { n?: number; warmup?: number; extra?: object } = {},
): Promise<Figure> {
  const n = opts.n ?? 20;
  for (let i = 0; i < (opts.warmup ?? 2); i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  return summarise(name, samples, 'ms', opts.extra ?? {});
}

/** Print a figure as one JSON line on stdout. */
export function report(figure: Figure): void {
  process.stdout.write(`${JSON.stringify(figure)}\n`);
}

/** Measure and print. */
export async function bench(
  name: string,
  fn: () => unknown | Promise<unknown>,
  opts: { n?: number; warmup?: number; extra?: object } = {},
): Promise<Figure> {
  const f = await measure(name, fn, opts);
  report(f);
  return f;
}
