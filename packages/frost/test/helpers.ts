/** Test helpers: run whole ceremonies in memory with the runtime's simulator. */
import { type Interceptor, Party, type RandomSource, simulate } from '@custodian/crypto';
import { ed25519AuthsForTest, seededRandom } from '@custodian/crypto/testing';
import {
  dkgProtocol,
  type KeyShare,
  refreshProtocol,
  type SignOptions,
  type SignOutput,
  type SuiteName,
  signProtocol,
} from '../src/index.js';

export const sid = (label: string): Uint8Array => new TextEncoder().encode(`session:${label}`.padEnd(32, '.'));

export function runDkg(
  suite: SuiteName,
  t: number,
  n: number,
  seed: string,
  opts: {
    intercept?: Interceptor;
    rng?: (i: number) => RandomSource;
    identifiers?: bigint[];
    /** Run with signed broadcast statements (`ed25519AuthsForTest(n)`). */
    signed?: boolean;
  } = {},
) {
  const { auths } = ed25519AuthsForTest(n);
  const parties = Array.from(
    { length: n },
    (_, i) =>
      new Party(dkgProtocol({ suite, threshold: t, ...(opts.identifiers ? { identifiers: opts.identifiers } : {}) }), {
        self: i,
        n,
        sessionId: sid(`dkg:${seed}`),
        rng: opts.rng ? opts.rng(i) : seededRandom(`${seed}:${i}`),
        ...(opts.signed ? { auth: auths[i] } : {}),
      }),
  );
  return simulate(parties, opts.intercept ? { intercept: opts.intercept } : {});
}

export function dkgShares(suite: SuiteName, t: number, n: number, seed: string): KeyShare[] {
  const r = runDkg(suite, t, n, seed);
  if (r.aborted.some((a) => a)) throw new Error(`dkg aborted: ${JSON.stringify(r.aborted)}`);
  return r.outputs as KeyShare[];
}

export function runSign(
  shares: readonly KeyShare[],
  signerIdx: readonly number[],
  message: Uint8Array,
  seed: string,
  extra: Partial<Omit<SignOptions, 'keyShare' | 'signers' | 'message'>> & {
    intercept?: Interceptor;
    rng?: (k: number) => RandomSource;
    perParty?: (k: number) => Partial<SignOptions>;
  } = {},
) {
  const signers = signerIdx.map((i) => (shares[i] as KeyShare).identifier);
  const { intercept, rng, perParty, ...tweak } = extra;
  const parties = signerIdx.map(
    (i, k) =>
      new Party(
        signProtocol({ keyShare: shares[i] as KeyShare, signers, message, ...tweak, ...(perParty ? perParty(k) : {}) }),
        {
          self: k,
          n: signerIdx.length,
          sessionId: sid(`sign:${seed}`),
          rng: rng ? rng(k) : seededRandom(`${seed}:s${k}`),
        },
      ),
  );
  return simulate(parties, intercept ? { intercept } : {});
}

export function signOk(r: ReturnType<typeof runSign>): SignOutput {
  if (r.aborted.some((a) => a)) throw new Error(`sign aborted: ${JSON.stringify(r.aborted)}`);
  const out = r.outputs[0] as SignOutput;
  return out;
}

export function runRefresh(shares: readonly KeyShare[], seed: string, intercept?: Interceptor) {
  const parties = shares.map(
    (s, i) =>
      new Party(refreshProtocol({ keyShare: s }), {
        self: i,
        n: shares.length,
        sessionId: sid(`refresh:${seed}`),
        rng: seededRandom(`${seed}:r${i}`),
      }),
  );
  return simulate(parties, intercept ? { intercept } : {});
}

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
export const unhex = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h, 'hex'));
