/**
 * Public tweaks of a FROST key, applied consistently to the group key, every signer's share and
 * every verifying share, without anyone learning the full key.
 *
 * - HD (additive) tweak δ: child secret x' = x + δ. Shamir shares s_i of x become s_i + δ (every
 *   signer adds δ, since the Lagrange coefficients of any signer set sum to 1:
 *   Σ λ_i (s_i + δ) = x + δ); verifying shares Y_i + δ·G; group key PK + δ·G. δ comes from
 *   `@custodian/crypto`'s `deriveEd25519` (additive Ed25519 scheme, not SLIP-0010) or
 *   `deriveSecp256k1` (BIP32 CKDpub on the compressed full point).
 * - Taproot (BIP341 "taproot_tweak_seckey"): with internal key P (after the HD tweak), if P has odd
 *   Y every share, verifying share and commitment is negated (x-only keys, BIP340 "lift_x");
 *   then t = int(hash_TapTweak(x(P) ‖ merkleRoot)) (merkleRoot empty for a key-path-only output,
 *   32 bytes with a script tree; t ≥ n is rejected) is added like δ. The output key is
 *   Q = P_even + t·G; noble's `schnorr_FROST` then normalises Q to even Y when signing, so the
 *   threshold signature is a plain BIP340 signature under x(Q).
 */
import { bytesToBigint, deriveEd25519, deriveSecp256k1 } from '@custodian/crypto';
import type { FrostPublic, FrostSecret } from '@noble/curves/abstract/frost.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import type { KeyShare } from './keyshare.js';
import { type AnyPoint, getSuite } from './suites.js';

/** What a signing session signs under. */
export interface TweakOptions {
  /**
   * Non-hardened derivation path (BIP32 notation `m/0/1` or indices) from the key share's group
   * key and chain code. Absent: sign under the master key.
   */
  readonly derivationPath?: readonly number[] | string;
  /**
   * `secp256k1-tr` only: BIP341 key-path spend. `merkleRoot` is the 32-byte script-tree root, or
   * empty (length 0) for an output without a script tree (BIP86). Absent: a plain BIP340
   * signature under the (derived) internal key.
   */
  readonly taproot?: { readonly merkleRoot: Uint8Array };
}

/** noble key package for signing under the tweaked key. */
export interface TweakedKey {
  /** noble public package (signers, commitments with [0] = tweaked group key, verifying shares). */
  readonly pub: FrostPublic;
  /** noble secret package: own identifier and tweaked signing share. SECRET. */
  readonly secret: FrostSecret;
  /**
   * The key a standard verifier uses: Ed25519 32 bytes (RFC 8032); secp256k1 33 bytes compressed;
   * secp256k1-tr 32-byte x-only key (BIP340) — the Taproot output key when `taproot` is set.
   */
  readonly verifyingKey: Uint8Array;
  /** HD tweak δ applied (0 when no path). */
  readonly hdTweak: bigint;
  /** BIP341 tweak t applied (undefined without `taproot`). */
  readonly tapTweak?: bigint;
}

/**
 * BIP341 TapTweak of an x-only internal key: t = int(hash_TapTweak(x ‖ merkleRoot)).
 * @param internalKey 32-byte x-only key
 * @param merkleRoot empty or 32 bytes
 * @returns tweak t, output key Q (x-only, 32 bytes) and its Y parity (0 even, 1 odd)
 * @throws RangeError for wrong lengths or t ≥ n (BIP341 "raise ValueError"); Error for x not on the curve
 */
export function taprootTweak(
  internalKey: Uint8Array,
  merkleRoot: Uint8Array,
): { tweak: bigint; outputKey: Uint8Array; parity: 0 | 1 } {
  if (!(internalKey instanceof Uint8Array) || internalKey.length !== 32)
    throw new RangeError('internalKey: expected 32 bytes');
  const t = tapTweakScalar(internalKey, merkleRoot);
  const P = schnorr.utils.lift_x(bytesToBigint(internalKey));
  const Q = P.add(schnorr.Point.BASE.multiply(t));
  const enc = Q.toBytes(true);
  return { tweak: t, outputKey: enc.slice(1), parity: enc[0] === 3 ? 1 : 0 };
}

function tapTweakScalar(x: Uint8Array, merkleRoot: Uint8Array): bigint {
  if (!(merkleRoot instanceof Uint8Array) || (merkleRoot.length !== 0 && merkleRoot.length !== 32)) {
    throw new RangeError('merkleRoot: expected 0 or 32 bytes');
  }
  const t = bytesToBigint(schnorr.utils.taggedHash('TapTweak', x, merkleRoot));
  if (t >= schnorr.Point.Fn.ORDER) throw new RangeError('TapTweak hash ≥ group order');
  if (t === 0n) throw new RangeError('TapTweak hash is zero');
  return t;
}

/**
 * Build noble's key package for signing under the (optionally) tweaked key, for the given signer
 * identifiers (only their verifying shares are included).
 * @throws RangeError for a Taproot option on a non-TR suite, a bad path, or signers not in the key
 */
export function tweakedKey(share: KeyShare, signers: readonly bigint[], tweak: TweakOptions = {}): TweakedKey {
  const suite = getSuite(share.suite);
  const G = suite.group;
  const Fn = suite.frost.utils.Fn;
  const index = (id: bigint) => {
    const k = share.identifiers.indexOf(id);
    if (k < 0) throw new RangeError(`signers: identifier ${id} is not in the key`);
    return k;
  };
  const signerIdx = signers.map(index);
  if (tweak.taproot !== undefined && suite.name !== 'secp256k1-tr') {
    throw new RangeError('taproot: only for the secp256k1-tr suite');
  }
  if (tweak.derivationPath === undefined && tweak.taproot === undefined) {
    // untweaked: the stored encodings are used as they are
    const verifyingShares: Record<string, Uint8Array> = {};
    signers.forEach((id, k) => {
      verifyingShares[suite.idHex(id)] = share.verifyingShares[signerIdx[k] as number] as Uint8Array;
    });
    return {
      pub: {
        signers: { min: share.threshold, max: share.identifiers.length },
        commitments: [...share.vssCommitment],
        verifyingShares,
      } as unknown as FrostPublic,
      secret: {
        identifier: suite.idHex(share.identifier),
        signingShare: Fn.toBytes(share.signingShare),
      } as unknown as FrostSecret,
      verifyingKey: suite.name === 'secp256k1-tr' ? share.groupPublicKey.slice(1) : share.groupPublicKey,
      hdTweak: 0n,
    };
  }
  // key shares are validated when loaded (decodeKeyShare / DKG output): decode without the
  // (costly) subgroup check; noble re-validates every point it parses while signing
  const dec = (b: Uint8Array) => suite.pointFromBytesTrusted(b);
  let P: AnyPoint = dec(share.groupPublicKey);
  let C: AnyPoint[] = share.vssCommitment.map((c, k) => (k === 0 ? P : dec(c)));
  let Y: AnyPoint[] = signerIdx.map((k) => dec(share.verifyingShares[k] as Uint8Array));
  let s = share.signingShare;
  let hdTweak = 0n;
  const add = (d: bigint) => {
    const D = G.mulBase(d);
    s = G.mod(s + d);
    P = P.add(D);
    C = [P, ...C.slice(1)];
    Y = Y.map((y) => y.add(D));
  };
  if (tweak.derivationPath !== undefined) {
    const pk = share.groupPublicKey;
    const d =
      suite.name === 'ed25519'
        ? deriveEd25519(pk, share.chainCode, tweak.derivationPath)
        : deriveSecp256k1(pk, share.chainCode, tweak.derivationPath);
    hdTweak = d.tweak;
    if (hdTweak !== 0n) add(hdTweak);
  }
  let tapTweak: bigint | undefined;
  if (tweak.taproot !== undefined) {
    if (P.toBytes(true)[0] === 3) {
      s = G.mod(-s);
      P = P.negate();
      C = C.map((c) => c.negate());
      Y = Y.map((y) => y.negate());
    }
    tapTweak = tapTweakScalar(P.toBytes(true).slice(1), tweak.taproot.merkleRoot);
    add(tapTweak);
  }
  const verifyingShares: Record<string, Uint8Array> = {};
  signers.forEach((id, k) => {
    verifyingShares[suite.idHex(id)] = G.encodePoint(Y[k]);
  });
  const pkBytes = G.encodePoint(P);
  return {
    pub: {
      signers: { min: share.threshold, max: share.identifiers.length },
      commitments: C.map((c) => G.encodePoint(c)),
      verifyingShares,
    } as unknown as FrostPublic,
    secret: { identifier: suite.idHex(share.identifier), signingShare: Fn.toBytes(s) } as unknown as FrostSecret,
    verifyingKey: suite.name === 'secp256k1-tr' ? pkBytes.slice(1) : pkBytes,
    hdTweak,
    ...(tapTweak !== undefined ? { tapTweak } : {}),
  };
}
