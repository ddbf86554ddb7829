/**
 * Types of the sans-IO round-based protocol runtime (STYLE.md items 1–3).
 *
 * A protocol is a list of rounds. In round r every expected sender sends a broadcast part, a
 * point-to-point part to each other party, or both (as the round declares). The runtime collects
 * and validates messages (session, sender, round, kind, duplicates, body shape) before any math,
 * then calls the round's pure `process` with all of them. Bodies are {@link Canonical} values
 * (bytes, bigints, strings, lists, records) so they can be hashed for the broadcast echo and
 * serialised by the wire layer.
 */

import type { RandomSource } from '../bytes.js';
import type { Canonical } from '../encoding.js';
import { CryptoError } from '../errors.js';

/** 0-based position of a party in the session's ordered party list. */
export type PartyIndex = number;

/** How a message part is delivered. */
export type MessageKind = 'broadcast' | 'p2p';

/** A message this party wants sent. `to` is set for p2p and absent for broadcast. */
export interface OutgoingMessage {
  readonly sessionId: Uint8Array;
  readonly round: number;
  readonly kind: MessageKind;
  readonly from: PartyIndex;
  readonly to?: PartyIndex;
  readonly body: Canonical;
  /** Reliable-broadcast echo: hashes of the previous broadcast round's messages, one per sender. */
  readonly echo?: readonly Uint8Array[];
}

/** A message as delivered by a transport that authenticated `from` (wire layer: envelope signature). */
export type IncomingMessage = OutgoingMessage;

/** One misbehaving party and why. */
export interface Culprit {
  readonly party: PartyIndex;
  readonly reason: string;
}

/** Outcome when a party misbehaved: the honest parties abort and name the culprits (identifiable abort). */
export interface Aborted {
  readonly culprits: readonly Culprit[];
  readonly reason: string;
}

/**
 * Thrown by a round's `process` (or a body parser) to abort naming culprits. The runtime turns it
 * into an {@link Aborted} outcome. Any other exception is a bug and propagates.
 */
export class ProtocolAbort extends CryptoError {
  readonly culprits: readonly Culprit[];
  constructor(culprits: readonly Culprit[] | Culprit, reason?: string) {
    const list = Array.isArray(culprits) ? culprits : [culprits as Culprit];
    super('PROTOCOL_ABORTED', reason ?? list.map((c) => `party ${c.party}: ${c.reason}`).join('; '));
    this.culprits = list;
  }
}

/** Convenience: abort naming one party. */
export function blame(party: PartyIndex, reason: string): never {
  throw new ProtocolAbort({ party, reason });
}

/** The messages of one round as received from one sender. */
export interface ReceivedParts<B, P> {
  readonly broadcast: B;
  readonly p2p: P;
}

/** What a party's round sees besides the messages. */
export interface RoundContext {
  readonly self: PartyIndex;
  readonly n: number;
  readonly sessionId: Uint8Array;
  readonly rng: RandomSource;
}

/** Messages a round wants to send next: a broadcast body and/or p2p bodies by receiver. */
export interface Outbox {
  readonly broadcast?: Canonical;
  readonly p2p?: ReadonlyMap<PartyIndex, Canonical>;
}

/** Result of processing a round: continue with a new state and messages, or finish. */
export type RoundResult<S, O> =
  | { readonly state: S; readonly send: Outbox; readonly output?: undefined }
  | { readonly output: O; readonly send?: undefined };

/**
 * One round of a protocol.
 * @typeParam S the protocol's state type
 * @typeParam O the protocol's output type
 */
export interface RoundSpec<S, O, B = unknown, P = unknown> {
  /** Stable name, e.g. `cggmp.keygen.round2`. */
  readonly name: string;
  /** Parse and validate the shape of a broadcast part (throw TypeError/RangeError to reject). Absent: no broadcast part. */
  readonly broadcast?: (body: unknown, from: PartyIndex, state: S) => B;
  /** Parse and validate the shape of a p2p part. Absent: no p2p part. */
  readonly p2p?: (body: unknown, from: PartyIndex, state: S) => P;
  /** Senders expected this round (default: every other party). */
  readonly senders?: (state: S, ctx: RoundContext) => readonly PartyIndex[];
  /** Pure transition once every expected part is collected. May throw {@link ProtocolAbort}. */
  process(state: S, received: ReadonlyMap<PartyIndex, ReceivedParts<B, P>>, ctx: RoundContext): RoundResult<S, O>;
}

/** A protocol: how to start, and its rounds in order. Round r collects messages sent by round r−1's outbox. */
export interface ProtocolSpec<S, O> {
  /** Protocol tag, e.g. `custodian.cggmp.keygen`. */
  readonly name: string;
  /**
   * Echo a final broadcast round before releasing the output (default true). Set false only where
   * equivocation in the last round cannot change any honest party's output unnoticed (e.g. ECDSA
   * signature shares, which every party checks against public values and the combined signature).
   */
  readonly echoFinalRound?: boolean;
  /** Build the initial state and the first outbox (messages of round 0). */
  start(ctx: RoundContext): { state: S; send: Outbox };
  // biome-ignore lint/suspicious/noExplicitAny: rounds have heterogeneous body types
  readonly rounds: readonly RoundSpec<S, O, any, any>[];
}
