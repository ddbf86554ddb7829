/** `resolveLogLevel` (#29): flag, then CUSTODIAN_LOG_LEVEL, then the config's logLevel, then info; a bad value names its source. */
import { describe, expect, it } from 'vitest';
import { resolveLogLevel } from '../src/log-level.js';

describe('resolveLogLevel', () => {
  it('takes the flag, else the environment, else the config file, else info', () => {
    expect(resolveLogLevel('debug', 'warn', { CUSTODIAN_LOG_LEVEL: 'error' })).toBe('debug');
    expect(resolveLogLevel(undefined, 'warn', { CUSTODIAN_LOG_LEVEL: 'error' })).toBe('error');
    expect(resolveLogLevel(undefined, 'warn', {})).toBe('warn');
    expect(resolveLogLevel(undefined, undefined, { CUSTODIAN_LOG_LEVEL: '' })).toBe('info');
  });

  it('refuses a value that is not a level, naming where it came from', () => {
    expect(() => resolveLogLevel('loud', undefined, {})).toThrow(/^--log-level must be one of fatal, error/);
    expect(() => resolveLogLevel(undefined, undefined, { CUSTODIAN_LOG_LEVEL: 'INFO' })).toThrow(
      /^CUSTODIAN_LOG_LEVEL must be/,
    );
    expect(() => resolveLogLevel(undefined, 3, {})).toThrow(/^logLevel must be/);
  });
});
