/**
 * `custodian dev`: run a local demonstration of the threshold core, in one process, with the real
 * protocol state machines — until the full local instance (coordinator, signer processes, mobile
 * simulators, a local Ethereum node) replaces it.
 *
 * What it does: a 3-of-4 FROST DKG on Ed25519 and on secp256k1 (Taproot), each with a jointly
 * random chain code; a signature by 3 of the 4 parties under the master key and under an HD-derived
 * child key (Ed25519), and a BIP341 key-path signature (Taproot); every signature is checked with
 * an independent verifier (noble's `ed25519.verify` / `schnorr.verify`).
 */
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { readMailbox } from '@custodian/coordinator';
import { bytesToHex, deriveEd25519, Party, simulate, systemRandom } from '@custodian/crypto';
import { dkgProtocol, type KeyShare, type SuiteName, signProtocol } from '@custodian/frost';
import { handleShutdownSignals, LOG_LEVEL_ENV, parseShutdownTimeout, resolveLogLevel } from '@custodian/signer-client';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import type { Command } from 'commander';
import { runDemo } from './dev/demo.js';
import { type Instance, startInstance } from './dev/instance.js';
import { checkReplicas, replicaDataDir } from './dev/replicas.js';

const N = 4;
const T = 3;

function step(label: string): (outcome: string) => void {
  const t0 = performance.now();
  process.stdout.write(`• ${label} … `);
  return (outcome) => process.stdout.write(`${outcome} (${Math.round(performance.now() - t0)} ms)\n`);
}

function dkg(suite: SuiteName): KeyShare[] {
  const sessionId = systemRandom(32);
  const parties = Array.from(
    { length: N },
    (_, i) => new Party(dkgProtocol({ suite, threshold: T }), { self: i, n: N, sessionId, rng: systemRandom }),
  );
  const res = simulate(parties);
  const failed = res.aborted.find(Boolean);
  if (failed) throw new Error(`DKG aborted: ${failed.reason}`);
  return res.outputs as KeyShare[];
}

function sign(
  shares: readonly KeyShare[],
  signerIdx: readonly number[],
  message: Uint8Array,
  extra: { derivationPath?: string; taproot?: { merkleRoot: Uint8Array } } = {},
) {
  const sessionId = systemRandom(32);
  const signers = signerIdx.map((i) => (shares[i] as KeyShare).identifier);
  const parties = signerIdx.map(
    (i, pos) =>
      new Party(signProtocol({ keyShare: shares[i] as KeyShare, signers, message, ...extra }), {
        self: pos,
        n: signerIdx.length,
        sessionId,
        rng: systemRandom,
      }),
  );
  const res = simulate(parties);
  const failed = res.aborted.find(Boolean);
  if (failed) throw new Error(`signing aborted: ${failed.reason}`);
  const out = res.outputs[0];
  if (!out) throw new Error('signing produced no output');
  return out;
}

/** Run the demonstration; returns false if any verification failed. */
export function runDevDemo(): boolean {
  let ok = true;
  const check = (label: string, good: boolean) => {
    ok &&= good;
    return `${label}: ${good ? 'verified' : 'VERIFICATION FAILED'}`;
  };
  console.log(`Custodian dev — threshold core demo (${T}-of-${N}, four parties in one process)\n`);
  let done = step('FROST DKG, Ed25519');
  const ed = dkg('ed25519');
  const edKey = (ed[0] as KeyShare).groupPublicKey;
  done(`group key ${bytesToHex(edKey)}`);

  done = step('FROST DKG, secp256k1 (Taproot)');
  const tr = dkg('secp256k1-tr');
  done(`internal key ${bytesToHex((tr[0] as KeyShare).groupPublicKey)}`);

  const message = new TextEncoder().encode('custodian dev: hello, threshold world');
  done = step('Ed25519 signature by parties 1, 2, 4');
  const s1 = sign(ed, [0, 1, 3], message);
  done(check('ed25519.verify', ed25519.verify(s1.signature, message, edKey)));

  const path = 'm/44/501/0/0/1';
  done = step(`Ed25519 signature under the HD child ${path} by parties 2, 3, 4`);
  const child = deriveEd25519(edKey, (ed[0] as KeyShare).chainCode, path);
  const s2 = sign(ed, [1, 2, 3], message, { derivationPath: path });
  done(
    check(
      `ed25519.verify under child key ${bytesToHex(child.publicKey).slice(0, 16)}…`,
      bytesToHex(s2.verifyingKey) === bytesToHex(child.publicKey) &&
        ed25519.verify(s2.signature, message, child.publicKey),
    ),
  );

  done = step('BIP340 Taproot key-path signature (BIP341 tweak, empty script tree) by parties 1, 3, 4');
  const sighash = systemRandom(32);
  const s3 = sign(tr, [0, 2, 3], sighash, { taproot: { merkleRoot: new Uint8Array(0) } });
  done(check('schnorr.verify under the tweaked output key', schnorr.verify(s3.signature, sighash, s3.verifyingKey)));

  console.log(
    `\n${ok ? 'All signatures verified.' : 'Some verification failed.'} No process held a whole private key: each party kept only its share.`,
  );
  console.log(
    'The full local instance (coordinator API, signer processes, mobile simulators, anvil) arrives with the e2e work.',
  );
  return ok;
}

/**
 * Print each login code that lands in the development mailbox from now on ("login code for
 * <email>: NNNNNN (development mailbox)"), so a dashboard user sees it in the terminal; the code
 * only, never the rest of the mail. The mails already in `mailbox` when it is called are never
 * printed (read synchronously, so a mail written right after the call counts as new); polls the
 * folder every `everyMs` milliseconds (default 1000); returns the stop function.
 */
export function printLoginCodes(mailbox: string, say: (l: string) => void, everyMs = 1000): () => void {
  let seen: Set<string>;
  try {
    seen = new Set(readdirSync(mailbox).filter((f) => f.endsWith('.eml')));
  } catch {
    seen = new Set();
  }
  let busy = false;
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      const mails = await readMailbox(mailbox).catch(() => []);
      for (const m of mails) {
        if (seen.has(m.file)) continue;
        seen.add(m.file);
        const code = /login code is (\d{6})/.exec(m.text)?.[1];
        if (code !== undefined) say(`login code for ${m.to}: ${code} (development mailbox)`);
      }
    } finally {
      busy = false;
    }
  };
  const t = setInterval(() => void tick(), everyMs);
  t.unref();
  return () => clearInterval(t);
}

/** Print where the instance is and how to call it. */
function printSummary(inst: Instance, say: (l: string) => void): void {
  const p = inst.state.profile_id as string;
  const k = inst.state.api_key as string;
  say('');
  say('Custodian is running.');
  say(`  API base URL   ${inst.baseUrl}/api/v1/profiles/${p}`);
  for (const [k, u] of inst.baseUrls.slice(1).entries())
    say(`  replica ${k + 2}      ${u}/api/v1/profiles/${p}   (same database, same API key)`);
  say(`  API key        ${k}   (development instance; shown here once per start)`);
  say(`  OpenAPI        ${inst.baseUrl}/api/openapi.json`);
  say(`  JWKS           ${inst.baseUrl}/.well-known/jwks.json`);
  say(`  Ethereum node  ${inst.anvilUrl} (chain id 31337)`);
  say('');
  say('Try:');
  say(`  curl -s -H 'X-API-Key: ${k}' ${inst.baseUrl}/api/v1/profiles/${p}/wallets`);
  say(
    `  curl -s -X POST -H 'X-API-Key: ${k}' -H "Idempotency-Key: $(uuidgen || cat /proc/sys/kernel/random/uuid)" -H 'Content-Type: application/json' \\\n       -d '{"name":"mine","blockchain_ids":["${inst.state.ethereum_local_id}"]}' ${inst.baseUrl}/api/v1/profiles/${p}/wallets`,
  );
  say(`  curl -s -H 'X-API-Key: ${k}' '${inst.baseUrl}/api/v1/profiles/${p}/transfers?page_size=10'`);
  say('');
  say('Stop with Ctrl-C; data stays in the data folder and is reused on the next start.');
}

interface DevFlags {
  dataDir: string;
  port: string;
  replicas: string;
  databaseUrl?: string;
  anvilPort: string;
  receiverPort: string;
  signerPorts: string;
  demo?: boolean;
  exitAfterDemo?: boolean;
  quiet?: boolean;
  level: string;
  logLevel?: string;
  shutdownTimeout: string;
}

/** Register `custodian dev` (the whole local instance) and `custodian dev core` (in-process demo). */
export function registerDevCommand(program: Command): void {
  const dev = program
    .command('dev')
    .description(
      'run a whole local instance: coordinator, 2 server signers, 2 mobile simulators, anvil, webhook receiver',
    )
    .option('--data-dir <dir>', 'data folder (reused on the next start)', '.custodian/dev')
    .option('--port <port>', 'coordinator API port (replica k of --replicas: port + k − 1)', '8080')
    .option('--replicas <n>', 'coordinator processes on the one database (2 or more need --database-url)', '1')
    .option(
      '--database-url <url>',
      "the coordinator's PostgreSQL database instead of the embedded store (env DATABASE_URL)",
    )
    .option('--anvil-port <port>', 'local Ethereum node port', '8545')
    .option('--receiver-port <port>', 'webhook receiver port', '9000')
    .option('--signer-ports <a,b>', 'server signer libp2p ports', '7401,7402')
    .option('--level <level>', 'CGGMP21 security level of the ECDSA key: SECURITY_112 or SECURITY_128', 'SECURITY_112')
    .option('--demo', 'after start-up, run the integrator demo (wallet, deposit, transfers, webhooks)')
    .option('--exit-after-demo', 'stop everything when the demo ends (exit code 0 on success)')
    .option('--quiet', "hide the processes' log lines (progress only)")
    .option('--log-level <level>', 'log level of every process (default: env CUSTODIAN_LOG_LEVEL, else info)')
    .option('--shutdown-timeout <ms>', 'drain bound on SIGTERM/SIGINT/SIGHUP before exiting anyway (ms)', '10000')
    .action(async (o: DevFlags) => {
      const say = (l: string) => process.stdout.write(`${l}\n`);
      const timeoutMs = parseShutdownTimeout(o.shutdownTimeout);
      // the children (coordinator, signers, phones) inherit the level through the environment
      process.env[LOG_LEVEL_ENV] = resolveLogLevel(o.logLevel);
      const ports = o.signerPorts.split(',').map(Number);
      const replicas = Number(o.replicas);
      const databaseUrl = o.databaseUrl ?? (process.env.DATABASE_URL || undefined);
      // before anything starts: N ≥ 2 without PostgreSQL is refused with a clear error
      checkReplicas(replicas, databaseUrl);
      if (o.level !== 'SECURITY_112' && o.level !== 'SECURITY_128')
        throw new Error('--level must be SECURITY_112 or SECURITY_128');
      const line = (_fields: Record<string, unknown>, msg: string) => say(msg);
      // SIGTERM / SIGINT / SIGHUP (terminal closed): every process stopped (SIGTERM, SIGKILL after
      // 5 s), exit 0, bounded (#29). Installed before the start-up: a signal then waits for it (or the
      // drain times out and the supervisor's exit hook kills what runs) instead of ending this process
      // alone and leaving its detached children running.
      let inst: Instance | undefined;
      let stopRequested = false;
      let starting: Promise<Instance> | undefined;
      const signals = handleShutdownSignals({
        name: 'custodian dev',
        log: { info: line, warn: line, error: line },
        stop: async () => {
          stopRequested = true;
          if (starting) await (await starting).stop();
        },
        pending: () => (inst ? inst.supervisor.running() : ['start-up']),
        timeoutMs,
      });
      starting = startInstance({
        dataDir: o.dataDir,
        apiPort: Number(o.port),
        replicas,
        ...(databaseUrl !== undefined ? { databaseUrl } : {}),
        anvilPort: Number(o.anvilPort),
        receiverPort: Number(o.receiverPort),
        signerPorts: [ports[0] ?? 7401, ports[1] ?? 7402],
        ecdsaLevel: o.level,
        verbose: !o.quiet,
        say,
      });
      starting.catch(() => signals.dispose());
      inst = await starting;
      if (stopRequested) return;
      const shutdown = (code: number) => signals.shutdown(code === 0 ? 'demo done' : 'demo failed', code);
      printSummary(inst, say);
      const dataDir = resolve(o.dataDir);
      say(`  Dashboard      ${inst.baseUrl}/`);
      say(
        `  Admin login    ${String(inst.state.admin?.email ?? 'admin@custodian.local')}; password in ${join(dataDir, 'secrets', 'admin-password')}`,
      );
      say('  Login codes of the development mailbox are printed here as they arrive.');
      // each replica writes the codes of the logins it served to its own mailbox
      const stops = inst.baseUrls.map((_, k) => printLoginCodes(join(replicaDataDir(dataDir, k), 'mailbox'), say));
      process.once('exit', () => {
        for (const s of stops) s();
      });
      if (o.demo) {
        say('\n=== Demo: custody as an integrator sees it (HTTP only) ===');
        try {
          await runDemo(inst, say);
          say(
            '\nDemo complete: deposit detected, transfers approved, threshold-signed, mined and delivered, webhooks verified.',
          );
        } catch (e) {
          say(`\nDemo failed: ${(e as Error).message}`);
          if (o.exitAfterDemo) return shutdown(1);
        }
        if (o.exitAfterDemo) return shutdown(0);
      }
    });
  dev
    .command('core')
    .description('in-process demonstration of the threshold core (FROST DKG and signatures), no servers')
    .action(() => {
      if (!runDevDemo()) process.exitCode = 1;
    });
}
