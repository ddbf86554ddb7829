/**
 * Stored CGGMP21 presignatures (sublevel `presignatures`, encrypted at rest). Key:
 * `<keyId>/<signing set>/<presignature id>` where the signing set is the ascending key indices
 * joined by "-" and the id is `<ceremony id hex>.<index>`. Value: the `@custodian/cggmp` export of
 * the presignature (`Presignature.export`, JSON format `custodian.cggmp.presignature` v1; records
 * written before the format moved to the package are the same JSON under the name
 * `custodian.signer.presignature` v1 and still read), validated when read.
 *
 * Single use, in three layers:
 * - the package: a presignature is an opaque one-shot handle; in one process no handle of it signs
 *   twice, however it was copied, exported or imported (its registry is keyed by k_i);
 * - this store: a presignature is deleted in a batch that completes BEFORE the signature share that
 *   uses it leaves the process (DESIGN §3), so it can never sign twice across a crash or restart;
 * - the pool in memory ({@link PreparedPresignatures}): every storage key taken in this process is
 *   tombstoned for the process's lifetime and never put back into memory.
 *
 * Reconciliation with the coordinator's pool (issue #27 [faults] item 7; the coordinator's
 * presignature-pool.ts): {@link heldPresignatures} lists the ids of a key and signing set (never
 * contents) with their age, {@link deletePresignatures} deletes orphans. Both respect a SIGN in
 * progress: an id being taken ({@link takePresignature} claimed it) is neither listed nor deleted,
 * and a deletion claims its ids the same way before its first await, so a SIGN asking for an id
 * being deleted gets nothing (refused as unknown, signed cold by the coordinator) — never a
 * presignature that is being deleted under it. A deleted id is tombstoned in memory like a taken one.
 */
import { Presignature, PresignatureUseError, prepareSigning } from '@custodian/cggmp';
import { bytesToBigint, secp256k1Group } from '@custodian/crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import type { Logger } from 'pino';
import type { CeremonyStore, StoreOp } from './storage.js';

/** Storage key prefix of a key's signing set. */
export function presignPrefix(keyId: string, signers: readonly number[]): string {
  return `${keyId}/${signers.join('-')}/`;
}

/**
 * Serialise a presignature for the store and SEAL the handle (it can no longer sign; see
 * `Presignature.export`). SECRET bytes: holds k_i and χ_i.
 * @throws PresignatureUseError when the handle cannot sign any more (signed, exported, discarded)
 */
export function encodePresignature(p: Presignature): Uint8Array {
  return p.export();
}

/**
 * Parse and validate a stored presignature into a live one-shot handle (`Presignature.import`).
 * @throws RangeError / TypeError naming the field (never a secret value); PresignatureUseError
 *   when this process used it already (`PRESIGNATURE_SPENT`) or holds a live handle of it (`PRESIGNATURE_HELD`)
 */
export function decodePresignature(bytes: Uint8Array): Presignature {
  return Presignature.import(bytes);
}

/** Store ops putting presignatures under their ids; each handle is exported, hence sealed. */
export function presignaturePuts(
  keyId: string,
  items: readonly { id: string; presignature: Presignature }[],
): StoreOp[] {
  return items.map(({ id, presignature }) => ({
    type: 'put',
    sublevel: 'presignatures',
    key: `${presignPrefix(keyId, presignature.public.signers)}${id}`,
    value: encodePresignature(presignature),
  }));
}

/** Tombstone form of a storage key: 128 bits of its SHA-256 as a bigint (≈ 60 bytes in a Set). */
const tombstone = (key: string) => bytesToBigint(sha256(new TextEncoder().encode(key)).subarray(0, 16));

/**
 * Pooled presignatures held decoded in memory as one-shot handles, with R's fixed-base table
 * (`prepareSigning`), by storage key: a pooled signature then reads nothing from the store and
 * decodes no point, so the synced write that must precede its share (the presignature's deletion
 * with the ceremony's pending record) starts as soon as the request is checked. SECRET: entries
 * hold k_i and χ_i (in the handles' private fields), as the key share cache holds the key share;
 * memory only, never logged. At most `limit` entries (≈ 0.45 MB each, most of it R's table); the
 * oldest go first (their handles are discarded) and are then read from the store when used.
 *
 * Invariants: every entry is in the store (the store stays the record across restarts): entries
 * are added only once their presignatures are durably stored ({@link add}, after the PRESIGN
 * batch) or read from the store ({@link warm}). A storage key once {@link take}n is tombstoned for
 * the life of this object (one per process: the daemon's), and nothing with a tombstoned key is
 * ever put into memory again, whatever the interleaving of a take with {@link warm} (issue #20
 * item 6). Cost: ≈ 60 bytes per pooled signature for the life of the process.
 */
export class PreparedPresignatures {
  readonly #entries = new Map<string, Presignature>();
  /** Every storage key taken in this process (its tombstone form). */
  readonly #taken = new Set<bigint>();
  constructor(readonly limit = 64) {}

  get size(): number {
    return this.#entries.size;
  }

  /**
   * Remember the presignatures of `puts` (as made by {@link presignaturePuts}) once that batch is
   * durably written: each is imported again from its stored bytes (the export sealed the
   * presigning's handle) and prepared. A key already taken is not added.
   */
  add(puts: readonly StoreOp[]): void {
    for (const op of puts) {
      if (op.type !== 'put' || op.sublevel !== 'presignatures' || this.#taken.has(tombstone(op.key))) continue;
      try {
        const p = decodePresignature(op.value);
        prepareSigning(p.public);
        this.#put(op.key, p);
      } catch {
        // not held in memory: it is read from the store when taken (slower, never unsafe)
      }
    }
  }

  /** Remove and return the presignature of a storage key, if held; the key is tombstoned either way. */
  take(key: string): Presignature | undefined {
    this.#taken.add(tombstone(key));
    const e = this.#entries.get(key);
    this.#entries.delete(key);
    return e;
  }

  /** True when `key` was taken in this process (it never comes back into memory). */
  taken(key: string): boolean {
    return this.#taken.has(tombstone(key));
  }

  /** Forget every entry of a key (its presignatures are being deleted, e.g. by a refresh). */
  forgetKey(keyId: string): void {
    for (const k of [...this.#entries.keys()]) if (k.startsWith(`${keyId}/`)) this.take(k)?.discard();
  }

  /**
   * Load and prepare the stored presignatures not yet here (after a restart), up to `limit`,
   * yielding to the event loop between entries (≈ 30 ms of CPU each), after the generator's table
   * that every ECDSA verification and HD derivation uses (`prepareBase`, ≈ 85 ms once), so the
   * first signature after a start does not pay for it. The daemon runs it before its host accepts
   * control requests. Keys taken in this process are skipped (before the read and again before
   * the insert); entries that no longer exist, do not decode, or whose presignature this process
   * used or holds already are skipped (a bad one is reported when it is taken).
   */
  async warm(store: CeremonyStore, log?: Logger, signal?: AbortSignal): Promise<number> {
    await new Promise((r) => setImmediate(r));
    if (signal?.aborted) return 0;
    secp256k1Group.prepareBase();
    let n = 0;
    for (const key of await store.keys('presignatures')) {
      if (this.#entries.size >= this.limit || signal?.aborted) break;
      if (this.#entries.has(key) || this.taken(key)) continue;
      await new Promise((r) => setImmediate(r));
      if (signal?.aborted) break;
      try {
        const bytes = await store.get('presignatures', key);
        if (!bytes || this.taken(key)) continue;
        const p = decodePresignature(bytes);
        prepareSigning(p.public);
        if (this.#put(key, p)) n++;
      } catch (e) {
        if (e instanceof PresignatureUseError) continue; // used or held in this process: not ours to hold
        log?.warn({ err: e instanceof Error ? e.message : String(e) }, 'stored presignature not prepared');
      }
    }
    return n;
  }

  /** Insert unless tombstoned (then the handle is discarded). @returns whether it was inserted */
  #put(key: string, p: Presignature): boolean {
    if (this.#taken.has(tombstone(key))) {
      p.discard();
      return false;
    }
    this.#entries.get(key)?.discard();
    this.#entries.delete(key);
    if (this.#entries.size >= this.limit) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.get(oldest)?.discard();
      this.#entries.delete(oldest);
    }
    this.#entries.set(key, p);
    return true;
  }
}

/** Storage keys of presignatures being taken, per store: claimed before the first await. */
const taking = new WeakMap<CeremonyStore, Set<string>>();

/**
 * Take a presignature out of the store: from the node's prepared ones (no read) or else read it,
 * and start its deletion. The caller computes its
 * signature share while the deletion is written, and must let nothing that depends on the share
 * leave before `deleted` resolves (the runner's `releaseAfter`): a presignature can never sign
 * twice, even across a crash or a power cut. Two requests for the same presignature at once cannot
 * both get it: the key is claimed in memory before anything else (until the deletion is written),
 * and a second taker gets undefined, as for a used one. A prepared presignature's deletion starts
 * before this returns (synchronously).
 * @param prepared the node's prepared presignatures (the entry is used and dropped; the key is
 *   tombstoned there, so it never comes back into memory)
 * @param commit writes the deletion instead of a plain synced batch, e.g. together with what else
 *   must be durable before the share leaves (the ceremony's pending record and ledger entry)
 * @returns the presignature (a live one-shot handle) and its durable deletion; undefined when no
 *   such presignature exists (never made, already used, being used). If the deletion fails, the
 *   handle is discarded (it must not sign: the store still holds the presignature, which may be
 *   taken again unless this process signed with it)
 * @throws RangeError / TypeError for a stored presignature that does not decode (nothing deleted)
 */
export async function takePresignature(
  store: CeremonyStore,
  keyId: string,
  signers: readonly number[],
  id: string,
  prepared?: PreparedPresignatures,
  commit: (ops: StoreOp[]) => Promise<void> = (ops) => store.batch(ops),
): Promise<{ presignature: Presignature; deleted: Promise<void> } | undefined> {
  const key = `${presignPrefix(keyId, signers)}${id}`;
  let claimed = taking.get(store);
  if (!claimed) taking.set(store, (claimed = new Set()));
  if (claimed.has(key)) return undefined;
  claimed.add(key);
  const unclaim = () => claimed.delete(key);
  // a prepared one is in the store (see PreparedPresignatures): its deletion starts at once
  let presignature = prepared?.take(key);
  if (!presignature) {
    try {
      const bytes = await store.get('presignatures', key);
      if (!bytes) {
        unclaim();
        return undefined;
      }
      presignature = decodePresignature(bytes);
    } catch (e) {
      unclaim();
      // this process signed with it (its deletion failed then) or holds it: as used
      if (e instanceof PresignatureUseError) return undefined;
      throw e;
    }
  }
  const p = presignature;
  const deleted = commit([{ type: 'del', sublevel: 'presignatures', key }])
    .catch((e) => {
      p.discard();
      throw e;
    })
    .finally(unclaim);
  deleted.catch(() => undefined);
  return { presignature: p, deleted };
}

/** A presignature a signer holds: its id and how long ago it was stored. */
export interface HeldPresignature {
  /** `<ceremony id hex>.<index>`. */
  id: string;
  /**
   * Milliseconds since its PRESIGN ceremony's record was written (the same batch as the
   * presignature), on this signer's clock (0 when the clock went back); Number.MAX_SAFE_INTEGER
   * when the record is missing or unreadable (written by no PRESIGN ceremony of this store).
   */
  ageMs: number;
}

/**
 * The presignatures this signer holds for `keyId` and the signing set `signers` (ascending key
 * indices), with their ages (the PRESIGN ceremony's record, `ceremonies/<ceremony id hex>`, one
 * read per ceremony). Ids a SIGN is taking right now are left out. Ids only: no presignature is
 * read or decoded.
 */
export async function heldPresignatures(
  store: CeremonyStore,
  keyId: string,
  signers: readonly number[],
  now: number = Date.now(),
): Promise<HeldPresignature[]> {
  const prefix = presignPrefix(keyId, signers);
  const claimed = taking.get(store);
  const keys = (await store.keys('presignatures', prefix)).filter((k) => !claimed?.has(k));
  const storedAt = new Map<string, number>();
  const out: HeldPresignature[] = [];
  for (const key of keys) {
    const id = key.slice(prefix.length);
    const ceremony = id.slice(0, id.lastIndexOf('.'));
    let at = storedAt.get(ceremony);
    if (at === undefined) {
      at = Number.NaN;
      try {
        const rec = await store.get('ceremonies', ceremony);
        if (rec) at = Date.parse((JSON.parse(new TextDecoder().decode(rec)) as { at?: string }).at ?? '');
      } catch {
        // unreadable record: age unknown
      }
      storedAt.set(ceremony, at);
    }
    out.push({ id, ageMs: Number.isFinite(at) ? Math.max(0, now - at) : Number.MAX_SAFE_INTEGER });
  }
  return out;
}

/**
 * Delete presignatures of `keyId` and the signing set `signers` by id (the coordinator's
 * reconciliation: orphans), in one synced batch. An id a SIGN is taking is left alone and reported
 * in `inUse` (the SIGN deletes it itself before its share leaves); the others are claimed at once
 * (before the first await: a SIGN asking for one meanwhile gets nothing) and tombstoned in
 * `prepared` (their handles discarded: never taken or warmed again in this process). Ids not held
 * are ignored.
 * @returns how many presignatures were deleted, and the ids in use
 * @throws the store's error when the batch fails (nothing deleted; the claims are released)
 */
export async function deletePresignatures(
  store: CeremonyStore,
  keyId: string,
  signers: readonly number[],
  ids: readonly string[],
  prepared?: PreparedPresignatures,
): Promise<{ deleted: number; inUse: string[] }> {
  const prefix = presignPrefix(keyId, signers);
  let claimed = taking.get(store);
  if (!claimed) taking.set(store, (claimed = new Set()));
  const inUse: string[] = [];
  const mine: string[] = [];
  for (const id of new Set(ids)) {
    const key = `${prefix}${id}`;
    if (claimed.has(key)) {
      inUse.push(id);
      continue;
    }
    claimed.add(key);
    mine.push(key);
    prepared?.take(key)?.discard();
  }
  try {
    const held = new Set(await store.keys('presignatures', prefix));
    const ops: StoreOp[] = mine
      .filter((key) => held.has(key))
      .map((key) => ({ type: 'del', sublevel: 'presignatures', key }));
    if (ops.length > 0) await store.batch(ops);
    return { deleted: ops.length, inUse };
  } finally {
    for (const key of mine) claimed.delete(key);
  }
}

/** Pool sizes: `<keyId>/<signing set>` → count. */
export async function presignaturePoolSizes(store: CeremonyStore): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const k of await store.keys('presignatures')) {
    const slot = k.slice(0, k.lastIndexOf('/'));
    out[slot] = (out[slot] ?? 0) + 1;
  }
  return out;
}

/**
 * Deletions of every stored presignature (all keys, all signing sets): a signer discards the
 * presignatures of earlier process lifetimes at start (the server signer's generation.ts; the
 * phone at every start), before any is loaded.
 */
export async function presignatureDiscards(store: CeremonyStore): Promise<StoreOp[]> {
  return (await store.keys('presignatures')).map((key) => ({ type: 'del', sublevel: 'presignatures', key }));
}
