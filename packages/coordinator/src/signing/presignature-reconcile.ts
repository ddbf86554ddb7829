/**
 * Reconciliation of the presignature pool (presignature-pool.ts) with the signers (issue #27
 * [faults] item 7; `PresignaturePool.reconcile`), at start (before the first scan) and every
 * `reconcileMs` (default 10 minutes). A crash mid-PRESIGN (or a signer's restart, which discards
 * its presignatures) leaves orphans: ids only some parties of the set hold (useless: a signature needs every party to hold the id) and pool ids some party no longer holds
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
import { MAX_DEADLINE_MS } from '@custodian/wire';
import type { Db } from '../db/db.js';
import type { SignParty } from './gateway.js';

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

/** Canonical text of a signing set: `kind:id` (lower case), sorted, joined by `,`. */
export function signingSetKey(parties: readonly SignParty[]): string {
  return parties
    .map((p) => `${p.kind}:${p.id.toLowerCase()}`)
    .sort()
    .join(',');
}

/** What {@link reconcileSet} reads and asks. */
export interface ReconcileContext {
  db: Db;
  /** Asks the parties; absent: every set is reported skipped. */
  holders: PresignatureHolders | undefined;
  /** Whether this process is refilling the set now (its ids may be in flight). */
  refilling(keyId: string, signingSet: string): boolean;
  log(level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>): void;
}

/** Reconcile one (key, signing set) with its parties (see the module comment). */
export async function reconcileSet(
  c: ReconcileContext,
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
  const holders = c.holders;
  if (!holders) return { ...report, skipped: 'no presignature holders configured' };
  if (parties.some((p) => p.kind !== 'server'))
    return { ...report, skipped: 'a device party: devices are not asked for their presignatures' };
  // 1. the pool FIRST: every id read here was stored by every party before (a refill records
  //    ids only once every party reported them stored)
  const pool = new Set(
    (
      await c.db.query<{ presignature_id: string }>(
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
    for (const r of await c.db.query<{ presignature_id: string }>(
      `SELECT presignature_id FROM signing_attempts WHERE presignature_id = ANY($1::text[])
         AND ((finished_at IS NULL AND started_at > $2) OR COALESCE(finished_at, started_at) > $3)`,
      [ids, new Date(now - SIGN_LIFETIME_MS), new Date(now - graceMs)],
    ))
      busy.add(r.presignature_id);
    for (const r of await c.db.query<{ presignature_id: string }>(
      'SELECT presignature_id FROM presignatures WHERE presignature_id = ANY($1::text[])',
      [ids],
    ))
      if (!pool.has(r.presignature_id)) late.add(r.presignature_id);
  }
  const leased =
    c.refilling(keyId, set) ||
    (
      await c.db.query(
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
        await c.db.query<{ presignature_id: string }>(
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
      c.log('warn', 'orphaned presignatures not deleted at a party', {
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
