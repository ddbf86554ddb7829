/**
 * Transport-agnostic ceremony runner: runs protocol sessions (any {@link ProtocolSpec} of
 * `@custodian/crypto`'s runtime) over a {@link CeremonyTransport}, several at once, each with its
 * own deadline. Incoming bytes are routed by session id, authenticated and decrypted by the wire
 * layer (`@custodian/wire` SessionWire), then fed to the runtime `Party`. Every rejection is logged
 * with its reason and the party when identifiable, and never throws. A session that misses its
 * deadline or aborts resolves with the outcome; its state is dropped (nothing partial is kept).
 *
 * The same runner serves libp2p (server signers, `@custodian/signer-client` host.ts) and the coordinator's
 * WebSocket relay (phones, `@custodian/mobile` device.ts): a transport only moves opaque bytes
 * between peer ids.
 *
 * Longer than 400 lines because one class holds a session's whole life (routing, early messages
 * held for a session not yet started, release holds, deadlines) and reads best in one place.
 */
import {
  type Aborted,
  bytesToHex,
  canonicalEncode,
  type OutgoingMessage,
  Party,
  type ProtocolSpec,
  type RandomSource,
  systemRandom,
} from '@custodian/crypto';
import {
  DEFAULT_LIMITS,
  decodeMessage,
  messageType,
  runSessionId,
  SessionWire,
  sessionAuth,
  type WireLimits,
} from '@custodian/wire';
import { sha256 } from '@noble/hashes/sha2.js';
import type { Logger } from 'pino';
import type { SessionLedger } from './session-ledger.js';

/** Moves opaque envelope bytes to a peer. */
export interface CeremonyTransport {
  /** Send to `peerId`; rejects when the peer cannot be reached (the runner logs it; the deadline handles the rest). */
  send(peerId: string, bytes: Uint8Array): Promise<void>;
}

/** One party of a session. */
export interface SessionParty {
  /** libp2p peer id string. */
  readonly peerId: string;
  /** Ed25519 identity public key (32 bytes) of that peer. */
  readonly publicKey: Uint8Array;
}

/** What a session needs. */
export interface SessionParams<O> {
  /**
   * 32 bytes, unique per protocol run (the caller's id: {@link CeremonyRunner.cancel} takes it). On
   * the wire (Party context, envelopes, broadcast statements, the outcome's `sessionId`) the run uses
   * `runSessionId(sessionId, parties' peer ids in order)` (`@custodian/wire`), binding the order.
   */
  readonly sessionId: Uint8Array;
  // biome-ignore lint/suspicious/noExplicitAny: protocol states are opaque here
  readonly spec: ProtocolSpec<any, O>;
  /** Ordered party set (runtime index = position). */
  readonly parties: readonly SessionParty[];
  readonly self: number;
  /** Own Ed25519 secret key (32 bytes). SECRET. */
  readonly secretKey: Uint8Array;
  /** Absolute deadline, Unix ms. */
  readonly deadline: number;
  readonly rng?: RandomSource;
  /** Short label for logs (e.g. "dkg.ed25519"). */
  readonly label?: string;
  /**
   * The label the session id derives from (ceremonies/context.ts `sessionId(ceremonyId, label)`),
   * reported with a blame so a verifier can tie the evidence to the ceremony. Default: `label`.
   */
  readonly sessionLabel?: string;
  /** Group the session belongs to (the ceremony id, hex), for {@link CeremonyRunner.cancelGroup}. */
  readonly group?: string;
  /**
   * Hold what leaves this party until this settles: messages are computed and sealed at once but
   * handed to the transport, and the output returned, only after it resolves; if it rejects, the
   * session is cancelled and nothing was sent. For a write that must be durable before a share
   * leaves (a pooled presignature's deletion), so the write and the computation overlap.
   */
  readonly releaseAfter?: Promise<unknown>;
  /**
   * Called synchronously after every protocol step that produced messages or the output (i.e.
   * right after the round code ran); when it returns a promise, those messages are handed to the
   * transport, and the output returned, only once it resolves (in order: a later step's messages
   * also wait for an earlier step's promise); if it rejects, the session is cancelled and nothing
   * held is sent. For writes the round code just asked for that must be durable before its result
   * leaves the process (FROST: the nonce commitments recorded by the round that computes the
   * signature share, `StoredNonceLedger.persist`).
   */
  readonly beforeRelease?: () => Promise<unknown> | undefined;
}

/** How a session ended. */
export type SessionOutcome<O> =
  | { readonly status: 'ok'; readonly output: O; readonly transcriptHash: Uint8Array }
  | {
      readonly status: 'aborted';
      readonly aborted: Aborted;
      /** The run's protocol tag (ProtocolSpec.name), wire session id (runSessionId) and session label, for the blame's evidence. */
      readonly protocol?: string;
      readonly sessionId?: Uint8Array;
      readonly sessionLabel?: string;
    }
  | { readonly status: 'deadline'; readonly waitingFor: readonly number[] }
  | { readonly status: 'cancelled'; readonly reason: string };

interface Live {
  readonly params: SessionParams<unknown>;
  /** The session id on the wire: runSessionId(params.sessionId, peer ids in order); 32 bytes. */
  readonly wireSessionId: Uint8Array;
  readonly party: Party<unknown, unknown>;
  readonly wire: SessionWire;
  readonly digests: Set<string>;
  readonly finish: (o: SessionOutcome<unknown>) => void;
  /**
   * What must settle before anything further leaves this party ({@link SessionParams.releaseAfter},
   * then every {@link SessionParams.beforeRelease} promise, chained): true once released, false
   * if one rejected (the session is then cancelled). Undefined: nothing is held.
   */
  hold?: Promise<boolean>;
}

const SignedEnvelope = messageType('custodian.v1.SignedEnvelope');
const Envelope = messageType('custodian.v1.Envelope');

const PENDING_MAX_SESSIONS = 64;
const PENDING_MAX_MESSAGES = 256;
const PENDING_TTL_MS = 60_000;

/** Peek the session id of a SignedEnvelope without authenticating it (for routing only). */
function peekSessionId(bytes: Uint8Array, limits: WireLimits): string | undefined {
  const outer = decodeMessage(SignedEnvelope, bytes, limits);
  if (!outer.ok) return undefined;
  const env = (outer.value as unknown as { envelope?: Uint8Array }).envelope;
  const inner = decodeMessage(Envelope, env, limits);
  if (!inner.ok) return undefined;
  const sid = (inner.value as unknown as { sessionId?: Uint8Array }).sessionId;
  return sid instanceof Uint8Array && sid.length > 0 ? bytesToHex(sid) : undefined;
}

/** Runs protocol sessions over a transport. */
export class CeremonyRunner {
  /** Running sessions by wire session id (hex): incoming envelopes carry it. */
  private readonly sessions = new Map<string, Live>();
  /** Caller's session id (hex) → wire session id (hex), while running. */
  private readonly byCaller = new Map<string, string>();
  private readonly pending = new Map<
    string,
    { at: number; items: { from: string | undefined; bytes: Uint8Array }[] }
  >();
  private readonly finished = new Set<string>();
  /**
   * Groups cancelled (ceremony id → reason), kept for sessions that start after the cancel: an
   * AbortCeremony can overtake a ceremony's first session (the start is still being checked), and
   * such a session must end at once instead of running to its deadline. Bounded (oldest dropped).
   */
  private readonly cancelledGroups = new Map<string, string>();
  /** Sessions whose ledger claim is being written (caller's id → cancel reason once cancelled meanwhile). */
  private readonly starting = new Map<string, string | undefined>();

  /**
   * @param ledger where every session is claimed before it starts (see {@link run}); without one
   *   (tests, tools) nothing stops a second run of a finished session. Signers and phones pass one.
   */
  constructor(
    private readonly transport: CeremonyTransport,
    private readonly log: Logger,
    private readonly limits: WireLimits = DEFAULT_LIMITS,
    private readonly ledger?: SessionLedger,
  ) {}

  /** Number of sessions running. */
  get active(): number {
    return this.sessions.size;
  }

  /**
   * Run one session to its end. Resolves (never rejects for protocol or transport problems) with
   * the output, an identifiable abort, a missed deadline, or a cancellation.
   *
   * With a {@link SessionLedger}, (protocol tag, caller's `sessionId`) is first claimed durably: a
   * session this party has started before — in this process or before a restart, under any party
   * order — is refused (outcome `cancelled`, reason `session already run here`, logged) before any
   * message is computed or sent, so an honest party never signs two different statements for one
   * (protocol, session, round), whatever a coordinator re-sends. Messages arriving meanwhile are
   * held as for a session not yet started. A failed claim write cancels the session, unsent.
   * @throws Error if a session with the same id is already running or starting (a caller bug)
   */
  run<O>(params: SessionParams<O>): Promise<SessionOutcome<O>> {
    const callerSid = bytesToHex(params.sessionId);
    if (this.byCaller.has(callerSid) || this.starting.has(callerSid))
      throw new Error(`session ${callerSid.slice(0, 16)} already running`);
    const wireSessionId = runSessionId(
      params.sessionId,
      params.parties.map((p) => p.peerId),
    );
    const sid = bytesToHex(wireSessionId);
    if (this.sessions.has(sid)) throw new Error(`session ${sid.slice(0, 16)} already running`);
    const label = params.label ?? params.spec.name;
    const log = this.log.child({ session: sid.slice(0, 16), protocol: label });
    const cancelled = params.group === undefined ? undefined : this.cancelledGroups.get(params.group);
    if (cancelled !== undefined) {
      log.warn('session of a cancelled ceremony not started');
      return Promise.resolve({ status: 'cancelled', reason: cancelled });
    }
    const ids = { callerSid, wireSessionId, sid };
    if (!this.ledger) return this.start(params, ids, log);
    this.starting.set(callerSid, undefined);
    const claimed = this.ledger.claim(params.spec.name, params.sessionId);
    return claimed.then(
      (fresh): Promise<SessionOutcome<O>> | SessionOutcome<O> => {
        const reason = this.starting.get(callerSid);
        this.starting.delete(callerSid);
        if (!fresh) {
          log.warn({ code: 'session-reused' }, 'session refused: already run here (never run twice)');
          return { status: 'cancelled', reason: 'session already run here' };
        }
        const group = params.group === undefined ? undefined : this.cancelledGroups.get(params.group);
        if (reason !== undefined || group !== undefined) {
          log.warn('session cancelled before it started');
          return { status: 'cancelled', reason: (reason ?? group) as string };
        }
        return this.start(params, ids, log);
      },
      (e: unknown) => {
        this.starting.delete(callerSid);
        const msg = e instanceof Error ? e.message : String(e);
        log.error({ err: msg }, 'session not started: its ledger claim could not be written');
        return { status: 'cancelled', reason: `session ledger: ${msg}` };
      },
    );
  }

  private start<O>(
    params: SessionParams<O>,
    ids: { readonly callerSid: string; readonly wireSessionId: Uint8Array; readonly sid: string },
    log: Logger,
  ): Promise<SessionOutcome<O>> {
    const { callerSid, wireSessionId, sid } = ids;
    return new Promise<SessionOutcome<O>>((settle) => {
      let timer: NodeJS.Timeout | undefined;
      const hold = params.releaseAfter?.then(
        () => true,
        (e: unknown) => {
          finish({ status: 'cancelled', reason: `not released: ${e instanceof Error ? e.message : String(e)}` });
          return false;
        },
      );
      // an output is returned only once the hold is released (it would reveal this party's share)
      const resolve = (o: SessionOutcome<unknown>) => {
        const held = live.hold;
        if (!held || o.status !== 'ok') return settle(o as SessionOutcome<O>);
        void held.then((ok) => settle((ok ? o : { status: 'cancelled', reason: 'not released' }) as SessionOutcome<O>));
      };
      const finish = (o: SessionOutcome<unknown>) => {
        if (!this.sessions.has(sid)) return;
        this.sessions.delete(sid);
        this.byCaller.delete(callerSid);
        this.finished.add(sid);
        if (this.finished.size > 4096) this.finished.delete(this.finished.values().next().value as string);
        if (timer) clearTimeout(timer);
        if (o.status === 'ok') log.debug('session completed');
        else
          log.warn(
            {
              outcome: o.status,
              // never the evidence: a point-to-point message key opens that message (possibly a share)
              ...(o.status === 'aborted'
                ? {
                    culprits: o.aborted.culprits.map((c) => ({
                      party: c.party,
                      reason: c.reason,
                      check: c.check,
                      round: c.round,
                    })),
                  }
                : {}),
            },
            'session ended without output',
          );
        resolve(o);
      };
      const party = new Party(params.spec, {
        self: params.self,
        n: params.parties.length,
        sessionId: wireSessionId,
        rng: params.rng ?? systemRandom,
        // reliable broadcast with evidence: statements signed with the same identity keys as envelopes
        auth: sessionAuth({
          parties: params.parties.map((p) => p.publicKey),
          self: params.self,
          secretKey: params.secretKey,
        }),
      });
      const wire = new SessionWire({
        sessionId: wireSessionId,
        protocol: params.spec.name,
        rounds: params.spec.rounds.length,
        parties: params.parties.map((p) => p.publicKey),
        self: params.self,
        secretKey: params.secretKey,
        limits: this.limits,
      });
      const live: Live = {
        params: params as SessionParams<unknown>,
        wireSessionId,
        party,
        wire,
        digests: new Set(),
        finish,
        ...(hold ? { hold } : {}),
      };
      this.sessions.set(sid, live);
      this.byCaller.set(callerSid, sid);
      const ms = params.deadline - Date.now();
      timer = setTimeout(
        () => {
          const waitingFor = params.parties.map((_, i) => i).filter((i) => i !== params.self);
          log.warn({ round: party.round }, 'session deadline exceeded');
          finish({ status: 'deadline', waitingFor });
        },
        Math.max(0, ms),
      );
      timer.unref?.();
      log.debug({ parties: params.parties.length, self: params.self }, 'session started');
      try {
        this.handleStep(live, party.start(), log);
      } catch (e) {
        log.error({ err: e instanceof Error ? e.message : String(e) }, 'session failed to start');
        finish({ status: 'cancelled', reason: e instanceof Error ? e.message : 'start failed' });
        return;
      }
      const queued = this.pending.get(sid);
      if (queued) {
        this.pending.delete(sid);
        for (const q of queued.items) this.deliver(q.from, q.bytes);
      }
    });
  }

  /** Cancel a running session by the caller's session id (abort requested by the coordinator, shutdown). */
  cancel(sessionId: Uint8Array, reason: string): void {
    const callerSid = bytesToHex(sessionId);
    if (this.starting.has(callerSid)) this.starting.set(callerSid, reason);
    const sid = this.byCaller.get(callerSid);
    if (sid !== undefined) this.sessions.get(sid)?.finish({ status: 'cancelled', reason });
  }

  /** Cancel every session of a group (a ceremony), and the group's sessions that start later. */
  cancelGroup(group: string, reason: string): number {
    this.cancelledGroups.set(group, reason);
    if (this.cancelledGroups.size > 4096)
      this.cancelledGroups.delete(this.cancelledGroups.keys().next().value as string);
    const hit = [...this.sessions.values()].filter((s) => s.params.group === group);
    for (const s of hit) s.finish({ status: 'cancelled', reason });
    return hit.length;
  }

  /** Cancel every session. */
  cancelAll(reason: string): void {
    for (const k of this.starting.keys()) this.starting.set(k, reason);
    for (const s of [...this.sessions.values()]) s.finish({ status: 'cancelled', reason });
  }

  /**
   * Deliver bytes received from a transport. `fromPeerId` is the transport-authenticated peer (the
   * libp2p Noise identity); undefined when the transport is a relay. Never throws.
   */
  deliver(fromPeerId: string | undefined, bytes: Uint8Array): void {
    try {
      this.deliverUnsafe(fromPeerId, bytes);
    } catch (e) {
      // A bug in a protocol's round code: keep the node alive, log it.
      this.log.error(
        { peer: fromPeerId, err: e instanceof Error ? e.message : String(e) },
        'error while handling a message',
      );
    }
  }

  private deliverUnsafe(fromPeerId: string | undefined, bytes: Uint8Array): void {
    const sid = peekSessionId(bytes, this.limits);
    if (sid === undefined) {
      this.log.warn(
        { peer: fromPeerId, code: 'malformed', size: bytes?.length },
        'message rejected: not a decodable envelope',
      );
      return;
    }
    const live = this.sessions.get(sid);
    if (!live) {
      if (this.finished.has(sid)) {
        this.log.warn(
          { peer: fromPeerId, session: sid.slice(0, 16), code: 'wrong-session' },
          'message rejected: session already finished',
        );
        return;
      }
      this.buffer(sid, fromPeerId, bytes);
      return;
    }
    const log = this.log.child({ session: sid.slice(0, 16), protocol: live.params.label ?? live.params.spec.name });
    const opened = live.wire.open(bytes);
    if (!opened.ok) {
      const r = opened.rejection;
      const peer = r.party !== undefined ? live.params.parties[r.party]?.peerId : undefined;
      log.warn(
        { code: r.code, party: r.party, authenticated: r.authenticated, claimedPeer: peer, transportPeer: fromPeerId },
        `message rejected: ${r.reason}`,
      );
      return;
    }
    const { message, digest } = opened.value;
    const expectedPeer = live.params.parties[message.from]?.peerId;
    if (fromPeerId !== undefined && fromPeerId !== expectedPeer) {
      log.warn(
        { code: 'peer-mismatch', party: message.from, transportPeer: fromPeerId },
        'message rejected: sent over another peer connection than its signer',
      );
      return;
    }
    if (message.kind === 'broadcast') live.digests.add(bytesToHex(digest));
    const step = live.party.receive(message);
    this.handleStep(live, step, log);
  }

  private buffer(sid: string, from: string | undefined, bytes: Uint8Array): void {
    const now = Date.now();
    for (const [k, v] of this.pending) {
      if (now - v.at <= PENDING_TTL_MS) continue;
      this.pending.delete(k);
      this.log.warn(
        { session: k.slice(0, 16), code: 'wrong-session', dropped: v.items.length },
        'buffered messages of a session that never started dropped',
      );
    }
    let q = this.pending.get(sid);
    if (!q) {
      if (this.pending.size >= PENDING_MAX_SESSIONS) {
        this.log.warn({ peer: from, code: 'limit' }, 'message rejected: too many unknown sessions buffered');
        return;
      }
      q = { at: now, items: [] };
      this.pending.set(sid, q);
    }
    if (q.items.length >= PENDING_MAX_MESSAGES) {
      this.log.warn(
        { peer: from, code: 'limit', session: sid.slice(0, 16) },
        'message rejected: buffer for unknown session full',
      );
      return;
    }
    q.items.push({ from, bytes });
    this.log.info(
      { peer: from, session: sid.slice(0, 16), code: 'unknown-session' },
      'message buffered: session not started here (yet)',
    );
  }

  private handleStep(live: Live, step: ReturnType<Party<unknown, unknown>['start']>, log: Logger): void {
    if (step.rejected) {
      const p = step.rejected.from;
      log.warn(
        {
          code: 'runtime',
          party: p,
          round: step.rejected.round,
          peer: p !== undefined ? live.params.parties[p]?.peerId : undefined,
        },
        `message rejected: ${step.rejected.reason}`,
      );
    }
    if (live.params.beforeRelease && (step.messages.length > 0 || live.party.status === 'done')) {
      const durable = live.params.beforeRelease();
      if (durable) {
        const before = live.hold ?? Promise.resolve(true);
        live.hold = before.then((ok) =>
          ok
            ? durable.then(
                () => true,
                (e: unknown) => {
                  live.finish({
                    status: 'cancelled',
                    reason: `not released: ${e instanceof Error ? e.message : String(e)}`,
                  });
                  return false;
                },
              )
            : false,
        );
      }
    }
    for (const m of step.messages) this.send(live, m, log);
    // The runtime reports completion through the party's status (a Step may omit `output`).
    const aborted = step.aborted ?? live.party.aborted;
    if (aborted) {
      const sessionLabel = live.params.sessionLabel ?? live.params.label;
      live.finish({
        status: 'aborted',
        aborted,
        protocol: live.params.spec.name,
        sessionId: live.wireSessionId,
        ...(sessionLabel !== undefined ? { sessionLabel } : {}),
      });
      return;
    }
    if (live.party.status === 'done') {
      const hashes = [...live.digests].sort();
      const transcriptHash = sha256(canonicalEncode(['custodian/v1/transcript', live.params.sessionId, hashes]));
      live.finish({ status: 'ok', output: live.party.output, transcriptHash });
    }
  }

  private send(live: Live, m: OutgoingMessage, log: Logger): void {
    const bytes = live.wire.seal(m);
    const targets =
      m.kind === 'p2p' ? [m.to as number] : live.params.parties.map((_, i) => i).filter((i) => i !== live.params.self);
    if (m.kind === 'broadcast') live.digests.add(bytesToHex(sha256(bytes)));
    if (live.hold) {
      void live.hold.then((ok) => {
        if (ok) this.transmit(live, targets, bytes, log);
      });
      return;
    }
    this.transmit(live, targets, bytes, log);
  }

  private transmit(live: Live, targets: readonly number[], bytes: Uint8Array, log: Logger): void {
    for (const to of targets) {
      const peer = live.params.parties[to]?.peerId as string;
      this.transport.send(peer, bytes).catch((e: unknown) => {
        log.warn({ party: to, peer, err: e instanceof Error ? e.message : String(e) }, 'send failed');
      });
    }
  }
}
