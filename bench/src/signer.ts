/**
 * Signer benchmarks across 3 real signer processes over libp2p on 127.0.0.1 (the bench process is
 * the coordinator, speaking `/custodian/control/2`); every signature is verified (noble) before
 * the sample ends, so each figure is request → verified signature:
 * - master key ceremony 2-of-3 (FROST Ed25519 + FROST Taproot, and CGGMP21 keygen + aux-info at
 *   SECURITY_112 with TEST-ONLY pre-generated safe primes from packages/paillier/test/fixtures);
 * - FROST Ed25519 / Taproot signing, 2 of 3;
 * - ECDSA online signing from a pooled presignature (one round), cold ECDSA (presign + sign). The
 *   pooled figure runs from the request to the signature in the coordinator's hands, verified by
 *   each signer before it answered (SEC 1 §4.1.4, `@custodian/cggmp`); the bench's own independent
 *   noble verification of every sample is reported separately (`…pooled.driverVerify`), since the
 *   coordinator does not repeat it;
 * - sustained ECDSA signatures/s with the pool refilled in the background by PRESIGN ceremonies.
 * Run: `npx tsc -b && node bench/dist/signer.js` — one JSON figure per line (ms, or sig/s).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PresignaturePoolKeeper, startLocalCluster, verifySignature } from '@custodian/signer';
import { CeremonyKind, KeyAlgorithm, Outcome, type StartCeremony } from '@custodian/wire';
import { bench, report, summarise } from './harness.js';

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

async function run(parties: readonly string[], start: Omit<StartCeremony, 'parties' | 'ceremonyId'>) {
  const req: StartCeremony = { ...start, ceremonyId: cid(), parties: parties.map((peerId) => ({ peerId })) };
  const results = await Promise.all(client.startCeremonies(parties, req));
  for (const r of results) if (r.outcome !== Outcome.OK) throw new Error(`ceremony failed: ${r.error}`);
  return results[0] as NonNullable<(typeof results)[0]>;
}

async function signOnce(
  parties: readonly string[],
  keyId: string,
  algorithm: number,
  i: number,
  presignatureId?: string,
  timing?: { signed: number[]; verified: number[] },
) {
  const digest = new Uint8Array(32).fill(i & 0xff);
  digest[0] = (i >> 8) & 0xff;
  const t0 = performance.now();
  const r = await run(parties, {
    kind: CeremonyKind.SIGN,
    threshold: 2,
    deadlineUnixMs: Date.now() + 60_000,
    sign: {
      keyId,
      algorithm,
      derivationPath: [0, i],
      digests: [digest],
      ...(presignatureId ? { presignatureId } : {}),
    },
  });
  const t1 = performance.now();
  const s = r.signatures?.[0];
  if (!s || !verifySignature(algorithm, s.publicKey, digest, s.signature)) throw new Error('signature does not verify');
  timing?.signed.push(t1 - t0);
  timing?.verified.push(performance.now() - t1);
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
  for (const [label, algorithm] of [
    ['frost.ed25519', KeyAlgorithm.ED25519],
    ['frost.taproot', KeyAlgorithm.SECP256K1_TAPROOT],
    ['ecdsa.cold', KeyAlgorithm.SECP256K1_ECDSA],
  ] as const) {
    await bench(`signer.sign.${label}.2of3.3proc`, () => signOnce(peerIds.slice(0, 2), keyId, algorithm, ++i), {
      n: label === 'ecdsa.cold' ? 10 : 30,
      warmup: 2,
    });
  }
  // pooled ECDSA: fill the pool first, then measure one-round signing only (no refill running)
  const keeper = new PresignaturePoolKeeper(client, keyId, peerIds.slice(0, 2), 44, 11);
  await keeper.refill();
  const timing = { signed: [] as number[], verified: [] as number[] };
  for (let k = 0; k < 42; k++) {
    const id = keeper.take({ refill: false });
    if (!id) throw new Error('pool empty');
    await signOnce(peerIds.slice(0, 2), keyId, KeyAlgorithm.SECP256K1_ECDSA, ++i, id, k < 2 ? undefined : timing);
  }
  report(summarise('signer.sign.ecdsa.pooled.2of3.3proc', timing.signed));
  report(summarise('signer.sign.ecdsa.pooled.driverVerify', timing.verified));
  // sustained: sign continuously for a fixed number of signatures while the keeper refills
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
  keeper.stop();
} finally {
  await cluster.stop();
  if (process.env.BENCH_SIGNER_LOG) process.stderr.write(`signer logs kept in ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
}
