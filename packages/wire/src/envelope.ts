/**
 * Signed, point-to-point-encrypted envelopes (proto `custodian.v1.Envelope` / `SignedEnvelope`).
 *
 * Authentication: the sender signs `"custodian/v1/envelope" ‖ 0x00 ‖ envelopeBytes` with its Ed25519
 * identity key (RFC 8032, the key behind its libp2p peer id); receivers verify it against the
 * session's ordered party set before looking at anything else the sender claims.
 *
 * Confidentiality of point-to-point payloads (so a relay — the coordinator for mobile signers — can
 * neither read nor forge them): ephemeral-static X25519 (RFC 7748) between a fresh ephemeral key e
 * and the receiver's identity key converted to Montgomery form (the birational map of RFC 7748 §4.1,
 * noble `ed25519.utils.toMontgomery`); key = HKDF-SHA256(ikm = X25519(e, B), salt = E ‖ B,
 * info = "custodian/v1/p2p", 32 bytes) (RFC 5869); ChaCha20-Poly1305 (RFC 8439) with a zero nonce
 * (each key encrypts exactly one message) and the canonical encoding of the header as associated
 * data, so a ciphertext cannot be moved to another session, round, sender or receiver.
 *
 * Evidence (issue [blame], docs/protocols.md "Reliable broadcast with evidence"): a broadcast carries
 * its sender's signature over its broadcast statement (`statement_signature`), every echo carries
 * the statement signatures it echoes (`echo_signatures`, `echo_round`); the receiver of a
 * point-to-point message learns that message's one-time key, so it can hand the signed bytes and the
 * key to a third party ({@link openAsThirdParty}), which then reads exactly what the sender signed.
 */
import { type Canonical, canonicalEncode, ed25519Sign, ed25519Verify } from '@custodian/crypto';
import { chacha20poly1305 } from '@noble/ciphers/chacha.js';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { DEFAULT_LIMITS, decodeMessage, encodeMessage, type WireLimits } from './codec.js';
import { accept, reject, type WireResult } from './errors.js';
import { messageType } from './schema.js';

/** Envelope wire version. */
export const WIRE_VERSION = 1;

const EnvelopeType = messageType('custodian.v1.Envelope');
const SignedEnvelopeType = messageType('custodian.v1.SignedEnvelope');
/** Domain prefix of an envelope signature: `"custodian/v1/envelope" ‖ 0x00`. */
export const ENVELOPE_SIG_PREFIX: Uint8Array = concatBytes(utf8ToBytes('custodian/v1/envelope'), Uint8Array.of(0));
const ZERO_NONCE = new Uint8Array(12);

/** The authenticated header of an envelope. `receiver` is absent for broadcast. */
export interface EnvelopeHeader {
  readonly version: number;
  readonly sessionId: Uint8Array;
  readonly protocol: string;
  readonly round: number;
  readonly sender: number;
  readonly receiver?: number;
  readonly echo: readonly Uint8Array[];
  /** Signed echo: per `echo` entry the echoed broadcaster's statement signature (64 bytes, or empty). */
  readonly echoSignatures: readonly Uint8Array[];
  /** The runtime round whose broadcasts `echo` covers (0 when there is no echo). */
  readonly echoRound: number;
  /** Broadcast only: the sender's 64-byte signature over its broadcast statement; absent when empty. */
  readonly statementSignature?: Uint8Array;
}

/** What to seal. */
export interface SealInput {
  readonly sessionId: Uint8Array;
  readonly protocol: string;
  readonly round: number;
  readonly sender: number;
  /** Receiver index for point-to-point; absent for broadcast. */
  readonly receiver?: number;
  readonly echo?: readonly Uint8Array[];
  /** Statement signatures of the echoed broadcasts, one per `echo` entry (64 bytes or empty). */
  readonly echoSignatures?: readonly Uint8Array[];
  /** The round whose broadcasts `echo` covers. */
  readonly echoRound?: number;
  /** Broadcast only: this broadcast's 64-byte statement signature. */
  readonly statementSignature?: Uint8Array;
  /** Plaintext payload (the round message's protobuf bytes). */
  readonly payload: Uint8Array;
  /** Sender's Ed25519 secret key (32-byte seed, RFC 8032 §5.1.5). SECRET. */
  readonly senderSecretKey: Uint8Array;
  /** Receiver's Ed25519 identity public key (32 bytes); required for point-to-point. */
  readonly receiverPublicKey?: Uint8Array;
  /** Randomness for the ephemeral X25519 key (default: system CSPRNG). */
  readonly rng?: (n: number) => Uint8Array;
}

/** Associated data of a point-to-point payload: the canonical encoding of the header and the ephemeral key. */
export function p2pAad(
  h: Pick<EnvelopeHeader, 'version' | 'sessionId' | 'protocol' | 'round' | 'sender' | 'receiver' | 'echo'>,
  ephemeralKey: Uint8Array,
): Uint8Array {
  const c: Canonical = [
    'custodian/v1/p2p-aad',
    h.version,
    h.sessionId,
    h.protocol,
    h.round,
    h.sender,
    h.receiver ?? null,
    h.echo as Uint8Array[],
    ephemeralKey,
  ];
  return canonicalEncode(c);
}

function p2pKey(shared: Uint8Array, ephemeralKey: Uint8Array, receiverX: Uint8Array): Uint8Array {
  return hkdf(sha256, shared, concatBytes(ephemeralKey, receiverX), utf8ToBytes('custodian/v1/p2p'), 32);
}

/**
 * Build a SignedEnvelope: encrypt the payload to the receiver (point-to-point), serialize, sign.
 * @returns SignedEnvelope bytes
 * @throws TypeError/RangeError for invalid input (a local bug, not remote input)
 */
export function sealEnvelope(input: SealInput): Uint8Array {
  if (!(input.senderSecretKey instanceof Uint8Array) || input.senderSecretKey.length !== 32) {
    throw new RangeError('senderSecretKey: expected 32 bytes');
  }
  const header: EnvelopeHeader = {
    version: WIRE_VERSION,
    sessionId: input.sessionId,
    protocol: input.protocol,
    round: input.round,
    sender: input.sender,
    ...(input.receiver !== undefined ? { receiver: input.receiver } : {}),
    echo: input.echo ?? [],
    echoSignatures: input.echoSignatures ?? [],
    echoRound: input.echoRound ?? 0,
    ...(input.statementSignature && input.statementSignature.length > 0
      ? { statementSignature: input.statementSignature }
      : {}),
  };
  let payload = input.payload;
  let ephemeralKey = new Uint8Array(0);
  if (input.receiver !== undefined) {
    if (!(input.receiverPublicKey instanceof Uint8Array) || input.receiverPublicKey.length !== 32) {
      throw new RangeError('receiverPublicKey: expected 32 bytes for a point-to-point envelope');
    }
    const e = input.rng ? input.rng(32) : x25519.utils.randomSecretKey();
    ephemeralKey = x25519.getPublicKey(e);
    const receiverX = ed25519.utils.toMontgomery(input.receiverPublicKey);
    const key = p2pKey(x25519.getSharedSecret(e, receiverX), ephemeralKey, receiverX);
    payload = chacha20poly1305(key, ZERO_NONCE, p2pAad(header, ephemeralKey)).encrypt(input.payload);
    key.fill(0);
    e.fill(0);
  }
  const envelope = encodeMessage(EnvelopeType, {
    version: header.version,
    sessionId: header.sessionId,
    protocol: header.protocol,
    round: header.round,
    sender: header.sender,
    ...(header.receiver !== undefined ? { receiver: header.receiver } : { broadcast: true }),
    payload,
    echo: [...header.echo],
    ephemeralKey,
    echoSignatures: [...header.echoSignatures],
    statementSignature: header.statementSignature ?? new Uint8Array(0),
    echoRound: header.echoRound,
  });
  const signature = ed25519Sign(concatBytes(ENVELOPE_SIG_PREFIX, envelope), input.senderSecretKey);
  return encodeMessage(SignedEnvelopeType, { envelope, signature });
}

/** Who is opening, and the session it expects. */
export interface OpenContext {
  readonly sessionId: Uint8Array;
  /** Expected protocol tag (absent: any). */
  readonly protocol?: string;
  /** Ed25519 identity public keys (32 bytes) of the session's parties, by party index. */
  readonly parties: readonly Uint8Array[];
  /** This party's index. */
  readonly self: number;
  /** This party's Ed25519 secret key (32 bytes). SECRET. */
  readonly selfSecretKey: Uint8Array;
  readonly limits?: WireLimits;
}

/**
 * An opened envelope: its header, the decrypted payload, and the SHA-256 of the signed bytes; for a
 * point-to-point envelope also its 32-byte one-message ChaCha20-Poly1305 key (what a receiver puts in
 * `custodian.v1.BlameMessage.message_key` so a third party can read this one message). SECRET-ish:
 * it opens only this message, which the receiver may disclose as evidence.
 */
export interface OpenedEnvelope {
  readonly header: EnvelopeHeader;
  readonly payload: Uint8Array;
  readonly digest: Uint8Array;
  readonly messageKey?: Uint8Array;
}

function eqBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= (a[i] as number) ^ (b[i] as number);
  return d === 0;
}

interface DecodedEnvelope {
  version: number;
  sessionId: Uint8Array;
  protocol: string;
  round: number;
  sender: number;
  receiver?: number;
  broadcast?: boolean;
  destination?: string;
  payload: Uint8Array;
  echo: Uint8Array[];
  ephemeralKey: Uint8Array;
  echoSignatures?: Uint8Array[];
  statementSignature?: Uint8Array;
  echoRound?: number;
}

/** Decode a SignedEnvelope and verify its signature under the key `keyOf(sender)` returns. */
function decodeAndVerify(
  bytes: unknown,
  limits: WireLimits,
  keyOf: (sender: number) => Uint8Array | WireResult<never>,
): WireResult<{ e: DecodedEnvelope }> {
  const outer = decodeMessage(SignedEnvelopeType, bytes, limits);
  if (!outer.ok) return outer;
  const signed = outer.value as unknown as { envelope?: Uint8Array; signature?: Uint8Array };
  const envBytes = signed.envelope ?? new Uint8Array(0);
  const signature = signed.signature ?? new Uint8Array(0);
  if (envBytes.length === 0) return reject('malformed', 'envelope: empty');
  const inner = decodeMessage(EnvelopeType, envBytes, limits);
  if (!inner.ok) return inner;
  const e = inner.value as unknown as DecodedEnvelope;
  const sender = e.sender;
  if (e.version !== WIRE_VERSION) return reject('bad-version', `envelope: unsupported version ${e.version}`);
  const key = keyOf(sender);
  if (!(key instanceof Uint8Array)) return key;
  if (signature.length !== 64)
    return reject('bad-signature', 'envelope: missing or malformed signature', sender, false);
  let valid = false;
  try {
    valid = ed25519Verify(signature, concatBytes(ENVELOPE_SIG_PREFIX, envBytes), key);
  } catch {
    valid = false;
  }
  if (!valid)
    return reject('bad-signature', `envelope: signature does not verify under party ${sender}'s key`, sender, false);
  return accept({ e });
}

/** The header of an authenticated envelope, or a rejection for malformed echo fields. */
function headerOf(e: DecodedEnvelope, isP2p: boolean, maxParties: number): WireResult<EnvelopeHeader> {
  const sender = e.sender;
  const echo = e.echo ?? [];
  if (echo.length > maxParties || echo.some((h) => h.length !== 0 && h.length !== 32)) {
    return reject('malformed', 'envelope: malformed echo vector', sender, true);
  }
  // lengths only: whether the signatures verify is the runtime's check (it names whoever they convict)
  const echoSignatures = e.echoSignatures ?? [];
  if (echoSignatures.length > maxParties || echoSignatures.some((x) => x.length !== 0 && x.length !== 64)) {
    return reject('malformed', 'envelope: malformed echo signatures', sender, true);
  }
  const statementSignature = e.statementSignature ?? new Uint8Array(0);
  if (statementSignature.length !== 0 && (statementSignature.length !== 64 || isP2p)) {
    return reject('malformed', 'envelope: malformed statement signature', sender, true);
  }
  const echoRound = e.echoRound ?? 0;
  return accept({
    version: e.version,
    sessionId: Uint8Array.from(e.sessionId ?? new Uint8Array(0)),
    protocol: e.protocol,
    round: e.round,
    sender,
    ...(isP2p ? { receiver: e.receiver as number } : {}),
    echo: echo.map((h) => Uint8Array.from(h)),
    echoSignatures: echoSignatures.map((x) => Uint8Array.from(x)),
    echoRound,
    ...(statementSignature.length > 0 ? { statementSignature: Uint8Array.from(statementSignature) } : {}),
  });
}

/**
 * Parse, authenticate and decrypt a SignedEnvelope. Never throws: every failure is a typed
 * rejection naming the sender when it is identifiable (`authenticated: true` once its signature verified).
 */
export function openEnvelope(bytes: unknown, ctx: OpenContext): WireResult<OpenedEnvelope> {
  const limits = ctx.limits ?? DEFAULT_LIMITS;
  const verified = decodeAndVerify(bytes, limits, (sender) => {
    if (!Number.isSafeInteger(sender) || sender < 0 || sender >= ctx.parties.length) {
      return reject('unknown-sender', `envelope: sender index ${sender} is not in the party set`);
    }
    if (sender === ctx.self) return reject('unknown-sender', 'envelope: claims to come from this party', sender);
    return ctx.parties[sender] as Uint8Array;
  });
  if (!verified.ok) return verified;
  const { e } = verified.value;
  const sender = e.sender;
  // From here on the sender is authenticated.
  if (!eqBytes(e.sessionId ?? new Uint8Array(0), ctx.sessionId)) {
    return reject('wrong-session', 'envelope: belongs to another session', sender, true);
  }
  if (ctx.protocol !== undefined && e.protocol !== ctx.protocol) {
    return reject(
      'wrong-protocol',
      `envelope: protocol ${JSON.stringify(String(e.protocol).slice(0, 64))} not expected`,
      sender,
      true,
    );
  }
  const isP2p = e.destination === 'receiver';
  if (!isP2p && e.destination !== 'broadcast') return reject('malformed', 'envelope: no destination', sender, true);
  if (isP2p && e.receiver !== ctx.self)
    return reject('wrong-receiver', `envelope: addressed to party ${e.receiver}`, sender, true);
  const h = headerOf(e, isP2p, ctx.parties.length);
  if (!h.ok) return h;
  const header = h.value;
  let payload: Uint8Array = Uint8Array.from(e.payload ?? new Uint8Array(0));
  let messageKey: Uint8Array | undefined;
  if (isP2p) {
    const epk = e.ephemeralKey ?? new Uint8Array(0);
    if (epk.length !== 32)
      return reject('malformed', 'envelope: point-to-point without a 32-byte ephemeral key', sender, true);
    try {
      const selfX = ed25519.utils.toMontgomerySecret(ctx.selfSecretKey);
      const selfPubX = x25519.getPublicKey(selfX);
      messageKey = p2pKey(x25519.getSharedSecret(selfX, epk), epk, selfPubX);
      payload = chacha20poly1305(messageKey, ZERO_NONCE, p2pAad(header, epk)).decrypt(payload);
      selfX.fill(0);
    } catch {
      return reject('decrypt-failed', 'envelope: point-to-point payload does not decrypt', sender, true);
    }
  }
  return accept({ header, payload, digest: sha256(bytes as Uint8Array), ...(messageKey ? { messageKey } : {}) });
}

/**
 * Domain prefix of a broadcast-statement signature: `"custodian/v1/broadcast-statement" ‖ 0x00`
 * (the identity key also signs envelopes, under `"custodian/v1/envelope" ‖ 0x00`).
 */
export const STATEMENT_SIG_PREFIX: Uint8Array = concatBytes(
  utf8ToBytes('custodian/v1/broadcast-statement'),
  Uint8Array.of(0),
);

/**
 * The bytes an Ed25519 identity key signs for a broadcast statement: {@link STATEMENT_SIG_PREFIX} ‖
 * `statementBytes` (the output of @custodian/crypto `broadcastStatementBytes`).
 */
export function statementSigningBytes(statementBytes: Uint8Array): Uint8Array {
  return concatBytes(STATEMENT_SIG_PREFIX, statementBytes);
}

/**
 * Open an envelope as a third party (the coordinator checking a blame): verify the sender's Ed25519
 * envelope signature under `senderPublicKey` (32 bytes), and for a point-to-point envelope decrypt
 * the payload with `messageKey` (32 bytes, from `custodian.v1.BlameMessage.message_key`). Checks no
 * session, protocol or receiver: the caller compares the header with what the blame claims.
 * Never throws.
 * @returns the header (with echo, echoSignatures, echoRound, statementSignature), the payload
 *   (plaintext), the digest of the signed bytes; a rejection `bad-signature`, `malformed` (also: a
 *   point-to-point envelope without a 32-byte key) or `decrypt-failed`
 */
export function openAsThirdParty(
  signedEnvelopeBytes: Uint8Array,
  senderPublicKey: Uint8Array,
  messageKey?: Uint8Array,
  limits: WireLimits = DEFAULT_LIMITS,
): WireResult<OpenedEnvelope> {
  if (!(senderPublicKey instanceof Uint8Array) || senderPublicKey.length !== 32) {
    return reject('malformed', 'senderPublicKey: expected 32 bytes');
  }
  const verified = decodeAndVerify(signedEnvelopeBytes, limits, () => senderPublicKey);
  if (!verified.ok) return verified;
  const { e } = verified.value;
  const isP2p = e.destination === 'receiver';
  if (!isP2p && e.destination !== 'broadcast') return reject('malformed', 'envelope: no destination', e.sender, true);
  const h = headerOf(e, isP2p, limits.maxRepeated);
  if (!h.ok) return h;
  const header = h.value;
  let payload: Uint8Array = Uint8Array.from(e.payload ?? new Uint8Array(0));
  if (isP2p) {
    const epk = e.ephemeralKey ?? new Uint8Array(0);
    if (epk.length !== 32 || !(messageKey instanceof Uint8Array) || messageKey.length !== 32) {
      return reject(
        'malformed',
        'envelope: point-to-point needs its 32-byte ephemeral key and message key',
        e.sender,
        true,
      );
    }
    try {
      payload = chacha20poly1305(messageKey, ZERO_NONCE, p2pAad(header, epk)).decrypt(payload);
    } catch {
      return reject(
        'decrypt-failed',
        'envelope: point-to-point payload does not decrypt with this key',
        e.sender,
        true,
      );
    }
  }
  return accept({ header, payload, digest: sha256(signedEnvelopeBytes) });
}
