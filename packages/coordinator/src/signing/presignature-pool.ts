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
 *   lease row in `presignature_refills`, short and renewed while the ceremony runs
 *   ({@link REFILL_LEASE_MS}). After a failed ceremony (a party offline, a device not
 *   connected, a key without ECDSA) the set backs off for `retryMs`.
 * - {@link PresignaturePool.begin} records a signing attempt and, for a pooled request, deletes
 *   one id of exactly that set in the same transaction (`FOR UPDATE SKIP LOCKED`): an id is handed
 *   out at most once, even with concurrent replicas. {@link PresignaturePool.finish} records the
 *   outcome and starts a refill.
 * - Refills are triggered after each use, and by a scan of `master_keys` every `scanMs` (which
 *   picks up a new master key); they never block a signature (an empty pool means cold signing).
 *
 * Reconciliation with the signers: presignature-reconcile.ts ({@link PresignaturePool.reconcile},
 * at start and every `reconcileMs`; among replicas on one of them only, `reconcileScheduling`).
 */

import type { Db, Queryable } from '../db/db.js';
import type { Startable } from '../lifecycle.js';
import type { MasterKeyStore } from '../signers/store.js';
import { signingParties } from '../transfers/pipeline.js';
import { transferKeyId } from '../transfers/service.js';
import type { SigningAttempt, SigningAttemptLog, SignParty } from './gateway.js';
import {
  type PresignatureHolders,
  type PresignatureReconciliation,
  type PresignatureSetReconciliation,
  reconcileSet,
  signingSetKey,
} from './presignature-reconcile.js';

export type {
  PresignatureHolders,
  PresignatureReconciliation,
  PresignatureSetReconciliation,
  ReconcileContext,
} from './presignature-reconcile.js';
export { reconcileSet, signingSetKey } from './presignature-reconcile.js';

/**
 * Lease of a set's refill (ms), renewed every third of it while its PRESIGN ceremony runs (#27): a
 * coordinator killed during a refill holds the set for at most this long, then another process (or
 * its own restart) refills it. Two ceremonies of one set overlapping after a lost renewal only make
 * more presignatures (distinct ids), never a shared one.
 */
export const REFILL_LEASE_MS = 15_000;

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
  /** Interval of the reconciliation with the signers (also run at start), ms; 0 turns it off. Default 600 000. */
  reconcileMs: number;
  /**
   * Grace age of the reconciliation, ms: an id not in the pool whose youngest holder stored it
   * less than this ago may belong to a PRESIGN ceremony in flight and is not touched; a signing
   * attempt that ended less than this ago protects its id. Default 900 000 (the signers' 10-minute
   * cap on a ceremony's deadline, plus slack); keep it above `deadlineMs`.
   */
  reconcileGraceMs: number;
  /**
   * Who runs the periodic reconciliation: `pool` (default) — {@link PresignaturePool.start} runs
   * it at start and every `reconcileMs`; `external` — the owner runs
   * {@link PresignaturePool.reconciliation} (coordinator.ts: under the singleton lease
   * `scheduler:presignature-reconcile`, on one replica), and `start` only scans and refills.
   */
  reconcileScheduling: 'pool' | 'external';
}

export const DEFAULT_PRESIGNATURE_POOL_OPTIONS: PresignaturePoolOptions = {
  target: 4,
  batch: 4,
  deadlineMs: 120_000,
  retryMs: 30_000,
  scanMs: 5000,
  reconcileMs: 600_000,
  reconcileGraceMs: 900_000,
  reconcileScheduling: 'pool',
};

/** Runs one PRESIGN ceremony (dispatch.ts {@link presignCeremony} bound to the services). */
export type PresignRunner = (
  keyId: string,
  parties: readonly SignParty[],
  count: number,
  deadline: Date,
  /** Aborted when the pool stops: the ceremony is aborted on every party. */
  signal?: AbortSignal,
) => Promise<{ ok: true; ids: string[] } | { ok: false; error: string }>;

/** Dependencies of {@link PresignaturePool}. */
export interface PresignaturePoolComponents {
  readonly db: Db;
  /** The master key records (signers room): every key's signing set is kept filled and reconciled. */
  readonly masterKeys: Pick<MasterKeyStore, 'listMasterKeys'>;
  /** Runs one PRESIGN ceremony. */
  readonly presign: PresignRunner;
  /** Asks the parties about their presignatures; absent: no reconciliation (every set is reported skipped). */
  readonly holders?: PresignatureHolders | undefined;
  readonly log?: ((level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void) | undefined;
  readonly options?: Partial<PresignaturePoolOptions> | undefined;
}

/** The pool (see the module comment). */
export class PresignaturePool implements SigningAttemptLog, Startable {
  readonly options: PresignaturePoolOptions;
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #reconcileTimer: NodeJS.Timeout | undefined;
  #reconciling: Promise<unknown> = Promise.resolve();
  #stopped = false;
  private readonly db: Db;
  private readonly masterKeys: Pick<MasterKeyStore, 'listMasterKeys'>;
  private readonly presign: PresignRunner;
  private readonly holders: PresignatureHolders | undefined;
  private readonly log: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
  /** The latest finished reconciliation (counts per set), for operators and tests. */
  lastReconciliation: PresignatureReconciliation | undefined;

  /** @throws RangeError naming the option (`target` 0..1024, `batch` 1..64, `reconcileMs` / `reconcileGraceMs` ≥ 0) */
  constructor(c: PresignaturePoolComponents) {
    this.db = c.db;
    this.masterKeys = c.masterKeys;
    this.presign = c.presign;
    this.holders = c.holders;
    this.log = c.log ?? (() => {});
    const options = c.options ?? {};
    const target = options.target ?? DEFAULT_PRESIGNATURE_POOL_OPTIONS.target;
    if (!Number.isSafeInteger(target) || target < 0 || target > 1024)
      throw new RangeError('presignaturePool: target 0..1024');
    const batch = options.batch ?? Math.max(1, Math.min(target, DEFAULT_PRESIGNATURE_POOL_OPTIONS.batch));
    if (!Number.isSafeInteger(batch) || batch < 1 || batch > 64) throw new RangeError('presignaturePool: batch 1..64');
    this.options = { ...DEFAULT_PRESIGNATURE_POOL_OPTIONS, ...options, target, batch };
    for (const k of ['reconcileMs', 'reconcileGraceMs'] as const) {
      const v = this.options[k];
      if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`presignaturePool: ${k} must be an integer ≥ 0`);
    }
  }

  /**
   * Scan now and every `scanMs`; reconcile with the signers now and every `reconcileMs` (unless 0,
   * or `reconcileScheduling` is `external`: then the first scan waits for {@link reconciliation}'s
   * first pass when it runs here, else for the scan timer). No-op when `target` is 0 (the pool is
   * off: nothing is reconciled either). Idempotent.
   */
  async start(): Promise<void> {
    if (this.options.target === 0 || this.#timer) return;
    this.#stopped = false;
    this.#timer = setInterval(() => void this.scan().catch(() => {}), this.options.scanMs);
    this.#timer.unref();
    if (this.options.reconcileMs === 0) {
      void this.scan().catch(() => {});
      return;
    }
    if (this.options.reconcileScheduling === 'pool') await this.reconciliation.start();
  }

  /**
   * The periodic reconciliation as a component: `start()` reconciles now, then scans (the first
   * refills wait for it: it drops pool ids lost at a signer, so they refill to the true size; ids
   * of their ceremonies are never taken for orphans) and reconciles again every `reconcileMs`;
   * `stop()` ends the timer and waits for the pass in flight. Nothing when `target` or
   * `reconcileMs` is 0. Idempotent. Started by {@link start} unless `reconcileScheduling` is
   * `external`.
   */
  readonly reconciliation: Startable = {
    start: async () => {
      if (this.options.target === 0 || this.options.reconcileMs === 0 || this.#reconcileTimer || this.#stopped) return;
      const reconcile = () =>
        this.reconcile().catch((e: unknown) =>
          this.log('warn', 'presignature reconciliation failed', { err: e instanceof Error ? e.message : String(e) }),
        );
      this.#reconcileTimer = setInterval(() => void reconcile(), this.options.reconcileMs);
      this.#reconcileTimer.unref();
      void reconcile().then(() => this.scan().catch(() => {}));
    },
    stop: async () => {
      if (this.#reconcileTimer) clearInterval(this.#reconcileTimer);
      this.#reconcileTimer = undefined;
      await this.#reconciling.catch(() => undefined);
    },
  };

  /**
   * Stop scanning, refilling and reconciling; aborts the ceremonies in flight on every party and
   * waits for them. Idempotent.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort(new Error('presignature pool stopping'));
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#reconcileTimer) clearInterval(this.#reconcileTimer);
    this.#reconcileTimer = undefined;
    await Promise.allSettled([...this.#inFlight.values(), this.#reconciling]);
  }

  /**
   * Reconcile the pool with the signers now, for every master key's signing set (see the module
   * comment), one set after another; passes never overlap (a call waits for the running one).
   * Works whether or not the pool is started; once it is stopped, no further set is reconciled.
   * @param options.graceMs overrides `reconcileGraceMs` for this pass (0: nothing is presumed in
   *   flight by age; unfinished signing attempts still protect their ids)
   * @returns the counts per set (also kept in {@link lastReconciliation})
   * @throws Error when the database cannot be read (a party's failure only skips its set)
   */
  reconcile(options: { graceMs?: number } = {}): Promise<PresignatureReconciliation> {
    const graceMs = options.graceMs ?? this.options.reconcileGraceMs;
    if (!Number.isSafeInteger(graceMs) || graceMs < 0) throw new RangeError('graceMs: an integer ≥ 0');
    const run = this.#reconciling.catch(() => undefined).then(() => this.#reconcileAll(graceMs));
    this.#reconciling = run;
    return run;
  }

  async #reconcileAll(graceMs: number): Promise<PresignatureReconciliation> {
    const at = new Date();
    const keys = await this.masterKeys.listMasterKeys();
    const sets: PresignatureSetReconciliation[] = [];
    for (const k of keys) {
      if (this.#stopped) break; // stopping: the control client goes next
      const parties = signingParties(k.parties, k.threshold);
      if (parties.length === 0) continue;
      const r = await reconcileSet(
        {
          db: this.db,
          holders: this.holders,
          refilling: (keyId, set) => this.#inFlight.has(`${keyId}|${set}`),
          log: this.log,
        },
        transferKeyId(k),
        parties,
        graceMs,
      );
      sets.push(r);
      const deleted = Object.values(r.deletedAtSigners).reduce((a, b) => a + b, 0);
      if (r.skipped !== undefined)
        this.log('info', 'presignature set not reconciled', { keyId: r.keyId, set: r.signingSet, reason: r.skipped });
      else if (deleted > 0 || r.droppedFromPool > 0 || r.inUse > 0)
        this.log('info', 'presignatures reconciled with the signers', {
          keyId: r.keyId,
          set: r.signingSet,
          common: r.common,
          kept: r.kept,
          droppedFromPool: r.droppedFromPool,
          deletedAtSigners: r.deletedAtSigners,
          inUse: r.inUse,
        });
    }
    const report = { at, sets };
    this.lastReconciliation = report;
    return report;
  }

  /** Start a refill of every master key's signing set that is below target. */
  async scan(): Promise<void> {
    if (this.#stopped || this.options.target === 0) return;
    const keys = await this.masterKeys.listMasterKeys();
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
      // a short lease renewed while the ceremony runs: a crashed coordinator's refill blocks the
      // set for REFILL_LEASE_MS at most, not for the whole ceremony deadline
      const lease = new Date(Date.now() + REFILL_LEASE_MS);
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
      const heartbeat = setInterval(() => {
        this.db
          .query(
            'UPDATE presignature_refills SET lease_until = $3 WHERE key_id = $1 AND signing_set = $2 AND lease_until > $4',
            [keyId, set, new Date(Date.now() + REFILL_LEASE_MS), new Date()],
          )
          .catch(() => undefined); // the lease then runs out: another refill may start, never a wrong id
      }, REFILL_LEASE_MS / 3);
      heartbeat.unref();
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
        clearInterval(heartbeat);
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

/** Pooled presignature ids per (key, signing set) (the `custodian_presignature_pool_depth` gauge). */
export async function pooledCounts(db: Db): Promise<{ key_id: string; signing_set: string; n: number }[]> {
  return db.query<{ key_id: string; signing_set: string; n: number }>(
    'SELECT key_id, signing_set, count(*)::int AS n FROM presignatures GROUP BY key_id, signing_set',
  );
}

/**
 * Drop every pooled presignature id of `keyId` (all signing sets) and its refill leases, in the
 * caller's transaction: after a refresh or a committed reshare the signers deleted theirs, and
 * the pool refills for the key's new parties at its next scan.
 */
export async function dropKeyPresignatures(q: Queryable, keyId: string): Promise<void> {
  await q.query('DELETE FROM presignatures WHERE key_id = $1', [keyId]);
  await q.query('DELETE FROM presignature_refills WHERE key_id = $1', [keyId]);
}
