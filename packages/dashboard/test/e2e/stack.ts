/**
 * The real stack behind the dashboard's end-to-end test (test/dashboard-e2e.slow.test.ts), started
 * the way scripts/operator-walkthrough.sh starts it, every component its own process group
 * (`detached: true`): anvil (the npm package's binary), the coordinator (`custodian coordinator
 * start` through packages/cli/dist/bin.js, development mode, embedded PGlite store and development
 * mailbox in a temporary folder; it serves the built dashboard at `/`), two server signers (test-only
 * safe-prime fixtures, no Admin device trusted yet) and two phone simulators (`custodian mobile
 * enroll` here; `mobile run --auto-approve` once the browser approved them, see {@link Stack.startPhone}).
 *
 * The first Admin is created with `custodian admin init` and the one-time bootstrap token, as an
 * operator does on a fresh instance; everything else the operator does happens in the browser. The
 * harness only does what is outside the dashboard: the phones' side (enroll, run, sign a policy —
 * the latter needs an Admin bearer session, {@link Stack.apiToken}), the signers' config (`signer
 * reload` with the trusted Admin device key), the chain (a deposit from anvil's account #0), and the
 * integrator's REST calls with an API key.
 *
 * Secrets (admin password, signer passphrase, PINs) live in 0600 files of the temporary folder and
 * are never printed. {@link Stack.close} ends every process group (SIGTERM, SIGKILL after 10 s) and
 * removes the folder.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readMailbox } from '@custodian/coordinator';

/** Repository root. */
export const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const BIN = join(ROOT, 'packages/cli/dist/bin.js');
const ANVIL = join(ROOT, 'packages/cli/node_modules/.bin/anvil');
const PRIMES = join(ROOT, 'packages/paillier/test/fixtures/test-only-safe-primes.json');
/** anvil's unlocked account #0 (the deposit's sender). */
const FUNDER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
/** anvil's account #1: the whitelisted destination of the test's transfers. */
export const DESTINATION = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const CHAINS = { 'ethereum-local': { family: 'ethereum', chainId: 31337, maxFee: '10000000000000000' } } as const;

/** A server signer's identity as `signer init` printed it, and where it listens. */
export interface StackSigner {
  readonly name: string;
  readonly peerId: string;
  readonly fingerprint: string;
  /** libp2p multiaddr, e.g. /ip4/127.0.0.1/tcp/40123. */
  readonly address: string;
  readonly configFile: string;
}

/** A phone simulator: what `mobile enroll` printed (the fingerprint the phone shows). */
export interface StackPhone {
  readonly name: string;
  readonly deviceId: string;
  readonly fingerprint: string;
  readonly dir: string;
  readonly pinFile: string;
  proc?: ChildProcess;
}

/** The running stack. */
export interface Stack {
  /** Coordinator base URL (serves the dashboard at `/`). */
  readonly url: string;
  readonly anvilUrl: string;
  readonly dir: string;
  readonly adminEmail: string;
  /** The first Admin's password (a secret: never print it). */
  readonly adminPassword: string;
  readonly signers: readonly StackSigner[];
  readonly phones: readonly StackPhone[];
  /** Files of the development mailbox already present (for {@link Stack.nextLoginCode}). */
  mailSeen(): Promise<Set<string>>;
  /** The newest 6-digit code mailed to `email` after `seen`; waits up to 20 s. */
  nextLoginCode(email: string, seen: Set<string>): Promise<string>;
  /**
   * An Admin bearer session through the API (password, then the mailed code — or, once the Admin
   * enrolled TOTP, the code of {@link Stack.totpCode}), for `mobile sign-policy` and for reading
   * server state back. `fresh` drops the cached session first (e.g. after TOTP revoked it).
   */
  apiToken(fresh?: boolean): Promise<string>;
  /** The Admin's current TOTP code, once enrolled (set by the test). */
  totpCode?: () => Promise<string>;
  /** Add the Admin device key to both signers' `trustedAdminDevices` and `signer reload` them. */
  trustAdminDevice(deviceId: string, publicKey: string): Promise<void>;
  /** `mobile run --auto-approve` for phone `k` (0 or 1); resolves once connected. */
  startPhone(k: number, adminDeviceKey: string): Promise<void>;
  /** Stop phone `k` (its process group); resolves once it exited. */
  stopPhone(k: number): Promise<void>;
  /** `mobile sign-policy` on phone 0 (the Admin's device), with an Admin bearer session. */
  signPolicy(profileId: string, policyId: string): Promise<void>;
  /** Send `wei` from anvil's account #0 to `to`; resolves with the transaction hash. */
  deposit(to: string, wei: bigint): Promise<string>;
  /** Ethereum JSON-RPC call on anvil. */
  rpc<T>(method: string, params: unknown[]): Promise<T>;
  /** The last lines of every process log (for a failure's message). */
  logs(): string;
  close(): Promise<void>;
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => res(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Poll `probe` every `every` ms until it returns a value (not undefined); throws after `ms`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms: number,
  every = 250,
): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? ` (${String(last)})` : ''}`);
    await sleep(every);
  }
}

/** Start the stack (about 10–20 s). */
export async function startStack(): Promise<Stack> {
  const dir = await mkdtemp(join(tmpdir(), 'custodian-dashboard-e2e-'));
  await mkdir(join(dir, 'logs'));
  await mkdir(join(dir, 'secrets'), { mode: 0o700 });
  const t0 = Date.now();
  const step = (what: string) => {
    if (process.env.E2E_DEBUG) console.log(`stack: ${what} at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  };
  const groups: ChildProcess[] = [];
  const logFiles: string[] = [];
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: join(dir, 'config') };
  delete env.CUSTODIAN_ADMIN_TOKEN;

  const secret = async (name: string, value: string) => {
    const p = join(dir, 'secrets', name);
    await writeFile(p, `${value}\n`, { mode: 0o600 });
    return p;
  };

  /** A long-running process in its own group, output to logs/<name>.log; resolves when `ready` shows. */
  const daemon = async (name: string, cmd: string, args: string[], ready: RegExp | null, extraEnv = {}) => {
    const log = join(dir, 'logs', `${name}.log`);
    logFiles.push(log);
    const out = createWriteStream(log);
    const child = spawn(cmd, args, {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...env, ...extraEnv },
    });
    groups.push(child);
    let text = '';
    const onData = (d: Buffer) => {
      out.write(d);
      text += d.toString();
      if (text.length > 200_000) text = text.slice(-100_000);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    if (ready === null) return { child, line: '' };
    const line = await waitFor(
      `${name} to start`,
      async () => {
        if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}): see ${log}`);
        return ready.exec(text)?.[0];
      },
      120_000,
      100,
    );
    return { child, line, text: () => text };
  };

  /** A one-shot `custodian …` command; resolves with stdout (rejects with the stderr tail). */
  const cli = (args: string[], extraEnv: Record<string, string> = {}) =>
    new Promise<string>((res, rej) => {
      execFile(
        process.execPath,
        [BIN, ...args],
        { env: { ...env, ...extraEnv }, maxBuffer: 8 << 20 },
        (err, stdout, stderr) => {
          if (err)
            rej(
              new Error(`custodian ${args.slice(0, 2).join(' ')}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`),
            );
          else res(stdout);
        },
      );
    });
  /** The JSON a command printed: all of stdout (pretty-printed), else its last line that is an object. */
  const lastJson = (out: string): Record<string, string> => {
    try {
      return JSON.parse(out) as Record<string, string>;
    } catch {
      const line = out
        .trim()
        .split('\n')
        .reverse()
        .find((l) => l.startsWith('{') && l.endsWith('}'));
      return JSON.parse(line ?? '{}') as Record<string, string>;
    }
  };

  const close = async () => {
    for (const c of groups)
      if (c.pid && c.exitCode === null)
        try {
          process.kill(-c.pid, 'SIGTERM');
        } catch {}
    const end = Date.now() + 10_000;
    while (Date.now() < end && groups.some((c) => c.exitCode === null && c.signalCode === null)) await sleep(100);
    for (const c of groups)
      if (c.pid && c.exitCode === null && c.signalCode === null)
        try {
          process.kill(-c.pid, 'SIGKILL');
        } catch {}
    await rm(dir, { recursive: true, force: true });
  };

  try {
    const [apiPort, anvilPort, s1Port, s2Port] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const url = `http://127.0.0.1:${apiPort}`;
    const anvilUrl = `http://127.0.0.1:${anvilPort}`;

    const rpc = async <T>(method: string, params: unknown[]): Promise<T> => {
      const r = await fetch(anvilUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
      const j = (await r.json()) as { result?: T; error?: { message: string } };
      if (j.error) throw new Error(`${method}: ${j.error.message}`);
      return j.result as T;
    };

    const anvil = daemon(
      'anvil',
      ANVIL,
      ['--host', '127.0.0.1', '--port', String(anvilPort), '--chain-id', '31337'],
      /Listening on/,
    );
    const passFile = await secret('signer.passphrase', randomBytes(24).toString('base64url'));
    // the signers' identities (scrypt) while the coordinator starts
    const inits = Promise.all(
      [0, 1].map(async (k) =>
        lastJson(await cli(['signer', 'init', '-d', join(dir, `s${k + 1}`), '--passphrase-file', passFile])),
      ),
    );

    // ---- coordinator (development mode: PGlite, mailbox folder; serves the dashboard) ----
    const coordinatorDir = join(dir, 'coordinator');
    const coordinatorConfig = join(dir, 'coordinator.json');
    await writeFile(coordinatorConfig, JSON.stringify({ prices: { static: { ETH: '3000.00' } } }));
    const c = await daemon(
      'coordinator',
      process.execPath,
      [
        BIN,
        'coordinator',
        'start',
        '--data-dir',
        coordinatorDir,
        '--config',
        coordinatorConfig,
        '--port',
        String(apiPort),
        '--chain',
        `ethereum-local=${anvilUrl}`,
        '--presignature-pool',
        '2',
      ],
      /coordinator listening on.*/,
    );
    await anvil;
    step('coordinator and anvil up');
    const coordinatorPeer = /peer id (\S+)/.exec(c.line)?.[1] ?? /peer id (\S+)/.exec(c.text?.() ?? '')?.[1];
    if (!coordinatorPeer) throw new Error('the coordinator printed no peer id');

    // ---- the first Admin: `custodian admin init` with the bootstrap token ----
    const adminEmail = 'admin@example.com';
    const adminPassword = `e2e ${randomBytes(12).toString('hex')} passphrase`;
    await cli(
      [
        'admin',
        '--coordinator-url',
        url,
        'init',
        '--email',
        adminEmail,
        '--name',
        'First Admin',
        '--bootstrap-token-file',
        join(coordinatorDir, 'bootstrap-token'),
      ],
      { CUSTODIAN_ADMIN_PASSWORD: adminPassword },
    );

    step('first Admin created');
    // ---- server signers: identity, config (no Admin device trusted yet), start ----
    const primes = JSON.parse(readFileSync(PRIMES, 'utf8')) as { safePrimes1024: string[] };
    const seed = async (k: number) => {
      const p = join(dir, 'secrets', `primes-${k}.json`);
      await writeFile(p, JSON.stringify({ safePrimes: primes.safePrimes1024.slice(2 * k, 2 * k + 2) }), {
        mode: 0o600,
      });
      return p;
    };
    const ports = [s1Port, s2Port];
    const ids = await inits;
    step('signer identities');
    const signers: StackSigner[] = [];
    for (const k of [0, 1]) {
      const other = 1 - k;
      const configFile = join(dir, `s${k + 1}.json`);
      await mkdir(join(dir, `s${k + 1}-state`));
      await writeFile(
        configFile,
        JSON.stringify({
          listen: `/ip4/127.0.0.1/tcp/${ports[k]}`,
          dataDir: join(dir, `s${k + 1}`),
          peers: [{ peerId: ids[other]?.peerId, addrs: [`/ip4/127.0.0.1/tcp/${ports[other]}`] }],
          coordinator: { peerId: coordinatorPeer },
          passphrase: { file: passFile },
          logLevel: 'info',
          ecdsa: { level: 'SECURITY_112', primePool: 0, primeSeedFile: await seed(k) },
          trustedAdminDevices: [],
          chains: CHAINS,
          generationFile: join(dir, `s${k + 1}-state`, 'generation.json'),
        }),
        { mode: 0o600 },
      );
      signers.push({
        name: `server-${k + 1}`,
        peerId: String(ids[k]?.peerId),
        fingerprint: String(ids[k]?.fingerprint),
        address: `/ip4/127.0.0.1/tcp/${ports[k]}`,
        configFile,
      });
    }
    // ---- phones: enrolled (pending until the Admin approves them on the Devices screen) ----
    const enroll = async (k: number, name: string): Promise<StackPhone> => {
      const pinFile = await secret(`pin-${k}`, String(100000 + (randomBytes(4).readUInt32BE() % 900000)));
      const phoneDir = join(dir, `phone-${k + 1}`);
      const r = lastJson(
        await cli([
          'mobile',
          'enroll',
          '--url',
          url,
          '--data',
          phoneDir,
          '--name',
          name,
          '--pin-file',
          pinFile,
          '--kdf-n',
          '1024',
        ]),
      );
      return { name, deviceId: r.device_id as string, fingerprint: r.fingerprint as string, dir: phoneDir, pinFile };
    };
    const [phones] = await Promise.all([
      // one after the other: the Devices screen lists them in this order
      enroll(0, "Admin's phone").then(async (a) => [a, await enroll(1, 'Approver phone')]),
      ...signers.map((s, k) =>
        daemon(`signer-${k + 1}`, process.execPath, [BIN, 'signer', 'start', '-c', s.configFile], /signer started/),
      ),
    ]);
    step('signers started, phones enrolled');
    const chainsFile = join(dir, 'chains.json');
    await writeFile(chainsFile, JSON.stringify(CHAINS));

    const mailDir = join(coordinatorDir, 'mailbox');
    const mailSeen = async () => new Set((await readMailbox(mailDir).catch(() => [])).map((m) => m.file));
    const nextLoginCode = (email: string, seen: Set<string>) =>
      waitFor(
        `the login code mailed to ${email}`,
        async () => {
          const mail = (await readMailbox(mailDir)).filter(
            (m) => !seen.has(m.file) && JSON.stringify(m).includes(email),
          );
          return /\b(\d{6})\b/.exec(mail.at(-1)?.text ?? '')?.[1];
        },
        20_000,
      );
    let token: string | undefined;
    const post = async <T>(path: string, body: unknown, headers: Record<string, string> = {}): Promise<T> => {
      const r = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      if (!r.ok) throw new Error(`POST ${path}: ${r.status} ${await r.text()}`);
      return (await r.json()) as T;
    };
    const apiToken = async (fresh = false) => {
      if (token && !fresh) return token;
      const seen = await mailSeen();
      const login = await post<{ challenge_id: string; method?: string }>('/admin/v1/login', {
        email: adminEmail,
        password: adminPassword,
      });
      const code =
        login.method === 'totp' && stack.totpCode ? await stack.totpCode() : await nextLoginCode(adminEmail, seen);
      token = (await post<{ token: string }>('/admin/v1/login/verify', { challenge_id: login.challenge_id, code }))
        .token;
      return token;
    };

    const stack: Stack = {
      url,
      anvilUrl,
      dir,
      adminEmail,
      adminPassword,
      signers,
      phones,
      mailSeen,
      nextLoginCode,
      apiToken,
      async trustAdminDevice(deviceId, publicKey) {
        for (const s of signers) {
          const cfg = JSON.parse(await readFile(s.configFile, 'utf8')) as { trustedAdminDevices: unknown[] };
          cfg.trustedAdminDevices.push({ deviceId, publicKey });
          await writeFile(s.configFile, JSON.stringify(cfg), { mode: 0o600 });
          const r = lastJson(await cli(['signer', 'reload', '-c', s.configFile])) as unknown as {
            ok?: boolean;
            applied?: string[];
          };
          if (!r.ok || !r.applied?.includes('trustedAdminDevices'))
            throw new Error(`${s.name} did not take the Admin device key`);
        }
      },
      async startPhone(k, adminDeviceKey) {
        const p = phones[k] as StackPhone;
        const d = await daemon(
          `phone-${k + 1}`,
          process.execPath,
          [
            BIN,
            'mobile',
            'run',
            '--data',
            p.dir,
            '--pin-file',
            p.pinFile,
            '--auto-approve',
            '--trusted-admin-key',
            adminDeviceKey,
            '--chains',
            chainsFile,
            '--ecdsa-level',
            'SECURITY_112',
            '--prime-seed-file',
            await seed(2 + k),
          ],
          /connected to the coordinator/,
        );
        p.proc = d.child;
      },
      async stopPhone(k) {
        const p = phones[k] as StackPhone;
        const proc = p.proc;
        p.proc = undefined;
        if (!proc?.pid || proc.exitCode !== null) return;
        const exited = new Promise((r) => proc.once('exit', r));
        process.kill(-proc.pid, 'SIGTERM');
        await Promise.race([exited, sleep(10_000)]);
        if (proc.exitCode === null && proc.signalCode === null) process.kill(-proc.pid, 'SIGKILL');
      },
      async signPolicy(profileId, policyId) {
        const p = phones[0] as StackPhone;
        await cli(
          [
            'mobile',
            'sign-policy',
            '--data',
            p.dir,
            '--url',
            url,
            '--profile',
            profileId,
            '--policy',
            policyId,
            '--pin-file',
            p.pinFile,
          ],
          { CUSTODIAN_ADMIN_TOKEN: await apiToken() },
        );
      },
      async deposit(to, wei) {
        return rpc<string>('eth_sendTransaction', [{ from: FUNDER, to, value: `0x${wei.toString(16)}` }]);
      },
      rpc,
      logs() {
        return logFiles
          .map((f) => {
            let t = '';
            try {
              t = readFileSync(f, 'utf8').split('\n').slice(-25).join('\n');
            } catch {}
            return `---- ${f.split('/').at(-1)} ----\n${t}`;
          })
          .join('\n');
      },
      close,
    };
    return stack;
  } catch (e) {
    const tails = logFiles
      .map((f) => {
        try {
          return `---- ${f} ----\n${readFileSync(f, 'utf8').split('\n').slice(-20).join('\n')}`;
        } catch {
          return '';
        }
      })
      .join('\n');
    await close();
    throw new Error(`${(e as Error).message}\n${tails}`);
  }
}
