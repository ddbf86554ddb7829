/**
 * RESHARE_COMMIT (issue #22): promote the pending shares of ONE finished RESHARE ceremony
 * (`start.reshareCeremonyId`) of the key `start.keyId` (pending.ts), in ONE store batch:
 * - a member of the new set: its new shares and key record replace the key's (the record carries
 *   `reshareCeremonyId`), the key's presignatures are deleted (made with the old shares), and every
 *   other pending entry of the key is deleted;
 * - a dealer that is not in the new set: every share and the record of the key are deleted, with
 *   its presignatures and pending entries, and a `left/<keyId>` mark is written.
 * The caller (run.ts) then clears the process' caches of the key. Idempotent: a commit of the
 * ceremony already promoted (the record names it, or the left mark does) answers OK and writes
 * nothing but its audit record. A pending entry is never deleted on request: only a commit removes
 * it (its own, or a newer RESHARE's).
 *
 * Evidence (review H2): a commit is refused (REQUEST_INVALID) unless `start.pendingAttestations`
 * holds, for every member of the new set in the pending entry's order, its `pendingAttestation`
 * (64-byte Ed25519 signature over `reshareAttestationMessage(keyId, reshareCeremonyId)`, verified
 * under the key its peer id embeds): no party moves, and no leaving dealer deletes a share, before
 * every new share exists. It is refused (RESHARE_NOT_PENDING) unless the key record this signer
 * holds is still the one the RESHARE started from (same epoch; none for a party new to the key).
 */
import { bytesToHex, ed25519Verify } from '@custodian/crypto';
import { type CeremonyResult, Outcome, reshareAttestationMessage, type StartCeremony } from '@custodian/wire';
import type { StoreOp } from '../storage.js';
import { type CeremonyContext, Refused, toSessionParties } from './context.js';
import { loadKeyRecord, publicKeys } from './keys.js';
import { leftMark, leftMarkOp, loadPending, pendingPrefix } from './pending.js';

const enc = new TextEncoder();

/**
 * Run a RESHARE_COMMIT (see the module comment).
 * @returns OK (with the key's public keys for a member) and the batch to write
 * @throws Refused REQUEST_INVALID without key id or a 16..64-byte `reshareCeremonyId`, or without a
 *   valid attestation of every new party; RESHARE_NOT_PENDING when no pending entry of that
 *   ceremony exists and it was not committed, or the held key record changed since the RESHARE
 */
export async function commitReshare(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
): Promise<{ result: CeremonyResult; ops: StoreOp[] }> {
  const keyId = start.keyId ?? '';
  if (!/^[0-9a-f]{32,128}$/.test(keyId)) throw new Refused('keyId: hex key id required');
  const rid = start.reshareCeremonyId;
  if (!(rid instanceof Uint8Array) || rid.length < 16 || rid.length > 64)
    throw new Refused('reshareCeremonyId: 16..64 bytes');
  const cid = bytesToHex(rid);
  const ok = (rec?: Parameters<typeof publicKeys>[0]): CeremonyResult => ({
    ceremonyId,
    outcome: Outcome.OK,
    keyId,
    ...(rec ? { publicKeys: publicKeys(rec) } : {}),
  });
  const pending = await loadPending(ctx.store, keyId, cid);
  if (!pending) {
    const rec = await loadKeyRecord(ctx.store, keyId);
    if (rec?.reshareCeremonyId === cid) return { result: ok(rec), ops: [] };
    if (!rec && (await leftMark(ctx.store, keyId))?.reshareCeremonyId === cid) return { result: ok(), ops: [] };
    throw new Refused(`no pending shares of reshare ${cid.slice(0, 16)} for key ${keyId}`, 'RESHARE_NOT_PENDING');
  }
  checkAttestations(start.pendingAttestations, pending.newParties, keyId, rid);
  const current = await loadKeyRecord(ctx.store, keyId);
  if (pending.baseEpoch === undefined || (current?.epoch ?? null) !== pending.baseEpoch)
    throw new Refused(
      `reshare ${cid.slice(0, 16)} of key ${keyId} started from a key record this signer no longer holds`,
      'RESHARE_NOT_PENDING',
    );
  const ops: StoreOp[] = [];
  // every pending entry of the key (this ceremony's and older or concurrent ones) goes
  for (const k of await ctx.store.keys('pending', pendingPrefix(keyId)))
    ops.push({ type: 'del', sublevel: 'pending', key: k });
  // presignatures were made with the old shares (and the old party set)
  for (const k of await ctx.store.keys('presignatures', `${keyId}/`))
    ops.push({ type: 'del', sublevel: 'presignatures', key: k });
  const held = await ctx.store.keys('shares', `${keyId}/`);
  if (pending.role === 'leave') {
    for (const k of held) ops.push({ type: 'del', sublevel: 'shares', key: k });
    ops.push(leftMarkOp(keyId, cid));
    return { result: ok(), ops };
  }
  const rec = pending.record;
  if (!rec) throw new Error(`pending reshare ${cid.slice(0, 16)}: member entry without record`);
  const prefix = pendingPrefix(keyId, cid);
  const parts = (await ctx.store.keys('pending', prefix)).filter((k) => !k.endsWith('/meta'));
  const wanted = new Set(parts.map((k) => k.slice(prefix.length)));
  // shares of the key that the new record has no key for (none today: every key is reshared)
  for (const k of held)
    if (k !== `${keyId}/meta` && !wanted.has(k.slice(keyId.length + 1)))
      ops.push({ type: 'del', sublevel: 'shares', key: k });
  for (const k of parts) {
    const v = await ctx.store.get('pending', k);
    if (!v) throw new Error(`pending reshare ${cid.slice(0, 16)}: ${k} vanished`);
    ops.push({ type: 'put', sublevel: 'shares', key: `${keyId}/${k.slice(prefix.length)}`, value: v });
  }
  const next = { ...rec, epoch: Math.max(rec.epoch, (current?.epoch ?? -1) + 1), reshareCeremonyId: cid };
  ops.push({ type: 'put', sublevel: 'shares', key: `${keyId}/meta`, value: enc.encode(JSON.stringify(next)) });
  ops.push({ type: 'del', sublevel: 'pending', key: `left/${keyId}` });
  return { result: ok(next), ops };
}

/**
 * Every new party's attestation, in `newParties` order, verified under its peer id's Ed25519 key.
 * @throws Refused REQUEST_INVALID naming the first missing or invalid one (or an entry without its new set)
 */
function checkAttestations(
  given: readonly Uint8Array[] | undefined,
  newParties: readonly string[] | undefined,
  keyId: string,
  reshareCeremonyId: Uint8Array,
): void {
  if (!newParties || newParties.length === 0)
    throw new Refused('pending reshare without its new set: run the reshare again');
  const list = given ?? [];
  if (list.length !== newParties.length)
    throw new Refused(`pendingAttestations: ${list.length} given, one per new party (${newParties.length}) required`);
  const message = reshareAttestationMessage(keyId, reshareCeremonyId);
  const keys = toSessionParties(newParties);
  for (const [i, p] of keys.entries()) {
    const sig = list[i];
    if (!(sig instanceof Uint8Array) || !ed25519Verify(sig, message, p.publicKey))
      throw new Refused(`pendingAttestations[${i}]: not ${p.peerId}'s attestation of this reshare`);
  }
}

/** Forget what the process holds in memory of a key whose shares changed (shares, record, prepared presignatures). */
export function forgetKey(ctx: CeremonyContext, keyId: string): void {
  if (ctx.shareCache)
    for (const k of [...ctx.shareCache.keys()]) if (k.startsWith(`${keyId}/`)) ctx.shareCache.delete(k);
  ctx.recordCache?.delete(keyId);
  ctx.prepared?.forgetKey(keyId);
}
