/**
 * Issue #27 item 2: the signing set of a retry avoids parties known to be unavailable when the key
 * has enough others (servers first, then devices, each in key order); without any it is the set of
 * before (the first t server signers, then devices), which the presignature pool is keyed by.
 */
import { describe, expect, it } from 'vitest';
import { signingParties } from '../src/transfers/pipeline.js';

const key = [
  { kind: 'server', id: 'S1' },
  { kind: 'server', id: 's2' },
  { kind: 'server', id: 's3' },
  { kind: 'device', id: 'd1' },
  { kind: 'device', id: 'd2' },
];
const ids = (p: { id: string }[]) => p.map((x) => x.id);

describe('signing set', () => {
  it('without unavailable parties: the first t server signers, then devices', () => {
    expect(ids(signingParties(key, 2))).toEqual(['S1', 's2']);
    expect(ids(signingParties(key, 4))).toEqual(['S1', 's2', 's3', 'd1']);
    expect(ids(signingParties(key, 2, new Set()))).toEqual(['S1', 's2']);
  });

  it('avoids unavailable parties when the key has enough others (ids compared in lower case)', () => {
    expect(ids(signingParties(key, 2, new Set(['server:s2'])))).toEqual(['S1', 's3']);
    expect(ids(signingParties(key, 2, new Set(['server:s1', 'server:s2'])))).toEqual(['s3', 'd1']);
    expect(ids(signingParties(key, 3, new Set(['server:s2', 'device:d1'])))).toEqual(['S1', 's3', 'd2']);
  });

  it('not enough available parties: the available ones, then unavailable ones in key order (a retry names them)', () => {
    const down = new Set(['server:s1', 'server:s2', 'server:s3', 'device:d1']);
    expect(ids(signingParties(key, 2, down))).toEqual(['S1', 'd2']);
  });
});
