/**
 * The party driver: runs one party of a {@link ProtocolSpec} as a sans-IO state machine.
 *
 * `start()` returns the first messages; each `receive(msg)` validates and stores one incoming
 * message (rejecting wrong session, unknown or unexpected sender, stale or unknown round, wrong kind,
 * wrong receiver and duplicates before any math), buffers messages of future rounds, and when a
 * round is complete runs its pure `process`. Broadcast rounds are made reliable by echo (DESIGN §1):
 * every message of the next round carries the hash of each broadcast this party received. After a
 * final broadcast round an echo-only round is added before the output is released.
 *
 * Reliable broadcast with evidence (docs/protocols.md, issue [blame]): with {@link PartyOptions.auth}
 * every broadcast carries its sender's signature over its statement ({@link broadcastStatementBytes})
 * and every echo vector carries those signatures. An echo mismatch then names whoever the signatures
 * convict: the broadcaster when the echoer holds a second statement it validly signed
 * (`echo.equivocation`), else the echoer (`echo.false`); never a party on another party's word alone.
 * Without `auth` a mismatch about a third party aborts naming nobody.
 *
 * Longer than 400 lines because the collector, the echo checks and the evidence they attach share
 * one state machine and read best together.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, equalBytes, type RandomSource } from '../bytes.js';
import { type Canonical, canonicalEncode } from '../encoding.js';
import {
  type Aborted,
  type BroadcastAuth,
  type Culprit,
  type CulpritEvidence,
  type IncomingMessage,
  type Outbox,
  type OutgoingMessage,
  type PartyIndex,
  ProtocolAbort,
  type ProtocolSpec,
  type ReceivedParts,
  type RoundContext,
  type RoundSpec,
  type SignedStatement,
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

function sameBytesList(a: readonly Uint8Array[] | undefined, b: readonly Uint8Array[] | undefined): boolean {
  const ea = a ?? [];
  const eb = b ?? [];
  return (
    ea.length === eb.length &&
    ea.every((h, i) => h instanceof Uint8Array && eb[i] instanceof Uint8Array && equalBytes(h, eb[i] as Uint8Array))
  );
}

function sameMessage(a: IncomingMessage, b: IncomingMessage): boolean {
  try {
    if (!equalBytes(canonicalEncode(a.body), canonicalEncode(b.body))) return false;
  } catch {
    return false;
  }
  const sa = a.statementSignature ?? new Uint8Array(0);
  const sb = b.statementSignature ?? new Uint8Array(0);
  return (
    sameBytesList(a.echo, b.echo) &&
    sameBytesList(a.echoSignatures, b.echoSignatures) &&
    a.echoRound === b.echoRound &&
    sa instanceof Uint8Array &&
    sb instanceof Uint8Array &&
    equalBytes(sa, sb)
  );
}

/** The transport evidence of some messages, in order, where present. */
function evidenceOf(...messages: (IncomingMessage | undefined)[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const m of messages) if (m?.evidence instanceof Uint8Array) out.push(m.evidence);
  return out;
}

/**
 * What this party echoes for one broadcast round: per sender the echo hash, the sender's statement
 * signature and the transport evidence of its broadcast (empty / undefined where it sent none).
 */
interface EchoRecord {
  /** The round whose broadcasts this covers. */
  readonly covers: number;
  readonly hashes: Uint8Array[];
  readonly signatures: Uint8Array[];
  readonly evidence: (Uint8Array | undefined)[];
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
  /** Echo record for messages sent at round r (usually of round r−1 broadcasts). */
  private echoFor = new Map<number, EchoRecord>();
  private readonly auth: BroadcastAuth | undefined;
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
    this.auth = opts.auth;
  }

  private statement(round: number, sender: PartyIndex, hash: Uint8Array): Uint8Array {
    return broadcastStatementBytes(this.spec.name, this.ctx.sessionId, round, sender, hash);
  }

  /** Whether `signature` is `sender`'s signature over its statement of (round, hash). Never throws. */
  private verifyStatement(round: number, sender: PartyIndex, hash: unknown, signature: unknown): boolean {
    if (!this.auth || !(hash instanceof Uint8Array) || !(signature instanceof Uint8Array)) return false;
    if (hash.length === 0 || signature.length === 0) return false;
    try {
      return this.auth.verify(sender, this.statement(round, sender, hash), signature) === true;
    } catch {
      return false;
    }
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

  /** Own signature over the own broadcast statement of `round` (kept for the own echo entry). */
  private ownSignature = new Map<number, Uint8Array>();

  private emit(round: number, outbox: Outbox): OutgoingMessage[] {
    const out: OutgoingMessage[] = [];
    const rec = this.echoFor.get(round);
    const base = {
      sessionId: this.ctx.sessionId,
      round,
      from: this.ctx.self,
      ...(rec
        ? {
            echo: rec.hashes,
            echoRound: rec.covers,
            ...(this.auth ? { echoSignatures: rec.signatures } : {}),
          }
        : {}),
    };
    if (outbox.broadcast !== undefined) {
      this.ownBroadcast.set(round, outbox.broadcast);
      const statementSignature = this.auth?.sign(
        this.statement(round, this.ctx.self, echoHash(this.ctx.sessionId, round, this.ctx.self, outbox.broadcast)),
      );
      if (statementSignature) this.ownSignature.set(round, statementSignature);
      out.push({
        ...base,
        kind: 'broadcast',
        body: outbox.broadcast,
        ...(statementSignature ? { statementSignature } : {}),
      });
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
    if (round !== this.current) {
      // A message of another round (parties split by an equivocated broadcast: some finished and
      // echo, others run a later round) still carries a signed echo of a round we know: compare it
      // now, or each side would wait for messages the other never sends.
      const early = this.earlyEcho(msg);
      if (early) return early;
    }
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
        new ProtocolAbort({
          party: from,
          reason: `sent two different ${kind} messages in round ${round}`,
          check: 'message.conflict',
          round,
          evidence: { messages: evidenceOf(existing.raw, msg) },
        }),
      );
    }
    if (kind === 'broadcast' && this.auth) {
      let hash: Uint8Array | undefined;
      try {
        hash = echoHash(this.ctx.sessionId, round, from, msg.body);
      } catch {
        hash = undefined; // a body the canonical encoding refuses: its parser will name the sender
      }
      if (hash !== undefined && !this.verifyStatement(round, from, hash, msg.statementSignature)) {
        return this.fail(
          new ProtocolAbort({
            party: from,
            reason: `missing or invalid broadcast statement signature in round ${round}`,
            check: 'echo.malformed',
            round,
            evidence: { messages: evidenceOf(msg) },
          }),
        );
      }
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
      let result: ReturnType<RoundSpec<S, O>['process']>;
      try {
        for (const j of senders) {
          const slot = bySender.get(j) as Slot;
          const ev = {
            ...(slot.broadcast?.raw.evidence instanceof Uint8Array ? { broadcast: slot.broadcast.raw.evidence } : {}),
            ...(slot.p2p?.raw.evidence instanceof Uint8Array ? { p2p: slot.p2p.raw.evidence } : {}),
          };
          received.set(j, {
            broadcast: spec.broadcast
              ? this.parse(j, slot.broadcast?.raw, () => spec.broadcast?.(slot.broadcast?.raw.body, j, state))
              : undefined,
            p2p: spec.p2p ? this.parse(j, slot.p2p?.raw, () => spec.p2p?.(slot.p2p?.raw.body, j, state)) : undefined,
            ...(ev.broadcast || ev.p2p ? { evidence: ev } : {}),
          });
        }
        if (spec.broadcast) this.recordEcho(r, senders, bySender);
        result = spec.process(state, received, this.ctx);
      } catch (e) {
        if (e instanceof ProtocolAbort) throw this.withEvidence(e, r, bySender);
        throw e;
      }
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

  private parse(from: PartyIndex, raw: IncomingMessage | undefined, fn: () => unknown): unknown {
    try {
      return fn();
    } catch (e) {
      if (e instanceof ProtocolAbort) throw e;
      const why = e instanceof Error ? e.message : String(e);
      throw new ProtocolAbort({
        party: from,
        reason: `malformed message: ${why}`,
        check: 'message.malformed',
        evidence: { messages: evidenceOf(raw) },
      });
    }
  }

  /**
   * The abort of round `r` with every culprit's `round` (default `r`) and `evidence` (default: its
   * messages of round `r`, broadcast then point-to-point, where the transport gave evidence) set.
   */
  private withEvidence(e: ProtocolAbort, r: number, bySender: Map<PartyIndex, Slot>): ProtocolAbort {
    const culprits: Culprit[] = e.culprits.map((c) => {
      const slot = bySender.get(c.party);
      return {
        ...c,
        round: c.round ?? r,
        evidence: c.evidence ?? { messages: evidenceOf(slot?.broadcast?.raw, slot?.p2p?.raw) },
      };
    });
    return new ProtocolAbort(culprits, e.message);
  }

  private recordEcho(r: number, senders: readonly PartyIndex[], bySender: Map<PartyIndex, Slot>): void {
    const n = this.ctx.n;
    const hashes: Uint8Array[] = Array.from({ length: n }, () => new Uint8Array(0));
    const signatures: Uint8Array[] = Array.from({ length: n }, () => new Uint8Array(0));
    const evidence: (Uint8Array | undefined)[] = Array.from({ length: n }, () => undefined);
    const own = this.ownBroadcast.get(r);
    if (own !== undefined) {
      hashes[this.ctx.self] = echoHash(this.ctx.sessionId, r, this.ctx.self, own);
      signatures[this.ctx.self] = this.ownSignature.get(r) ?? new Uint8Array(0);
    }
    for (const j of senders) {
      const raw = bySender.get(j)?.broadcast?.raw;
      hashes[j] = echoHash(this.ctx.sessionId, r, j, raw?.body as Canonical);
      if (this.auth) signatures[j] = raw?.statementSignature ?? new Uint8Array(0);
      evidence[j] = raw?.evidence;
    }
    this.echoFor.set(r + 1, { covers: r, hashes, signatures, evidence });
  }

  /** The echo fields of k's message have the right shape (and, with auth, its signatures vector)? */
  private echoShapeOk(msg: IncomingMessage, covers: number): boolean {
    const n = this.ctx.n;
    const theirs = msg.echo;
    if (!Array.isArray(theirs) || theirs.length !== n || !theirs.every((h) => h instanceof Uint8Array)) return false;
    if (!this.auth) return true;
    if (msg.echoRound !== covers) return false;
    const sigs = msg.echoSignatures;
    if (!Array.isArray(sigs) || sigs.length !== n) return false;
    return sigs.every(
      (s, j) => s instanceof Uint8Array && (s.length === 0) === ((theirs[j] as Uint8Array).length === 0),
    );
  }

  /**
   * With auth: the signed echo of a message of another round than the one being collected, when it
   * covers a broadcast round this party has recorded, compared at once (an abort step when it
   * convicts someone; else undefined and the message goes on to the usual checks). A malformed or
   * unsigned echo is left to those checks.
   */
  private earlyEcho(msg: IncomingMessage): Step<O> | undefined {
    if (!this.auth || typeof msg.echoRound !== 'number') return undefined;
    const mine = [...this.echoFor.values()].find((e) => e.covers === msg.echoRound);
    if (!mine || !this.echoShapeOk(msg, mine.covers)) return undefined;
    try {
      this.compareEcho(msg.from, msg, mine, msg.round);
      return undefined;
    } catch (e) {
      return this.fail(e);
    }
  }

  private checkEcho(r: number, senders: readonly PartyIndex[], bySender: Map<PartyIndex, Slot>): void {
    const mine = this.echoFor.get(r);
    if (!mine) return;
    const c = mine.covers;
    for (const k of senders) {
      const slot = bySender.get(k) as Slot;
      for (const part of [slot.broadcast, slot.p2p]) {
        if (!part) continue;
        const msg = part.raw;
        if (!this.echoShapeOk(msg, c)) {
          throw new ProtocolAbort({
            party: k,
            reason: `missing or malformed broadcast echo in round ${r}`,
            check: 'echo.malformed',
            round: r,
            evidence: { messages: evidenceOf(msg) },
          });
        }
        this.compareEcho(k, msg, mine, r);
      }
    }
  }

  /** Compare k's (well-shaped) echo with ours; throws the abort naming whom the signatures convict. */
  private compareEcho(k: PartyIndex, msg: IncomingMessage, mine: EchoRecord, r: number): void {
    const c = mine.covers;
    const theirs = msg.echo as readonly Uint8Array[];
    for (let j = 0; j < this.ctx.n; j++) {
      if (j === k || equalBytes(theirs[j] as Uint8Array, mine.hashes[j] as Uint8Array)) continue;
      const falseEcho = (): never => {
        throw new ProtocolAbort({
          party: k,
          reason: `false broadcast echo for party ${j} in round ${r}`,
          check: 'echo.false',
          round: r,
          evidence: { messages: evidenceOf(msg) },
        });
      };
      // k claims a different hash for our own broadcast: we know what we sent, so k lies
      if (j === this.ctx.self) falseEcho();
      if (!this.auth) {
        // k's word against j's: without signatures nobody can be named fairly
        throw new ProtocolAbort(
          [],
          `broadcast echo mismatch about party ${j}'s round-${c} broadcast reported by party ${k} in round ${r}: ` +
            `unsigned, so nobody can be named (hash ${bytesToHex(mine.hashes[j] as Uint8Array).slice(0, 16)}…)`,
        );
      }
      const theirSig = (msg.echoSignatures as readonly Uint8Array[])[j] as Uint8Array;
      const ourHash = mine.hashes[j] as Uint8Array;
      const ourSig = mine.signatures[j] as Uint8Array;
      // j's second statement only convicts j if we hold its first one (j was a sender to us)
      if (ourHash.length === 0 || !this.verifyStatement(c, j, theirs[j], theirSig)) falseEcho();
      const stmt = (hash: Uint8Array, signature: Uint8Array): SignedStatement => ({
        protocol: this.spec.name,
        sessionId: this.ctx.sessionId,
        round: c,
        sender: j,
        hash,
        signature,
      });
      const evidence: CulpritEvidence = {
        messages: [
          ...(mine.evidence[j] instanceof Uint8Array ? [mine.evidence[j] as Uint8Array] : []),
          ...evidenceOf(msg),
        ],
        statements: [stmt(ourHash, ourSig), stmt(theirs[j] as Uint8Array, theirSig)],
      };
      throw new ProtocolAbort(
        {
          party: j,
          reason: `equivocated broadcast in round ${c} (two signed statements; echo of party ${k})`,
          check: 'echo.equivocation',
          round: c,
          evidence,
        },
        `broadcast equivocation by party ${j} detected in round ${r} (hash ${bytesToHex(ourHash).slice(0, 16)}…)`,
      );
    }
  }
}
