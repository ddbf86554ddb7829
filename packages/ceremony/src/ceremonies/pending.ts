/**
 * Shares of a finished RESHARE held until its RESHARE_COMMIT (issue #22), in the store's `pending`
 * sublevel, which `listKeys`, `loadShare` and signing never read, so pending shares neither sign
 * nor replace anything until promoted (commit.ts):
 * - `p/<keyId>/<reshareCeremonyIdHex>/meta`: JSON {@link PendingReshare};
 * - `p/<keyId>/<reshareCeremonyIdHex>/<suite>`: FROST key share format v1 (ed25519, secp256k1-tr);
 * - `p/<keyId>/<reshareCeremonyIdHex>/cggmp`: CGGMP21 key share JSON;
 * - `left/<keyId>`: JSON `{ reshareCeremonyId, at }`, written when this signer left the key at a
 *   commit (its shares deleted), so that a repeated commit answers OK.
 * Values are sealed like every store value (SECRET: they are key shares).
 *
 * At most ONE pending RESHARE per key: a successful RESHARE deletes the key's older pending entries
 * in the batch that writes its own (review H2), so an older one can no longer be committed.
 */
import type { CeremonyStore, StoreOp } from '../storage.js';
import type { KeyRecord } from './keys.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** What this signer keeps of a finished RESHARE until its commit. */
export interface PendingReshare {
  readonly keyId: string;
  /** Hex id of the RESHARE ceremony. */
  readonly reshareCeremonyId: string;
  /** `member`: this signer is in the new set (shares and {@link record} pending); `leave`: a dealer not in the new set. */
  readonly role: 'member' | 'leave';
  /** The key record after the change (members only): new parties, t', epoch, approver devices. */
  readonly record?: KeyRecord;
  /** The new set (peer ids, in the request's order): whose attestations a commit must carry. */
  readonly newParties?: readonly string[];
  /** Epoch of the key record this signer held when the RESHARE ran (null: it held none); a commit needs it unchanged. */
  readonly baseEpoch?: number | null;
  /** ISO 8601 UTC time the pending entry was written. */
  readonly at: string;
}

/** Store key prefix of a key's pending entries (all ceremonies), or of one ceremony's. */
export function pendingPrefix(keyId: string, reshareCeremonyId?: string): string {
  return reshareCeremonyId === undefined ? `p/${keyId}/` : `p/${keyId}/${reshareCeremonyId}/`;
}

/** The put of a pending entry's meta. */
export function pendingMetaOp(p: PendingReshare): StoreOp {
  return {
    type: 'put',
    sublevel: 'pending',
    key: `${pendingPrefix(p.keyId, p.reshareCeremonyId)}meta`,
    value: enc.encode(JSON.stringify(p)),
  };
}

/** The pending entry of one RESHARE ceremony of a key (undefined when none). */
export async function loadPending(
  store: CeremonyStore,
  keyId: string,
  reshareCeremonyId: string,
): Promise<PendingReshare | undefined> {
  const b = await store.get('pending', `${pendingPrefix(keyId, reshareCeremonyId)}meta`);
  return b ? (JSON.parse(dec.decode(b)) as PendingReshare) : undefined;
}

/** Every pending entry held, all keys. */
export async function listPending(store: CeremonyStore): Promise<PendingReshare[]> {
  const out: PendingReshare[] = [];
  for (const k of await store.keys('pending', 'p/')) {
    if (!k.endsWith('/meta')) continue;
    const b = await store.get('pending', k);
    if (b) out.push(JSON.parse(dec.decode(b)) as PendingReshare);
  }
  return out;
}

/**
 * The newest pending RESHARE per key (key id → hex ceremony id), for the status' `pendingReshare`.
 * Never throws for an empty store.
 */
export async function pendingReshares(store: CeremonyStore): Promise<Map<string, string>> {
  const newest = new Map<string, PendingReshare>();
  for (const p of await listPending(store)) {
    const seen = newest.get(p.keyId);
    if (!seen || seen.at < p.at) newest.set(p.keyId, p);
  }
  return new Map([...newest].map(([k, p]) => [k, p.reshareCeremonyId]));
}

/** The mark of a key this signer left at a commit (undefined when none). */
export async function leftMark(
  store: CeremonyStore,
  keyId: string,
): Promise<{ reshareCeremonyId: string; at: string } | undefined> {
  const b = await store.get('pending', `left/${keyId}`);
  return b ? (JSON.parse(dec.decode(b)) as { reshareCeremonyId: string; at: string }) : undefined;
}

/** The put of a key's left mark. */
export function leftMarkOp(keyId: string, reshareCeremonyId: string): StoreOp {
  return {
    type: 'put',
    sublevel: 'pending',
    key: `left/${keyId}`,
    value: enc.encode(JSON.stringify({ reshareCeremonyId, at: new Date().toISOString() })),
  };
}
