import { readFileSync } from 'node:fs';
import { type BroadcastAuth, type Canonical, secp256k1Group as G, Party, simulate } from '@custodian/crypto';
import { ed25519AuthsForTest, reconstructSecretForTest, resignForTest, seededRandom } from '@custodian/crypto/testing';
import { describe, expect, it } from 'vitest';
import {
  type CoreKeyShare,
  coreKeyShareFromJson,
  coreKeyShareToJson,
  keygenProtocol,
  keyShareFromJson,
  keyShareToJson,
  validateCoreKeyShare,
} from '../src/index.js';

const subsets = <T>(xs: T[], k: number): T[][] =>
  k === 0 ? [[]] : xs.flatMap((x, i) => subsets(xs.slice(i + 1), k - 1).map((s) => [x, ...s]));

function sid(label: string): Uint8Array {
  return seededRandom(`sid-${label}`)(32);
}

export function runKeygen(t: number, n: number, label = `${t}of${n}`, intercept?: Parameters<typeof simulate>[1]) {
  const sessionId = sid(label);
  const parties = Array.from(
    { length: n },
    (_, i) => new Party(keygenProtocol({ t }), { self: i, n, sessionId, rng: seededRandom(`${label}-${i}`) }),
  );
  return simulate(parties, intercept);
}

describe('CGGMP21 threshold key generation', () => {
  it.each([
    [2, 2],
    [2, 3],
    [3, 5],
  ])('%i-of-%i: all agree on public key and chain code; any t shares interpolate to the secret', (t, n) => {
    const res = runKeygen(t, n);
    expect(res.aborted).toEqual(Array(n).fill(undefined));
    const shares = res.outputs as CoreKeyShare[];
    for (const s of shares) {
      validateCoreKeyShare(s);
      expect(s.publicKey.equals(shares[0]!.publicKey)).toBe(true);
      expect(s.chainCode).toEqual(shares[0]!.chainCode);
      expect(s.rid).toEqual(shares[0]!.rid);
    }
    const secret = reconstructSecretForTest(
      G,
      shares.slice(0, t).map((s) => BigInt(s.i + 1)),
      shares.slice(0, t).map((s) => s.x),
    );
    expect(G.mulBase(secret).equals(shares[0]!.publicKey)).toBe(true);
    for (const subset of subsets(shares, t)) {
      expect(
        reconstructSecretForTest(
          G,
          subset.map((s) => BigInt(s.i + 1)),
          subset.map((s) => s.x),
        ),
      ).toBe(secret);
    }
  });

  it('key share JSON round-trips and is validated when read', () => {
    const share = (runKeygen(2, 3).outputs as CoreKeyShare[])[1]!;
    const json = coreKeyShareToJson(share);
    const back = coreKeyShareFromJson(JSON.parse(JSON.stringify(json)));
    expect(back.x).toBe(share.x);
    expect(back.publicKey.equals(share.publicKey)).toBe(true);
    expect(() => coreKeyShareFromJson({ ...json, x: json.x.replace(/.$/, (c) => (c === '0' ? '1' : '0')) })).toThrow(
      /x_i·G/,
    );
    const badShares = [...json.publicShares];
    badShares[2] = json.publicShares[0] as string;
    expect(() => coreKeyShareFromJson({ ...json, publicShares: badShares })).toThrow(/inconsistent/);
    expect(() => coreKeyShareFromJson({ ...json, t: 4 })).toThrow(RangeError);
    expect(() => coreKeyShareFromJson({ ...json, chainCode: 'zz' })).toThrow(TypeError);
  });

  it('rejects t outside [1, n]', () => {
    const p = new Party(keygenProtocol({ t: 4 }), { self: 0, n: 3, sessionId: sid('bad'), rng: seededRandom('x') });
    expect(() => p.start()).toThrow(RangeError);
  });
});

describe('CGGMP21 key generation: identifiable abort', () => {
  const culpritsOf = (res: ReturnType<typeof runKeygen>, honest: number[]) =>
    honest.map((i) => res.aborted[i]?.culprits.map((c) => c.party));

  it('a bad decommitment is blamed', () => {
    const res = runKeygen(2, 3, 'decommit', {
      intercept: (d) => {
        if (d.message.from !== 1 || d.message.round !== 1 || d.message.kind !== 'broadcast') return [d];
        const body = { ...(d.message.body as Record<string, Canonical>), rid: new Uint8Array(32) };
        return [{ ...d, message: { ...d.message, body } }];
      },
    });
    expect(culpritsOf(res, [0, 2])).toEqual([[1], [1]]);
    expect(res.aborted[0]?.culprits[0]?.reason).toMatch(/decommitment/);
  });

  it('an inconsistent VSS share is blamed on its dealer', () => {
    const res = runKeygen(2, 3, 'vss', {
      intercept: (d) => {
        if (d.message.from !== 2 || d.message.round !== 1 || d.message.kind !== 'p2p' || d.to !== 0) return [d];
        return [{ ...d, message: { ...d.message, body: { sigma: G.encodeScalar(12345n) } } }];
      },
    });
    expect(res.aborted[0]?.culprits).toMatchObject([
      { party: 2, reason: 'VSS share inconsistent with its Feldman commitments', check: 'keygen.feldman' },
    ]);
    expect(res.outputs.every((o) => o === undefined)).toBe(true);
  });

  it('an invalid Πsch is blamed', () => {
    const res = runKeygen(3, 5, 'sch', {
      intercept: (d) => {
        if (d.message.from !== 4 || d.message.round !== 2) return [d];
        return [{ ...d, message: { ...d.message, body: { z: G.encodeScalar(7n) } } }];
      },
    });
    expect(culpritsOf(res, [0, 1, 2, 3])).toEqual([[4], [4], [4], [4]]);
    expect(res.aborted[0]?.culprits[0]?.reason).toMatch(/Πsch/);
  });

  it('a wrong-length commitment vector is a malformed message from its sender', () => {
    const res = runKeygen(2, 3, 'len', {
      intercept: (d) => {
        if (d.message.from !== 0 || d.message.round !== 1 || d.message.kind !== 'broadcast') return [d];
        const b = d.message.body as Record<string, Canonical>;
        return [{ ...d, message: { ...d.message, body: { ...b, S: (b.S as Uint8Array[]).slice(0, 1) } } }];
      },
    });
    expect(culpritsOf(res, [1, 2])).toEqual([[0], [0]]);
    expect(res.aborted[1]?.culprits[0]?.reason).toMatch(/malformed message: S: expected 2 items/);
  });

  it('an equivocated round-1 commitment (validly signed both ways) is detected by the signed echo and named', () => {
    const { auths } = ed25519AuthsForTest(3);
    const sessionId = sid('equiv');
    const spec = keygenProtocol({ t: 2 });
    const parties = Array.from(
      { length: 3 },
      (_, i) => new Party(spec, { self: i, n: 3, sessionId, rng: seededRandom(`equiv-${i}`), auth: auths[i] }),
    );
    const res = simulate(parties, {
      intercept: (d) =>
        d.message.from === 1 && d.message.round === 0 && d.to === 2
          ? [
              {
                ...d,
                message: resignForTest(auths[1] as BroadcastAuth, spec.name, {
                  ...d.message,
                  body: { V: new Uint8Array(32).fill(1) },
                }),
              },
            ]
          : [d],
    });
    expect(culpritsOf(res, [0, 2])).toEqual([[1], [1]]);
  });

  it('a duplicated or replayed message is rejected, and a message from outside the set too', () => {
    const res = runKeygen(2, 3, 'dup', {
      intercept: (d) => {
        if (d.message.round === 0 && d.message.from === 0) {
          return [d, d, { ...d, message: { ...d.message, from: 5 } }];
        }
        return [d];
      },
    });
    expect(res.aborted).toEqual([undefined, undefined, undefined]);
    expect(res.outputs.every((o) => o !== undefined)).toBe(true);
    const reasons = res.rejections.map((r) => r.rejection.reason).sort();
    expect(reasons).toContain('duplicate message');
    expect(reasons).toContain('unknown sender');
  });

  it('a message of session A fed to session B is rejected', () => {
    const a = Array.from(
      { length: 2 },
      (_, i) => new Party(keygenProtocol({ t: 2 }), { self: i, n: 2, sessionId: sid('A'), rng: seededRandom(`A${i}`) }),
    );
    const b = Array.from(
      { length: 2 },
      (_, i) => new Party(keygenProtocol({ t: 2 }), { self: i, n: 2, sessionId: sid('B'), rng: seededRandom(`B${i}`) }),
    );
    const msg = a[0]!.start().messages[0]!;
    b[1]!.start();
    expect(b[1]!.receive(msg).rejected?.reason).toBe('wrong session');
  });
});

describe('stored key share format', () => {
  it('the first released format (v1 fixture) still loads, validates and re-encodes identically', () => {
    const fixture = JSON.parse(
      readFileSync(new URL('./fixtures/test-only-key-shares.json', import.meta.url), 'utf8'),
    ) as {
      sets: Record<string, unknown[]>;
    };
    for (const list of Object.values(fixture.sets)) {
      for (const json of list) {
        const share = keyShareFromJson(json);
        expect(keyShareToJson(share)).toEqual(json);
      }
    }
    const one = fixture.sets['2of3']![0] as Record<string, unknown>;
    expect(() => keyShareFromJson({ ...one, version: 2 })).toThrow(/unsupported version/);
    expect(() => keyShareFromJson({ ...one, format: 'other' })).toThrow(/unknown format/);
    const aux = one.aux as Record<string, unknown>;
    expect(() => keyShareFromJson({ ...one, aux: { ...aux, p: '0b' } })).toThrow(/p·q/);
    expect(() => keyShareFromJson({ ...one, aux: { ...aux, level: 'SECURITY_80' } })).toThrow(/level/);
  });
});
