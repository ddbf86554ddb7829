/**
 * Revocation of an approver device (issue #22: removing a device revokes its approval rights at the
 * signers at the same moment). `revokeApprover` drops the device from the approver devices of every
 * key record this signer holds and of every pending RESHARE record (pending.ts), and adds it to the
 * signer's revoked list (sublevel `state`, key `revoked-approvers`, JSON `{ deviceId, publicKey }[]`,
 * public data), which a later RESHARE's record never re-adds — all in ONE store batch. Enforcement
 * (enforce.ts) reads the approver devices from the key record, so the device's approvals are refused
 * from the next sign request on. Only ever reduces rights: the coordinator's signed control request
 * suffices (no Admin signature).
 *
 * Key ceremonies write their final batch through {@link lockedBatch}: serialised with revocations
 * per store, and with every key record of the batch (held or pending) stripped of revoked devices
 * at that moment, so a refresh or reshare that began before a revocation cannot put the device back.
 */
import { bytesToHex } from '@custodian/crypto';
import type { CeremonyStore, StoreOp } from '../storage.js';
import { Refused } from './context.js';
import { type KeyRecord, listKeys } from './keys.js';
import { listPending, type PendingReshare, pendingMetaOp } from './pending.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The tail of each store's chain of record writes (revocations and key ceremonies' batches). */
const chains = new WeakMap<CeremonyStore, Promise<unknown>>();

/** Run `fn` after every earlier locked write of the store has ended (success or not). */
function locked<T>(store: CeremonyStore, fn: () => Promise<T>): Promise<T> {
  const run = (chains.get(store) ?? Promise.resolve()).then(fn, fn);
  chains.set(
    store,
    run.catch(() => undefined),
  );
  return run;
}

/**
 * Write a key ceremony's batch (see the module comment): key records in it (`shares/<keyId>/meta`,
 * pending metas with a record) lose the devices revoked by then; one atomic batch. `batch` may be a
 * function, called under the lock, for a batch that depends on the store at the moment of writing.
 */
export function lockedBatch(
  store: CeremonyStore,
  batch: readonly StoreOp[] | (() => Promise<readonly StoreOp[]>),
): Promise<void> {
  return locked(store, async () => {
    const ops = typeof batch === 'function' ? await batch() : batch;
    const revoked = await revokedApprovers(store);
    if (revoked.length === 0) return store.batch(ops);
    const strip = (rec: KeyRecord): KeyRecord => ({
      ...rec,
      approverDevices: (rec.approverDevices ?? []).filter((d) => !isRevoked(d, revoked)),
    });
    const rewritten = ops.map((op): StoreOp => {
      if (op.type !== 'put' || !op.key.endsWith('/meta')) return op;
      if (op.sublevel === 'shares') {
        const rec = JSON.parse(dec.decode(op.value)) as KeyRecord;
        return { ...op, value: enc.encode(JSON.stringify(strip(rec))) };
      }
      if (op.sublevel === 'pending' && op.key.startsWith('p/')) {
        const p = JSON.parse(dec.decode(op.value)) as PendingReshare;
        return p.record ? pendingMetaOp({ ...p, record: strip(p.record) }) : op;
      }
      return op;
    });
    return store.batch(rewritten);
  });
}

/** A revoked device: by id, and by its P-256 key (compressed hex; '' when revoked by id only). */
export interface RevokedApprover {
  readonly deviceId: string;
  readonly publicKey: string;
}

/** The signer's revoked approver devices (empty when none). */
export async function revokedApprovers(store: CeremonyStore): Promise<RevokedApprover[]> {
  const b = await store.get('state', 'revoked-approvers');
  return b ? (JSON.parse(dec.decode(b)) as RevokedApprover[]) : [];
}

/** Whether an approver device matches a revoked entry (same id, or same key). */
export function isRevoked(d: { deviceId: string; publicKey: string }, revoked: readonly RevokedApprover[]): boolean {
  return revoked.some((r) => r.deviceId === d.deviceId || (r.publicKey !== '' && r.publicKey === d.publicKey));
}

/**
 * Revoke a device's approval rights on every key (see the module comment).
 * @param deviceId the device's id (non-empty)
 * @param publicKey its 33-byte compressed P-256 key (optional: also drops any device with that key)
 * @param caches the process' record cache, cleared for the keys changed (and share caches untouched)
 * @returns the number of key records (held or pending) whose approver list changed
 * @throws Refused (REQUEST_INVALID) for an empty id or a key that is not 33 bytes
 */
export async function revokeApprover(
  store: CeremonyStore,
  deviceId: string,
  publicKey?: Uint8Array,
  caches: { readonly recordCache?: Map<string, KeyRecord> } = {},
): Promise<number> {
  if (typeof deviceId !== 'string' || deviceId === '') throw new Refused('revokeApprover: deviceId required');
  if (publicKey !== undefined && publicKey.length !== 0 && publicKey.length !== 33)
    throw new Refused('revokeApprover: publicKey: 33-byte compressed P-256 key or empty');
  return locked(store, () => revokeLocked(store, deviceId, publicKey, caches));
}

async function revokeLocked(
  store: CeremonyStore,
  deviceId: string,
  publicKey: Uint8Array | undefined,
  caches: { readonly recordCache?: Map<string, KeyRecord> },
): Promise<number> {
  const entry: RevokedApprover = {
    deviceId,
    publicKey: publicKey && publicKey.length === 33 ? bytesToHex(publicKey) : '',
  };
  const revoked = await revokedApprovers(store);
  const ops: StoreOp[] = [];
  if (!revoked.some((r) => r.deviceId === entry.deviceId && r.publicKey === entry.publicKey)) {
    ops.push({
      type: 'put',
      sublevel: 'state',
      key: 'revoked-approvers',
      value: enc.encode(JSON.stringify([...revoked, entry])),
    });
  }
  const changed: string[] = [];
  let updated = 0;
  for (const rec of await listKeys(store)) {
    const kept = (rec.approverDevices ?? []).filter((d) => !isRevoked(d, [entry]));
    if (kept.length === (rec.approverDevices ?? []).length) continue;
    ops.push({
      type: 'put',
      sublevel: 'shares',
      key: `${rec.keyId}/meta`,
      value: enc.encode(JSON.stringify({ ...rec, approverDevices: kept })),
    });
    changed.push(rec.keyId);
    updated++;
  }
  for (const p of await listPending(store)) {
    if (!p.record) continue;
    const kept = (p.record.approverDevices ?? []).filter((d) => !isRevoked(d, [entry]));
    if (kept.length === (p.record.approverDevices ?? []).length) continue;
    ops.push(pendingMetaOp({ ...p, record: { ...p.record, approverDevices: kept } }));
    updated++;
  }
  if (ops.length > 0) await store.batch(ops);
  for (const k of changed) caches.recordCache?.delete(k);
  return updated;
}
