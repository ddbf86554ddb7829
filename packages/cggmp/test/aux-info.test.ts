import { type Canonical, Party } from '@custodian/crypto';
import { seededRandom } from '@custodian/crypto/testing';
import { describe, expect, it } from 'vitest';
import { auxInfoProtocol } from '../src/index.js';
import { runAux, SECURITY_112, testPrimes } from './helpers.js';

describe('CGGMP21 aux info (provisioning)', () => {
  it('3 parties agree on every R_j and each holds its own factors', () => {
    const res = runAux(3);
    expect(res.aborted).toEqual([undefined, undefined, undefined]);
    const out = res.outputs.map((o) => o!);
    for (const a of out) {
      expect(a.R).toHaveLength(3);
      expect(a.p * a.q).toBe(a.R[a.i]!.N);
      for (let j = 0; j < 3; j++) expect(a.R[j]).toEqual(out[0]!.R[j]);
    }
  });

  it('a tampered Πmod is blamed on its prover', () => {
    const res = runAux(2, SECURITY_112, 'aux-mod', (d) => {
      if (d.message.from !== 1 || d.message.round !== 2 || d.message.kind !== 'broadcast') return [d];
      const b = d.message.body as Record<string, Canonical>;
      const z = [...(b.z as bigint[])];
      z[0] = (z[0] as bigint) + 1n;
      return [{ ...d, message: { ...d.message, body: { ...b, z } } }];
    });
    expect(res.aborted[0]?.culprits[0]?.party).toBe(1);
    expect(res.aborted[0]?.culprits[0]?.reason).toMatch(/Πmod/);
    expect(res.aborted[0]?.culprits[0]?.check).toBe('proof.mod');
  });

  it('a tampered Πfac is blamed on its prover', () => {
    const res = runAux(2, SECURITY_112, 'aux-fac', (d) => {
      if (d.message.from !== 1 || d.message.round !== 2 || d.message.kind !== 'p2p' || d.to !== 0) return [d];
      const b = d.message.body as Record<string, Canonical>;
      return [{ ...d, message: { ...d.message, body: { ...b, z1: (b.z1 as bigint) + 1n } } }];
    });
    expect(res.aborted[0]?.culprits).toMatchObject([expect.objectContaining({ party: 1 })]);
    expect(res.aborted[0]?.culprits[0]?.reason).toMatch(/Πfac/);
    expect(res.aborted[0]?.culprits[0]?.check).toBe('proof.fac');
  });

  it('a BitForge-style modulus with small factors is blamed (Πmod/Πfac fail or the modulus check does)', () => {
    // party 1 decommits a modulus made of many small primes times a large one
    const res = runAux(2, SECURITY_112, 'aux-bitforge', (d) => {
      if (d.message.from !== 1 || d.message.round !== 1) return [d];
      const b = d.message.body as Record<string, Record<string, Canonical>>;
      const small = [65537n, 65539n, 65543n, 65551n];
      const { p } = testPrimes(SECURITY_112, 7);
      let N = p;
      for (const s of small) N *= s;
      while (N.toString(2).length < 2048) N *= 3n;
      return [{ ...d, message: { ...d.message, body: { ...b, R: { ...b.R, N } } } }];
    });
    expect(res.aborted[0]?.culprits[0]?.party).toBe(1);
  });

  it('invalid primes are refused at start', () => {
    const p = new Party(auxInfoProtocol({ level: SECURITY_112, primes: { p: 7n, q: 11n } }), {
      self: 0,
      n: 2,
      sessionId: new Uint8Array(32),
      rng: seededRandom('x'),
    });
    expect(() => p.start()).toThrow(RangeError);
  });
});

describe('CGGMP21 aux info: bad ring-Pedersen parameters', () => {
  it.each([
    ['s = t', (R: Record<string, bigint>) => ({ ...R, s: R.t })],
    ['s ∉ ⟨t⟩ (s replaced by another unit)', (R: Record<string, bigint>) => ({ ...R, s: (R.s! * 2n) % R.N! })],
    ['t = 1', (R: Record<string, bigint>) => ({ ...R, t: 1n })],
  ])('%s is blamed on its sender', (_name, mutate) => {
    const res = runAux(2, SECURITY_112, `aux-rp-${_name}`, (d) => {
      if (d.message.from !== 1 || d.message.round !== 1) return [d];
      const b = d.message.body as Record<string, Canonical>;
      return [{ ...d, message: { ...d.message, body: { ...b, R: mutate(b.R as Record<string, bigint>) } } }];
    });
    // the decommitment no longer matches, or the parameter checks / Πprm fail: party 1 is named
    expect(res.aborted[0]?.culprits[0]?.party).toBe(1);
  });
});
