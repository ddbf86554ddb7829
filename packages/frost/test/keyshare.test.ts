/**
 * Key-share storage format (STYLE.md item 9): the committed v1 fixture still loads, re-encodes
 * byte for byte, signs, and every tampered field is rejected on load.
 * Regenerate the fixture (only for a NEW format version, keeping the old file):
 * `UPDATE_FIXTURES=1 npx vitest run --project unit packages/frost/test/keyshare.test.ts`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { decodeKeyShare, encodeKeyShare, type KeyShare, KeyShareError, validateKeyShare } from '../src/index.js';
import { dkgShares, runSign, signOk } from './helpers.js';

const fixtureUrl = (i: number) => new URL(`fixtures/keyshare-v1-ed25519-${i}.json`, import.meta.url);
if (process.env.UPDATE_FIXTURES === '1') {
  for (const [i, s] of dkgShares('ed25519', 2, 3, 'keyshare-fixture').entries())
    writeFileSync(fixtureUrl(i), encodeKeyShare(s));
}
const files = [0, 1, 2].map((i) => new Uint8Array(readFileSync(fixtureUrl(i))));
const te = new TextEncoder();
const td = new TextDecoder();

describe('key share format v1', () => {
  it('committed fixture loads, re-encodes identically and signs', () => {
    const shares = files.map(decodeKeyShare);
    for (const [i, f] of files.entries()) expect(td.decode(encodeKeyShare(shares[i] as KeyShare))).toBe(td.decode(f));
    const m = te.encode('fixture');
    const out = signOk(runSign(shares, [1, 2], m, 'fixture'));
    expect(ed25519.verify(out.signature, m, out.verifyingKey)).toBe(true);
  });

  const mutate = (f: (o: Record<string, unknown>) => void) => {
    const o = JSON.parse(td.decode(files[0] as Uint8Array));
    f(o);
    return te.encode(JSON.stringify(o));
  };
  const flipHex = (h: string) => h.slice(0, -1) + (h.endsWith('0') ? '1' : '0');

  it.each([
    ['version', (o: Record<string, unknown>) => (o.version = 2)],
    ['format', (o: Record<string, unknown>) => (o.format = 'other')],
    ['suite', (o: Record<string, unknown>) => (o.suite = 'p256')],
    ['threshold', (o: Record<string, unknown>) => (o.threshold = 4)],
    ['signingShare', (o: Record<string, unknown>) => (o.signingShare = flipHex(o.signingShare as string))],
    [
      'verifyingShares',
      (o: Record<string, unknown>) =>
        ((o.verifyingShares as string[])[1] = (o.verifyingShares as string[])[2] as string),
    ],
    [
      'vssCommitment',
      (o: Record<string, unknown>) => ((o.vssCommitment as string[])[1] = (o.vssCommitment as string[])[0] as string),
    ],
    ['chainCode', (o: Record<string, unknown>) => (o.chainCode = '00')],
    ['identifier', (o: Record<string, unknown>) => (o.identifier = `${'00'.repeat(31)}09`)],
    [
      'duplicate identifiers',
      (o: Record<string, unknown>) => ((o.identifiers as string[])[1] = (o.identifiers as string[])[0] as string),
    ],
    ['epoch', (o: Record<string, unknown>) => (o.epoch = -1)],
  ])('rejects a tampered %s', (_name, f) => {
    expect(() => decodeKeyShare(mutate(f))).toThrow(KeyShareError);
  });

  it('rejects non-JSON and wrong types', () => {
    expect(() => decodeKeyShare(te.encode('not json'))).toThrow(KeyShareError);
    expect(() => decodeKeyShare('x' as unknown as Uint8Array)).toThrow(TypeError);
  });

  it('error messages never contain the secret share', () => {
    const s = decodeKeyShare(files[0] as Uint8Array);
    try {
      validateKeyShare({ ...s, signingShare: s.signingShare + 1n });
      expect.unreachable();
    } catch (e) {
      expect((e as Error).message).not.toContain(s.signingShare.toString(16));
      expect((e as Error).message).not.toContain((s.signingShare + 1n).toString(16));
    }
  });
});
