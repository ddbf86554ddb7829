/** Test helpers for @custodian/cggmp: committed TEST-ONLY safe primes and in-memory runs. */
import { readFileSync } from 'node:fs';
import {
  type Canonical,
  secp256k1Group as G,
  type Interceptor,
  Party,
  type ProtocolSpec,
  type Secp256k1Point,
  simulate,
} from '@custodian/crypto';
import { ed25519AuthsForTest, seededRandom } from '@custodian/crypto/testing';
import { SECURITY_112, SECURITY_128, type SecurityLevel } from '@custodian/paillier';
import {
  type AuxInfo,
  auxInfoProtocol,
  type CombinerShare,
  type CoreKeyShare,
  combinerShare,
  type KeyShare,
  keygenProtocol,
  keyShareFromJson,
  type Presignature,
  presignProtocol,
  type SignOptions,
  signingContext,
  signProtocol,
  signShare,
} from '../src/index.js';

const fixture = JSON.parse(
  readFileSync(new URL('../../paillier/test/fixtures/test-only-safe-primes.json', import.meta.url), 'utf8'),
) as { safePrimes1024: string[]; safePrimes1536: string[] };

/** TEST-ONLY public safe primes for `level`: pairs (p, q) for party i. */
export function testPrimes(level: SecurityLevel, i: number): { p: bigint; q: bigint } {
  const list = level === SECURITY_112 ? fixture.safePrimes1024 : fixture.safePrimes1536;
  const p = list[(2 * i) % list.length];
  const q = list[(2 * i + 1) % list.length];
  if (!p || !q) throw new Error('fixture exhausted');
  return { p: BigInt(`0x${p}`), q: BigInt(`0x${q}`) };
}

export const sid = (label: string) => seededRandom(`sid-${label}`)(32);

export function runParties<O>(
  // biome-ignore lint/suspicious/noExplicitAny: each protocol has its own state type
  make: (i: number) => ProtocolSpec<any, O>,
  n: number,
  label: string,
  intercept?: Interceptor,
) {
  const sessionId = sid(label);
  const parties = Array.from(
    { length: n },
    (_, i) => new Party(make(i), { self: i, n, sessionId, rng: seededRandom(`${label}-${i}`) }),
  );
  return simulate(parties, intercept ? { intercept } : {});
}

export function runAux(n: number, level: SecurityLevel = SECURITY_112, label = `aux-${n}`, intercept?: Interceptor) {
  return runParties<AuxInfo>(
    (i) => auxInfoProtocol({ level, primes: testPrimes(level, i), checkPrimality: false }),
    n,
    label,
    intercept,
  );
}

export function runKeygen(t: number, n: number, label = `kg-${t}-${n}`, intercept?: Interceptor) {
  return runParties<CoreKeyShare>(() => keygenProtocol({ t }), n, label, intercept);
}

export { SECURITY_112, SECURITY_128 };

const keyShareFixture = JSON.parse(
  readFileSync(new URL('./fixtures/test-only-key-shares.json', import.meta.url), 'utf8'),
) as { sets: Record<string, unknown[]> };

/** TEST-ONLY key shares (SECURITY_112) from the committed fixture: '2of2', '2of3' or '3of5'. */
export function fixtureShares(set: '2of2' | '2of3' | '3of5'): KeyShare[] {
  const list = keyShareFixture.sets[set];
  if (!list) throw new Error(`no fixture set ${set}`);
  return list.map((j) => keyShareFromJson(j));
}

/** Run presigning among `signers` (key indices) of `shares`. */
export function runPresign(
  shares: readonly KeyShare[],
  signers: number[],
  label: string,
  intercept?: Interceptor,
  /** Signed broadcast statements with `ed25519AuthsForTest(signers.length)` by position. */
  signed = false,
) {
  const sessionId = sid(label);
  const { auths } = ed25519AuthsForTest(signers.length);
  const parties = signers.map(
    (s, pos) =>
      new Party(presignProtocol({ share: shares[s] as KeyShare, signers }), {
        self: pos,
        n: signers.length,
        sessionId,
        rng: seededRandom(`${label}-${pos}`),
        ...(signed ? { auth: auths[pos] } : {}),
      }),
  );
  return simulate(parties, intercept ? { intercept } : {});
}

/** What a cheating party changes in its round-2 output: its δ_i or its S_i (state and broadcast alike). */
export type Cheat = 'delta' | 'S';

/**
 * A malicious party: presigning run honestly except that, in round 2, it broadcasts δ_i + 1 (or
 * S_i + G) and keeps that value as its own, then takes part in identification like everyone (a
 * cheater that stops answering instead is left to the ceremony's timeout).
 */
function cheating(spec: ProtocolSpec<unknown, Presignature>, cheat: Cheat): ProtocolSpec<unknown, Presignature> {
  return {
    ...spec,
    rounds: spec.rounds.map((r, k) =>
      k !== 1
        ? r
        : {
            ...r,
            process(state, received, ctx) {
              const res = r.process(state, received, ctx);
              if (res.output !== undefined) return res;
              const st = res.state as { delta: bigint; S: Secp256k1Point };
              const b = res.send.broadcast as Record<string, Canonical>;
              if (cheat === 'delta') st.delta = G.mod(st.delta + 1n);
              else st.S = st.S.add(G.G);
              const broadcast =
                cheat === 'delta' ? { ...b, delta: G.encodeScalar(st.delta) } : { ...b, S: G.encodePoint(st.S) };
              return { state: st, send: { ...res.send, broadcast } };
            },
          },
    ),
  };
}

/** Presigning among `signers` where runtime index `cheater` (or each of a list) cheats with `cheat` (if given). */
export function runPresignCheating(
  shares: readonly KeyShare[],
  signers: number[],
  label: string,
  opts: { cheater?: number | readonly number[]; cheat?: Cheat; intercept?: Interceptor } = {},
) {
  const sessionId = sid(label);
  const parties = signers.map((s, pos) => {
    const spec = presignProtocol({ share: shares[s] as KeyShare, signers }) as ProtocolSpec<unknown, Presignature>;
    const cheats = ([] as number[]).concat(opts.cheater ?? []).includes(pos);
    const run = cheats && opts.cheat ? cheating(spec, opts.cheat) : spec;
    return new Party(run, { self: pos, n: signers.length, sessionId, rng: seededRandom(`${label}-${pos}`) });
  });
  return simulate(parties, opts.intercept ? { intercept: opts.intercept } : {});
}

/**
 * Every signer's σ_i of one digest, computed outside the runtime as a signer does, by position,
 * with the {@link CombinerShare} each hands a combiner without presigning values (the coordinator).
 */
export function signersShares(
  presigs: readonly Presignature[],
  digest: Uint8Array,
  tweak: bigint,
): { sigmas: Map<number, bigint>; given: CombinerShare[] } {
  const sigmas = new Map<number, bigint>();
  const given = presigs.map((p) => {
    const ctx = signingContext(p.public, digest, { tweak });
    const sigma = signShare(p, digest, { tweak }, ctx);
    sigmas.set(p.i, sigma);
    return combinerShare(sigma, ctx);
  });
  return { sigmas, given };
}

/** Run signing with one presignature handle per position (each is consumed). */
export function runSign(
  presigs: readonly Presignature[],
  digest: Uint8Array,
  label: string,
  /** `derived` (the child key of `tweak`) is given to the even positions only: both ways must agree on ρ. */
  opts: { tweak?: bigint; derived?: SignOptions['derived']; intercept?: Interceptor } = {},
) {
  const sessionId = sid(label);
  const parties = presigs.map(
    (p, pos) =>
      new Party(
        signProtocol({
          presignature: p,
          digest,
          tweak: opts.tweak ?? 0n,
          ...(opts.derived && pos % 2 === 0 ? { derived: opts.derived } : {}),
        }),
        {
          self: pos,
          n: presigs.length,
          sessionId,
          rng: seededRandom(`${label}-${pos}`),
        },
      ),
  );
  return simulate(parties, opts.intercept ? { intercept: opts.intercept } : {});
}

/** The handle type of these helpers (the package's source: a class with private fields is nominal, so a test elsewhere names this one, not the built package's). */
export type { Presignature } from '../src/index.js';
