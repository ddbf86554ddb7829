/**
 * Coordinator-side CGGMP21 presignature pool (issue 7: "a background task keeps a configurable pool
 * of presignatures per key and party subset, consumed atomically"; DESIGN §3). For every master key
 * and the signing set the transfer pipeline picks for it ({@link signingParties}: the first t server
 * signers, then devices), PRESIGN ceremonies run in the background until `target` presignature ids
 * are pooled. The signers hold the presignatures (encrypted, deleted before the share that uses
 * one leaves the process); the coordinator holds only their ids, in the `presignatures` table
 * (signing/schema.ts), so a restarted coordinator keeps using them.
 *
 * - At most one PRESIGN ceremony per (key, set) runs at a time, across coordinator replicas: a
 *   lease row in `presignature_refills`. After a failed ceremony (a party offline, a device not
 *   connected, a key without ECDSA) the set backs off for `retryMs`.
 * - {@link PresignaturePool.begin} records a signing attempt and, for a pooled request, deletes
 *   one id of exactly that set in the same transaction (`FOR UPDATE SKIP LOCKED`): an id is handed
 *   out at most once, even with concurrent replicas. {@link PresignaturePool.finish} records the
 *   outcome and starts a refill.
 * - Refills are triggered after each use, and by a scan of `master_keys` every `scanMs` (which
 *   picks up a new master key); they never block a signature (an empty pool means cold signing).
 */
import type { Db } from '../db/db.js';
import { signingParties } from '../transfers/pipeline.js';
import { transferKeyId } from '../transfers/service.js';
import type { SigningAttempt, SigningAttemptLog, SignParty } from './gateway.js';

/** Settings of {@link PresignaturePool}. */
export interface PresignaturePoolOptions {
  /** Presignatures kept per (ECDSA key, signing set); 0 turns the pool off. Default 4. */
  target: number;
  /** Presignatures made by one PRESIGN ceremony (1..64). Default min(target, 4). */
  batch: number;
  /** Deadline of one PRESIGN ceremony, ms. Default 120 000. */
  deadlineMs: number;
  /** Back-off of a set after a failed PRESIGN ceremony, ms. Default 30 000. */
  retryMs: number;
  /** Interval of the `master_keys` scan, ms. Default 5000. */
  scanMs: number;
}

export const DEFAULT_PRESIGNATURE_POOL_OPTIONS: PresignaturePoolOptions = {
  target: 4,
  batch: 4,
  deadlineMs: 120_000,
  retryMs: 30_000,
  scanMs: 5000,
};

/** Runs one PRESIGN ceremony (gateway.ts {@link presignCeremony} bound to the services). */
export type PresignRunner = (
  keyId: string,
  parties: readonly SignParty[],
  count: number,
  deadline: Date,
  /** Aborted when the pool stops: the ceremony is aborted on every party. */
  signal?: AbortSignal,
) => Promise<{ ok: true; ids: string[] } | { ok: false; error: string }>;

/** Canonical text of a signing set: `kind:id` (lower case), sorted, joined by `,`. */
export function signingSetKey(parties: readonly SignParty[]): string {
  return parties
    .map((p) => `${p.kind}:${p.id.toLowerCase()}`)
    .sort()
    .join(',');
}

/** The pool (see the module comment). */
export class PresignaturePool implements SigningAttemptLog {
  readonly options: PresignaturePoolOptions;
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    private readonly db: Db,
    private readonly presign: PresignRunner,
    options: Partial<PresignaturePoolOptions> = {},
    private readonly log: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void = () => {},
  ) {
    const target = options.target ?? DEFAULT_PRESIGNATURE_POOL_OPTIONS.target;
    if (!Number.isSafeInteger(target) || target < 0 || target > 1024)
      throw new RangeError('presignaturePool: target 0..1024');
    const batch = options.batch ?? Math.max(1, Math.min(target, DEFAULT_PRESIGNATURE_POOL_OPTIONS.batch));
    if (!Number.isSafeInteger(batch) || batch < 1 || batch > 64) throw new RangeError('presignaturePool: batch 1..64');
    this.options = { ...DEFAULT_PRESIGNATURE_POOL_OPTIONS, ...options, target, batch };
  }

  /** Scan now and every `scanMs` (no-op when `target` is 0). */
  start(): void {
    if (this.options.target === 0 || this.#timer) return;
    this.#stopped = false;
    this.#timer = setInterval(() => void this.scan().catch(() => {}), this.options.scanMs);
    this.#timer.unref();
    void this.scan().catch(() => {});
  }

  /** Stop scanning and refilling; aborts the ceremonies in flight on every party and waits for them. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort(new Error('presignature pool stopping'));
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await Promise.allSettled([...this.#inFlight.values()]);
  }

  /** Start a refill of every master key's signing set that is below target. */
  async scan(): Promise<void> {
    if (this.#stopped || this.options.target === 0) return;
    const keys = await this.db.query<{
      master_key_id: string;
      ceremony_id: string | null;
      parties: unknown;
      threshold: number;
    }>('SELECT master_key_id, ceremony_id, parties, threshold FROM master_keys ORDER BY created_at');
    for (const k of keys) this.refill(transferKeyId(k), signingParties(k.parties, k.threshold));
  }

  /** Pooled ids of `(keyId, parties)`. */
  async size(keyId: string, parties: readonly SignParty[]): Promise<number> {
    const r = await this.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM presignatures WHERE key_id = $1 AND signing_set = $2',
      [keyId, signingSetKey(parties)],
    );
    return r[0]?.n ?? 0;
  }

  /**
   * Start (in the background) PRESIGN ceremonies for `(keyId, parties)` until the pool holds
   * `target` ids; returns the running refill (resolves when it ends; never rejects).
   */
  refill(keyId: string, parties: readonly SignParty[]): Promise<void> {
    const set = signingSetKey(parties);
    const slot = `${keyId}|${set}`;
    const running = this.#inFlight.get(slot);
    if (running) return running;
    if (this.#stopped || this.options.target === 0 || parties.length === 0) return Promise.resolve();
    const p = this.#refill(keyId, parties, set)
      .catch((e: unknown) =>
        this.log('warn', 'presignature refill failed', { keyId, set, err: e instanceof Error ? e.message : String(e) }),
      )
      .finally(() => this.#inFlight.delete(slot));
    this.#inFlight.set(slot, p);
    return p;
  }

  async #refill(keyId: string, parties: readonly SignParty[], set: string): Promise<void> {
    const { target, batch, deadlineMs, retryMs } = this.options;
    while (!this.#stopped) {
      const lease = new Date(Date.now() + deadlineMs + 30_000);
      // one PRESIGN ceremony per set across replicas; also honours the back-off of a failed one
      const claimed = await this.db.query(
        `INSERT INTO presignature_refills (key_id, signing_set, lease_until) VALUES ($1, $2, $3)
         ON CONFLICT (key_id, signing_set) DO UPDATE SET lease_until = EXCLUDED.lease_until
           WHERE presignature_refills.lease_until IS NULL OR presignature_refills.lease_until <= $4
         RETURNING 1`,
        [keyId, set, lease, new Date()],
      );
      if (claimed.length === 0) return;
      let next: Date | null = null;
      let error: string | null = null;
      try {
        const have = await this.size(keyId, parties);
        const count = Math.min(batch, target - have);
        if (count <= 0) return;
        const r = await this.presign(keyId, parties, count, new Date(Date.now() + deadlineMs), this.#abort.signal);
        if (!r.ok) {
          error = r.error;
          next = new Date(Date.now() + retryMs);
          this.log('warn', 'presign ceremony failed; retrying later', { keyId, set, error: r.error, retryMs });
          return;
        }
        const now = new Date();
        await this.db.tx(async (q) => {
          for (const id of r.ids)
            await q.query(
              `INSERT INTO presignatures (presignature_id, key_id, signing_set, created_at) VALUES ($1, $2, $3, $4)
               ON CONFLICT (presignature_id) DO NOTHING`,
              [id, keyId, set, now],
            );
        });
        this.log('info', 'presignatures pooled', { keyId, set, added: r.ids.length, pooled: have + r.ids.length });
      } finally {
        await this.db.query(
          'UPDATE presignature_refills SET lease_until = $3, last_error = $4 WHERE key_id = $1 AND signing_set = $2',
          [keyId, set, next, error],
        );
      }
    }
  }

  async begin(a: SigningAttempt): Promise<string | undefined> {
    const set = signingSetKey(a.parties);
    return this.db.tx(async (q) => {
      let id: string | undefined;
      if (a.pooled && this.options.target > 0) {
        const r = await q.query<{ presignature_id: string }>(
          `DELETE FROM presignatures WHERE presignature_id = (
             SELECT presignature_id FROM presignatures WHERE key_id = $1 AND signing_set = $2
             ORDER BY created_at, presignature_id LIMIT 1 FOR UPDATE SKIP LOCKED)
           RETURNING presignature_id`,
          [a.keyId, set],
        );
        id = r[0]?.presignature_id;
      }
      await q.query(
        `INSERT INTO signing_attempts (ceremony_id, key_id, algorithm, signing_set, transfer_id, presignature_id, started_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [a.ceremonyId, a.keyId, a.algorithm, set, a.transferId, id ?? null, new Date()],
      );
      return id;
    });
  }

  async finish(a: SigningAttempt, outcome: string): Promise<void> {
    const r = await this.db.query<{ presignature_id: string | null }>(
      'UPDATE signing_attempts SET finished_at = $2, outcome = $3 WHERE ceremony_id = $1 RETURNING presignature_id',
      [a.ceremonyId, new Date(), outcome],
    );
    this.log('info', 'signing attempt finished', {
      ceremonyId: a.ceremonyId,
      transferId: a.transferId,
      outcome,
      presignatureId: r[0]?.presignature_id ?? null,
    });
    if (a.algorithm === 'SECP256K1_ECDSA') void this.refill(a.keyId, a.parties);
  }
}
