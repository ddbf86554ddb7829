/**
 * Attack (issue #20 item 5): sign two messages with ONE presigning output through the package's
 * public API. Two ECDSA signatures with one nonce reveal the whole key, so a second signature must
 * never exist: every way below must throw at the second use.
 */
import { createHash } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { combineSignature, type EcdsaSignature, Presignature, type PresignatureData, signShare } from '../src/index.js';
import { fixtureShares, runPresign } from './helpers.js';

const sha256 = (data: string | Uint8Array) => new Uint8Array(createHash('sha256').update(data).digest());

type Output = PresignatureData;

/** One attacker's way to get a signing handle for a second use of the same presigning output. */
const ways: Record<string, (out: Output, first: Presignature) => Presignature> = {
  'sign twice with one handle': (_out, first) => first,
  'wrap the output again': (out) => new Presignature(out),
  'spread copy of the output': (out) => new Presignature({ ...out }),
  'structuredClone of the output': (out) => new Presignature(structuredClone(out)),
  'spread copy of the handle': (_out, first) => ({ ...first }) as Presignature,
  'structuredClone of the handle': (_out, first) => structuredClone(first) as Presignature,
  'JSON copy of the handle': (_out, first) =>
    JSON.parse(JSON.stringify(first, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))) as Presignature,
};

/** Every party's σ with `handles`, combined and verified; undefined if any party refuses (throws). */
function signWith(handles: Presignature[], digest: Uint8Array, tweak: bigint): EcdsaSignature | undefined {
  const shares = new Map<number, bigint>();
  try {
    handles.forEach((h, j) => shares.set(j, signShare(h, digest, { tweak })));
  } catch {
    return undefined;
  }
  const pub = (handles[0] as Presignature).public;
  const sig = combineSignature(pub, digest, shares, { tweak });
  return secp256k1.verify(sig.compact, digest, sig.publicKey, { prehash: false }) ? sig : undefined;
}

describe('attack: one presigning output signs twice', () => {
  it('no public way yields a second signature (fast-check over ways, messages and tweaks)', () => {
    const shares = fixtureShares('2of2');
    let run = 0;
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(ways)),
        fc.string(),
        fc.string(),
        fc.bigInt({ min: 0n, max: 3n }),
        (way, m1, m2, tweak) => {
          const outs = runPresign(shares, [0, 1], `attack-reuse-${run++}`).outputs as Output[];
          const firsts = outs.map((o) => new Presignature(o));
          const d1 = sha256(`first ${m1}`);
          const d2 = sha256(`second ${m2}`);
          expect(signWith(firsts, d1, 0n), 'the first signature').toBeDefined();
          const again = outs.map((o, j) => {
            try {
              return (ways[way] as (typeof ways)[string])(o, firsts[j] as Presignature);
            } catch {
              return undefined;
            }
          });
          const second = again.every((h) => h !== undefined) ? signWith(again, d2, tweak) : undefined;
          expect(second, `${way}: a second signature from one presigning output`).toBeUndefined();
        },
      ),
      { numRuns: 14 },
    );
  });
});
