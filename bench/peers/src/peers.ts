/**
 * Peer benchmark: our CGGMP21 (`@custodian/cggmp`) against Silence Laboratories' DKLs23
 * (`@silencelaboratories/dkls-wasm-ll-node`, Rust → WASM), in the same process run, on the same
 * shapes (2-of-3 and 3-of-5), every party in this process with messages routed in memory. A figure
 * is therefore the sum of every party's CPU time for one ceremony.
 *
 * Figures (JSON lines `{ name, unit, median, p95, n }`, times in ms):
 *   cggmp.keygen+aux.<lvl>.<t>of<n>  keygen then aux info (Paillier/ring-Pedersen primes from the
 *                                     committed TEST-ONLY fixture pool: prime search excluded)
 *   cggmp.presign.<lvl>.<t>of<n>     three-round presigning of t signers
 *   cggmp.online.<lvl>.<t>of<n>      one-round signing from a presignature (incl. verification)
 *   cggmp.full.<lvl>.<t>of<n>        presign + online (no table for R: used at once)
 *   dkls23.{keygen,presign,online,full}.<t>of<n>
 *   ratio.<phase>.<lvl>.<t>of<n>     ours / theirs (unit "x"; median = ratio of medians, p95 = ratio of p95s)
 *
 * SECURITY_112 signing uses the committed TEST-ONLY key shares
 * (`packages/cggmp/test/fixtures/test-only-key-shares.json`); SECURITY_128 signing uses the shares
 * from the keygen+aux run. Every signature (ours and theirs) is checked with @noble/curves once.
 *
 * Run: `npx tsc -b bench/peers && node bench/peers/dist/peers.js`
 * Env: BENCH_N (timed samples, default 5), BENCH_N_ONLINE (online-sign samples, default 15), BENCH_LEVELS (default "112,128"),
 * BENCH_SHAPES (default "2of3,3of5").
 */
import { readFileSync } from 'node:fs';
import { type Figure, measure, report } from '@custodian/bench/harness';
import {
  type AuxInfo,
  auxInfoProtocol,
  type CoreKeyShare,
  type KeyShare,
  keygenProtocol,
  keyShareFromJson,
  type Presignature,
  prepareSigning,
  presignProtocol,
  signProtocol,
} from '@custodian/cggmp';
import { Party, type ProtocolSpec, simulate, systemRandom } from '@custodian/crypto';
import { SECURITY_112, SECURITY_128, type SecurityLevel } from '@custodian/paillier';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { dklsKeygen, dklsOnline, dklsPresign, dklsPublicKey } from './dkls.js';

const root = new URL('../../../', import.meta.url);
const primeFixture = JSON.parse(
  readFileSync(new URL('packages/paillier/test/fixtures/test-only-safe-primes.json', root), 'utf8'),
) as { safePrimes1024: string[]; safePrimes1536: string[] };
const shareFixture = JSON.parse(
  readFileSync(new URL('packages/cggmp/test/fixtures/test-only-key-shares.json', root), 'utf8'),
) as { sets: Record<string, unknown[]> };

/** Pool of TEST-ONLY safe primes: pair k for party k. */
function primes(level: SecurityLevel, k: number): { p: bigint; q: bigint } {
  const list = level === SECURITY_112 ? primeFixture.safePrimes1024 : primeFixture.safePrimes1536;
  if (2 * k + 1 >= list.length) throw new RangeError('prime pool exhausted');
  return { p: BigInt(`0x${list[2 * k]}`), q: BigInt(`0x${list[2 * k + 1]}`) };
}

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

function checkSignature(who: string, r: Uint8Array, s: Uint8Array, digest: Uint8Array, publicKey: Uint8Array): void {
  const compact = new Uint8Array(64);
  compact.set(r, 32 - r.length);
  compact.set(s, 64 - s.length);
  if (!secp256k1.verify(compact, digest, publicKey, { prehash: false, lowS: false })) {
    throw new Error(`${who}: signature does not verify`);
  }
}

const N = Number(process.env.BENCH_N ?? 5);
/** Online signing is cheap and noisy: more samples (each needs a fresh presignature). */
const N_ONLINE = Number(process.env.BENCH_N_ONLINE ?? 15);
const levels = (process.env.BENCH_LEVELS ?? '112,128')
  .split(',')
  .map((l) => (l === '128' ? SECURITY_128 : SECURITY_112));
const shapes = (process.env.BENCH_SHAPES ?? '2of3,3of5').split(',').map((s) => {
  const [t, n] = s.split('of').map(Number);
  if (!t || !n || t > n) throw new RangeError(`BENCH_SHAPES: bad shape ${s}`);
  return { t, n, label: `${t}of${n}` };
});

function ratio(name: string, ours: Figure, theirs: Figure): void {
  const r = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  report({
    name,
    unit: 'x',
    median: r(ours.median, theirs.median),
    p95: r(ours.p95, theirs.p95),
    n: Math.min(ours.n, theirs.n),
  });
}

const bench = async (name: string, fn: () => unknown, opts: { n?: number; warmup?: number } = {}) => {
  const f = await measure(name, fn, { n: opts.n ?? N, warmup: opts.warmup ?? 1 });
  report(f);
  return f;
};

for (const { t, n, label } of shapes) {
  // ---- DKLs23 ----
  let dShares: Uint8Array[] = [];
  const dKeygen = await bench(`dkls23.keygen.${label}`, () => (dShares = dklsKeygen(n, t)), { warmup: 0 });
  const dPub = dklsPublicKey(dShares[0] as Uint8Array);
  const digest = systemRandom(32);
  {
    const [sig] = dklsOnline(dklsPresign(dShares, t), digest);
    checkSignature('dkls23', (sig as [Uint8Array, Uint8Array])[0], (sig as [Uint8Array, Uint8Array])[1], digest, dPub);
  }
  // DKLs presign/full are cheap: as many samples as online signing, for stable medians
  const dPresign = await bench(
    `dkls23.presign.${label}`,
    () => {
      for (const s of dklsPresign(dShares, t)) s.free();
    },
    { n: N_ONLINE, warmup: 2 },
  );
  const dPool = Array.from({ length: N_ONLINE + 2 }, () => dklsPresign(dShares, t));
  const dOnline = await bench(`dkls23.online.${label}`, () => dklsOnline(dPool.pop() ?? [], digest), {
    n: N_ONLINE,
    warmup: 2,
  });
  const dFull = await bench(`dkls23.full.${label}`, () => dklsOnline(dklsPresign(dShares, t), digest), {
    n: N_ONLINE,
    warmup: 2,
  });

  // ---- ours ----
  for (const level of levels) {
    const tag = level === SECURITY_112 ? 's112' : 's128';
    let cores: CoreKeyShare[] = [];
    let aux: AuxInfo[] = [];
    const oKeygen = await bench(
      `cggmp.keygen+aux.${tag}.${label}`,
      () => {
        cores = run(() => keygenProtocol({ t }), n);
        aux = run((i) => auxInfoProtocol({ level, primes: primes(level, i), checkPrimality: false }), n);
      },
      { n: Math.min(N, 3), warmup: 0 },
    );
    const shares: KeyShare[] =
      level === SECURITY_112 && shareFixture.sets[label]
        ? (shareFixture.sets[label] as unknown[]).map((j) => keyShareFromJson(j))
        : cores.map((core, i) => ({ core, aux: aux[i] as AuxInfo }));
    const signers = Array.from({ length: t }, (_, j) => j);
    const presign = () => run((j) => presignProtocol({ share: shares[j] as KeyShare, signers }), t);
    // a presignature kept in a pool gets its fixed-base table (the pool's offline cost, timed with
    // presigning); one used at once (full) does not need it
    const pooled = () => {
      const pre = presign();
      for (const p of pre) prepareSigning(p.public);
      return pre;
    };
    const online = (pre: Presignature[]) =>
      run((j) => signProtocol({ presignature: pre[j] as Presignature, digest }), t);
    {
      const [sig] = online(presign());
      if (!sig) throw new Error('cggmp: no signature');
      checkSignature('cggmp', sig.compact.slice(0, 32), sig.compact.slice(32), digest, sig.publicKey);
    }
    const oPresign = await bench(`cggmp.presign.${tag}.${label}`, pooled);
    const pool = Array.from({ length: N_ONLINE + 2 }, () => pooled());
    const oOnline = await bench(`cggmp.online.${tag}.${label}`, () => online(pool.pop() ?? []), {
      n: N_ONLINE,
      warmup: 2,
    });
    const oFull = await bench(`cggmp.full.${tag}.${label}`, () => online(presign()));
    ratio(`ratio.keygen.${tag}.${label}`, oKeygen, dKeygen);
    ratio(`ratio.presign.${tag}.${label}`, oPresign, dPresign);
    ratio(`ratio.online.${tag}.${label}`, oOnline, dOnline);
    ratio(`ratio.full.${tag}.${label}`, oFull, dFull);
  }
}
