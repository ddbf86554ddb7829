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
  /**
   * Signed echo: for each non-empty `echo[j]`, party j's 64-byte signature over its broadcast
   * statement ({@link broadcastStatementBytes}), as j sent it in `statementSignature`; an empty
   * entry where `echo[j]` is empty. Set only when the party runs with a {@link BroadcastAuth}.
   */
  readonly echoSignatures?: readonly Uint8Array[];
  /** The round whose broadcasts `echo` covers (set with `echo`; usually `round − 1`). */
  readonly echoRound?: number;
  /**
   * Broadcast only: the sender's signature over the statement of this broadcast (protocol, session,
   * round, sender, echo hash of `body`). Set only when the party runs with a {@link BroadcastAuth}.
   */
  readonly statementSignature?: Uint8Array;
}

/**
 * A message as delivered by a transport that authenticated `from` (wire layer: envelope signature).
 * `evidence` is opaque to the runtime: the transport's proof that `from` sent this message (wire:
 * the encoded `custodian.v1.BlameMessage`, the SignedEnvelope plus, for a point-to-point message,
 * its one-message key). The runtime copies it into {@link CulpritEvidence} when it names `from`.
 */
export interface IncomingMessage extends OutgoingMessage {
  readonly evidence?: Uint8Array;
}

/**
 * How a party signs and checks broadcast statements (reliable broadcast with evidence, issue
 * [blame]). Production: Ed25519 with the parties' identity keys (the keys behind their libp2p
 * peer ids, the same that sign envelopes); the wire layer builds it from the session's key set.
 * Without it (unit tests of protocol math) an echo mismatch aborts naming nobody.
 */
export interface BroadcastAuth {
  /** This party's 64-byte signature over `statement` (the bytes of {@link broadcastStatementBytes}). */
  sign(statement: Uint8Array): Uint8Array;
  /** Whether `signature` is party `party`'s valid signature over `statement`. Never throws. */
  verify(party: PartyIndex, statement: Uint8Array, signature: Uint8Array): boolean;
}

/** A party's signed claim that its broadcast of one round had echo hash `hash`. */
export interface SignedStatement {
  readonly protocol: string;
  readonly sessionId: Uint8Array;
  readonly round: number;
  readonly sender: PartyIndex;
  /** 32-byte echo hash of the broadcast's canonical body. */
  readonly hash: Uint8Array;
  /** The sender's signature over {@link broadcastStatementBytes} of the fields above. */
  readonly signature: Uint8Array;
}

/**
 * What lets a third party check a blame without trusting the accuser (issue [blame]).
 * `messages`: the transport evidence ({@link IncomingMessage.evidence}) of the culprit's offending
 * messages, in order. `statements`: two different statements of one round signed by the culprit
 * (broadcast equivocation).
 */
export interface CulpritEvidence {
  readonly messages: readonly Uint8Array[];
  readonly statements?: readonly SignedStatement[];
}

/** One misbehaving party and why. */
export interface Culprit {
  readonly party: PartyIndex;
  readonly reason: string;
  /**
   * Stable id of the failed check (docs/protocols.md "Identifiable abort"): `echo.equivocation`,
   * `echo.false`, `echo.malformed`, `message.conflict`, `message.malformed`, `proof.<name>` (e.g.
   * `proof.enc`, `proof.aff-g`, `proof.log-star`, `proof.aff-p`, `proof.dec`), `presign.delta`,
   * `presign.S`, or a protocol's own (e.g. `reshare.feldman`). Absent: `check.unspecified`.
   */
  readonly check?: string;
  /** Runtime round of the offending message(s); the runtime fills in the round it was processing. */
  readonly round?: number;
  /** Evidence; the runtime attaches the culprit's messages of `round` when a round names it without any. */
  readonly evidence?: CulpritEvidence;
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

/** Convenience: abort naming one party; `check` is the stable id of the failed check ({@link Culprit.check}). */
export function blame(party: PartyIndex, reason: string, check?: string): never {
  throw new ProtocolAbort({ party, reason, ...(check !== undefined ? { check } : {}) });
}

/** The messages of one round as received from one sender. */
export interface ReceivedParts<B, P> {
  readonly broadcast: B;
  readonly p2p: P;
  /**
   * The transport evidence ({@link IncomingMessage.evidence}) of the two parts, where the transport
   * gave one: a protocol keeps it when it may later have to prove what this sender sent (e.g. a
   * presigning identification round comparing a published value with an earlier point-to-point one).
   */
  readonly evidence?: { readonly broadcast?: Uint8Array; readonly p2p?: Uint8Array };
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
