/**
 * Honest-path cost of identifiable abort (issue #23): the same honest runs before and after the
 * change, INTERLEAVED in one process (before, after, before, after…), so machine load affects both
 * alike.
 *
 * - "after" is this tree as the signers run it: every Party has a BroadcastAuth (Ed25519 with the
 *   parties' identity keys, `sessionAuth` of @custodian/wire), so each broadcast carries a signed
 *   statement, every echo carries the statements' signatures, and each party verifies every
 *   statement it receives; presigning keeps what identification would need.
 * - "before" is another checkout's build (`BENCH_BASELINE=/path/to/checkout`, built with
 *   `npx tsc -b bench`), e.g. the commit before [blame]: `git worktree add /tmp/before bf17531 &&
 *   (cd /tmp/before && npx -y pnpm@10 install --offline && npx tsc -b bench)`. Without
 *   BENCH_BASELINE only the "after" figures and the signed-statement overhead (this tree with and
 *   without auth) are printed.
 *
 * Figures (ms, median and p95 over BENCH_N samples, default 10; all parties in one process, so a
 * figure is the sum of every party's CPU time):
 * - `blame.presign.s112.2of3.{before,after,afterNoAuth}`: CGGMP21 presigning, signers {0,1,2} of
 *   the committed TEST-ONLY 2-of-3 shares (packages/cggmp/test/fixtures);
 * - `blame.frost.sign.ed25519.2of3.{before,after,afterNoAuth}`: FROST signing, 2 signers of a
 *   2-of-3 key made by our DKG (untimed);
 * - `blame.*.ratio`: after / before medians.
 * The identification path itself is measured by `bench/dist/presign-ident.js`.
 * Run: `npx tsc -b bench && BENCH_BASELINE=/tmp/before node bench/dist/blame.js`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { type KeyShare as CggmpShare, keyShareFromJson, presignProtocol } from '@custodian/cggmp';
import { Party, type ProtocolSpec, simulate, systemRandom } from '@custodian/crypto';
import {
  dkgProtocol,
  type KeyShare as FrostShare,
  encodeKeyShare as frostEncode,
  signProtocol,
} from '@custodian/frost';
import { sessionAuth } from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { report, summarise } from './harness.js';

const N = Number(process.env.BENCH_N ?? 10);
const BASE = process.env.BENCH_BASELINE;
const rng = systemRandom;
const msg = new TextEncoder().encode('custodian blame benchmark message, 32+ bytes long....');

const fixture = JSON.parse(
  readFileSync(new URL('../../packages/cggmp/test/fixtures/test-only-key-shares.json', import.meta.url), 'utf8'),
) as { sets: Record<string, unknown[]> };
const fixtureSet = fixture.sets['2of3'] as unknown[];

/** Identity keys of the parties (Ed25519 seeds and public keys), as signer nodes have. */
const seeds = [0, 1, 2].map(() => ed25519.utils.randomSecretKey());
const idKeys = seeds.map((s) => ed25519.getPublicKey(s));

// biome-ignore lint/suspicious/noExplicitAny: heterogeneous protocol states
type AnySpec = ProtocolSpec<any, unknown>;
interface Runtime {
  // biome-ignore lint/suspicious/noExplicitAny: the baseline's Party class
  Party: any;
  // biome-ignore lint/suspicious/noExplicitAny: the baseline's simulate
  simulate: any;
}

function runAll(rt: Runtime, specs: AnySpec[], auth: boolean): void {
  const sessionId = rng(32);
  const n = specs.length;
  const parties = specs.map(
    (spec, i) =>
      new rt.Party(spec, {
        self: i,
        n,
        sessionId,
        rng,
        ...(auth
          ? { auth: sessionAuth({ parties: idKeys.slice(0, n), self: i, secretKey: seeds[i] as Uint8Array }) }
          : {}),
      }),
  );
  const r = rt.simulate(parties) as { aborted: unknown[] };
  if (r.aborted.some(Boolean)) throw new Error('aborted');
}

function interleaved(names: readonly string[], fns: readonly (() => void)[]): number[] {
  const samples = names.map(() => [] as number[]);
  for (let i = -2; i < N; i++) {
    fns.forEach((fn, k) => {
      const t0 = performance.now();
      fn();
      if (i >= 0) samples[k]?.push(performance.now() - t0);
    });
  }
  return names.map((name, k) => {
    const f = summarise(name, samples[k] ?? []);
    report(f);
    return f.median;
  });
}

const here: Runtime = { Party, simulate };
const cggmpShares = fixtureSet.map((j) => keyShareFromJson(j));
const frostShares = (() => {
  const sessionId = rng(32);
  const parties = [0, 1, 2].map(
    (i) => new Party(dkgProtocol({ suite: 'ed25519', threshold: 2 }), { self: i, n: 3, sessionId, rng }),
  );
  return simulate(parties).outputs as FrostShare[];
})();
const frostSigners = frostShares.slice(0, 2).map((s) => s.identifier);

interface Baseline {
  rt: Runtime;
  presignSpecs: () => AnySpec[];
  frostSpecs: () => AnySpec[];
}

async function baseline(dir: string): Promise<Baseline> {
  const load = (pkg: string) => import(pathToFileURL(join(dir, 'packages', pkg, 'dist', 'index.js')).href);
  const [crypto, cggmp, frost] = await Promise.all([load('crypto'), load('cggmp'), load('frost')]);
  const shares = fixtureSet.map((j) => cggmp.keyShareFromJson(j));
  // the FROST key shares are plain data: the same shares in the baseline's format
  const fShares = frostShares.map((s) => frost.decodeKeyShare(frostEncode(s)));
  return {
    rt: { Party: crypto.Party, simulate: crypto.simulate },
    presignSpecs: () => [0, 1, 2].map((i) => cggmp.presignProtocol({ share: shares[i], signers: [0, 1, 2] })),
    frostSpecs: () =>
      fShares
        .slice(0, 2)
        .map((keyShare: unknown) => frost.signProtocol({ keyShare, signers: frostSigners, message: msg })),
  };
}

const presignSpecs = (): AnySpec[] =>
  [0, 1, 2].map((i) => presignProtocol({ share: cggmpShares[i] as CggmpShare, signers: [0, 1, 2] }) as AnySpec);
const frostSpecs = (): AnySpec[] =>
  frostShares.slice(0, 2).map((keyShare) => signProtocol({ keyShare, signers: frostSigners, message: msg }) as AnySpec);

const base = BASE ? await baseline(BASE) : undefined;
const ratio = (name: string, r: number) =>
  report({ name, unit: 'ratio', median: +r.toFixed(3), p95: +r.toFixed(3), n: 1 });

for (const [label, specs, baseSpecs] of [
  ['blame.presign.s112.2of3', presignSpecs, base?.presignSpecs],
  ['blame.frost.sign.ed25519.2of3', frostSpecs, base?.frostSpecs],
] as const) {
  const names = [`${label}.after`, `${label}.afterNoAuth`];
  const fns = [() => runAll(here, specs(), true), () => runAll(here, specs(), false)];
  if (base && baseSpecs) {
    names.unshift(`${label}.before`);
    fns.unshift(() => runAll(base.rt, baseSpecs(), false));
  }
  const medians = interleaved(names, fns);
  if (base) ratio(`${label}.ratio`, (medians[1] as number) / (medians[0] as number));
  ratio(`${label}.authOverhead`, (medians[base ? 1 : 0] as number) / (medians[base ? 2 : 1] as number));
}
