/**
 * `custodian coordinator start|peer-id`: run the coordinator (custody REST API, admin API,
 * webhooks, transfer pipeline, device hub, signer gateway) on the embedded PGlite store in a data
 * folder (default `./.custodian/coordinator`), or on a PostgreSQL server with `--database-url` /
 * `DATABASE_URL`.
 *
 * Optional JSON config file (`--config`; its schema: coordinator-config.ts; every key, flag and
 * environment variable: docs/configuration.md):
 * ```json
 * { "chains": { "ethereum-local": { "rpcUrl": "http://127.0.0.1:8545", "confirmations": 1 } },
 *   "transfers": { "trustedAdminKeys": ["02…"], "approvalWindowMs": 86400000 },
 *   "signing": { "enabled": true },
 *   "mail": { "transport": "smtp", "url": "smtp://user:pass@host:587", "from": "Custodian <custodian@example.com>" } }
 * ```
 * Flags override the file: `--chain key=url` (repeatable), `--trusted-admin-key hex` (repeatable),
 * `--no-signing` (no libp2p services, e.g. an API-only replica), `--presignature-pool n` (config
 * `signing.presignaturePool`: ECDSA presignatures kept per key and signing set, default 4, 0 = off),
 * `--smtp-url` (env `CUSTODIAN_SMTP_URL`; `mail.url`). Production mode refuses to start without a
 * mail transport unless `mail.transport` is `"file"` (the folder `<data-dir>/mailbox`).
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CoordinatorOptions, coordinatorPeerId, createCoordinator } from '@custodian/coordinator';
import { handleShutdownSignals, parseShutdownTimeout, resolveLogLevel } from '@custodian/signer-client';
import type { Command } from 'commander';
import { type CoordinatorConfigFile, mailSettings, readCoordinatorConfig } from './coordinator-config.js';

interface StartFlags {
  dataDir: string;
  databaseUrl?: string;
  host: string;
  port: string;
  mode: string;
  baseUrl?: string;
  config?: string;
  chain: string[];
  trustedAdminKey: string[];
  signing: boolean;
  presignaturePool?: string;
  smtpUrl?: string;
  logLevel?: string;
}

const collect = (v: string, prev: string[]) => [...prev, v];

/**
 * Build coordinator options from flags, the environment and the optional config file.
 * @throws Error naming the bad flag; ConfigError naming the file and the bad key (coordinator-config.ts)
 */
export async function coordinatorOptionsFromFlags(
  o: StartFlags,
  env: NodeJS.ProcessEnv = process.env,
): Promise<CoordinatorOptions> {
  if (o.mode !== 'development' && o.mode !== 'production') throw new Error('--mode must be development or production');
  const port = Number(o.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('--port must be an integer in [0, 65535]');
  const file: CoordinatorConfigFile = o.config ? await readCoordinatorConfig(o.config) : {};
  const mail = mailSettings(file.mail, o.smtpUrl, env);
  const chains = { ...(file.chains ?? {}) };
  for (const c of o.chain) {
    const eq = c.indexOf('=');
    if (eq <= 0) throw new Error(`--chain ${c}: expected <blockchain key>=<rpc url>`);
    chains[c.slice(0, eq)] = { rpcUrl: c.slice(eq + 1) };
  }
  const trustedAdminKeys = [...(file.transfers?.trustedAdminKeys ?? []), ...o.trustedAdminKey];
  const databaseUrl = o.databaseUrl ?? env.DATABASE_URL;
  const pool = o.presignaturePool === undefined ? file.signing?.presignaturePool : Number(o.presignaturePool);
  if (pool !== undefined && (!Number.isSafeInteger(pool) || pool < 0 || pool > 1024))
    throw new Error('--presignature-pool must be an integer in [0, 1024]');
  const dashboardDir = resolveDashboardDir(file.dashboard);
  return {
    mode: o.mode,
    dataDir: resolve(o.dataDir),
    ...(dashboardDir !== undefined ? { dashboardDir } : {}),
    ...(databaseUrl ? { databaseUrl } : {}),
    listen: { host: o.host, port },
    ...(o.baseUrl ? { baseUrl: o.baseUrl } : {}),
    // flag, then CUSTODIAN_LOG_LEVEL, then the file's logLevel, then info
    logger: { level: resolveLogLevel(o.logLevel, file.logLevel, env) },
    ...(mail !== undefined ? { mail } : {}),
    chains,
    ...(file.metrics !== undefined ? { metrics: file.metrics } : {}),
    ...(file.health !== undefined ? { health: file.health } : {}),
    transfers: { ...(file.transfers ?? {}), trustedAdminKeys },
    ...(file.prices !== undefined ? { prices: file.prices } : {}),
    ...(file.webhooks?.allowedTargets !== undefined
      ? { webhooks: { allowedTargets: file.webhooks.allowedTargets } }
      : {}),
    ...(file.keys !== undefined ? { keys: file.keys } : {}),
    ...(file.replicas !== undefined ? { replicas: file.replicas } : {}),
    signing: {
      ...(file.signing ?? {}),
      enabled: o.signing && file.signing?.enabled !== false,
      ...(pool !== undefined ? { presignaturePool: pool } : {}),
    },
  };
}

/**
 * The built dashboard folder to serve (config key `dashboard`): `false` → none; a string → that
 * folder (made absolute); otherwise the installed `@custodian/dashboard`'s `dist/`, or none with
 * one line on stderr when it is not built.
 */
export function resolveDashboardDir(setting: boolean | string | undefined): string | undefined {
  if (setting === false) return undefined;
  if (typeof setting === 'string') return resolve(setting);
  let dist: string;
  try {
    dist = join(dirname(fileURLToPath(import.meta.resolve('@custodian/dashboard/package.json'))), 'dist');
  } catch {
    process.stderr.write('dashboard not installed (@custodian/dashboard): running without it\n');
    return undefined;
  }
  if (!existsSync(join(dist, 'index.html'))) {
    process.stderr.write('dashboard not built: run `pnpm build` (running without it)\n');
    return undefined;
  }
  return dist;
}

/** Register `custodian coordinator …`. */
export function registerCoordinatorCommands(program: Command): void {
  const coordinator = program.command('coordinator').description('run the coordinator (REST API, admin API, webhooks)');
  coordinator
    .command('start')
    .description('start the coordinator and keep it running until SIGTERM/SIGINT/SIGHUP')
    .option('--data-dir <dir>', 'data folder (embedded PGlite store, dev mailbox, keys)', '.custodian/coordinator')
    .option('--database-url <url>', 'PostgreSQL URL instead of the embedded store (env DATABASE_URL)')
    .option('--host <host>', 'listen address', '127.0.0.1')
    .option('--port <port>', 'listen port', '8080')
    .option('--mode <mode>', 'development | production', 'development')
    .option('--base-url <url>', 'public base URL (default http://<host>:<port>)')
    .option('--config <file>', 'JSON config file: chains, transfers, signing, mail, metrics… (docs/configuration.md)')
    .option(
      '--smtp-url <url>',
      'send login codes through SMTP, e.g. smtp://user:pass@host:587 (env CUSTODIAN_SMTP_URL; config mail.url)',
    )
    .option('--chain <key=url>', 'blockchain node RPC, e.g. ethereum-local=http://127.0.0.1:8545', collect, [])
    .option(
      '--trusted-admin-key <hex>',
      'Admin device key allowed to sign policies (compressed P-256 hex)',
      collect,
      [],
    )
    .option('--no-signing', 'do not start the signer gateway, device hub and libp2p identity')
    .option(
      '--presignature-pool <n>',
      'CGGMP21 presignatures kept per ECDSA key and signing set (default 4; 0 = every ECDSA signature cold)',
    )
    .option('--shutdown-timeout <ms>', 'drain bound on SIGTERM/SIGINT/SIGHUP before exiting anyway (ms)', '10000')
    .option(
      '--log-level <level>',
      "log level (default: env CUSTODIAN_LOG_LEVEL, else the config's logLevel, else info)",
    )
    .action(async (o: StartFlags & { shutdownTimeout: string }) => {
      const timeoutMs = parseShutdownTimeout(o.shutdownTimeout);
      // installed before the coordinator is built (store open, migrations: seconds): a signal then
      // drains too (waits for the build, then stops) instead of the default action (exit 143, no
      // log). Until the coordinator's logger exists, lines are written in its (pino) JSON format.
      let built: Awaited<ReturnType<typeof createCoordinator>> | undefined;
      const early = (level: number) => (fields: Record<string, unknown>, msg: string) => {
        const target = built?.app.log;
        if (target) return target[level === 30 ? 'info' : level === 40 ? 'warn' : 'error'](fields, msg);
        process.stdout.write(`${JSON.stringify({ level, time: Date.now(), ...fields, msg })}\n`);
      };
      const log = { info: early(30), warn: early(40), error: early(50) };
      let building: Promise<Awaited<ReturnType<typeof createCoordinator>>> | undefined;
      let stopRequested = false;
      const signals = handleShutdownSignals({
        name: 'coordinator',
        log,
        // stop() waits for the build, then for the start
        stop: async () => {
          stopRequested = true;
          if (building) await (await building).stop();
        },
        pending: () => (built ? built.stopping() : ['coordinator construction']),
        timeoutMs,
      });
      log.info({}, 'coordinator starting');
      building = coordinatorOptionsFromFlags(o).then((opts) => createCoordinator(opts));
      // a failed build is reported by the CLI (exit 1); no signal listener stays behind
      building.catch(() => signals.dispose());
      const c = await building;
      built = c;
      // a signal during the build: stopped, not started
      if (stopRequested) return;
      const url = await c.start();
      const peer = o.signing ? ` peer id ${await coordinatorPeerId(resolve(o.dataDir))}` : '';
      process.stdout.write(
        `coordinator listening on ${url}${peer} (data: ${(o.databaseUrl ?? process.env.DATABASE_URL) ? 'PostgreSQL' : resolve(o.dataDir)})\n`,
      );
    });
  coordinator
    .command('peer-id')
    .description(
      "print the coordinator's libp2p peer id (signers pin it); refuses when the data folder has no identity, unless --create",
    )
    .option('--data-dir <dir>', 'data folder (the one `coordinator start` uses)', '.custodian/coordinator')
    .option('--create', 'create the identity (0600) when the data folder has none, e.g. before the first start')
    .action(async (o: { dataDir: string; create?: boolean }) => {
      process.stdout.write(`${await coordinatorPeerId(resolve(o.dataDir), { create: o.create === true })}\n`);
    });
}
