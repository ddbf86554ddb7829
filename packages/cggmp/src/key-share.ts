/**
 * CGGMP21 key shares: types, validation and the versioned storage format (STYLE.md item 9).
 *
 * A {@link CoreKeyShare} is the output of key generation (or refresh): a Shamir share x_i of the
 * secret key with identifier I(i) = i + 1, every party's public share X_j = x_j·G, the public key
 * Y, the chain code and the session's rid. A {@link KeyShare} adds the party's auxiliary info
 * (Paillier–Blum key and every party's ring-Pedersen parameters), needed for presigning.
 *
 * Stored format `custodian.cggmp.key-share` version 1: JSON, points as 33-byte compressed hex,
 * scalars as 32-byte big-endian hex, Paillier integers as hex. It is validated when read.
 */
import {
  bigintToMinimalBytes,
  bytesToBigint,
  bytesToHex,
  secp256k1Group as G,
  hexToBytes,
  interpolatePoints,
  type Secp256k1Point,
} from '@custodian/crypto';
import { assertRingPedersenParams, SECURITY_112, SECURITY_128, type SecurityLevel } from '@custodian/paillier';
import type { AuxInfo } from './aux-info.js';

/** Output of threshold key generation for one party. `x` is SECRET. */
export interface CoreKeyShare {
  readonly curve: 'secp256k1';
  /** This party's 0-based index; its VSS identifier is i + 1. */
  readonly i: number;
  /** Number of parties. */
  readonly n: number;
  /** Threshold: any t parties can sign. */
  readonly t: number;
  /** Group public key Y. */
  readonly publicKey: Secp256k1Point;
  /** X_j = x_j·G for j = 0…n−1. */
  readonly publicShares: readonly Secp256k1Point[];
  /** SECRET Shamir share x_i (nonzero scalar). */
  readonly x: bigint;
  /** Jointly random BIP32 chain code, 32 bytes. */
  readonly chainCode: Uint8Array;
  /** Jointly random rid of the key generation, 32 bytes. */
  readonly rid: Uint8Array;
}

/** VSS identifiers of a key's parties: I(j) = j + 1. */
export function identifiers(n: number): bigint[] {
  return Array.from({ length: n }, (_, j) => BigInt(j + 1));
}

/**
 * Validate a core key share: sizes, ranges, x_i·G = X_i, and that every public share lies on one
 * polynomial of degree t−1 whose value at 0 is Y (each set {0…t−2, j} interpolates to Y).
 * @throws RangeError / Error naming the failed check
 */
export function validateCoreKeyShare(share: CoreKeyShare): CoreKeyShare {
  const { i, n, t } = share;
  if (share.curve !== 'secp256k1') throw new RangeError('key share: unsupported curve');
  if (!Number.isSafeInteger(n) || n < 1 || n > 1024) throw new RangeError('key share: n out of range');
  if (!Number.isSafeInteger(t) || t < 1 || t > n) throw new RangeError('key share: t out of range');
  if (!Number.isSafeInteger(i) || i < 0 || i >= n) throw new RangeError('key share: i out of range');
  if (share.publicShares.length !== n) throw new RangeError('key share: publicShares must have n entries');
  if (!G.isScalar(share.x) || share.x === 0n) throw new RangeError('key share: x out of range');
  if (share.chainCode.length !== 32 || share.rid.length !== 32) throw new RangeError('key share: chainCode/rid length');
  if (!G.mulBase(share.x).equals(share.publicShares[i] as Secp256k1Point)) {
    throw new Error('key share: x_i·G does not match X_i');
  }
  if (share.publicKey.is0() || share.publicShares.some((X) => X.is0())) throw new Error('key share: identity point');
  const ids = identifiers(n);
  const base = ids.slice(0, t - 1);
  for (let j = t - 1; j < n; j++) {
    const set = [...base, ids[j] as bigint];
    const pts = set.map((id) => share.publicShares[Number(id) - 1] as Secp256k1Point);
    if (!interpolatePoints(G, set, pts).equals(share.publicKey)) {
      throw new Error(`key share: public share X_${j} is inconsistent with the public key`);
    }
  }
  return share;
}

/** Stored-format name and version. */
export const KEY_SHARE_FORMAT = 'custodian.cggmp.key-share';
export const KEY_SHARE_VERSION = 1;

/** JSON shape of a stored core key share (version 1). */
export interface CoreKeyShareJson {
  readonly curve: 'secp256k1';
  readonly i: number;
  readonly n: number;
  readonly t: number;
  readonly publicKey: string;
  readonly publicShares: string[];
  readonly x: string;
  readonly chainCode: string;
  readonly rid: string;
}

/** Encode a core share to its JSON object (contains the SECRET x: store encrypted). */
export function coreKeyShareToJson(share: CoreKeyShare): CoreKeyShareJson {
  return {
    curve: share.curve,
    i: share.i,
    n: share.n,
    t: share.t,
    publicKey: bytesToHex(G.encodePoint(share.publicKey)),
    publicShares: share.publicShares.map((X) => bytesToHex(G.encodePoint(X))),
    x: bytesToHex(G.encodeScalar(share.x)),
    chainCode: bytesToHex(share.chainCode),
    rid: bytesToHex(share.rid),
  };
}

function hexField(value: unknown, field: string, length?: number): Uint8Array {
  if (typeof value !== 'string' || !/^([0-9a-f]{2})*$/.test(value))
    throw new TypeError(`${field}: expected lowercase hex`);
  const bytes = hexToBytes(value);
  if (length !== undefined && bytes.length !== length) throw new RangeError(`${field}: expected ${length} bytes`);
  return bytes;
}

/** Decode and validate a core share JSON object. @throws TypeError/RangeError/Error naming the field */
export function coreKeyShareFromJson(json: unknown): CoreKeyShare {
  if (typeof json !== 'object' || json === null) throw new TypeError('key share: expected an object');
  const o = json as Record<string, unknown>;
  if (!Array.isArray(o.publicShares)) throw new TypeError('key share: publicShares must be a list');
  return validateCoreKeyShare({
    curve: o.curve as 'secp256k1',
    i: o.i as number,
    n: o.n as number,
    t: o.t as number,
    publicKey: G.decodePoint(hexField(o.publicKey, 'publicKey', 33), 'publicKey'),
    publicShares: o.publicShares.map((X, j) =>
      G.decodePoint(hexField(X, `publicShares[${j}]`, 33), `publicShares[${j}]`),
    ),
    x: G.decodeScalar(hexField(o.x, 'x', 32), 'x'),
    chainCode: hexField(o.chainCode, 'chainCode', 32),
    rid: hexField(o.rid, 'rid', 32),
  });
}

/** A complete CGGMP21 key share: key generation output plus the party's aux info. SECRET. */
export interface KeyShare {
  readonly core: CoreKeyShare;
  readonly aux: AuxInfo;
}

/** Security levels by their stored name. */
export const LEVELS: Readonly<Record<string, SecurityLevel>> = { SECURITY_128, SECURITY_112 };

/**
 * Validate a complete key share: the core checks, aux info of the same party and size, every
 * R_j valid for the level, and N_i = p·q.
 * @throws RangeError / Error naming the failed check (never a secret value)
 */
export function validateKeyShare(share: KeyShare): KeyShare {
  validateCoreKeyShare(share.core);
  const { aux, core } = share;
  if (aux.i !== core.i || aux.n !== core.n) throw new RangeError('key share: aux info belongs to another party or set');
  if (LEVELS[aux.level.name] !== aux.level) throw new RangeError('key share: unknown security level');
  if (aux.R.length !== core.n) throw new RangeError('key share: aux R must have n entries');
  aux.R.forEach((R, j) => {
    try {
      assertRingPedersenParams(R, aux.level);
    } catch (e) {
      throw new RangeError(`key share: R[${j}]: ${(e as Error).message}`);
    }
  });
  if (aux.p * aux.q !== (aux.R[core.i] as { N: bigint }).N) throw new Error('key share: p·q ≠ N_i');
  return share;
}

const bigHex = (v: bigint) => bytesToHex(bigintToMinimalBytes(v));
function hexBig(value: unknown, field: string): bigint {
  return bytesToBigint(hexField(value, field));
}

/** Stored JSON of a complete key share (format `custodian.cggmp.key-share`, version 1). SECRET. */
export interface KeyShareJson {
  readonly format: typeof KEY_SHARE_FORMAT;
  readonly version: typeof KEY_SHARE_VERSION;
  readonly core: CoreKeyShareJson;
  readonly aux: {
    readonly level: string;
    readonly p: string;
    readonly q: string;
    readonly lambda: string;
    readonly R: { N: string; s: string; t: string }[];
  };
}

/** Serialise a key share to its versioned JSON (store it encrypted). */
export function keyShareToJson(share: KeyShare): KeyShareJson {
  return {
    format: KEY_SHARE_FORMAT,
    version: KEY_SHARE_VERSION,
    core: coreKeyShareToJson(share.core),
    aux: {
      level: share.aux.level.name,
      p: bigHex(share.aux.p),
      q: bigHex(share.aux.q),
      lambda: bigHex(share.aux.lambda),
      R: share.aux.R.map((R) => ({ N: bigHex(R.N), s: bigHex(R.s), t: bigHex(R.t) })),
    },
  };
}

/**
 * Read and validate a stored key share (any released version; today: version 1).
 * @throws TypeError / RangeError / Error naming the field or failed check
 */
export function keyShareFromJson(json: unknown): KeyShare {
  if (typeof json !== 'object' || json === null) throw new TypeError('key share: expected an object');
  const o = json as Record<string, unknown>;
  if (o.format !== KEY_SHARE_FORMAT) throw new RangeError('key share: unknown format');
  if (o.version !== KEY_SHARE_VERSION) throw new RangeError(`key share: unsupported version ${String(o.version)}`);
  const core = coreKeyShareFromJson(o.core);
  const a = o.aux as Record<string, unknown>;
  if (typeof a !== 'object' || a === null || !Array.isArray(a.R))
    throw new TypeError('key share: aux must be an object with R');
  const level = LEVELS[String(a.level)];
  if (!level) throw new RangeError('key share: unknown security level');
  const aux: AuxInfo = {
    level,
    i: core.i,
    n: core.n,
    p: hexBig(a.p, 'aux.p'),
    q: hexBig(a.q, 'aux.q'),
    lambda: hexBig(a.lambda, 'aux.lambda'),
    R: (a.R as Record<string, unknown>[]).map((R, j) => ({
      N: hexBig(R?.N, `aux.R[${j}].N`),
      s: hexBig(R?.s, `aux.R[${j}].s`),
      t: hexBig(R?.t, `aux.R[${j}].t`),
    })),
  };
  return validateKeyShare({ core, aux });
}
