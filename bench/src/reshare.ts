/**
 * Resharing benchmarks (issue #22): in-process reshare 3-of-4 → 3-of-4 with one member replaced
 * (old parties 0, 1, 2 deal and keep their identifiers, old party 3 is replaced by a new one),
 * every party through our rounds in the in-memory simulator, next to the key generation of the
 * same 3-of-4 key:
 * - FROST Ed25519 and FROST secp256k1-tr (Taproot): `frost.reshare.<suite>.3of4-replace1` vs
 *   `frost.dkg.<suite>.3of4`;
 * - CGGMP21: the core-share reshare alone (`cggmp.reshare.core.3of4-replace1`), and with the new
 *   aux info for the new set (`cggmp.reshare+aux.s112.3of4-replace1.pool`, primes from a pool: the
 *   committed TEST-ONLY fixture primes, prime search excluded) vs `cggmp.keygen.3of4` and
 *   `cggmp.keygen+aux.s112.3of4.pool` (the master key ceremony's protocol work).
 * Run: `npx tsc -b && node bench/dist/reshare.js` (BENCH_N samples, default 5). One JSON figure per line (ms).
 */
import { readFileSync } from 'node:fs';
import { auxInfoProtocol, type CoreKeyShare, reshareProtocol as ecdsaReshare, keygenProtocol } from '@custodian/cggmp';
import { Party, type ProtocolSpec, simulate, systemRandom } from '@custodian/crypto';
import { dkgProtocol, reshareProtocol as frostReshare, type KeyShare, type SuiteName } from '@custodian/frost';
import { SECURITY_112 } from '@custodian/paillier';
import { bench } from './harness.js';

const fixture = JSON.parse(
  readFileSync(new URL('../../packages/paillier/test/fixtures/test-only-safe-primes.json', import.meta.url), 'utf8'),
) as { safePrimes1024: string[] };
const primes = (k: number) => {
  const list = fixture.safePrimes1024;
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

const N = Number(process.env.BENCH_N ?? 5);
const context = new Uint8Array(32).fill(1);

for (const suite of ['ed25519', 'secp256k1-tr'] as SuiteName[]) {
  let old: KeyShare[] = [];
  await bench(`frost.dkg.${suite}.3of4`, () => (old = run(() => dkgProtocol({ suite, threshold: 3 }), 4)), { n: N });
  const parties = [0, 1, 2, 3].map((k) => ({
    ...(k < 3 ? { oldIdentifier: (old[k] as KeyShare).identifier } : {}),
    newIdentifier: BigInt(k + 1),
  }));
  const first = old[0] as KeyShare;
  await bench(
    `frost.reshare.${suite}.3of4-replace1`,
    () =>
      run(
        (i) =>
          frostReshare({
            suite,
            ...(i < 3 ? { keyShare: old[i] as KeyShare } : {}),
            parties,
            newThreshold: 3,
            expectedPublicKey: first.groupPublicKey,
            expectedChainCode: first.chainCode,
            context,
          }),
        4,
      ),
    { n: N },
  );
}

let cores: CoreKeyShare[] = [];
await bench('cggmp.keygen.3of4', () => (cores = run(() => keygenProtocol({ t: 3 }), 4)), { n: N, warmup: 1 });
const aux = () => run((i) => auxInfoProtocol({ level: SECURITY_112, primes: primes(i), checkPrimality: false }), 4);
await bench(
  'cggmp.keygen+aux.s112.3of4.pool',
  () => {
    run(() => keygenProtocol({ t: 3 }), 4);
    aux();
  },
  { n: N, warmup: 0 },
);
const seats = [0, 1, 2, 3].map((k) => ({ ...(k < 3 ? { oldIndex: k } : {}), newIndex: k }));
const reshareCore = () =>
  run(
    (i) =>
      ecdsaReshare({
        ...(i < 3 ? { core: cores[i] as CoreKeyShare } : {}),
        parties: seats,
        newN: 4,
        newThreshold: 3,
        expectedPublicKey: (cores[0] as CoreKeyShare).publicKey,
        expectedChainCode: (cores[0] as CoreKeyShare).chainCode,
        context,
      }),
    4,
  );
await bench('cggmp.reshare.core.3of4-replace1', reshareCore, { n: N, warmup: 1 });
await bench(
  'cggmp.reshare+aux.s112.3of4-replace1.pool',
  () => {
    reshareCore();
    aux();
  },
  { n: N, warmup: 0 },
);
