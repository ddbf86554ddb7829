/**
 * Session roles and message bodies of the generic reshare (src/reshare.ts): the role list check,
 * the old public package and the shape checks of round bodies. Identifiers are 32-byte big-endian; points and scalars use the group's
 * encodings (proto/custodian/v1/frost.proto and cggmp.proto `ReshareOldPackage`). Internal to
 * @custodian/crypto except {@link ReshareOldPackage}, {@link ResharePartyRole} and
 * {@link validateReshareRoles}.
 */
import { bigintToBytes, bytesToBigint } from './bytes.js';
import type { Canonical } from './encoding.js';
import type { Group, GroupPoint } from './group.js';
import type { PartyIndex } from './runtime/types.js';
import { validateIdentifiers } from './vss.js';

/** The public package of the OLD sharing, as a dealer holds it. */
export interface ReshareOldPackage<P> {
  /** Old threshold t. */
  readonly threshold: number;
  /** Old identifiers of all n old parties. */
  readonly identifiers: readonly bigint[];
  /** Y_j = s_j·G, same order as `identifiers`. */
  readonly verifyingShares: readonly P[];
  /** Group public key PK. */
  readonly publicKey: P;
  /** 32-byte chain code carried to the new shares. */
  readonly chainCode: Uint8Array;
  /** Epoch of the old shares (0 where the scheme has none). */
  readonly epoch: number;
}

/** 32-byte big-endian encoding of an identifier. */
export const idBytes = (id: bigint) => bigintToBytes(id, 32);

export function encodeOld<P extends GroupPoint<P>>(group: Group<P>, old: ReshareOldPackage<P>): Canonical {
  return {
    threshold: old.threshold,
    identifiers: old.identifiers.map(idBytes),
    verifyingShares: old.verifyingShares.map((Y) => group.encodePoint(Y)),
    publicKey: group.encodePoint(old.publicKey),
    chainCode: old.chainCode,
    epoch: old.epoch,
  };
}

export function record(body: unknown, field: string): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || body instanceof Uint8Array) {
    throw new TypeError(`${field}: expected a record`);
  }
  return body as Record<string, unknown>;
}

export function bytes(v: unknown, field: string, length?: number): Uint8Array {
  if (!(v instanceof Uint8Array)) throw new TypeError(`${field}: expected bytes`);
  if (length !== undefined && v.length !== length) throw new RangeError(`${field}: expected ${length} bytes`);
  return v;
}

export function count(v: unknown, field: string, max: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > max) {
    throw new RangeError(`${field}: expected an integer in [0, ${max}]`);
  }
  return v;
}

export function list(v: unknown, field: string, min: number, max: number): unknown[] {
  if (!Array.isArray(v) || v.length < min || v.length > max) {
    throw new RangeError(`${field}: expected ${min}…${max} items`);
  }
  return v;
}

export function decodeOld<P extends GroupPoint<P>>(group: Group<P>, body: unknown): ReshareOldPackage<P> {
  const o = record(body, 'old');
  const identifiers = list(o.identifiers, 'old.identifiers', 1, 1024).map((b, k) =>
    bytesToBigint(bytes(b, `old.identifiers[${k}]`, 32)),
  );
  validateIdentifiers(group, identifiers);
  const threshold = count(o.threshold, 'old.threshold', identifiers.length);
  if (threshold < 1) throw new RangeError('old.threshold: must be ≥ 1');
  const verifyingShares = list(o.verifyingShares, 'old.verifyingShares', identifiers.length, identifiers.length).map(
    (b, k) => group.decodePoint(bytes(b, `old.verifyingShares[${k}]`), `old.verifyingShares[${k}]`),
  );
  return {
    threshold,
    identifiers,
    verifyingShares,
    publicKey: group.decodePoint(bytes(o.publicKey, 'old.publicKey'), 'old.publicKey'),
    chainCode: bytes(o.chainCode, 'old.chainCode', 32),
    epoch: count(o.epoch, 'old.epoch', Number.MAX_SAFE_INTEGER),
  };
}

/** The role of one runtime index in a reshare session. */
export interface ResharePartyRole {
  /** Old identifier: present iff this party deals (an old party taking part). */
  readonly oldIdentifier?: bigint;
  /** New identifier: present iff this party receives a new share. */
  readonly newIdentifier?: bigint;
}

/** Check the shape of a reshare session. @throws TypeError / RangeError */
export function validateReshareRoles<P extends GroupPoint<P>>(
  group: Group<P>,
  parties: readonly ResharePartyRole[],
  newThreshold: number,
): { dealers: PartyIndex[]; receivers: PartyIndex[]; oldIds: bigint[]; newIds: bigint[] } {
  if (!Array.isArray(parties)) throw new TypeError('reshare: parties must be an array');
  // a one-party session exchanges no message, so the runtime would never run its rounds
  if (parties.length < 2) throw new RangeError('reshare: a session needs at least 2 parties');
  const dealers: PartyIndex[] = [];
  const receivers: PartyIndex[] = [];
  parties.forEach((p, k) => {
    if (p.oldIdentifier === undefined && p.newIdentifier === undefined) {
      throw new RangeError(`reshare: party ${k} neither deals nor receives`);
    }
    if (p.oldIdentifier !== undefined) dealers.push(k);
    if (p.newIdentifier !== undefined) receivers.push(k);
  });
  const oldIds = dealers.map((k) => parties[k]?.oldIdentifier as bigint);
  const newIds = receivers.map((k) => parties[k]?.newIdentifier as bigint);
  if (dealers.length === 0) throw new RangeError('reshare: no dealer');
  validateIdentifiers(group, oldIds);
  validateIdentifiers(group, newIds);
  for (const id of [...oldIds, ...newIds]) {
    if (id <= 0n || id >= group.order) throw new RangeError('reshare: identifier not in [1, q)');
  }
  if (!Number.isSafeInteger(newThreshold) || newThreshold < 1 || newThreshold > newIds.length) {
    throw new RangeError(`reshare: new threshold ${newThreshold} not in [1, ${newIds.length}]`);
  }
  return { dealers, receivers, oldIds, newIds: [...newIds].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)) };
}
