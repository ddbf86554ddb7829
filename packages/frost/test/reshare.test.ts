/**
 * FROST resharing (packages/frost/src/reshare.ts over @custodian/crypto reshareSpec): old set →
 * new set with a new threshold for every suite, through the runtime's simulator. Same group key
 * and chain code; any t' new shares sign (verified with noble; Taproot on the BIP340 path);
 * t'−1 new shares and old shares mixed with new ones do not reconstruct the key.
 */
import { deriveEd25519, deriveSecp256k1, type Interceptor, Party, simulate } from '@custodian/crypto';
import { reconstructSecretForTest, seededRandom } from '@custodian/crypto/testing';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1_FROST } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import {
  type FrostReshareOutput,
  getSuite,
  type KeyShare,
  reshareProtocol,
  type SuiteName,
  taprootTweak,
} from '../src/index.js';
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

describe.each(SUITES)('FROST %s reshare keeps every address', (suite) => {
  it('3-of-4 → 3-of-4 (one replaced): derived keys (and Taproot outputs) from the ORIGINAL key and chain code verify', () => {
    const old = dkgShares(suite, 3, 4, `addr:${suite}`);
    const pk = (old[0] as KeyShare).groupPublicKey;
    const chainCode = (old[0] as KeyShare).chainCode;
    const seats: Seat[] = [{ old: 0, newId: 1n }, { old: 1, newId: 2n }, { old: 2, newId: 3n }, { newId: 4n }];
    const fresh = newShares(runFrostReshare(old, seats, 3, `addr:${suite}`));
    const path = 'm/44/0/7';
    const child =
      suite === 'ed25519'
        ? deriveEd25519(pk, chainCode, path).publicKey
        : deriveSecp256k1(pk, chainCode, path).publicKey;
    const m = new Uint8Array(32).fill(7);
    // the replaced member (new id 4) signs with two who stayed
    const derived = signOk(runSign(fresh, [1, 2, 3], m, `addr-d:${suite}`, { derivationPath: path }));
    expect(derived.verifyingKey).toEqual(suite === 'secp256k1-tr' ? child.slice(1) : child);
    expect(verify(suite, derived.signature, m, derived.verifyingKey)).toBe(true);
    if (suite === 'secp256k1-tr') {
      const merkleRoot = new Uint8Array(0);
      const tr = signOk(runSign(fresh, [0, 2, 3], m, 'addr-tr', { derivationPath: path, taproot: { merkleRoot } }));
      expect(tr.verifyingKey).toEqual(taprootTweak(child.slice(1), merkleRoot).outputKey);
      expect(schnorr.verify(tr.signature, m, tr.verifyingKey)).toBe(true);
    }
  });
});

/** old 2-of-3, all three deal and stay; one new party (runtime index 3); t' = 3. */
const MIS_SEATS: Seat[] = [{ old: 0, newId: 1n }, { old: 1, newId: 2n }, { old: 2, newId: 3n }, { newId: 4n }];
const HONEST = [0, 2, 3];

function culpritsOf(r: ReturnType<typeof runFrostReshare>, k: number): number[] | undefined {
  return r.aborted[k]?.culprits.map((c) => c.party);
}

describe.each(['ed25519', 'secp256k1'] as SuiteName[])(
  'FROST %s reshare misbehaviour names exactly the culprit',
  (suite) => {
    const G = getSuite(suite).group;
    const old = dkgShares(suite, 2, 3, `reshare-mis:${suite}`);
    const noOutput = (r: ReturnType<typeof runFrostReshare>) =>
      expect(r.outputs.every((o) => o === undefined)).toBe(true);

    it('a bad p2p share: its receiver names the dealer', () => {
      const r = runFrostReshare(old, MIS_SEATS, 3, `bad-share:${suite}`, {
        intercept: (d) => {
          const m = d.message;
          if (m.from !== 1 || m.round !== 0 || m.kind !== 'p2p' || m.to !== 3) return [d];
          const s = G.decodeScalar((m.body as { share: Uint8Array }).share, 'share', { allowZero: true });
          return [{ ...d, message: { ...m, body: { share: G.encodeScalar(G.mod(s + 1n)) } } }];
        },
      });
      expect(r.aborted[3]?.culprits).toMatchObject([
        { party: 1, reason: 'reshare share sent to party 3 fails the Feldman check', check: 'reshare.feldman' },
      ]);
      noOutput(r);
    });

    it('a shifted key (A_0 ≠ λ_i·Y_i, shares consistent with it): every party names the dealer', () => {
      const r = runFrostReshare(old, MIS_SEATS, 3, `shift:${suite}`, {
        intercept: (d) => {
          const m = d.message;
          if (m.from !== 1 || m.round !== 0) return [d];
          const b = m.body as Record<string, unknown>;
          if (m.kind === 'p2p') {
            const s = G.decodeScalar(b.share as Uint8Array, 'share', { allowZero: true });
            return [{ ...d, message: { ...m, body: { share: G.encodeScalar(G.mod(s + 1n)) } } }];
          }
          const c = [...(b.commitment as Uint8Array[])];
          c[0] = G.encodePoint(G.decodePoint(c[0] as Uint8Array, 'A0').add(G.G));
          return [{ ...d, message: { ...m, body: { ...b, commitment: c } } }];
        },
      });
      for (const k of HONEST) {
        expect(r.aborted[k]?.culprits).toMatchObject([
          { party: 1, reason: 'A_0 ≠ λ_i·Y_i (the dealing would shift the key)' },
        ]);
      }
      noOutput(r);
    });

    it('a wrong chain code in the old package: every party names the dealer', () => {
      const bad = { ...(old[1] as KeyShare), chainCode: new Uint8Array(32).fill(0xcc) };
      const r = runFrostReshare(old, MIS_SEATS, 3, `chain:${suite}`, {
        perParty: (k) => (k === 1 ? { keyShare: bad } : {}),
      });
      for (const k of HONEST) expect(culpritsOf(r, k)).toEqual([1]);
      expect(r.aborted[3]?.culprits[0]?.reason).toBe('old public package has a different chain code than expected');
      noOutput(r);
    });

    it('a different old package (verifying shares): the dealers name the dealer, the new party names nobody', () => {
      const r = runFrostReshare(old, MIS_SEATS, 3, `oldpkg:${suite}`, {
        intercept: (d) => {
          const m = d.message;
          if (m.from !== 1 || m.round !== 0 || m.kind !== 'broadcast') return [d];
          const b = m.body as { old: Record<string, unknown> };
          const ys = [...(b.old.verifyingShares as Uint8Array[])];
          ys[0] = G.encodePoint(G.decodePoint(ys[0] as Uint8Array, 'Y').add(G.G));
          return [{ ...d, message: { ...m, body: { ...b, old: { ...b.old, verifyingShares: ys } } } }];
        },
      });
      // holders know the package and name the dealer that deviates
      for (const k of [0, 2]) {
        expect(r.aborted[k]?.culprits).toMatchObject([
          { party: 1, reason: 'old public package differs from the other dealers’' },
        ]);
      }
      // party 3 is new to the key: it cannot tell which package is right, so it names nobody
      expect(r.aborted[3]?.culprits).toMatchObject([]);
      expect(r.aborted[3]?.reason).toMatch(/old public packages disagree/);
      noOutput(r);
    });

    it('a wrong context (another key change): every honest party names the dealer', () => {
      const r = runFrostReshare(old, MIS_SEATS, 3, `ctx:${suite}`, {
        perParty: (k) => (k === 1 ? { context: new Uint8Array(32).fill(9) } : {}),
      });
      for (const k of HONEST) expect(culpritsOf(r, k)).toEqual([1]);
      expect(r.aborted[0]?.culprits[0]?.reason).toMatch(/^reshare context differs/);
      noOutput(r);
    });

    it('a new party expecting another key refuses every dealer (a dealer cannot substitute the key)', () => {
      const other = dkgShares(suite, 2, 3, `reshare-other:${suite}`)[0] as KeyShare;
      const r = runFrostReshare(old, MIS_SEATS, 3, `expect:${suite}`, {
        perParty: (k) => (k === 3 ? { expectedPublicKey: other.groupPublicKey } : {}),
      });
      // its context digest differs too (it binds the expected key): it names all three dealers
      expect(culpritsOf(r, 3)).toEqual([0, 1, 2]);
      noOutput(r);
    });

    it('a new party confirming a different package is named by everyone else', () => {
      const r = runFrostReshare(old, MIS_SEATS, 3, `confirm:${suite}`, {
        intercept: (d) => {
          const m = d.message;
          if (m.from !== 3 || m.round !== 1) return [d];
          return [{ ...d, message: { ...m, body: { confirm: new Uint8Array(32).fill(1) } } }];
        },
      });
      for (const k of [0, 1, 2]) {
        expect(r.aborted[k]?.culprits).toMatchObject([
          { party: 3, reason: 'confirmed a different reshared public key package' },
        ]);
      }
      noOutput(r);
    });

    it('a dealer sending an empty share to a new party is blamed as malformed', () => {
      const r = runFrostReshare(old, MIS_SEATS, 3, `empty:${suite}`, {
        intercept: (d) =>
          d.message.from === 2 && d.message.kind === 'p2p' && d.message.to === 3
            ? [{ ...d, message: { ...d.message, body: { share: new Uint8Array(0) } } }]
            : [d],
      });
      expect(culpritsOf(r, 3)).toEqual([2]);
      noOutput(r);
    });
  },
);

describe('FROST reshare: a party lost at any round leaves the old set working; a retry completes', () => {
  const suite: SuiteName = 'secp256k1-tr';
  const old = dkgShares(suite, 2, 3, 'reshare-crash');
  const m = te.encode('old set still signs');
  it.each([
    [0, 'dealer 1 dies before round 0', 1],
    [1, 'new party 3 dies before confirming', 3],
    [2, 'dealer 0 dies before the echo round', 0],
  ])('round %i: %s', (round, _name, victim) => {
    // the victim sends nothing from `round` on (kill -9 at that point)
    const r = runFrostReshare(old, MIS_SEATS, 3, `crash:${round}`, {
      intercept: (d) => (d.message.from === victim && d.message.round >= round ? [] : [d]),
    });
    // nobody but the killed party itself (whose memory is gone) holds an output
    expect(r.outputs.every((o, k) => o === undefined || k === victim)).toBe(true);
    const out = signOk(runSign(old, [0, 2], m, `crash-old:${round}`));
    expect(verify(suite, out.signature, m, out.verifyingKey)).toBe(true);
    const retry = newShares(runFrostReshare(old, MIS_SEATS, 3, `crash-retry:${round}`));
    expect(retry.map((s) => s.groupPublicKey)).toEqual(Array(4).fill((old[0] as KeyShare).groupPublicKey));
  });

  it('an old share does not sign together with new ones (the old holder is named)', () => {
    const fresh = newShares(runFrostReshare(old, MIS_SEATS, 3, 'mix-sign'));
    const mixed = fresh.map((s, i) =>
      i === 0
        ? {
            ...(old[0] as KeyShare),
            ...{
              threshold: s.threshold,
              identifiers: s.identifiers,
              verifyingShares: s.verifyingShares,
              vssCommitment: s.vssCommitment,
            },
          }
        : s,
    );
    const r = runSign(mixed, [0, 1, 2], m, 'mix-sign');
    expect(r.aborted[1]?.culprits.map((c) => c.party)).toEqual([0]);
  });
});
