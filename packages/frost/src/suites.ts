/**
 * FROST ciphersuites (RFC 9591 §6) as used by Custodian, over `@noble/curves`' FROST
 * implementation: we orchestrate noble's `DKG.round1/2/3`, `commit`, `signShare`, `verifyShare`
 * and `aggregate`; no FROST arithmetic is re-implemented here.
 *
 * - `ed25519`: FROST(Ed25519, SHA-512), RFC 9591 §6.1 — signatures are RFC 8032 Ed25519 signatures.
 * - `secp256k1`: FROST(secp256k1, SHA-256), RFC 9591 §6.5 — 65-byte signatures R(33) ‖ z(32).
 * - `secp256k1-tr`: FROST(secp256k1, SHA-256)-TR (ZcashFoundation `frost-secp256k1-tr`, context
 *   `FROST-secp256k1-SHA256-TR-v1`) — BIP340 signatures (64 bytes, x-only keys, even-Y handling).
 *
 * Identifiers are nonzero scalars (RFC 9591 §4.3, "identifier"); on the wire and in key shares we
 * carry them as bigints. Noble names them by the hex of their scalar encoding (little-endian for
 * Ed25519, big-endian for secp256k1); {@link Suite.idHex} converts.
 */
import { type Ed25519Point, ed25519Group, type Group, type Secp256k1Point, secp256k1Group } from '@custodian/crypto';
import type { FROST } from '@noble/curves/abstract/frost.js';
import { ed25519, ed25519_FROST } from '@noble/curves/ed25519.js';
import { schnorr_FROST, secp256k1, secp256k1_FROST, secp256k1_hasher } from '@noble/curves/secp256k1.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';

/** Supported ciphersuites. */
export type SuiteName = 'ed25519' | 'secp256k1' | 'secp256k1-tr';

/** All suite names, for validation. */
export const SUITE_NAMES: readonly SuiteName[] = ['ed25519', 'secp256k1', 'secp256k1-tr'];

// biome-ignore lint/suspicious/noExplicitAny: the two groups have different point classes
export type AnyPoint = any;

/** A ciphersuite: noble's FROST instance plus the validated group of `@custodian/crypto`. */
export interface Suite {
  readonly name: SuiteName;
  /** RFC 9591 contextString, e.g. `FROST-ED25519-SHA512-v1`. */
  readonly contextString: string;
  /** noble's FROST API for this suite. */
  readonly frost: FROST;
  /**
   * noble's FROST API whose `DKG.round3` yields the UNTWEAKED key package. For `secp256k1-tr`
   * noble's own round3 auto-applies the BIP341 empty-tree tweak (frost-secp256k1-tr
   * compatibility); Custodian stores the internal key and applies HD and Taproot tweaks at
   * signing time, so it finalises with the plain secp256k1 suite's round3 (same group; round3
   * hashes nothing, it checks VSS and sums shares).
   */
  readonly dkgFinal: FROST;
  /** Validated group (point/scalar codecs, arithmetic) from `@custodian/crypto`. */
  readonly group: Group<AnyPoint>;
  /** Length of a DKG proof of knowledge in bytes: 64 (Ed25519, TR) or 65 (secp256k1). */
  readonly pokLength: number;
  /**
   * Decode a point WITHOUT the prime-order-subgroup check (noble `Point.fromBytes`: length,
   * on-curve, canonical). Only for points already validated (a loaded key share) or that noble
   * validates fully right after (nonce commitments). @throws Error for a bad encoding
   */
  pointFromBytesTrusted(bytes: Uint8Array): AnyPoint;
  /** noble identifier (hex of the scalar encoding) for a bigint identifier. */
  idHex(id: bigint): string;
  /** bigint identifier from noble's hex. */
  idFromHex(hex: string): bigint;
  /**
   * Verify one DKG proof of knowledge (ZF FROST / noble `ProofOfKnowledge`: Schnorr proof for
   * φ_0 with challenge c = H_dkg(id ‖ φ_0 ‖ R), H_dkg the suite's hash-to-scalar with DST
   * `contextString ‖ "dkg"`). Used only to NAME the culprit after noble's `DKG.round2` rejected a
   * package (noble's error does not say whose). Never throws for a malformed proof: returns false.
   */
  verifyProofOfKnowledge(id: bigint, phi0: Uint8Array, proof: Uint8Array): boolean;
}

function ed25519HashToScalar(dst: Uint8Array, msg: Uint8Array): bigint {
  const h = sha512(concatBytes(dst, msg));
  let x = 0n;
  for (let i = h.length - 1; i >= 0; i--) x = (x << 8n) | BigInt(h[i] as number);
  return ed25519Group.mod(x);
}

function makeSuite(
  name: SuiteName,
  contextString: string,
  frost: FROST,
  dkgFinal: FROST,
  group: Group<AnyPoint>,
  pokLength: number,
  hashToScalar: (dst: Uint8Array, msg: Uint8Array) => bigint,
  decodeProof: (proof: Uint8Array) => { R: AnyPoint; z: bigint },
  fromBytes: (bytes: Uint8Array) => AnyPoint,
): Suite {
  const dst = utf8ToBytes(`${contextString}dkg`);
  const Fn = frost.utils.Fn;
  return Object.freeze({
    name,
    contextString,
    frost,
    dkgFinal,
    group,
    pokLength,
    pointFromBytesTrusted: (bytes: Uint8Array) => {
      if (bytes.length !== group.pointLength) throw new RangeError(`point: expected ${group.pointLength} bytes`);
      return fromBytes(bytes);
    },
    idHex: (id: bigint) => bytesToHex(Fn.toBytes(id)),
    idFromHex: (hex: string) => Fn.fromBytes(hexToBytes(hex)),
    verifyProofOfKnowledge(id: bigint, phi0: Uint8Array, proof: Uint8Array): boolean {
      try {
        if (proof.length !== pokLength) return false;
        const phi = group.decodePoint(phi0, 'φ_0');
        const { R, z } = decodeProof(proof);
        const c = hashToScalar(dst, concatBytes(group.encodeScalar(id), group.encodePoint(phi), group.encodePoint(R)));
        return R.equals(group.mulPublic(group.G, z).subtract(group.mulPublic(phi, c)));
      } catch {
        return false;
      }
    },
  });
}

const secpHash = (dst: Uint8Array, msg: Uint8Array) => secp256k1_hasher.hashToScalar(msg, { DST: dst });

/** FROST(Ed25519, SHA-512), RFC 9591 §6.1. */
export const ed25519Suite: Suite = makeSuite(
  'ed25519',
  'FROST-ED25519-SHA512-v1',
  ed25519_FROST,
  ed25519_FROST,
  ed25519Group as Group<Ed25519Point> as Group<AnyPoint>,
  64,
  ed25519HashToScalar,
  (p) => ({
    R: ed25519Group.decodePoint(p.subarray(0, 32), 'proof.R'),
    z: ed25519Group.decodeScalar(p.subarray(32), 'proof.z', { allowZero: true }),
  }),
  (b) => ed25519.Point.fromBytes(b),
);

/** FROST(secp256k1, SHA-256), RFC 9591 §6.5. */
export const secp256k1Suite: Suite = makeSuite(
  'secp256k1',
  'FROST-secp256k1-SHA256-v1',
  secp256k1_FROST,
  secp256k1_FROST,
  secp256k1Group as Group<Secp256k1Point> as Group<AnyPoint>,
  65,
  secpHash,
  (p) => ({
    R: secp256k1Group.decodePoint(p.subarray(0, 33), 'proof.R'),
    z: secp256k1Group.decodeScalar(p.subarray(33), 'proof.z', { allowZero: true }),
  }),
  (b) => secp256k1.Point.fromBytes(b),
);

/** FROST(secp256k1, SHA-256)-TR: BIP340 / Taproot (ZF frost-secp256k1-tr). */
export const secp256k1TrSuite: Suite = makeSuite(
  'secp256k1-tr',
  'FROST-secp256k1-SHA256-TR-v1',
  schnorr_FROST,
  secp256k1_FROST,
  secp256k1Group as Group<Secp256k1Point> as Group<AnyPoint>,
  64,
  secpHash,
  (p) => ({
    R: secp256k1Group.decodePoint(concatBytes(Uint8Array.of(0x02), p.subarray(0, 32)), 'proof.R'),
    z: secp256k1Group.decodeScalar(p.subarray(32), 'proof.z', { allowZero: true }),
  }),
  (b) => secp256k1.Point.fromBytes(b),
);

/**
 * Look a suite up by name.
 * @throws RangeError for an unknown name
 */
export function getSuite(name: SuiteName): Suite {
  switch (name) {
    case 'ed25519':
      return ed25519Suite;
    case 'secp256k1':
      return secp256k1Suite;
    case 'secp256k1-tr':
      return secp256k1TrSuite;
    default:
      throw new RangeError(`suite: unknown FROST ciphersuite ${JSON.stringify(name)}`);
  }
}

/** Adapt a `RandomSource` to noble's `RNG` signature (default length 32 bytes). */
export function nobleRng(rng: (length: number) => Uint8Array): (bytesLength?: number) => Uint8Array<ArrayBuffer> {
  return (bytesLength = 32) => rng(bytesLength) as Uint8Array<ArrayBuffer>;
}

/**
 * Encode a public point that may be the identity (refresh commitments): the group encoding, and
 * for secp256k1 the identity as the single byte 0x00 (SEC 1 §2.3.3); Ed25519's identity has its
 * RFC 8032 encoding (0x01 ‖ 0^31).
 */
export function encodePointOrIdentity(suite: Suite, p: AnyPoint): Uint8Array {
  if (p.is0()) return suite.group.name === 'secp256k1' ? Uint8Array.of(0) : p.toBytes();
  return suite.group.encodePoint(p);
}

/** Inverse of {@link encodePointOrIdentity}. @throws RangeError / Error naming `field` */
export function decodePointOrIdentity(suite: Suite, bytes: Uint8Array, field: string): AnyPoint {
  if (suite.group.name === 'secp256k1' && bytes instanceof Uint8Array && bytes.length === 1 && bytes[0] === 0) {
    return suite.group.identity;
  }
  return suite.group.decodePoint(bytes, field, { allowIdentity: true });
}
