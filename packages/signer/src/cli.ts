/**
 * `custodian signer init|peer-id|start|reload|status|backup` (commander). Registered into the `custodian` program by
 * packages/cli through {@link registerSignerCommands}.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fingerprint, handleShutdownSignals, parseShutdownTimeout, resolveLogLevel } from '@custodian/signer-client';
import { Command } from 'commander';
import { createBackup, inspectBackup, readBackupFile, restoreBackup, writeRecoveryKey } from './backup.js';
import { ConfigError, healthFields, loadConfig, type PassphraseSource, readPassphrase } from './config.js';
import { type SignerDaemon, STATUS_FILE, startSigner } from './daemon.js';
import { createIdentity, readPublicIdentity } from './identity.js';
import type { SignerReload } from './reload.js';

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
    .command('peer-id')
    .description(
      'print the peer id and fingerprint of the identity in a data folder (no passphrase needed); never creates one',
    )
    .requiredOption('-d, --data-dir <dir>', 'data folder of the node')
    .action(async (o: { dataDir: string }) => {
      const id = await readPublicIdentity(o.dataDir);
      process.stdout.write(`${JSON.stringify({ peerId: id.peerId, fingerprint: fingerprint(id.publicKey) })}\n`);
    });
  signer
    .command('start')
    .description('run the signer daemon')
    .requiredOption('-c, --config <file>', 'configuration file (JSON)')
    .option('--health-port <port>', 'local HTTP port of /healthz, /readyz and /metrics (overrides healthPort)')
    .option(
      '--log-level <level>',
      "log level (default: env CUSTODIAN_LOG_LEVEL, else the config's logLevel, else info)",
    )
    .option('--shutdown-timeout <ms>', 'drain bound on SIGTERM/SIGINT before exiting anyway (ms)', '10000')
    .action(async (o: { config: string; healthPort?: string; logLevel?: string; shutdownTimeout: string }) => {
      const timeoutMs = parseShutdownTimeout(o.shutdownTimeout);
      // the file, then the flags and environment that override it (so a reload does not see them as
      // a change)
      const readConfig = async () => {
        const config = await loadConfig(o.config);
        const logLevel = resolveLogLevel(o.logLevel, config.logLevel);
        return {
          ...config,
          logLevel,
          ...(o.healthPort === undefined ? {} : healthFields(Number(o.healthPort), config.healthHost)),
        };
      };
      // SIGHUP (`custodian signer reload`, systemd `ExecReload`): re-read the config file and apply
      // the trusted Admin devices, chains and log level without a restart. Listened for before the
      // start: one that arrives while the daemon starts is applied once it runs (never the default
      // action, which ends the process).
      let running: SignerDaemon | undefined;
      let hupWhileStarting = false;
      const onHup = () => {
        if (running) void running.reload(readConfig);
        else hupWhileStarting = true;
      };
      process.on('SIGHUP', onHup);
      const daemon = await startSigner(await readConfig());
      // SIGTERM / SIGINT: running ceremonies are cancelled, the store closed, exit 0, bounded (#29);
      // not SIGHUP, which reloads (above)
      handleShutdownSignals({
        name: 'signer',
        log: daemon.log,
        stop: () => daemon.stop(),
        timeoutMs,
        signals: ['SIGTERM', 'SIGINT'],
      });
      running = daemon;
      if (hupWhileStarting) onHup();
    });
  signer
    .command('reload')
    .description(
      'make the running daemon re-read its config file (SIGHUP): trustedAdminDevices, chains and logLevel apply without a restart',
    )
    .requiredOption('-c, --config <file>', 'configuration file (JSON) the daemon was started with')
    .option('--timeout <ms>', 'how long to wait for the daemon to report the reload', '30000')
    .action(async (o: { config: string; timeout: string }) => {
      const result = await reloadRunningSigner(o.config, Number(o.timeout));
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      if (!result.ok) process.exitCode = 1;
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
  registerBackupCommands(signer);
  return signer;
}

/**
 * `custodian signer backup keygen|create|restore|inspect` (backup.ts, backup-envelope.ts): an
 * encrypted backup of a STOPPED signer's identity and key shares to an operator recovery key, and
 * its restore into a new, empty data folder. Output is JSON on stdout, never secret material.
 */
function registerBackupCommands(signer: Command): void {
  const backup = signer
    .command('backup')
    .description('encrypted backup of identity and key shares to an offline recovery key; restore; inspect');
  backup
    .command('keygen')
    .description(
      'create an X25519 recovery key pair: DIR/recovery.key (SECRET, 0600: keep it OFFLINE) and DIR/recovery.pub',
    )
    .requiredOption('--out <dir>', 'folder to write recovery.key and recovery.pub into (never overwritten)')
    .action(async (o: { out: string }) => {
      const r = await writeRecoveryKey(o.out);
      process.stdout.write(
        `${JSON.stringify({ ...r, warning: 'recovery.key decrypts every backup made to it: move it offline (e.g. a hardware-encrypted USB stick in a safe) and delete it from this machine' }, null, 2)}\n`,
      );
    });
  backup
    .command('create')
    .description('back up a STOPPED signer: identity, key shares and records (never presignatures, nonces or ledgers)')
    .requiredOption('-c, --config <file>', 'configuration file (JSON) of the signer')
    .requiredOption('--recovery-key <file>', 'the recovery PUBLIC key (recovery.pub)')
    .requiredOption('--out <file>', 'backup file to write (atomically, mode 0600)')
    .action(async (o: { config: string; recoveryKey: string; out: string }) => {
      const config = await loadConfig(o.config);
      const summary = await createBackup({
        dataDir: config.dataDir,
        passphrase: await readPassphrase(config.passphrase),
        ...(config.scrypt ? { scrypt: config.scrypt } : {}),
        recoveryPub: await readFile(o.recoveryKey, 'utf8'),
        out: o.out,
      });
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    });
  backup
    .command('restore')
    .description(
      "restore a backup into the config's dataDir, which must be new or empty (no presignature, empty nonce and transfer ledgers; the first start records a restore)",
    )
    .requiredOption('-c, --config <file>', 'configuration file (JSON) of the restored signer (its dataDir, passphrase)')
    .requiredOption('--in <file>', 'backup file')
    .requiredOption('--recovery-key <file>', 'the recovery SECRET key (recovery.key)')
    .option('--peer-id <id>', "the lost signer's peer id: refuse a backup of any other signer")
    .action(async (o: { config: string; in: string; recoveryKey: string; peerId?: string }) => {
      const config = await loadConfig(o.config);
      const summary = await restoreBackup({
        file: await readBackupFile(o.in),
        recoveryKey: await readFile(o.recoveryKey, 'utf8'),
        dataDir: config.dataDir,
        passphrase: await readPassphrase(config.passphrase),
        ...(config.scrypt ? { scrypt: config.scrypt } : {}),
        ...(o.peerId ? { expectPeerId: o.peerId } : {}),
      });
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    });
  backup
    .command('inspect')
    .description('print a backup file header (no secret needed; not authenticated until a restore)')
    .requiredOption('--in <file>', 'backup file')
    .action(async (o: { in: string }) => {
      process.stdout.write(`${JSON.stringify(inspectBackup(await readBackupFile(o.in)), null, 2)}\n`);
    });
}

/**
 * Signal the daemon of `configPath` (its pid from `status.json`) to reload its configuration and
 * wait for its answer (`status.json` `reload`, {@link SignerReload}).
 * @throws ConfigError when the config file is invalid (checked here first, nothing is signalled),
 *   Error when no daemon of this data folder runs or it does not answer within `timeoutMs`
 */
export async function reloadRunningSigner(configPath: string, timeoutMs: number): Promise<SignerReload> {
  const config = await loadConfig(configPath);
  const path = join(config.dataDir, STATUS_FILE);
  const read = async () =>
    JSON.parse(
      await readFile(path, 'utf8').catch(() => {
        throw new Error(`no status at ${path}: has the daemon been started?`);
      }),
    ) as { pid?: number; reload?: SignerReload };
  const before = await read();
  if (before.pid === undefined) throw new Error(`${path} names no process`);
  // a stale status.json (the daemon stopped) may name a pid reused by another process: on Linux,
  // signal it only when it is a `signer start`
  const cmdline = await readFile(`/proc/${before.pid}/cmdline`, 'utf8').catch(() => undefined);
  if (cmdline !== undefined && !/\0signer\0start\0/.test(`\0${cmdline}`))
    throw new Error(`process ${before.pid} named by ${path} is not a signer daemon (is the signer running?)`);
  try {
    process.kill(before.pid, 'SIGHUP');
  } catch (e) {
    throw new Error(`signer daemon (pid ${before.pid}) not reachable: ${(e as NodeJS.ErrnoException).code ?? e}`);
  }
  const end = Date.now() + (Number.isFinite(timeoutMs) && timeoutMs > 0 ? timeoutMs : 30_000);
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    const now = await read().catch(() => undefined);
    if (now?.reload && now.reload.at !== before.reload?.at) return now.reload;
  }
  throw new Error(`the signer daemon (pid ${before.pid}) did not report the reload in ${path}`);
}

/** A stand-alone program with only the signer commands (used by `main.ts`). */
export function createSignerProgram(): Command {
  const program = new Command('custodian').showHelpAfterError();
  registerSignerCommands(program);
  return program;
}
