/**
 * Generic resharing (src/reshare.ts) on both groups through the simulator: a property test over
 * random old (t, n), new (t', n'), dealer subsets of size ≥ t and overlapping old/new sets — the
 * public key is kept, every party agrees on the new package, any t' new shares reconstruct the
 * secret and t'−1 do not; plus the session checks of `validateReshareRoles`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bigintToBytes,
  type Canonical,
  type Delivery,
  ed25519Group,
  type Group,
  type GroupPoint,
  type Interceptor,
  Party,
  type ResharePartyRole,
  type ReshareResult,
  reshareSpec,
  secp256k1Group,
  simulate,
  validateReshareRoles,
  vssDeal,
} from '../src/index.js';
import { reconstructSecretForTest, seededRandom } from '../src/testing.js';

interface Scenario {
  t: number;
  n: number;
  dealers: number[]; // old indices
  tNew: number;
  nNew: number;
  stay: number; // how many of the first dealers also receive a new share
  seed: number;
}

const scenario = fc
  .record({ n: fc.integer({ min: 1, max: 5 }), nNew: fc.integer({ min: 1, max: 5 }), seed: fc.nat() })
  .chain(({ n, nNew, seed }) =>
    fc.record({
      n: fc.constant(n),
      nNew: fc.constant(nNew),
      seed: fc.constant(seed),
      t: fc.integer({ min: 1, max: n }),
      tNew: fc.integer({ min: 1, max: nNew }),
      dealers: fc.shuffledSubarray(
        Array.from({ length: n }, (_, i) => i),
        { minLength: 1 },
      ),
      stay: fc.integer({ min: 0, max: Math.min(n, nNew) }),
    }),
  )
  .filter((s) => s.dealers.length >= s.t)
  // a session has at least 2 parties (dealers plus new-only parties)
  .filter((s) => s.dealers.length + s.nNew - Math.min(s.stay, s.dealers.length) >= 2) as fc.Arbitrary<Scenario>;

function run<P extends GroupPoint<P>>(G: Group<P>, s: Scenario, intercept?: Interceptor) {
  const rng = seededRandom(`prop:${G.name}:${s.seed}`);
  const secret = G.randomScalar(rng);
  const oldIds = Array.from({ length: s.n }, (_, i) => BigInt(3 * i + 2)); // not 1…n: any identifiers
  const dealing = vssDeal(G, secret, s.t, oldIds, rng);
  const pk = G.mulBase(secret);
  const old = {
    threshold: s.t,
    identifiers: oldIds,
    verifyingShares: dealing.shares.map((x) => G.mulBase(x)),
    publicKey: pk,
    chainCode: new Uint8Array(32).fill(5),
    epoch: 4,
  };
  // runtime parties: the dealers (the first `stay` of them also receive), then new-only parties
  const stay = Math.min(s.stay, s.dealers.length);
  const roles: (ResharePartyRole & { oldIndex?: number })[] = s.dealers.map((d, k) => ({
    oldIndex: d,
    oldIdentifier: oldIds[d] as bigint,
    ...(k < stay ? { newIdentifier: BigInt(100 + k) } : {}),
  }));
  for (let k = stay; k < s.nNew; k++) roles.push({ newIdentifier: BigInt(100 + k) });
  const parties = roles.map(({ oldIdentifier, newIdentifier }) => ({
    ...(oldIdentifier !== undefined ? { oldIdentifier } : {}),
    ...(newIdentifier !== undefined ? { newIdentifier } : {}),
  }));
  const sessionId = seededRandom(`sid:${s.seed}`)(32);
  const ps = roles.map(
    (r, k) =>
      new Party(
        reshareSpec({
          tag: 'custodian.test.reshare',
          group: G,
          ...(r.oldIndex !== undefined
            ? {
                dealer: {
                  share: dealing.shares[r.oldIndex] as bigint,
                  identifier: oldIds[r.oldIndex] as bigint,
                  old,
                },
              }
            : {}),
          parties,
          newThreshold: s.tNew,
          expectedPublicKey: pk,
          expectedChainCode: old.chainCode,
          context: new Uint8Array(32).fill(1),
        }),
        { self: k, n: roles.length, sessionId, rng: seededRandom(`${s.seed}:${k}`) },
      ),
  );
  return { result: simulate(ps, intercept ? { intercept } : {}), secret, pk };
}

describe.each([
  ['secp256k1', secp256k1Group],
  ['ed25519', ed25519Group],
] as const)('generic reshare on %s', (_name, G) => {
  it('property: key kept, one package, any t′ reconstruct, t′−1 do not', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const { result, secret, pk } = run(G as Group<never>, s);
        expect(result.aborted.every((a) => a === undefined)).toBe(true);
        const outs = result.outputs as ReshareResult<GroupPoint<never>>[];
        expect(outs.every((o) => o !== undefined)).toBe(true);
        const first = outs[0] as ReshareResult<GroupPoint<never>>;
        expect((first.commitments[0] as GroupPoint<never>).equals(pk as never)).toBe(true);
        expect(first.old.epoch).toBe(4);
        for (const o of outs) expect(o.confirm).toEqual(first.confirm);
        const shares = outs.flatMap((o) => (o.share !== undefined ? [[o.identifier as bigint, o.share] as const] : []));
        expect(shares.length).toBe(s.nNew);
        // a random t'-subset (rotate by seed) reconstructs; one fewer does not
        const rot = [...shares.slice(s.seed % s.nNew), ...shares.slice(0, s.seed % s.nNew)];
        const pick = rot.slice(0, s.tNew);
        expect(
          reconstructSecretForTest(
            G as Group<never>,
            pick.map((p) => p[0]),
            pick.map((p) => p[1]),
          ),
        ).toBe(secret);
        if (s.tNew > 1) {
          const fewer = pick.slice(0, -1);
          expect(
            reconstructSecretForTest(
              G as Group<never>,
              fewer.map((p) => p[0]),
              fewer.map((p) => p[1]),
            ),
          ).not.toBe(secret);
        }
      }),
      { numRuns: 12, seed: 22 },
    );
  });
});

/** Old 2-of-3, all three deal, dealers 0 and 1 stay, runtime 3 is new only; t' = 2. */
const FIXED: Scenario = { t: 2, n: 3, dealers: [0, 1, 2], tNew: 2, nNew: 3, stay: 2, seed: 7 };

type Tamper = (body: Record<string, unknown>) => Canonical;

describe.each([
  ['secp256k1', secp256k1Group],
  ['ed25519', ed25519Group],
] as const)('attack helpers on %s: a dealer’s malformed or wrong values are blamed on it', (_name, G) => {
  const g = G as Group<never>;
  const scalar = (k: bigint) => (g.name === 'ed25519' ? bigintToBytes(k, 32).reverse() : bigintToBytes(k, 32));
  const identity = g.name === 'ed25519' ? Uint8Array.of(1, ...new Uint8Array(31)) : new Uint8Array(33);
  const p2p: [string, Tamper][] = [
    ['share = 0', () => ({ share: scalar(0n) })],
    ['share = 1', () => ({ share: scalar(1n) })],
    ['share = q − 1', () => ({ share: scalar(g.order - 1n) })],
    ['share = q (not canonical)', () => ({ share: scalar(g.order) })],
    ['share of 31 bytes', () => ({ share: new Uint8Array(31) })],
    ['share missing', () => ({})],
  ];
  const broadcast: [string, Tamper][] = [
    [
      'one commitment point too many',
      (b) => ({ ...b, commitment: [...(b.commitment as Uint8Array[]), g.encodePoint(g.G)] }),
    ],
    ['one commitment point too few', (b) => ({ ...b, commitment: (b.commitment as Uint8Array[]).slice(1) })],
    ['identity as A_1', (b) => ({ ...b, commitment: [(b.commitment as Uint8Array[])[0], identity] as Uint8Array[] })],
    [
      'G as A_0 (shifts the key)',
      (b) => ({ ...b, commitment: [g.encodePoint(g.G), (b.commitment as Uint8Array[])[1]] as Uint8Array[] }),
    ],
    ['context of 31 bytes', (b) => ({ ...b, context: new Uint8Array(31) })],
    ['old threshold 0', (b) => ({ ...b, old: { ...(b.old as object), threshold: 0 } })],
    [
      'old identifiers duplicated',
      (b) => {
        const o = b.old as Record<string, unknown>;
        const ids = o.identifiers as Uint8Array[];
        return { ...b, old: { ...o, identifiers: [ids[0], ids[0], ids[2]] as Uint8Array[] } };
      },
    ],
    ['old public key = identity', (b) => ({ ...b, old: { ...(b.old as object), publicKey: identity } })],
  ];
  const tamper = (kind: 'p2p' | 'broadcast', f: Tamper) => (d: Delivery) =>
    d.message.from === 1 && d.message.round === 0 && d.message.kind === kind && (kind === 'broadcast' || d.to === 3)
      ? [{ ...d, message: { ...d.message, body: f(d.message.body as Record<string, unknown>) } }]
      : [d];

  it('control: the untampered session completes', () => {
    const { result } = run(g, FIXED);
    expect(result.aborted.every((a) => a === undefined)).toBe(true);
    expect(result.outputs.every((o) => o !== undefined)).toBe(true);
  });

  it.each(p2p)('p2p %s: the receiver names the dealer', (_n, f) => {
    const { result } = run(g, FIXED, tamper('p2p', f));
    expect(result.aborted[3]?.culprits.map((c) => c.party)).toEqual([1]);
    expect(result.outputs.every((o) => o === undefined)).toBe(true);
  });

  it.each(broadcast)('broadcast %s: every honest party names the dealer', (_n, f) => {
    const { result } = run(g, FIXED, tamper('broadcast', f));
    for (const k of [0, 2, 3]) expect(result.aborted[k]?.culprits.map((c) => c.party)).toEqual([1]);
    expect(result.outputs.every((o) => o === undefined)).toBe(true);
  });
});

describe('validateReshareRoles', () => {
  const G = secp256k1Group;
  it('accepts overlapping roles and sorts new identifiers', () => {
    const r = validateReshareRoles(
      G,
      [{ oldIdentifier: 1n, newIdentifier: 7n }, { oldIdentifier: 2n }, { newIdentifier: 3n }],
      2,
    );
    expect(r).toEqual({ dealers: [0, 1], receivers: [0, 2], oldIds: [1n, 2n], newIds: [3n, 7n] });
  });
  it('refuses an idle party, no dealer, duplicate or zero identifiers, a threshold out of range', () => {
    expect(() => validateReshareRoles(G, [{ oldIdentifier: 1n }, {}], 1)).toThrow('neither deals nor receives');
    expect(() => validateReshareRoles(G, [{ newIdentifier: 1n }, { newIdentifier: 2n }], 1)).toThrow('no dealer');
    expect(() => validateReshareRoles(G, [{ oldIdentifier: 1n, newIdentifier: 1n }], 1)).toThrow('at least 2 parties');
    expect(() => validateReshareRoles(G, [{ oldIdentifier: 1n, newIdentifier: 2n }, { newIdentifier: 2n }], 1)).toThrow(
      RangeError,
    );
    expect(() => validateReshareRoles(G, [{ oldIdentifier: 0n, newIdentifier: 2n }, { oldIdentifier: 3n }], 1)).toThrow(
      RangeError,
    );
    const two = [{ oldIdentifier: 1n, newIdentifier: 2n }, { oldIdentifier: 3n }];
    expect(() => validateReshareRoles(G, two, 2)).toThrow('new threshold 2');
    expect(() => validateReshareRoles(G, two, 0)).toThrow('new threshold 0');
  });
});

describe('a dealer that lies about the old public package (review M3)', () => {
  it('holders name it; parties new to the key abort naming nobody (no honest dealer is blamed)', () => {
    // old t = 2, dealers {0, 1}, two new-only parties (runtime 2, 3); dealer 1 alters `old`
    const S: Scenario = { t: 2, n: 3, dealers: [0, 1], tNew: 2, nNew: 2, stay: 0, seed: 9 };
    const { result } = run(secp256k1Group as Group<never>, S, (d: Delivery) =>
      d.message.from === 1 && d.message.round === 0 && d.message.kind === 'broadcast'
        ? [
            {
              ...d,
              message: {
                ...d.message,
                body: {
                  ...(d.message.body as Record<string, unknown>),
                  old: { ...((d.message.body as Record<string, unknown>).old as object), epoch: 99 },
                },
              },
            },
          ]
        : [d],
    );
    expect(result.aborted[0]?.culprits.map((c) => c.party)).toEqual([1]);
    for (const k of [2, 3]) {
      expect(result.aborted[k]).toBeDefined();
      expect(result.aborted[k]?.culprits).toMatchObject([]);
    }
    expect(result.aborted.flatMap((a) => a?.culprits.map((c) => c.party) ?? [])).not.toContain(0);
    expect(result.outputs.every((o) => o === undefined)).toBe(true);
  });
});
