/**
 * The log level of a daemon (coordinator, server signer, phone simulator, `custodian dev`): the
 * `--log-level` flag, else the environment variable `CUSTODIAN_LOG_LEVEL`, else the config file's
 * `logLevel` (where the daemon has a config file), else `info`.
 */

/** pino's levels, plus `silent`. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];
/** The environment variable read by {@link resolveLogLevel}. */
export const LOG_LEVEL_ENV = 'CUSTODIAN_LOG_LEVEL';

/**
 * The level in force (precedence: flag, environment, config file, `info`).
 * @throws Error naming the source (`--log-level`, `CUSTODIAN_LOG_LEVEL` or `logLevel`) when its value is not one of {@link LOG_LEVELS}
 */
export function resolveLogLevel(
  flag: string | undefined,
  config?: unknown,
  env: NodeJS.ProcessEnv = process.env,
): LogLevel {
  const pick = (value: unknown, source: string): LogLevel | undefined => {
    if (value === undefined || value === '') return undefined;
    if (typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value)) return value as LogLevel;
    throw new Error(`${source} must be one of ${LOG_LEVELS.join(', ')}`);
  };
  return pick(flag, '--log-level') ?? pick(env[LOG_LEVEL_ENV], LOG_LEVEL_ENV) ?? pick(config, 'logLevel') ?? 'info';
}
