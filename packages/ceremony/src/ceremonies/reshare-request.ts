/**
 * The checks of a RESHARE request before any protocol message (issue #22; reshare.ts step 1 and
 * the static part of step 2): the Admin-signed key change (packages/wire key-change.ts) against the
 * signer's trusted Admin devices, the request's fields against the signed document, the document's
 * keys against the key record (a party that holds the key) and the party set against the record.
 *
 * Replay (review H1): a document is good for one change. Every party refuses it after its
 * `expires_at` or when that is more than 24 h ahead (KEY_CHANGE_NOT_AUTHORIZED), and a party that
 * holds the key takes part only while its record is exactly the document's `base` (epoch, parties
 * in order, threshold; KEY_CHANGE_NOT_AUTHORIZED otherwise): once committed the epoch has moved on.
 * A party NEW to the key has no record to compare: it relies on the holders, who deal only under
 * that rule, and on the roles agreement (reshare-roles.ts), in which the whole session agrees on
 * the dealers and their old identifiers before any share is dealt.
 */
import { bytesToHex } from '@custodian/crypto';
import type { SuiteName } from '@custodian/frost';
import {
  KeyAlgorithm,
  keyChangeDigest,
  keyChangeSignedByTrustedAdmin,
  type SignedKeyChange,
  type StartCeremony,
} from '@custodian/wire';
import type { SessionParty } from '../runner.js';
import { type CeremonyContext, Refused, toSessionParties } from './context.js';
import { type KeyRecord, loadKeyRecord } from './keys.js';

/** One key of a key record. */
export type KeyEntry = KeyRecord['keys'][number];

const SUITE_OF: Readonly<Record<string, { algorithm: number; suite: SuiteName | 'cggmp'; length: number }>> = {
  ED25519: { algorithm: KeyAlgorithm.ED25519, suite: 'ed25519', length: 32 },
  SECP256K1_TAPROOT: { algorithm: KeyAlgorithm.SECP256K1_TAPROOT, suite: 'secp256k1-tr', length: 33 },
  SECP256K1_ECDSA: { algorithm: KeyAlgorithm.SECP256K1_ECDSA, suite: 'cggmp', length: 33 },
};

/** A validated RESHARE request. */
export interface ReshareRequest {
  readonly keyId: string;
  readonly change: SignedKeyChange;
  readonly context: Uint8Array;
  readonly newParties: readonly string[];
  readonly newThreshold: number;
  readonly approverDevices: readonly { deviceId: string; publicKey: string }[];
  /** The key's keys as the document gives them (checked against the record where held). */
  readonly keys: readonly KeyEntry[];
  /** The held record (old parties), else undefined. */
  readonly rec?: KeyRecord;
}

/**
 * Check a RESHARE request (authorization, fields against the signed document, roles) — steps 1 and
 * the static part of 2 of reshare.ts' module comment. Reads the key record; writes nothing.
 * @throws Refused KEY_CHANGE_NOT_AUTHORIZED, ENFORCEMENT_NOT_CONFIGURED or REQUEST_INVALID (the
 *   message names the field)
 */
export async function checkReshareRequest(
  ctx: CeremonyContext,
  start: StartCeremony,
  parties: readonly SessionParty[],
): Promise<ReshareRequest> {
  const req = start.reshare;
  if (!req) throw new Refused('reshare: missing reshare request');
  const keyId = start.keyId ?? '';
  if (!/^[0-9a-f]{32,128}$/.test(keyId)) throw new Refused('keyId: hex key id required');
  let change: SignedKeyChange;
  try {
    change = JSON.parse(req.keyChangeJson) as SignedKeyChange;
    if (typeof change !== 'object' || change === null || typeof change.document !== 'object' || !change.document)
      throw new TypeError('document');
  } catch {
    throw new Refused('reshare.keyChangeJson: not a SignedKeyChange');
  }
  if (ctx.enforcement) {
    if (!keyChangeSignedByTrustedAdmin(change, ctx.enforcement.trustedAdminKeys))
      throw new Refused(
        'KEY_CHANGE_NOT_AUTHORIZED: the key change is not signed by an Admin device this signer trusts',
        'KEY_CHANGE_NOT_AUTHORIZED',
      );
  } else if (ctx.allowUnenforcedSigning !== true) {
    throw new Refused(
      'ENFORCEMENT_NOT_CONFIGURED: this signer trusts no Admin device (trustedAdminDevices) and does not allow unenforced signing',
      'ENFORCEMENT_NOT_CONFIGURED',
    );
  }
  const doc = change.document;
  if (doc.kind !== 'custodian.key-change') throw new Refused('keyChange.document.kind: custodian.key-change expected');
  if (doc.key_id !== keyId) throw new Refused("keyId: not the key change document's key_id");
  checkExpiry(doc.expires_at, Date.now());
  const newParties = (req.newParties ?? []).map((p) => p.peerId);
  toSessionParties(newParties); // well-formed, distinct
  if (
    !Array.isArray(doc.new_parties) ||
    doc.new_parties.length !== newParties.length ||
    doc.new_parties.some((p, i) => p !== newParties[i])
  )
    throw new Refused("reshare.newParties: not the key change document's new_parties");
  const t = req.newThreshold;
  if (t !== doc.new_threshold) throw new Refused("reshare.newThreshold: not the key change document's new_threshold");
  if (!Number.isSafeInteger(t) || t < 2 || t > newParties.length)
    throw new Refused(`reshare.newThreshold: ${t} not in [2, ${newParties.length}]`);
  const approverDevices = (req.approverDevices ?? []).map((d, i) => {
    if (
      typeof d.deviceId !== 'string' ||
      d.deviceId === '' ||
      !(d.publicKey instanceof Uint8Array) ||
      d.publicKey.length !== 33
    )
      throw new Refused(`reshare.approverDevices[${i}]: device id and 33-byte compressed P-256 key required`);
    return { deviceId: d.deviceId, publicKey: bytesToHex(d.publicKey) };
  });
  const docDevices = Array.isArray(doc.approver_devices) ? doc.approver_devices : [];
  if (
    docDevices.length !== approverDevices.length ||
    docDevices.some(
      (d, i) => d.device_id !== approverDevices[i]?.deviceId || d.public_key !== approverDevices[i]?.publicKey,
    )
  )
    throw new Refused("reshare.approverDevices: not the key change document's approver_devices");
  const keys = docKeys(doc.public_keys);
  const inSession = new Set(parties.map((p) => p.peerId));
  for (const [i, p] of newParties.entries())
    if (!inSession.has(p)) throw new Refused(`reshare.newParties[${i}]: not in the ceremony's parties`);
  const rec = await loadKeyRecord(ctx.store, keyId);
  if (rec) {
    const same =
      rec.keys.length === keys.length &&
      rec.keys.every((k) =>
        keys.some((d) => d.algorithm === k.algorithm && d.publicKey === k.publicKey && d.chainCode === k.chainCode),
      );
    if (!same) throw new Refused('keyChange.document.public_keys: not the keys of this key');
    for (const [i, p] of parties.entries())
      if (!rec.parties.includes(p.peerId) && !newParties.includes(p.peerId))
        throw new Refused(`parties[${i}]: neither a party of the key nor in the new set`);
    checkBase(doc.base, rec);
    const dealers = parties.filter((p) => rec.parties.includes(p.peerId)).length;
    if (dealers < rec.threshold)
      throw new Refused(`parties: ${dealers} parties of the key, ${rec.threshold} needed to deal`);
  } else if (!newParties.includes(ctx.selfPeerId)) {
    throw new Refused(`unknown key ${keyId}`, 'KEY_UNKNOWN');
  }
  return {
    keyId,
    change,
    context: keyChangeDigest(doc),
    newParties,
    newThreshold: t,
    approverDevices,
    keys,
    ...(rec ? { rec } : {}),
  };
}

/** Longest a key change may still have to live when a signer sees it (24 h, in ms). */
export const MAX_KEY_CHANGE_LIFETIME_MS = 24 * 3_600_000;

/**
 * The document's `expires_at` (ISO 8601 UTC) against `now` (ms since the epoch).
 * @throws Refused KEY_CHANGE_NOT_AUTHORIZED when it is missing or unreadable, past, or more than
 *   {@link MAX_KEY_CHANGE_LIFETIME_MS} ahead
 */
function checkExpiry(expiresAt: unknown, now: number): void {
  const at = typeof expiresAt === 'string' ? Date.parse(expiresAt) : Number.NaN;
  if (!Number.isFinite(at))
    throw new Refused(
      'KEY_CHANGE_NOT_AUTHORIZED: keyChange.document.expires_at: ISO 8601 time required',
      'KEY_CHANGE_NOT_AUTHORIZED',
    );
  if (now > at) throw new Refused('KEY_CHANGE_NOT_AUTHORIZED: the key change has expired', 'KEY_CHANGE_NOT_AUTHORIZED');
  if (at > now + MAX_KEY_CHANGE_LIFETIME_MS)
    throw new Refused(
      'KEY_CHANGE_NOT_AUTHORIZED: the key change expires more than 24 h from now',
      'KEY_CHANGE_NOT_AUTHORIZED',
    );
}

/**
 * The document's `base` against the held record: the same epoch, parties in the same order and
 * threshold, so a signed change applies to the key once (after its commit the epoch moved on).
 * @throws Refused KEY_CHANGE_NOT_AUTHORIZED when it differs or is malformed
 */
function checkBase(base: unknown, rec: KeyRecord): void {
  const b = base as { epoch?: unknown; parties?: unknown; threshold?: unknown } | null | undefined;
  const same =
    typeof b === 'object' &&
    b !== null &&
    b.epoch === rec.epoch &&
    b.threshold === rec.threshold &&
    Array.isArray(b.parties) &&
    b.parties.length === rec.parties.length &&
    b.parties.every((p, i) => p === rec.parties[i]);
  if (!same)
    throw new Refused(
      `KEY_CHANGE_NOT_AUTHORIZED: keyChange.document.base is not this signer's key (epoch ${rec.epoch}, ${rec.parties.length} parties, threshold ${rec.threshold}): a change applies once, to the key it names`,
      'KEY_CHANGE_NOT_AUTHORIZED',
    );
}

/** The document's keys as record entries. @throws Refused for an unknown algorithm, a repeat or a bad length */
function docKeys(list: unknown): KeyEntry[] {
  if (!Array.isArray(list) || list.length === 0) throw new Refused('keyChange.document.public_keys: missing');
  const seen = new Set<string>();
  return list.map((k: { algorithm?: unknown; public_key?: unknown; chain_code?: unknown }, i) => {
    const s = typeof k?.algorithm === 'string' ? SUITE_OF[k.algorithm] : undefined;
    if (!s || seen.has(k.algorithm as string))
      throw new Refused(`keyChange.document.public_keys[${i}].algorithm: unknown or repeated`);
    seen.add(k.algorithm as string);
    const hex = (v: unknown, n: number, f: string) => {
      if (typeof v !== 'string' || v.length !== 2 * n || !/^[0-9a-f]+$/.test(v))
        throw new Refused(`keyChange.document.public_keys[${i}].${f}: ${n} bytes, lower-case hex`);
      return v;
    };
    return {
      algorithm: s.algorithm,
      suite: s.suite,
      publicKey: hex(k.public_key, s.length, 'public_key'),
      chainCode: hex(k.chain_code, 32, 'chain_code'),
    };
  });
}
