/**
 * BIP32 §"Public parent key → public child key" (CKDpub) on secp256k1: checked against the BIP32
 * test vectors (test-vectors/bip32/, from bitcoin/bips bip-0032.mediawiki) and, by property, against
 * @scure/bip32's private derivation.
 */
import { readFileSync } from 'node:fs';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { HDKey } from '@scure/bip32';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesToBigint, bytesToHex, hexToBytes } from '../src/bytes.js';
import { secp256k1Group } from '../src/group.js';
import {
  Bip32InvalidChildError,
  derivedChild,
  deriveSecp256k1,
  HARDENED_OFFSET,
  parseDerivationPath,
} from '../src/hd.js';

// ---------------------------------------------------------------------------------------------
// A small parser for the BIP32 mediawiki test-vector text.

interface ChainNode {
  /** Path as written, e.g. "m/0H/1". */
  readonly label: string;
  /** Child indices; hardened ones have HARDENED_OFFSET added. */
  readonly indices: number[];
  xpub?: string;
  xprv?: string;
}

interface Bip32Vector {
  readonly number: number;
  seed?: string;
  readonly chains: ChainNode[];
  /** Vector 5: invalid extended keys with the reason given. */
  readonly invalid: { key: string; reason: string }[];
}

function parseChainPath(text: string): { label: string; indices: number[] } {
  const parts = text.replace(/<sub>H<\/sub>/g, 'H').split('/');
  if (parts[0] !== 'm') throw new Error(`unexpected chain ${text}`);
  const indices = parts.slice(1).map((p) => {
    const m = /^(\d+)(H?)$/.exec(p);
    if (!m) throw new Error(`unexpected path segment ${p}`);
    return Number(m[1]) + (m[2] ? HARDENED_OFFSET : 0);
  });
  return { label: parts.join('/'), indices };
}

function parseBip32Vectors(text: string): Bip32Vector[] {
  const vectors: Bip32Vector[] = [];
  let current: Bip32Vector | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    let m: RegExpExecArray | null;
    if ((m = /^===Test vector (\d+)===$/.exec(line))) {
      current = { number: Number(m[1]), chains: [], invalid: [] };
      vectors.push(current);
      continue;
    }
    if (!current) continue;
    if ((m = /^Seed \(hex\): ([0-9a-f]+)$/.exec(line))) {
      current.seed = m[1];
    } else if ((m = /^\* Chain (\S+)$/.exec(line))) {
      current.chains.push(parseChainPath(m[1] as string));
    } else if ((m = /^\*\* ext (pub|prv): (\S+)$/.exec(line))) {
      const node = current.chains.at(-1);
      if (!node) throw new Error(`key before chain: ${line}`);
      if (m[1] === 'pub') node.xpub = m[2];
      else node.xprv = m[2];
    } else if ((m = /^\* (\S+) \((.+)\)$/.exec(line))) {
      current.invalid.push({ key: m[1] as string, reason: m[2] as string });
    }
  }
  return vectors;
}

const vectors = parseBip32Vectors(
  readFileSync(new URL('../../../test-vectors/bip32/bip-0032-test-vectors.mediawiki', import.meta.url), 'utf8'),
);

/**
 * Single CKDpub steps checkable from the vectors: a node whose xpub is given, followed by its
 * non-hardened child. Counted by hand from bip-0032.mediawiki:
 *   vector 1: m/0H → m/0H/1; m/0H/1/2H → m/0H/1/2H/2; m/0H/1/2H/2 → m/0H/1/2H/2/1000000000  (3)
 *   vector 2: m → m/0; m/0/2147483647H → …/1; m/0/2147483647H/1/2147483646H → …/2            (3)
 *   vectors 3 and 4: every step is hardened                                                  (0)
 */
const EXPECTED_SINGLE_STEPS = 6;

interface Step {
  readonly vector: number;
  readonly parent: ChainNode;
  readonly child: ChainNode;
  /** Non-hardened indices leading from parent to child. */
  readonly path: number[];
}

/** All (ancestor, descendant) pairs in vectors 1–4 joined by non-hardened steps only. */
function nonHardenedSteps(): Step[] {
  const steps: Step[] = [];
  for (const v of vectors.filter((x) => x.number >= 1 && x.number <= 4)) {
    for (const parent of v.chains) {
      for (const child of v.chains) {
        const extra = child.indices.slice(parent.indices.length);
        const isDescendant =
          extra.length > 0 &&
          child.indices.length === parent.indices.length + extra.length &&
          parent.indices.every((x, k) => child.indices[k] === x);
        if (isDescendant && extra.every((x) => x < HARDENED_OFFSET)) {
          steps.push({ vector: v.number, parent, child, path: extra });
        }
      }
    }
  }
  return steps;
}

const allSteps = nonHardenedSteps();
const singleSteps = allSteps.filter((s) => s.path.length === 1);

function checkStep(step: Step): void {
  const { parent, child, path } = step;
  if (!parent.xpub || !child.xpub || !parent.xprv || !child.xprv) throw new Error('vector node without keys');
  const parentPub = HDKey.fromExtendedKey(parent.xpub);
  const childPub = HDKey.fromExtendedKey(child.xpub);
  const got = deriveSecp256k1(parentPub.publicKey as Uint8Array, parentPub.chainCode as Uint8Array, path);
  expect(bytesToHex(got.publicKey), `${step.vector} ${child.label} public key`).toBe(
    bytesToHex(childPub.publicKey as Uint8Array),
  );
  expect(bytesToHex(got.chainCode), `${step.vector} ${child.label} chain code`).toBe(
    bytesToHex(childPub.chainCode as Uint8Array),
  );
  expect(got.path).toEqual(path);
  // Tweak: kpar + δ ≡ ki (mod n).
  const kpar = bytesToBigint(HDKey.fromExtendedKey(parent.xprv).privateKey as Uint8Array);
  const kchild = bytesToBigint(HDKey.fromExtendedKey(child.xprv).privateKey as Uint8Array);
  expect(secp256k1Group.mod(kpar + got.tweak), `${step.vector} ${child.label} tweak`).toBe(kchild);
}

describe('BIP32 test vectors (bip-0032.mediawiki)', () => {
  it('parses vectors 1–5', () => {
    expect(vectors.map((v) => v.number)).toEqual([1, 2, 3, 4, 5]);
    expect(vectors.map((v) => v.chains.length)).toEqual([6, 6, 2, 3, 0]);
    for (const v of vectors.slice(0, 4)) {
      expect(v.seed).toMatch(/^[0-9a-f]+$/);
      for (const node of v.chains) {
        expect(node.xpub).toMatch(/^xpub/);
        expect(node.xprv).toMatch(/^xprv/);
      }
    }
  });

  it(`CKDpub: every non-hardened child step of vectors 1–4 (${EXPECTED_SINGLE_STEPS} steps)`, () => {
    expect(singleSteps.length).toBeGreaterThan(0);
    expect(singleSteps.length).toBe(EXPECTED_SINGLE_STEPS);
    for (const step of singleSteps) checkStep(step);
  });

  it('CKDpub over several non-hardened steps (vector 1: m/0H/1/2H → m/0H/1/2H/2/1000000000)', () => {
    const multi = allSteps.filter((s) => s.path.length > 1);
    expect(multi.map((s) => `${s.vector}:${s.parent.label}→${s.child.label}`)).toEqual([
      '1:m/0H/1/2H→m/0H/1/2H/2/1000000000',
    ]);
    for (const step of multi) checkStep(step);
  });

  it('the master xpub of each vector is the one @scure/bip32 derives from the seed', () => {
    for (const v of vectors.slice(0, 4)) {
      const master = HDKey.fromMasterSeed(hexToBytes(v.seed as string));
      expect(master.publicExtendedKey).toBe(v.chains[0]?.xpub);
    }
  });

  it('vector 5: invalid extended keys are rejected by @scure/bip32 (decoder used by these tests)', () => {
    const invalid = vectors[4]?.invalid ?? [];
    expect(invalid.length).toBe(16);
    for (const { key, reason } of invalid) {
      expect(() => HDKey.fromExtendedKey(key), reason).toThrow();
    }
  });
});

// ---------------------------------------------------------------------------------------------

const nonHardenedIndex = fc.oneof(
  fc.integer({ min: 0, max: 20 }),
  fc.integer({ min: 0, max: HARDENED_OFFSET - 1 }),
  fc.constant(HARDENED_OFFSET - 1),
);

describe('CKDpub equals private derivation (@scure/bip32), property', () => {
  it('for random seeds and non-hardened paths of length 1–5, from the master xpub', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 64 }),
        fc.array(nonHardenedIndex, { minLength: 1, maxLength: 5 }),
        (seed, path) => {
          const master = HDKey.fromMasterSeed(seed);
          let child = master;
          for (const i of path) child = child.deriveChild(i);
          const got = deriveSecp256k1(master.publicKey as Uint8Array, master.chainCode as Uint8Array, path);
          expect(bytesToHex(got.publicKey)).toBe(bytesToHex(child.publicKey as Uint8Array));
          expect(bytesToHex(got.chainCode)).toBe(bytesToHex(child.chainCode as Uint8Array));
          const kMaster = bytesToBigint(master.privateKey as Uint8Array);
          expect(secp256k1Group.mod(kMaster + got.tweak)).toBe(bytesToBigint(child.privateKey as Uint8Array));
          // String notation gives the same result.
          const viaString = deriveSecp256k1(
            master.publicKey as Uint8Array,
            master.chainCode as Uint8Array,
            `m/${path.join('/')}`,
          );
          expect(viaString.tweak).toBe(got.tweak);
          expect(bytesToHex(viaString.publicKey)).toBe(bytesToHex(got.publicKey));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('tweaks add along a path: derive(a ++ b) = derive(derive(a), b)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 64 }),
        fc.array(nonHardenedIndex, { minLength: 0, maxLength: 3 }),
        fc.array(nonHardenedIndex, { minLength: 0, maxLength: 3 }),
        (seed, a, b) => {
          const master = HDKey.fromMasterSeed(seed);
          const pk = master.publicKey as Uint8Array;
          const cc = master.chainCode as Uint8Array;
          const whole = deriveSecp256k1(pk, cc, [...a, ...b]);
          const first = deriveSecp256k1(pk, cc, a);
          const second = deriveSecp256k1(first.publicKey, first.chainCode, b);
          expect(bytesToHex(second.publicKey)).toBe(bytesToHex(whole.publicKey));
          expect(bytesToHex(second.chainCode)).toBe(bytesToHex(whole.chainCode));
          expect(secp256k1Group.mod(first.tweak + second.tweak)).toBe(whole.tweak);
        },
      ),
      { numRuns: 30 },
    );
  });
});

describe('derivedChild (memoised CKDpub walk)', () => {
  it('gives the child of deriveSecp256k1 for any key and path, from memoised prefixes or not (fast-check)', () => {
    // two masters share paths: the memo must keep them apart; short paths over a small index set
    // make later runs start from prefixes memoised by earlier ones
    const masters = [
      HDKey.fromMasterSeed(new Uint8Array(32).fill(1)),
      HDKey.fromMasterSeed(new Uint8Array(32).fill(2)),
    ];
    fc.assert(
      fc.property(fc.nat(1), fc.array(fc.nat(5), { minLength: 0, maxLength: 4 }), (m, path) => {
        const master = masters[m] as HDKey;
        const pk = master.publicKey as Uint8Array;
        const cc = master.chainCode as Uint8Array;
        const want = deriveSecp256k1(pk, cc, path);
        const got = derivedChild(secp256k1Group.decodePoint(pk, 'publicKey'), cc, path);
        expect(got.tweak).toBe(want.tweak);
        expect(bytesToHex(got.publicKey)).toBe(bytesToHex(want.publicKey));
        expect(bytesToHex(secp256k1Group.encodePoint(got.point))).toBe(bytesToHex(want.publicKey));
        expect(bytesToHex(got.chainCode)).toBe(bytesToHex(want.chainCode));
      }),
      { numRuns: 80 },
    );
  });

  it('a hardened index is a RangeError, also below a memoised prefix', () => {
    const master = HDKey.fromMasterSeed(new Uint8Array(32).fill(3));
    const Y = secp256k1Group.decodePoint(master.publicKey as Uint8Array, 'publicKey');
    derivedChild(Y, master.chainCode as Uint8Array, [7]);
    expect(() => derivedChild(Y, master.chainCode as Uint8Array, [7, HARDENED_OFFSET])).toThrow(RangeError);
  });
});

describe('paths and inputs', () => {
  const master = HDKey.fromMasterSeed(hexToBytes('000102030405060708090a0b0c0d0e0f'));
  const pk = master.publicKey as Uint8Array;
  const cc = master.chainCode as Uint8Array;

  it('parseDerivationPath accepts BIP32 notation and index arrays', () => {
    expect(parseDerivationPath('m/44/60/0/0/5')).toEqual([44, 60, 0, 0, 5]);
    expect(parseDerivationPath('m')).toEqual([]);
    expect(parseDerivationPath(`m/${HARDENED_OFFSET - 1}`)).toEqual([HARDENED_OFFSET - 1]);
    expect(parseDerivationPath([1, 2, 3])).toEqual([1, 2, 3]);
    expect(parseDerivationPath([])).toEqual([]);
  });

  it('the empty path returns the parent with tweak 0', () => {
    const got = deriveSecp256k1(pk, cc, 'm');
    expect(got.publicKey).toEqual(pk);
    expect(got.chainCode).toEqual(cc);
    expect(got.tweak).toBe(0n);
  });

  it('a hardened index is a RangeError naming the index', () => {
    expect(() => deriveSecp256k1(pk, cc, "m/44'/60/0")).toThrow(RangeError);
    expect(() => deriveSecp256k1(pk, cc, "m/44'/60/0")).toThrow(/hardened index 44'/);
    expect(() => deriveSecp256k1(pk, cc, 'm/44h')).toThrow(/hardened index 44h/);
    expect(() => deriveSecp256k1(pk, cc, 'm/44H')).toThrow(/hardened index 44H/);
    expect(() => deriveSecp256k1(pk, cc, [0, HARDENED_OFFSET])).toThrow(/hardened index 2147483648/);
    expect(() => deriveSecp256k1(pk, cc, [HARDENED_OFFSET + 44])).toThrow(RangeError);
    expect(() => deriveSecp256k1(pk, cc, `m/${HARDENED_OFFSET}`)).toThrow(/hardened index 2147483648/);
    expect(() => deriveSecp256k1(pk, cc, [0xffff_ffff])).toThrow(RangeError);
  });

  it('malformed paths and indices are RangeErrors', () => {
    const bad: (readonly number[] | string)[] = [
      '',
      '/0',
      '44/60',
      'M/0',
      'm/',
      'm//1',
      'm/0/',
      'm/-1',
      'm/+1',
      'm/01',
      'm/1.5',
      'm/ 1',
      'm/0x10',
      'm/a',
      'm/4294967296',
      'm/99999999999999999999',
      [-1],
      [1.5],
      [Number.NaN],
      [Number.POSITIVE_INFINITY],
      [2 ** 32],
      new Array(256).fill(0),
    ];
    for (const path of bad) expect(() => deriveSecp256k1(pk, cc, path), JSON.stringify(path)).toThrow(RangeError);
    expect(parseDerivationPath(new Array(255).fill(0))).toHaveLength(255);
  });

  it('wrong types are TypeErrors; wrong lengths RangeErrors; invalid points Errors', () => {
    expect(() => deriveSecp256k1(pk, cc, ['1' as unknown as number])).toThrow(TypeError);
    expect(() => deriveSecp256k1(pk, cc, 5 as unknown as string)).toThrow(TypeError);
    expect(() => deriveSecp256k1(pk.slice(1), cc, [0])).toThrow(RangeError);
    expect(() => deriveSecp256k1(pk, cc.slice(1), [0])).toThrow(RangeError);
    expect(() => deriveSecp256k1(secp256k1.Point.BASE.toBytes(false), cc, [0])).toThrow(RangeError);
    const offCurve = hexToBytes(`02${'00'.repeat(31)}07`);
    expect(() => deriveSecp256k1(offCurve, cc, [0])).toThrow(/publicKey/);
  });

  it('does not alias its inputs', () => {
    const ccCopy = Uint8Array.from(cc);
    const got = deriveSecp256k1(pk, ccCopy, 'm');
    ccCopy.fill(0);
    expect(got.chainCode).toEqual(cc);
  });

  it('Bip32InvalidChildError carries the index and reason', () => {
    const e = new Bip32InvalidChildError('secp256k1', 7, 2, 'tweak-out-of-range');
    expect(e).toBeInstanceOf(Error);
    expect(e).not.toBeInstanceOf(RangeError);
    expect(e.name).toBe('Bip32InvalidChildError');
    expect([e.curve, e.index, e.depth, e.reason]).toEqual(['secp256k1', 7, 2, 'tweak-out-of-range']);
    expect(e.message).toMatch(/index 7/);
  });
});

// ---------------------------------------------------------------------------------------------

describe('threshold shares with the additive tweak (test-only demonstration)', () => {
  it('x + δ signs for the derived child key, and δ added to one additive share gives child shares', () => {
    const rng = (len: number) => crypto.getRandomValues(new Uint8Array(len));
    const x = secp256k1Group.randomScalar(rng);
    // Additive 3-party sharing x1 + x2 + x3 ≡ x (mod n). Plain arithmetic: test only.
    const x1 = secp256k1Group.randomScalar(rng);
    const x2 = secp256k1Group.randomScalar(rng);
    const x3 = secp256k1Group.mod(x - x1 - x2);
    const X = secp256k1Group.encodePoint(secp256k1Group.mulBase(x));
    const chainCode = rng(32);

    // Wallet creation: public derivation only.
    const child = deriveSecp256k1(X, chainCode, 'm/44/60/0/0/5');
    const childPoint = secp256k1Group.decodePoint(child.publicKey, 'child');

    // Reconstructed child key (test only) signs ECDSA verifying under the derived public key.
    const childSecret = secp256k1Group.mod(x + child.tweak);
    const msg = new TextEncoder().encode('withdraw 1 BTC to bc1q…');
    const sig = secp256k1.sign(msg, secp256k1Group.encodeScalar(childSecret));
    expect(secp256k1.verify(sig, msg, child.publicKey)).toBe(true);
    // and not under the master key
    expect(secp256k1.verify(sig, msg, X)).toBe(false);

    // δ added to exactly one party's share: the shares now sum to the child key.
    const childShares = [secp256k1Group.mod(x1 + child.tweak), x2, x3];
    const sumPoint = secp256k1Group.sum(childShares.map((s) => secp256k1Group.mulBase(s)));
    expect(sumPoint.equals(childPoint)).toBe(true);
    // Adding δ to every additive share would be wrong (that adds 3δ).
    const wrong = [x1, x2, x3].map((s) => secp256k1Group.mulBase(secp256k1Group.mod(s + child.tweak)));
    expect(secp256k1Group.sum(wrong).equals(childPoint)).toBe(false);
  });
});
