/**
 * Malicious-party tests (DESIGN §9, STYLE.md item 7): every cheat is detected and its author named
 * by the honest parties; honest parties produce no partial output.
 */
import type { BroadcastAuth, Canonical, Delivery, Interceptor, RoundContext } from '@custodian/crypto';
import { ed25519AuthsForTest, resignForTest, seededRandom } from '@custodian/crypto/testing';
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { dkgProtocol, getSuite, type KeyShare, MemoryNonceLedger, type SuiteName, signProtocol } from '../src/index.js';
import { dkgShares, runDkg, runRefresh, runSign, sid, signOk } from './helpers.js';

type Body = Record<string, Canonical | undefined>;

/** Rewrite the body of messages matching (from, round, kind[, to]). */
function tamper(
  from: number,
  round: number,
  kind: 'broadcast' | 'p2p',
  f: (b: Body, d: Delivery) => Body,
  to?: number,
): Interceptor {
  return (d) => {
    const m = d.message;
    if (m.from !== from || m.round !== round || m.kind !== kind || (to !== undefined && d.to !== to)) return [d];
    return [{ ...d, message: { ...m, body: f({ ...(m.body as Body) }, d) as Canonical } }];
  };
}

const flip = (b: Uint8Array, i = b.length - 1) => {
  const c = Uint8Array.from(b);
  c[i] = (c[i] as number) ^ 1;
  return c;
};

function culprits(aborted: readonly ({ culprits: readonly { party: number; reason: string }[] } | undefined)[]) {
  return aborted.map((a) => a?.culprits.map((c) => c.party));
}

const suites: SuiteName[] = ['ed25519', 'secp256k1', 'secp256k1-tr'];

describe.each(suites)('DKG %s', (suite) => {
  it('bad proof of knowledge names its sender', () => {
    const r = runDkg(suite, 2, 3, 'bad-pok', {
      intercept: tamper(1, 0, 'broadcast', (b) => ({ ...b, pok: flip(b.pok as Uint8Array) })),
    });
    expect(culprits(r.aborted)).toEqual([[1], undefined, [1]]);
    expect(r.aborted[0]?.culprits[0]?.reason).toMatch(/proof of knowledge/);
    expect(r.outputs).toEqual([undefined, undefined, undefined]);
  });

  it('inconsistent share: the receiver names the sender; nobody outputs', () => {
    const G = getSuite(suite).group;
    const r = runDkg(suite, 2, 3, 'bad-share', {
      intercept: tamper(
        2,
        1,
        'p2p',
        (b) => ({
          ...b,
          share: G.encodeScalar(G.mod(G.decodeScalar(b.share as Uint8Array, 's', { allowZero: true }) + 1n)),
        }),
        0,
      ),
    });
    expect(r.aborted[0]?.culprits).toMatchObject([
      { party: 2, reason: 'share sent to party 0 fails the Feldman check', check: 'frost.feldman' },
    ]);
    expect(r.outputs).toEqual([undefined, undefined, undefined]);
  });

  it('equivocated broadcast (validly signed both ways) is named through the signed echo', () => {
    const altered = tamper(1, 0, 'broadcast', (b, d) =>
      d.to === 2 ? { ...b, chainCodeCommitment: flip(b.chainCodeCommitment as Uint8Array) } : b,
    );
    const { auths } = ed25519AuthsForTest(3);
    const r = runDkg(suite, 2, 3, 'equivocate', {
      signed: true,
      intercept: (d) =>
        altered(d).map((x) =>
          x.message.from === 1 && x.message.round === 0 && x.message.kind === 'broadcast'
            ? {
                ...x,
                message: resignForTest(auths[1] as BroadcastAuth, dkgProtocol({ suite, threshold: 2 }).name, x.message),
              }
            : x,
        ),
    });
    // honest parties 0 and 2 name party 1 (party 1's own view does not matter)
    const named = [r.aborted[0], r.aborted[2]].flatMap((a) => a?.culprits.map((c) => c.party));
    expect(named).toEqual([1, 1]);
    expect(new Set(named)).toEqual(new Set([1]));
    expect(r.outputs).toEqual([undefined, undefined, undefined]);
  });

  it('wrong chain-code opening is named', () => {
    const r = runDkg(suite, 2, 3, 'bad-open', {
      intercept: tamper(0, 1, 'broadcast', (b) => ({ ...b, chainCode: flip(b.chainCode as Uint8Array) })),
    });
    expect(culprits(r.aborted)).toEqual([undefined, [0], [0]]);
  });

  it('malformed round-0 bodies (identity point, wrong lengths) are named', () => {
    const G = getSuite(suite).group;
    const bads: ((b: Body) => Body)[] = [
      (b) => ({
        ...b,
        // all-zero bytes: not a point (secp256k1) / a small-order point (ed25519)
        commitment: [new Uint8Array(G.pointLength), (b.commitment as Uint8Array[])[1] as Uint8Array],
      }),
      (b) => ({ ...b, commitment: (b.commitment as Uint8Array[]).slice(0, 1) }),
      (b) => ({ ...b, pok: (b.pok as Uint8Array).slice(1) }),
      (b) => ({ ...b, params: 42 }),
      () => ({}),
    ];
    for (const [k, f] of bads.entries()) {
      const r = runDkg(suite, 2, 3, `malformed:${k}`, { intercept: tamper(2, 0, 'broadcast', f) });
      expect(culprits(r.aborted), `case ${k}`).toEqual([[2], [2], undefined]);
    }
  });
});

describe.each(suites)('signing %s', (suite) => {
  const shares = dkgShares(suite, 2, 3, `sign-mal:${suite}`);
  const msg = new TextEncoder().encode('pay 1 BTC');

  it('bad signature share names its signer', () => {
    const r = runSign(shares, [0, 1, 2], msg, 'bad-share', {
      intercept: tamper(2, 1, 'broadcast', (b) => ({
        ...b,
        share: flip(b.share as Uint8Array, suite === 'ed25519' ? 0 : 31),
      })),
    });
    expect(culprits(r.aborted)).toEqual([[2], [2], undefined]);
    expect(r.aborted[0]?.culprits[0]?.reason).toMatch(/RFC 9591 §5.4/);
  });

  it("a signer copying another's nonce commitment is named", () => {
    let first: Body | undefined;
    const r = runSign(shares, [0, 1, 2], msg, 'copy-nonce', {
      intercept: (d) => {
        const m = d.message;
        if (m.round === 0 && m.from === 0 && !first) first = m.body as Body;
        if (m.round === 0 && m.from === 1 && first) {
          return [
            {
              ...d,
              message: {
                ...m,
                body: { ...(m.body as Body), hiding: first.hiding, binding: first.binding } as Canonical,
              },
            },
          ];
        }
        return [d];
      },
    });
    expect(r.aborted[0]?.culprits).toMatchObject([{ party: 1, reason: "copied this party's nonce commitment" }]);
    expect(r.aborted[2]?.culprits.map((c) => c.party)).toEqual([1]);
  });

  it('a nonce commitment replayed from an earlier session is named (nonce ledger)', () => {
    const ledger = new MemoryNonceLedger();
    let old: Body | undefined;
    signOk(
      runSign(shares, [0, 1], msg, 'ledger-1', {
        perParty: (k) => (k === 0 ? { nonceLedger: ledger } : {}),
        intercept: (d) => {
          if (d.message.round === 0 && d.message.from === 1) old = d.message.body as Body;
          return [d];
        },
      }),
    );
    const r = runSign(shares, [0, 1], msg, 'ledger-2', {
      perParty: (k) => (k === 0 ? { nonceLedger: ledger } : {}),
      intercept: tamper(1, 0, 'broadcast', (b) => ({ ...b, hiding: old?.hiding, binding: old?.binding })),
    });
    expect(r.aborted[0]?.culprits).toMatchObject([
      { party: 1, reason: 'reused a nonce commitment from an earlier session', check: 'frost.nonce-reuse' },
    ]);
  });

  it('a signer asked to sign another message is named before any share is released', () => {
    const sent: number[] = [];
    const r = runSign(shares, [0, 1], msg, 'ctx', {
      perParty: (k) => (k === 1 ? { message: new TextEncoder().encode('pay 100 BTC') } : {}),
      intercept: (d) => {
        sent.push(d.message.round);
        return [d];
      },
    });
    expect(culprits(r.aborted)).toEqual([[1], [0]]);
    expect(sent.every((round) => round === 0)).toBe(true);
  });

  it('the nonce is deleted from the state before the share is returned', () => {
    const signers = [shares[0]?.identifier as bigint, shares[1]?.identifier as bigint];
    const specs = [0, 1].map((i) => signProtocol({ keyShare: shares[i] as KeyShare, signers, message: msg }));
    const ctx = (i: number): RoundContext => ({ self: i, n: 2, sessionId: sid('nonce'), rng: seededRandom(`n${i}`) });
    const s0 = specs[0]?.start(ctx(0));
    const s1 = specs[1]?.start(ctx(1));
    const st = s0?.state as unknown as { nonces?: unknown };
    expect(st.nonces).toBeDefined();
    const round = specs[0]?.rounds[0];
    const parsed = round?.broadcast?.(s1?.send.broadcast, 1, s0?.state as never);
    const res = round?.process(s0?.state as never, new Map([[1, { broadcast: parsed, p2p: undefined }]]), ctx(0));
    expect(st.nonces).toBeUndefined();
    expect((res as { state: { nonces?: unknown } }).state.nonces).toBeUndefined();
    // a second run of the round with the same state cannot sign again
    expect(() =>
      round?.process(s0?.state as never, new Map([[1, { broadcast: parsed, p2p: undefined }]]), ctx(0)),
    ).toThrow();
  });
});

describe('attack helpers on nonce commitments', () => {
  const shares = dkgShares('ed25519', 2, 3, 'torsion');
  const msg = new TextEncoder().encode('m');
  // the point of order 2 on edwards25519, (0, −1)
  const T = ed25519.Point.fromBytes(Uint8Array.from(Buffer.from(`ec${'ff'.repeat(30)}7f`, 'hex')));
  it.each([
    ['point with a torsion component', (b: Uint8Array) => ed25519.Point.fromBytes(b).add(T).toBytes()],
    ['identity', () => ed25519.Point.ZERO.toBytes()],
    ['wrong length', (b: Uint8Array) => b.slice(1)],
    ['not on the curve', () => new Uint8Array(32).fill(0xff)],
  ])('%s is named', (_n, f) => {
    const r = runSign(shares, [0, 1], msg, `torsion:${_n}`, {
      intercept: tamper(1, 0, 'broadcast', (b) => ({ ...b, hiding: f(b.hiding as Uint8Array) })),
    });
    expect(r.aborted[0]?.culprits.map((c) => c.party)).toEqual([1]);
  });
});

describe('refresh', () => {
  const shares = dkgShares('secp256k1', 2, 3, 'refresh-mal');
  it('a dealing with A_0 ≠ identity is named (it would shift the key)', () => {
    const G = getSuite('secp256k1').group;
    const r = runRefresh(
      shares,
      'a0',
      tamper(1, 0, 'broadcast', (b) => ({
        ...b,
        commitment: [G.encodePoint(G.G), (b.commitment as Uint8Array[])[1] as Uint8Array],
      })),
    );
    expect(culprits(r.aborted)).toEqual([[1], undefined, [1]]);
    expect(r.aborted[0]?.culprits[0]?.reason).toMatch(/A_0 is not the identity/);
  });
  it('a bad refresh share is named by its receiver', () => {
    const r = runRefresh(
      shares,
      'bad',
      tamper(0, 0, 'p2p', (b) => ({ ...b, share: flip(b.share as Uint8Array) }), 2),
    );
    expect(r.aborted[2]?.culprits).toMatchObject([
      { party: 0, reason: 'refresh share sent to party 2 fails the Feldman check', check: 'frost.feldman' },
    ]);
    expect(r.outputs).toEqual([undefined, undefined, undefined]);
  });
  it('a party refreshing another epoch is named', () => {
    const stale = shares.map((s, i) => (i === 2 ? { ...s, epoch: 5 } : s));
    const r = runRefresh(stale, 'epoch');
    expect(culprits(r.aborted)).toEqual([[2], [2], [0, 1]]);
  });
});
