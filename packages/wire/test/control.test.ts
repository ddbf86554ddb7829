import { describe, expect, it } from 'vitest';
import { decodeControlFrame, decodeControlResponse, encodeControlFrame, encodeControlResponse } from '../src/index.js';

describe('control frames and interim responses', () => {
  it('a frame keeps its id, body and interim flag; frames without the flag are final', () => {
    const body = Uint8Array.of(1, 2, 3);
    for (const interim of [true, false, undefined]) {
      const decoded = decodeControlFrame(
        encodeControlFrame({ id: 7, body, ...(interim === undefined ? {} : { interim }) }),
      );
      expect(decoded.ok).toBe(true);
      if (!decoded.ok) continue;
      expect(decoded.value.id).toBe(7);
      expect(Uint8Array.from(decoded.value.body)).toEqual(body);
      expect(decoded.value.interim).toBe(interim === true);
    }
    expect(() => encodeControlFrame({ id: -1, body })).toThrow(RangeError);
    const bad = decodeControlFrame(Uint8Array.of(0xff, 0xff));
    expect(bad.ok).toBe(false);
  });

  it('signature shares round-trip in a ControlResponse', () => {
    const shares = {
      ceremonyId: new Uint8Array(24).fill(9),
      shares: [{ digestIndex: 0, rPoint: new Uint8Array(33).fill(2), s: new Uint8Array(32).fill(5) }],
    };
    const decoded = decodeControlResponse(encodeControlResponse({ version: 1, shares }));
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    const got = decoded.value.shares;
    expect(Uint8Array.from(got?.ceremonyId ?? [])).toEqual(shares.ceremonyId);
    expect(
      got?.shares.map((x) => ({
        digestIndex: x.digestIndex,
        rPoint: Uint8Array.from(x.rPoint),
        s: Uint8Array.from(x.s),
      })),
    ).toEqual(shares.shares);
    expect(decoded.value.result).toBeUndefined();
  });
});
