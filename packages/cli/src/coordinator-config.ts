/**
 * The coordinator's JSON config file (`custodian coordinator start --config <file>`): its one
 * schema — the single place listing its keys; docs/configuration.md documents each (a test
 * compares) — and reading it. An unknown key, at any depth, is an error naming it and its closest
 * valid spelling ("unknown key `smtpURL` in mail — did you mean `url`?").
 *
 * To add a key: add it here (with `additionalProperties: false` on every new object), read it in
 * coordinator.ts, and add its row to docs/configuration.md.
 */
import { readFile } from 'node:fs/promises';
import { ConfigError, type ConfigSchema, checkConfig } from '@custodian/ceremony';
import type { CoordinatorOptions } from '@custodian/coordinator';
import { LOG_LEVELS, type LogLevel } from '@custodian/signer-client';

const ms = { type: 'integer', minimum: 0 } as const;
const positive = { type: 'integer', minimum: 1 } as const;

/** The JSON Schema of the coordinator config file. */
export const COORDINATOR_CONFIG_SCHEMA: ConfigSchema = {
  type: 'object',
  properties: {
    logLevel: { enum: [...LOG_LEVELS] },
    dashboard: { anyOf: [{ type: 'boolean' }, { type: 'string', minLength: 1 }] },
    chains: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        properties: {
          rpcUrl: { type: 'string', minLength: 1 },
          httpHeaders: { type: 'object', additionalProperties: { type: 'string' } },
          rpcUsername: { type: 'string' },
          rpcPassword: { type: 'string' },
          confirmations: { type: 'integer', minimum: 0 },
          pollIntervalMs: positive,
          maxUnconfirmedDepth: { type: 'integer', minimum: 0 },
        },
        required: ['rpcUrl'],
        additionalProperties: false,
      },
    },
    transfers: {
      type: 'object',
      properties: {
        approvalWindowMs: positive,
        feeCaps: { type: 'object', additionalProperties: { type: 'string' } },
        trustedAdminKeys: { type: 'array', items: { type: 'string', pattern: '^0[23][0-9a-fA-F]{64}$' } },
        pipeline: {
          type: 'object',
          properties: {
            signDeadlineMs: positive,
            signingWindowMs: positive,
            retryInitialMs: positive,
            retryMaxMs: positive,
            leaseMs: positive,
            concurrency: positive,
            pollMs: positive,
            confirmationRecheckMs: positive,
          },
          additionalProperties: false,
        },
        runPipeline: { type: 'boolean' },
      },
      additionalProperties: false,
    },
    signing: {
      type: 'object',
      properties: {
        enabled: { type: 'boolean' },
        algorithms: { type: 'array', items: { type: 'integer' } },
        presignaturePool: { type: 'integer', minimum: 0, maximum: 1024 },
        presignatureReconcileMs: ms,
        deviceSockets: {
          type: 'object',
          properties: { preHelloPerAddress: positive, preHelloTotal: positive },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
    keys: {
      type: 'object',
      properties: { refreshIntervalHours: { type: 'number', minimum: 0, maximum: 87600 } },
      additionalProperties: false,
    },
    replicas: {
      type: 'object',
      // replicas/registry.ts ReplicaOptions (issue #25)
      properties: { heartbeatMs: positive, ttlMs: positive, leaseMs: positive, busPollMs: positive },
      additionalProperties: false,
    },
    mail: {
      type: 'object',
      properties: {
        transport: { enum: ['smtp', 'file'] },
        url: { type: 'string', pattern: '^smtps?://' },
        from: { type: 'string', minLength: 3 },
      },
      required: ['transport'],
      additionalProperties: false,
      if: { properties: { transport: { const: 'smtp' } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword
      then: { required: ['url'] },
      else: { not: { required: ['url'] } },
    },
    metrics: {
      type: 'object',
      properties: {
        enabled: { type: 'boolean' },
        // metrics/routes.ts resolveMetricsOptions: 16..512 visible ASCII
        bearerToken: { type: 'string', minLength: 16, maxLength: 512, pattern: '^[\\x21-\\x7e]+$' },
      },
      additionalProperties: false,
    },
    health: {
      type: 'object',
      // metrics/readiness.ts resolveReadinessOptions
      properties: { cacheMs: { ...ms, maximum: 60_000 }, timeoutMs: { ...positive, maximum: 60_000 } },
      additionalProperties: false,
    },
    webhooks: {
      type: 'object',
      properties: { allowedTargets: { type: 'array', items: { type: 'string', minLength: 1 } } },
      additionalProperties: false,
    },
    prices: {
      type: 'object',
      properties: {
        static: { type: 'object', additionalProperties: { type: 'string', minLength: 1 } },
        http: {
          type: 'object',
          properties: {
            url: { type: 'string', minLength: 1 },
            headers: { type: 'object', additionalProperties: { type: 'string' } },
            path: { type: 'string', minLength: 1 },
            ttlMs: ms,
            timeoutMs: positive,
          },
          required: ['url'],
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
};

/** The config file's content (checked against {@link COORDINATOR_CONFIG_SCHEMA}). */
export interface CoordinatorConfigFile {
  logLevel?: LogLevel;
  /** Serve the dashboard: true (default: the installed `@custodian/dashboard`), false, or a built folder. */
  dashboard?: boolean | string;
  chains?: NonNullable<CoordinatorOptions['chains']>;
  transfers?: Omit<NonNullable<CoordinatorOptions['transfers']>, 'gateway'>;
  signing?: Partial<NonNullable<CoordinatorOptions['signing']>>;
  keys?: { refreshIntervalHours?: number };
  replicas?: NonNullable<CoordinatorOptions['replicas']>;
  mail?: NonNullable<CoordinatorOptions['mail']>;
  prices?: NonNullable<CoordinatorOptions['prices']>;
  metrics?: NonNullable<CoordinatorOptions['metrics']>;
  health?: NonNullable<CoordinatorOptions['health']>;
  webhooks?: Pick<NonNullable<CoordinatorOptions['webhooks']>, 'allowedTargets'>;
}

/**
 * Read and check the config file.
 * @throws ConfigError (CONFIG_INVALID) starting with the path: unreadable, not JSON, or a schema
 *   problem (unknown key with its closest valid spelling, wrong type, missing key)
 */
export async function readCoordinatorConfig(path: string): Promise<CoordinatorConfigFile> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, 'utf8'));
  } catch (e) {
    throw new ConfigError(`${path}: ${e instanceof Error ? e.message : 'unreadable'}`);
  }
  try {
    checkConfig(COORDINATOR_CONFIG_SCHEMA, raw);
  } catch (e) {
    throw new ConfigError(`${path}: ${(e as Error).message}`);
  }
  return raw as CoordinatorConfigFile;
}

/**
 * The mail settings of the coordinator: `--smtp-url` (else env `CUSTODIAN_SMTP_URL`) over the
 * file's `mail`; `CUSTODIAN_MAIL_FROM` over the file's `mail.from`. Undefined: none configured
 * (development uses the file mailbox; production refuses to start).
 */
export function mailSettings(
  file: CoordinatorConfigFile['mail'],
  smtpUrlFlag: string | undefined,
  env: NodeJS.ProcessEnv,
): CoordinatorOptions['mail'] {
  const url = smtpUrlFlag ?? (env.CUSTODIAN_SMTP_URL || undefined);
  const from = env.CUSTODIAN_MAIL_FROM || file?.from;
  const fromPart = from !== undefined ? { from } : {};
  if (url !== undefined) return { transport: 'smtp', url, ...fromPart };
  if (file === undefined) return undefined;
  return file.transport === 'smtp'
    ? { transport: 'smtp', url: file.url, ...fromPart }
    : { transport: 'file', ...fromPart };
}
