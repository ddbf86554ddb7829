/**
 * The local instance behind `custodian dev`: a real coordinator on the embedded PGlite store, two
 * server signer processes, two mobile-signer simulator processes, a real Ethereum node (anvil from
 * npm) and a webhook receiver built on the SDK's `verifyWebhook` — all on 127.0.0.1, data under one
 * folder (default `.custodian/dev`, reused on the next start).
 *
 * First start bootstraps exactly as an operator would, through the admin API: first Admin account
 * (with the coordinator's one-time bootstrap token; email code read from the development mailbox), mobile devices enrolled and approved by
 * fingerprint, server signers registered, the 3-of-4 master key ceremony (2 mobile + 2 server,
 * seed §1.4) within its 5-minute deadline, an API key, a whitelist + limits + quorum policy signed
 * by the Admin's device, and a webhook subscription. Development secrets (signer passphrase, PINs,
 * admin password) are random, written to `<data>/secrets/` with mode 0600, and never logged.
 *
 * With `replicas` ≥ 2 (issue #25; PostgreSQL only, `databaseUrl`) the coordinator runs as that many
 * processes on the one database, replica k on port `apiPort + k` with its own data folder
 * (dev/replicas.ts: `coordinator`, `coordinator-2`, …), all sharing replica 1's libp2p identity and
 * webhook key-encryption key (copied before any starts). Replica 1 starts first and takes the
 * instance's init (its bootstrap token); the others start once the instance has its Admin. The
 * bootstrap, the demo and the phones' enrollment talk to replica 1.
 *
 * Every process (coordinator, signers, phones, anvil) is restarted when it dies unexpectedly
 * ({@link RESTART}: the supervisor logs the exit and the restart); the phones and the coordinator's
 * links to the signers reconnect by themselves. A phone the coordinator revoked exits with
 * `EXIT_DEVICE_REVOKED` and stays down.
 *
 * Longer than 400 lines because it is the one script of `custodian dev`: every process it starts,
 * in order, with the configuration each one reads.
 */

import { spawn } from 'node:child_process';
import { generatePrime, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readMailbox } from '@custodian/coordinator';
import { EXIT_DEVICE_REVOKED } from '@custodian/mobile';
import { startAnvil } from './anvil.js';
import { call, waitFor } from './http.js';
import { startReceiver } from './receiver.js';
import { checkReplicas, redactDatabaseUrl, replicaDataDir, shareReplicaSecrets } from './replicas.js';
import { type Managed, RESTART, Supervisor } from './supervisor.js';

/** Where and how to run the instance. */
export interface InstanceOptions {
  readonly dataDir: string;
  readonly apiPort: number;
  readonly anvilPort: number;
  /** Port of the webhook receiver (0: any free port; the webhook URL uses the bound one). */
  readonly receiverPort: number;
  readonly signerPorts: readonly [number, number];
  /**
   * Coordinator processes on the one database (default 1; 2 or more need `databaseUrl`, see
   * dev/replicas.ts `checkReplicas`). Replica k listens on `replicaPorts[k]`, else `apiPort + k`.
   */
  readonly replicas?: number;
  /** Explicit API port of each replica (length `replicas`; tests pass free ports), overriding `apiPort + k`. */
  readonly replicaPorts?: readonly number[];
  /**
   * PostgreSQL URL of the coordinator's database (given to the replicas in their environment,
   * `DATABASE_URL`, never on a command line); undefined: the embedded PGlite store in the data folder.
   */
  readonly databaseUrl?: string;
  /** ECDSA presignatures the coordinator keeps per key and signing set (default 2; `--presignature-pool`). */
  readonly presignaturePool?: number;
  /** CGGMP21 level of the ECDSA key (default SECURITY_112, the faster named level). */
  readonly ecdsaLevel?: 'SECURITY_112' | 'SECURITY_128';
  /**
   * Safe primes (hex) to import instead of generating them, per party: signer-1, signer-2,
   * mobile-1, mobile-2 (TEST ONLY: tests pass committed fixture primes to save prime search).
   */
  readonly primeSeeds?: readonly (readonly string[])[];
  /** Print every process's log lines (default true). */
  readonly verbose?: boolean;
  /** Progress and outcome lines. */
  readonly say?: (line: string) => void;
}

/** What the bootstrap created (persisted in `<data>/instance.json`; the API key is a dev secret). */
export interface InstanceState {
  version: 1;
  /** The database the state lives in: `pglite`, or the PostgreSQL URL without its password (checked at each start). */
  database?: string;
  admin: { email: string };
  profile_id?: string;
  devices: { name: string; device_id: string; fingerprint: string; public_key?: string }[];
  signers: { name: string; peer_id: string; fingerprint: string; signer_id?: string }[];
  master_key_ceremony_id?: string;
  api_key?: string;
  eth_asset_id?: string;
  ethereum_local_id?: string;
  policy_id?: string;
  whitelisted?: string;
  webhook_id?: string;
}

/** A running instance. */
export interface Instance {
  /** Replica 1's API base URL (the bootstrap, the demo and the phones use it). */
  readonly baseUrl: string;
  /** Every replica's API base URL, replica 1 first (one entry without replicas). */
  readonly baseUrls: readonly string[];
  /** The coordinator processes, replica 1 first (named `coordinator`, or `coordinator-<k>` with replicas). */
  readonly coordinators: Managed[];
  readonly anvilUrl: string;
  readonly state: InstanceState;
  readonly supervisor: Supervisor;
  readonly mobiles: Managed[];
  readonly events: ReceivedEvent[];
  /** Start mobile simulator `k` (0 or 1) again after a deliberate `stop()` — the demo takes phone 2 offline and back. */
  startMobile(k: number): Managed;
  /**
   * Start replica `k` (0-based) again after a deliberate `stop()` of its process (the bench runs
   * with and without replica 2); resolves once it is ready. Throws when it is not stopped.
   */
  startReplica(k: number): Promise<Managed>;
  adminToken(): Promise<string>;
  stop(): Promise<void>;
}

/** A verified webhook delivery seen by the receiver. */
export interface ReceivedEvent {
  readonly event_id: string;
  readonly event_type: string;
  readonly data: Record<string, unknown>;
}

const CLI_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(CLI_ROOT, 'dist', 'bin.js');

async function secret(dir: string, name: string, bytes = 24): Promise<string> {
  const path = join(dir, 'secrets', name);
  if (!existsSync(path)) {
    await mkdir(join(dir, 'secrets'), { recursive: true, mode: 0o700 });
    const value = name.startsWith('pin-')
      ? String(100000 + (randomBytes(4).readUInt32BE() % 900000))
      : randomBytes(bytes).toString('base64url');
    await writeFile(path, value, { mode: 0o600, flag: 'wx' });
    await chmod(path, 0o600);
  }
  return path;
}

/** Run a one-shot `custodian …` command; resolves with the last JSON line of its stdout. */
async function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Record<string, unknown>> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => {
      if (code !== 0)
        return rej(
          new Error(
            `custodian ${args.slice(0, 2).join(' ')} failed (${code}): ${err.trim().split('\n').slice(-3).join(' | ')}`,
          ),
        );
      const line = out
        .trim()
        .split('\n')
        .reverse()
        .find((l) => l.startsWith('{'));
      res(line ? (JSON.parse(line) as Record<string, unknown>) : {});
    });
  });
}

const ETH = 10n ** 18n;

/**
 * The blockchains the dev instance's signers and phones sign for (signer config `chains`, phone
 * `--chains`): the local anvil chain only, with the directory's default fee cap as the ceiling.
 * The demo moves ETH only (implied as the native asset), so no `assets` are listed: a token
 * transfer would be refused by the signers and phones (`ASSET_MISMATCH`).
 */
const DEV_CHAINS = {
  'ethereum-local': { family: 'ethereum', chainId: 31337, maxFee: '10000000000000000' },
} as const;

/**
 * The dev coordinator's static price table (config `prices.static`): a fixed, illustrative ETH
 * price — not a market price — so the demo's fee estimates carry a `fee_value_usd`.
 */
const DEV_PRICES = { ETH: '3000.00' } as const;

/**
 * Start (and on first run bootstrap) the instance. Resolves when everything runs and the API is
 * ready for an integrator.
 */
export async function startInstance(opts: InstanceOptions): Promise<Instance> {
  const say = opts.say ?? ((l: string) => process.stdout.write(`${l}\n`));
  const replicas = opts.replicas ?? 1;
  checkReplicas(replicas, opts.databaseUrl);
  if (opts.replicaPorts !== undefined && opts.replicaPorts.length !== replicas)
    throw new RangeError(`replicaPorts: expected ${replicas} ports, got ${opts.replicaPorts.length}`);
  const dir = resolve(opts.dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const statePath = join(dir, 'instance.json');
  const state: InstanceState = existsSync(statePath)
    ? (JSON.parse(await readFile(statePath, 'utf8')) as InstanceState)
    : { version: 1, admin: { email: 'admin@custodian.local' }, devices: [], signers: [] };
  const save = () => writeFile(statePath, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  // the state (profile, API key, devices…) lives in ONE database: refuse to mix it with another
  const database = opts.databaseUrl !== undefined ? redactDatabaseUrl(opts.databaseUrl) : 'pglite';
  if (state.database === undefined && state.profile_id !== undefined && database !== 'pglite')
    throw new Error(
      `${statePath} belongs to an instance on the embedded store: use another --data-dir for ${database}`,
    );
  if (state.database !== undefined && state.database !== database)
    throw new Error(
      `${statePath} belongs to an instance on ${state.database}, not ${database}: use another --data-dir`,
    );
  state.database = database;
  // the supervisor's lines (processes' output, exits and restarts) go where the progress goes
  const sup = new Supervisor(say);
  const verbose = opts.verbose !== false;
  const ports = opts.replicaPorts ?? Array.from({ length: replicas }, (_, k) => opts.apiPort + k);
  const baseUrls = ports.map((p) => `http://127.0.0.1:${p}`);
  const baseUrl = baseUrls[0] as string;
  const anvilUrl = `http://127.0.0.1:${opts.anvilPort}`;
  const level = opts.ecdsaLevel ?? 'SECURITY_112';
  const timed = async <T>(label: string, f: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    say(`▶ ${label} …`);
    const v = await f();
    say(`  ✔ ${label} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    return v;
  };
  const events: ReceivedEvent[] = [];
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
  const mobiles: Managed[] = [];
  const coordinators: Managed[] = [];
  const stop = async () => {
    await sup.stopAll();
    await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
  };
  try {
    const passFile = await secret(dir, 'signer-passphrase');
    const seedFiles: (string | undefined)[] = [];
    let seeds = opts.primeSeeds;
    if (!seeds && !state.master_key_ceremony_id) {
      // Aux info needs two safe primes per party; a pool generated up front (OpenSSL, in parallel
      // on libuv's thread pool) keeps the master key ceremony from waiting on prime search.
      const bits = level === 'SECURITY_112' ? 1024 : 1536;
      seeds = await timed(`safe primes for the ECDSA aux info: 8 × ${bits} bits (prime pool)`, async () => {
        let done = 0;
        const all = await Promise.all(
          Array.from(
            { length: 8 },
            () =>
              new Promise<string>((res, rej) =>
                generatePrime(bits, { safe: true, bigint: true }, (err, p) => {
                  if (err) return rej(err);
                  done++;
                  say(`    safe prime ${done}/8`);
                  res((p as bigint).toString(16));
                }),
              ),
          ),
        );
        return [0, 1, 2, 3].map((k) => [all[2 * k] as string, all[2 * k + 1] as string]);
      });
    }
    for (const [k, primes] of (seeds ?? []).entries()) {
      const path = join(dir, 'secrets', `prime-seed-${k}.json`);
      await writeFile(path, JSON.stringify({ safePrimes: primes }), { mode: 0o600 });
      seedFiles[k] = path;
    }
    const adminPassFile = await secret(dir, 'admin-password');
    const pinFiles = [await secret(dir, 'pin-mobile-1'), await secret(dir, 'pin-mobile-2')];

    await timed(`Ethereum node (anvil) on ${anvilUrl}`, () =>
      startAnvil(sup, opts.anvilPort, { quiet: !verbose, stateFile: join(dir, 'anvil-state.json') }),
    );

    const coordinatorDir = replicaDataDir(dir, 0);
    const replicaDirs = ports.map((_, k) => replicaDataDir(dir, k));
    // every replica runs with replica 1's identity and webhook KEK (dev/replicas.ts)
    if (replicas >= 2) await shareReplicaSecrets(replicaDirs);
    // an illustrative, fixed ETH price so fee estimates show fee_value_usd (docs/transfers.md)
    const coordinatorConfig = join(dir, 'coordinator.json');
    await writeFile(coordinatorConfig, `${JSON.stringify({ prices: { static: DEV_PRICES } }, null, 2)}\n`);
    const spawnReplica = (k: number): Managed => {
      const m = sup.spawn(
        replicas === 1 ? 'coordinator' : `coordinator-${k + 1}`,
        process.execPath,
        [
          BIN,
          'coordinator',
          'start',
          '--data-dir',
          replicaDirs[k] as string,
          '--config',
          coordinatorConfig,
          '--port',
          String(ports[k]),
          '--chain',
          `ethereum-local=${anvilUrl}`,
          // a small pool: the demo's transfers sign from pooled presignatures (one round)
          '--presignature-pool',
          String(opts.presignaturePool ?? 2),
        ],
        {
          // the URL may hold a password: the environment, never the command line (ps)
          ...(opts.databaseUrl !== undefined ? { env: { DATABASE_URL: opts.databaseUrl } } : {}),
          ready: /coordinator listening on/,
          timeoutMs: 120_000,
          quiet: !verbose,
          restart: RESTART,
        },
      );
      coordinators[k] = m;
      return m;
    };
    const where = opts.databaseUrl !== undefined ? `PostgreSQL ${database}` : `embedded PGlite in ${coordinatorDir}`;
    const readyLine = await timed(
      `coordinator${replicas >= 2 ? ` replica 1 of ${replicas}` : ''} on ${baseUrl} (${where})`,
      () => spawnReplica(0).ready,
    );
    const coordinatorPeer = /peer id (\S+)/.exec(readyLine)?.[1];
    if (!coordinatorPeer) throw new Error('coordinator did not print its peer id');
    /** Start replicas 2…N (after the init: each would otherwise make a bootstrap token of its own). */
    const startOtherReplicas = () =>
      replicas < 2
        ? Promise.resolve()
        : timed(`coordinator replicas 2…${replicas} on ${baseUrls.slice(1).join(', ')}`, async () => {
            const lines = await Promise.all(ports.slice(1).map((_, i) => spawnReplica(i + 1).ready));
            for (const l of lines)
              if (/peer id (\S+)/.exec(l)?.[1] !== coordinatorPeer)
                throw new Error(`a coordinator replica runs with another identity than replica 1: ${l}`);
          });

    // ---- admin account ----
    const adminPassword = (await readFile(adminPassFile, 'utf8')).trim();
    if (!state.profile_id) {
      // the one-time bootstrap token the coordinator wrote at its first start (gone once initialised:
      // then the init answers 409 ALREADY_INITIALISED, accepted below)
      const bootstrapToken = await readFile(join(coordinatorDir, 'bootstrap-token'), 'utf8').then(
        (t) => t.trim(),
        () => undefined,
      );
      const init = await call(`POST`, `${baseUrl}/admin/v1/init`, {
        body: {
          email: state.admin.email,
          name: 'Dev Admin',
          password: adminPassword,
          profile_name: 'default',
          ...(bootstrapToken !== undefined ? { bootstrap_token: bootstrapToken } : {}),
        },
        ok: [201, 409],
      });
      const profile = (init.body as { profile?: { profile_id?: string } }).profile?.profile_id;
      if (profile) state.profile_id = profile;
      await save();
    }
    const othersReady = startOtherReplicas();
    othersReady.catch(() => {});
    let token: string | undefined;
    const adminToken = async (): Promise<string> => {
      if (token) return token;
      const seenBefore = new Set((await readMailbox(join(coordinatorDir, 'mailbox'))).map((m) => m.file));
      const login = await call<{ challenge_id: string }>('POST', `${baseUrl}/admin/v1/login`, {
        body: { email: state.admin.email, password: adminPassword },
      });
      const code = await waitFor(
        'the login code in the development mailbox',
        async () => {
          const mail = (await readMailbox(join(coordinatorDir, 'mailbox'))).filter((m) => !seenBefore.has(m.file));
          return /\b(\d{6})\b/.exec(mail.at(-1)?.text ?? '')?.[1];
        },
        15_000,
      );
      const v = await call<{ token: string }>('POST', `${baseUrl}/admin/v1/login/verify`, {
        body: { challenge_id: login.body.challenge_id, code },
      });
      token = v.body.token;
      return token;
    };
    // Sensitive admin actions (API keys, webhooks, users) need a fresh step-up of the session: the
    // development Admin has no TOTP, so the password. Renewed before every change once 4 minutes old
    // (the coordinator's window is 5 minutes by default).
    let steppedUpAt = 0;
    const stepUp = async (): Promise<void> => {
      if (Date.now() - steppedUpAt < 4 * 60_000) return;
      await call('POST', `${baseUrl}/admin/v1/session/step-up`, {
        headers: { authorization: `Bearer ${await adminToken()}` },
        body: { password: adminPassword },
      });
      steppedUpAt = Date.now();
    };
    const list = <T>(v: unknown): T[] => (Array.isArray(v) ? (v as T[]) : ((v as { data?: T[] })?.data ?? []));
    const admin = async <T = Record<string, unknown>>(method: string, path: string, body?: unknown, ok?: number[]) => {
      if (method !== 'GET') await stepUp();
      return (
        await call<T>(method, `${baseUrl}${path}`, {
          headers: { authorization: `Bearer ${await adminToken()}` },
          ...(body !== undefined ? { body } : {}),
          ...(ok ? { ok } : {}),
        })
      ).body;
    };
    await timed('Admin login (password + email code from the development mailbox)', adminToken);
    if (!state.profile_id) {
      const profiles = list<{ profile_id: string }>(await admin('GET', '/admin/v1/profiles'));
      state.profile_id = profiles[0]?.profile_id;
      await save();
    }
    const profile = state.profile_id as string;

    // ---- mobile devices: enroll, approve by fingerprint ----
    const mobileDirs = [join(dir, 'mobile-1'), join(dir, 'mobile-2')];
    for (const k of [0, 1]) {
      if (state.devices[k]) continue;
      const name = k === 0 ? "Admin's phone" : 'Approver phone';
      const r = await timed(`enroll mobile signer ${k + 1} (${name})`, () =>
        runCli([
          'mobile',
          'enroll',
          '--url',
          baseUrl,
          '--data',
          mobileDirs[k] as string,
          '--pin-file',
          pinFiles[k] as string,
          '--name',
          name,
        ]),
      );
      state.devices[k] = { name, device_id: String(r.device_id), fingerprint: String(r.fingerprint) };
      await save();
    }
    // both phones belong to the Admin (the demo's only user): its own devices sign its policies
    const me = await admin<{ user_id: string }>('GET', '/admin/v1/me');
    for (const d of state.devices) {
      const dev = await admin<{ status: string; public_key: string; fingerprint: string }>(
        'GET',
        `/admin/v1/devices/${d.device_id}`,
      );
      if (dev.status === 'PENDING') {
        if (dev.fingerprint.replace(/\s/g, '') !== d.fingerprint.replace(/\s/g, '')) {
          throw new Error(`fingerprint mismatch for ${d.name}: refusing to approve`);
        }
        await admin('POST', `/admin/v1/devices/${d.device_id}/approve`, {
          fingerprint: d.fingerprint,
          user_id: me.user_id,
        });
        say(`  ✔ approved ${d.name} after checking its fingerprint ${d.fingerprint.slice(0, 19)}…`);
      }
      d.public_key = dev.public_key;
    }
    await save();
    const adminDevice = state.devices[0] as InstanceState['devices'][number];

    // ---- server signers: identity, config, start, register ----
    const signerDirs = [join(dir, 'signer-1'), join(dir, 'signer-2')];
    for (const k of [0, 1]) {
      if (state.signers[k]) continue;
      const r = await runCli(['signer', 'init', '-d', signerDirs[k] as string, '--passphrase-file', passFile]);
      state.signers[k] = { name: `signer-${k + 1}`, peer_id: String(r.peerId), fingerprint: String(r.fingerprint) };
      await save();
    }
    const signerProcs: Managed[] = [];
    for (const k of [0, 1]) {
      const other = 1 - k;
      const config = {
        listen: `/ip4/127.0.0.1/tcp/${opts.signerPorts[k]}`,
        dataDir: signerDirs[k],
        peers: [{ peerId: state.signers[other]?.peer_id, addrs: [`/ip4/127.0.0.1/tcp/${opts.signerPorts[other]}`] }],
        coordinator: { peerId: coordinatorPeer },
        passphrase: { file: passFile },
        logLevel: 'info',
        ecdsa: { level, primePool: 2, ...(seedFiles[k] ? { primeSeedFile: seedFiles[k] } : {}) },
        trustedAdminDevices: [{ deviceId: adminDevice.device_id, publicKey: adminDevice.public_key }],
        chains: DEV_CHAINS,
      };
      const cfgPath = join(dir, `signer-${k + 1}.json`);
      await writeFile(cfgPath, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
      signerProcs.push(
        sup.spawn(`signer-${k + 1}`, process.execPath, [BIN, 'signer', 'start', '-c', cfgPath], {
          // listening (after its store generation and presignature pool are loaded): dialable
          ready: /signer started/,
          timeoutMs: 120_000,
          quiet: !verbose,
          restart: RESTART,
        }),
      );
    }
    const registered = list<{ signer_id: string; peer_id: string }>(
      await admin('GET', '/admin/v1/signers?page_size=200'),
    );
    for (const [k, s] of state.signers.entries()) {
      const found = registered.find((r) => r.peer_id === s.peer_id);
      if (found) s.signer_id = found.signer_id;
      else {
        const r = await admin<{ signer_id: string }>('POST', '/admin/v1/signers', {
          name: s.name,
          peer_id: s.peer_id,
          address: `/ip4/127.0.0.1/tcp/${opts.signerPorts[k]}`,
          fingerprint: s.fingerprint,
        });
        s.signer_id = r.signer_id;
        say(`  ✔ registered server signer ${s.name} (${s.peer_id.slice(0, 12)}…)`);
      }
    }
    await save();
    await Promise.all(signerProcs.map((p) => p.ready));

    await othersReady;

    // ---- mobile simulators (they dial out to the coordinator) ----
    const chainsFile = join(dir, 'chains.json');
    await writeFile(chainsFile, `${JSON.stringify(DEV_CHAINS, null, 2)}\n`);
    const startMobile = (k: number): Managed => {
      const m = sup.spawn(
        `mobile-${k + 1}`,
        process.execPath,
        [
          BIN,
          'mobile',
          'run',
          '--data',
          mobileDirs[k] as string,
          '--pin-file',
          pinFiles[k] as string,
          '--auto-approve',
          '--ecdsa-level',
          level,
          '--prime-pool',
          '2',
          '--trusted-admin-key',
          adminDevice.public_key as string,
          '--chains',
          chainsFile,
          ...(seedFiles[2 + k] ? ['--prime-seed-file', seedFiles[2 + k] as string] : []),
        ],
        // a revoked phone (removed by the administrator) stops for good: not restarted
        { quiet: !verbose, restart: { ...RESTART, finalExitCodes: [EXIT_DEVICE_REVOKED] } },
      );
      mobiles[k] = m;
      return m;
    };
    // every replica's address in each phone's vault (no PIN needed): a phone whose replica dies
    // moves to a survivor (mobile failover); one replica: the enrolled URL as before
    if (baseUrls.length >= 2) {
      for (const k of [0, 1])
        await runCli([
          'mobile',
          'set-urls',
          '--data',
          mobileDirs[k] as string,
          ...baseUrls.flatMap((u) => ['--url', u]),
        ]);
    }
    startMobile(0);
    startMobile(1);

    // ---- master key ceremony, 3 of 4 ----
    const masterKeys = list<unknown>(await admin('GET', '/admin/v1/master-keys'));
    if (masterKeys.length === 0) {
      await timed('master key ceremony: 3-of-4 (2 mobile + 2 server signers; deadline 5 min)', async () => {
        const c = await waitFor(
          'all four signers online',
          async () => {
            try {
              return await admin<{ ceremony_id: string }>('POST', '/admin/v1/master-keys', {
                threshold: 3,
                signers: [
                  ...state.signers.map((s) => ({ kind: 'server', id: s.signer_id })),
                  ...state.devices.map((d) => ({ kind: 'device', id: d.device_id })),
                ],
              });
            } catch (e) {
              if ((e as { status?: number }).status === 503 || (e as { status?: number }).status === 409)
                return undefined;
              throw e;
            }
          },
          120_000,
          1_000,
        );
        state.master_key_ceremony_id = c.ceremony_id;
        await save();
        let last = '';
        const done = await waitFor(
          'the master key ceremony',
          async () => {
            const v = await admin<{ status: string; progress: unknown; error: string | null; blamed: unknown }>(
              'GET',
              `/admin/v1/ceremonies/${c.ceremony_id}`,
            );
            const p = JSON.stringify(v.progress ?? '');
            if (p !== last) {
              last = p;
              say(`    ceremony progress: ${p}`);
            }
            return v.status === 'RUNNING' ? undefined : v;
          },
          330_000,
          1_000,
        );
        if (done.status !== 'SUCCEEDED')
          throw new Error(
            `master key ceremony ${done.status}: ${done.error ?? ''} blamed ${JSON.stringify(done.blamed)}`,
          );
      });
    }

    // ---- directory, API key ----
    if (!state.api_key) {
      const k = await admin<{ api_key: string }>('POST', '/admin/v1/api-keys', { profile_id: profile, name: 'dev' });
      state.api_key = k.api_key;
      await save();
    }
    const apiHeaders = { 'x-api-key': state.api_key as string };
    if (!state.eth_asset_id) {
      const chains = await call<{ data: { blockchain_id: string; key?: string; name?: string }[] }>(
        'GET',
        `${baseUrl}/api/v1/profiles/${profile}/blockchains?page_size=200`,
        { headers: apiHeaders },
      );
      const local = chains.body.data.find((b) => JSON.stringify(b).includes('ethereum-local'));
      if (!local) throw new Error('the directory has no ethereum-local blockchain');
      const assets = await call<{ data: { asset_id: string; symbol: string; blockchain: string }[] }>(
        'GET',
        `${baseUrl}/api/v1/profiles/${profile}/assets?page_size=200`,
        { headers: apiHeaders },
      );
      const eth = assets.body.data.find((a) => a.symbol === 'ETH' && a.blockchain === 'ethereum-local');
      if (!eth) throw new Error('the directory has no ETH asset on ethereum-local');
      state.ethereum_local_id = local.blockchain_id;
      state.eth_asset_id = eth.asset_id;
      await save();
    }

    // ---- policy: whitelist + limits + quorum, signed by the Admin's device ----
    if (!state.policy_id) {
      const whitelisted = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'; // anvil's account #1
      const policy = await admin<{ policy_id: string }>('POST', `/admin/v1/profiles/${profile}/policies`, {
        name: 'dev: whitelist, limits, quorum of 2 above 0.5 ETH',
        scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: state.eth_asset_id },
        whitelist: [whitelisted],
        per_transaction_limit: String(2n * ETH),
        daily_limit: String(10n * ETH),
        approvals: { quorum: 2, above_amount: String(ETH / 2n) },
      });
      await timed("policy signed by the Admin's device (mobile 1, with its PIN)", () =>
        runCli(
          [
            'mobile',
            'sign-policy',
            '--data',
            mobileDirs[0] as string,
            '--url',
            baseUrl,
            '--profile',
            profile,
            '--policy',
            policy.policy_id,
            '--pin-file',
            pinFiles[0] as string,
          ],
          { CUSTODIAN_ADMIN_TOKEN: token as string },
        ),
      );
      state.policy_id = policy.policy_id;
      state.whitelisted = whitelisted;
      await save();
    }

    // ---- webhook receiver + subscription ----
    const lines: string[] = [];
    receiver = await startReceiver({
      coordinatorUrl: baseUrl,
      port: opts.receiverPort,
      onEvent: (e) => {
        events.push(e);
        lines.push(e.event_type);
        say(`  ⚑ webhook ${e.event_type} (verified)`);
      },
    });
    // the port actually bound (`receiverPort` 0: any free port, as the tests ask)
    const receiverPort = (receiver.address() as AddressInfo).port;
    if (!state.webhook_id) {
      const w = await admin<{ webhook_id: string }>('POST', `/admin/v1/profiles/${profile}/webhooks`, {
        url: `http://127.0.0.1:${receiverPort}/webhooks`,
        event_types: [
          'TRANSFER_CREATED',
          'TRANSFER_UPDATED',
          'TRANSFER_DELIVERED',
          'TRANSFER_FAILED',
          'TRANSACTION_DETECTED',
          'BALANCE_UPDATED',
          'WALLET_CREATED',
          'ADDRESS_CREATED',
        ],
        description: 'dev receiver (verifies every delivery with @custodian/sdk)',
      });
      state.webhook_id = w.webhook_id;
      await save();
    }

    const startReplica = async (k: number): Promise<Managed> => {
      const cur = coordinators[k];
      if (cur === undefined) throw new RangeError(`no replica ${k}`);
      if (cur.child.exitCode === null && cur.child.signalCode === null) throw new Error(`${cur.name} is running`);
      await spawnReplica(k).ready;
      return coordinators[k] as Managed;
    };
    return {
      baseUrl,
      baseUrls,
      coordinators,
      anvilUrl,
      state,
      supervisor: sup,
      mobiles,
      events,
      startMobile,
      startReplica,
      adminToken,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
