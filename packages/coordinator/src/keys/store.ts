/**
 * The keys room's data (issue #22): key changes (`key_changes`: the Admin-signed document, its
 * digest, the new party records, status), the lifecycle ceremonies' rows in `ceremonies` (kinds
 * `refresh`, `reshare`, `reshare_commit`, `drill`) and the master key fields a committed change
 * updates (`parties`, `threshold`, `epoch`, `refreshed_at`).
 */
import type { SignedKeyChange } from '@custodian/wire';
import type { CeremonyParty, CeremonyProgress } from '../ceremony.js';
import type { Db, Queryable } from '../db/db.js';
import { notFound, type Page, type PageRequest, pageOffset } from '../store.js';
import { iso } from '../util.js';

/** Status of a key change (see keys/service.ts for the transitions). */
export type KeyChangeStatus = 'AWAITING_SIGNATURE' | 'RUNNING' | 'COMMITTING' | 'SUCCEEDED' | 'FAILED';

/** A key change as the admin API returns it. */
export interface KeyChangeView {
  readonly change_id: string;
  readonly master_key_id: string;
  readonly reason: 'replace-signer' | 'reshare';
  readonly status: KeyChangeStatus;
  /** The KeyChangeDocument (packages/wire key-change.ts) the Admin signs. */
  readonly document: unknown;
  /** Hex of keyChangeDigest(document), 32 bytes. */
  readonly digest: string;
  readonly ceremony_id: string | null;
  readonly error: string | null;
  readonly blamed: string[] | null;
  /**
   * Parties (`kind:id`) that have not acknowledged the RESHARE_COMMIT yet (retried in the
   * background); empty before COMMITTING and once every party committed.
   */
  readonly uncommitted: string[];
  readonly created_by: string | null;
  readonly created_at: string;
  readonly updated_at: string;
}

/** A master key as the keys room reads it. */
export interface KeyRecord {
  master_key_id: string;
  ceremony_id: string | null;
  threshold: number;
  parties: CeremonyParty[];
  secp256k1_public_key: string;
  secp256k1_chain_code: string;
  ed25519_public_key: string;
  ed25519_chain_code: string;
  epoch: number;
  refreshed_at: Date | null;
  created_at: Date;
}

/** A key change row with what the runs need. */
export interface KeyChangeRow {
  change_id: string;
  master_key_id: string;
  status: KeyChangeStatus;
  document: string;
  digest: string;
  new_threshold: number;
  new_parties: CeremonyParty[];
  signed: string | null;
  ceremony_id: string | null;
  /** Each new party's 64-byte pending attestation (hex), in `document.new_parties` order; null before COMMITTING. */
  pending_attestations: string[] | null;
}

const KEY_COLUMNS = `master_key_id::text AS master_key_id, ceremony_id::text AS ceremony_id, threshold, parties,
  secp256k1_public_key, secp256k1_chain_code, ed25519_public_key, ed25519_chain_code, epoch, refreshed_at, created_at`;

/** Key records and key changes. */
export class KeyStore {
  constructor(private readonly db: Db) {}

  /** One master key (`FOR UPDATE` inside a transaction when `lock`). @throws ApiError RESOURCE_NOT_FOUND */
  async key(id: string, q: Queryable = this.db, lock = false): Promise<KeyRecord> {
    const r = (
      await q.query<KeyRecord>(
        `SELECT ${KEY_COLUMNS} FROM master_keys WHERE master_key_id = $1${lock ? ' FOR UPDATE' : ''}`,
        [id],
      )
    )[0];
    if (r === undefined) throw notFound('master key');
    return { ...r, parties: Array.isArray(r.parties) ? r.parties : [] };
  }

  /** Every master key, oldest first. */
  async keys(): Promise<KeyRecord[]> {
    const rows = await this.db.query<KeyRecord>(
      `SELECT ${KEY_COLUMNS} FROM master_keys ORDER BY created_at, master_key_id`,
    );
    return rows.map((r) => ({ ...r, parties: Array.isArray(r.parties) ? r.parties : [] }));
  }

  /** Whether a lifecycle ceremony or a key change is running or committing for the key. */
  async busy(q: Queryable, masterKeyId: string): Promise<boolean> {
    const c = await q.query(
      `SELECT 1 FROM ceremonies WHERE master_key_id = $1 AND status = 'RUNNING'
         AND kind IN ('refresh','reshare','reshare_commit','drill')
       UNION ALL SELECT 1 FROM key_changes WHERE master_key_id = $1 AND status IN ('RUNNING','COMMITTING')`,
      [masterKeyId],
    );
    return c.length > 0;
  }

  /** Insert a lifecycle ceremony row (status RUNNING). */
  async insertCeremony(
    q: Queryable,
    row: {
      id: string;
      kind: 'refresh' | 'reshare' | 'drill';
      threshold: number;
      parties: readonly CeremonyParty[];
      actor: string | null;
      now: Date;
      deadline: Date;
      masterKeyId: string;
      keyChangeId?: string;
      /** The replica running it (`owner_replica`, replicas/registry.ts); null: none named. */
      owner?: string | null;
    },
  ): Promise<void> {
    const progress: CeremonyProgress = { phase: 'CONNECTING', parties_ready: 0, parties_total: row.parties.length };
    await q.query(
      `INSERT INTO ceremonies (ceremony_id, kind, status, threshold, parties, progress, started_by, started_at, deadline,
         master_key_id, key_change_id, owner_replica)
       VALUES ($1,$2,'RUNNING',$3,$4::jsonb,$5::jsonb,$6,$7,$8,$9,$10,$11)`,
      [
        row.id,
        row.kind,
        row.threshold,
        JSON.stringify(row.parties),
        JSON.stringify(progress),
        row.actor,
        row.now,
        row.deadline,
        row.masterKeyId,
        row.keyChangeId ?? null,
        row.owner ?? null,
      ],
    );
  }

  /** Set a ceremony's outcome. */
  async finishCeremony(
    q: Queryable,
    id: string,
    out: {
      status: 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT';
      at: Date;
      error?: string | null;
      blamed?: string[] | null;
      result?: unknown;
    },
  ): Promise<void> {
    await q.query(
      `UPDATE ceremonies SET status = $2, finished_at = $3, error = $4, blamed = $5::jsonb, result = $6::jsonb
        WHERE ceremony_id = $1 AND status = 'RUNNING'`,
      [
        id,
        out.status,
        out.at,
        out.error ?? null,
        JSON.stringify(out.blamed ?? null),
        JSON.stringify(out.result ?? null),
      ],
    );
  }

  async progress(id: string, p: CeremonyProgress): Promise<void> {
    await this.db.query(`UPDATE ceremonies SET progress = $2::jsonb WHERE ceremony_id = $1 AND status = 'RUNNING'`, [
      id,
      JSON.stringify(p),
    ]);
  }

  /** Insert a key change (AWAITING_SIGNATURE). */
  async insertChange(
    q: Queryable,
    c: {
      id: string;
      masterKeyId: string;
      reason: string;
      document: string;
      digest: string;
      threshold: number;
      parties: readonly CeremonyParty[];
      actor: string;
      now: Date;
    },
  ): Promise<void> {
    await q.query(
      `INSERT INTO key_changes (change_id, master_key_id, reason, status, document, digest, new_threshold, new_parties,
         created_by, created_at, updated_at)
       VALUES ($1,$2,$3,'AWAITING_SIGNATURE',$4,$5,$6,$7::jsonb,$8,$9,$9)`,
      [c.id, c.masterKeyId, c.reason, c.document, c.digest, c.threshold, JSON.stringify(c.parties), c.actor, c.now],
    );
  }

  /** A key change row (`FOR UPDATE` when `lock`). @throws ApiError RESOURCE_NOT_FOUND */
  async change(q: Queryable, masterKeyId: string, changeId: string, lock = false): Promise<KeyChangeRow> {
    const r = (
      await q.query<KeyChangeRow>(
        `SELECT change_id::text AS change_id, master_key_id::text AS master_key_id, status, document, digest, new_threshold,
                new_parties, signed, ceremony_id::text AS ceremony_id, pending_attestations
           FROM key_changes WHERE change_id = $1 AND master_key_id = $2${lock ? ' FOR UPDATE' : ''}`,
        [changeId, masterKeyId],
      )
    )[0];
    if (r === undefined) throw notFound('key change');
    return r;
  }

  /**
   * Key changes whose commit is not acknowledged by every party: COMMITTING, or SUCCEEDED with
   * parties still `uncommitted` (left by this or a previous process).
   */
  async committing(): Promise<KeyChangeRow[]> {
    return this.db.query<KeyChangeRow>(
      `SELECT change_id::text AS change_id, master_key_id::text AS master_key_id, status, document, digest, new_threshold,
              new_parties, signed, ceremony_id::text AS ceremony_id, pending_attestations
         FROM key_changes
        WHERE status = 'COMMITTING' OR (status = 'SUCCEEDED' AND jsonb_array_length(COALESCE(uncommitted, '[]'::jsonb)) > 0)
        ORDER BY updated_at`,
    );
  }

  /** Move a key change. */
  async setChange(
    q: Queryable,
    id: string,
    set: {
      status: KeyChangeStatus;
      at: Date;
      signed?: SignedKeyChange;
      ceremonyId?: string;
      error?: string;
      blamed?: string[] | null;
      /** Hex, one per new party in `document.new_parties` order. */
      pendingAttestations?: string[];
      /** Parties (`kind:id`) not yet committed. */
      uncommitted?: string[];
    },
  ): Promise<void> {
    await q.query(
      `UPDATE key_changes SET status = $2, updated_at = $3, signed = COALESCE($4, signed),
         ceremony_id = COALESCE($5, ceremony_id), error = COALESCE($6, error), blamed = COALESCE($7::jsonb, blamed),
         pending_attestations = COALESCE($8::jsonb, pending_attestations), uncommitted = COALESCE($9::jsonb, uncommitted)
       WHERE change_id = $1`,
      [
        id,
        set.status,
        set.at,
        set.signed ? JSON.stringify(set.signed) : null,
        set.ceremonyId ?? null,
        set.error ?? null,
        set.blamed ? JSON.stringify(set.blamed) : null,
        set.pendingAttestations ? JSON.stringify(set.pendingAttestations) : null,
        set.uncommitted ? JSON.stringify(set.uncommitted) : null,
      ],
    );
  }

  /** One page of the key changes of a master key, newest first (views). */
  async listChanges(masterKeyId: string, p: PageRequest): Promise<Page<KeyChangeView>> {
    const rows = await this.db.query<{ change_id: string }>(
      `SELECT change_id::text AS change_id FROM key_changes WHERE master_key_id = $1
       ORDER BY created_at DESC, change_id LIMIT $2 OFFSET $3`,
      [masterKeyId, p.page_size, pageOffset(p)],
    );
    const [count] = await this.db.query<{ n: string }>(
      'SELECT COUNT(*)::text AS n FROM key_changes WHERE master_key_id = $1',
      [masterKeyId],
    );
    const data = await Promise.all(rows.map((r) => this.view(masterKeyId, r.change_id)));
    return { data, page: p.page, page_size: p.page_size, total: Number(count?.n ?? 0) };
  }

  /** One key change's view. @throws ApiError RESOURCE_NOT_FOUND */
  async view(masterKeyId: string, changeId: string): Promise<KeyChangeView> {
    const r = (
      await this.db.query<
        Omit<KeyChangeView, 'document' | 'created_at' | 'updated_at'> & {
          document: string;
          created_at: Date;
          updated_at: Date;
        }
      >(
        `SELECT change_id::text AS change_id, master_key_id::text AS master_key_id, reason, status, document, digest,
                ceremony_id::text AS ceremony_id, error, blamed, COALESCE(uncommitted, '[]'::jsonb) AS uncommitted,
                created_by::text AS created_by, created_at, updated_at
           FROM key_changes WHERE change_id = $1 AND master_key_id = $2`,
        [changeId, masterKeyId],
      )
    )[0];
    if (r === undefined) throw notFound('key change');
    return { ...r, document: JSON.parse(r.document), created_at: iso(r.created_at)!, updated_at: iso(r.updated_at)! };
  }
}
