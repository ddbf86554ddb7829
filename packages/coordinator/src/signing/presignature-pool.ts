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
 * Reconciliation with the signers (issue #27 [faults] item 7; {@link PresignaturePool.reconcile}),
 * at start (before the first scan) and every `reconcileMs` (default 10 minutes). A crash
 * mid-PRESIGN (or a signer's restart, which discards its presignatures) leaves orphans: ids only some parties of the set hold
 * (useless: a signature needs every party to hold the id) and pool ids some party no longer holds
 * (each would cost a failed pooled attempt and a cold retry). For each master key's signing set,
 * the pool's ids are read FIRST, then every party is asked for the ids it holds for that key and
 * set (control.proto `PresignatureInventory`: ids and their ages on the signer's clock, never
 * contents; ids a SIGN is taking right now are not listed), then:
 * - an id in the pool and held by every party is kept (`common`);
 * - a pool id some party does not hold is deleted from the pool (`droppedFromPool`; before anything
 *   is deleted at a signer, so the pool never hands out an id being deleted) and at the parties
 *   still holding it;
 * - an id held by some or all parties and not in the pool is deleted at the parties holding it
 *   (`deletedAtSigners`, control.proto `DeletePresignatures`). Deleted, not adopted, even when every
 *   party holds it: such an id comes from a PRESIGN ceremony whose outcome no coordinator recorded,
 *   or was handed out by `begin` to a SIGN that ended without using it. Adopting would not be
 *   unsafe (a signer deletes a presignature before any share made with it leaves), but it would
 *   have to tell those two cases apart to keep "an id is handed out once" true, and it saves at
 *   most one PRESIGN ceremony of the next refill; deleting needs no such proof and is never wrong.
 * - In flight, never touched (`kept`): a PRESIGN ceremony's ids appear at the signers before the
 *   coordinator records them, and a pooled id leaves the pool in `begin` before the signers delete
 *   it in the SIGN ceremony. So an id NOT in the pool is left alone while (a) its youngest holder
 *   stored it less than `reconcileGraceMs` ago (default 15 minutes: a signer refuses a ceremony
 *   deadline more than 10 minutes away (`MAX_DEADLINE_MS`), so after that age every party has
 *   finished or abandoned that PRESIGN ceremony, and the coordinator that ran it has recorded its
 *   ids or never will), or (b) a PRESIGN ceremony of the set may be running (its refill lease in
 *   `presignature_refills` is live, any replica) or this process is refilling the set, or (c) it
 *   is read in the pool after the inventories (a late insert). Any id (in the pool or not) is left
 *   alone while a signing attempt that took it (`signing_attempts.presignature_id`, read after the
 *   inventories) is unfinished and younger than `MAX_DEADLINE_MS` + 1 minute, or ended (started,
 *   when unfinished) less than `reconcileGraceMs` ago. At a signer, an id a SIGN is taking is
 *   neither listed nor deleted (reported `inUse`), and a deletion claims its ids before a SIGN can
 *   take them (the SIGN is then refused as for an unknown id, and signed cold).
 * - A set with a party that does not answer its inventory (offline, refusing) is skipped whole
 *   (`skipped`): "held by every party" cannot be decided. Sets with a device party are skipped: the
 *   device hub carries no inventory exchange yet (phones do store presignatures; see the report of
 *   issue #27 item 7).
 * Deleting is harmless for safety (it can only make a signature cold); the counts per set are
 * logged (never ids' contents) and kept in {@link PresignaturePool.lastReconciliation}.
 */
import { MAX_DEADLINE_MS } from '@custodian/signer';
import type { Db } from '../db/db.js';
import { signingParties } from '../transfers/pipeline.js';
import { transferKeyId } from '../transfers/service.js';
import type { SigningAttempt, SigningAttemptLog, SignParty } from './gateway.js';

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
}

export const DEFAULT_PRESIGNATURE_POOL_OPTIONS: PresignaturePoolOptions = {
  target: 4,
  batch: 4,
  deadlineMs: 120_000,
  retryMs: 30_000,
  scanMs: 5000,
  reconcileMs: 600_000,
  reconcileGraceMs: 900_000,
};

/** A signing attempt left unfinished protects its id this long after its start (no signer runs a ceremony longer). */
const SIGN_LIFETIME_MS = MAX_DEADLINE_MS + 60_000;

/**
 * Asks the parties of a signing set about their presignatures (implemented in services.ts over the
 * control client, for server signers).
 */
export interface PresignatureHolders {
  /**
   * The presignature ids `party` holds for `keyId` and the signing set `parties`, each with its age
   * on the party's clock, ms (`PresignatureInventory`).
   * @throws Error when the party cannot be asked or refuses
   */
  held(
    party: SignParty,
    keyId: string,
    parties: readonly SignParty[],
  ): Promise<readonly { id: string; ageMs: number }[]>;
  /**
   * Delete `ids` of `keyId` and the set `parties` at `party` (`DeletePresignatures`).
   * @returns how many it deleted, and the ids a SIGN is using there (kept)
   * @throws Error when the party cannot be asked or refuses
   */
  delete(
    party: SignParty,
    keyId: string,
    parties: readonly SignParty[],
    ids: readonly string[],
  ): Promise<{ deleted: number; inUse: readonly string[] }>;
}

/** What one reconciliation did for one (key, signing set). Counts of ids. */
export interface PresignatureSetReconciliation {
  keyId: string;
  /** {@link signingSetKey} of the set. */
  signingSet: string;
  /** Why the set was not reconciled (a party did not answer its inventory, a device party); absent when it was. */
  skipped?: string;
  /** Pool ids held by every party (kept). */
  common: number;
  /** Ids left alone as possibly in flight (see the module comment). */
  kept: number;
  /** Pool ids deleted from the pool (some party does not hold them). */
  droppedFromPool: number;
  /** Presignatures deleted, per party (`kind:id`); parties with none are absent. */
  deletedAtSigners: Record<string, number>;
  /** Ids a party did not delete because a SIGN was taking them there. */
  inUse: number;
}

/** One reconciliation pass (every master key's signing set). */
export interface PresignatureReconciliation {
  /** When the pass started. */
  at: Date;
  sets: PresignatureSetReconciliation[];
}

/** Runs one PRESIGN ceremony (dispatch.ts {@link presignCeremony} bound to the services). */
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
  #reconcileTimer: NodeJS.Timeout | undefined;
  #reconciling: Promise<unknown> = Promise.resolve();
  #stopped = false;
  /** The latest finished reconciliation (counts per set), for operators and tests. */
  lastReconciliation: PresignatureReconciliation | undefined;

  /**
   * @param holders asks the parties about their presignatures; absent: no reconciliation (every
   *   set is reported skipped)
   */
  constructor(
    private readonly db: Db,
    private readonly presign: PresignRunner,
    options: Partial<PresignaturePoolOptions> = {},
    private readonly log: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void = () => {},
    private readonly holders?: PresignatureHolders,
  ) {
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
   * Scan now and every `scanMs`; reconcile with the signers now and every `reconcileMs` (unless 0).
   * No-op when `target` is 0 (the pool is off: nothing is reconciled either).
   */
  start(): void {
    if (this.options.target === 0 || this.#timer) return;
    this.#stopped = false;
    this.#timer = setInterval(() => void this.scan().catch(() => {}), this.options.scanMs);
    this.#timer.unref();
    if (this.options.reconcileMs === 0) {
      void this.scan().catch(() => {});
      return;
    }
    const reconcile = () =>
      this.reconcile().catch((e: unknown) =>
        this.log('warn', 'presignature reconciliation failed', { err: e instanceof Error ? e.message : String(e) }),
      );
    this.#reconcileTimer = setInterval(() => void reconcile(), this.options.reconcileMs);
    this.#reconcileTimer.unref();
    // at start, the first refills wait for the first reconciliation (it drops pool ids lost at a
    // signer, so they refill to the true size; ids of their ceremonies are never taken for orphans)
    void reconcile().then(() => this.scan().catch(() => {}));
  }

  /** Stop scanning, refilling and reconciling; aborts the ceremonies in flight on every party and waits for them. */
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
    const keys = await this.db.query<{
      master_key_id: string;
      ceremony_id: string | null;
      parties: unknown;
      threshold: number;
    }>('SELECT master_key_id, ceremony_id, parties, threshold FROM master_keys ORDER BY created_at');
    const sets: PresignatureSetReconciliation[] = [];
    for (const k of keys) {
      if (this.#stopped) break; // stopping: the control client goes next
      const parties = signingParties(k.parties, k.threshold);
      if (parties.length === 0) continue;
      const r = await this.#reconcileSet(transferKeyId(k), parties, graceMs);
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

  async #reconcileSet(
    keyId: string,
    parties: readonly SignParty[],
    graceMs: number,
  ): Promise<PresignatureSetReconciliation> {
    const set = signingSetKey(parties);
    const report: PresignatureSetReconciliation = {
      keyId,
      signingSet: set,
      common: 0,
      kept: 0,
      droppedFromPool: 0,
      deletedAtSigners: {},
      inUse: 0,
    };
    const holders = this.holders;
    if (!holders) return { ...report, skipped: 'no presignature holders configured' };
    if (parties.some((p) => p.kind !== 'server'))
      return { ...report, skipped: 'a device party: devices are not asked for their presignatures' };
    // 1. the pool FIRST: every id read here was stored by every party before (a refill records
    //    ids only once every party reported them stored)
    const pool = new Set(
      (
        await this.db.query<{ presignature_id: string }>(
          'SELECT presignature_id FROM presignatures WHERE key_id = $1 AND signing_set = $2',
          [keyId, set],
        )
      ).map((r) => r.presignature_id),
    );
    // 2. every party's ids (none may be missing: "held by every party" needs them all)
    let lists: (readonly { id: string; ageMs: number }[])[];
    try {
      lists = await Promise.all(parties.map((p) => holders.held(p, keyId, parties)));
    } catch (e) {
      return { ...report, skipped: `inventory: ${e instanceof Error ? e.message : String(e)}` };
    }
    const held = new Map<string, { at: number[]; youngest: number }>();
    for (const [i, list] of lists.entries()) {
      for (const h of list) {
        const e = held.get(h.id) ?? { at: [], youngest: Number.POSITIVE_INFINITY };
        if (!e.at.includes(i)) e.at.push(i);
        e.youngest = Math.min(e.youngest, Number(h.ageMs));
        held.set(h.id, e);
      }
    }
    // 3. AFTER the inventories: ids a signing attempt took (begin commits before the SIGN starts),
    //    ids pooled since step 1, and whether a PRESIGN ceremony of the set may be running
    const now = Date.now();
    const ids = [...held.keys()];
    const busy = new Set<string>();
    const late = new Set<string>();
    if (ids.length > 0) {
      for (const r of await this.db.query<{ presignature_id: string }>(
        `SELECT presignature_id FROM signing_attempts WHERE presignature_id = ANY($1::text[])
           AND ((finished_at IS NULL AND started_at > $2) OR COALESCE(finished_at, started_at) > $3)`,
        [ids, new Date(now - SIGN_LIFETIME_MS), new Date(now - graceMs)],
      ))
        busy.add(r.presignature_id);
      for (const r of await this.db.query<{ presignature_id: string }>(
        'SELECT presignature_id FROM presignatures WHERE presignature_id = ANY($1::text[])',
        [ids],
      ))
        if (!pool.has(r.presignature_id)) late.add(r.presignature_id);
    }
    const leased =
      this.#inFlight.has(`${keyId}|${set}`) ||
      (
        await this.db.query(
          'SELECT 1 FROM presignature_refills WHERE key_id = $1 AND signing_set = $2 AND lease_until > $3',
          [keyId, set, new Date(now)],
        )
      ).length > 0;
    // 4. decide
    const drop: string[] = [];
    const orphans = new Map<string, number[]>(); // id → parties holding it
    for (const [id, e] of held) {
      const inPool = pool.has(id);
      if (inPool && e.at.length === parties.length) report.common++;
      else if (busy.has(id) || late.has(id)) report.kept++;
      else if (!inPool && (leased || e.youngest < graceMs)) report.kept++;
      else {
        if (inPool) drop.push(id);
        orphans.set(id, e.at);
      }
    }
    for (const id of pool) if (!held.has(id)) drop.push(id);
    // 5. the pool first (it then never hands out an id being deleted at a signer)
    if (drop.length > 0) {
      const gone = new Set(
        (
          await this.db.query<{ presignature_id: string }>(
            `DELETE FROM presignatures WHERE key_id = $1 AND signing_set = $2 AND presignature_id = ANY($3::text[])
             RETURNING presignature_id`,
            [keyId, set, drop],
          )
        ).map((r) => r.presignature_id),
      );
      report.droppedFromPool = gone.size;
      // a dropped id `begin` took meanwhile belongs to a SIGN now: not deleted at the signers
      for (const id of drop) if (!gone.has(id) && orphans.delete(id)) report.kept++;
    }
    // 6. the signers
    for (const [i, party] of parties.entries()) {
      const mine = [...orphans].filter(([, at]) => at.includes(i)).map(([id]) => id);
      if (mine.length === 0) continue;
      try {
        const r = await holders.delete(party, keyId, parties, mine);
        if (r.deleted > 0) report.deletedAtSigners[`${party.kind}:${party.id}`] = r.deleted;
        report.inUse += r.inUse.length;
      } catch (e) {
        this.log('warn', 'orphaned presignatures not deleted at a party', {
          keyId,
          set,
          party: `${party.kind}:${party.id}`,
          count: mine.length,
          err: e instanceof Error ? e.message : String(e),
        });
      }
    }
    return report;
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
