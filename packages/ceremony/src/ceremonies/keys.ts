/**
 * A signer's master keys (sublevel `shares`): `<keyId>/meta` (JSON {@link KeyRecord}, public),
 * `<keyId>/<suite>` (FROST key share format v1, packages/frost keyshare.ts) and `<keyId>/cggmp`
 * (CGGMP21 key share JSON, packages/cggmp). Reads go through the context's caches when it has them.
 */
import { type KeyShare as EcdsaKeyShare, keyShareFromJson } from '@custodian/cggmp';
import { decodeKeyShare, type KeyShare, type SuiteName } from '@custodian/frost';
import type { PublicKeyInfo } from '@custodian/wire';
import type { CeremonyStore } from '../storage.js';
import { type CeremonyContext, Refused } from './context.js';

const dec = new TextDecoder();

/** Public description of a master key held by this signer. */
export interface KeyRecord {
  readonly keyId: string;
  readonly threshold: number;
  /** Peer ids of the key's parties, in DKG order (party i has FROST identifier i+1). */
  readonly parties: readonly string[];
  readonly keys: readonly { algorithm: number; suite: SuiteName | 'cggmp'; publicKey: string; chainCode: string }[];
  readonly epoch: number;
  readonly createdAt: string;
  /**
   * The key's approver devices (its mobile signers' P-256 keys, compressed hex), from
   * StartCeremony.approver_devices of the master key ceremony: the only devices whose transfer
   * approvals this signer accepts (enforce.ts).
   */
  readonly approverDevices?: readonly { deviceId: string; publicKey: string }[];
  /**
   * Hex id of the RESHARE ceremony whose shares these are (set when its RESHARE_COMMIT promoted
   * them, commit.ts): a repeated commit of that ceremony is recognised as done.
   */
  readonly reshareCeremonyId?: string;
}

/** Read a key's public record. */
export async function loadKeyRecord(store: CeremonyStore, keyId: string): Promise<KeyRecord | undefined> {
  const b = await store.get('shares', `${keyId}/meta`);
  return b ? (JSON.parse(dec.decode(b)) as KeyRecord) : undefined;
}

/** {@link loadKeyRecord} through the node's record cache. */
export async function keyRecord(ctx: CeremonyContext, keyId: string): Promise<KeyRecord | undefined> {
  const hit = ctx.recordCache?.get(keyId);
  if (hit) return hit;
  const rec = await loadKeyRecord(ctx.store, keyId);
  if (rec) ctx.recordCache?.set(keyId, rec);
  return rec;
}

/** All key records held. */
export async function listKeys(store: CeremonyStore): Promise<KeyRecord[]> {
  const out: KeyRecord[] = [];
  for (const k of await store.keys('shares')) {
    if (!k.endsWith('/meta')) continue;
    const r = await loadKeyRecord(store, k.slice(0, -'/meta'.length));
    if (r) out.push(r);
  }
  return out;
}

/** The key record's public keys as the wire reports them (bytes from the record's hex). */
export function publicKeys(rec: KeyRecord): PublicKeyInfo[] {
  return rec.keys.map((k) => ({
    algorithm: k.algorithm,
    publicKey: hexBytes(k.publicKey),
    chainCode: hexBytes(k.chainCode),
  }));
}

/** Bytes of a hex string (the record's own, well-formed). */
export function hexBytes(h: string): Uint8Array {
  return Uint8Array.from(Buffer.from(h, 'hex'));
}

/** The CGGMP21 share of a key, through the share cache. @throws Refused when this signer holds none */
export async function loadEcdsaShare(ctx: CeremonyContext, keyId: string): Promise<EcdsaKeyShare> {
  const cached = ctx.shareCache?.get(`${keyId}/cggmp`);
  if (cached) return cached as EcdsaKeyShare;
  const b = await ctx.store.get('shares', `${keyId}/cggmp`);
  if (!b) throw new Refused(`no ECDSA share for key ${keyId}`, 'KEY_UNKNOWN');
  const share = keyShareFromJson(JSON.parse(dec.decode(b)));
  ctx.shareCache?.set(`${keyId}/cggmp`, share);
  return share;
}

/** The FROST share of a key for `suite`, through the share cache. @throws Refused when this signer holds none */
export async function loadShare(ctx: CeremonyContext, keyId: string, suite: SuiteName): Promise<KeyShare> {
  const cached = ctx.shareCache?.get(`${keyId}/${suite}`);
  if (cached) return cached as KeyShare;
  const b = await ctx.store.get('shares', `${keyId}/${suite}`);
  if (!b) throw new Refused(`no ${suite} share for key ${keyId}`, 'KEY_UNKNOWN');
  const share = decodeKeyShare(b);
  ctx.shareCache?.set(`${keyId}/${suite}`, share);
  return share;
}
