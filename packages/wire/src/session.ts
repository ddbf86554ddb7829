/**
 * Per-session wire: turns the round runtime's outgoing messages into SignedEnvelope bytes and
 * incoming bytes back into authenticated runtime messages, with replay protection.
 *
 * Replay protection: each (round, sender, part) slot remembers the SHA-256 of the signed envelope it
 * accepted; the same bytes again are rejected as `replay`; different signed bytes in a filled slot
 * are passed on, because the runtime then aborts naming the sender (an authenticated equivocation).
 * Envelopes of other sessions are rejected (`wrong-session`), and the runtime rejects stale rounds.
 *
 * Evidence (issue [blame]): every accepted message carries `evidence` = the encoded
 * `custodian.v1.BlameMessage` {signed_envelope: the exact bytes received, message_key: the
 * point-to-point one-message key or empty}, which the runtime copies into a culprit's evidence; and
 * {@link sessionAuth} gives the runtime the Ed25519 {@link BroadcastAuth} of the session's identity keys.
 */
import {
  type BroadcastAuth,
  bytesToHex,
  type Canonical,
  ed25519Sign,
  ed25519Verify,
  type IncomingMessage,
  type OutgoingMessage,
  type PartyIndex,
} from '@custodian/crypto';
import { bytesToCanonical, canonicalToBytes, DEFAULT_LIMITS, encodeMessage, type WireLimits } from './codec.js';
import { openEnvelope, sealEnvelope, statementSigningBytes } from './envelope.js';
import { accept, reject, type WireResult } from './errors.js';
import { roundType } from './rounds.js';
import { messageType } from './schema.js';

const BlameMessageType = messageType('custodian.v1.BlameMessage');

/**
 * The session's {@link BroadcastAuth}: Ed25519 (RFC 8032) with the parties' identity keys (the keys
 * behind their peer ids, which also sign envelopes) over {@link statementSigningBytes}(statement),
 * i.e. `"custodian/v1/broadcast-statement" ‖ 0x00 ‖ statement`. `sign` gives 64 bytes and throws
 * RangeError for a bad secret key (a local bug); `verify` never throws (false for an unknown party or
 * a wrong-length signature).
 */
export function sessionAuth(options: {
  readonly parties: readonly Uint8Array[];
  readonly self: number;
  /** This party's Ed25519 secret key (32-byte seed). SECRET. */
  readonly secretKey: Uint8Array;
}): BroadcastAuth {
  const { parties, secretKey } = options;
  return {
    sign: (statement: Uint8Array) => ed25519Sign(statementSigningBytes(statement), secretKey),
    verify: (party: PartyIndex, statement: Uint8Array, signature: Uint8Array) => {
      const pk = parties[party];
      if (!(pk instanceof Uint8Array) || !(signature instanceof Uint8Array) || signature.length !== 64) return false;
      try {
        return ed25519Verify(signature, statementSigningBytes(statement), pk);
      } catch {
        return false;
      }
    },
  };
}

/** Configuration of one party's wire in one session. */
export interface SessionWireOptions {
  readonly sessionId: Uint8Array;
  /** Protocol tag (ProtocolSpec.name), carried in every envelope. */
  readonly protocol: string;
  /** Number of rounds of the protocol (its echo round index). */
  readonly rounds: number;
  /** Ed25519 identity public keys (32 bytes) by party index. */
  readonly parties: readonly Uint8Array[];
  readonly self: number;
  /** This party's Ed25519 secret key (32-byte seed). SECRET. */
  readonly secretKey: Uint8Array;
  readonly limits?: WireLimits;
}

/** An accepted incoming message and the digest of its signed bytes (for the transcript). */
export interface AcceptedMessage {
  readonly message: IncomingMessage;
  readonly digest: Uint8Array;
}

/** One party's envelope codec for one session. */
export class SessionWire {
  readonly options: SessionWireOptions;
  private readonly seen = new Map<string, string>();

  constructor(options: SessionWireOptions) {
    if (options.parties.length < 1 || options.self < 0 || options.self >= options.parties.length) {
      throw new RangeError('self: not in the party set');
    }
    this.options = options;
  }

  /**
   * Seal one outgoing runtime message.
   * @returns the SignedEnvelope bytes and the receiver index (undefined for broadcast)
   * @throws WireSchemaError if the body does not match its registered round type (a bug)
   */
  seal(msg: OutgoingMessage): Uint8Array {
    const o = this.options;
    const type = roundType(o.protocol, msg.round, msg.kind, o.rounds);
    const payload = canonicalToBytes(type, msg.body);
    return sealEnvelope({
      sessionId: o.sessionId,
      protocol: o.protocol,
      round: msg.round,
      sender: o.self,
      ...(msg.kind === 'p2p'
        ? { receiver: msg.to as number, receiverPublicKey: o.parties[msg.to as number] as Uint8Array }
        : {}),
      echo: msg.echo ?? [],
      ...(msg.echoSignatures ? { echoSignatures: msg.echoSignatures } : {}),
      ...(msg.echoRound !== undefined ? { echoRound: msg.echoRound } : {}),
      ...(msg.statementSignature ? { statementSignature: msg.statementSignature } : {}),
      payload,
      senderSecretKey: o.secretKey,
    });
  }

  /** Open incoming bytes into a runtime message. Never throws. */
  open(bytes: unknown): WireResult<AcceptedMessage> {
    const o = this.options;
    const opened = openEnvelope(bytes, {
      sessionId: o.sessionId,
      protocol: o.protocol,
      parties: o.parties,
      self: o.self,
      selfSecretKey: o.secretKey,
      ...(o.limits ? { limits: o.limits } : {}),
    });
    if (!opened.ok) return opened;
    const { header, payload, digest, messageKey } = opened.value;
    const kind = header.receiver === undefined ? 'broadcast' : 'p2p';
    if (header.round > o.rounds) return reject('malformed', `round ${header.round} out of range`, header.sender, true);
    const slot = `${header.round}/${header.sender}/${kind}`;
    const digestHex = bytesToHex(digest);
    if (this.seen.get(slot) === digestHex)
      return reject('replay', `replayed ${kind} envelope of round ${header.round}`, header.sender, true);
    const type = roundType(o.protocol, header.round, kind, o.rounds);
    const body = bytesToCanonical(type, payload, o.limits ?? DEFAULT_LIMITS);
    if (!body.ok) return reject(body.rejection.code, body.rejection.reason, header.sender, true);
    if (!this.seen.has(slot)) this.seen.set(slot, digestHex);
    const message: IncomingMessage = {
      sessionId: header.sessionId,
      round: header.round,
      kind,
      from: header.sender,
      ...(kind === 'p2p' ? { to: o.self } : {}),
      body: body.value as Canonical,
      ...(header.echo.length > 0
        ? { echo: header.echo, echoSignatures: header.echoSignatures, echoRound: header.echoRound }
        : {}),
      ...(header.statementSignature ? { statementSignature: header.statementSignature } : {}),
      evidence: encodeMessage(BlameMessageType, {
        signedEnvelope: Uint8Array.from(bytes as Uint8Array),
        messageKey: messageKey ?? new Uint8Array(0),
      }),
    };
    return accept({ message, digest });
  }
}
