import { createHash, createPublicKey, createVerify } from 'node:crypto';
import {
  type BroadcastAuth,
  bytesToHex,
  type Canonical,
  ckdPubSecp256k1,
  deriveSecp256k1,
  secp256k1Group as G,
  type Interceptor,
} from '@custodian/crypto';
import { ed25519AuthsForTest, resignForTest } from '@custodian/crypto/testing';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { HDKey } from '@scure/bip32';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  combineSignature,
  combineSignerShares,
  type EcdsaSignature,
  type KeyShare,
  Presignature,
  PresignatureSpentError,
  prepareSigning,
  presignProtocol,
  SignatureShareError,
  signingContext,
  signProtocol,
  signShare,
  verifyEcdsa,
} from '../src/index.js';
import { fixtureShares, runPresign, runSign, signersShares } from './helpers.js';

const sha256 = (data: string | Uint8Array) => new Uint8Array(createHash('sha256').update(data).digest());

/** OpenSSL (node:crypto) verification of a DER signature over sha256(preimage) with a JWK public key. */
function opensslVerify(publicKey33: Uint8Array, preimage: Uint8Array, der: Uint8Array): boolean {
  const P = secp256k1.Point.fromBytes(publicKey33).toAffine();
  const b64 = (v: bigint) => Buffer.from(v.toString(16).padStart(64, '0'), 'hex').toString('base64url');
  const key = createPublicKey({ key: { kty: 'EC', crv: 'secp256k1', x: b64(P.x), y: b64(P.y) }, format: 'jwk' });
  return createVerify('sha256').update(preimage).verify(key, der);
}

function expectValid(sig: EcdsaSignature, publicKey: Uint8Array, preimage: Uint8Array) {
  const digest = sha256(preimage);
  expect(sig.publicKey).toEqual(publicKey);
  expect(secp256k1.verify(sig.compact, digest, publicKey, { prehash: false })).toBe(true);
  expect(opensslVerify(publicKey, preimage, sig.der)).toBe(true);
  expect(sig.s <= G.order / 2n).toBe(true);
  const recovered = secp256k1.Signature.fromBytes(sig.compact).addRecoveryBit(sig.recovery).recoverPublicKey(digest);
  expect(recovered.toBytes(true)).toEqual(publicKey);
}

function presigs(set: '2of2' | '2of3' | '3of5', signers: number[], label: string): Presignature[] {
  const res = runPresign(fixtureShares(set), signers, label);
  expect(res.aborted.every((a) => a === undefined)).toBe(true);
  return res.outputs as Presignature[];
}

describe('CGGMP21 signing matrix (two independent verifiers: noble and OpenSSL)', () => {
  it.each([
    ['2of2', [0, 1]],
    ['2of3', [0, 1]],
    ['2of3', [0, 2]],
    ['2of3', [1, 2]],
    ['3of5', [0, 2, 4]],
  ] as const)('%s with signers %j', (set, signers) => {
    const pre = presigs(set, [...signers], `m-${set}-${signers.join('')}`);
    const preimage = new TextEncoder().encode(`transfer ${set} ${signers.join(',')}`);
    const res = runSign(pre, sha256(preimage), `s-${set}-${signers.join('')}`);
    expect(res.aborted.every((a) => a === undefined)).toBe(true);
    const sig = res.outputs[0]!;
    for (const o of res.outputs) expect(o!.compact).toEqual(sig.compact);
    expectValid(sig, G.encodePoint(fixtureShares(set)[0]!.core.publicKey), preimage);
  });
});

describe('HD wallets: signing under derived child keys', () => {
  it('a master-key presignature signs for a BIP32 child; the child key matches @scure/bip32', () => {
    const shares = fixtureShares('2of3');
    const core = shares[0]!.core;
    const Y = G.encodePoint(core.publicKey);
    const path = 'm/44/60/0/0/7';
    const child = deriveSecp256k1(Y, core.chainCode, path);
    const scure = new HDKey({ publicKey: Y, chainCode: core.chainCode }).derive(path);
    expect(bytesToHex(child.publicKey)).toBe(bytesToHex(scure.publicKey!));
    const pre = presigs('2of3', [1, 2], 'hd');
    const preimage = new TextEncoder().encode('withdraw to child');
    const res = runSign(pre, sha256(preimage), 'hd-sign', { tweak: child.tweak });
    expect(res.aborted.every((a) => a === undefined)).toBe(true);
    expectValid(res.outputs[0]!, scure.publicKey!, preimage);
  });
});

describe('presignature safety', () => {
  it('a presignature is consumed before the share leaves and reuse throws', () => {
    const pre = presigs('2of3', [0, 1], 'reuse');
    const p = pre[0]!;
    const digest = sha256('a');
    signShare(p, digest);
    expect(p.spent).toBe(true);
    expect(() => signShare(p, sha256('b'))).toThrow(PresignatureSpentError);
    expect(() => signShare(p, digest)).toThrow(PresignatureSpentError);
  });

  it('a presignature made for one party set cannot be used with another', () => {
    const pre = presigs('2of3', [0, 1], 'wrongset');
    const digest = sha256('x');
    // run it as if the set were 3 parties, or at another position: the protocol refuses at start,
    // before the presignature is consumed
    const start = (self: number, n: number) =>
      signProtocol({ presignature: pre[0]!, digest }).start({
        self,
        n,
        sessionId: sha256('ws'),
        rng: () => new Uint8Array(0),
      });
    expect(() => start(0, 3)).toThrow(/another party set/);
    expect(() => start(1, 2)).toThrow(/another party set/);
    expect(pre[0]!.spent).toBe(false);
    // a share from outside the set is refused by the combiner
    const [p0, p1] = pre as [Presignature, Presignature];
    const shares = new Map([
      [0, signShare(p0, digest)],
      [1, signShare(p1, digest)],
      [2, 5n],
    ]);
    expect(() => combineSignature(p0.public, digest, shares)).toThrow(SignatureShareError);
  });

  it('re-randomisation: the same presignature gives different R for different messages or tweaks', () => {
    // (public values only: the presignature itself signs once)
    const pub = presigs('2of2', [0, 1], 'rerand')[0]!.public;
    const rs = [
      [sha256('m1'), 0n],
      [sha256('m2'), 0n],
      [sha256('m1'), 5n],
    ].map(([d, tweak]) => signingContext(pub, d as Uint8Array, { tweak: tweak as bigint }).r);
    expect(new Set([...rs, G.mod(pub.R.toAffine().x)]).size).toBe(4);
  });

  it('digests must be 32 bytes', () => {
    const pre = presigs('2of2', [0, 1], 'len');
    expect(() => signShare(pre[0]!, new Uint8Array(31))).toThrow(RangeError);
    expect(pre[0]!.spent).toBe(false); // checked before the presignature is consumed
  });

  it('random messages and tweaks always give valid signatures, with or without the derived child key (fast-check)', () => {
    const shares = fixtureShares('2of2');
    const core = shares[0]!.core;
    const Y = G.encodePoint(core.publicKey);
    const pool = Array.from({ length: 4 }, (_, k) => presigs('2of2', [0, 1], `pool-${k}`));
    let used = 0;
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 64 }), fc.nat(20), fc.boolean(), (msg, idx, given) => {
        const pre = pool[used++]!;
        const child = deriveSecp256k1(Y, core.chainCode, [idx]);
        const node = ckdPubSecp256k1(
          { point: core.publicKey, publicKey: Y, chainCode: core.chainCode, tweak: 0n },
          idx,
        );
        expect(node.tweak).toBe(child.tweak);
        expect(bytesToHex(node.publicKey)).toBe(bytesToHex(child.publicKey));
        const res = runSign(pre, sha256(msg), `fc-${used}`, {
          tweak: child.tweak,
          ...(given ? { derived: node } : {}),
        });
        expect(res.aborted.every((a) => a === undefined)).toBe(true);
        expectValid(res.outputs[0]!, child.publicKey, msg);
        expect(bytesToHex(res.outputs[0]!.publicKey)).toBe(bytesToHex(child.publicKey));
      }),
      { numRuns: pool.length },
    );
  });
});

describe('combination by a party without presigning values (the coordinator)', () => {
  const shares3 = fixtureShares('2of3');
  const core = shares3[0]!.core;
  const Y = G.encodePoint(core.publicKey);

  /** σ_j of every signer of `pre` and what each hands the coordinator. */
  function signAll(pre: Presignature[], digest: Uint8Array, tweak: bigint) {
    return { ...signersShares(pre, digest, tweak), pub: pre[0]!.public };
  }

  it('gives the signature the signers combine, valid for noble and OpenSSL, master and child keys', () => {
    for (const [k, path] of [[], [0, 7], [3]].entries()) {
      const child = deriveSecp256k1(Y, core.chainCode, path);
      const preimage = new TextEncoder().encode(`coordinator combines ${k}`);
      const digest = sha256(preimage);
      const { sigmas, given, pub } = signAll(presigs('2of3', [0, 2], `cc-${k}`), digest, child.tweak);
      const byParties = combineSignature(pub, digest, sigmas, { tweak: child.tweak });
      const byCoordinator = combineSignerShares(core.publicKey, digest, [...given].reverse(), { tweak: child.tweak });
      expect(byCoordinator).toBeDefined();
      expect(bytesToHex(byCoordinator!.compact)).toBe(bytesToHex(byParties.compact));
      expect(byCoordinator!.recovery).toBe(byParties.recovery);
      expectValid(byCoordinator!, child.publicKey, preimage);
    }
  });

  it('returns undefined, never a wrong signature, for a bad share, R′, digest, key or a missing share', () => {
    const child = deriveSecp256k1(Y, core.chainCode, [1, 2]);
    const digest = sha256('tampered');
    const { given } = signAll(presigs('2of3', [1, 2], 'cc-bad'), digest, child.tweak);
    const [a, b] = given as [(typeof given)[0], (typeof given)[0]];
    const combine = (xs: typeof given, d = digest, key = core.publicKey, tweak = child.tweak) =>
      combineSignerShares(key, d, xs, { tweak });
    expect(combine([a, b])).toBeDefined();
    expect(combine([a, { ...b, s: G.mod(b.s + 1n) }])).toBeUndefined();
    expect(combine([a, { ...b, s: G.order }])).toBeUndefined();
    expect(combine([a])).toBeUndefined();
    expect(combine([a, b, b])).toBeUndefined();
    expect(combine([])).toBeUndefined();
    const otherR = G.encodePoint(G.mulBase(12345n));
    expect(combine([a, { ...b, Rp: otherR }])).toBeUndefined();
    expect(
      combine([
        { ...a, Rp: otherR },
        { ...b, Rp: otherR },
      ]),
    ).toBeUndefined();
    expect(
      combine([
        { ...a, Rp: new Uint8Array(33) },
        { ...b, Rp: new Uint8Array(33) },
      ]),
    ).toBeUndefined();
    expect(combine([a, b], sha256('another digest'))).toBeUndefined();
    expect(combine([a, b], digest, core.publicKey, G.mod(child.tweak + 1n))).toBeUndefined();
    expect(combine([a, b], digest, G.mulBase(99n))).toBeUndefined();
  });
});

describe('online signing with fixed-base tables', () => {
  it('verifyEcdsa agrees with noble on valid and tampered signatures, master and child keys (fast-check)', () => {
    fc.assert(
      fc.property(
        // a few keys (each gets a cached width-10 table, ≈ 85 ms), random tweaks, digests and tampering
        fc.constantFrom(7n, G.order - 2n, 0x1234_5678_9abc_def0_1234_5678_9abc_def0n),
        fc.bigInt({ min: 0n, max: G.order - 1n }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.nat(3),
        (x, tweak, digest, tamper) => {
          const Y = G.mulBase(x);
          const childSecret = G.mod(x + tweak);
          fc.pre(childSecret !== 0n);
          const sk = G.encodeScalar(childSecret);
          const child = G.encodePoint(G.mulBase(childSecret));
          const sig = secp256k1.Signature.fromBytes(secp256k1.sign(digest, sk, { prehash: false }));
          const m = G.mod(BigInt(`0x${bytesToHex(digest)}`));
          let { r, s } = sig;
          let md = m;
          if (tamper === 1) r = G.mod(r + 1n) || 1n;
          if (tamper === 2) s = G.mod(s + 1n) || 1n;
          if (tamper === 3) md = G.mod(m + 1n);
          const compact = new Uint8Array(64);
          compact.set(G.encodeScalar(r), 0);
          compact.set(G.encodeScalar(s), 32);
          const mdBytes = G.encodeScalar(md);
          const noble = secp256k1.verify(compact, mdBytes, child, { prehash: false, lowS: false });
          expect(verifyEcdsa(Y, tweak, md, r, s)).toBe(noble);
          expect(noble).toBe(tamper === 0);
        },
      ),
      { numRuns: 60 },
    );
    expect(verifyEcdsa(G.G, 0n, 1n, 0n, 1n)).toBe(false);
    expect(verifyEcdsa(G.G, 0n, 1n, 1n, G.order)).toBe(false);
  });

  it('a presignature decoded from storage (no tables) signs, with or without prepareSigning', () => {
    // fresh point instances, as after decoding from the signer's store
    const fresh = (p: Presignature): Presignature => Presignature.import(p.export());
    const Y = G.encodePoint(fixtureShares('2of3')[0]!.core.publicKey);
    const plain = presigs('2of3', [1, 2], 'untabled').map(fresh);
    const a = runSign(plain, sha256('stored a'), 'untabled-a');
    expectValid(a.outputs[0]!, Y, new TextEncoder().encode('stored a'));
    const prepared = presigs('2of3', [1, 2], 'prepared').map(fresh);
    for (const p of prepared) prepareSigning(p.public);
    const b = runSign(prepared, sha256('stored b'), 'untabled-b');
    expectValid(b.outputs[0]!, Y, new TextEncoder().encode('stored b'));
  });
});

describe('identifiable abort in presigning and signing', () => {
  const shares3 = () => fixtureShares('2of3');
  const bump = (body: Canonical, path: string[]): Canonical => {
    const copy = structuredClone(body) as Record<string, unknown>;
    let o = copy;
    for (const k of path.slice(0, -1)) o = o[k] as Record<string, unknown>;
    const last = path[path.length - 1]!;
    o[last] = (o[last] as bigint) + 1n;
    return copy as Canonical;
  };
  const tamper =
    (from: number, round: number, kind: 'p2p' | 'broadcast', path: string[]) =>
    (d: { to: number; message: { from: number; round: number; kind: string; body: Canonical } }) =>
      d.message.from === from && d.message.round === round && d.message.kind === kind
        ? [{ ...d, message: { ...d.message, body: bump(d.message.body, path) } }]
        : [d];

  it.each([
    ['Πenc', 0, ['z1'], 'proof.enc'],
    ['Πaff-g (γ)', 1, ['aff', 'z1'], 'proof.aff-g'],
    ['Πaff-g (x)', 1, ['affHat', 'z2'], 'proof.aff-g'],
    ['Πlog* (Γ)', 1, ['logG', 'z1'], 'proof.log-star'],
    ['Πlog* (Δ)', 2, ['z1'], 'proof.log-star'],
  ] as const)('a bad %s names its prover', (what, round, path, check) => {
    const res = runPresign(shares3(), [0, 2], `bad-${what}`, tamper(1, round, 'p2p', [...path]) as never);
    expect(res.aborted[0]?.culprits).toMatchObject([
      { party: 1, reason: expect.stringContaining(`invalid ${what}`), check },
    ]);
    expect(res.outputs).toEqual([undefined, undefined]);
  });

  it('an equivocated broadcast (K_i, validly signed both ways) is detected and names the sender', () => {
    const { auths } = ed25519AuthsForTest(3);
    const name = presignProtocol({ share: fixtureShares('2of3')[0] as KeyShare, signers: [0, 1, 2] }).name;
    const intercept: Interceptor = (d) => {
      if (d.message.from !== 0 || d.message.round !== 0 || d.message.kind !== 'broadcast' || d.to !== 2) return [d];
      const body = bump(d.message.body, ['G']);
      return [{ ...d, message: resignForTest(auths[0] as BroadcastAuth, name, { ...d.message, body }) }];
    };
    const res = runPresign(fixtureShares('2of3'), [0, 1, 2], 'equiv', intercept, true);
    for (const i of [1, 2]) expect(res.aborted[i]?.culprits.map((c) => c.party)).toEqual([0]);
  });

  it('a wrong σ_i is named by every honest signer', () => {
    const pre = presigs('3of5', [1, 2, 3], 'bad-sigma');
    const res = runSign(pre, sha256('m'), 'bad-sigma-sign', {
      intercept: (d) =>
        d.message.from === 2 ? [{ ...d, message: { ...d.message, body: { sigma: G.encodeScalar(42n) } } }] : [d],
    });
    expect(res.aborted[0]?.culprits).toMatchObject([
      { party: 2, reason: 'invalid signature share σ_j', check: 'sign.signature-share' },
    ]);
    expect(res.aborted[1]?.culprits).toMatchObject([
      { party: 2, reason: 'invalid signature share σ_j', check: 'sign.signature-share' },
    ]);
    expect(res.outputs.slice(0, 2)).toEqual([undefined, undefined]);
  });
});
