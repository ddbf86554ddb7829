/**
 * Key lifecycle across real signer processes (issue #22: "reshare 3-of-4 → 3-of-4 (one member
 * replaced) wall time across processes, with the safe-prime pool; report next to the master key
 * ceremony time"). Five signer daemons (`node packages/signer/dist/main.js signer start`) on
 * 127.0.0.1 over libp2p, the bench process acting as the coordinator (`/custodian/control/2`).
 * Each signer's durable prime pool (`ecdsa.primeSeedFile`, SECURITY_112) holds two of the committed
 * TEST-ONLY safe primes of packages/paillier/test/fixtures (prime search excluded from every
 * figure); a ceremony consumes them, so the signers are restarted (untimed) to import them again
 * before each ceremony that makes aux info. Each of the BENCH_N iterations (default 3), interleaved:
 * - `keys.masterKey.3of4.4proc`: MASTER_KEY 3-of-4 among signers 0..3 (FROST Ed25519, FROST
 *   Taproot, CGGMP21 keygen + aux info);
 * - `keys.reshare.3of4-replace1.5proc`: RESHARE of that key, old set {0,1,2,3} → new set
 *   {4,1,2,3}, t' = 3 (all three key types, new aux info for the new set, the new set's test
 *   signatures); the public keys are checked unchanged;
 * - `keys.reshareCommit.3of4-replace1.5proc`: RESHARE_COMMIT (new shares become current, the
 *   replaced signer deletes its shares);
 * - `keys.drill.3of4.3proc`: DRILL among signers {4,1,2} of the new set (one test signature per key
 *   type on the fixed digest, verified here with noble under the master keys; Taproot: BIP86 output key).
 * Figures are wall time from the request to every party's OK result, in ms (median and p95 over
 * the iterations). Run: `npx tsc -b && node bench/dist/keys.js` (or `pnpm bench keys`);
 * `BENCH_N=5` for more samples, `BENCH_KEYS_LOG=debug` keeps the signers' logs.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { taprootTweak } from '@custodian/frost';
import { createIdentity, verifySignature } from '@custodian/signer';
import { ControlClient } from '@custodian/signer-client';
import {
  CeremonyKind,
  type CeremonyResult,
  KeyAlgorithm,
  Outcome,
  type StartCeremony,
  testSignatureDigest,
} from '@custodian/wire';
import { report, summarise } from './harness.js';

const MAIN = fileURLToPath(new URL('../../packages/signer/dist/main.js', import.meta.url));
const PASS = 'bench-keys-passphrase (test only)';
const N = Number(process.env.BENCH_N ?? 3);
const SIGNERS = 5;
const primes = (
  JSON.parse(
    readFileSync(new URL('../../packages/paillier/test/fixtures/test-only-safe-primes.json', import.meta.url), 'utf8'),
  ) as { safePrimes1024: string[] }
).safePrimes1024;
if (primes.length < 2 * SIGNERS) throw new Error('not enough TEST-ONLY fixture primes');

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

interface Node {
  readonly i: number;
  readonly peerId: string;
  readonly config: string;
  readonly log: string;
  readonly status: string;
  proc?: ChildProcess;
}

const dir = mkdtempSync(join(tmpdir(), 'custodian-bench-keys-'));
const env = { ...process.env, CUSTODIAN_BENCH_PASS: PASS };

function signalGroup(p: ChildProcess | undefined, signal: NodeJS.Signals): void {
  try {
    if (p?.pid !== undefined) process.kill(-p.pid, signal);
  } catch {
    // gone
  }
}

async function start(node: Node): Promise<void> {
  const fd = openSync(node.log, 'a');
  // its own process group, ended as a group
  const proc = spawn(process.execPath, [MAIN, 'signer', 'start', '-c', node.config], {
    env,
    stdio: ['ignore', fd, fd],
    detached: true,
  });
  closeSync(fd);
  node.proc = proc;
  const end = Date.now() + 30_000;
  for (;;) {
    try {
      if ((JSON.parse(readFileSync(node.status, 'utf8')) as { pid?: number }).pid === proc.pid) return;
    } catch {
      // not written yet
    }
    if (Date.now() > end || proc.exitCode !== null) throw new Error(`signer${node.i} did not start (${node.log})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stop(node: Node): Promise<void> {
  const p = node.proc;
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const t = setTimeout(() => signalGroup(p, 'SIGKILL'), 10_000);
    p.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    signalGroup(p, 'SIGTERM');
  });
}

/** Restart (untimed): the daemon imports its seed primes again (the last ceremony consumed them). */
const restart = (nodes: readonly Node[]) =>
  Promise.all(
    nodes.map(async (n) => {
      await stop(n);
      await start(n);
    }),
  );

const coord = await createIdentity(join(dir, 'coordinator'), PASS);
const ports = await Promise.all(Array.from({ length: SIGNERS }, () => freePort()));
const nodes: Node[] = [];
for (let i = 0; i < SIGNERS; i++) {
  const out = execFileSync(
    process.execPath,
    [MAIN, 'signer', 'init', '-d', join(dir, `signer${i}`), '--passphrase-env', 'CUSTODIAN_BENCH_PASS'],
    { env, encoding: 'utf8' },
  );
  nodes.push({
    i,
    peerId: (JSON.parse(out) as { peerId: string }).peerId,
    config: join(dir, `signer${i}.json`),
    log: join(dir, `signer${i}.log`),
    status: join(dir, `signer${i}`, 'status.json'),
  });
}
for (const n of nodes) {
  const seed = join(dir, `signer${n.i}-primes.json`);
  writeFileSync(seed, JSON.stringify({ safePrimes: primes.slice(2 * n.i, 2 * n.i + 2) }));
  writeFileSync(
    n.config,
    JSON.stringify({
      listen: `/ip4/127.0.0.1/tcp/${ports[n.i]}`,
      dataDir: `./signer${n.i}`,
      peers: nodes
        .filter((o) => o !== n)
        .map((o) => ({ peerId: o.peerId, addrs: [`/ip4/127.0.0.1/tcp/${ports[o.i]}`] })),
      coordinator: { peerId: coord.peerId },
      passphrase: { env: 'CUSTODIAN_BENCH_PASS' },
      logLevel: process.env.BENCH_KEYS_LOG ?? 'warn',
      scrypt: { N: 1 << 14, r: 8, p: 1 },
      ecdsa: { level: 'SECURITY_112', primePool: 0, primeSeedFile: seed },
      // unsigned key-change documents and raw drills (benchmark only, never in production)
      allowUnenforcedSigning: true,
    }),
  );
}

let client: ControlClient | undefined;
try {
  await Promise.all(nodes.map((n) => start(n)));
  client = await ControlClient.create(
    coord.privateKey,
    new Map(nodes.map((n) => [n.peerId, [`/ip4/127.0.0.1/tcp/${ports[n.i]}`]])),
  );
  const c = client;
  const [s0, s1, s2, s3, s4] = nodes as [Node, Node, Node, Node, Node];
  const oldSet = [s0, s1, s2, s3];
  const newSet = [s4, s1, s2, s3];

  const request = (kind: number, parties: readonly Node[], extra: Partial<StartCeremony> = {}): StartCeremony => ({
    ceremonyId: crypto.getRandomValues(new Uint8Array(16)),
    kind,
    parties: parties.map((n) => ({ peerId: n.peerId })),
    threshold: 0,
    deadlineUnixMs: Date.now() + 300_000,
    ...extra,
  });
  /** Run at every party; the wall time until all answered OK. */
  const timed = async (parties: readonly Node[], r: StartCeremony): Promise<[CeremonyResult[], number]> => {
    const t0 = performance.now();
    const res = await Promise.all(parties.map((n) => c.startCeremony(n.peerId, r, 600_000)));
    const ms = performance.now() - t0;
    for (const x of res) if (x.outcome !== Outcome.OK) throw new Error(`ceremony ${r.kind} failed: ${x.error}`);
    return [res, ms];
  };

  const samples = { masterKey: [] as number[], reshare: [] as number[], commit: [] as number[], drill: [] as number[] };
  for (let k = 0; k < N; k++) {
    if (k > 0) await restart(oldSet);
    const [made, tMaster] = await timed(oldSet, request(CeremonyKind.MASTER_KEY, oldSet, { threshold: 3 }));
    samples.masterKey.push(tMaster);
    const keyId = made[0]?.keyId as string;
    const publicKeys = made[0]?.publicKeys ?? [];
    if (publicKeys.length !== 3) throw new Error('the master key does not have three keys');

    // the new set makes aux info: every member's pool needs its primes again
    await restart(newSet);
    const doc = {
      kind: 'custodian.key-change' as const,
      change_id: crypto.randomUUID(),
      key_id: keyId,
      public_keys: publicKeys.map((p) => ({
        algorithm: (['', 'ED25519', 'SECP256K1_TAPROOT', 'SECP256K1_ECDSA'] as const)[p.algorithm] as 'ED25519',
        public_key: hex(p.publicKey),
        chain_code: hex(p.chainCode),
      })),
      new_parties: newSet.map((n) => n.peerId),
      new_threshold: 3,
      approver_devices: [],
      reason: 'replace-signer' as const,
      created_at: new Date().toISOString(),
    };
    const reshare = request(CeremonyKind.RESHARE, nodes, {
      keyId,
      reshare: {
        newParties: newSet.map((n) => ({ peerId: n.peerId })),
        newThreshold: 3,
        approverDevices: [],
        keyChangeJson: JSON.stringify({ document: doc, device_id: '', device_public_key: '', signature: '' }),
      },
    });
    const [reshared, tReshare] = await timed(nodes, reshare);
    samples.reshare.push(tReshare);
    for (const r of reshared)
      if (r.publicKeys?.map((p) => hex(p.publicKey)).join() !== publicKeys.map((p) => hex(p.publicKey)).join())
        throw new Error('the reshare changed a public key');

    const [, tCommit] = await timed(
      nodes,
      request(CeremonyKind.RESHARE_COMMIT, nodes, { keyId, reshareCeremonyId: reshare.ceremonyId }),
    );
    samples.commit.push(tCommit);

    const drillSet = [s4, s1, s2];
    const drill = request(CeremonyKind.DRILL, drillSet, { keyId });
    const [drilled, tDrill] = await timed(drillSet, drill);
    samples.drill.push(tDrill);
    const digest = hex(testSignatureDigest('drill', keyId, drill.ceremonyId));
    const sigs = drilled[0]?.signatures ?? [];
    if (sigs.length !== 3) throw new Error(`the drill returned ${sigs.length} signatures, not 3`);
    for (const s of sigs) {
      const master = publicKeys.find((p) => p.algorithm === s.algorithm);
      // under the master key itself (Taproot: its BIP86 output key, BIP341 tweak with no script tree)
      const expected =
        master && s.algorithm === KeyAlgorithm.SECP256K1_TAPROOT
          ? taprootTweak(master.publicKey.subarray(-32), new Uint8Array(0)).outputKey
          : master?.publicKey;
      const underMaster = !!expected && hex(expected) === hex(s.publicKey);
      if (!underMaster || hex(s.digest) !== digest || !verifySignature(s.algorithm, s.publicKey, s.digest, s.signature))
        throw new Error(`drill signature (algorithm ${s.algorithm}) does not verify`);
    }
  }
  const extra = { level: 'SECURITY_112', primes: 'pool (TEST-ONLY fixtures)', keys: 'ed25519+taproot+ecdsa' };
  report(summarise('keys.masterKey.3of4.4proc', samples.masterKey, 'ms', extra));
  report(summarise('keys.reshare.3of4-replace1.5proc', samples.reshare, 'ms', extra));
  report(summarise('keys.reshareCommit.3of4-replace1.5proc', samples.commit, 'ms', extra));
  report(summarise('keys.drill.3of4.3proc', samples.drill, 'ms', extra));
} finally {
  await client?.stop();
  await Promise.all(nodes.map((n) => stop(n)));
  if (process.env.BENCH_KEYS_LOG) process.stderr.write(`signer logs kept in ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
}
