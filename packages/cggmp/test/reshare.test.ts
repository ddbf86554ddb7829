/**
 * CGGMP21 core-share resharing (packages/cggmp/src/reshare.ts): same public key and chain code,
 * then new aux info among the new set (auxInfoProtocol) and `validateKeyShare({ core, aux })`,
 * then presigning and signing with t' of the new set (TEST-ONLY safe primes from the committed
 * fixture); t'−1 new shares and old shares mixed with new ones do not reconstruct the key.
 */
import { deriveSecp256k1, secp256k1Group as G, type Interceptor, Party, simulate } from '@custodian/crypto';
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
import { fixtureShares, runAux, runKeygen, runParties, runPresign, runSign, SECURITY_112, sid } from './helpers.js';

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

const CASES: { name: string; set: '2of3' | '3of5'; seats: Seat[]; tNew: number; signers: number[]; path?: string }[] = [
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
    path: 'm/44/60/0/0/7',
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
    // with a path: the child key derived from the ORIGINAL key and chain code (the address) signs
    const child = c.path ? deriveSecp256k1(G.encodePoint(first.publicKey), first.chainCode, c.path) : undefined;
    const sigs = runSign(pre.outputs as Presignature[], digest, `reshare-sign-${c.name}`, {
      tweak: child?.tweak ?? 0n,
    });
    expect(sigs.aborted.every((a) => a === undefined)).toBe(true);
    const sig = sigs.outputs[0] as EcdsaSignature;
    expect(sig.publicKey).toEqual(child?.publicKey ?? G.encodePoint(first.publicKey));
    expect(secp256k1.verify(sig.compact, digest, sig.publicKey, { prehash: false })).toBe(true);
  });
});

export { newCores, runEcdsaReshare, type Seat };

describe('CGGMP21 core-share reshare: 3-of-4 → 3-of-4 with one member replaced, and misbehaviour', () => {
  const kg = runKeygen(3, 4, 'reshare-kg-3of4');
  const old = kg.outputs as CoreKeyShare[];
  // parties 0, 1, 2 deal and keep their index; party 3 is replaced by a new machine (runtime 3)
  const seats: Seat[] = [{ old: 0, newIndex: 0 }, { old: 1, newIndex: 1 }, { old: 2, newIndex: 2 }, { newIndex: 3 }];

  it('same key and chain code; any 3 new shares reconstruct, 2 do not, the old share of the replaced member does not mix', () => {
    expect(kg.aborted.every((a) => a === undefined)).toBe(true);
    const cores = newCores(runEcdsaReshare(old, seats, 3, 'replace-3of4'));
    const first = old[0] as CoreKeyShare;
    const secret = reconstructSecretForTest(
      G,
      [1n, 2n, 3n],
      old.slice(0, 3).map((s) => s.x),
    );
    for (const c of cores) {
      expect(c.publicKey.equals(first.publicKey)).toBe(true);
      expect(c.chainCode).toEqual(first.chainCode);
      expect(c.rid).not.toEqual(first.rid);
    }
    const x = cores.map((c) => c.x);
    expect(reconstructSecretForTest(G, [2n, 3n, 4n], x.slice(1))).toBe(secret);
    expect(reconstructSecretForTest(G, [1n, 2n, 4n], [x[0], x[1], x[3]] as bigint[])).toBe(secret);
    expect(reconstructSecretForTest(G, [1n, 4n], [x[0], x[3]] as bigint[])).not.toBe(secret);
    expect(reconstructSecretForTest(G, [1n, 2n, 4n], [x[0], x[1], (old[3] as CoreKeyShare).x] as bigint[])).not.toBe(
      secret,
    );
  });

  it('a bad p2p share is named by its receiver; a shifted key by everyone', () => {
    const bad = runEcdsaReshare(old, seats, 3, 'bad-share-3of4', {
      intercept: (d) => {
        const m = d.message;
        if (m.from !== 2 || m.kind !== 'p2p' || m.to !== 3) return [d];
        const s = G.decodeScalar((m.body as { share: Uint8Array }).share, 's', { allowZero: true });
        return [{ ...d, message: { ...m, body: { share: G.encodeScalar(G.mod(s + 5n)) } } }];
      },
    });
    expect(bad.aborted[3]?.culprits).toMatchObject([
      { party: 2, reason: 'reshare share sent to party 3 fails the Feldman check', check: 'reshare.feldman' },
    ]);
    expect(bad.outputs.every((o) => o === undefined)).toBe(true);

    const shift = runEcdsaReshare(old, seats, 3, 'shift-3of4', {
      intercept: (d) => {
        const m = d.message;
        if (m.from !== 0 || m.round !== 0) return [d];
        const b = m.body as Record<string, unknown>;
        if (m.kind === 'p2p') {
          const s = G.decodeScalar(b.share as Uint8Array, 's', { allowZero: true });
          return [{ ...d, message: { ...m, body: { share: G.encodeScalar(G.mod(s + 1n)) } } }];
        }
        const c = [...(b.commitment as Uint8Array[])];
        c[0] = G.encodePoint(G.decodePoint(c[0] as Uint8Array, 'A0').add(G.G));
        return [{ ...d, message: { ...m, body: { ...b, commitment: c } } }];
      },
    });
    for (const k of [1, 2, 3]) expect(shift.aborted[k]?.culprits.map((c) => c.party)).toEqual([0]);
  });

  it('a new party configured with another key refuses; a dealer with another chain code is named', () => {
    const other = (runKeygen(3, 4, 'reshare-kg-other').outputs[0] as CoreKeyShare).publicKey;
    const r1 = runEcdsaReshare(old, seats, 3, 'expect-3of4', {
      perParty: (k) => (k === 3 ? { expectedPublicKey: other } : {}),
    });
    expect(r1.aborted[3]?.culprits.map((c) => c.party)).toEqual([0, 1, 2]);
    const r2 = runEcdsaReshare(old, seats, 3, 'chain-3of4', {
      perParty: (k) => (k === 1 ? { core: { ...(old[1] as CoreKeyShare), chainCode: new Uint8Array(32) } } : {}),
    });
    for (const k of [0, 2, 3]) {
      expect(r2.aborted[k]?.culprits).toMatchObject([
        {
          party: 1,
          reason: 'old public package has a different chain code than expected',
          check: 'reshare.old-package',
        },
      ]);
    }
  });

  it('refuses bad roles at construction: new indices not 0…n′−1, fewer dealers than t', () => {
    const base = {
      newN: 4,
      newThreshold: 3,
      expectedPublicKey: (old[0] as CoreKeyShare).publicKey,
      expectedChainCode: (old[0] as CoreKeyShare).chainCode,
      context: new Uint8Array(32),
    };
    expect(() =>
      reshareProtocol({
        ...base,
        parties: [{ oldIndex: 0, newIndex: 0 }, { newIndex: 0 }, { newIndex: 2 }, { newIndex: 3 }],
      }),
    ).toThrow(RangeError);
    expect(() => reshareProtocol({ ...base, parties: [{ oldIndex: 0, newIndex: 4 }] })).toThrow(RangeError);
    const two = [{ oldIndex: 0, newIndex: 0 }, { oldIndex: 1, newIndex: 1 }, { newIndex: 2 }, { newIndex: 3 }];
    // dealers refuse at start: a RangeError is a caller error, which the runtime does not turn into blame
    expect(() =>
      runParties(
        (i) => reshareProtocol({ ...base, parties: two, ...(i < 2 ? { core: old[i] as CoreKeyShare } : {}) }),
        4,
        'too-few',
      ),
    ).toThrow('reshare: 2 dealers, the old threshold is 3');
  });
});
