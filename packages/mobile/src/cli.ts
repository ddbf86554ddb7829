/**
 * `custodian mobile enroll|status|set-urls|run|sign-policy`: the headless simulator of the phone app
 * (commander). Registered into the `custodian` program by packages/cli through
 * {@link registerMobileCommands}.
 *
 * The PIN comes from `--pin-file` (scripted mode, tests) or an interactive prompt; it is never a
 * command-line argument, nor is the Admin session token of `sign-policy` (environment variable
 * `CUSTODIAN_ADMIN_TOKEN`). `run` prints one JSON line per event on stdout (`connected` — with
 * `resumed` and `pending_approvals` —, `disconnected` — with the next attempt and its delay —,
 * `revoked`, `approval_request`, `approval_refused` — checked against `--chains` before it is
 * shown, then rejected —, `decision`, `ceremony`); logs (pino JSON) go to stderr. `run` reconnects
 * forever (capped, jittered backoff) and ends on SIGINT/SIGTERM (exit code 0) or when the
 * coordinator revokes the device ({@link EXIT_DEVICE_REVOKED}).
 *
 * Coordinator URLs: `enroll --url` takes one base URL or several (repeatable or comma-separated: one
 * per coordinator replica), kept in the vault; `set-urls` replaces them on an enrolled vault. `run`
 * connects to one and moves to the next when it cannot connect or the connection drops.
 */
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline/promises';
import { parseChainsConfig } from '@custodian/ceremony';
import { handleShutdownSignals, parseShutdownTimeout, resolveLogLevel } from '@custodian/signer-client';
import type { TransferIntent } from '@custodian/wire';
import type { Command } from 'commander';
import { pino } from 'pino';
import { approvalEventFields, describeApproval } from './approval-display.js';
import { type ApprovalDecision, MobileSigner } from './device.js';
import { enrollDevice, enrollmentStatus } from './enroll.js';
import { PolicySignCancelled, signPolicyWithDevice } from './policy.js';
import { DEFAULT_PIN_KDF, setVaultUrls, unlockVault, WrongPinError } from './vault.js';

/**
 * Exit code of `mobile run` when the coordinator revoked the device (REMOVED or REJECTED): the
 * simulator stops instead of reconnecting, and a supervisor (`custodian dev`) does not restart it.
 */
export const EXIT_DEVICE_REVOKED = 3;

/** Environment variable holding the Admin session token of `mobile sign-policy`. */
export const ADMIN_TOKEN_ENV = 'CUSTODIAN_ADMIN_TOKEN';

/** Where the commands write and what they read from the environment (default: the process's). */
export interface MobileCliIo {
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
}

const processIo: MobileCliIo = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
  env: process.env,
};

async function ask(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: process.stdin.isTTY });
  try {
    return (await rl.question(question)).trim();
  } finally {
    rl.close();
  }
}

async function readPin(pinFile: string | undefined, confirm = false, env = process.env): Promise<string> {
  if (pinFile) {
    const pin = (await readFile(pinFile, 'utf8')).replace(/\r?\n$/, '');
    if (pin.length < 4) throw new Error(`${pinFile}: the PIN must have at least 4 characters`);
    return pin;
  }
  if (!process.stdin.isTTY && !env.CUSTODIAN_MOBILE_PROMPT)
    throw new Error('no terminal to ask for the PIN: use --pin-file');
  const pin = await ask('PIN: ');
  if (pin.length < 4) throw new Error('the PIN must have at least 4 characters');
  if (confirm && (await ask('PIN again: ')) !== pin) throw new Error('the PINs differ');
  return pin;
}

/** Commander collector of `--url`: repeatable, each value possibly comma-separated. */
function collectUrls(v: string, prev: string[] = []): string[] {
  return [
    ...prev,
    ...v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  ];
}

const URLS_HELP =
  'coordinator base URL, e.g. http://127.0.0.1:8080; several (one per coordinator replica): repeat --url or separate with commas';

function event(io: MobileCliIo, e: Record<string, unknown>): void {
  io.out(`${JSON.stringify({ at: new Date().toISOString(), ...e })}\n`);
}

interface RunOptions {
  data: string;
  pinFile?: string;
  autoApprove?: boolean;
  autoReject?: boolean;
  ecdsaLevel?: 'SECURITY_128' | 'SECURITY_112';
  primeSeedFile?: string;
  primePool?: string;
  storeScryptN?: string;
  trustedAdminKey?: string[];
  chains?: string;
  allowUnenforcedSigning?: boolean;
  logLevel?: string;
  shutdownTimeout: string;
}

interface SignPolicyCliOptions {
  data: string;
  url?: string;
  profile: string;
  policy: string;
  version?: string;
  pinFile?: string;
}

/** Add the `mobile` command group to `program` (`io`: output and environment, default the process's). */
export function registerMobileCommands(program: Command, io: MobileCliIo = processIo): Command {
  const mobile = program.command('mobile').description('mobile signer simulator: enroll, status, run, sign-policy');
  mobile
    .command('enroll')
    .description(
      'create the device keys (sealed under a PIN) and submit the enrollment request; prints the fingerprint',
    )
    .requiredOption('--url <url>', URLS_HELP, collectUrls)
    .requiredOption('--data <dir>', 'data folder of the simulated phone')
    .option('--name <name>', 'device name shown to the administrator', 'Custodian mobile simulator')
    .option('--platform <platform>', 'ios or android', 'android')
    .option('--os-version <v>', 'OS version reported', '14')
    .option('--pin-file <path>', 'file holding the PIN (else prompt)')
    .option('--kdf-n <n>', 'scrypt N of the PIN key (power of two; default 32768)')
    .action(
      async (o: {
        url: string[];
        data: string;
        name: string;
        platform: 'ios' | 'android';
        osVersion: string;
        pinFile?: string;
        kdfN?: string;
      }) => {
        const pin = await readPin(o.pinFile, true, io.env);
        const r = await enrollDevice({
          url: o.url,
          dataDir: o.data,
          pin,
          name: o.name,
          platform: o.platform,
          osVersion: o.osVersion,
          ...(o.kdfN ? { kdf: { ...DEFAULT_PIN_KDF, N: Number(o.kdfN) } } : {}),
        });
        io.out(`${JSON.stringify(r)}\n`);
        io.err(`Fingerprint (compare with the administrator): ${r.fingerprint}\n`);
      },
    );
  mobile
    .command('status')
    .description('show the enrollment status')
    .requiredOption('--data <dir>', 'data folder of the simulated phone')
    .action(async (o: { data: string }) => {
      io.out(`${JSON.stringify(await enrollmentStatus(o.data))}\n`);
    });
  mobile
    .command('set-urls')
    .description(
      "replace the coordinator URLs of an enrolled phone (the coordinator's replicas; the pinned coordinator identity stays)",
    )
    .requiredOption('--data <dir>', 'data folder of the simulated phone')
    .requiredOption('--url <url>', URLS_HELP, collectUrls)
    .action(async (o: { data: string; url: string[] }) => {
      const info = await setVaultUrls(o.data, o.url);
      io.out(`${JSON.stringify({ device_id: info.deviceId, urls: info.urls })}\n`);
    });
  mobile
    .command('run')
    .description('connect to the coordinator, answer approval requests, take part in ceremonies')
    .requiredOption('--data <dir>', 'data folder of the simulated phone')
    .option('--pin-file <path>', 'file holding the PIN (scripted mode; else prompt)')
    .option('--auto-approve', 'scripted: approve every request (with the PIN of --pin-file)')
    .option('--auto-reject', 'scripted: reject every request')
    .option('--ecdsa-level <level>', 'CGGMP21 security level: SECURITY_128 or SECURITY_112')
    .option('--prime-seed-file <path>', 'safe primes to import ({"safePrimes":[hex…]}) for ECDSA aux-info')
    .option('--prime-pool <n>', 'background safe-prime pool target', '0')
    .option('--store-scrypt-n <n>', 'scrypt N of the share store key (default 32768)')
    .option(
      '--trusted-admin-key <hex>',
      'compressed P-256 key of an Admin device whose policy signatures this phone trusts (repeatable; needed to sign transfers)',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option(
      '--chains <file>',
      'JSON file of the blockchains this phone signs for: { "<blockchain key>": { "family", "chainId" | "network", "maxFee", "assets"? } } (as a server signer\'s "chains"); approval requests of other blockchains or assets are rejected unseen',
    )
    .option(
      '--allow-unenforced-signing',
      'DEVELOPMENT AND TESTS ONLY: without --trusted-admin-key, sign whatever digest is asked, unchecked (default: refuse every sign request)',
    )
    .option('--log-level <level>', 'pino level of the logs on stderr (default: env CUSTODIAN_LOG_LEVEL, else info)')
    .option('--shutdown-timeout <ms>', 'drain bound on SIGTERM/SIGINT/SIGHUP before exiting anyway (ms)', '10000')
    .action(async (o: RunOptions) => {
      const level = resolveLogLevel(o.logLevel, undefined, io.env);
      const shutdownTimeoutMs = parseShutdownTimeout(o.shutdownTimeout);
      const log = pino({ level, base: { service: 'custodian-mobile' } }, pino.destination(2));
      if (o.autoApprove && o.autoReject) throw new Error('--auto-approve and --auto-reject exclude each other');
      if (o.allowUnenforcedSigning && o.trustedAdminKey)
        throw new Error('--allow-unenforced-signing and --trusted-admin-key exclude each other');
      const chains = o.chains ? parseChainsConfig(JSON.parse(await readFile(o.chains, 'utf8'))) : undefined;
      const pin = await readPin(o.pinFile, false, io.env);
      const scripted = o.autoApprove ? 'APPROVE' : o.autoReject ? 'REJECT' : undefined;
      let prompting = Promise.resolve();
      const decide = async (intent: TransferIntent): Promise<ApprovalDecision> => {
        if (scripted) return scripted;
        // Interactive: one prompt at a time; the PIN is asked again and must open the vault.
        const turn = prompting.then(async (): Promise<ApprovalDecision> => {
          io.err(`\n${describeApproval(intent)}`);
          const a = (await ask('Approve (a), reject (r) or later (l)? ')).toLowerCase();
          if (a !== 'a' && a !== 'r') return undefined;
          const entered = await ask('PIN: ');
          try {
            (await unlockVault(o.data, entered)).wipe();
          } catch (e) {
            if (e instanceof WrongPinError) {
              io.err('wrong PIN: no decision sent\n');
              return undefined;
            }
            throw e;
          }
          return a === 'a' ? 'APPROVE' : 'REJECT';
        });
        prompting = turn.then(
          () => undefined,
          () => undefined,
        );
        return turn;
      };
      let revoked: ((reason: string) => void) | undefined;
      const revocation = new Promise<string>((r) => {
        revoked = r;
      });
      const signer = await MobileSigner.start(
        {
          dataDir: o.data,
          pin,
          decide,
          log,
          ...(o.ecdsaLevel
            ? {
                ecdsa: {
                  level: o.ecdsaLevel,
                  ...(o.primeSeedFile ? { primeSeedFile: o.primeSeedFile } : {}),
                  primePool: Number(o.primePool ?? 0),
                },
              }
            : {}),
          ...(o.storeScryptN ? { storeScrypt: { N: Number(o.storeScryptN), r: 8, p: 1 } } : {}),
          ...(o.trustedAdminKey ? { trustedAdminKeys: o.trustedAdminKey } : {}),
          ...(chains ? { chains } : {}),
          ...(o.allowUnenforcedSigning ? { allowUnenforcedSigning: true } : {}),
        },
        {
          onConnected: (coordinator, c) =>
            event(io, {
              event: 'connected',
              coordinator,
              url: c.url,
              resumed: c.resumed,
              pending_approvals: c.pendingApprovals,
            }),
          onDisconnected: (d) =>
            event(io, {
              event: 'disconnected',
              code: d.code,
              url: d.url,
              attempt: d.attempt,
              retry_in_ms: d.delayMs,
              next_url: d.nextUrl,
            }),
          onRevoked: (reason) => {
            event(io, { event: 'revoked', reason });
            revoked?.(reason);
          },
          onApprovalRequest: (i) => event(io, { event: 'approval_request', ...approvalEventFields(i) }),
          onDecision: (i, decision) => event(io, { event: 'decision', transfer_id: i.transfer_id, decision }),
          onApprovalRefused: (i, r) =>
            event(io, { event: 'approval_refused', transfer_id: i.transfer_id, code: r.code, reason: r.reason }),
          onCeremony: (kind, outcome, error) =>
            event(io, { event: 'ceremony', kind, outcome, ...(error ? { error } : {}) }),
        },
      );
      event(io, { event: 'started', device_id: signer.deviceId, mpc_peer_id: signer.mpcPeerId });
      // SIGTERM / SIGINT / SIGHUP: stop (the link closes, ceremonies end) and exit 0, bounded (#29)
      const signals = handleShutdownSignals({
        name: 'phone',
        log,
        stop: () => signer.stop(),
        timeoutMs: shutdownTimeoutMs,
      });
      await revocation;
      signals.dispose();
      io.err('this device was revoked by the coordinator (removed or rejected): enroll it again to use it\n');
      process.exitCode = EXIT_DEVICE_REVOKED;
    });
  mobile
    .command('sign-policy')
    .description(
      `sign a policy version as this (Admin's enrolled) device; the Admin session token is read from $${ADMIN_TOKEN_ENV}`,
    )
    .requiredOption('--data <dir>', 'data folder of the simulated phone')
    .option('--url <url>', 'coordinator base URL (default: the one the device enrolled with)')
    .requiredOption('--profile <profile_id>', 'profile of the policy')
    .requiredOption('--policy <policy_id>', 'the policy')
    .option('--version <n>', 'version to sign (default: the one awaiting a signature)')
    .option('--pin-file <path>', 'file holding the PIN (scripted mode; else confirm and prompt)')
    .action(async (o: SignPolicyCliOptions) => {
      const token = io.env[ADMIN_TOKEN_ENV];
      if (!token) throw new Error(`set ${ADMIN_TOKEN_ENV} to the Admin session token (never a command-line argument)`);
      let version: number | undefined;
      if (o.version !== undefined) {
        version = Number(o.version);
        if (!Number.isSafeInteger(version) || version < 1) throw new Error('--version: a positive integer');
      }
      const scriptedPin = o.pinFile ? await readPin(o.pinFile, false, io.env) : undefined;
      try {
        const r = await signPolicyWithDevice({
          dataDir: o.data,
          ...(o.url ? { url: o.url } : {}),
          profileId: o.profile,
          policyId: o.policy,
          ...(version !== undefined ? { version } : {}),
          adminToken: token,
          pin: scriptedPin ?? (() => readPin(undefined, false, io.env)),
          onSummary: async (summary) => {
            io.err(`\n${summary}`);
            if (scriptedPin !== undefined) return true;
            return (await ask('Sign this policy version with this device (y/N)? ')).toLowerCase() === 'y';
          },
        });
        io.out(`${JSON.stringify(r.policy)}\n`);
        io.err(`signed version ${r.version} as device ${r.signed.device_id}\n`);
      } catch (e) {
        if (e instanceof PolicySignCancelled) {
          io.err(`${e.message}\n`);
          return;
        }
        throw e;
      }
    });
  return mobile;
}
