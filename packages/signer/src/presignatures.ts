/**
 * Stored CGGMP21 presignatures (sublevel `presignatures`, encrypted at rest). Key:
 * `<keyId>/<signing set>/<presignature id>` where the signing set is the ascending key indices
 * joined by "-" and the id is `<ceremony id hex>.<index>`. Value: JSON format v1 with points in
 * SEC1-compressed hex and scalars in hex; validated when read (points decode, 0 < k, χ < q).
 * A presignature is deleted from the store in a batch that completes BEFORE the signature share
 * that uses it leaves the process (DESIGN §3), so it can never sign twice, even across a crash.
 */
import type { PresignatureData } from '@custodian/cggmp';
import { bigintToMinimalBytes, bytesToBigint, bytesToHex, hexToBytes, secp256k1Group } from '@custodian/crypto';
import type { SecureStore, StoreOp } from './store.js';

const FORMAT = 'custodian.signer.presignature';
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Storage key prefix of a key's signing set. */
export function presignPrefix(keyId: string, signers: readonly number[]): string {
  return `${keyId}/${signers.join('-')}/`;
}

const ph = (p: Parameters<typeof secp256k1Group.encodePoint>[0]) => bytesToHex(secp256k1Group.encodePoint(p));
const bh = (v: bigint) => bytesToHex(bigintToMinimalBytes(v));

/** Serialise a presignature (SECRET: holds k_i and χ_i). */
export function encodePresignature(p: PresignatureData): Uint8Array {
  return enc.encode(
    JSON.stringify({
      format: FORMAT,
      version: 1,
      signers: p.signers,
      i: p.i,
      publicKey: ph(p.publicKey),
      R: ph(p.R),
      Gamma: ph(p.Gamma),
      Delta: p.Delta.map(ph),
      S: p.S.map(ph),
      k: bh(p.k),
      chi: bh(p.chi),
    }),
  );
}

/**
 * Parse and validate a stored presignature.
 * @throws RangeError / TypeError naming the field (never a secret value)
 */
export function decodePresignature(bytes: Uint8Array): PresignatureData {
  const o = JSON.parse(dec.decode(bytes)) as Record<string, unknown>;
  if (o.format !== FORMAT || o.version !== 1) throw new RangeError('presignature: unknown format');
  const signers = o.signers;
  if (
    !Array.isArray(signers) ||
    !signers.every((x, j) => Number.isSafeInteger(x) && x >= 0 && (j === 0 || x > signers[j - 1]))
  ) {
    throw new RangeError('presignature: signers must be ascending indices');
  }
  const m = signers.length;
  const i = o.i;
  if (!Number.isSafeInteger(i) || (i as number) < 0 || (i as number) >= m)
    throw new RangeError('presignature: i out of range');
  const pt = (v: unknown, f: string) => {
    if (typeof v !== 'string') throw new TypeError(`presignature: ${f}`);
    return secp256k1Group.decodePoint(hexToBytes(v), f);
  };
  const sc = (v: unknown, f: string) => {
    if (typeof v !== 'string') throw new TypeError(`presignature: ${f}`);
    const x = bytesToBigint(hexToBytes(v.length % 2 ? `0${v}` : v));
    if (x <= 0n || x >= secp256k1Group.order) throw new RangeError(`presignature: ${f} out of range`);
    return x;
  };
  const list = (v: unknown, f: string) => {
    if (!Array.isArray(v) || v.length !== m) throw new RangeError(`presignature: ${f} must have ${m} points`);
    return v.map((x, j) => pt(x, `${f}[${j}]`));
  };
  return {
    signers: signers as number[],
    i: i as number,
    publicKey: pt(o.publicKey, 'publicKey'),
    R: pt(o.R, 'R'),
    Gamma: pt(o.Gamma, 'Gamma'),
    Delta: list(o.Delta, 'Delta'),
    S: list(o.S, 'S'),
    k: sc(o.k, 'k'),
    chi: sc(o.chi, 'chi'),
  };
}

/** Store ops putting presignatures under their ids. */
export function presignaturePuts(keyId: string, items: readonly { id: string; data: PresignatureData }[]): StoreOp[] {
  return items.map(({ id, data }) => ({
    type: 'put',
    sublevel: 'presignatures',
    key: `${presignPrefix(keyId, data.signers)}${id}`,
    value: encodePresignature(data),
  }));
}

/**
 * Take a presignature out of the store: read it, then delete it in its own batch, and only then
 * return it (the caller's signature share is computed after the deletion is durable).
 * @returns undefined when no such presignature exists (never made, or already used)
 */
export async function takePresignature(
  store: SecureStore,
  keyId: string,
  signers: readonly number[],
  id: string,
): Promise<PresignatureData | undefined> {
  const key = `${presignPrefix(keyId, signers)}${id}`;
  const bytes = await store.get('presignatures', key);
  if (!bytes) return undefined;
  const data = decodePresignature(bytes);
  await store.batch([{ type: 'del', sublevel: 'presignatures', key }]);
  return data;
}

/** Pool sizes: `<keyId>/<signing set>` → count. */
export async function presignaturePoolSizes(store: SecureStore): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const k of await store.keys('presignatures')) {
    const slot = k.slice(0, k.lastIndexOf('/'));
    out[slot] = (out[slot] ?? 0) + 1;
  }
  return out;
}
