/**
 * The coordinator's blame verifier (packages/wire blame.ts `blameSessionId`) re-derives a run's
 * session id without importing this package (wire may not import ceremony): it must equal the
 * session id the ceremonies use (ceremonies/context.ts `sessionId`), or verified evidence would be
 * refused as "not of this ceremony" — or, worse, bound to the wrong thing.
 */
import { blameSessionId } from '@custodian/wire';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sessionId } from '../src/index.js';

describe('blameSessionId = ceremony sessionId', () => {
  it('for any ceremony id and label', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 64 }), fc.string({ maxLength: 40 }), (id, label) => {
        expect(blameSessionId(id, label)).toEqual(sessionId(id, label));
      }),
      { numRuns: 100 },
    );
  });
});
