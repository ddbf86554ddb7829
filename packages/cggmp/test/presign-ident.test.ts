/**
 * Attack tests of CGGMP21 presigning identification (presign-ident.ts; issue #23 part 2): a party
 * whose broadcast δ_j, S_j or Δ_j is wrong while every round-1/round-2 proof is valid, or which
 * publishes in identification a ciphertext other than the one it sent, or a bad Πaff-p/Πaff-g/Πdec
 * in the entry for a single verifier, is named by every honest party, with the stable check id; an honest party is never named. On blame-base the δ/S cases
 * aborted naming nobody.
 */
import { type Canonical, type Delivery, secp256k1Group as G } from '@custodian/crypto';
import { ed25519AuthsForTest, resignForTest } from '@custodian/crypto/testing';
import { describe, expect, it } from 'vitest';
import type { KeyShare } from '../src/index.js';
import { PRESIGN_TAG } from '../src/presign.js';
import { fixtureShares, runPresignCheating as runPresign, runPresign as runPresignSigned } from './helpers.js';

type Body = Record<string, Canonical>;

/** An interceptor that rewrites every delivery of `from`'s `kind` message of `round` with `edit` (same for every receiver). */
function rewrite(from: number, round: number, kind: 'broadcast' | 'p2p', edit: (body: Body, to: number) => Body) {
  return (d: Delivery): Delivery[] =>
    d.message.from === from && d.message.round === round && d.message.kind === kind
      ? [{ ...d, message: { ...d.message, body: edit(d.message.body as Body, d.to) } }]
      : [d];
}

const shiftPoint = (field: string) => (b: Body) => ({
  ...b,
  [field]: G.encodePoint(G.decodePoint(b[field] as Uint8Array, field).add(G.G)),
});

/** Every honest party (all but `cheater`) aborted naming exactly `cheater` with `check`; nobody has an output. */
function expectNamed(
  res: ReturnType<typeof runPresign>,
  n: number,
  cheater: number,
  check: string,
  reason?: RegExp,
): void {
  expect(res.outputs.every((o) => o === undefined)).toBe(true);
  for (let p = 0; p < n; p++) {
    if (p === cheater) continue;
    const culprits = res.aborted[p]?.culprits ?? [];
    expect(culprits.map((c) => c.party)).toEqual([cheater]);
    expect(culprits[0]?.check).toBe(check);
    if (reason) expect(culprits[0]?.reason).toMatch(reason);
  }
}

const sets: [string, KeyShare[], number[], number][] = [
  ['2-of-3 (signers 0, 2)', fixtureShares('2of3'), [0, 2], 1],
  ['3-of-5 (signers 1, 3, 4)', fixtureShares('3of5'), [1, 3, 4], 2],
];

describe('presigning identification', () => {
  describe.each(sets)('%s', (name, shares, signers, cheater) => {
    const n = signers.length;

    it('a wrong δ_j (shifted by 1) is named via Πdec (presign.delta)', () => {
      const res = runPresign(shares, signers, `ident-delta-${name}`, { cheater, cheat: 'delta' });
      expectNamed(res, n, cheater, 'proof.dec', /presign\.delta/);
    });

    it('a wrong S_j is named via Πdec (presign.S)', () => {
      const res = runPresign(shares, signers, `ident-S-${name}`, { cheater, cheat: 'S' });
      expectNamed(res, n, cheater, 'proof.dec', /presign\.S/);
    });
  });

  it('a wrong Δ_j is named earlier, by Πlog* (proof.log-star)', () => {
    const res = runPresign(fixtureShares('2of3'), [0, 1, 2], 'ident-Delta', {
      intercept: rewrite(1, 2, 'broadcast', shiftPoint('bigDelta')),
    });
    expectNamed(res, 3, 1, 'proof.log-star');
  });

  it('publishing a ciphertext other than the one sent is named: presign.inconsistent-publication by its receiver, proof.aff-p by the others', () => {
    const cheater = 0;
    const victim = 2;
    const res = runPresign(fixtureShares('2of3'), [0, 1, 2], 'ident-publication', {
      cheater,
      cheat: 'delta',
      intercept: rewrite(cheater, 3, 'broadcast', (b) => {
        const sent = (b.sent as Body[]).map((e) => {
          if (e.j !== victim) return e;
          // another valid ciphertext mod N_victim²: D·(1 + N) encrypts one more
          const N = (fixtureShares('2of3')[victim] as KeyShare).aux.R[victim]?.N as bigint;
          return { ...e, D: ((e.D as bigint) * (1n + N)) % (N * N) };
        });
        return { ...b, sent };
      }),
    });
    expect(res.outputs.every((o) => o === undefined)).toBe(true);
    const atVictim = res.aborted[victim]?.culprits ?? [];
    expect(atVictim.map((c) => [c.party, c.check])).toEqual([[cheater, 'presign.inconsistent-publication']]);
    const atOther = res.aborted[1]?.culprits ?? [];
    expect(atOther.map((c) => [c.party, c.check])).toEqual([[cheater, 'proof.aff-p']]);
  });

  it('two cheaters (wrong δ_j) among three signers of 3-of-5: the honest party names both, in one abort', () => {
    const res = runPresign(fixtureShares('3of5'), [0, 2, 4], 'ident-two', { cheater: [0, 2], cheat: 'delta' });
    expect(res.outputs.every((o) => o === undefined)).toBe(true);
    const culprits = res.aborted[1]?.culprits ?? [];
    expect(culprits.map((c) => [c.party, c.check])).toEqual([
      [0, 'proof.dec'],
      [2, 'proof.dec'],
    ]);
  });

  it('a bad Πaff-g in a chi publication, only in the entry for one verifier, is named (proof.aff-g) by every honest party', () => {
    const cheater = 1;
    const victim = 0;
    const res = runPresign(fixtureShares('2of3'), [0, 1, 2], 'ident-aff-g', {
      cheater,
      cheat: 'S',
      intercept: rewrite(cheater, 3, 'broadcast', (b) => {
        const proofs = (b.proofs as Body[]).map((e) => {
          if (e.l !== victim) return e;
          const affG = (e.affG as Body[]).map((p, k) => (k === 1 ? { ...p, z1: (p.z1 as bigint) + 1n } : p));
          return { ...e, affG };
        });
        return { ...b, proofs };
      }),
    });
    expect(res.outputs.every((o) => o === undefined)).toBe(true);
    for (const honest of [0, 2]) {
      expect(res.aborted[honest]?.culprits.map((c) => [c.party, c.check])).toEqual([[cheater, 'proof.aff-g']]);
      expect(res.aborted[honest]?.culprits[0]?.reason).toMatch(/Πaff-g \(D̂ for party 0, verifier 0\)/);
    }
  });

  it('a bad Πaff-p only in the entry for one verifier is named (proof.aff-p) by every honest party, not only that verifier', () => {
    // 4 signers of 3-of-5: runtime 0 cheats on δ (starting identification), runtime 1 corrupts its
    // Πaff-p (H) for verifier 2 alone; 2 and 3 are honest and must both name 1 (and not only by Πdec)
    const res = runPresign(fixtureShares('3of5'), [0, 1, 2, 3], 'ident-aff-p-one-verifier', {
      cheater: 0,
      cheat: 'delta',
      intercept: rewrite(1, 3, 'broadcast', (b) => {
        const proofs = (b.proofs as Body[]).map((e) => {
          if (e.l !== 2) return e;
          const affP = (e.affP as Body[]).map((p, k) => (k === 0 ? { ...p, z1: (p.z1 as bigint) + 1n } : p));
          return { ...e, affP };
        });
        return { ...b, proofs };
      }),
    });
    expect(res.outputs.every((o) => o === undefined)).toBe(true);
    for (const honest of [2, 3]) {
      expect(res.aborted[honest]?.culprits.map((c) => [c.party, c.check])).toEqual([[1, 'proof.aff-p']]);
      expect(res.aborted[honest]?.culprits[0]?.reason).toMatch(/Πaff-p \(H, verifier 2\)/);
    }
  });

  it('a bad Πdec only in the entry for one verifier is named (proof.dec) by every honest party', () => {
    // runtime 0 cheats on δ (named by everyone's Πdec check); runtime 1 computes honestly but
    // corrupts its Πdec for verifier 2 alone: honest 2 and 3 must both name 0 and 1
    const res = runPresign(fixtureShares('3of5'), [0, 1, 2, 3], 'ident-dec-one-verifier', {
      cheater: 0,
      cheat: 'delta',
      intercept: rewrite(1, 4, 'broadcast', (b) => {
        const proofs = (b.proofs as Body[]).map((e) =>
          e.l === 2 ? { ...e, dec: { ...(e.dec as Body), z1: ((e.dec as Body).z1 as bigint) + 1n } } : e,
        );
        return { ...b, proofs };
      }),
    });
    expect(res.outputs.every((o) => o === undefined)).toBe(true);
    for (const honest of [2, 3]) {
      expect(res.aborted[honest]?.culprits.map((c) => [c.party, c.check])).toEqual([
        [0, 'proof.dec'],
        [1, 'proof.dec'],
      ]);
    }
  });

  it('an honest run is unchanged: every party outputs the same presignature', () => {
    const res = runPresign(fixtureShares('2of3'), [0, 1, 2], 'ident-honest');
    expect(res.aborted.every((a) => a === undefined)).toBe(true);
    const ids = res.outputs.map((o) => o?.id);
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a δ_j equivocated with valid signatures (honest parties split between output and identification) is named by both sides, nobody waits', () => {
    // party 1 sends its true δ_1 to party 0 (whose check passes: it echoes and would output) and
    // δ_1 + 1, re-signed, to party 2 (whose check fails: it starts identification). Each side sees
    // the other's signed echo of round 2 in a message of another round and names party 1 at once.
    const { auths } = ed25519AuthsForTest(3);
    const res = runPresignSigned(
      fixtureShares('2of3'),
      [0, 1, 2],
      'ident-split',
      (d: Delivery): Delivery[] => {
        const m = d.message;
        if (m.from !== 1 || m.round !== 2 || m.kind !== 'broadcast' || d.to !== 2) return [d];
        const b = m.body as Body;
        const delta = G.encodeScalar(G.mod(G.decodeScalar(b.delta as Uint8Array, 'delta') + 1n));
        return [{ ...d, message: resignForTest(auths[1] as never, PRESIGN_TAG, { ...m, body: { ...b, delta } }) }];
      },
      true,
    );
    expect(res.outputs[0]).toBeUndefined();
    expect(res.outputs[2]).toBeUndefined();
    for (const p of [0, 2]) {
      expect(res.aborted[p]?.culprits.map((c) => [c.party, c.check])).toEqual([[1, 'echo.equivocation']]);
      expect(res.aborted[p]?.culprits[0]?.evidence?.statements).toHaveLength(2);
    }
  });
});
