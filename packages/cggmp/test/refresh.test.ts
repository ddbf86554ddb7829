import { type Canonical, secp256k1Group as G } from '@custodian/crypto';
import { reconstructSecretForTest } from '@custodian/crypto/testing';
import { describe, expect, it } from 'vitest';
import { type KeyShare, refreshProtocol } from '../src/index.js';
import { fixtureShares, runParties, runPresign, SECURITY_112, testPrimes } from './helpers.js';

function refresh(shares: KeyShare[], label: string, intercept?: Parameters<typeof runParties>[3]) {
  // new primes: a different slice of the test-only fixture than the one the shares use
  return runParties<KeyShare>(
    (i) => refreshProtocol({ share: shares[i]!, primes: testPrimes(SECURITY_112, i + 3), checkPrimality: false }),
    shares.length,
    label,
    intercept,
  );
}

describe('CGGMP21 t-of-n key refresh', () => {
  it('2-of-3: same public key and chain code, every share and Paillier key changed, old and new do not mix', () => {
    const old = fixtureShares('2of3');
    const res = refresh(old, 'refresh-2of3');
    expect(res.aborted).toEqual([undefined, undefined, undefined]);
    const fresh = res.outputs as KeyShare[];
    for (const [i, s] of fresh.entries()) {
      expect(s.core.publicKey.equals(old[i]!.core.publicKey)).toBe(true);
      expect(s.core.chainCode).toEqual(old[i]!.core.chainCode);
      expect(s.core.x).not.toBe(old[i]!.core.x);
      expect(s.aux.R[i]!.N).not.toBe(old[i]!.aux.R[i]!.N);
      for (let j = 0; j < 3; j++) expect(s.core.publicShares[j]!.equals(fresh[0]!.core.publicShares[j]!)).toBe(true);
    }
    const ids = [1n, 2n, 3n];
    const secret = reconstructSecretForTest(G, ids.slice(0, 2), [old[0]!.core.x, old[1]!.core.x]);
    expect(reconstructSecretForTest(G, [1n, 3n], [fresh[0]!.core.x, fresh[2]!.core.x])).toBe(secret);
    // old and new shares do not combine to the secret
    expect(reconstructSecretForTest(G, [1n, 2n], [fresh[0]!.core.x, old[1]!.core.x])).not.toBe(secret);
    // new shares presign; an old share with a new one does not (aux info mismatch is caught by the proofs)
    const ok = runPresign(fresh, [0, 2], 'refresh-presign');
    expect(ok.aborted).toEqual([undefined, undefined]);
    const mixed = runPresign([fresh[0]!, old[1]!, fresh[2]!], [0, 1], 'refresh-mixed');
    expect(mixed.outputs).toEqual([undefined, undefined]);
    expect(mixed.aborted.some((a) => a !== undefined)).toBe(true);
  });

  it('a nonzero constant term (a share of a different key) is blamed', () => {
    const old = fixtureShares('2of2');
    const res = refresh(old, 'refresh-bad-share', (d) => {
      if (d.message.from !== 1 || d.message.round !== 1 || d.message.kind !== 'p2p') return [d];
      const sigma = G.decodeScalar((d.message.body as { sigma: Uint8Array }).sigma, 'sigma', { allowZero: true });
      return [{ ...d, message: { ...d.message, body: { sigma: G.encodeScalar(G.mod(sigma + 1n)) } as Canonical } }];
    });
    expect(res.aborted[0]?.culprits).toMatchObject([
      { party: 1, reason: 'refresh share inconsistent with its Feldman commitments', check: 'refresh.feldman' },
    ]);
  });
});
