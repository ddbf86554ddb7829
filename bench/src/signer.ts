/**
 * Signer benchmarks across 3 real signer processes over libp2p on 127.0.0.1 (the bench process is
 * the coordinator, speaking `/custodian/control/2`); every signature is verified (noble) before
 * the sample ends, so each figure is request → verified signature:
 * - master key ceremony 2-of-3 (FROST Ed25519 + FROST Taproot, and CGGMP21 keygen + aux-info at
 *   SECURITY_112 with TEST-ONLY pre-generated safe primes from packages/paillier/test/fixtures);
 * - FROST Ed25519 / Taproot signing, 2 of 3;
 * - ECDSA online signing from a pooled presignature (one round), cold ECDSA (presign + sign). ECDSA
 *   figures run from the request to the signature in the coordinator's hands as the gateway gets
 *   it: combined from the signers' interim shares and verified by the coordinator under the child
 *   key it derives itself (`EcdsaShareCombiner`, SEC 1 §4.1.4); `…pooled.signersAnswered` is the
 *   time until every signer's own result (combined and verified by each) is in as well. The bench's
 *   independent noble verification of every sample is reported separately (`…pooled.driverVerify`);
 *   `signer.machine.nobleVerify` (noble's secp256k1 verification timed in the bench process while
 *   the signers are idle) gauges the machine, and each pooled figure gives its ratio to it
 *   (`perNobleVerify`), which compares runs on machines of different speed;
 *   `BENCH_SIGNER_POOLED_N` sets the number of pooled samples (default 60, taken in rounds of 60
 *   after a refill, so every presignature used is prepared in memory as in a daemon's pool);
 * - sustained ECDSA signatures/s with the pool refilled in the background by PRESIGN ceremonies.
 * Run: `npx tsc -b && node bench/dist/signer.js` — one JSON figure per line (ms, or sig/s).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalCluster, verifySignature } from '@custodian/signer';
import { EcdsaShareCombiner, PresignaturePoolKeeper } from '@custodian/signer-client';
import { CeremonyKind, type CeremonyResult, KeyAlgorithm, Outcome, type StartCeremony } from '@custodian/wire';
import { bench, measure, report, summarise } from './harness.js';

const primes = (
  JSON.parse(
    readFileSync(new URL('../../packages/paillier/test/fixtures/test-only-safe-primes.json', import.meta.url), 'utf8'),
  ) as {
    safePrimes1024: string[];
  }
).safePrimes1024;
const dir = mkdtempSync(join(tmpdir(), 'custodian-bench-signer-'));
// signer i gets TEST-ONLY fixture pair i: enough for one ECDSA master key (the repeated
// master-key figure is FROST-only).
const cluster = await startLocalCluster(dir, 3, {
  // the benchmark signs raw digests without transfer evidence (never in production)
  allowUnenforcedSigning: true,
  ecdsa: { level: 'SECURITY_112', primeSeeds: [0, 1, 2].map((i) => primes.slice(2 * i, 2 * i + 2)) },
  ...(process.env.BENCH_SIGNER_LOG ? { logLevel: process.env.BENCH_SIGNER_LOG } : {}),
});
const { client, peerIds } = cluster;
let counter = 0;
const cid = () => {
  const b = new Uint8Array(24);
  new DataView(b.buffer).setUint32(0, ++counter);
  b.set(new TextEncoder().encode(`bench${process.pid}`).subarray(0, 16), 8);
  return b;
};

function request(parties: readonly string[], start: Omit<StartCeremony, 'parties' | 'ceremonyId'>): StartCeremony {
  return { ...start, ceremonyId: cid(), parties: parties.map((peerId) => ({ peerId })) };
}

/** Every signer's result, all OK. */
async function allOk(calls: Promise<CeremonyResult>[]): Promise<CeremonyResult> {
  const results = await Promise.all(calls);
  for (const r of results) if (r.outcome !== Outcome.OK) throw new Error(`ceremony failed: ${r.error}`);
  return results[0] as CeremonyResult;
}

async function run(parties: readonly string[], start: Omit<StartCeremony, 'parties' | 'ceremonyId'>) {
  return allOk(client.startCeremonies(parties, request(parties, start)));
}

/** The master ECDSA key and chain code (set after the master key ceremony): the coordinator's combination uses them. */
let ecdsaMaster: { publicKey: Uint8Array; chainCode: Uint8Array } | undefined;

async function signOnce(
  parties: readonly string[],
  keyId: string,
  algorithm: number,
  i: number,
  presignatureId?: string,
  timing?: { signed: number[]; answered: number[]; verified: number[] },
) {
  const digest = new Uint8Array(32).fill(i & 0xff);
  digest[0] = (i >> 8) & 0xff;
  const derivationPath = [0, i];
  // ECDSA: the coordinator combines the signers' interim shares (the gateway's fast path)
  const master = algorithm === KeyAlgorithm.SECP256K1_ECDSA ? ecdsaMaster : undefined;
  const start = request(parties, {
    kind: CeremonyKind.SIGN,
    threshold: 2,
    deadlineUnixMs: Date.now() + 60_000,
    sign: {
      keyId,
      algorithm,
      derivationPath,
      digests: [digest],
      ...(presignatureId ? { presignatureId } : {}),
      ...(master ? { interimShares: true } : {}),
    },
  });
  const t0 = performance.now();
  const combiner = master
    ? new EcdsaShareCombiner({ ...master, derivationPath, digests: [digest], signers: parties.length })
    : undefined;
  const answers = allOk(
    client.startCeremonies(parties, start, undefined, (position, res) => {
      if (res.shares) combiner?.add(position, res.shares);
    }),
  );
  answers.catch(() => undefined);
  // as the gateway does: Y' is derived while the signers work
  if (combiner) setImmediate(() => combiner.prepare());
  const fast = combiner ? await Promise.race([combiner.done, answers.then(() => undefined)]) : undefined;
  let signature: { signature: Uint8Array; publicKey: Uint8Array } | undefined;
  const combined = fast?.[0];
  if (combined) {
    signature = { signature: combined.compact, publicKey: combined.publicKey };
  } else {
    if (combiner) throw new Error('the coordinator could not combine the signers’ shares');
    signature = (await answers).signatures?.[0];
  }
  const t1 = performance.now();
  await answers;
  const t2 = performance.now();
  if (!signature || !verifySignature(algorithm, signature.publicKey, digest, signature.signature))
    throw new Error('signature does not verify');
  timing?.signed.push(t1 - t0);
  timing?.answered.push(t2 - t0);
  timing?.verified.push(performance.now() - t2);
  return { digest, ...signature };
}

try {
  let t0 = performance.now();
  const master = await run(peerIds, {
    kind: CeremonyKind.MASTER_KEY,
    threshold: 2,
    deadlineUnixMs: Date.now() + 300_000,
  });
  report({
    name: 'signer.masterKey.withEcdsa.2of3.3proc',
    unit: 'ms',
    median: +(performance.now() - t0).toFixed(1),
    p95: +(performance.now() - t0).toFixed(1),
    n: 1,
    level: 'SECURITY_112',
  });
  const keyId = master.keyId as string;
  const ecdsaKey = master.publicKeys?.find((k) => k.algorithm === KeyAlgorithm.SECP256K1_ECDSA);
  if (!ecdsaKey) throw new Error('the master key has no ECDSA key');
  ecdsaMaster = { publicKey: ecdsaKey.publicKey, chainCode: ecdsaKey.chainCode };
  // BENCH_SIGNER_ONLY=pooled: only the master key and the pooled ECDSA figures (quick iterations)
  const pooledOnly = process.env.BENCH_SIGNER_ONLY === 'pooled';
  if (!pooledOnly)
    await bench(
      'signer.masterKey.frostOnly.2of3.3proc',
      () =>
        run(peerIds, {
          kind: CeremonyKind.MASTER_KEY,
          threshold: 2,
          deadlineUnixMs: Date.now() + 300_000,
          algorithms: [KeyAlgorithm.ED25519, KeyAlgorithm.SECP256K1_TAPROOT],
        }),
      { n: 5, warmup: 1 },
    );
  let i = 0;
  for (const [label, algorithm] of pooledOnly
    ? []
    : ([
        ['frost.ed25519', KeyAlgorithm.ED25519],
        ['frost.taproot', KeyAlgorithm.SECP256K1_TAPROOT],
        ['ecdsa.cold', KeyAlgorithm.SECP256K1_ECDSA],
      ] as const)) {
    await bench(`signer.sign.${label}.2of3.3proc`, () => signOnce(peerIds.slice(0, 2), keyId, algorithm, ++i), {
      n: label === 'ecdsa.cold' ? 10 : 30,
      warmup: 2,
    });
  }
  // pooled ECDSA: fill the pool, then measure one-round signing only (no refill running), in
  // rounds of at most POOLED_ROUND signatures: a signer holds up to 64 presignatures prepared in
  // memory (`PreparedPresignatures`), as a daemon with a pool of that size would
  const pooledN = Number(process.env.BENCH_SIGNER_POOLED_N ?? 60);
  const POOLED_ROUND = 60;
  const keeper = new PresignaturePoolKeeper(client, keyId, peerIds.slice(0, 2), POOLED_ROUND + 2, 11);
  const timing = { signed: [] as number[], answered: [] as number[], verified: [] as number[] };
  let last: Awaited<ReturnType<typeof signOnce>> | undefined;
  for (let done = 0; done < pooledN; ) {
    await keeper.refill();
    const round = Math.min(POOLED_ROUND, pooledN - done);
    // the first two signatures of a round warm up (not timed)
    for (let k = 0; k < round + 2; k++) {
      const id = keeper.take({ refill: false });
      if (!id) throw new Error('pool empty');
      last = await signOnce(
        peerIds.slice(0, 2),
        keyId,
        KeyAlgorithm.SECP256K1_ECDSA,
        ++i,
        id,
        k < 2 ? undefined : timing,
      );
    }
    done += round;
  }
  // the machine's speed varies between (and within) sessions: noble's secp256k1 verification
  // (`verifySignature`) in this process, timed once the signers are idle, is the gauge; ratios to
  // it compare runs on machines of different speed
  await new Promise((r) => setTimeout(r, 500));
  const g = last as NonNullable<typeof last>;
  const machine = await measure(
    'signer.machine.nobleVerify',
    () => verifySignature(KeyAlgorithm.SECP256K1_ECDSA, g.publicKey, g.digest, g.signature),
    { n: 200, warmup: 50 },
  );
  const pooled = summarise('signer.sign.ecdsa.pooled.2of3.3proc', timing.signed);
  const ratio = (f: { median: number }) => +(f.median / machine.median).toFixed(2);
  report({ ...pooled, perNobleVerify: ratio(pooled) });
  const answered = summarise('signer.sign.ecdsa.pooled.signersAnswered', timing.answered);
  report({ ...answered, perNobleVerify: ratio(answered) });
  report(machine);
  report(summarise('signer.sign.ecdsa.pooled.driverVerify', timing.verified));
  // sustained: sign continuously for a fixed number of signatures while the keeper refills
  if (!pooledOnly) {
    await keeper.refill();
    const total = 30;
    t0 = performance.now();
    for (let k = 0; k < total; k++) {
      let id = keeper.take();
      while (!id) {
        await keeper.refill();
        id = keeper.take();
      }
      await signOnce(peerIds.slice(0, 2), keyId, KeyAlgorithm.SECP256K1_ECDSA, ++i, id);
    }
    const rate = total / ((performance.now() - t0) / 1000);
    report({
      name: 'signer.sign.ecdsa.sustainedWithRefill.2of3.3proc',
      unit: 'sig/s',
      median: +rate.toFixed(2),
      p95: +rate.toFixed(2),
      n: total,
    });
  }
  keeper.stop();
} finally {
  await cluster.stop();
  if (process.env.BENCH_SIGNER_LOG) process.stderr.write(`signer logs kept in ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
}
