/**
 * The one-shot presignature handle (presignature.ts): export/import round trip, the registry's
 * refusals with their stable codes, and import validation whose errors name the field and never
 * carry a secret value. (Every way to sign twice: attack-presignature-reuse.test.ts.)
 */
import { createHash } from 'node:crypto';
import { secp256k1Group as G } from '@custodian/crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import {
  combineSignature,
  PRESIGNATURE_FORMAT,
  Presignature,
  PresignatureSpentError,
  PresignatureUseError,
  signShare,
} from '../src/index.js';
import { fixtureShares, runPresign } from './helpers.js';

const sha256 = (data: string) => new Uint8Array(createHash('sha256').update(data).digest());
const presign = (label: string) => runPresign(fixtureShares('2of2'), [0, 1], label).outputs as Presignature[];
const codeOf = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (e) {
    return e instanceof PresignatureUseError ? e.code : `other: ${(e as Error).name}`;
  }
  return undefined;
};

describe('Presignature handle', () => {
  it('exports (sealing) and imports back; the import signs; the id is the same at every party', () => {
    const [p0, p1] = presign('handle-roundtrip') as [Presignature, Presignature];
    expect(p0.id).toMatch(/^[0-9a-f]{64}$/);
    expect(p1.id).toBe(p0.id);
    const bytes = p0.export();
    expect(JSON.parse(new TextDecoder().decode(bytes)).format).toBe(PRESIGNATURE_FORMAT);
    expect(p0.spent).toBe(true);
    expect(codeOf(() => signShare(p0, sha256('x')))).toBe('PRESIGNATURE_SEALED');
    expect(codeOf(() => p0.export())).toBe('PRESIGNATURE_SEALED');
    const q0 = Presignature.import(bytes);
    expect(q0.id).toBe(p0.id);
    expect(q0.i).toBe(0);
    expect(q0.public.R.equals(p0.public.R)).toBe(true);
    const digest = sha256('round trip');
    const sig = combineSignature(
      q0.public,
      digest,
      new Map([
        [0, signShare(q0, digest)],
        [1, signShare(p1, digest)],
      ]),
    );
    expect(secp256k1.verify(sig.compact, digest, sig.publicKey, { prehash: false })).toBe(true);
  });

  it('refuses with stable codes: a second live handle, any handle once one signed', () => {
    const [p0] = presign('handle-codes') as [Presignature];
    const bytes = p0.export();
    const live = Presignature.import(bytes);
    expect(codeOf(() => Presignature.import(bytes))).toBe('PRESIGNATURE_HELD');
    live.discard();
    const again = Presignature.import(bytes); // discarded: the stored copy may be taken again
    signShare(again, sha256('once'));
    expect(() => Presignature.import(bytes)).toThrow(PresignatureSpentError);
    expect(codeOf(() => Presignature.import(bytes))).toBe('PRESIGNATURE_SPENT');
    expect(codeOf(() => signShare(again, sha256('twice')))).toBe('PRESIGNATURE_SPENT');
    expect(codeOf(() => signShare(live, sha256('twice')))).toBe('PRESIGNATURE_SPENT');
    expect(codeOf(() => Reflect.construct(Presignature, [Symbol('x'), again.public, 0, 1n, 1n]))).toBe(
      'other: TypeError',
    );
  });

  it('validates an import, naming the field and never quoting a secret', () => {
    const [p0] = presign('handle-validate') as [Presignature];
    const good = JSON.parse(new TextDecoder().decode(p0.export())) as Record<string, unknown>;
    const k = good.k as string;
    const chi = good.chi as string;
    const bad = (patch: Record<string, unknown>) => new TextEncoder().encode(JSON.stringify({ ...good, ...patch }));
    const cases: [Uint8Array, RegExp][] = [
      [new TextEncoder().encode('not json'), /not JSON/],
      [bad({ format: 'other' }), /unknown format/],
      [bad({ version: 2 }), /unknown format/],
      [bad({ signers: [1, 0] }), /signers/],
      [bad({ signers: [] }), /signers/],
      [bad({ i: 2 }), /i out of range/],
      [bad({ R: '02' }), /R/],
      [bad({ Delta: [good.R] }), /Delta must have 2 points/],
      [bad({ k: '00' }), /k out of range/],
      [bad({ k: G.order.toString(16) }), /k out of range/],
      [bad({ k: `${k.slice(0, -1)}z` }), /k must be hex/],
      [bad({ chi: `${chi.slice(0, -1)}g` }), /chi must be hex/],
      [bad({ k: 5 }), /k must be hex/],
    ];
    for (const [bytes, want] of cases) {
      let message = '';
      try {
        Presignature.import(bytes);
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toMatch(want);
      expect(message).not.toContain(k.slice(0, 8));
      expect(message).not.toContain(chi.slice(0, 8));
    }
    expect(() => Presignature.import('{}' as unknown as Uint8Array)).toThrow(TypeError);
    // none of the malformed imports registered anything: the good bytes still import once
    expect(Presignature.import(new TextEncoder().encode(JSON.stringify(good))).spent).toBe(false);
  });
});
