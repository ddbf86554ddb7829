/**
 * The asynchronous half of the transfer state machine (service.ts has the diagram): approval
 * expiry, building and signing (PENDING_SIGNATURE → READY_TO_SEND), broadcast (→ SENT), the
 * confirmation follow-up (TRANSFER_DELIVERED) and fee bumps.
 *
 * Work loop: claim a transfer, run the step of its status ({@link TransferPipeline} `steps`: a
 * table keyed by status), release it. Up to `concurrency` transfers run at once, each on its own:
 * a finished one frees its slot and the loop claims the next, so one slow ceremony (a signer that
 * does not answer) never holds back the signing, broadcast or confirmation of the others.
 *
 * Leases: a claimed transfer carries `lease_until` and `lease_owner` (this process's random
 * {@link TransferPipeline.owner}). The lease is short (`leaseMs`, default 15 s) and renewed every
 * `leaseMs / 3` while the step runs; a renewal or a result write whose owner no longer holds the
 * lease does nothing, and the step is abandoned (its AbortSignal aborts the ceremony). A crashed
 * process's transfers are therefore taken over by a survivor or a restarted process once the lease
 * runs out (within `leaseMs` plus one poll).
 *
 * Unavailable signers: a ceremony that fails because parties could not take part (unreachable,
 * offline, connection closed, a deadline, an abort that blames no one) is retried with a capped,
 * jittered backoff while the signing window lasts (`signingWindowMs` from entering
 * PENDING_SIGNATURE, default 1 h). Meanwhile the transfer stays PENDING_SIGNATURE with sub_status
 * WAITING_FOR_SIGNERS and `error` naming the missing parties (one TRANSFER_UPDATED on entering that
 * state); each retry picks a signing set that avoids parties known to be unavailable when the key
 * has enough others. FAILED only for definitive causes: a refusal (REJECTED, refusal code), an abort
 * with named culprits (FAILED / SIGNING_FAILED), the window over (FAILED / SIGNING_WINDOW_EXPIRED).
 * Fee bump signing follows the same rules on the bump's own status.
 *
 * Restart safety ("persisted before its side effects"): the unsigned transaction (with its nonce)
 * is stored before the signers are asked, so a resumed or taken-over transfer signs the same
 * transaction (the signers accept the identical digests again, see packages/signer enforce.ts); the
 * signed raw transaction and its hash are stored with READY_TO_SEND before broadcasting, and on
 * resume the node is asked for that hash first — a transaction the node knows is never broadcast
 * again.
 *
 * Ethereum nonces (eth-nonce.ts {@link ethereumNonce}): decided from the database and the node
 * only (nothing in process memory, so a restart decides the same way), under a per-sender advisory
 * lock: the lowest nonce ≥ the node's pending count not held by a live transaction of the sender
 * (stored unsigned in PENDING_SIGNATURE or READY_TO_SEND, or SENT and not yet delivered). The
 * transactions of one address are sent to the signers in nonce order (a transfer waits while one
 * with a lower nonce is unsigned), and a transaction not yet sent to any signer is moved to the
 * lowest free nonce before its first signing request — so a transfer that ends FAILED, REJECTED or
 * EXPIRED before its broadcast frees its nonce and no gap blocks the later ones. Safe: that
 * transaction never reached a node (a READY_TO_SEND transfer is FAILED / BROADCAST_FAILED only when
 * the node does not know its hash after the refusal), and if it was signed, a mined transaction
 * with the same nonce makes the signed one invalid forever. A transaction a signer may have signed
 * never changes (the signers sign identical digests again, and refuse another transaction for a
 * transfer they signed: TRANSFER_ALREADY_SIGNED). A broadcast refusal is logged and stored in the
 * transfer's `error` with the node's own reason (e.g. `nonce too low`). A fee bump waiting for its
 * signers never holds back its transfer's confirmation (a confirmed transfer's bump ends FAILED /
 * ALREADY_CONFIRMED).
 */
import { randomUUID } from 'node:crypto';
import {
  BroadcastError,
  type ChainSignature,
  type EthereumContext,
  type FeeLevel,
  recomputeEthereumDigests,
  type SignedTransfer,
  type UnsignedTransfer,
} from '@custodian/chains';
import { Backoff } from '@custodian/signer-client';
import type { TransferIntent } from '@custodian/wire';
import type { Db, Queryable } from '../db/db.js';
import { blockchainByKey } from '../directory.js';
import type { GatewaySignResult, SignerGateway, SignParty } from '../signing/gateway.js';
import type { Clock } from '../util.js';
import { emitEvent } from '../webhooks/outbox.js';
import type { ChainRegistry } from './chains.js';
import { ethereumNonce, type NonceNode } from './eth-nonce.js';
import { capFee, FEE_CAP_EXCEEDED, nativeAmount } from './fee-cap.js';
import {
  type FeeBump,
  fieldsOf,
  intentCap,
  loadTransfer,
  type TransferRow,
  type TransferService,
  type TransferStatus,
  transferEventData,
  transferView,
  transition,
} from './service.js';
import { loadUnsigned, type StoredUnsigned, storeUnsigned } from './unsigned.js';

/** sub_status of a PENDING_SIGNATURE transfer (or a fee bump) whose signers are not all available. */
export const WAITING_FOR_SIGNERS = 'WAITING_FOR_SIGNERS';
/** sub_status of a FAILED transfer (or fee bump) whose signing window ended without a signature. */
export const SIGNING_WINDOW_EXPIRED = 'SIGNING_WINDOW_EXPIRED';
/** sub_status of a FAILED fee bump whose transfer was confirmed before the replacement was signed. */
export const ALREADY_CONFIRMED = 'ALREADY_CONFIRMED';

/** Pipeline settings. */
export interface PipelineOptions {
  /** Deadline of one signing ceremony (ms). Default 120 s. */
  signDeadlineMs: number;
  /**
   * How long a transfer may wait for its signers, from entering PENDING_SIGNATURE (a fee bump: from
   * its approval), ms; then FAILED / SIGNING_WINDOW_EXPIRED. Default 1 h.
   */
  signingWindowMs: number;
  /** Retries of a ceremony that failed for unavailability: first delay base and cap (ms), jittered. Defaults 2 s and 60 s. */
  retryInitialMs: number;
  retryMaxMs: number;
  /** Lease of a claimed transfer (ms), renewed every third of it while its step runs. Default 15 s. */
  leaseMs: number;
  /** Transfers processed at once by this process. Default 8. */
  concurrency: number;
  /** Timer interval (ms): expiry, chain checks and claims of transfers whose lease or retry delay ran out. Default 1000. */
  pollMs: number;
  /** Delay before a SENT transfer's confirmations are checked again (ms). Default 2000. */
  confirmationRecheckMs: number;
  log: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

export const DEFAULT_PIPELINE_OPTIONS: Omit<PipelineOptions, 'log'> = {
  signDeadlineMs: 120_000,
  signingWindowMs: 3600_000,
  retryInitialMs: 2000,
  retryMaxMs: 60_000,
  leaseMs: 15_000,
  concurrency: 8,
  pollMs: 1000,
  confirmationRecheckMs: 2000,
};

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, 'hex'));
const partyKey = (p: SignParty) => `${p.kind}:${p.id.toLowerCase()}`;

/**
 * Parties of a signing set: `threshold` parties of the key, in key order — server signers before
 * devices, and parties not in `unavailable` (keys `kind:id`, id lower case) before those in it, so
 * a set that avoids unavailable parties is chosen whenever the key has enough others. Without
 * `unavailable`: the first `threshold` server signers, then devices.
 */
export function signingParties(parties: unknown, threshold: number, unavailable?: ReadonlySet<string>): SignParty[] {
  const all = (Array.isArray(parties) ? parties : []) as { kind: 'server' | 'device'; id: string }[];
  const down = (p: { kind: string; id: string }) => unavailable?.has(`${p.kind}:${p.id.toLowerCase()}`) === true;
  const rank = (p: { kind: string; id: string }) => (down(p) ? 2 : 0) + (p.kind === 'server' ? 0 : 1);
  const preferred = all.map((p, i) => ({ p, i })).sort((a, b) => rank(a.p) - rank(b.p) || a.i - b.i);
  const chosen = new Set(preferred.slice(0, threshold).map(({ p }) => `${p.kind}:${p.id}`));
  return all.filter((p) => chosen.has(`${p.kind}:${p.id}`)).map((p) => ({ kind: p.kind, id: p.id }));
}

/** What a step tells the loop: go on with the transfer in its new state, or release it. */
type StepResult =
  /** Continue with this row (its status has a step); undefined: the lease is no longer ours. */
  | { row: TransferRow | undefined }
  /** Done for now: release the lease, claimable again after `retryInMs` (null: at once). */
  | { release: number | null };

type Step = (t: TransferRow, signal: AbortSignal) => Promise<StepResult>;

/** A signing attempt, classified. */
type SignOutcome =
  | { kind: 'signed'; res: Extract<GatewaySignResult, { ok: true }> }
  /** Definitive: a refusal or an identifiable abort. */
  | { kind: 'failed'; res: Extract<GatewaySignResult, { reason: 'REFUSED' | 'ABORTED' }> }
  /** Worth another attempt; `missing` names what was missing. */
  | { kind: 'retry'; missing: string }
  /** The step's signal fired (lease lost, stopping): record nothing. */
  | { kind: 'abandoned' };

/** Drives transfers through signing, broadcast and confirmation. */
export class TransferPipeline {
  /** This process's lease owner id (random per instance). */
  readonly owner = randomUUID();
  #timer: NodeJS.Timeout | undefined;
  #filling: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  /** Crashed (test of takeovers): no further write of any kind, leases not released. */
  #crashed = false;
  readonly #inFlight = new Map<string, { ac: AbortController; done: Promise<void> }>();
  /** Retry backoff per transfer waiting for its signers (this process). */
  readonly #backoffs = new Map<string, Backoff>();
  /** Parties a recent ceremony found unavailable: party key → until (ms since epoch). */
  readonly #unavailable = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly chains: ChainRegistry,
    private readonly service: TransferService,
    private readonly gateway: SignerGateway | undefined,
    private readonly opts: PipelineOptions,
  ) {}

  /** The step of each status the pipeline works on. */
  private readonly steps: Partial<Record<TransferStatus, Step>> = {
    PENDING_SIGNATURE: (t, signal) => this.signStep(t, signal),
    READY_TO_SEND: (t, signal) => this.broadcastStep(t, signal),
    SENT: (t, signal) => this.sentStep(t, signal),
  };

  /** Start the timer; resumes every non-terminal transfer (expired leases are reclaimed). */
  start(): void {
    if (this.#timer) return;
    this.#stopped = false;
    this.#timer = setInterval(() => this.kick(), this.opts.pollMs);
    this.#timer.unref();
    this.kick();
  }

  /** Claim work soon (after new work, or a finished transfer freed a slot); passes never overlap. */
  kick(): void {
    if (this.#stopped) return;
    if (this.#filling) {
      this.#again = true;
      return;
    }
    this.#filling = this.fill()
      .catch((e: unknown) => this.opts.log('error', 'transfer pipeline pass failed', { err: String(e) }))
      .finally(() => {
        this.#filling = undefined;
        if (this.#again) {
          this.#again = false;
          this.kick();
        }
      });
  }

  /**
   * Stop claiming, abort the running steps (their ceremonies are aborted at the signers) and wait
   * for them; their leases are released, so another process resumes them at once.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#filling;
    for (const f of this.#inFlight.values()) f.ac.abort(new Error('transfer pipeline stopping'));
    await Promise.all([...this.#inFlight.values()].map((f) => f.done));
  }

  /**
   * Stop as a crashed process would (tests of lease takeovers): no claim, renewal, result write or
   * release any more; the running steps are abandoned and their leases left to run out.
   */
  async abandon(): Promise<void> {
    this.#crashed = true;
    await this.stop();
  }

  /** One pass, awaited (tests call it directly): expiry, chain checks, then every claimable transfer until none is left. */
  async tick(): Promise<void> {
    await this.expire();
    await this.markChainUnavailable();
    for (let i = 0; i < 1000; i++) {
      await this.#filling;
      await this.claimAll();
      if (this.#inFlight.size === 0) return;
      await Promise.race([...this.#inFlight.values()].map((f) => f.done));
    }
  }

  /** Timer / kick pass: expiry, chain checks, claims up to the concurrency. */
  private async fill(): Promise<void> {
    await this.expire();
    await this.markChainUnavailable();
    await this.claimAll();
  }

  /** Claim transfers while a slot is free; each runs on its own and frees its slot when done. */
  private async claimAll(): Promise<void> {
    while (!this.#crashed && this.#inFlight.size < Math.max(1, this.opts.concurrency)) {
      const t = await this.claim();
      if (t === undefined) return;
      const ac = new AbortController();
      const entry = { ac, done: Promise.resolve() };
      this.#inFlight.set(t.transfer_id, entry);
      entry.done = this.run(t, ac).finally(() => {
        this.#inFlight.delete(t.transfer_id);
        if (!this.#stopped) this.kick();
      });
    }
  }

  /** Approval windows that elapsed: PENDING_APPROVAL → EXPIRED (APPROVAL_EXPIRED); a bump's → bump FAILED. */
  async expire(): Promise<number> {
    const now = this.clock();
    const ids = await this.db.query<{ transfer_id: string }>(
      `SELECT transfer_id FROM transfers WHERE status = 'PENDING_APPROVAL' AND approval_deadline <= $1`,
      [now],
    );
    for (const { transfer_id } of ids) {
      await this.db.tx(async (q) => {
        const t = await loadTransfer(q, transfer_id, true);
        if (t?.status === 'PENDING_APPROVAL' && t.approval_deadline && t.approval_deadline <= now) {
          await transition(q, this.clock, transfer_id, 'EXPIRED', 'APPROVAL_EXPIRED');
        }
      });
      await this.service.withdrawRequests(transfer_id);
    }
    const bumps = await this.db.query<{ transfer_id: string }>(
      `SELECT transfer_id FROM transfers WHERE status = 'SENT' AND fee_bump->>'status' = 'PENDING_APPROVAL'
         AND (fee_bump->>'deadline')::timestamptz <= $1`,
      [now],
    );
    for (const { transfer_id } of bumps) {
      await this.db.tx(async (q) => {
        const t = await loadTransfer(q, transfer_id, true);
        if (t?.fee_bump?.status !== 'PENDING_APPROVAL') return;
        const next: FeeBump = { ...t.fee_bump, status: 'FAILED', sub_status: 'APPROVAL_EXPIRED' };
        await transition(q, this.clock, transfer_id, 'SENT', t.sub_status, { fee_bump: JSON.stringify(next) });
      });
      await this.service.withdrawRequests(transfer_id);
    }
    return ids.length + bumps.length;
  }

  /**
   * Transfers waiting for a chain that has no node configured here (no adapter): PENDING_SIGNATURE
   * or READY_TO_SEND get sub_status CHAIN_UNAVAILABLE and an `error` saying so (one
   * TRANSFER_UPDATED event and one warning per transfer). They keep their status — the pipeline
   * does not claim them, so they stay cancellable — and go on once a coordinator with a node for
   * the chain runs (signing and broadcast clear the sub_status). Returns how many were marked.
   */
  async markChainUnavailable(): Promise<number> {
    const ids = await this.db.query<{ transfer_id: string; blockchain: string }>(
      `SELECT transfer_id, intent->>'blockchain' AS blockchain FROM transfers
       WHERE status IN ('PENDING_SIGNATURE', 'READY_TO_SEND') AND sub_status IS NULL
         AND NOT (intent->>'blockchain' = ANY($1::text[]))`,
      [this.chains.keys()],
    );
    for (const { transfer_id, blockchain } of ids) {
      const error = `CHAIN_UNAVAILABLE: no node is configured for ${blockchain}`;
      const marked = await this.db.tx(async (q) => {
        const t = await loadTransfer(q, transfer_id, true);
        if (t === undefined || t.sub_status !== null || !['PENDING_SIGNATURE', 'READY_TO_SEND'].includes(t.status))
          return false;
        if (this.chains.adapter(t.intent.blockchain) !== undefined) return false;
        await transition(q, this.clock, transfer_id, t.status, 'CHAIN_UNAVAILABLE', { error });
        return true;
      });
      if (marked) this.opts.log('warn', 'transfer waits for a chain node', { transfer_id, blockchain, err: error });
    }
    return ids.length;
  }

  private async claim(): Promise<TransferRow | undefined> {
    const now = this.clock();
    return this.db.tx(async (q) => {
      // transfers of chains without an adapter are left alone (markChainUnavailable says why)
      const c = await q.query<{ transfer_id: string }>(
        `SELECT transfer_id FROM transfers
         WHERE (status IN ('PENDING_SIGNATURE', 'READY_TO_SEND') OR (status = 'SENT' AND delivered_at IS NULL))
           AND (lease_until IS NULL OR lease_until <= $1)
           AND intent->>'blockchain' = ANY($2::text[])
           AND NOT (transfer_id = ANY($3::uuid[]))
         ORDER BY updated_at, transfer_id LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [now, this.chains.keys(), [...this.#inFlight.keys()]],
      );
      const id = c[0]?.transfer_id;
      if (id === undefined) return undefined;
      const prev = await q.query<{ lease_owner: string | null }>(
        'SELECT lease_owner FROM transfers WHERE transfer_id = $1',
        [id],
      );
      const from = prev[0]?.lease_owner;
      if (from && from !== this.owner)
        this.opts.log('warn', 'transfer taken over from a lease that ran out', {
          transfer_id: id,
          previous_owner: from,
        });
      await q.query('UPDATE transfers SET lease_until = $2, lease_owner = $3 WHERE transfer_id = $1', [
        id,
        new Date(now.getTime() + this.opts.leaseMs),
        this.owner,
      ]);
      return loadTransfer(q, id);
    });
  }

  /** Release a lease this process holds: claimable again after `retryInMs` (null: at once). */
  private async release(transferId: string, retryInMs: number | null): Promise<void> {
    if (this.#crashed) return;
    await this.db.query(
      'UPDATE transfers SET lease_until = $2, lease_owner = NULL WHERE transfer_id = $1 AND lease_owner = $3',
      [transferId, retryInMs === null ? null : new Date(this.clock().getTime() + retryInMs), this.owner],
    );
  }

  /** Renew the lease; false when this process no longer holds it. */
  private async renew(transferId: string): Promise<boolean> {
    if (this.#crashed) return false;
    const r = await this.db.query(
      'UPDATE transfers SET lease_until = $2 WHERE transfer_id = $1 AND lease_owner = $3 RETURNING 1',
      [transferId, new Date(this.clock().getTime() + this.opts.leaseMs), this.owner],
    );
    return r.length > 0;
  }

  /**
   * `f` in one transaction with the transfer locked, if this process still holds its lease (and did
   * not crash); else nothing is written and the result is undefined.
   */
  private async owned<T>(
    transferId: string,
    f: (q: Queryable, cur: TransferRow) => Promise<T>,
  ): Promise<T | undefined> {
    if (this.#crashed) return undefined;
    return this.db.tx(async (q) => {
      const cur = await loadTransfer(q, transferId, true);
      if (cur === undefined || cur.lease_owner !== this.owner) return undefined;
      return f(q, cur);
    });
  }

  /** Run the steps of a claimed transfer under a renewed lease, then release it. */
  private async run(t: TransferRow, ac: AbortController): Promise<void> {
    const heartbeat = setInterval(
      () => {
        this.renew(t.transfer_id).then(
          (held) => {
            if (held || ac.signal.aborted) return;
            this.opts.log('warn', 'transfer lease lost; step abandoned', { transfer_id: t.transfer_id });
            ac.abort(new Error('transfer lease lost'));
          },
          (e: unknown) =>
            this.opts.log('warn', 'transfer lease not renewed', { transfer_id: t.transfer_id, err: String(e) }),
        );
      },
      Math.max(50, Math.floor(this.opts.leaseMs / 3)),
    );
    heartbeat.unref();
    let release: number | null | undefined = null;
    try {
      let row: TransferRow | undefined = t;
      for (let i = 0; i < 8 && row !== undefined; i++) {
        const step: Step | undefined = this.steps[row.status];
        if (step === undefined || ac.signal.aborted) break;
        const r: StepResult = await step(row, ac.signal);
        if ('release' in r) {
          release = r.release;
          break;
        }
        row = r.row;
        if (row === undefined) release = undefined; // not ours any more: nothing to release
      }
    } catch (e) {
      // node or signer transport trouble: retry later, keep the state
      this.opts.log('warn', 'transfer step failed; will retry', { transfer_id: t.transfer_id, err: String(e) });
      release = Math.max(this.opts.pollMs, 5000);
    } finally {
      clearInterval(heartbeat);
    }
    if (release !== undefined) await this.release(t.transfer_id, release).catch(() => {});
  }

  private adapterOf(t: TransferRow) {
    const a = this.chains.adapter(t.intent.blockchain);
    if (a === undefined) throw new Error(`CHAIN_UNAVAILABLE: no node configured for ${t.intent.blockchain}`);
    return a;
  }

  private async sourceKey(t: TransferRow): Promise<Uint8Array> {
    const r = await this.db.query<{ public_key: string }>(
      'SELECT public_key FROM addresses WHERE wallet_id = $1 AND blockchain_id = $2 AND address = $3',
      [t.wallet_id, t.blockchain_id, t.source_address],
    );
    if (r[0] === undefined) throw new Error('source address not found');
    return unhex(r[0].public_key);
  }

  /**
   * Ask the signers for the signatures of `unsigned`, with the evidence of approval round `round`:
   * `intent` is the intent that round's approvals are over (the transfer's, or a fee bump round's
   * raised-cap intent). The signing set avoids parties known to be unavailable when the key has
   * enough others; a device known offline is not invited (the attempt is a retry naming it).
   */
  private async attemptSignature(
    t: TransferRow,
    unsigned: UnsignedTransfer,
    round: number,
    intent: TransferIntent,
    signal: AbortSignal,
  ): Promise<SignOutcome> {
    // a replica without signing services: retried later without a state change (a replica with them takes it)
    if (!this.gateway) throw new Error('SIGNERS_UNAVAILABLE: no signer gateway configured');
    const gateway = this.gateway;
    const mk = (
      await this.db.query<{
        parties: unknown;
        threshold: number;
        secp256k1_public_key: string;
        secp256k1_chain_code: string;
      }>(
        'SELECT parties, threshold, secp256k1_public_key, secp256k1_chain_code FROM master_keys WHERE master_key_id = $1',
        [t.master_key_id],
      )
    )[0];
    if (mk === undefined) throw new Error('master key not found');
    const all = (Array.isArray(mk.parties) ? mk.parties : []) as SignParty[];
    const now = Date.now();
    const known = new Map<string, 'up' | 'down' | undefined>();
    for (const p of all) known.set(partyKey(p), await gateway.availability?.(p).catch(() => undefined));
    // a party a recent ceremony found unavailable is avoided even while its connection is up: a
    // hung or hostile signer keeps its connection open and answers nothing
    const unavailable = new Set(
      all.map(partyKey).filter((k) => known.get(k) === 'down' || (this.#unavailable.get(k) ?? 0) > now),
    );
    const parties = signingParties(mk.parties, mk.threshold, unavailable);
    const offline = parties.filter((p) => p.kind === 'device' && known.get(partyKey(p)) === 'down');
    if (offline.length > 0)
      return {
        kind: 'retry',
        missing: await this.describeMissing(offline.map((party) => ({ party, error: 'offline' }))),
      };
    const [policy, approvals] = await Promise.all([
      this.service.policyOf(this.db, t),
      this.service.approvalsOf(this.db, t.transfer_id, round),
    ]);
    const paths = new Set(unsigned.digests.map((d) => d.key.path.join('/')));
    if (paths.size !== 1) throw new Error('transactions spending from several keys are not supported yet');
    const res = await gateway.sign({
      keyId: t.intent.key_id,
      algorithm: t.intent.key_algorithm,
      parties,
      derivationPath: [...t.intent.derivation_path],
      digests: unsigned.digests.map((d) => d.digest),
      evidence: { intent, policy, approvals, chainContext: JSON.stringify(unsigned.context) },
      deadline: new Date(Date.now() + this.opts.signDeadlineMs),
      signal,
      // ECDSA: the gateway combines the signers' shares itself and checks them under this key
      ...(t.intent.key_algorithm === 'SECP256K1_ECDSA' &&
      /^[0-9a-f]{66}$/i.test(mk.secp256k1_public_key) &&
      /^[0-9a-f]{64}$/i.test(mk.secp256k1_chain_code)
        ? { ecdsaKey: { publicKey: unhex(mk.secp256k1_public_key), chainCode: unhex(mk.secp256k1_chain_code) } }
        : {}),
    });
    if (res.ok) {
      for (const p of parties) this.#unavailable.delete(partyKey(p));
      this.opts.log('info', 'transfer signed', {
        transfer_id: t.transfer_id,
        // the ECDSA fast path (the gateway combined the signers' shares) or the signers' own results
        combined_by: res.combinedByCoordinator ? 'coordinator' : 'signers',
        pooled_presignature: res.presignatureId !== undefined,
      });
      return { kind: 'signed', res };
    }
    if (res.reason === 'REFUSED' || (res.reason === 'ABORTED' && res.culprits.length > 0))
      return { kind: 'failed', res };
    if (signal.aborted) return { kind: 'abandoned' };
    // worth another attempt: remember who was missing, so the next set avoids them if it can —
    // counted from now (the ceremony may have taken its whole deadline), past the next retry
    const until = Date.now() + 2 * Math.max(this.opts.retryMaxMs, this.opts.pollMs);
    if (res.reason === 'UNAVAILABLE') for (const u of res.unavailable) this.#unavailable.set(partyKey(u.party), until);
    // a party whose abort (no blame) ended the ceremony: left out of the next set when possible
    if (res.reason === 'ABORTED' && res.abortedBy) this.#unavailable.set(partyKey(res.abortedBy), until);
    const missing =
      res.reason === 'UNAVAILABLE'
        ? res.unavailable.length > 0
          ? await this.describeMissing(res.unavailable)
          : res.message
        : res.reason === 'DEADLINE_EXCEEDED'
          ? `no signature within the ceremony deadline (signing set: ${(await this.describeParties(parties)).join(', ')})`
          : `ceremony aborted without a culprit: ${res.message}`;
    this.opts.log('warn', 'transfer signing will be retried', { transfer_id: t.transfer_id, err: missing });
    return { kind: 'retry', missing };
  }

  /** `server <name>` (its id when the name is not known) / `device <id>` for each party. */
  private async describeParties(parties: readonly SignParty[]): Promise<string[]> {
    const ids = parties.filter((p) => p.kind === 'server').map((p) => p.id);
    const names = new Map<string, string>();
    if (ids.length > 0) {
      const rows = await this.db
        .query<{ signer_id: string; name: string }>(
          'SELECT signer_id::text AS signer_id, name FROM server_signers WHERE signer_id::text = ANY($1::text[])',
          [ids.map((i) => i.toLowerCase())],
        )
        .catch(() => []);
      for (const r of rows) names.set(r.signer_id.toLowerCase(), r.name);
    }
    return parties.map((p) => `${p.kind} ${p.kind === 'server' ? (names.get(p.id.toLowerCase()) ?? p.id) : p.id}`);
  }

  /** `server signer-2 unreachable (<error>); device d-… offline` */
  private async describeMissing(list: readonly { party: SignParty; error: string }[]): Promise<string> {
    const names = await this.describeParties(list.map((u) => u.party));
    return list
      .map((u, i) => {
        const what = u.party.kind === 'server' ? 'unreachable' : 'offline';
        const why = u.error && u.error !== what ? ` (${u.error.slice(0, 200)})` : '';
        return `${names[i]} ${what}${why}`;
      })
      .join('; ');
  }

  /** Retry delay of a transfer waiting for signers (capped, jittered), within what is left of its window. */
  private retryDelay(key: string, windowEnd: number): number {
    let b = this.#backoffs.get(key);
    if (b === undefined) {
      b = new Backoff({
        initialMs: this.opts.retryInitialMs,
        maxMs: Math.max(this.opts.retryInitialMs, this.opts.retryMaxMs),
      });
      this.#backoffs.set(key, b);
    }
    const { delayMs } = b.next();
    return Math.max(this.opts.pollMs, Math.min(delayMs, windowEnd - this.clock().getTime()));
  }

  private signatures(unsigned: UnsignedTransfer, res: Extract<GatewaySignResult, { ok: true }>): ChainSignature[] {
    return res.signatures.map((s, i): ChainSignature => {
      if (unsigned.digests[i]?.scheme === 'schnorr') return { scheme: 'schnorr', signature: s.signature };
      return {
        scheme: 'ecdsa',
        r: BigInt(`0x${hex(s.signature.subarray(0, 32))}`),
        s: BigInt(`0x${hex(s.signature.subarray(32, 64))}`),
        recovery: s.recovery ?? 0,
      };
    });
  }

  /** Refusal (→ REJECTED, refusal code) or identifiable abort (→ FAILED / SIGNING_FAILED) as a terminal transition. */
  private async signingFailed(
    q: Queryable,
    t: TransferRow,
    res: Extract<GatewaySignResult, { reason: 'REFUSED' | 'ABORTED' }>,
  ) {
    if (res.reason === 'REFUSED') {
      const v = await transition(q, this.clock, t.transfer_id, 'REJECTED', res.refusal, {
        error: `refused by ${res.by.kind} ${res.by.id}: ${res.refusal}`,
      });
      if (res.refusal === 'POLICY_SIGNATURE_VERIFICATION_FAILED') {
        await emitEvent(q, this.clock, {
          profileId: t.profile_id,
          type: 'POLICY_SIGNATURE_VERIFICATION_FAILED',
          data: {
            transfer_id: t.transfer_id,
            policy_id: t.policy_id,
            policy_version: t.policy_version,
            refused_by: { kind: res.by.kind, id: res.by.id },
          },
        });
      }
      return v;
    }
    const blamed = res.culprits.map((p) => `${p.kind} ${p.id}`).join(', ');
    return transition(q, this.clock, t.transfer_id, 'FAILED', 'SIGNING_FAILED', {
      error: `aborted, blaming ${blamed}: ${res.message}`,
    });
  }

  readonly #buildLocks = new Map<string, Promise<unknown>>();

  /**
   * Build the unsigned transaction, bring it within the intent's fee cap ({@link capFee}: the one
   * place the cap is checked, after the build and before anything is stored), and store it.
   * Null when the transfer failed: FAILED / SIGNING_FAILED (the chain refused the build) or FAILED /
   * FEE_CAP_EXCEEDED (no transaction within the cap) — in both cases no signer is asked — or when
   * this process no longer holds the transfer's lease (nothing stored).
   */
  private async build(t: TransferRow): Promise<StoredUnsigned | null> {
    const adapter = this.adapterOf(t);
    const def = blockchainByKey(t.intent.blockchain);
    if (def === undefined) throw new Error(`blockchain ${t.intent.blockchain} is not in the directory`);
    const source = { address: t.source_address, publicKey: await this.sourceKey(t), path: t.intent.derivation_path };
    const utxo = def.accountModel === 'utxo';
    let built: UnsignedTransfer;
    try {
      built = await adapter.buildTransfer({
        fields: fieldsOf(t.intent),
        sources: [source],
        // UTXO chains: change goes back to the source address (one key per signing request)
        ...(utxo ? { change: source } : {}),
        feeLevel: 'STANDARD',
      });
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === 'INSUFFICIENT_FUNDS' || code === 'INVALID_TRANSFER' || code === 'INVALID_ADDRESS') {
        await this.owned(t.transfer_id, (q) =>
          transition(q, this.clock, t.transfer_id, 'FAILED', 'SIGNING_FAILED', { error: (e as Error).message }),
        );
        return null;
      }
      throw e;
    }
    const cap = intentCap(t.intent);
    const capped = await capFee(def, adapter, built, cap);
    if (!capped.ok) {
      await this.owned(t.transfer_id, (q) =>
        transition(q, this.clock, t.transfer_id, 'FAILED', FEE_CAP_EXCEEDED, { error: capped.message }),
      );
      this.opts.log('warn', 'transfer failed: no transaction within its fee cap', {
        transfer_id: t.transfer_id,
        err: capped.message,
      });
      return null;
    }
    if (capped.lowered)
      this.opts.log('info', 'transfer fee lowered to its approved cap', {
        transfer_id: t.transfer_id,
        max_fee: nativeAmount(def, capped.unsigned.maxFee),
      });
    built = capped.unsigned;
    // persisted before any signer sees it: a restart or a takeover signs this same transaction.
    // Stored only by the lease holder and only once (a transaction already stored stays the one signed).
    const r = await this.owned(t.transfer_id, async (q, cur) => {
      if (cur.status !== 'PENDING_SIGNATURE') return null;
      if (cur.unsigned !== null) return cur.unsigned as StoredUnsigned;
      const final = def.family === 'ethereum' ? await this.ethereumNonce(q, t, built) : built;
      if (final.maxFee > cap) throw new Error('the nonce step raised the fee above the cap'); // never: it only sets the nonce
      // Ethereum: marked until its first signing request (nonceOrder may still move its nonce)
      const st = {
        ...storeUnsigned(final, cap.toString()),
        ...(def.family === 'ethereum' ? { neverSentToSigners: true } : {}),
      };
      await q.query('UPDATE transfers SET unsigned = $2::jsonb, updated_at = $3 WHERE transfer_id = $1', [
        t.transfer_id,
        JSON.stringify(st),
        this.clock(),
      ]);
      return st;
    });
    return r ?? null;
  }

  /** PENDING_SIGNATURE: build and store the transaction (once), then sign it (→ READY_TO_SEND), or wait and retry. */
  private async signStep(claimed: TransferRow, signal: AbortSignal): Promise<StepResult> {
    let t = claimed;
    const adapter = this.adapterOf(t);
    if (t.sub_status === 'CHAIN_UNAVAILABLE') {
      // the window counts the wait for signers, not for a chain node: it starts now that one is here
      const row = await this.owned(t.transfer_id, async (q, cur) => {
        if (cur.status !== 'PENDING_SIGNATURE' || cur.sub_status !== 'CHAIN_UNAVAILABLE') return cur;
        await transition(q, this.clock, t.transfer_id, 'PENDING_SIGNATURE', null, { error: null });
        await q.query('UPDATE transfers SET signing_since = $2 WHERE transfer_id = $1', [t.transfer_id, this.clock()]);
        return loadTransfer(q, t.transfer_id);
      });
      if (row === undefined || row.status !== 'PENDING_SIGNATURE') return { row };
      t = row;
    }
    const windowEnd = (t.signing_since ?? t.updated_at).getTime() + this.opts.signingWindowMs;
    if (this.clock().getTime() >= windowEnd) return this.windowExpired(t);
    let stored = t.unsigned as StoredUnsigned | null;
    if (stored === null) {
      // builds of one chain are serialised in this process: UTXO selection excludes the outputs of
      // transfers already built, which must be stored before the next selection
      const prev = this.#buildLocks.get(t.intent.blockchain) ?? Promise.resolve();
      const build = prev.then(() => this.build(t));
      this.#buildLocks.set(
        t.intent.blockchain,
        build.catch(() => {}),
      );
      stored = await build;
      if (stored === null) return { release: null }; // failed (terminal), or no longer ours (release does nothing)
    }
    if (blockchainByKey(t.intent.blockchain)?.family === 'ethereum') {
      const ordered = await this.nonceOrder(t);
      if (ordered === 'wait') return { release: Math.max(this.opts.pollMs, this.opts.retryInitialMs) };
      if (ordered === undefined) return { row: undefined };
      stored = ordered;
    }
    const unsigned = loadUnsigned(stored, fieldsOf(t.intent));
    const out = await this.attemptSignature(t, unsigned, 0, t.intent, signal);
    if (out.kind === 'abandoned') return { release: null };
    if (out.kind === 'retry') return this.waitForSigners(t, out.missing, windowEnd);
    const row = await this.owned(t.transfer_id, async (q, cur) => {
      if (cur.status !== 'PENDING_SIGNATURE') return cur; // cancelled meanwhile
      if (out.kind === 'failed') {
        await this.signingFailed(q, t, out.res);
        return loadTransfer(q, t.transfer_id);
      }
      let signed: SignedTransfer;
      try {
        signed = adapter.attachSignatures(unsigned, this.signatures(unsigned, out.res));
      } catch (e) {
        await transition(q, this.clock, t.transfer_id, 'FAILED', 'SIGNING_FAILED', { error: (e as Error).message });
        return loadTransfer(q, t.transfer_id);
      }
      // the raw transaction and its hash are stored BEFORE the broadcast
      await transition(q, this.clock, t.transfer_id, 'READY_TO_SEND', null, {
        error: null,
        signed_tx: hex(signed.rawTx),
        tx_hash: signed.txid,
        tx_hashes: JSON.stringify([...cur.tx_hashes, signed.txid]),
      });
      return loadTransfer(q, t.transfer_id);
    });
    this.#backoffs.delete(t.transfer_id);
    return { row };
  }

  /**
   * Signers missing: PENDING_SIGNATURE / WAITING_FOR_SIGNERS with `error` naming them (one
   * TRANSFER_UPDATED on entering the state; later retries only refresh `error`), retried after a
   * backoff — or FAILED / SIGNING_WINDOW_EXPIRED once the window is over.
   */
  private async waitForSigners(t: TransferRow, missing: string, windowEnd: number): Promise<StepResult> {
    if (this.clock().getTime() >= windowEnd) return this.windowExpired(t, missing);
    const error = `${WAITING_FOR_SIGNERS}: ${missing}`;
    const row = await this.owned(t.transfer_id, async (q, cur) => {
      if (cur.status !== 'PENDING_SIGNATURE') return cur;
      if (cur.sub_status !== WAITING_FOR_SIGNERS) {
        await transition(q, this.clock, t.transfer_id, 'PENDING_SIGNATURE', WAITING_FOR_SIGNERS, { error });
        this.opts.log('warn', 'transfer waits for its signers', { transfer_id: t.transfer_id, err: error });
      } else if (cur.error !== error) {
        await q.query('UPDATE transfers SET error = $2 WHERE transfer_id = $1', [t.transfer_id, error]);
      }
      return cur;
    });
    if (row === undefined) return { row: undefined };
    return { release: this.retryDelay(t.transfer_id, windowEnd) };
  }

  /** The signing window is over: FAILED / SIGNING_WINDOW_EXPIRED, saying what was missing. */
  private async windowExpired(t: TransferRow, missing?: string): Promise<StepResult> {
    this.#backoffs.delete(t.transfer_id);
    const row = await this.owned(t.transfer_id, async (q, cur) => {
      if (cur.status !== 'PENDING_SIGNATURE') return cur;
      const last =
        missing ??
        (cur.sub_status === WAITING_FOR_SIGNERS && cur.error
          ? cur.error.slice(WAITING_FOR_SIGNERS.length + 2)
          : undefined);
      const error = `${SIGNING_WINDOW_EXPIRED}: no signature within ${Math.round(this.opts.signingWindowMs / 1000)} s${last ? `; ${last}` : ''}`;
      await transition(q, this.clock, t.transfer_id, 'FAILED', SIGNING_WINDOW_EXPIRED, { error });
      this.opts.log('warn', 'transfer failed: signing window over', { transfer_id: t.transfer_id, err: error });
      return loadTransfer(q, t.transfer_id);
    });
    return { row };
  }

  /**
   * The nonce of a new Ethereum transaction ({@link ethereumNonce}: the lowest ≥ the node's pending
   * count not held by a live transaction of the sender), replacing the adapter's (its in-process
   * reservations are lost on restart and keep the nonces of failed transfers as gaps). Rebuilds the
   * digests for that nonce. Runs in the transaction that stores the unsigned transaction.
   */
  private async ethereumNonce(q: Queryable, t: TransferRow, built: UnsignedTransfer): Promise<UnsignedTransfer> {
    const adapter = this.adapterOf(t) as unknown as { client: NonceNode };
    const nonce = await ethereumNonce(q, adapter.client, {
      transferId: t.transfer_id,
      sourceAddress: t.source_address,
      blockchainId: t.blockchain_id,
    });
    const context = { ...(built.context as EthereumContext), nonce };
    // `unsignedTx` of the built one has the old nonce: attachSignatures rebuilds from fields + context
    return {
      ...built,
      context,
      unsignedTx: new Uint8Array(0),
      digests: recomputeEthereumDigests(built.fields, context),
    };
  }

  /**
   * Ethereum: the transactions of one address go to the signers in nonce order, and one never sent
   * to a signer takes the lowest nonce nobody holds. A transaction whose nonce a transfer that ended
   * unsigned left behind (its signing window over, a refusal) would never be mined: the transfer
   * would stay SENT, undelivered, and block every later transaction of the address.
   * - `'wait'`: another transfer of the address holds a lower nonce and is not signed yet (its
   *   signers may never come: this one must not be signed past it).
   * - Else, the first time only (the stored transaction carries `neverSentToSigners`, set when its
   *   nonce was chosen), the nonce moves to the lowest free one ({@link ethereumNonce}), and the
   *   mark is removed — both stored before any signer sees
   *   it. Never after: a transaction that a signer may have signed keeps its nonce (its signers'
   *   ledgers refuse another for the transfer anyway).
   * @returns the stored transaction to sign; undefined when this process no longer holds the lease
   *   or the transfer left PENDING_SIGNATURE
   */
  private async nonceOrder(t: TransferRow): Promise<StoredUnsigned | 'wait' | undefined> {
    const r = await this.owned(t.transfer_id, async (q, cur) => {
      if (cur.status !== 'PENDING_SIGNATURE' || cur.unsigned === null) return undefined;
      await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
        `custodian.eth-nonce:${t.source_address.toLowerCase()}`,
      ]);
      const s = cur.unsigned as StoredUnsigned & { neverSentToSigners?: boolean };
      const mine = Number((s.context as unknown as EthereumContext).nonce);
      const others = await q.query<{ n: number; status: TransferStatus }>(
        `SELECT (unsigned->'context'->>'nonce')::int AS n, status FROM transfers
         WHERE source_address = $1 AND blockchain_id = $2 AND status IN ('PENDING_SIGNATURE', 'READY_TO_SEND')
           AND unsigned IS NOT NULL AND transfer_id <> $3`,
        [t.source_address, t.blockchain_id, t.transfer_id],
      );
      if (others.some((o) => o.n < mine && o.status === 'PENDING_SIGNATURE')) return 'wait' as const;
      if (s.neverSentToSigners !== true) return s;
      // the lowest free nonce, SENT-but-unmined transactions counted as held (eth-nonce.ts)
      const adapter = this.adapterOf(t) as unknown as { client: NonceNode };
      const free = await ethereumNonce(q, adapter.client, {
        transferId: t.transfer_id,
        sourceAddress: t.source_address,
        blockchainId: t.blockchain_id,
      });
      const { neverSentToSigners: _n, ...base } = s;
      let next: StoredUnsigned = base;
      if (free !== mine) {
        const u = loadUnsigned(base, fieldsOf(t.intent));
        const context = { ...(u.context as EthereumContext), nonce: free };
        next = storeUnsigned(
          { ...u, context, unsignedTx: new Uint8Array(0), digests: recomputeEthereumDigests(u.fields, context) },
          base.approvedMaxFee,
        );
        this.opts.log('info', 'transfer moved to a nonce left free before its first signing request', {
          transfer_id: t.transfer_id,
          from: mine,
          to: free,
        });
      }
      await q.query('UPDATE transfers SET unsigned = $2::jsonb WHERE transfer_id = $1', [
        t.transfer_id,
        JSON.stringify(next),
      ]);
      return next;
    });
    return r;
  }

  private async send(
    t: TransferRow,
    rawHex: string,
    txid: string,
  ): Promise<{ ok: true } | { ok: false; error: string }> {
    const adapter = this.adapterOf(t);
    const known = await this.chains.lookup(t.intent.blockchain, txid);
    if (known.state !== 'unknown') return { ok: true }; // broadcast before a restart: never again
    try {
      await adapter.broadcast({ chain: t.intent.blockchain, rawTx: unhex(rawHex), txid });
      return { ok: true };
    } catch (e) {
      if (!(e instanceof BroadcastError)) throw e;
      const again = await this.chains.lookup(t.intent.blockchain, txid);
      if (again.state !== 'unknown') return { ok: true };
      // the node's own words (e.g. "nonce too low"), logged and stored in the transfer's `error`
      const ctx = (t.unsigned as StoredUnsigned | null)?.context as { nonce?: unknown } | null | undefined;
      this.opts.log('warn', 'broadcast refused by the node', {
        transfer_id: t.transfer_id,
        tx_hash: txid,
        ...(typeof ctx?.nonce === 'number' ? { nonce: ctx.nonce } : {}),
        err: e.message,
      });
      return { ok: false, error: e.message };
    }
  }

  /** READY_TO_SEND: broadcast the stored transaction (unless the node knows it) → SENT, or FAILED / BROADCAST_FAILED. */
  private async broadcastStep(t: TransferRow, _signal: AbortSignal): Promise<StepResult> {
    if (t.signed_tx === null || t.tx_hash === null) throw new Error('READY_TO_SEND without a signed transaction');
    const r = await this.send(t, t.signed_tx, t.tx_hash);
    const row = await this.owned(t.transfer_id, async (q, cur) => {
      if (cur.status !== 'READY_TO_SEND') return cur;
      if (r.ok) await transition(q, this.clock, t.transfer_id, 'SENT', null, { sent_at: this.clock(), error: null });
      else await transition(q, this.clock, t.transfer_id, 'FAILED', 'BROADCAST_FAILED', { error: r.error });
      return loadTransfer(q, t.transfer_id);
    });
    return { row };
  }

  /**
   * SENT: a fee bump to sign or broadcast, then the confirmation follow-up. With a bump to sign
   * the confirmations are looked at first: a transfer already confirmed is delivered (a bump waiting
   * for its signers never holds that back) and its bump, moot, ends FAILED / ALREADY_CONFIRMED
   * without a replacement being signed.
   */
  private async sentStep(t: TransferRow, signal: AbortSignal): Promise<StepResult> {
    let row: TransferRow | undefined = t;
    if (row.fee_bump?.status === 'PENDING_SIGNATURE' && row.delivered_at === null && (await this.confirmStep(row))) {
      const done = await this.owned(t.transfer_id, async (q, cur) => {
        if (cur.fee_bump?.status !== 'PENDING_SIGNATURE') return cur;
        this.#backoffs.delete(`${t.transfer_id}/bump/${cur.fee_bump.round}`);
        const { sub_status: _s, error: _e, ...base } = cur.fee_bump;
        await transition(q, this.clock, t.transfer_id, 'SENT', cur.sub_status, {
          fee_bump: JSON.stringify({
            ...base,
            status: 'FAILED',
            sub_status: ALREADY_CONFIRMED,
            error: `${ALREADY_CONFIRMED}: the transfer's transaction was confirmed before the replacement was signed`,
          }),
        });
        return loadTransfer(q, t.transfer_id);
      });
      return done === undefined ? { row: undefined } : { release: null };
    }
    if (row.fee_bump?.status === 'PENDING_SIGNATURE') {
      const r = await this.bumpSignStep(row, signal);
      if ('release' in r) return r;
      row = r.row;
    }
    if (row?.fee_bump?.status === 'SIGNED') row = await this.bumpBroadcastStep(row);
    if (row === undefined) return { row: undefined };
    if (row.status !== 'SENT' || row.delivered_at !== null) return { release: null };
    return { release: (await this.confirmStep(row)) ? null : this.opts.confirmationRecheckMs };
  }

  /** A fee bump's replacement: build (once) and sign it, with the same waiting rules as {@link signStep}. */
  private async bumpSignStep(t: TransferRow, signal: AbortSignal): Promise<StepResult> {
    const adapter = this.adapterOf(t);
    const bump = t.fee_bump as FeeBump;
    // the intent this round's approvals are over (a bump requested before fee caps has none: the transfer's)
    const intent = bump.intent ?? t.intent;
    const since = Date.parse(bump.signing_since ?? bump.requested_at);
    const windowEnd = (Number.isNaN(since) ? this.clock().getTime() : since) + this.opts.signingWindowMs;
    const bumpFailed = (sub: string, status: 'FAILED' | 'REJECTED', error: string) =>
      this.owned(t.transfer_id, async (q, cur) => {
        if (cur.fee_bump?.status !== 'PENDING_SIGNATURE') return cur;
        await transition(q, this.clock, t.transfer_id, 'SENT', cur.sub_status, {
          fee_bump: JSON.stringify({ ...cur.fee_bump, status, sub_status: sub, error }),
        });
        return loadTransfer(q, t.transfer_id);
      });
    const expired = (missing?: string) =>
      bumpFailed(
        SIGNING_WINDOW_EXPIRED,
        'FAILED',
        `${SIGNING_WINDOW_EXPIRED}: no signature within ${Math.round(this.opts.signingWindowMs / 1000)} s${missing ? `; ${missing}` : ''}`,
      );
    if (this.clock().getTime() >= windowEnd) return { row: await expired() };
    let stored = bump.unsigned ?? null;
    if (stored === null) {
      // a bump requested before replacements were built at request time
      const previous = loadUnsigned(t.unsigned as StoredUnsigned, fieldsOf(t.intent));
      const replacement = await adapter.buildReplacement(previous, bump.priority as FeeLevel);
      const st = storeUnsigned(replacement, intent.max_fee);
      const kept = await this.owned(t.transfer_id, async (q, cur) => {
        if (cur.fee_bump?.status !== 'PENDING_SIGNATURE') return undefined;
        if (cur.fee_bump.unsigned) return cur.fee_bump.unsigned; // stored by an earlier holder: that one is signed
        await q.query('UPDATE transfers SET fee_bump = $2::jsonb WHERE transfer_id = $1', [
          t.transfer_id,
          JSON.stringify({ ...cur.fee_bump, unsigned: st }),
        ]);
        return st;
      });
      if (kept === undefined) return { row: undefined };
      stored = kept;
    }
    if (BigInt(stored.maxFee) > intentCap(intent)) {
      // approved under a lower cap than the replacement pays: never sent to the signers
      const def = blockchainByKey(t.intent.blockchain);
      const error = `${FEE_CAP_EXCEEDED}: the replacement can pay up to ${def ? nativeAmount(def, BigInt(stored.maxFee)) : stored.maxFee}, above the fee cap this round approved`;
      return { row: await bumpFailed(FEE_CAP_EXCEEDED, 'FAILED', error) };
    }
    const unsigned = loadUnsigned(stored, fieldsOf(t.intent));
    const out = await this.attemptSignature(t, unsigned, bump.round, intent, signal);
    if (out.kind === 'abandoned') return { release: null };
    const key = `${t.transfer_id}/bump/${bump.round}`;
    if (out.kind === 'retry') {
      if (this.clock().getTime() >= windowEnd) return { row: await expired(out.missing) };
      const error = `${WAITING_FOR_SIGNERS}: ${out.missing}`;
      const row = await this.owned(t.transfer_id, async (q, cur) => {
        if (cur.fee_bump?.status !== 'PENDING_SIGNATURE') return cur;
        const next = JSON.stringify({ ...cur.fee_bump, sub_status: WAITING_FOR_SIGNERS, error });
        if (cur.fee_bump.sub_status !== WAITING_FOR_SIGNERS)
          await transition(q, this.clock, t.transfer_id, 'SENT', cur.sub_status, { fee_bump: next });
        else if (cur.fee_bump.error !== error)
          await q.query('UPDATE transfers SET fee_bump = $2::jsonb WHERE transfer_id = $1', [t.transfer_id, next]);
        return cur;
      });
      if (row === undefined) return { row: undefined };
      return { release: this.retryDelay(key, windowEnd) };
    }
    this.#backoffs.delete(key);
    if (out.kind === 'failed') {
      const res = out.res;
      return {
        row: await bumpFailed(
          res.reason === 'REFUSED' ? res.refusal : 'SIGNING_FAILED',
          res.reason === 'REFUSED' ? 'REJECTED' : 'FAILED',
          res.reason === 'REFUSED'
            ? `refused by ${res.by.kind} ${res.by.id}: ${res.refusal}`
            : `aborted, blaming ${res.culprits.map((p) => `${p.kind} ${p.id}`).join(', ')}: ${res.message}`,
        ),
      };
    }
    const signed = adapter.attachSignatures(unsigned, this.signatures(unsigned, out.res));
    const row = await this.owned(t.transfer_id, async (q, cur) => {
      if (cur.fee_bump?.status !== 'PENDING_SIGNATURE') return cur;
      const { sub_status: _s, error: _e, ...base } = cur.fee_bump;
      // the replacement becomes the transfer's transaction; the previous hashes stay watched
      await transition(q, this.clock, t.transfer_id, 'SENT', cur.sub_status, {
        fee_bump: JSON.stringify({ ...base, status: 'SIGNED' }),
        // the cap it was approved under goes with it: the next bump starts from that intent
        unsigned: JSON.stringify({ ...stored, approvedMaxFee: intent.max_fee }),
        signed_tx: hex(signed.rawTx),
        tx_hash: signed.txid,
        tx_hashes: JSON.stringify([...cur.tx_hashes, signed.txid]),
      });
      return loadTransfer(q, t.transfer_id);
    });
    return { row };
  }

  private async bumpBroadcastStep(t: TransferRow): Promise<TransferRow | undefined> {
    if (t.signed_tx === null || t.tx_hash === null) throw new Error('fee bump SIGNED without a transaction');
    const r = await this.send(t, t.signed_tx, t.tx_hash);
    return this.owned(t.transfer_id, async (q, cur) => {
      if (cur.fee_bump?.status !== 'SIGNED') return cur;
      const base = cur.fee_bump;
      await transition(q, this.clock, t.transfer_id, 'SENT', cur.sub_status, {
        fee_bump: JSON.stringify(
          r.ok
            ? { ...base, status: 'DONE' }
            : { ...base, status: 'FAILED', sub_status: 'BROADCAST_FAILED', error: r.error },
        ),
      });
      return loadTransfer(q, t.transfer_id);
    });
  }

  /** Mined with the chain's confirmations (any of the transfer's transactions)? Then TRANSFER_DELIVERED (once). */
  private async confirmStep(t: TransferRow): Promise<boolean> {
    const need = this.chains.confirmations(t.intent.blockchain);
    for (const h of [...t.tx_hashes].reverse()) {
      const l = await this.chains.lookup(t.intent.blockchain, h);
      if (l.state === 'mined' && l.confirmations >= need) {
        await this.owned(t.transfer_id, async (q) => {
          const now = this.clock();
          const updated = await q.query(
            'UPDATE transfers SET delivered_at = $2, tx_hash = $3, updated_at = $2 WHERE transfer_id = $1 AND delivered_at IS NULL RETURNING 1',
            [t.transfer_id, now, h],
          );
          if (updated.length === 0) return;
          const row = await loadTransfer(q, t.transfer_id);
          const v = transferView(row!);
          await emitEvent(q, this.clock, {
            profileId: t.profile_id,
            type: 'TRANSFER_DELIVERED',
            data: { ...transferEventData(v), block_number: l.blockNumber, execution_success: l.success },
          });
        });
        return true;
      }
    }
    return false;
  }
}
