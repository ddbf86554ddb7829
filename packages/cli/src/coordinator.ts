/**
 * `custodian coordinator start`: run the coordinator (custody REST API, admin API, webhooks) on the
 * embedded PGlite store in a data folder (default `./.custodian/coordinator`), or on a PostgreSQL
 * server when `--database-url` / `DATABASE_URL` is given.
 */
import { resolve } from 'node:path';
import { createCoordinator } from '@custodian/coordinator';
import type { Command } from 'commander';

/** Register `custodian coordinator …`. */
export function registerCoordinatorCommands(program: Command): void {
  const coordinator = program.command('coordinator').description('run the coordinator (REST API, admin API, webhooks)');
  coordinator
    .command('start')
    .description('start the coordinator and keep it running until SIGINT/SIGTERM')
    .option('--data-dir <dir>', 'data folder (embedded PGlite store, dev mailbox, keys)', '.custodian/coordinator')
    .option('--database-url <url>', 'PostgreSQL URL instead of the embedded store (env DATABASE_URL)')
    .option('--host <host>', 'listen address', '127.0.0.1')
    .option('--port <port>', 'listen port', '8080')
    .option('--mode <mode>', 'development | production', 'development')
    .option('--base-url <url>', 'public base URL (default http://<host>:<port>)')
    .action(
      async (opts: {
        dataDir: string;
        databaseUrl?: string;
        host: string;
        port: string;
        mode: string;
        baseUrl?: string;
      }) => {
        if (opts.mode !== 'development' && opts.mode !== 'production')
          throw new Error('--mode must be development or production');
        const port = Number(opts.port);
        if (!Number.isInteger(port) || port < 0 || port > 65535)
          throw new Error('--port must be an integer in [0, 65535]');
        const databaseUrl = opts.databaseUrl ?? process.env.DATABASE_URL;
        const dataDir = resolve(opts.dataDir);
        const c = await createCoordinator({
          mode: opts.mode,
          dataDir,
          ...(databaseUrl ? { databaseUrl } : {}),
          listen: { host: opts.host, port },
          ...(opts.baseUrl ? { baseUrl: opts.baseUrl } : {}),
          logger: true,
        });
        const url = await c.start();
        process.stdout.write(`coordinator listening on ${url} (data: ${databaseUrl ? 'PostgreSQL' : dataDir})\n`);
        const stop = async () => {
          await c.stop();
          process.exit(0);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      },
    );
}
