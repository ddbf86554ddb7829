/**
 * Helpers of the keys room's operations (keys/service.ts): the acceptance of a lifecycle ceremony's
 * results (every party OK, the same public keys, equal to the master key record; blame mapped to
 * party names), the keys a drill verifies under, the epoch update, and the room's errors.
 */

import { Outcome, reshareAttestationMessage } from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { bytesToHex } from '@noble/curves/utils.js';
import type { Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import { assessBlames, type BlameRecord } from '../signing/blame.js';
import type { PartyResult } from '../signing/sign-results.js';
import { normalisePublicKey } from '../transfers/policy-documents.js';
import type { KeyRecord } from './store.js';
import { commonKeys, type KeyEntry, sameKeys } from './verify.js';

/**
 * A failure naming the parties to blame (identifiable abort): `culprits` only those the coordinator
 * proved misbehaved (checked itself: verified blame evidence, a missing or invalid attestation);
 * `blames` every blame a party reported, as checked (signing/blame.ts; recorded in `ceremony_blames`).
 */
export class CulpritError extends Error {
  constructor(
    message: string,
    readonly culprits: string[],
    readonly blames: readonly BlameRecord[] = [],
  ) {
    super(message);
  }
}

/**
 * Every party OK (and, when `keysToo`, with the same public keys).
 * A reported blame is checked against `ceremonyId` and the peer ids the ceremony was dispatched
 * to (signing/blame.ts `assessBlames`): only a verified one names a culprit.
 * @param names peer id → `kind:id` of the session's parties (culprit names)
 * @param ceremonyId the `StartCeremony.ceremony_id` sent (16 bytes); absent: no blame can be verified
 * @throws CulpritError when any party reported a blame (culprits: the verified ones); Error otherwise
 */
export function accepted(
  results: readonly PartyResult[],
  what: string,
  keysToo = true,
  names: ReadonlyMap<string, string> = new Map(),
  ceremonyId: Uint8Array = new Uint8Array(0),
): KeyEntry[] {
  const blames = assessBlames(
    ceremonyId,
    results.flatMap((r) => (r.peerId !== undefined ? [r.peerId] : [])),
    results,
  );
  if (blames.length > 0) {
    const proven = [...new Set(blames.flatMap((b) => (b.verified && b.culprit !== null ? [b.culprit] : [])))];
    const culprits = proven.map((peer) => names.get(peer) ?? results.find((r) => r.peerId === peer)?.party.id ?? peer);
    const by = results.find((r) => r.peerId !== undefined && blames.some((b) => b.accuser === r.peerId));
    throw new CulpritError(`${what} aborted: ${by?.result.error || 'misbehaviour'}`, culprits, blames);
  }
  const failed = results.filter((r) => r.result.outcome !== Outcome.OK);
  if (failed.length > 0)
    throw new Error(
      `${what} failed: ${failed.map((r) => `${r.party.kind} ${r.party.id}: ${r.result.error || `outcome ${r.result.outcome}`}`).join('; ')}`,
    );
  if (!keysToo) return [];
  const c = commonKeys(results);
  if (!c.ok) throw new Error(`${what}: ${c.error}`);
  return c.keys;
}

/**
 * Every new party's `pendingAttestation` of a RESHARE (64 bytes: its libp2p Ed25519 identity key's
 * RFC 8032 signature over `reshareAttestationMessage(keyId, reshareCeremonyId)`, wire
 * key-change.ts), verified here, as hex in `newParties` (peer ids, KeyChangeDocument order) order;
 * the RESHARE_COMMIT carries them all.
 * @param names peer id → `kind:id` of the session's parties
 * @throws CulpritError naming every new party whose result carries none, one of another length or
 *   one that does not verify (the change fails; nothing is committed)
 */
export function pendingAttestations(
  newParties: readonly string[],
  results: readonly PartyResult[],
  names: ReadonlyMap<string, string>,
  keyId: string,
  reshareCeremonyId: Uint8Array,
): string[] {
  const byName = new Map(results.map((r) => [`${r.party.kind}:${r.party.id}`, r]));
  const message = reshareAttestationMessage(keyId, reshareCeremonyId);
  const culprits: string[] = [];
  const out = newParties.map((peer) => {
    const name = names.get(peer) ?? peer;
    const a = byName.get(name)?.result.pendingAttestation;
    let ok = false;
    if (a instanceof Uint8Array && a.length === 64) {
      try {
        const pid = peerIdFromString(peer);
        ok = pid.type === 'Ed25519' && ed25519.verify(a, message, pid.publicKey.raw);
      } catch {
        ok = false;
      }
    }
    if (!ok) culprits.push(name);
    return ok && a ? bytesToHex(a) : '';
  });
  if (culprits.length > 0)
    throw new CulpritError(
      `reshare: ${culprits.length} new part${culprits.length === 1 ? 'y' : 'ies'} did not attest its pending shares`,
      culprits,
    );
  return out;
}

/** The record's secp256k1 and Ed25519 keys must be among `keys`. @throws Error */
export function checkRecord(mk: KeyRecord, keys: readonly KeyEntry[]): void {
  const ed = keys.find((k) => k.algorithm === 'ED25519');
  const secp = keys.filter((k) => k.algorithm !== 'ED25519');
  if (ed && ed.public_key !== mk.ed25519_public_key)
    throw new Error('the Ed25519 public key differs from the master key record');
  if (secp.length > 0 && !secp.some((k) => k.public_key === mk.secp256k1_public_key))
    throw new Error('the secp256k1 public key differs from the master key record');
}

/** The record's keys, plus (Taproot next to ECDSA) a key every reporting signer agrees on. */
export function knownKeys(mk: KeyRecord, reported: readonly KeyEntry[][]): KeyEntry[] {
  const first = reported[0];
  const agreed = first && reported.every((r) => sameKeys(r, first)) ? first : [];
  const out: KeyEntry[] = [
    { algorithm: 'ED25519', public_key: mk.ed25519_public_key, chain_code: mk.ed25519_chain_code },
  ];
  const ecdsa = agreed.find((k) => k.algorithm === 'SECP256K1_ECDSA');
  const tr = agreed.find((k) => k.algorithm === 'SECP256K1_TAPROOT');
  if (!ecdsa || ecdsa.public_key === mk.secp256k1_public_key)
    out.push({
      algorithm: 'SECP256K1_ECDSA',
      public_key: mk.secp256k1_public_key,
      chain_code: mk.secp256k1_chain_code,
    });
  if (tr) out.push(tr);
  else if (!ecdsa)
    out.push({
      algorithm: 'SECP256K1_TAPROOT',
      public_key: mk.secp256k1_public_key,
      chain_code: mk.secp256k1_chain_code,
    });
  return out.filter((k) => agreed.length === 0 || agreed.some((a) => a.algorithm === k.algorithm));
}

/** epoch + 1 and refreshed_at of a master key, in the caller's transaction. @returns the new epoch */
export async function bumpEpoch(q: Queryable, masterKeyId: string, at: Date): Promise<number> {
  const r = await q.query<{ epoch: number }>(
    'UPDATE master_keys SET epoch = epoch + 1, refreshed_at = $2 WHERE master_key_id = $1 RETURNING epoch',
    [masterKeyId, at],
  );
  return Number(r[0]?.epoch ?? 0);
}

/** Compressed (33-byte) hex of a stored P-256 device key. */
export function compressed(stored: string): string {
  const hex = normalisePublicKey(stored);
  return hex.length === 66 ? hex : p256.Point.fromHex(hex).toHex(true);
}

/** 422 VALIDATION_FAILED naming `field`. */
export const invalid = (field: string, message: string) =>
  new ApiError('VALIDATION_FAILED', `${field}: ${message}`, [{ field, message }]);
/** 409 CONFLICT: a lifecycle ceremony or change runs for the key. */
export const busy = () =>
  new ApiError('CONFLICT', 'a key ceremony or key change is already running for this master key');

/** Resolve after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}
