/**
 * Test harness of the `custodian admin keys` tests: a real coordinator (PGlite, real HTTP, its
 * libp2p signing services, `minMobileSigners` 0 so that server signers alone make a key), an
 * Admin's enrolled and approved device (its P-256 key in a 0600 key file, as `--device-key` reads
 * it), and `count` real signer daemons on real LevelDB (in this process, or as separate processes
 * with `processes: true`), every one trusting the Admin device and peering with all the others,
 * registered through `custodian admin signers add`. The master key is made by
 * `custodian admin master-keys create --wait` among the first `parties` signers. FROST only (Ed25519
 * and Taproot) unless `ecdsa`: ECDSA needs two safe primes per party per key generation, refresh
 * and reshare, more than the committed test-only fixture holds for these runs.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesToHex } from '@custodian/crypto';
import { createIdentity, type SignerConfig, type SignerDaemon, startSigner } from '@custodian/signer';
import { fingerprint } from '@custodian/signer-client';
import { KeyAlgorithm } from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { p256 } from '@noble/curves/nist.js';
import { enrollmentBody, phoneKeys, userIdOf } from '../../coordinator/test/device-fixtures.js';
import { ADMIN_EMAIL, type Harness, startHarness } from '../../coordinator/test/helpers.js';
import { freePort } from '../../signer/test/cluster.js';
import { runAdmin } from './admin-cli.js';

const PASS_ENV = 'CUSTODIAN_KEYS_TEST_PASS';
const PASS = 'keys test passphrase (test only)';
process.env[PASS_ENV] = PASS;
const SCRYPT = { N: 1 << 10, r: 8, p: 1 };
const MAIN = new URL('../../signer/dist/main.js', import.meta.url).pathname;

/** One signer: its config, peer id, registered signer id, and how to stop it. */
export interface TestSigner {
  readonly name: string;
  readonly config: SignerConfig;
  readonly configFile: string;
  readonly peerId: string;
  signerId: string;
  daemon?: SignerDaemon;
}

export interface KeysHarness {
  readonly h: Harness;
  readonly dir: string;
  readonly signers: TestSigner[];
  /** The Admin's device: id, and the key file `--device-key` takes. */
  readonly adminDeviceId: string;
  readonly adminDeviceKeyFile: string;
  /** `custodian admin --coordinator-url … --token <admin> <args…>` in process. */
  cli(...args: string[]): Promise<{ out: string; err: string; code: number }>;
  /** The same as another session (`token`). */
  cliAs(token: string, ...args: string[]): Promise<{ out: string; err: string; code: number }>;
  masterKeyId: string;
  start(s: TestSigner): Promise<void>;
  /** Stop a signer cleanly (in process: `stop()`; a process: SIGTERM to its group, SIGKILL after 20 s). */
  stop(s: TestSigner): Promise<void>;
  /** `custodian signer <args…>` (the built signer CLI) in its own process: exit code and stdout+stderr. */
  signerCli(...args: string[]): Promise<{ code: number; out: string }>;
  /** Stop `s`, back it up to `recoveryPub` (`signer backup create`), start it again. */
  backup(s: TestSigner, recoveryPub: string): Promise<void>;
  close(): Promise<void>;
}

/** Options of {@link startKeysHarness}. */
export interface KeysHarnessOptions {
  /** Signers started (default 4). */
  count?: number;
  /** The master key's parties: the first `parties` signers (default 3), threshold `threshold` (default 2). */
  parties?: number;
  threshold?: number;
  /** Signers as separate processes (`node packages/signer/dist/main.js signer start`). */
  processes?: boolean;
}

export async function startKeysHarness(o: KeysHarnessOptions = {}): Promise<KeysHarness> {
  const count = o.count ?? 4;
  const h = await startHarness({
    masterKey: false,
    coordinator: {
      signing: {
        enabled: true,
        presignaturePool: 0,
        algorithms: [KeyAlgorithm.ED25519, KeyAlgorithm.SECP256K1_TAPROOT],
      },
      transfers: { runPipeline: false },
      ...(process.env.KEYS_LOG ? { logger: { level: process.env.KEYS_LOG } } : {}),
      admin: {
        minMobileSigners: 0,
        stepUpTtlMs: 8 * 3600_000,
        sessionIdleMs: 8 * 3600_000,
        scrypt: SCRYPT,
        loginRateLimit: { max: 10_000, windowMs: 60_000 },
        accountLockout: { maxFailures: 1000, windowMs: 60_000 },
        maxOpenChallenges: 100,
        emailCodes: { max: 1000, windowMs: 60_000 },
      },
    },
  });
  const dir = await mkdtemp(join(tmpdir(), 'custodian-keys-'));
  const cliAs = (token: string, ...args: string[]) =>
    runAdmin(dir, ['--coordinator-url', h.url, '--token', token], args);
  const cli = (...args: string[]) => cliAs(h.adminToken, ...args);

  // the Admin's device (enrolled, approved for the Admin): it signs key changes, it is no party
  const sk = p256.utils.randomSecretKey();
  const e = await h.req('POST', '/devices/v1/enrollments', {
    body: enrollmentBody(await phoneKeys(sk), 'admin phone'),
  });
  if (e.status !== 201) throw new Error(`enrollment: ${JSON.stringify(e.body)}`);
  const adminDeviceId = e.body.device_id as string;
  const a = await h.req('POST', `/admin/v1/devices/${adminDeviceId}/approve`, {
    token: h.adminToken,
    body: { fingerprint: e.body.fingerprint, user_id: await userIdOf(h, ADMIN_EMAIL) },
  });
  if (a.status !== 200) throw new Error(`approve: ${JSON.stringify(a.body)}`);
  const adminDeviceKeyFile = join(dir, 'admin-device.key');
  await writeFile(adminDeviceKeyFile, `${bytesToHex(sk)}\n`, { mode: 0o600 });
  const adminDevicePublicKey = bytesToHex(p256.getPublicKey(sk, true));

  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await freePort());
  const ids = await Promise.all(
    ports.map((_, i) => createIdentity(join(dir, `s${i + 1}`), PASS, SCRYPT).then((x) => x.peerId)),
  );
  const signers: TestSigner[] = ports.map((port, i) => {
    const config: SignerConfig = {
      listen: `/ip4/127.0.0.1/tcp/${port}`,
      dataDir: join(dir, `s${i + 1}`),
      peers: ids.flatMap((peerId, j) => (j === i ? [] : [{ peerId, addrs: [`/ip4/127.0.0.1/tcp/${ports[j]}`] }])),
      coordinator: { peerId: h.c.signing?.peerId as string },
      passphrase: { env: PASS_ENV },
      // a process's start is seen in its log (`signer started`, info)
      logLevel: o.processes ? 'info' : (process.env.KEYS_LOG ?? 'error'),
      scrypt: SCRYPT,
      trustedAdminDevices: [{ deviceId: adminDeviceId, publicKey: adminDevicePublicKey }],
    };
    return { name: `s${i + 1}`, config, configFile: join(dir, `s${i + 1}.json`), peerId: ids[i]!, signerId: '' };
  });

  const procs = new Map<TestSigner, ReturnType<typeof spawn>>();
  const stop = async (s: TestSigner) => {
    const d = s.daemon;
    s.daemon = undefined;
    await d?.stop();
    const p = procs.get(s);
    procs.delete(s);
    if (p === undefined || p.exitCode !== null || p.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const kill = (sig: NodeJS.Signals) => {
        try {
          process.kill(-(p.pid as number), sig);
        } catch {}
      };
      // SIGKILL after 20 s: a signer ignoring SIGTERM must not outlive the test
      const t = setTimeout(() => kill('SIGKILL'), 20_000);
      p.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      kill('SIGTERM');
    });
  };
  const start = async (s: TestSigner) => {
    await writeFile(s.configFile, JSON.stringify(s.config));
    if (!o.processes) {
      s.daemon = await startSigner(s.config);
      return;
    }
    const p = spawn(process.execPath, [MAIN, 'signer', 'start', '-c', s.configFile], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      env: { ...process.env },
    });
    procs.set(s, p);
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        const t = setTimeout(() => reject(new Error(`${s.name} did not start: ${out}`)), 60_000);
        const on = (d: Buffer) => {
          out += d.toString();
          if (out.includes('"signer started"')) {
            clearTimeout(t);
            resolve();
          }
        };
        p.stdout.on('data', on);
        p.stderr.on('data', on);
        p.on('exit', (c) => {
          clearTimeout(t);
          reject(new Error(`${s.name} exited with ${c}: ${out}`));
        });
      });
    } catch (e) {
      await stop(s);
      throw e;
    }
  };
  const signerCli = (...args: string[]) =>
    new Promise<{ code: number; out: string }>((resolve) => {
      execFile(
        process.execPath,
        [MAIN, 'signer', ...args],
        { env: { ...process.env }, timeout: 120_000 },
        (err, so, se) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${so}${se}` }),
      );
    });
  const backup = async (s: TestSigner, recoveryPub: string) => {
    await stop(s);
    const r = await signerCli(
      'backup',
      'create',
      '-c',
      s.configFile,
      '--recovery-key',
      recoveryPub,
      '--out',
      join(dir, `${s.name}-${Date.now()}.backup`),
    );
    if (r.code !== 0) throw new Error(`backup of ${s.name}: ${r.out}`);
    await start(s);
  };
  for (const s of signers) await start(s);
  for (const s of signers) {
    const r = await cli(
      '--json',
      'signers',
      'add',
      '--name',
      s.name,
      '--peer-id',
      s.peerId,
      '--address',
      s.config.listen,
      '--fingerprint',
      fingerprint((peerIdFromString(s.peerId).publicKey as { raw: Uint8Array }).raw),
    );
    if (r.code !== 0) throw new Error(`signers add: ${r.err}`);
    s.signerId = JSON.parse(r.out).signer_id;
  }
  const k = await cli(
    '--json',
    'master-keys',
    'create',
    '--threshold',
    String(o.threshold ?? 2),
    '--server',
    ...signers.slice(0, o.parties ?? 3).map((s) => s.signerId),
    '--wait',
  );
  const made = k.code === 0 ? JSON.parse(k.out) : undefined;
  if (made?.status !== 'SUCCEEDED') throw new Error(`master key: ${k.out} ${k.err}`);
  const masterKeyId = made.master_key_id as string;

  return {
    h,
    dir,
    signers,
    adminDeviceId,
    adminDeviceKeyFile,
    cli,
    cliAs,
    masterKeyId,
    start,
    stop,
    signerCli,
    backup,
    async close() {
      for (const s of signers) await stop(s).catch(() => undefined);
      await h.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
