/**
 * FROST resharing (packages/frost/src/reshare.ts over @custodian/crypto reshareSpec): old set →
 * new set with a new threshold for every suite, through the runtime's simulator. Same group key
 * and chain code; any t' new shares sign (verified with noble; Taproot on the BIP340 path);
 * t'−1 new shares and old shares mixed with new ones do not reconstruct the key.
 */
import { type Interceptor, Party, simulate } from '@custodian/crypto';
import { reconstructSecretForTest, seededRandom } from '@custodian/crypto/testing';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1_FROST } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { type FrostReshareOutput, getSuite, type KeyShare, reshareProtocol, type SuiteName } from '../src/index.js';
import { dkgShares, runSign, sid, signOk } from './helpers.js';

const te = new TextEncoder();
const CONTEXT = new Uint8Array(32).fill(7);

function verify(suite: SuiteName, sig: Uint8Array, m: Uint8Array, pk: Uint8Array): boolean {
  if (suite === 'ed25519') return ed25519.verify(sig, m, pk);
  if (suite === 'secp256k1-tr') return schnorr.verify(sig, m, pk);
  return secp256k1_FROST.verify(sig, m, pk);
}

/** One session party: `old` = index of its old key share (it deals), `newId` = its new identifier. */
export interface Seat {
  readonly old?: number;
  readonly newId?: bigint;
}

export function runFrostReshare(
  old: readonly KeyShare[],
  seats: readonly Seat[],
  newThreshold: number,
  seed: string,
  opts: {
    intercept?: Interceptor;
    perParty?: (k: number) => Partial<Parameters<typeof reshareProtocol>[0]>;
  } = {},
) {
  const first = old[0] as KeyShare;
  const parties = seats.map((s) => ({
    ...(s.old !== undefined ? { oldIdentifier: (old[s.old] as KeyShare).identifier } : {}),
    ...(s.newId !== undefined ? { newIdentifier: s.newId } : {}),
  }));
  const ps = seats.map(
    (s, k) =>
      new Party(
        reshareProtocol({
          suite: first.suite,
          ...(s.old !== undefined ? { keyShare: old[s.old] as KeyShare } : {}),
          parties,
          newThreshold,
          expectedPublicKey: first.groupPublicKey,
          expectedChainCode: first.chainCode,
          context: CONTEXT,
          ...(opts.perParty ? opts.perParty(k) : {}),
        }),
        { self: k, n: seats.length, sessionId: sid(`reshare:${seed}`), rng: seededRandom(`${seed}:rs${k}`) },
      ),
  );
  return simulate(ps, opts.intercept ? { intercept: opts.intercept } : {});
}

/** New key shares, ordered by new identifier. @throws when any party aborted */
export function newShares(r: ReturnType<typeof runFrostReshare>): KeyShare[] {
  if (r.aborted.some((a) => a)) throw new Error(`reshare aborted: ${JSON.stringify(r.aborted.map((a) => a?.reason))}`);
  return (r.outputs as FrostReshareOutput[])
    .flatMap((o) => (o.keyShare ? [o.keyShare] : []))
    .sort((a, b) => (a.identifier < b.identifier ? -1 : 1));
}

const SUITES: SuiteName[] = ['ed25519', 'secp256k1', 'secp256k1-tr'];

/** old (t, n), dealers (old indices), new ids with the old index they continue (if any), t'. */
const CASES: { name: string; t: number; n: number; seats: Seat[]; tNew: number }[] = [
  {
    name: '2-of-3 → 3-of-5 (dealers 0,2; old 1 and 2 stay)',
    t: 2,
    n: 3,
    seats: [{ old: 0 }, { old: 2, newId: 1n }, { newId: 2n }, { newId: 3n }, { newId: 4n }, { newId: 5n }],
    tNew: 3,
  },
  {
    name: '3-of-5 → 2-of-3 (all dealers, three of them stay)',
    t: 3,
    n: 5,
    seats: [{ old: 0, newId: 1n }, { old: 1 }, { old: 2, newId: 2n }, { old: 3, newId: 3n }, { old: 4 }],
    tNew: 2,
  },
  {
    name: '3-of-4 → 3-of-4, party 3 replaced',
    t: 3,
    n: 4,
    seats: [{ old: 0, newId: 1n }, { old: 1, newId: 2n }, { old: 2, newId: 3n }, { newId: 4n }],
    tNew: 3,
  },
];

describe.each(SUITES)('FROST %s reshare', (suite) => {
  it.each(CASES)('$name: same key and chain code, any t′ sign, fewer or mixed do not reconstruct', (c) => {
    const G = getSuite(suite).group;
    const old = dkgShares(suite, c.t, c.n, `reshare:${suite}:${c.t}:${c.n}`);
    const r = runFrostReshare(old, c.seats, c.tNew, `${suite}:${c.name}`);
    const fresh = newShares(r);
    const nNew = c.seats.filter((s) => s.newId !== undefined).length;
    expect(fresh.length).toBe(nNew);
    const pk = (old[0] as KeyShare).groupPublicKey;
    const secret = reconstructSecretForTest(
      G,
      old.slice(0, c.t).map((s) => s.identifier),
      old.slice(0, c.t).map((s) => s.signingShare),
    );
    for (const s of fresh) {
      expect(s.groupPublicKey).toEqual(pk);
      expect(s.chainCode).toEqual((old[0] as KeyShare).chainCode);
      expect(s.threshold).toBe(c.tNew);
      expect(s.epoch).toBe((old[0] as KeyShare).epoch + 1);
      expect(s.identifiers).toEqual(fresh.map((f) => f.identifier));
    }
    // every party (dealer-only ones too) got the same public package
    for (const o of r.outputs as FrostReshareOutput[]) {
      expect(o.publicPackage.vssCommitment).toEqual((fresh[0] as KeyShare).vssCommitment);
      expect(o.publicPackage.verifyingShares).toEqual((fresh[0] as KeyShare).verifyingShares);
    }
    const ids = fresh.map((s) => s.identifier);
    const xs = fresh.map((s) => s.signingShare);
    // any t' reconstruct (first and last window), t'−1 do not
    expect(reconstructSecretForTest(G, ids.slice(0, c.tNew), xs.slice(0, c.tNew))).toBe(secret);
    expect(reconstructSecretForTest(G, ids.slice(-c.tNew), xs.slice(-c.tNew))).toBe(secret);
    expect(reconstructSecretForTest(G, ids.slice(0, c.tNew - 1), xs.slice(0, c.tNew - 1))).not.toBe(secret);
    // an old share in place of a new one does not reconstruct
    const oldOf = old.find((o) => o.identifier === ids[0]) as KeyShare;
    if (oldOf) {
      const mixed = [oldOf.signingShare, ...xs.slice(1, c.tNew)];
      expect(reconstructSecretForTest(G, ids.slice(0, c.tNew), mixed)).not.toBe(secret);
    }
    // t' new shares sign (first and last window); Taproot verifies as BIP340 under the tweaked key
    const m = te.encode(`after reshare ${c.name}`);
    for (const signers of [
      Array.from({ length: c.tNew }, (_, k) => k),
      Array.from({ length: c.tNew }, (_, k) => nNew - 1 - k),
    ]) {
      const out = signOk(runSign(fresh, signers, m, `reshared:${suite}:${c.name}:${signers.join()}`));
      expect(verify(suite, out.signature, m, out.verifyingKey)).toBe(true);
    }
  });
});
