/**
 * Stored CGGMP21 presignatures (sublevel `presignatures`, encrypted at rest). Key:
 * `<keyId>/<signing set>/<presignature id>` where the signing set is the ascending key indices
 * joined by "-" and the id is `<ceremony id hex>.<index>`. Value: JSON format v1 with points in
 * SEC1-compressed hex and scalars in hex; validated when read (points decode, 0 < k, χ < q).
 * A presignature is deleted from the store in a batch that completes BEFORE the signature share
 * that uses it leaves the process (DESIGN §3), so it can never sign twice, even across a crash.
 */
import { type PresignatureData, prepareSigning } from '@custodian/cggmp';
import { bigintToMinimalBytes, bytesToBigint, bytesToHex, hexToBytes, secp256k1Group } from '@custodian/crypto';
import type { Logger } from 'pino';
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

function publicFields(p: Omit<PresignatureData, 'k' | 'chi'>) {
  return {
    format: FORMAT,
    version: 1,
    signers: p.signers,
    i: p.i,
    publicKey: ph(p.publicKey),
    R: ph(p.R),
    Gamma: ph(p.Gamma),
    Delta: p.Delta.map(ph),
    S: p.S.map(ph),
  };
}

/** Serialise a presignature (SECRET: holds k_i and χ_i). */
export function encodePresignature(p: PresignatureData): Uint8Array {
  return enc.encode(JSON.stringify({ ...publicFields(p), k: bh(p.k), chi: bh(p.chi) }));
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
 * Pooled presignatures held decoded in memory, with R's fixed-base table (`prepareSigning`), by
 * storage key: a pooled signature then reads nothing from the store and decodes no point, so the
 * synced write that must precede its share (the presignature's deletion with the ceremony's pending
 * record) starts as soon as the request is checked. SECRET: entries hold k_i and χ_i, as the key
 * share cache holds the key share; memory only, never logged. At most `limit` entries (≈ 0.45 MB
 * each, most of it R's table); the oldest go first and are then read from the store when used.
 *
 * Invariant: every entry is in the store (the store stays the record across restarts). Entries are
 * added only once their presignatures are durably stored ({@link add}, after the PRESIGN batch) or
 * read from the store ({@link warm}); {@link take} removes an entry before its deletion is
 * written, and a presignature taken while {@link warm} runs is never put back by it.
 */
export class PreparedPresignatures {
  readonly #entries = new Map<string, PresignatureData>();
  /** Storage keys taken while a {@link warm} runs (warm may have read them before the deletion). */
  readonly #takenWhileWarming = new Set<string>();
  #warming = 0;
  constructor(readonly limit = 64) {}

  get size(): number {
    return this.#entries.size;
  }

  /** Remember presignatures of `keyId` under their ids, once stored (as by {@link presignaturePuts}). */
  add(keyId: string, items: readonly { id: string; data: PresignatureData }[]): void {
    for (const { id, data } of items) {
      prepareSigning(data);
      this.#put(`${presignPrefix(keyId, data.signers)}${id}`, data);
    }
  }

  /** Remove and return the presignature of a storage key, if held. */
  take(key: string): PresignatureData | undefined {
    const e = this.#entries.get(key);
    this.#entries.delete(key);
    if (this.#warming > 0) this.#takenWhileWarming.add(key);
    return e;
  }

  /** Forget every entry of a key (its presignatures are being deleted, e.g. by a refresh). */
  forgetKey(keyId: string): void {
    for (const k of [...this.#entries.keys()]) if (k.startsWith(`${keyId}/`)) this.take(k);
  }

  /**
   * Prepare the stored presignatures not yet here (after a restart), up to `limit`, yielding to
   * the event loop between entries (≈ 30 ms of CPU each), after the generator's table that every
   * ECDSA verification and HD derivation uses (`prepareBase`, ≈ 85 ms once), so the first
   * signature after a start does not pay for it. Entries that no longer exist or do not
   * decode are skipped (a bad one is reported when it is taken).
   */
  async warm(store: SecureStore, log?: Logger, signal?: AbortSignal): Promise<number> {
    this.#warming++;
    try {
      await new Promise((r) => setImmediate(r));
      if (signal?.aborted) return 0;
      secp256k1Group.prepareBase();
      let n = 0;
      for (const key of await store.keys('presignatures')) {
        if (this.#entries.size >= this.limit || signal?.aborted) break;
        if (this.#entries.has(key)) continue;
        await new Promise((r) => setImmediate(r));
        if (signal?.aborted) break;
        try {
          const bytes = await store.get('presignatures', key);
          if (!bytes) continue;
          const data = decodePresignature(bytes);
          prepareSigning(data);
          // taken since the read (its deletion may be written already): never back in
          if (this.#takenWhileWarming.has(key)) continue;
          this.#put(key, data);
          n++;
        } catch (e) {
          log?.warn({ err: e instanceof Error ? e.message : String(e) }, 'stored presignature not prepared');
        }
      }
      return n;
    } finally {
      if (--this.#warming === 0) this.#takenWhileWarming.clear();
    }
  }

  #put(key: string, data: PresignatureData): void {
    this.#entries.delete(key);
    if (this.#entries.size >= this.limit) this.#entries.delete(this.#entries.keys().next().value as string);
    this.#entries.set(key, data);
  }
}

/** Storage keys of presignatures being taken, per store: claimed before the first await. */
const taking = new WeakMap<SecureStore, Set<string>>();

/**
 * Take a presignature out of the store: from the node's prepared ones (no read) or else read it,
 * and start its deletion. The caller computes its
 * signature share while the deletion is written, and must let nothing that depends on the share
 * leave before `deleted` resolves (the runner's `releaseAfter`): a presignature can never sign
 * twice, even across a crash or a power cut. Two requests for the same presignature at once cannot
 * both get it: the key is claimed in memory before anything else (until the deletion is written),
 * and a second taker gets undefined, as for a used one. A prepared presignature's deletion starts
 * before this returns (synchronously).
 * @param prepared the node's prepared presignatures (the entry is used and dropped)
 * @param commit writes the deletion instead of a plain synced batch, e.g. together with what else
 *   must be durable before the share leaves (the ceremony's pending record and ledger entry)
 * @returns the presignature and its durable deletion; undefined when no such presignature exists
 *   (never made, already used, being used)
 * @throws RangeError / TypeError for a stored presignature that does not decode (nothing deleted)
 */
export async function takePresignature(
  store: SecureStore,
  keyId: string,
  signers: readonly number[],
  id: string,
  prepared?: PreparedPresignatures,
  commit: (ops: StoreOp[]) => Promise<void> = (ops) => store.batch(ops),
): Promise<{ data: PresignatureData; deleted: Promise<void> } | undefined> {
  const key = `${presignPrefix(keyId, signers)}${id}`;
  let claimed = taking.get(store);
  if (!claimed) taking.set(store, (claimed = new Set()));
  if (claimed.has(key)) return undefined;
  claimed.add(key);
  const unclaim = () => claimed.delete(key);
  // a prepared one is in the store (see PreparedPresignatures): its deletion starts at once
  let data = prepared?.take(key);
  if (!data) {
    try {
      const bytes = await store.get('presignatures', key);
      if (!bytes) {
        unclaim();
        return undefined;
      }
      data = decodePresignature(bytes);
    } catch (e) {
      unclaim();
      throw e;
    }
  }
  const deleted = commit([{ type: 'del', sublevel: 'presignatures', key }]).finally(unclaim);
  deleted.catch(() => undefined);
  return { data, deleted };
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

/**
 * Deletions of every stored presignature (all keys, all signing sets): a signer discards the
 * presignatures of earlier process lifetimes at start (generation.ts), before any is loaded.
 */
export async function presignatureDiscards(store: SecureStore): Promise<StoreOp[]> {
  return (await store.keys('presignatures')).map((key) => ({ type: 'del', sublevel: 'presignatures', key }));
}
