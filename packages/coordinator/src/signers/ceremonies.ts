/**
 * Master key ceremonies of the signers room (seed §1 item 4, §8): start the DKG among exactly the
 * selected server signers and approved devices, run it in the background under its deadline,
 * record its progress and outcome (and the master key's public record), abort running ceremonies
 * at shutdown and fail those left RUNNING by a replica that is gone.
 *
 * Replicas (issue #25): a ceremony runs in the process that started it, its row names that
 * replica (`owner_replica`) and holds its progress, so every replica's admin API (GET, SSE) reads
 * the same state. {@link CeremonyService.recoverCeremonies} fails only RUNNING ceremonies whose
 * owner is not a live replica (or NULL: written before replicas, or by a process without a
 * replica id); it runs at every start and periodically on one replica (coordinator.ts,
 * `scheduler:ceremony-recovery`), so a replica's death mid-ceremony ends it FAILED within about
 * `ttlMs` plus the period instead of RUNNING forever. It covers every kind in `ceremonies` (the
 * DKG here, and the key lifecycle's refresh / reshare / drill, keys/service.ts), and fails a
 * RUNNING key change whose RESHARE ceremony is no longer running. The DKG's own end (SUCCEEDED /
 * FAILED) is written only while its row is still RUNNING: one recovery ended stays ended.
 *
 * Over 400 lines: the DKG's start, run and end, and the recovery of every kind's ceremonies, share
 * the one `ceremonies` row and its rules (a split would separate the writers of one status).
 */
import { randomUUID } from 'node:crypto';
import type { AdminOptions } from '../admin/options.js';
import type { AuditLog } from '../audit/service.js';
import { CeremonyAbortedError, type CeremonyClient, type CeremonyParty, type CeremonyProgress } from '../ceremony.js';
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import { liveReplicaSql } from '../replicas/registry.js';
import type { BlameStore, BlameView, SigningCeremonyView } from '../signing/blame-store.js';
import { notFound, type Page, type PageRequest, pageOffset } from '../store.js';
import { type Clock, iso } from '../util.js';
import type { MasterKeyStore } from './store.js';

/** A ceremony record as the admin API returns it. */
export interface CeremonyView {
  readonly ceremony_id: string;
  readonly kind: string;
  readonly status: 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT';
  readonly threshold: number;
  readonly parties: unknown;
  readonly progress: unknown;
  readonly started_by: string;
  readonly started_at: string | null;
  readonly deadline: string | null;
  readonly finished_at: string | null;
  readonly error: string | null;
  /** Ids of the parties PROVEN to misbehave (verified blame evidence, issue #23); null: no blame. */
  readonly blamed: string[] | null;
  /** Peer ids of the parties that reported a blame the coordinator could not verify (to investigate). */
  readonly unverified_accusers: string[];
  /** `OK`, `ABORTED` (a party reported misbehaviour: see `blame`), `FAILED`, `DEADLINE_EXCEEDED`; null while RUNNING. */
  readonly outcome: 'OK' | 'ABORTED' | 'FAILED' | 'DEADLINE_EXCEEDED' | null;
  /** Every blame the parties reported, as the coordinator checked it (signing/blame-store.ts). */
  readonly blame: BlameView[];
  readonly transcript_hash: string | null;
  readonly master_key_id: string | null;
  /** Lifecycle ceremonies (issue #22): the public outcome (drill signatures and backup state, epoch); else null. */
  readonly result: unknown;
  /** RESHARE: the key change it runs; else null. */
  readonly key_change_id: string | null;
}

/** Dependencies of {@link CeremonyService}. */
export interface CeremonyComponents {
  readonly db: Db;
  readonly clock: Clock;
  readonly audit: AuditLog;
  readonly masterKeys: MasterKeyStore;
  /** Signer control channel; absent: ceremonies answer 503 SIGNERS_UNAVAILABLE. */
  readonly ceremonyClient: CeremonyClient | undefined;
  readonly options: Pick<AdminOptions, 'minMobileSigners' | 'dkgTimeoutMs'>;
  /** The checked blames of ceremonies (signing/blame-store.ts); absent: none recorded or shown. */
  readonly blames?: BlameStore | undefined;
  /**
   * This process as a replica (replicas/registry.ts): its id, recorded as `owner_replica` of the
   * ceremonies it runs, and the ttl (ms) after which a silent replica is dead. Absent: ceremonies
   * have no owner, and recovery fails every RUNNING ceremony (one process alone).
   */
  readonly replica?: CeremonyOwner | undefined;
  /** Where a DKG outcome that arrived after its ceremony was ended elsewhere is reported (default: nowhere). */
  readonly log?: ((level: 'warn', msg: string, fields?: Record<string, unknown>) => void) | undefined;
}

/** The replica that owns the ceremonies a process runs (see {@link CeremonyComponents.replica}). */
export interface CeremonyOwner {
  /** This replica's id (`coordinator_replicas.replica_id`). */
  readonly id: string;
  /** A replica silent for this long (ms) is dead. */
  readonly ttlMs: number;
}

/**
 * SQL condition (parameters `$me`, `$ttl` given as their placeholders) that the RUNNING ceremony
 * aliased `c` has no live owner: NULL, or a replica other than this one that is not live. PGlite
 * is one process: every other replica is dead there.
 */
export function ownerGoneSql(dialect: 'pglite' | 'postgres', me: string, ttl: string): string {
  const alive =
    dialect === 'pglite'
      ? `(${ttl}::int IS NULL AND false)`
      : `EXISTS (SELECT 1 FROM coordinator_replicas r WHERE r.replica_id = c.owner_replica AND ${liveReplicaSql(ttl)})`;
  return `(c.owner_replica IS NULL OR (c.owner_replica IS DISTINCT FROM ${me} AND NOT ${alive}))`;
}

/** Master key ceremonies. */
export class CeremonyService {
  private readonly running = new Map<string, AbortController>();
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly c: CeremonyComponents) {}

  /** One page of ceremonies, newest first. */
  async listCeremonies(p: PageRequest): Promise<Page<CeremonyView>> {
    const rows = await this.c.db.query<{ ceremony_id: string }>(
      'SELECT ceremony_id FROM ceremonies ORDER BY started_at DESC, ceremony_id LIMIT $1 OFFSET $2',
      [p.page_size, pageOffset(p)],
    );
    const [count] = await this.c.db.query<{ n: string }>('SELECT COUNT(*)::text AS n FROM ceremonies');
    const data = await Promise.all(rows.map((r) => this.getCeremony(r.ceremony_id)));
    return { data, page: p.page, page_size: p.page_size, total: Number(count?.n ?? 0) };
  }

  /** One ceremony's progress and outcome. @throws ApiError RESOURCE_NOT_FOUND */
  async getCeremony(id: string): Promise<CeremonyView> {
    const r = (
      await this.c.db.query<
        Omit<CeremonyView, 'started_at' | 'deadline' | 'finished_at' | 'outcome' | 'blame' | 'unverified_accusers'> & {
          started_at: Date;
          deadline: Date;
          finished_at: Date | null;
        }
      >(
        `SELECT ceremony_id, kind, status, threshold, parties, progress, started_by, started_at, deadline, finished_at,
                error, blamed, transcript_hash, master_key_id, result, key_change_id FROM ceremonies WHERE ceremony_id = $1`,
        [id],
      )
    )[0];
    if (r === undefined) throw notFound('ceremony');
    const blame = (await this.c.blames?.list(r.ceremony_id)) ?? [];
    const outcome =
      r.status === 'SUCCEEDED'
        ? 'OK'
        : r.status === 'TIMED_OUT'
          ? 'DEADLINE_EXCEEDED'
          : r.status === 'FAILED'
            ? blame.length > 0
              ? 'ABORTED'
              : 'FAILED'
            : null;
    return {
      ...r,
      started_at: iso(r.started_at),
      deadline: iso(r.deadline),
      finished_at: iso(r.finished_at),
      unverified_accusers: [...new Set(blame.filter((b) => !b.verified).map((b) => b.accuser))],
      outcome,
      blame,
    };
  }

  /**
   * One SIGN ceremony of the signing gateway (a transfer's signing attempt) with its checked blames.
   * @param id 48 hex digits
   * @throws ApiError RESOURCE_NOT_FOUND (also when no signing gateway records attempts here)
   */
  async getSigningCeremony(id: string): Promise<SigningCeremonyView> {
    if (this.c.blames === undefined) throw notFound('signing ceremony');
    return this.c.blames.signingCeremony(id);
  }

  /**
   * Start the master key ceremony (k of n) among exactly the selected signers (seed §1 item 4):
   * server signers by `signer_id` and APPROVED devices by `device_id`, at least
   * `minMobileSigners` devices, 2 ≤ k ≤ n. Runs in the background with the 5-minute deadline;
   * poll {@link getCeremony} for progress and outcome. One master key per instance.
   * @throws ApiError SIGNERS_UNAVAILABLE (503) without a ceremony client; VALIDATION_FAILED (422);
   *   CONFLICT (409) when a master key exists or a ceremony is running
   */
  async startDkg(actor: string, input: { threshold: number; signers: { kind: 'server' | 'device'; id: string }[] }) {
    const n = input.signers.length;
    if (input.threshold < 2 || input.threshold > n) {
      throw new ApiError('VALIDATION_FAILED', `threshold must be in [2, n] (n = ${n})`, [
        { field: 'body.threshold', message: `must be between 2 and the number of signers (${n})` },
      ]);
    }
    const ids = input.signers.map((s) => `${s.kind}:${s.id.toLowerCase()}`);
    if (new Set(ids).size !== n) {
      throw new ApiError('VALIDATION_FAILED', 'a signer is selected twice', [
        { field: 'body.signers', message: 'duplicate signer' },
      ]);
    }
    const client = this.c.ceremonyClient;
    if (client === undefined) {
      throw new ApiError('SIGNERS_UNAVAILABLE', 'this coordinator has no signer control channel configured');
    }
    const now = this.c.clock();
    const deadline = new Date(now.getTime() + this.c.options.dkgTimeoutMs);
    const ceremonyId = randomUUID();
    const parties = await this.c.db.tx(async (q) => {
      await q.query('LOCK TABLE ceremonies IN EXCLUSIVE MODE');
      if ((await q.query('SELECT 1 FROM master_keys')).length > 0) {
        throw new ApiError('CONFLICT', 'this instance already has a master key');
      }
      if ((await q.query(`SELECT 1 FROM ceremonies WHERE kind = 'dkg' AND status = 'RUNNING'`)).length > 0) {
        throw new ApiError('CONFLICT', 'a master key ceremony is already running');
      }
      const parties: CeremonyParty[] = [];
      for (const [i, s] of input.signers.entries()) {
        const field = `body.signers[${i}].id`;
        if (s.kind === 'server') {
          const r = (
            await q.query<{ peer_id: string; address: string }>(
              'SELECT peer_id, address FROM server_signers WHERE signer_id = $1 AND removed_at IS NULL',
              [s.id],
            )
          )[0];
          if (r === undefined)
            throw new ApiError('VALIDATION_FAILED', `unknown server signer ${s.id}`, [
              { field, message: 'unknown server signer' },
            ]);
          parties.push({ kind: 'server', id: s.id.toLowerCase(), peer: r.peer_id, address: r.address });
        } else {
          const r = (
            await q.query<{ fingerprint: string }>(
              `SELECT fingerprint FROM devices WHERE device_id = $1 AND status = 'APPROVED'`,
              [s.id],
            )
          )[0];
          if (r === undefined)
            throw new ApiError('VALIDATION_FAILED', `device ${s.id} is not an approved device`, [
              { field, message: 'not an approved device' },
            ]);
          parties.push({ kind: 'device', id: s.id.toLowerCase(), peer: r.fingerprint, address: null });
        }
      }
      const devices = parties.filter((p) => p.kind === 'device').length;
      if (devices < this.c.options.minMobileSigners) {
        throw new ApiError(
          'VALIDATION_FAILED',
          `at least ${this.c.options.minMobileSigners} mobile signers must take part`,
          [{ field: 'body.signers', message: `select at least ${this.c.options.minMobileSigners} approved devices` }],
        );
      }
      const progress: CeremonyProgress = { phase: 'CONNECTING', parties_ready: 0, parties_total: n };
      await q.query(
        `INSERT INTO ceremonies (ceremony_id, kind, status, threshold, parties, progress, started_by, started_at, deadline,
           owner_replica)
         VALUES ($1,'dkg','RUNNING',$2,$3::jsonb,$4::jsonb,$5,$6,$7,$8)`,
        [
          ceremonyId,
          input.threshold,
          JSON.stringify(parties),
          JSON.stringify(progress),
          actor,
          now,
          deadline,
          this.c.replica?.id ?? null,
        ],
      );
      await this.c.audit.record(q, actor, 'master_key.ceremony_started', 'ceremony', ceremonyId, {
        threshold: input.threshold,
        n,
      });
      return parties;
    });
    this.runDkg(client, actor, ceremonyId, input.threshold, parties, deadline);
    return this.getCeremony(ceremonyId);
  }

  private runDkg(
    client: CeremonyClient,
    actor: string,
    id: string,
    threshold: number,
    parties: CeremonyParty[],
    deadline: Date,
  ) {
    const ac = new AbortController();
    this.running.set(id, ac);
    let deadlineHit = false;
    const timer = setTimeout(
      () => {
        deadlineHit = true;
        ac.abort(new Error('ceremony deadline reached'));
      },
      Math.max(0, deadline.getTime() - this.c.clock().getTime()),
    );
    let progressChain = Promise.resolve();
    const onProgress = (p: CeremonyProgress) => {
      if (ac.signal.aborted) return;
      progressChain = progressChain
        .then(() =>
          this.c.db.query(`UPDATE ceremonies SET progress = $2::jsonb WHERE ceremony_id = $1 AND status = 'RUNNING'`, [
            id,
            JSON.stringify(p),
          ]),
        )
        .then(
          () => undefined,
          () => undefined,
        );
    };
    const finish = async (fn: (q: Queryable) => Promise<void>) => {
      clearTimeout(timer);
      this.running.delete(id);
      await progressChain;
      await this.c.db.tx(fn);
    };
    const settle = async () => {
      try {
        const out = await Promise.race([
          client.runDkg({ ceremonyId: id, threshold, parties, deadline, signal: ac.signal, onProgress }),
          new Promise<never>((_, reject) =>
            ac.signal.addEventListener('abort', () => reject(ac.signal.reason), { once: true }),
          ),
        ]);
        await finish(async (q) => {
          // the row is ours to end only while RUNNING: recovery may have failed it meanwhile (this
          // replica looked dead) — it stays as recovery left it
          const row = (
            await q.query<{ status: string }>('SELECT status FROM ceremonies WHERE ceremony_id = $1 FOR UPDATE', [id])
          )[0];
          const late = row?.status !== 'RUNNING';
          // the signers hold shares of this key now: its public record is kept even then (it is
          // the instance's master key unless another ceremony produced one meanwhile — then this
          // one is not recorded, and its public keys are logged instead)
          if (late && (await q.query('SELECT 1 FROM master_keys LIMIT 1')).length > 0) {
            this.c.log?.(
              'warn',
              'DKG finished after its ceremony was ended and another master key exists: not recorded',
              {
                ceremony_id: id,
                ceremony_status: row?.status ?? null,
                secp256k1_public_key: Buffer.from(out.secp256k1.publicKey).toString('hex'),
                ed25519_public_key: Buffer.from(out.ed25519.publicKey).toString('hex'),
              },
            );
            return;
          }
          const mk = await this.c.masterKeys.insertMasterKey(
            {
              ceremonyId: id,
              threshold,
              parties,
              secp256k1: out.secp256k1,
              ed25519: out.ed25519,
              ...(out.taproot ? { taproot: out.taproot } : {}),
            },
            q,
          );
          if (late)
            this.c.log?.(
              'warn',
              'DKG finished after its ceremony was ended: master key recorded, ceremony left as is',
              {
                ceremony_id: id,
                ceremony_status: row?.status ?? null,
                master_key_id: mk.master_key_id,
              },
            );
          else
            await q.query(
              `UPDATE ceremonies SET status = 'SUCCEEDED', finished_at = $2, transcript_hash = $3, master_key_id = $4
               WHERE ceremony_id = $1 AND status = 'RUNNING'`,
              [id, this.c.clock(), out.transcriptHash, mk.master_key_id],
            );
          await this.c.audit.record(q, actor, 'master_key.created', 'master_key', mk.master_key_id, {
            ceremony_id: id,
            ...(late ? { ceremony_status: row?.status ?? null } : {}),
          });
        });
      } catch (e) {
        const timedOut = deadlineHit;
        const blamed = e instanceof CeremonyAbortedError ? e.culprits : null;
        const message = timedOut
          ? `the ceremony did not complete within ${Math.round(this.c.options.dkgTimeoutMs / 1000)} s`
          : e instanceof Error
            ? e.message.slice(0, 500)
            : 'failed';
        if (!ac.signal.aborted) ac.abort(e);
        await finish(async (q) => {
          const ended = await q.query(
            `UPDATE ceremonies SET status = $2, finished_at = $3, error = $4, blamed = $5::jsonb
             WHERE ceremony_id = $1 AND status = 'RUNNING' RETURNING 1`,
            [id, timedOut ? 'TIMED_OUT' : 'FAILED', this.c.clock(), message, JSON.stringify(blamed)],
          );
          if (ended.length === 0) {
            // recovery ended it meanwhile (this replica looked dead): left as recovery wrote it
            this.c.log?.('warn', 'DKG failed after its ceremony was ended elsewhere: row left as is', {
              ceremony_id: id,
              err: message,
            });
            return;
          }
          if (e instanceof CeremonyAbortedError) await this.c.blames?.record(q, id, 'dkg', e.blames);
          await this.c.audit.record(
            q,
            actor,
            timedOut ? 'master_key.ceremony_timed_out' : 'master_key.ceremony_failed',
            'ceremony',
            id,
            {
              blamed,
            },
          );
        }).catch(() => {});
      }
    };
    const p = settle().catch(() => {});
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Abort running ceremonies and wait for their records to be written (shutdown). */
  async shutdown(): Promise<void> {
    for (const ac of this.running.values()) ac.abort(new Error('coordinator shutting down'));
    await Promise.allSettled([...this.pending]);
  }

  /**
   * Fail the RUNNING ceremonies (every kind) whose owner is gone (see the module comment), and the
   * RUNNING key changes whose RESHARE ceremony is not running any more. Idempotent; safe on
   * several replicas at once (each row is moved by one statement).
   * @returns the ids of the ceremonies failed now
   */
  async recoverCeremonies(): Promise<string[]> {
    const me = this.c.replica?.id ?? null;
    const ttl = this.c.replica?.ttlMs ?? 0;
    const now = this.c.clock();
    const failed = await this.c.db.tx(async (q) => {
      const rows = await q.query<{ ceremony_id: string; kind: string; owner_replica: string | null }>(
        `UPDATE ceremonies c SET status = 'FAILED', finished_at = $1,
           error = CASE WHEN c.owner_replica IS NULL THEN 'the coordinator restarted during the ceremony'
                   ELSE 'the coordinator replica running the ceremony stopped or stopped answering (replica ' || c.owner_replica || ')' END
         WHERE c.status = 'RUNNING' AND ${ownerGoneSql(this.c.db.dialect, '$2', '$3')}
         RETURNING c.ceremony_id::text AS ceremony_id, c.kind, c.owner_replica`,
        [now, me, ttl],
      );
      await q.query(
        `UPDATE key_changes k SET status = 'FAILED', updated_at = $1,
           error = COALESCE((SELECT c.error FROM ceremonies c WHERE c.ceremony_id = k.ceremony_id AND c.status <> 'SUCCEEDED'),
                            'the coordinator restarted during the reshare')
         WHERE k.status = 'RUNNING'
           AND NOT EXISTS (SELECT 1 FROM ceremonies c WHERE c.ceremony_id = k.ceremony_id AND c.status = 'RUNNING')`,
        [now],
      );
      for (const r of rows)
        await this.c.audit.record(q, null, 'master_key.ceremony_failed', 'ceremony', r.ceremony_id, {
          kind: r.kind,
          reason: 'owner_gone',
        });
      return rows;
    });
    return failed.map((r) => r.ceremony_id);
  }
}
