/**
 * CGGMP21 benchmarks: keygen, aux info (with primes from a pool, i.e. prime search excluded),
 * refresh, presign, online sign, for 2-of-3 and 3-of-5, at SECURITY_112 and SECURITY_128. All
 * parties run in one process with messages routed in memory (so a figure is the sum of every
 * party's CPU time: divide by n for a per-party estimate on separate machines).
 * Run: `pnpm build && node bench/dist/cggmp.js` (BENCH_N=… samples, default 3; BENCH_LEVELS=112,128).
 * Aux info needs safe primes: the bench uses the committed TEST-ONLY fixture primes (a prime pool).
 */
import { readFileSync } from 'node:fs';
import {
  type AuxInfo,
  auxInfoProtocol,
  type CoreKeyShare,
  type KeyShare,
  keygenProtocol,
  type Presignature,
  presignProtocol,
  refreshProtocol,
  signProtocol,
} from '@custodian/cggmp';
import { Party, type ProtocolSpec, simulate, systemRandom } from '@custodian/crypto';
import { SECURITY_112, SECURITY_128, type SecurityLevel } from '@custodian/paillier';
import { bench } from './harness.js';

const fixture = JSON.parse(
  readFileSync(new URL('../../packages/paillier/test/fixtures/test-only-safe-primes.json', import.meta.url), 'utf8'),
) as { safePrimes1024: string[]; safePrimes1536: string[] };
const primes = (level: SecurityLevel, k: number) => {
  const list = level === SECURITY_112 ? fixture.safePrimes1024 : fixture.safePrimes1536;
  return { p: BigInt(`0x${list[(2 * k) % list.length]}`), q: BigInt(`0x${list[(2 * k + 1) % list.length]}`) };
};

// biome-ignore lint/suspicious/noExplicitAny: heterogeneous protocol states
function run<O>(make: (i: number) => ProtocolSpec<any, O>, n: number): O[] {
  const sessionId = systemRandom(32);
  const res = simulate(
    Array.from({ length: n }, (_, i) => new Party(make(i), { self: i, n, sessionId, rng: systemRandom })),
  );
  const bad = res.aborted.find(Boolean);
  if (bad) throw new Error(bad.reason);
  return res.outputs as O[];
}

const N = Number(process.env.BENCH_N ?? 3);
const levels = (process.env.BENCH_LEVELS ?? '112,128')
  .split(',')
  .map((l) => (l === '128' ? SECURITY_128 : SECURITY_112));

for (const level of levels) {
  const tag = level.name === 'SECURITY_112' ? 's112' : 's128';
  for (const [t, n] of [
    [2, 3],
    [3, 5],
  ] as const) {
    let cores: CoreKeyShare[] = [];
    await bench(`cggmp.keygen.${t}of${n}`, () => (cores = run(() => keygenProtocol({ t }), n)), { n: N, warmup: 0 });
    let aux: AuxInfo[] = [];
    await bench(
      `cggmp.aux.${tag}.${t}of${n}.pool`,
      () => (aux = run((i) => auxInfoProtocol({ level, primes: primes(level, i), checkPrimality: false }), n)),
      { n: Math.min(N, 2), warmup: 0 },
    );
    const shares: KeyShare[] = cores.map((core, i) => ({ core, aux: aux[i] as AuxInfo }));
    const signers = Array.from({ length: t }, (_, j) => j);
    await bench(
      `cggmp.presign.${tag}.${t}of${n}`,
      () => run((j) => presignProtocol({ share: shares[j] as KeyShare, signers }), t),
      { n: N, warmup: 1 },
    );
    const digest = systemRandom(32);
    const pool: Presignature[][] = [];
    for (let k = 0; k < N + 1; k++)
      pool.push(run((j) => presignProtocol({ share: shares[j] as KeyShare, signers }), t));
    await bench(
      `cggmp.sign.online.${tag}.${t}of${n}`,
      () => {
        const pre = pool.pop() as Presignature[];
        return run((j) => signProtocol({ presignature: pre[j] as Presignature, digest }), t);
      },
      { n: N, warmup: 1 },
    );
    if (t === 2 && n === 3) {
      await bench(
        `cggmp.refresh.${tag}.2of3.pool`,
        () =>
          run(
            (i) =>
              refreshProtocol({ share: shares[i] as KeyShare, primes: primes(level, i + 3), checkPrimality: false }),
            n,
          ),
        { n: Math.min(N, 2), warmup: 0 },
      );
    }
  }
}
