/**
 * The party driver: runs one party of a {@link ProtocolSpec} as a sans-IO state machine.
 *
 * `start()` returns the first messages; each `receive(msg)` validates and stores one incoming
 * message (rejecting wrong session, unknown or unexpected sender, stale or unknown round, wrong kind,
 * wrong receiver and duplicates before any math), buffers messages of future rounds, and when a
 * round is complete runs its pure `process`. Broadcast rounds are made reliable by echo (DESIGN §1):
 * every message of the next round carries the hash of each broadcast this party received; a mismatch
 * aborts naming the sender whose broadcast differs. After a final broadcast round an echo-only round
 * is added before the output is released.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, equalBytes, type RandomSource } from '../bytes.js';
import { type Canonical, canonicalEncode } from '../encoding.js';
import {
  type Aborted,
  type BroadcastAuth,
  type IncomingMessage,
  type Outbox,
  type OutgoingMessage,
  type PartyIndex,
  ProtocolAbort,
  type ProtocolSpec,
  type ReceivedParts,
  type RoundContext,
  type RoundSpec,
} from './types.js';

/** Why an incoming message was not stored. The message is dropped; nothing else changes. */
export interface Rejection {
  readonly reason: string;
  readonly from?: PartyIndex;
  readonly round?: number;
}

/** What happened after `start()` or `receive()`. */
export interface Step<O> {
  /** Messages to send now (possibly none). */
  readonly messages: readonly OutgoingMessage[];
  /** Set once, when the protocol finished. */
  readonly output?: O;
  /** Set once, when the protocol aborted naming culprits. */
  readonly aborted?: Aborted;
  /** Set when the incoming message was rejected. */
  readonly rejected?: Rejection;
}

export type PartyStatus = 'idle' | 'running' | 'done' | 'aborted';

/** Options of one party. */
export interface PartyOptions {
  /** This party's index, 0 ≤ self < n. */
  readonly self: PartyIndex;
  /** Number of parties in the session. */
  readonly n: number;
  /** Session id (≥ 16 bytes), unique per ceremony; messages of other sessions are rejected. */
  readonly sessionId: Uint8Array;
  /** Randomness for this party (injectable; defaults are chosen by the caller). */
  readonly rng: RandomSource;
  /**
   * Signs this party's broadcast statements and checks the others' (reliable broadcast with
   * evidence). Production always sets it (wire layer); without it an echo mismatch names nobody.
   */
  readonly auth?: BroadcastAuth;
}

interface Slot {
  broadcast?: { raw: IncomingMessage; parsed?: unknown };
  p2p?: { raw: IncomingMessage; parsed?: unknown };
}

const ECHO_BODY = null;

/** Echo hash of one broadcast: SHA-256 of the canonical encoding of (tag, session, round, sender, body); 32 bytes. */
export function echoHash(sessionId: Uint8Array, round: number, from: PartyIndex, body: Canonical): Uint8Array {
  return sha256(canonicalEncode(['custodian/echo/v1', sessionId, round, from, body]));
}

/**
 * The bytes a party signs to claim "my broadcast of (protocol, session, round) has echo hash
 * `hash`": the canonical encoding of ('custodian/broadcast-statement/v1', protocol, sessionId,
 * round, sender, hash). Two different validly signed statements of one (protocol, session, round,
 * sender) prove that sender equivocated.
 */
export function broadcastStatementBytes(
  protocol: string,
  sessionId: Uint8Array,
  round: number,
  sender: PartyIndex,
  hash: Uint8Array,
): Uint8Array {
  return canonicalEncode(['custodian/broadcast-statement/v1', protocol, sessionId, round, sender, hash]);
}

function sameMessage(a: IncomingMessage, b: IncomingMessage): boolean {
  if (!equalBytes(canonicalEncode(a.body), canonicalEncode(b.body))) return false;
  const ea = a.echo ?? [];
  const eb = b.echo ?? [];
  return ea.length === eb.length && ea.every((h, i) => equalBytes(h, eb[i] as Uint8Array));
}

/** One party of a protocol run. Not reusable across sessions. */
export class Party<S, O> {
  readonly spec: ProtocolSpec<S, O>;
  readonly ctx: RoundContext;
  private state: S | undefined;
  private current = 0;
  private statusValue: PartyStatus = 'idle';
  private slots = new Map<number, Map<PartyIndex, Slot>>();
  /** Our own broadcast body per round (for echo hashes). */
  private ownBroadcast = new Map<number, Canonical>();
  /** Echo vector for messages sent at round r (hashes of round r−1 broadcasts). */
  private echoFor = new Map<number, Uint8Array[]>();
  private pendingOutput: { value: O } | undefined;
  private result: { output?: O; aborted?: Aborted } = {};

  constructor(spec: ProtocolSpec<S, O>, opts: PartyOptions) {
    if (!Number.isSafeInteger(opts.n) || opts.n < 1) throw new RangeError('n: must be a positive integer');
    if (!Number.isSafeInteger(opts.self) || opts.self < 0 || opts.self >= opts.n) {
      throw new RangeError('self: must be in [0, n)');
    }
    if (!(opts.sessionId instanceof Uint8Array) || opts.sessionId.length < 16) {
      throw new RangeError('sessionId: at least 16 bytes');
    }
    this.spec = spec;
    this.ctx = { self: opts.self, n: opts.n, sessionId: opts.sessionId, rng: opts.rng };
  }

  get status(): PartyStatus {
    return this.statusValue;
  }

  /** The round currently being collected (the echo round is `rounds.length`). */
  get round(): number {
    return this.current;
  }

  /** Output once done. */
  get output(): O | undefined {
    return this.result.output;
  }

  /** Abort outcome once aborted. */
  get aborted(): Aborted | undefined {
    return this.result.aborted;
  }

  private get echoRound(): number {
    return this.spec.rounds.length;
  }

  private roundSpec(r: number): RoundSpec<S, O> | undefined {
    return this.spec.rounds[r];
  }

  /** Expects a broadcast / p2p part in round r? (The echo round has a broadcast part only.) */
  private expects(r: number, kind: 'broadcast' | 'p2p'): boolean {
    if (r === this.echoRound) return kind === 'broadcast' && this.pendingOutput !== undefined;
    const spec = this.roundSpec(r);
    return kind === 'broadcast' ? spec?.broadcast !== undefined : spec?.p2p !== undefined;
  }

  private expectedSenders(r: number): readonly PartyIndex[] {
    const spec = r === this.echoRound ? undefined : this.roundSpec(r);
    const all = Array.from({ length: this.ctx.n }, (_, i) => i).filter((i) => i !== this.ctx.self);
    if (!spec?.senders || this.state === undefined) return all;
    return spec.senders(this.state, this.ctx).filter((i) => i !== this.ctx.self);
  }

  /** Begin: returns round-0 messages. @throws Error if already started */
  start(): Step<O> {
    if (this.statusValue !== 'idle') throw new Error(`${this.spec.name}: already started`);
    this.statusValue = 'running';
    try {
      const { state, send } = this.spec.start(this.ctx);
      this.state = state;
      return { messages: this.emit(0, send) };
    } catch (e) {
      return this.fail(e);
    }
  }

  private emit(round: number, outbox: Outbox): OutgoingMessage[] {
    const out: OutgoingMessage[] = [];
    const echo = this.echoFor.get(round);
    const base = { sessionId: this.ctx.sessionId, round, from: this.ctx.self, ...(echo ? { echo } : {}) };
    if (outbox.broadcast !== undefined) {
      this.ownBroadcast.set(round, outbox.broadcast);
      out.push({ ...base, kind: 'broadcast', body: outbox.broadcast });
    }
    for (const [to, body] of outbox.p2p ?? []) {
      if (to === this.ctx.self) continue;
      out.push({ ...base, kind: 'p2p', to, body });
    }
    return out;
  }

  private fail(e: unknown): Step<O> {
    if (e instanceof ProtocolAbort) {
      this.statusValue = 'aborted';
      this.result = { aborted: { culprits: e.culprits, reason: e.message } };
      this.slots.clear();
      return { messages: [], aborted: this.result.aborted };
    }
    throw e;
  }

  /** Validate, store and (when a round completes) process one incoming message. Never throws for bad input. */
  receive(msg: IncomingMessage): Step<O> {
    const reject = (reason: string): Step<O> => ({
      messages: [],
      rejected: {
        reason,
        ...(typeof msg?.from === 'number' ? { from: msg.from } : {}),
        ...(typeof msg?.round === 'number' ? { round: msg.round } : {}),
      },
    });
    if (this.statusValue !== 'running') return reject(`protocol is ${this.statusValue}`);
    if (typeof msg !== 'object' || msg === null) return reject('not a message');
    if (!(msg.sessionId instanceof Uint8Array) || !equalBytes(msg.sessionId, this.ctx.sessionId)) {
      return reject('wrong session');
    }
    const { from, round, kind } = msg;
    if (!Number.isSafeInteger(from) || from < 0 || from >= this.ctx.n) return reject('unknown sender');
    if (from === this.ctx.self) return reject('message from self');
    if (!Number.isSafeInteger(round) || round < 0 || round > this.echoRound) return reject('unknown round');
    if (round < this.current) return reject('stale round (replay or late duplicate)');
    if (kind !== 'broadcast' && kind !== 'p2p') return reject('unknown kind');
    if (kind === 'p2p' && msg.to !== this.ctx.self) return reject('p2p message not addressed to this party');
    if (kind === 'broadcast' && msg.to !== undefined) return reject('broadcast message with a receiver');
    if (round < this.echoRound && !this.expects(round, kind)) return reject(`round ${round} has no ${kind} part`);
    if (round === this.current && !this.expectedSenders(round).includes(from)) {
      return reject('sender not expected in this round');
    }
    let bySender = this.slots.get(round);
    if (!bySender) {
      bySender = new Map();
      this.slots.set(round, bySender);
    }
    const slot = bySender.get(from) ?? {};
    const existing = slot[kind];
    if (existing) {
      if (sameMessage(existing.raw, msg)) return reject('duplicate message');
      return this.fail(
        new ProtocolAbort({ party: from, reason: `sent two different ${kind} messages in round ${round}` }),
      );
    }
    slot[kind] = { raw: msg };
    bySender.set(from, slot);
    try {
      const messages = this.advance();
      if ((this.statusValue as PartyStatus) === 'done') return { messages, output: this.result.output as O };
      return { messages };
    } catch (e) {
      return this.fail(e);
    }
  }

  /** Parse stored parts of the current round; process it when complete; repeat while possible. */
  private advance(): OutgoingMessage[] {
    const sent: OutgoingMessage[] = [];
    while (this.statusValue === 'running') {
      const r = this.current;
      const senders = this.expectedSenders(r);
      const bySender = this.slots.get(r) ?? new Map<PartyIndex, Slot>();
      // drop buffered messages from parties that turned out not to be senders of this round
      for (const from of bySender.keys()) if (!senders.includes(from)) bySender.delete(from);
      const complete = senders.every((j) => {
        const slot = bySender.get(j);
        if (!slot) return false;
        if (this.expects(r, 'broadcast') && !slot.broadcast) return false;
        if (this.expects(r, 'p2p') && !slot.p2p) return false;
        return true;
      });
      if (!complete) return sent;
      this.checkEcho(r, senders, bySender);
      if (r === this.echoRound) {
        const output = (this.pendingOutput as { value: O }).value;
        this.finish(output);
        return sent;
      }
      const spec = this.roundSpec(r) as RoundSpec<S, O>;
      const state = this.state as S;
      const received = new Map<PartyIndex, ReceivedParts<unknown, unknown>>();
      for (const j of senders) {
        const slot = bySender.get(j) as Slot;
        received.set(j, {
          broadcast: spec.broadcast
            ? this.parse(j, () => spec.broadcast?.(slot.broadcast?.raw.body, j, state))
            : undefined,
          p2p: spec.p2p ? this.parse(j, () => spec.p2p?.(slot.p2p?.raw.body, j, state)) : undefined,
        });
      }
      if (spec.broadcast) this.recordEcho(r, senders, bySender);
      const result = spec.process(state, received, this.ctx);
      this.slots.delete(r);
      this.current = r + 1;
      if (result.output !== undefined || !('state' in result)) {
        const output = result.output as O;
        if (spec.broadcast && this.spec.echoFinalRound !== false) {
          // a final broadcast round: echo it before releasing the output. A round before the last
          // may finish too (later rounds run only on a failure, e.g. presign identification): the
          // party then skips straight to the echo round, carrying this round's echo vector.
          this.pendingOutput = { value: output };
          if (this.current !== this.echoRound) {
            const echo = this.echoFor.get(this.current);
            if (echo) this.echoFor.set(this.echoRound, echo);
            this.current = this.echoRound;
          }
          sent.push(...this.emit(this.echoRound, { broadcast: ECHO_BODY }));
          continue;
        }
        this.finish(output);
        return sent;
      }
      if (this.current >= this.spec.rounds.length) {
        throw new Error(`${this.spec.name}: round ${r} returned a state but no rounds remain`);
      }
      this.state = result.state;
      sent.push(...this.emit(this.current, result.send));
    }
    return sent;
  }

  private finish(output: O): void {
    this.statusValue = 'done';
    this.result = { output };
    this.slots.clear();
    this.state = undefined;
  }

  private parse(from: PartyIndex, fn: () => unknown): unknown {
    try {
      return fn();
    } catch (e) {
      if (e instanceof ProtocolAbort) throw e;
      const why = e instanceof Error ? e.message : String(e);
      throw new ProtocolAbort({ party: from, reason: `malformed message: ${why}` });
    }
  }

  private recordEcho(r: number, senders: readonly PartyIndex[], bySender: Map<PartyIndex, Slot>): void {
    const hashes: Uint8Array[] = Array.from({ length: this.ctx.n }, () => new Uint8Array(0));
    const own = this.ownBroadcast.get(r);
    if (own !== undefined) hashes[this.ctx.self] = echoHash(this.ctx.sessionId, r, this.ctx.self, own);
    for (const j of senders) {
      const body = bySender.get(j)?.broadcast?.raw.body as Canonical;
      hashes[j] = echoHash(this.ctx.sessionId, r, j, body);
    }
    this.echoFor.set(r + 1, hashes);
  }

  private checkEcho(r: number, senders: readonly PartyIndex[], bySender: Map<PartyIndex, Slot>): void {
    const mine = this.echoFor.get(r);
    if (!mine) return;
    for (const k of senders) {
      const slot = bySender.get(k) as Slot;
      for (const part of [slot.broadcast, slot.p2p]) {
        if (!part) continue;
        const theirs = part.raw.echo;
        if (!Array.isArray(theirs) || theirs.length !== this.ctx.n || !theirs.every((h) => h instanceof Uint8Array)) {
          throw new ProtocolAbort({ party: k, reason: `missing or malformed broadcast echo in round ${r}` });
        }
        for (let j = 0; j < this.ctx.n; j++) {
          if (j === k || equalBytes(theirs[j] as Uint8Array, mine[j] as Uint8Array)) continue;
          if (j === this.ctx.self) {
            // k claims a different hash for our own broadcast: we know what we sent, so k lies
            throw new ProtocolAbort({ party: k, reason: `false broadcast echo for party ${j} in round ${r}` });
          }
          throw new ProtocolAbort(
            { party: j, reason: `equivocated broadcast in round ${r - 1} (echo mismatch reported by party ${k})` },
            `broadcast equivocation by party ${j} detected in round ${r} (hash ${bytesToHex(mine[j] as Uint8Array).slice(0, 16)}…)`,
          );
        }
      }
    }
  }
}
