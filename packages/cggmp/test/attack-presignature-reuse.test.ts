/**
 * Attack (issue #20 item 5): sign two messages with ONE presigning output through the package's
 * public API. Two ECDSA signatures with one nonce reveal the whole key, so a second signature must
 * never exist: for every way below (copies of the handle, export/import, relabelled exports, the
 * runtime protocol, the combiner helpers, another message or tweak) the second use throws.
 *
 * On the code before the one-shot handle (a `Presignature` wrapping a plain `PresignatureData`),
 * the first version of this test failed: "spread copy of the output: a second signature from one
 * presigning output" — the second signature verified.
 */
import { createHash } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  combinerShare,
  combineSignature,
  combineSignerShares,
  type EcdsaSignature,
  Presignature,
  PresignatureUseError,
  signingContext,
  signShare,
} from '../src/index.js';
import { fixtureShares, runPresign, runSign } from './helpers.js';

const sha256 = (data: string | Uint8Array) => new Uint8Array(createHash('sha256').update(data).digest());
const shares = fixtureShares('2of2');
const bigintJson = (_k: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

/** An export re-labelled: the signer's legacy format name and another Γ (a new id for a registry keyed by public values). */
function relabel(bytes: Uint8Array): Uint8Array {
  const o = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  o.format = 'custodian.signer.presignature';
  o.Gamma = o.R;
  return new TextEncoder().encode(JSON.stringify(o));
}

/** Swallow a refusal: undefined stands for "no handle". */
function attempt<T>(f: () => T): T | undefined {
  try {
    return f();
  } catch (e) {
    // a refusal must be a typed error, never a secret in a message
    expect(e instanceof PresignatureUseError || e instanceof TypeError).toBe(true);
    return undefined;
  }
}

/**
 * Each way gets one party's presigning output and returns the handle of the first signature and a
 * thunk for the second use's handle (called after the first signature).
 */
type Way = (out: Presignature) => { first: Presignature; second: () => unknown };
const ways: Record<string, Way> = {
  'sign twice with the output': (out) => ({ first: out, second: () => out }),
  'construct a handle from the output': (out) => ({
    first: out,
    second: () => Reflect.construct(Presignature, [Symbol('mint'), out.public, out.i, 1n, 1n]),
  }),
  'spread copy of the output': (out) => ({ first: out, second: () => ({ ...out }) }),
  'structuredClone of the output': (out) => ({ first: out, second: () => structuredClone(out) }),
  'JSON copy of the output': (out) => ({ first: out, second: () => JSON.parse(JSON.stringify(out, bigintJson)) }),
  'prototype copy of the output': (out) => ({
    first: out,
    second: () => Object.assign(Object.create(Presignature.prototype), out),
  }),
  'sign, then export and import': (out) => ({ first: out, second: () => Presignature.import(out.export()) }),
  'export, sign with the import, use the exported handle': (out) => {
    const bytes = out.export();
    return { first: Presignature.import(bytes), second: () => out };
  },
  'export, sign with the import, import again': (out) => {
    const bytes = out.export();
    return { first: Presignature.import(bytes), second: () => Presignature.import(bytes) };
  },
  'import twice before signing': (out) => {
    const bytes = out.export();
    const first = Presignature.import(bytes);
    const twin = attempt(() => Presignature.import(bytes));
    return { first, second: () => twin };
  },
  'export twice': (out) => {
    const bytes = out.export();
    const again = attempt(() => out.export());
    return { first: Presignature.import(bytes), second: () => (again ? Presignature.import(again) : undefined) };
  },
  'export, import, export, sign; import the first export': (out) => {
    const bytes = out.export();
    const later = Presignature.import(bytes).export();
    return { first: Presignature.import(later), second: () => Presignature.import(bytes) };
  },
  'import a relabelled export': (out) => {
    const bytes = out.export();
    return { first: Presignature.import(bytes), second: () => Presignature.import(relabel(bytes)) };
  },
  'discard, import, sign; use the discarded handle or import again': (out) => {
    const bytes = out.export();
    const h = Presignature.import(bytes);
    h.discard();
    return { first: Presignature.import(bytes), second: () => (h.spent ? Presignature.import(bytes) : h) };
  },
};

type Mode = 'signShare' | 'signProtocol' | 'combiner';

/** A verified signature of every party's handle; undefined if any party refuses (throws). */
function signWith(handles: unknown[], digest: Uint8Array, tweak: bigint, mode: Mode): EcdsaSignature | undefined {
  const hs = handles as Presignature[];
  const pub = (hs[0] as Presignature).public;
  let sig: EcdsaSignature | undefined;
  try {
    if (mode === 'signProtocol') {
      const res = runSign(hs, digest, `attack-${mode}-${bytesLabel(digest)}`, { tweak });
      sig = res.aborted.every((a) => a === undefined) ? res.outputs[0] : undefined;
    } else {
      const sigmas = new Map<number, bigint>(hs.map((h, j) => [j, signShare(h, digest, { tweak })]));
      sig =
        mode === 'signShare'
          ? combineSignature(pub, digest, sigmas, { tweak })
          : combineSignerShares(
              pub.publicKey,
              digest,
              [...sigmas.values()].map((s) => combinerShare(s, signingContext(pub, digest, { tweak }))),
              { tweak },
            );
    }
  } catch (e) {
    expect(e instanceof PresignatureUseError || e instanceof TypeError).toBe(true);
    return undefined;
  }
  return sig && secp256k1.verify(sig.compact, digest, sig.publicKey, { prehash: false }) ? sig : undefined;
}
const bytesLabel = (d: Uint8Array) => Buffer.from(d.subarray(0, 6)).toString('hex');

describe('attack: one presigning output signs twice', () => {
  let run = 0;
  it.each(Object.keys(ways))('%s: no second signature (fast-check over messages, tweaks and signing paths)', (name) => {
    const way = ways[name] as Way;
    fc.assert(
      fc.property(
        fc.constantFrom<Mode>('signShare', 'signProtocol', 'combiner'),
        fc.constantFrom<Mode>('signShare', 'signProtocol', 'combiner'),
        fc.string(),
        fc.string(),
        fc.bigInt({ min: 0n, max: 3n }),
        (mode1, mode2, m1, m2, tweak) => {
          const outs = runPresign(shares, [0, 1], `attack-reuse-${name}-${run++}`).outputs as Presignature[];
          const uses = outs.map(way);
          const first = signWith(
            uses.map((u) => u.first),
            sha256(`first ${m1}`),
            0n,
            mode1,
          );
          expect(first !== undefined, 'the first signature').toBe(true);
          const again = uses.map((u) => attempt(u.second));
          const second = again.every((h) => h !== undefined)
            ? signWith(again, sha256(`second ${m2}`), tweak, mode2)
            : undefined;
          expect(second === undefined, `${name}: a second signature from one presigning output`).toBe(true);
        },
      ),
      { numRuns: 3 },
    );
  });

  it('a copy of a handle carries no secret field (spread, JSON, structuredClone)', () => {
    const [out] = runPresign(shares, [0, 1], 'attack-reuse-fields').outputs as Presignature[];
    const h = out as Presignature;
    const copies = [{ ...h }, JSON.parse(JSON.stringify(h, bigintJson)), structuredClone(h)];
    for (const c of copies) expect(Object.keys(c).sort()).toEqual(['i', 'public']);
    expect(Object.keys(h.public).sort()).toEqual(['Delta', 'Gamma', 'R', 'S', 'publicKey', 'signers']);
    expect(Object.getOwnPropertyNames(Presignature.prototype).sort()).toEqual([
      'constructor',
      'discard',
      'export',
      'id',
      'spent',
    ]);
    h.discard();
  });
});
