/**
 * The keys room (issue #22): key lifecycle operations on a master key, each a ceremony run in the
 * background under the 5-minute deadline with its progress in `ceremonies` (as the master key
 * ceremony, signers/ceremonies.ts):
 *
 * - refresh: REFRESH among the key's parties; every party OK with the key's public keys → epoch
 *   + 1, `REFRESH_KEY_SHARES`, the key's pooled presignatures dropped (the pool refills).
 * - key change (replace-signer, reshare): the coordinator builds a KeyChangeDocument
 *   (packages/wire key-change.ts) → an Admin's APPROVED device signs its digest → RESHARE among
 *   the reachable old parties (≥ t) ∪ the new set. When EVERY party answered OK with the key's
 *   public keys and a test signature per key verifies (checked here, keys/verify.ts), ONE
 *   transaction moves the change to COMMITTING and the master key to the new parties and
 *   threshold (everything that reads `master_keys.parties` follows: signing sets, approver
 *   devices). Every new party's `pendingAttestation` (verified here; one missing or wrong → FAILED
 *   naming it) is stored with the change and sent in every RESHARE_COMMIT, which goes to every
 *   party of the session, retried with backoff — also at the next start — → SUCCEEDED once t′ new
 *   parties and every leaving party answered OK; the rest are listed `uncommitted` and retried in
 *   the background without holding the key busy. Any failure before COMMITTING: FAILED with the
 *   culprits, the old set untouched.
 * - drill: DRILL among t reachable parties; the coordinator verifies the signatures itself and
 *   reads each server signer's epoch and backup state (control `status`).
 * - scheduled refresh (`keys.refreshIntervalHours`): a timer refreshes each key whose last refresh
 *   (or creation) is older than the interval, one at a time (none while any lifecycle ceremony
 *   runs, on any replica), skipping busy keys. It is {@link KeyService.scheduler}, a component of
 *   its own: replicas run it under the singleton lease `scheduler:keys` (coordinator.ts).
 *
 * Replicas (issue #25): a ceremony runs on the replica that started it, named in its row
 * (`owner_replica`); the commit loop of a reshare runs on the owner of its RESHARE ceremony, and
 * {@link KeyService.resumeCommits} (at start and with every ceremony recovery) takes over, one
 * replica per change, the loops of owners that are gone. A RUNNING ceremony or key change of a
 * dead replica is failed by the ceremony recovery (signers/ceremonies.ts).
 *
 * Over 400 lines: the three operations share the background runner, the party resolution and the
 * commit loop; split they would pass most of this class's state around (the stateless helpers are
 * in outcome.ts).
 */
import { randomUUID } from 'node:crypto';
import {
  CeremonyKind,
  deviceVerify,
  type KeyChangeDocument,
  keyChangeDigest,
  Outcome,
  type SignedKeyChange,
  testSignatureDigest,
} from '@custodian/wire';
import { bytesToHex, hexToBytes } from '@noble/curves/utils.js';
import type { AuditLog } from '../audit/service.js';
import type { CeremonyParty, CeremonyProgress } from '../ceremony.js';
import type { Db, Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import type { Startable } from '../lifecycle.js';
import { type CeremonyOwner, type CeremonyService, type CeremonyView, ownerGoneSql } from '../signers/ceremonies.js';
import { transferKeyId } from '../signers/store.js';
import type { BlameStore } from '../signing/blame-store.js';
import type { KeyCeremonyPort } from '../signing/key-ops.js';
import { dropKeyPresignatures } from '../signing/presignature-pool.js';
import type { SignParty } from '../signing/sign-results.js';
import type { Clock } from '../util.js';
import { emitInstanceEvent } from '../webhooks/outbox.js';
import {
  accepted,
  bumpEpoch,
  busy,
  CulpritError,
  checkRecord,
  compressed,
  invalid,
  knownKeys,
  pendingAttestations,
  sleep,
} from './outcome.js';
import { type KeyChangeRow, type KeyChangeView, type KeyRecord, KeyStore } from './store.js';
import { checkTestSignatures, type KeyEntry, keyEntries, sameKeys } from './verify.js';

export type { KeyChangeView } from './store.js';

/** Options of the keys room. */
export interface KeyServiceOptions {
  /** Approved devices every party set needs (seed §8: 2). */
  readonly minMobileSigners: number;
  /** Deadline of each ceremony, ms (5 minutes). */
  readonly dkgTimeoutMs: number;
  /** Scheduled refresh interval, hours; 0 / absent: off. */
  readonly refreshIntervalHours?: number;
  /** How often the schedule is checked, ms (default 60 000). */
  readonly scheduleTickMs?: number;
  /** Backoff of RESHARE_COMMIT retries: first delay and cap, ms (default 1000 / 60 000). */
  readonly commitRetry?: { initialMs: number; maxMs: number };
}

/** Dependencies of {@link KeyService}. */
export interface KeyServiceComponents {
  readonly db: Db;
  readonly clock: Clock;
  readonly audit: AuditLog;
  /** Ceremony views (signers room). */
  readonly ceremonies: Pick<CeremonyService, 'getCeremony'>;
  /** Signing services' key ceremony port; absent: operations answer 503 SIGNERS_UNAVAILABLE. */
  readonly port: KeyCeremonyPort | undefined;
  /** The presignature pool: refilled after a key change (absent: no pool). */
  readonly pool?: { scan(): Promise<void> } | undefined;
  readonly options: KeyServiceOptions;
  readonly log?: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
  /** The checked blames of the lifecycle ceremonies (signing/blame-store.ts); absent: not recorded. */
  readonly blames?: Pick<BlameStore, 'record'> | undefined;
  /** This process as a replica: recorded as the owner of its ceremonies (signers/ceremonies.ts); absent: none. */
  readonly replica?: CeremonyOwner | undefined;
}

type PartyRef = { kind: 'server' | 'device'; id: string };
const same = (a: PartyRef, b: PartyRef) => a.kind === b.kind && a.id.toLowerCase() === b.id.toLowerCase();
const sp = (p: PartyRef): SignParty => ({ kind: p.kind, id: p.id.toLowerCase() });
const uuidBytes = (uuid: string) => hexToBytes(uuid.replaceAll('-', '').toLowerCase());

/** Key lifecycle operations. */
/** How long a prepared key change can be signed and run: 24 h (signers refuse one expiring later). */
export const KEY_CHANGE_LIFETIME_MS = 24 * 60 * 60 * 1000;

export class KeyService implements Startable {
  readonly store: KeyStore;
  private readonly running = new Map<string, AbortController>();
  /** Commit loops by change id (kept apart from `running`: they do not hold the key busy). */
  private readonly committers = new Map<string, AbortController>();
  private readonly pending = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private scheduling = false;
  /**
   * The scheduled refresh (`refreshIntervalHours`; nothing when 0): `start()` checks every
   * `scheduleTickMs`, `stop()` ends the checks (a refresh it started runs on, as any ceremony of
   * this process, until {@link stop}). Run under the singleton lease `scheduler:keys`.
   */
  readonly scheduler: Startable = {
    start: async () => {
      const hours = this.c.options.refreshIntervalHours ?? 0;
      if (hours <= 0 || this.timer !== undefined) return;
      this.timer = setInterval(() => void this.scheduled(hours), this.c.options.scheduleTickMs ?? 60_000);
      this.timer.unref();
    },
    stop: async () => {
      if (this.timer) clearInterval(this.timer);
      this.timer = undefined;
    },
  };

  constructor(private readonly c: KeyServiceComponents) {
    this.store = new KeyStore(c.db);
  }

  private port(): KeyCeremonyPort {
    if (!this.c.port)
      throw new ApiError('SIGNERS_UNAVAILABLE', 'this coordinator has no signer control channel configured');
    return this.c.port;
  }

  /** Start a refresh of every key share of the master key (same parties). @throws ApiError RESOURCE_NOT_FOUND, CONFLICT, SIGNERS_UNAVAILABLE */
  async startRefresh(actor: string | null, masterKeyId: string): Promise<CeremonyView> {
    const port = this.port();
    const id = randomUUID();
    const now = this.c.clock();
    const deadline = new Date(now.getTime() + this.c.options.dkgTimeoutMs);
    const mk = await this.c.db.tx(async (q) => {
      await q.query('LOCK TABLE ceremonies IN EXCLUSIVE MODE');
      const mk = await this.store.key(masterKeyId, q);
      if (await this.store.busy(q, masterKeyId)) throw busy();
      await this.store.insertCeremony(q, {
        id,
        kind: 'refresh',
        threshold: mk.threshold,
        parties: mk.parties,
        actor,
        now,
        deadline,
        masterKeyId,
        owner: this.c.replica?.id ?? null,
      });
      await this.c.audit.record(q, actor, 'master_key.refresh_started', 'master_key', masterKeyId, {
        ceremony_id: id,
      });
      return mk;
    });
    this.background(
      id,
      deadline,
      async (signal, progress) => {
        const parties = mk.parties.map(sp);
        progress({ phase: 'KEYGEN', parties_ready: 0, parties_total: parties.length });
        const results = await port.run(
          parties,
          {
            ceremonyId: uuidBytes(id),
            kind: CeremonyKind.REFRESH,
            threshold: mk.threshold,
            deadlineUnixMs: deadline.getTime(),
            keyId: transferKeyId(mk),
          },
          signal,
        );
        const peers = await Promise.all(parties.map((p) => port.peerIdOf(p).catch(() => '')));
        const keys = accepted(
          results,
          'refresh',
          true,
          new Map(peers.map((peer, i) => [peer, `${parties[i]?.kind}:${parties[i]?.id}`])),
          uuidBytes(id),
        );
        checkRecord(mk, keys);
        return async (q) => {
          const epoch = await bumpEpoch(q, masterKeyId, this.c.clock());
          await this.store.finishCeremony(q, id, { status: 'SUCCEEDED', at: this.c.clock(), result: { epoch } });
          await dropKeyPresignatures(q, transferKeyId(mk));
          await this.c.audit.record(q, actor, 'master_key.refreshed', 'master_key', masterKeyId, {
            ceremony_id: id,
            epoch,
          });
          await emitInstanceEvent(q, this.c.clock, 'REFRESH_KEY_SHARES', {
            master_key_id: masterKeyId,
            ceremony_id: id,
            reason: 'refresh',
            epoch,
          });
          return () => void this.c.pool?.scan().catch(() => undefined);
        };
      },
      actor,
      'refresh',
    );
    return this.c.ceremonies.getCeremony(id);
  }

  /**
   * Create a key change (replace-signer or reshare) awaiting an Admin device's signature.
   * @throws ApiError RESOURCE_NOT_FOUND; VALIDATION_FAILED (threshold out of [2, n'], fewer than
   *   minMobileSigners approved devices, OLD not a party, NEW a party or unknown, duplicates);
   *   CONFLICT (a ceremony or change is running for the key); SIGNERS_UNAVAILABLE (no server
   *   signer of the key answered with its public keys)
   */
  async createKeyChange(
    actor: string,
    masterKeyId: string,
    input:
      | { reason: 'replace-signer'; old: PartyRef; new: PartyRef }
      | { reason: 'reshare'; threshold: number; signers: PartyRef[] },
  ): Promise<KeyChangeView> {
    const port = this.port();
    const mk = await this.store.key(masterKeyId);
    // checked again under the lock when the change is recorded
    if (await this.store.busy(this.c.db, masterKeyId)) throw busy();
    let set: PartyRef[];
    let threshold: number;
    if (input.reason === 'replace-signer') {
      const at = mk.parties.findIndex((p) => same(p, input.old));
      if (at < 0) throw invalid('body.old', 'not a party of the master key');
      if (mk.parties.some((p) => same(p, input.new))) throw invalid('body.new', 'already a party of the master key');
      set = mk.parties.map((p, i) => (i === at ? input.new : { kind: p.kind, id: p.id }));
      threshold = mk.threshold;
    } else {
      set = input.signers;
      threshold = input.threshold;
    }
    const n = set.length;
    if (!Number.isInteger(threshold) || threshold < 2 || threshold > n)
      throw invalid('body.threshold', `must be between 2 and the number of signers (${n})`);
    if (new Set(set.map((p) => `${p.kind}:${p.id.toLowerCase()}`)).size !== n)
      throw invalid('body.signers', 'duplicate signer');
    const field = input.reason === 'replace-signer' ? 'body.new' : 'body.signers';
    const parties: CeremonyParty[] = [];
    const approvers: { device_id: string; public_key: string }[] = [];
    for (const s of set) {
      const old = mk.parties.find((p) => same(p, s));
      if (s.kind === 'server') {
        const r = (
          await this.c.db.query<{ peer_id: string; address: string }>(
            'SELECT peer_id, address FROM server_signers WHERE signer_id::text = $1 AND removed_at IS NULL',
            [s.id.toLowerCase()],
          )
        )[0];
        if (r === undefined) throw invalid(field, `unknown server signer ${s.id}`);
        parties.push({ kind: 'server', id: s.id.toLowerCase(), peer: r.peer_id, address: r.address });
      } else {
        const r = (
          await this.c.db.query<{ public_key: string; mpc_peer_id: string | null; fingerprint: string }>(
            `SELECT public_key, mpc_peer_id, fingerprint FROM devices WHERE device_id::text = $1 AND status = 'APPROVED'`,
            [s.id.toLowerCase()],
          )
        )[0];
        if (r === undefined || r.mpc_peer_id === null)
          throw invalid(field, `device ${s.id} is not an approved device with an MPC peer id`);
        // a device party keeps the record it had (the master key ceremony stored its fingerprint as `peer`)
        parties.push(old ?? { kind: 'device', id: s.id.toLowerCase(), peer: r.fingerprint, address: null });
        approvers.push({ device_id: s.id.toLowerCase(), public_key: compressed(r.public_key) });
      }
    }
    if (approvers.length < this.c.options.minMobileSigners)
      throw invalid(
        field,
        `at least ${this.c.options.minMobileSigners} approved devices must be in the new set (seed §8)`,
      );
    const peers = await Promise.all(set.map((s) => this.mpcPeer(s)));
    const { keys, base } = await this.liveKeys(port, mk);
    const changeId = randomUUID();
    const now = this.c.clock();
    const document: KeyChangeDocument = {
      kind: 'custodian.key-change',
      change_id: changeId,
      key_id: transferKeyId(mk),
      public_keys: keys,
      new_parties: peers,
      new_threshold: threshold,
      approver_devices: approvers,
      base,
      // an Admin signs within the day, or the change is made again
      expires_at: new Date(now.getTime() + KEY_CHANGE_LIFETIME_MS).toISOString(),
      reason: input.reason,
      created_at: now.toISOString(),
    };
    const digest = bytesToHex(keyChangeDigest(document));
    await this.c.db.tx(async (q) => {
      await q.query('LOCK TABLE ceremonies IN EXCLUSIVE MODE');
      if (await this.store.busy(q, masterKeyId)) throw busy();
      await this.store.insertChange(q, {
        id: changeId,
        masterKeyId,
        reason: input.reason,
        document: JSON.stringify(document),
        digest,
        threshold,
        parties,
        actor,
        now,
      });
      await this.c.audit.record(q, actor, 'master_key.key_change_created', 'master_key', masterKeyId, {
        change_id: changeId,
        reason: input.reason,
        new_threshold: threshold,
        new_parties: parties.map((p) => `${p.kind}:${p.id}`),
      });
    });
    return this.store.view(masterKeyId, changeId);
  }

  /**
   * Attach an Admin device's signature (P-256 r‖s hex over `digest`) and start the RESHARE. The
   * device must be APPROVED and bound to a user who is an Admin now (neither blocked nor deleted).
   * @throws ApiError RESOURCE_NOT_FOUND; VALIDATION_FAILED (`body.device_id` not an Admin's approved
   *   device, `body.signature` not over the digest); CONFLICT (the change is not AWAITING_SIGNATURE,
   *   or another ceremony runs for the key); SIGNERS_UNAVAILABLE
   */
  async signKeyChange(
    actor: string,
    masterKeyId: string,
    changeId: string,
    input: { device_id: string; signature: string },
  ): Promise<CeremonyView> {
    const port = this.port();
    const id = randomUUID();
    const now = this.c.clock();
    const deadline = new Date(now.getTime() + this.c.options.dkgTimeoutMs);
    const { mk, change, signed } = await this.c.db.tx(async (q) => {
      await q.query('LOCK TABLE ceremonies IN EXCLUSIVE MODE');
      const change = await this.store.change(q, masterKeyId, changeId, true);
      if (change.status !== 'AWAITING_SIGNATURE')
        throw new ApiError('CONFLICT', `the key change is ${change.status}, not AWAITING_SIGNATURE`);
      const dev = (
        await q.query<{ public_key: string; admin: boolean }>(
          `SELECT d.public_key, (u.role = 'ADMIN' AND u.blocked_at IS NULL AND u.deleted_at IS NULL) IS TRUE AS admin
             FROM devices d LEFT JOIN users u ON u.user_id = d.user_id
            WHERE d.device_id::text = $1 AND d.status = 'APPROVED'`,
          [input.device_id.toLowerCase()],
        )
      )[0];
      if (dev === undefined || !dev.admin) throw invalid('body.device_id', 'not an approved device of an Admin');
      const pub = compressed(dev.public_key);
      if (!/^[0-9a-f]{128}$/.test(input.signature) || !deviceVerify(input.signature, hexToBytes(change.digest), pub))
        throw invalid('body.signature', 'does not verify over the key change digest with this device key');
      const mk = await this.store.key(masterKeyId, q);
      if (await this.store.busy(q, masterKeyId)) throw busy();
      // the new set as it is now: a device removed or a signer deregistered since the change was prepared
      for (const p of change.new_parties) {
        const live =
          p.kind === 'server'
            ? await q.query('SELECT 1 FROM server_signers WHERE signer_id::text = $1 AND removed_at IS NULL', [p.id])
            : await q.query(`SELECT 1 FROM devices WHERE device_id::text = $1 AND status = 'APPROVED'`, [p.id]);
        if (live.length === 0)
          throw new ApiError(
            'CONFLICT',
            `${p.kind} ${p.id} of the new set is no longer usable; prepare a new key change`,
          );
      }
      const signed: SignedKeyChange = {
        document: JSON.parse(change.document) as KeyChangeDocument,
        device_id: input.device_id.toLowerCase(),
        device_public_key: pub,
        signature: input.signature,
      };
      const session = [...mk.parties, ...change.new_parties.filter((p) => !mk.parties.some((o) => same(o, p)))];
      await this.store.insertCeremony(q, {
        id,
        kind: 'reshare',
        threshold: change.new_threshold,
        parties: session,
        actor,
        now,
        deadline,
        masterKeyId,
        keyChangeId: changeId,
        owner: this.c.replica?.id ?? null,
      });
      await this.store.setChange(q, changeId, { status: 'RUNNING', at: now, signed, ceremonyId: id });
      await this.c.audit.record(q, actor, 'master_key.key_change_signed', 'master_key', masterKeyId, {
        change_id: changeId,
        ceremony_id: id,
        device_id: signed.device_id,
      });
      return { mk, change, signed };
    });
    this.runReshare(id, deadline, actor, mk, change, signed, port);
    return this.c.ceremonies.getCeremony(id);
  }

  private runReshare(
    id: string,
    deadline: Date,
    actor: string,
    mk: KeyRecord,
    change: KeyChangeRow,
    signed: SignedKeyChange,
    port: KeyCeremonyPort,
  ) {
    const doc = signed.document;
    this.background(
      id,
      deadline,
      async (signal, progress) => {
        // the old parties that are connected now deal; at least t of them
        const avail = await Promise.all(
          mk.parties.map(async (p) => ((await port.availability(sp(p))) === 'down' ? null : p)),
        );
        const dealers = avail.filter((p): p is CeremonyParty => p !== null);
        if (dealers.length < mk.threshold)
          throw new Error(`only ${dealers.length} of the key's parties are reachable; ${mk.threshold} must deal`);
        const session = [...dealers, ...change.new_parties.filter((p) => !dealers.some((o) => same(o, p)))].map(sp);
        progress({ phase: 'KEYGEN', parties_ready: 0, parties_total: session.length });
        const ceremonyId = uuidBytes(id);
        const results = await port.run(
          session,
          {
            ceremonyId,
            kind: CeremonyKind.RESHARE,
            threshold: mk.threshold,
            deadlineUnixMs: deadline.getTime(),
            keyId: doc.key_id,
            reshare: {
              newParties: doc.new_parties.map((peerId) => ({ peerId })),
              newThreshold: doc.new_threshold,
              approverDevices: doc.approver_devices.map((d) => ({
                deviceId: d.device_id,
                publicKey: hexToBytes(d.public_key),
              })),
              keyChangeJson: JSON.stringify(signed),
            },
          },
          signal,
        );
        const sessionPeers = await Promise.all(session.map((p) => port.peerIdOf(p).catch(() => '')));
        const names = new Map(sessionPeers.map((peer, i) => [peer, `${session[i]?.kind}:${session[i]?.id}`]));
        const keys = accepted(results, 'reshare', true, names, ceremonyId);
        if (!sameKeys(keys, doc.public_keys))
          throw new Error('reshare: the parties report public keys other than the key change names');
        const sigs = checkTestSignatures(
          results,
          testSignatureDigest('reshare', doc.key_id, ceremonyId),
          doc.public_keys,
        );
        if (!sigs.ok) throw new Error('reshare: the test signatures under the new set do not verify');
        const attestations = pendingAttestations(doc.new_parties, results, names, doc.key_id, ceremonyId);
        const uncommitted = session.map((p) => `${p.kind}:${p.id}`);
        return async (q) => {
          await this.store.setChange(q, change.change_id, {
            status: 'COMMITTING',
            at: this.c.clock(),
            pendingAttestations: attestations,
            uncommitted,
          });
          await q.query('UPDATE master_keys SET parties = $2::jsonb, threshold = $3 WHERE master_key_id = $1', [
            mk.master_key_id,
            JSON.stringify(change.new_parties),
            change.new_threshold,
          ]);
          const epoch = await bumpEpoch(q, mk.master_key_id, this.c.clock());
          await this.store.finishCeremony(q, id, {
            status: 'SUCCEEDED',
            at: this.c.clock(),
            // the session (who holds pending shares to promote) for the commit, also after a restart
            result: {
              epoch,
              signatures: sigs.signatures,
              session: session.map((p, i) => ({ ...p, peer: sessionPeers[i] })),
            },
          });
          await dropKeyPresignatures(q, doc.key_id);
          await this.c.audit.record(q, actor, 'master_key.reshared', 'master_key', mk.master_key_id, {
            change_id: change.change_id,
            ceremony_id: id,
            epoch,
          });
          await emitInstanceEvent(q, this.c.clock, 'REFRESH_KEY_SHARES', {
            master_key_id: mk.master_key_id,
            ceremony_id: id,
            reason: doc.reason,
            epoch,
          });
          return () => {
            void this.c.pool?.scan().catch(() => undefined);
            this.commit(
              { ...change, status: 'COMMITTING', ceremony_id: id, pending_attestations: attestations },
              session,
              sessionPeers,
            );
          };
        };
      },
      actor,
      'reshare',
      async (q, error, blamed) => {
        await this.store.setChange(q, change.change_id, { status: 'FAILED', at: this.c.clock(), error, blamed });
      },
    );
  }

  /**
   * Send RESHARE_COMMIT (with every new party's pending attestation) to every party of the RESHARE
   * session (each holds pending shares or a pending leave) with backoff. SUCCEEDED as soon as at
   * least t′ new parties and every leaving party acknowledged (the new set signs and no old share
   * is left to sign with); the rest stay in `uncommitted` and are retried in the background (not
   * `busy`) until each answered OK or stop (a later start resumes them). An old party absent from
   * the session holds no pending entry and is not asked (it keeps its old share: decommission it).
   */
  private commit(change: KeyChangeRow, session: readonly SignParty[], sessionPeers: readonly string[]): void {
    const port = this.c.port;
    if (!port || change.ceremony_id === null || this.committers.has(change.change_id)) return;
    const all = session.map(sp);
    const todo = new Set(all.map((p) => `${p.kind}:${p.id}`));
    const ac = new AbortController();
    this.committers.set(change.change_id, ac);
    const retry = this.c.options.commitRetry ?? { initialMs: 1000, maxMs: 60_000 };
    const state = { succeeded: change.status === 'SUCCEEDED', recorded: '' };
    const loop = async () => {
      let delay = retry.initialMs;
      while (!ac.signal.aborted) {
        try {
          if (await this.round(port, all, todo, change, state, sessionPeers, ac.signal)) return;
        } catch (e) {
          // a database or transport error: retried like a party that did not answer
          this.c.log?.('warn', 'reshare commit round failed; retrying', {
            err: e instanceof Error ? e.message : String(e),
          });
        }
        await sleep(delay, ac.signal);
        delay = Math.min(retry.maxMs, delay * 2);
      }
    };
    const p = loop()
      .catch((e: unknown) => this.c.log?.('warn', 'reshare commit loop failed', { err: String(e) }))
      .finally(() => this.committers.delete(change.change_id));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /**
   * One round of commits to the parties still in `todo`; records SUCCEEDED once t′ new parties and
   * every leaving party acknowledged, and the parties left in `uncommitted`.
   * @returns true when every party committed
   */
  private async round(
    port: KeyCeremonyPort,
    all: readonly SignParty[],
    todo: Set<string>,
    change: KeyChangeRow,
    state: { succeeded: boolean; recorded: string },
    sessionPeers: readonly string[],
    signal: AbortSignal,
  ): Promise<boolean> {
    const keyId = (JSON.parse(change.document) as KeyChangeDocument).key_id;
    const reshareId = uuidBytes(change.ceremony_id ?? '');
    const attestations = (change.pending_attestations ?? []).map((a) => hexToBytes(a));
    await Promise.all(
      all
        .filter((p) => todo.has(`${p.kind}:${p.id}`))
        .map(async (p) => {
          const deadline = Date.now() + 30_000;
          const [r] = await port.run(
            [p],
            {
              ceremonyId: uuidBytes(randomUUID()),
              kind: CeremonyKind.RESHARE_COMMIT,
              threshold: change.new_threshold,
              deadlineUnixMs: deadline,
              keyId,
              reshareCeremonyId: reshareId,
              pendingAttestations: attestations,
            },
            signal,
            sessionPeers.length > 0 ? { sessionPeers } : {},
          );
          if (r?.result.outcome === Outcome.OK) todo.delete(`${p.kind}:${p.id}`);
          else
            this.c.log?.('warn', 'reshare commit not acknowledged; retrying', {
              party: `${p.kind} ${p.id}`,
              error: r?.result.error,
            });
        }),
    );
    const isNew = (name: string) => change.new_parties.some((n) => `${n.kind}:${n.id.toLowerCase()}` === name);
    const names = all.map((p) => `${p.kind}:${p.id}`);
    const newCommitted = names.filter((n) => isNew(n) && !todo.has(n)).length;
    const leavingLeft = names.filter((n) => !isNew(n) && todo.has(n)).length;
    const uncommitted = [...todo].sort();
    const key = JSON.stringify(uncommitted);
    if (!state.succeeded && (todo.size === 0 || (newCommitted >= change.new_threshold && leavingLeft === 0))) {
      await this.c.db.tx(async (q) => {
        await this.store.setChange(q, change.change_id, { status: 'SUCCEEDED', at: this.c.clock(), uncommitted });
        await this.c.audit.record(q, null, 'master_key.key_change_committed', 'master_key', change.master_key_id, {
          change_id: change.change_id,
          uncommitted,
        });
      });
      state.succeeded = true;
      state.recorded = key;
    } else if (key !== state.recorded) {
      await this.store.setChange(this.c.db, change.change_id, {
        status: state.succeeded ? 'SUCCEEDED' : 'COMMITTING',
        at: this.c.clock(),
        uncommitted,
      });
      state.recorded = key;
    }
    return todo.size === 0 && state.succeeded;
  }

  /**
   * Start a recovery drill: t reachable parties sign the fixed drill digest under every key; the
   * view's `result` holds the verified signatures and each server signer's epoch and backup state.
   * @throws ApiError RESOURCE_NOT_FOUND, CONFLICT, SIGNERS_UNAVAILABLE
   */
  async startDrill(actor: string, masterKeyId: string): Promise<CeremonyView> {
    const port = this.port();
    const id = randomUUID();
    const now = this.c.clock();
    const deadline = new Date(now.getTime() + this.c.options.dkgTimeoutMs);
    const mk = await this.c.db.tx(async (q) => {
      await q.query('LOCK TABLE ceremonies IN EXCLUSIVE MODE');
      const mk = await this.store.key(masterKeyId, q);
      if (await this.store.busy(q, masterKeyId)) throw busy();
      await this.store.insertCeremony(q, {
        id,
        kind: 'drill',
        threshold: mk.threshold,
        parties: mk.parties,
        actor,
        now,
        deadline,
        masterKeyId,
        owner: this.c.replica?.id ?? null,
      });
      await this.c.audit.record(q, actor, 'master_key.drill_started', 'master_key', masterKeyId, { ceremony_id: id });
      return mk;
    });
    this.background(
      id,
      deadline,
      async (signal, progress) => {
        const keyId = transferKeyId(mk);
        const servers = mk.parties.filter((p) => p.kind === 'server');
        const statuses = await Promise.all(
          servers.map(async (p) => {
            try {
              return { p, s: (await port.status(sp(p))).keys.find((k) => k.keyId === keyId) };
            } catch {
              return { p, s: undefined };
            }
          }),
        );
        const up = await Promise.all(
          mk.parties.map(async (p) => ((await port.availability(sp(p))) === 'down' ? null : p)),
        );
        const signers = [
          ...up.filter((p): p is CeremonyParty => p?.kind === 'server'),
          ...up.filter((p): p is CeremonyParty => p?.kind === 'device'),
        ].slice(0, mk.threshold);
        if (signers.length < mk.threshold)
          throw new Error(`only ${signers.length} of the key's parties are reachable; ${mk.threshold} must sign`);
        progress({ phase: 'KEYGEN', parties_ready: 0, parties_total: signers.length });
        const ceremonyId = uuidBytes(id);
        const results = await port.run(
          signers.map(sp),
          { ceremonyId, kind: CeremonyKind.DRILL, threshold: mk.threshold, deadlineUnixMs: deadline.getTime(), keyId },
          signal,
        );
        accepted(results, 'drill', false, new Map(), ceremonyId);
        // the keys to verify under: the record's, plus any other key all answering signers report (Taproot)
        const reported = statuses
          .map((s) => (s.s ? keyEntries(s.s.publicKeys) : undefined))
          .filter((k): k is KeyEntry[] => k !== undefined);
        const keys = knownKeys(mk, reported);
        const sigs = checkTestSignatures(results, testSignatureDigest('drill', keyId, ceremonyId), keys);
        const result = {
          signatures: sigs.signatures,
          signers: [
            ...statuses.map(({ p, s }) => ({
              kind: p.kind,
              id: p.id,
              epoch: s?.epoch ?? null,
              backup_epoch: s ? (s.backupUnixMs ? (s.backupEpoch ?? 0) : null) : null,
              backup_at: s?.backupUnixMs ? new Date(Number(s.backupUnixMs)).toISOString() : null,
              backup_current: s ? Boolean(s.backupUnixMs) && (s.backupEpoch ?? 0) === (s.epoch ?? 0) : null,
            })),
            ...mk.parties
              .filter((p) => p.kind === 'device')
              .map((p) => ({
                kind: p.kind,
                id: p.id,
                epoch: null,
                backup_epoch: null,
                backup_at: null,
                backup_current: null,
              })),
          ],
        };
        return async (q) => {
          await this.store.finishCeremony(
            q,
            id,
            sigs.ok
              ? { status: 'SUCCEEDED', at: this.c.clock(), result }
              : { status: 'FAILED', at: this.c.clock(), result, error: 'a drill signature does not verify' },
          );
          await this.c.audit.record(q, actor, 'master_key.drill_finished', 'master_key', masterKeyId, {
            ceremony_id: id,
            verified: sigs.ok,
          });
          return undefined;
        };
      },
      actor,
      'drill',
    );
    return this.c.ceremonies.getCeremony(id);
  }

  /** The live public keys of the key as its reachable server signers report them (all must agree and match the record). */
  /**
   * The key's public keys and its base (epoch, parties in order, threshold) as its server signers
   * hold them (control `status`); they must all agree.
   * @throws ApiError SIGNERS_UNAVAILABLE when none answers; CONFLICT when they differ or disagree with the record
   */
  private async liveKeys(
    port: KeyCeremonyPort,
    mk: KeyRecord,
  ): Promise<{ keys: KeyEntry[]; base: KeyChangeDocument['base'] }> {
    const keyId = transferKeyId(mk);
    const reports = (
      await Promise.all(
        mk.parties
          .filter((p) => p.kind === 'server')
          .map(async (p) => {
            try {
              const k = (await port.status(sp(p))).keys.find((x) => x.keyId === keyId);
              const entry: { keys: KeyEntry[]; base: KeyChangeDocument['base'] } | undefined = k
                ? {
                    keys: keyEntries(k.publicKeys),
                    base: { epoch: k.epoch ?? 0, parties: k.parties.map((x) => x.peerId), threshold: k.threshold },
                  }
                : undefined;
              return entry;
            } catch {
              return undefined;
            }
          }),
      )
    ).filter((k): k is { keys: KeyEntry[]; base: KeyChangeDocument['base'] } => k !== undefined);
    const first = reports[0];
    if (first === undefined)
      throw new ApiError('SIGNERS_UNAVAILABLE', 'no server signer of the master key answered with its public keys');
    if (reports.some((r) => !sameKeys(r.keys, first.keys)))
      throw new ApiError('CONFLICT', "the key's server signers report different public keys");
    if (reports.some((r) => JSON.stringify(r.base) !== JSON.stringify(first.base)))
      throw new ApiError('CONFLICT', "the key's server signers report different epochs, parties or thresholds");
    try {
      checkRecord(mk, first.keys);
    } catch (e) {
      throw new ApiError('CONFLICT', (e as Error).message);
    }
    return first;
  }

  private async mpcPeer(p: PartyRef): Promise<string> {
    const r =
      p.kind === 'server'
        ? await this.c.db.query<{ peer: string }>(
            'SELECT peer_id AS peer FROM server_signers WHERE signer_id::text = $1 AND removed_at IS NULL',
            [p.id.toLowerCase()],
          )
        : await this.c.db.query<{ peer: string }>(
            'SELECT mpc_peer_id AS peer FROM devices WHERE device_id::text = $1',
            [p.id.toLowerCase()],
          );
    const peer = r[0]?.peer;
    if (!peer) throw invalid('body.signers', `${p.kind} ${p.id} has no MPC peer id`);
    return peer;
  }

  /**
   * Run `work` in the background under `deadline`: it resolves with the success transaction (which
   * may return a callback run after the commit); any failure, the deadline or shutdown records
   * FAILED / TIMED_OUT (with `onFail` in the same transaction).
   */
  private background(
    id: string,
    deadline: Date,
    work: (
      signal: AbortSignal,
      progress: (p: CeremonyProgress) => void,
    ) => Promise<(q: Queryable) => Promise<(() => void) | undefined>>,
    actor: string | null,
    kind: string,
    onFail?: (q: Queryable, error: string, blamed: string[] | null) => Promise<void>,
  ): void {
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
    let chain = Promise.resolve();
    const progress = (p: CeremonyProgress) => {
      chain = chain.then(() => this.store.progress(id, p)).catch(() => undefined);
    };
    const run = async () => {
      try {
        const success = await Promise.race([
          work(ac.signal, progress),
          new Promise<never>((_, reject) =>
            ac.signal.addEventListener('abort', () => reject(ac.signal.reason), { once: true }),
          ),
        ]);
        clearTimeout(timer);
        await chain;
        const after = await this.c.db.tx(success);
        after?.();
      } catch (e) {
        clearTimeout(timer);
        await chain;
        const blamed = e instanceof CulpritError ? e.culprits : null;
        const message = deadlineHit
          ? `the ceremony did not complete within ${Math.round(this.c.options.dkgTimeoutMs / 1000)} s`
          : e instanceof Error
            ? e.message.slice(0, 500)
            : 'failed';
        if (!ac.signal.aborted) ac.abort(e);
        await this.c.db
          .tx(async (q) => {
            await this.store.finishCeremony(q, id, {
              status: deadlineHit ? 'TIMED_OUT' : 'FAILED',
              at: this.c.clock(),
              error: message,
              blamed,
            });
            if (e instanceof CulpritError) await this.c.blames?.record(q, id, kind, e.blames);
            await onFail?.(q, message, blamed);
            await this.c.audit.record(q, actor, `master_key.${kind}_failed`, 'ceremony', id, { blamed });
          })
          .catch(() => undefined);
      } finally {
        this.running.delete(id);
      }
    };
    const p = run();
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /**
   * Resume the commit loops of key changes left COMMITTING (or SUCCEEDED with parties uncommitted)
   * whose RESHARE ceremony's owner is gone (RUNNING key changes of a gone owner are failed by the
   * ceremony recovery, signers/ceremonies.ts). The schedule is {@link scheduler}, started apart.
   */
  async start(): Promise<void> {
    this.stopped = false;
    await this.resumeCommits();
  }

  /**
   * Take over the commit loops of the key changes still committing whose RESHARE ceremony's owner
   * is gone (or unnamed): each is claimed by ONE replica (an update of the ceremony's
   * `owner_replica`) and its loop runs here. Loops of live owners are left to them.
   * @returns the ids of the changes taken over now
   */
  async resumeCommits(): Promise<string[]> {
    if (this.stopped) return [];
    const me = this.c.replica?.id ?? null;
    const taken: string[] = [];
    for (const ch of await this.store.committing()) {
      if (ch.ceremony_id === null || this.committers.has(ch.change_id)) continue;
      // the RESHARE ceremony's result names its session (the parties holding pending entries)
      const row = (
        await this.c.db.query<{ result: { session?: (SignParty & { peer: string })[] } | null }>(
          `UPDATE ceremonies c SET owner_replica = $2 WHERE c.ceremony_id = $1
             AND (c.owner_replica IS NOT DISTINCT FROM $2 OR ${ownerGoneSql(this.c.db.dialect, '$2', '$3')})
           RETURNING c.result`,
          [ch.ceremony_id, me, this.c.replica?.ttlMs ?? 0],
        )
      )[0];
      if (row === undefined) continue;
      const session = row.result?.session ?? [];
      taken.push(ch.change_id);
      this.commit(
        ch,
        session,
        session.map((p) => p.peer),
      );
    }
    return taken;
  }

  /** One pass of the scheduled refresh: refresh the first key due (one at a time). */
  async scheduled(hours: number): Promise<void> {
    if (this.scheduling || this.stopped || !this.c.port) return;
    this.scheduling = true;
    try {
      const due = this.c.clock().getTime() - hours * 3600_000;
      // one at a time across replicas: none while a lifecycle ceremony runs anywhere
      if (this.running.size > 0) return;
      const running = await this.c.db.query(
        `SELECT 1 FROM ceremonies WHERE status = 'RUNNING' AND kind IN ('refresh','reshare','reshare_commit','drill') LIMIT 1`,
      );
      if (running.length > 0) return;
      for (const k of await this.store.keys()) {
        if ((k.refreshed_at ?? k.created_at).getTime() > due) continue;
        try {
          await this.startRefresh(null, k.master_key_id);
          return;
        } catch (e) {
          if (!(e instanceof ApiError && e.code === 'CONFLICT')) throw e;
        }
      }
    } catch (e) {
      this.c.log?.('warn', 'scheduled refresh not started', { err: e instanceof Error ? e.message : String(e) });
    } finally {
      this.scheduling = false;
    }
  }

  /** Abort running ceremonies and commit loops and wait for their records. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.scheduler.stop();
    for (const ac of [...this.running.values(), ...this.committers.values()])
      ac.abort(new Error('coordinator shutting down'));
    await Promise.allSettled([...this.pending]);
  }
}
