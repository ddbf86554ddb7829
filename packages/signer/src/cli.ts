/**
 * `custodian signer init|start|status` (commander). Registered into the `custodian` program by
 * packages/cli through {@link registerSignerCommands}.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fingerprint, handleShutdownSignals, parseShutdownTimeout, resolveLogLevel } from '@custodian/signer-client';
import { Command } from 'commander';
import { ConfigError, loadConfig, type PassphraseSource, readPassphrase } from './config.js';
import { STATUS_FILE, startSigner } from './daemon.js';
import { createIdentity } from './identity.js';

interface InitOptions {
  dataDir: string;
  passphraseEnv?: string;
  passphraseFile?: string;
}

/** Add the `signer` command group to `program`. */
export function registerSignerCommands(program: Command): Command {
  const signer = program.command('signer').description('signer node: identity, daemon, status');
  signer
    .command('init')
    .description('create the node identity (libp2p Ed25519 key) and print its peer id and fingerprint')
    .requiredOption('-d, --data-dir <dir>', 'data folder of the node')
    .option('--passphrase-env <name>', 'environment variable holding the storage passphrase')
    .option('--passphrase-file <path>', 'file holding the storage passphrase')
    .action(async (o: InitOptions) => {
      const src: PassphraseSource | undefined = o.passphraseEnv
        ? { env: o.passphraseEnv }
        : o.passphraseFile
          ? { file: o.passphraseFile }
          : undefined;
      if (!src) throw new ConfigError('one of --passphrase-env or --passphrase-file is required');
      const id = await createIdentity(o.dataDir, await readPassphrase(src));
      process.stdout.write(`${JSON.stringify({ peerId: id.peerId, fingerprint: fingerprint(id.publicKey) })}\n`);
    });
  signer
    .command('start')
    .description('run the signer daemon')
    .requiredOption('-c, --config <file>', 'configuration file (JSON)')
    .option(
      '--log-level <level>',
      "log level (default: env CUSTODIAN_LOG_LEVEL, else the config's logLevel, else info)",
    )
    .option('--shutdown-timeout <ms>', 'drain bound on SIGTERM/SIGINT before exiting anyway (ms)', '10000')
    .action(async (o: { config: string; logLevel?: string; shutdownTimeout: string }) => {
      const timeoutMs = parseShutdownTimeout(o.shutdownTimeout);
      const config = await loadConfig(o.config);
      const logLevel = resolveLogLevel(o.logLevel, config.logLevel);
      const daemon = await startSigner({ ...config, logLevel });
      // SIGTERM / SIGINT: running ceremonies are cancelled, the store closed, exit 0, bounded (#29)
      handleShutdownSignals({ name: 'signer', log: daemon.log, stop: () => daemon.stop(), timeoutMs });
    });
  signer
    .command('status')
    .description('show keys held, pool sizes and connected peers (from the running daemon’s status file)')
    .requiredOption('-c, --config <file>', 'configuration file (JSON)')
    .action(async (o: { config: string }) => {
      const config = await loadConfig(o.config);
      const path = join(config.dataDir, STATUS_FILE);
      const text = await readFile(path, 'utf8').catch(() => {
        throw new Error(`no status at ${path}: has the daemon been started?`);
      });
      const s = JSON.parse(text) as { pid?: number };
      let running = false;
      try {
        if (s.pid) process.kill(s.pid, 0);
        running = s.pid !== undefined;
      } catch {
        running = false;
      }
      process.stdout.write(`${JSON.stringify({ running, ...s }, null, 2)}\n`);
    });
  return signer;
}

/** A stand-alone program with only the signer commands (used by `main.ts`). */
export function createSignerProgram(): Command {
  const program = new Command('custodian').showHelpAfterError();
  registerSignerCommands(program);
  return program;
}
