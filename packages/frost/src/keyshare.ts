/**
 * FROST key share: what one party keeps after DKG (or refresh), versioned and validated when it
 * is read (STYLE.md item 9; compatible fixture in `test/fixtures/keyshare-v1.json`).
 *
 * Storage format v1: UTF-8 JSON
 * ```
 * { "format": "custodian.frost.keyshare", "version": 1, "suite": "ed25519"|"secp256k1"|"secp256k1-tr",
 *   "threshold": t, "identifiers": [hex…], "identifier": hex, "signingShare": hex(32),
 *   "vssCommitment": [hex point…] (t points, [0] = group public key), "verifyingShares": [hex point…] (n),
 *   "chainCode": hex(32), "epoch": integer }
 * ```
 * Identifiers are hex of the big-endian integer value; points are the group encoding (33-byte
 * SEC1-compressed for secp256k1 — for `secp256k1-tr` the INTERNAL, untweaked key; 32 bytes
 * RFC 8032 §5.1.2 for Ed25519); the signing share is the suite's scalar encoding (RFC 9591
 * SerializeScalar: little-endian for Ed25519, big-endian for secp256k1).
 */
import {
  bigintToBytes,
  bytesToBigint,
  bytesToHex,
  CryptoError,
  hexToBytes,
  vssEvaluateCommitments,
} from '@custodian/crypto';
import { type AnyPoint, getSuite, SUITE_NAMES, type Suite, type SuiteName } from './suites.js';

/** Current key-share format version. */
export const KEY_SHARE_VERSION = 1;
const FORMAT = 'custodian.frost.keyshare';

/** One party's FROST key share. `signingShare` is SECRET. */
export interface KeyShare {
  readonly version: 1;
  readonly suite: SuiteName;
  /** t: signers needed (RFC 9591 MIN_PARTICIPANTS), 2 ≤ t ≤ n. */
  readonly threshold: number;
  /** Identifiers of all n parties, in DKG party order (runtime index i ↔ identifiers[i]). */
  readonly identifiers: readonly bigint[];
  /** This party's identifier (one of `identifiers`). */
  readonly identifier: bigint;
  /** Secret share s_i (0 ≤ s_i < q). */
  readonly signingShare: bigint;
  /** Group public key PK = vssCommitment[0] (encoded point). */
  readonly groupPublicKey: Uint8Array;
  /** Summed Feldman commitment (t encoded points); f(id)·G = Σ_k id^k·C_k. */
  readonly vssCommitment: readonly Uint8Array[];
  /** Verifying shares Y_j = s_j·G, one per identifier, same order (encoded points). */
  readonly verifyingShares: readonly Uint8Array[];
  /** Jointly random 32-byte chain code (BIP32-style HD derivation from the group key). */
  readonly chainCode: Uint8Array;
  /** 0 after DKG, incremented by every refresh. */
  readonly epoch: number;
}

/** Error for a stored key share that does not validate. */
export class KeyShareError extends CryptoError {
  constructor(message: string) {
    super('KEY_SHARE_INVALID', message);
  }
}

function fail(msg: string): never {
  throw new KeyShareError(`key share: ${msg}`);
}

/**
 * Check every invariant of a key share: suite, threshold, identifiers (nonzero, distinct, below
 * the group order), points decode, PK = C_0, Y_j = Σ_k id_j^k·C_k for every j, and s_i·G = Y_i.
 * @throws KeyShareError naming the failed field (never the secret)
 */
export function validateKeyShare(share: KeyShare): KeyShare {
  if (share.version !== KEY_SHARE_VERSION) fail(`unsupported version ${String(share.version)}`);
  if (!SUITE_NAMES.includes(share.suite)) fail(`unknown suite ${JSON.stringify(share.suite)}`);
  const suite = getSuite(share.suite);
  const G = suite.group;
  const n = share.identifiers.length;
  const t = share.threshold;
  if (!Number.isSafeInteger(t) || t < 2 || t > n) fail(`threshold ${t} not in [2, n=${n}]`);
  const seen = new Set<bigint>();
  for (const id of share.identifiers) {
    if (typeof id !== 'bigint' || id <= 0n || id >= G.order) fail('identifier out of range');
    if (seen.has(id)) fail('duplicate identifier');
    seen.add(id);
  }
  const self = share.identifiers.indexOf(share.identifier);
  if (self < 0) fail('own identifier not among identifiers');
  if (!G.isScalar(share.signingShare)) fail('signingShare out of range');
  if (!(share.chainCode instanceof Uint8Array) || share.chainCode.length !== 32) fail('chainCode must be 32 bytes');
  if (!Number.isSafeInteger(share.epoch) || share.epoch < 0) fail('epoch must be a non-negative integer');
  if (share.vssCommitment.length !== t) fail(`vssCommitment must have ${t} points`);
  if (share.verifyingShares.length !== n) fail(`verifyingShares must have ${n} points`);
  let C: AnyPoint[];
  try {
    C = share.vssCommitment.map((c, k) => G.decodePoint(c, `vssCommitment[${k}]`));
  } catch (e) {
    fail((e as Error).message);
  }
  if (!G.decodePoint(share.groupPublicKey, 'groupPublicKey').equals(C[0])) fail('groupPublicKey ≠ vssCommitment[0]');
  share.identifiers.forEach((id, j) => {
    let Y: AnyPoint;
    try {
      Y = G.decodePoint(share.verifyingShares[j] as Uint8Array, `verifyingShares[${j}]`);
    } catch (e) {
      fail((e as Error).message);
    }
    if (!Y.equals(vssEvaluateCommitments(G, C, id))) fail(`verifyingShares[${j}] inconsistent with vssCommitment`);
  });
  if (!G.mulBase(share.signingShare).equals(G.decodePoint(share.verifyingShares[self] as Uint8Array, 'Y_self'))) {
    fail('signingShare does not match own verifying share');
  }
  return share;
}

/** Serialise a key share in format v1 (UTF-8 JSON, see module docs). Validates first. */
export function encodeKeyShare(share: KeyShare): Uint8Array {
  validateKeyShare(share);
  const suite = getSuite(share.suite);
  const hexId = (id: bigint) => id.toString(16).padStart(64, '0');
  const obj = {
    format: FORMAT,
    version: KEY_SHARE_VERSION,
    suite: share.suite,
    threshold: share.threshold,
    identifiers: share.identifiers.map(hexId),
    identifier: hexId(share.identifier),
    signingShare: bytesToHex(suite.group.encodeScalar(share.signingShare)),
    vssCommitment: share.vssCommitment.map(bytesToHex),
    verifyingShares: share.verifyingShares.map(bytesToHex),
    chainCode: bytesToHex(share.chainCode),
    epoch: share.epoch,
  };
  return new TextEncoder().encode(JSON.stringify(obj));
}

const HEX = /^([0-9a-f]{2})*$/;

function hex(v: unknown, field: string, len?: number): Uint8Array {
  if (typeof v !== 'string' || !HEX.test(v)) fail(`${field}: expected lowercase hex`);
  const b = hexToBytes(v);
  if (len !== undefined && b.length !== len) fail(`${field}: expected ${len} bytes`);
  return b;
}

/**
 * Parse and validate a stored key share (any supported format version; currently v1).
 * @throws KeyShareError for malformed JSON, an unknown format/version, or any failed invariant
 */
export function decodeKeyShare(bytes: Uint8Array): KeyShare {
  if (!(bytes instanceof Uint8Array)) throw new TypeError('key share: expected Uint8Array');
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    fail('not valid UTF-8 JSON');
  }
  if (typeof o !== 'object' || o === null) fail('not an object');
  if (o.format !== FORMAT) fail('unknown format tag');
  if (o.version !== KEY_SHARE_VERSION) fail(`unsupported version ${String(o.version)}`);
  if (!SUITE_NAMES.includes(o.suite as SuiteName)) fail('unknown suite');
  const suite: Suite = getSuite(o.suite as SuiteName);
  if (!Array.isArray(o.identifiers) || !Array.isArray(o.vssCommitment) || !Array.isArray(o.verifyingShares)) {
    fail('identifiers, vssCommitment and verifyingShares must be arrays');
  }
  const id = (v: unknown, f: string) => bytesToBigint(hex(v, f, 32));
  const vss = (o.vssCommitment as unknown[]).map((c, k) => hex(c, `vssCommitment[${k}]`, suite.group.pointLength));
  let signingShare: bigint;
  try {
    signingShare = suite.group.decodeScalar(hex(o.signingShare, 'signingShare', 32), 'signingShare', {
      allowZero: true,
    });
  } catch {
    fail('signingShare not a canonical scalar');
  }
  const share: KeyShare = {
    version: 1,
    suite: suite.name,
    threshold: typeof o.threshold === 'number' ? o.threshold : fail('threshold must be a number'),
    identifiers: (o.identifiers as unknown[]).map((v, k) => id(v, `identifiers[${k}]`)),
    identifier: id(o.identifier, 'identifier'),
    signingShare,
    groupPublicKey: vss[0] ?? fail('vssCommitment is empty'),
    vssCommitment: vss,
    verifyingShares: (o.verifyingShares as unknown[]).map((c, k) =>
      hex(c, `verifyingShares[${k}]`, suite.group.pointLength),
    ),
    chainCode: hex(o.chainCode, 'chainCode', 32),
    epoch: typeof o.epoch === 'number' ? o.epoch : fail('epoch must be a number'),
  };
  return validateKeyShare(share);
}

/** Big-endian 32-byte encoding of an identifier (for transcripts). */
export function identifierBytes(id: bigint): Uint8Array {
  return bigintToBytes(id, 32);
}
