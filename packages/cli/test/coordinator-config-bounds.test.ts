/**
 * The config schema's bounds match the coordinator's own checks (#29 review): `metrics.bearerToken`
 * 16..512 visible ASCII (metrics/routes.ts resolveMetricsOptions), `health.cacheMs` 0..60 000 and
 * `health.timeoutMs` 1..60 000 (metrics/readiness.ts) — a value the code refuses is refused by the
 * schema too, naming the key; the boundary values pass both.
 */
import { checkConfig } from '@custodian/ceremony';
import { describe, expect, it } from 'vitest';
import { resolveReadinessOptions } from '../../coordinator/src/metrics/readiness.js';
import { resolveMetricsOptions } from '../../coordinator/src/metrics/routes.js';
import { COORDINATOR_CONFIG_SCHEMA } from '../src/coordinator-config.js';

const schemaOk = (cfg: unknown) => {
  try {
    checkConfig(COORDINATOR_CONFIG_SCHEMA, cfg);
    return true;
  } catch {
    return false;
  }
};
const codeOk = (f: () => unknown) => {
  try {
    f();
    return true;
  } catch {
    return false;
  }
};

describe('coordinator config schema bounds agree with the code', () => {
  it.each([
    'a'.repeat(15),
    'a'.repeat(16),
    'a'.repeat(512),
    'a'.repeat(513),
    `${'a'.repeat(16)} b`,
    `${'a'.repeat(16)}é`,
    `${'a'.repeat(16)}\t`,
  ])('metrics.bearerToken %#', (token) => {
    const code = codeOk(() => resolveMetricsOptions({ bearerToken: token }));
    expect(schemaOk({ metrics: { bearerToken: token } })).toBe(code);
  });

  it.each([-1, 0, 1, 60_000, 60_001])('health.cacheMs and health.timeoutMs = %d', (v) => {
    expect(schemaOk({ health: { cacheMs: v } })).toBe(codeOk(() => resolveReadinessOptions({ cacheMs: v })));
    expect(schemaOk({ health: { timeoutMs: v } })).toBe(codeOk(() => resolveReadinessOptions({ timeoutMs: v })));
  });

  it('a refusal names the key', () => {
    expect(() => checkConfig(COORDINATOR_CONFIG_SCHEMA, { health: { cacheMs: 60_001 } })).toThrow(/health\.cacheMs/);
    expect(() => checkConfig(COORDINATOR_CONFIG_SCHEMA, { metrics: { bearerToken: 'short' } })).toThrow(
      /metrics\.bearerToken/,
    );
    // the refusal never quotes the token
    expect(() =>
      checkConfig(COORDINATOR_CONFIG_SCHEMA, { metrics: { bearerToken: 'SECRET-TOKEN-VALUE with space' } }),
    ).toThrow(/^(?!.*SECRET-TOKEN-VALUE)/s);
  });
});
