/**
 * CGGMP21 core-share resharing (packages/cggmp/src/reshare.ts): same public key and chain code,
 * then new aux info among the new set (auxInfoProtocol) and `validateKeyShare({ core, aux })`,
 * then presigning and signing with t' of the new set (TEST-ONLY safe primes from the committed
 * fixture); t'−1 new shares and old shares mixed with new ones do not reconstruct the key.
 */
import { secp256k1Group as G, type Interceptor, Party, simulate } from '@custodian/crypto';
import { reconstructSecretForTest, seededRandom } from '@custodian/crypto/testing';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import {
  type AuxInfo,
  type CoreKeyShare,
  type EcdsaReshareOutput,
  type EcdsaSignature,
  type KeyShare,
  type Presignature,
  reshareProtocol,
  validateKeyShare,
} from '../src/index.js';
import { fixtureShares, runAux, runPresign, runSign, SECURITY_112, sid } from './helpers.js';

const CONTEXT = new Uint8Array(32).fill(3);

/** One session party: `old` = index of its old share (it deals), `newIndex` = its new key index. */
interface Seat {
  readonly old?: number;
  readonly newIndex?: number;
}

function runEcdsaReshare(
  old: readonly CoreKeyShare[],
  seats: readonly Seat[],
  newThreshold: number,
  label: string,
  opts: { intercept?: Interceptor; perParty?: (k: number) => Partial<Parameters<typeof reshareProtocol>[0]> } = {},
) {
  const first = old[0] as CoreKeyShare;
  const parties = seats.map((s) => ({
    ...(s.old !== undefined ? { oldIndex: s.old } : {}),
    ...(s.newIndex !== undefined ? { newIndex: s.newIndex } : {}),
  }));
  const newN = seats.filter((s) => s.newIndex !== undefined).length;
  const sessionId = sid(`reshare-${label}`);
  const ps = seats.map(
    (s, k) =>
      new Party(
        reshareProtocol({
          ...(s.old !== undefined ? { core: old[s.old] as CoreKeyShare } : {}),
          parties,
          newN,
          newThreshold,
          expectedPublicKey: first.publicKey,
          expectedChainCode: first.chainCode,
          context: CONTEXT,
          ...(opts.perParty ? opts.perParty(k) : {}),
        }),
        { self: k, n: seats.length, sessionId, rng: seededRandom(`${label}-rs${k}`) },
      ),
  );
  return simulate(ps, opts.intercept ? { intercept: opts.intercept } : {});
}

function newCores(r: ReturnType<typeof runEcdsaReshare>): CoreKeyShare[] {
  if (r.aborted.some((a) => a)) throw new Error(`reshare aborted: ${JSON.stringify(r.aborted.map((a) => a?.reason))}`);
  return (r.outputs as EcdsaReshareOutput[]).flatMap((o) => (o.core ? [o.core] : [])).sort((a, b) => a.i - b.i);
}

const CASES: { name: string; set: '2of3' | '3of5'; seats: Seat[]; tNew: number; signers: number[] }[] = [
  {
    name: '2-of-3 → 3-of-5',
    set: '2of3',
    seats: [{ old: 0 }, { old: 2, newIndex: 0 }, { newIndex: 1 }, { newIndex: 2 }, { newIndex: 3 }, { newIndex: 4 }],
    tNew: 3,
    signers: [1, 2, 4],
  },
  {
    name: '3-of-5 → 2-of-3',
    set: '3of5',
    seats: [{ old: 0, newIndex: 0 }, { old: 1 }, { old: 2, newIndex: 1 }, { old: 3, newIndex: 2 }, { old: 4 }],
    tNew: 2,
    signers: [0, 2],
  },
];

describe('CGGMP21 core-share reshare', () => {
  it.each(CASES)('$name: same key, new aux info, t′ of the new set presign and sign', (c) => {
    const oldFull = fixtureShares(c.set);
    const old = oldFull.map((s) => s.core);
    const first = old[0] as CoreKeyShare;
    const r = runEcdsaReshare(old, c.seats, c.tNew, c.name);
    const cores = newCores(r);
    const newN = cores.length;
    const secret = reconstructSecretForTest(
      G,
      old.slice(0, first.t).map((s) => BigInt(s.i + 1)),
      old.slice(0, first.t).map((s) => s.x),
    );
    for (const core of cores) {
      expect(core.publicKey.equals(first.publicKey)).toBe(true);
      expect(core.chainCode).toEqual(first.chainCode);
      expect(core.t).toBe(c.tNew);
      expect(core.n).toBe(newN);
      expect(core.rid).toEqual((cores[0] as CoreKeyShare).rid);
    }
    for (const o of r.outputs as EcdsaReshareOutput[]) {
      expect(o.publicShares.map((X) => G.encodePoint(X))).toEqual(
        (cores[0] as CoreKeyShare).publicShares.map((X) => G.encodePoint(X)),
      );
    }
    const ids = cores.map((s) => BigInt(s.i + 1));
    const xs = cores.map((s) => s.x);
    expect(reconstructSecretForTest(G, ids.slice(-c.tNew), xs.slice(-c.tNew))).toBe(secret);
    expect(reconstructSecretForTest(G, ids.slice(0, c.tNew - 1), xs.slice(0, c.tNew - 1))).not.toBe(secret);
    expect(
      reconstructSecretForTest(G, ids.slice(0, c.tNew), [(old[0] as CoreKeyShare).x, ...xs.slice(1, c.tNew)]),
    ).not.toBe(secret);

    // new aux info among the new set, then a full key share
    const aux = runAux(newN, SECURITY_112, `reshare-aux-${c.name}`);
    expect(aux.aborted.every((a) => a === undefined)).toBe(true);
    const shares: KeyShare[] = cores.map((core, i) => validateKeyShare({ core, aux: aux.outputs[i] as AuxInfo }));

    const pre = runPresign(shares, c.signers, `reshare-pre-${c.name}`);
    expect(pre.aborted.every((a) => a === undefined)).toBe(true);
    const digest = new Uint8Array(32).fill(0x5a);
    const sigs = runSign(pre.outputs as Presignature[], digest, `reshare-sign-${c.name}`);
    expect(sigs.aborted.every((a) => a === undefined)).toBe(true);
    const sig = sigs.outputs[0] as EcdsaSignature;
    expect(sig.publicKey).toEqual(G.encodePoint(first.publicKey));
    expect(secp256k1.verify(sig.compact, digest, sig.publicKey, { prehash: false })).toBe(true);
  });
});

export { newCores, runEcdsaReshare, type Seat };
