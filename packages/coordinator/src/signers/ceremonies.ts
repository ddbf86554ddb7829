/**
 * Master key ceremonies of the signers room (seed §1 item 4, §8): start the DKG among exactly the
 * selected server signers and approved devices, run it in the background under its deadline,
 * record its progress and outcome (and the master key's public record), abort running ceremonies
 * at shutdown and fail those a previous process left RUNNING.
 */
import { randomUUID } from 'node:crypto';
import type { AdminOptions } from '../admin/options.js';
import type { AuditLog } from '../audit/service.js';
import { CeremonyAbortedError, type CeremonyClient, type CeremonyParty, type CeremonyProgress } from '../ceremony.js';
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
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
        `INSERT INTO ceremonies (ceremony_id, kind, status, threshold, parties, progress, started_by, started_at, deadline)
         VALUES ($1,'dkg','RUNNING',$2,$3::jsonb,$4::jsonb,$5,$6,$7)`,
        [ceremonyId, input.threshold, JSON.stringify(parties), JSON.stringify(progress), actor, now, deadline],
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
          await q.query(
            `UPDATE ceremonies SET status = 'SUCCEEDED', finished_at = $2, transcript_hash = $3, master_key_id = $4 WHERE ceremony_id = $1`,
            [id, this.c.clock(), out.transcriptHash, mk.master_key_id],
          );
          await this.c.audit.record(q, actor, 'master_key.created', 'master_key', mk.master_key_id, {
            ceremony_id: id,
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
          await q.query(
            `UPDATE ceremonies SET status = $2, finished_at = $3, error = $4, blamed = $5::jsonb WHERE ceremony_id = $1`,
            [id, timedOut ? 'TIMED_OUT' : 'FAILED', this.c.clock(), message, JSON.stringify(blamed)],
          );
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

  /** Mark ceremonies left RUNNING by a previous process as FAILED (called at start). */
  async recoverCeremonies(): Promise<void> {
    await this.c.db.query(
      `UPDATE ceremonies SET status = 'FAILED', finished_at = $1, error = 'the coordinator restarted during the ceremony'
       WHERE status = 'RUNNING'`,
      [this.c.clock()],
    );
  }
}
