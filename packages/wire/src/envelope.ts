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
const SIG_PREFIX = concatBytes(utf8ToBytes('custodian/v1/envelope'), Uint8Array.of(0));
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
  /** Plaintext payload (the round message's protobuf bytes). */
  readonly payload: Uint8Array;
  /** Sender's Ed25519 secret key (32-byte seed, RFC 8032 §5.1.5). SECRET. */
  readonly senderSecretKey: Uint8Array;
  /** Receiver's Ed25519 identity public key (32 bytes); required for point-to-point. */
  readonly receiverPublicKey?: Uint8Array;
  /** Randomness for the ephemeral X25519 key (default: system CSPRNG). */
  readonly rng?: (n: number) => Uint8Array;
}

function aad(h: EnvelopeHeader, ephemeralKey: Uint8Array): Uint8Array {
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
    payload = chacha20poly1305(key, ZERO_NONCE, aad(header, ephemeralKey)).encrypt(input.payload);
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
  });
  const signature = ed25519Sign(concatBytes(SIG_PREFIX, envelope), input.senderSecretKey);
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

/** An opened envelope: its header, the decrypted payload, and the SHA-256 of the signed bytes. */
export interface OpenedEnvelope {
  readonly header: EnvelopeHeader;
  readonly payload: Uint8Array;
  readonly digest: Uint8Array;
}

function eqBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= (a[i] as number) ^ (b[i] as number);
  return d === 0;
}

/**
 * Parse, authenticate and decrypt a SignedEnvelope. Never throws: every failure is a typed
 * rejection naming the sender when it is identifiable (`authenticated: true` once its signature verified).
 */
export function openEnvelope(bytes: unknown, ctx: OpenContext): WireResult<OpenedEnvelope> {
  const limits = ctx.limits ?? DEFAULT_LIMITS;
  const outer = decodeMessage(SignedEnvelopeType, bytes, limits);
  if (!outer.ok) return outer;
  const signed = outer.value as unknown as { envelope?: Uint8Array; signature?: Uint8Array };
  const envBytes = signed.envelope ?? new Uint8Array(0);
  const signature = signed.signature ?? new Uint8Array(0);
  if (envBytes.length === 0) return reject('malformed', 'envelope: empty');
  const inner = decodeMessage(EnvelopeType, envBytes, limits);
  if (!inner.ok) return inner;
  const e = inner.value as unknown as {
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
  };
  const sender = e.sender;
  if (e.version !== WIRE_VERSION) return reject('bad-version', `envelope: unsupported version ${e.version}`);
  if (!Number.isSafeInteger(sender) || sender < 0 || sender >= ctx.parties.length) {
    return reject('unknown-sender', `envelope: sender index ${sender} is not in the party set`);
  }
  if (sender === ctx.self) return reject('unknown-sender', 'envelope: claims to come from this party', sender);
  if (signature.length !== 64)
    return reject('bad-signature', 'envelope: missing or malformed signature', sender, false);
  let valid = false;
  try {
    valid = ed25519Verify(signature, concatBytes(SIG_PREFIX, envBytes), ctx.parties[sender] as Uint8Array);
  } catch {
    valid = false;
  }
  if (!valid)
    return reject('bad-signature', `envelope: signature does not verify under party ${sender}'s key`, sender, false);
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
  const echo = e.echo ?? [];
  if (echo.length > ctx.parties.length || echo.some((h) => h.length !== 0 && h.length !== 32)) {
    return reject('malformed', 'envelope: malformed echo vector', sender, true);
  }
  const header: EnvelopeHeader = {
    version: e.version,
    sessionId: Uint8Array.from(e.sessionId),
    protocol: e.protocol,
    round: e.round,
    sender,
    ...(isP2p ? { receiver: e.receiver as number } : {}),
    echo: echo.map((h) => Uint8Array.from(h)),
  };
  let payload: Uint8Array = Uint8Array.from(e.payload ?? new Uint8Array(0));
  if (isP2p) {
    const epk = e.ephemeralKey ?? new Uint8Array(0);
    if (epk.length !== 32)
      return reject('malformed', 'envelope: point-to-point without a 32-byte ephemeral key', sender, true);
    try {
      const selfX = ed25519.utils.toMontgomerySecret(ctx.selfSecretKey);
      const selfPubX = x25519.getPublicKey(selfX);
      const key = p2pKey(x25519.getSharedSecret(selfX, epk), epk, selfPubX);
      payload = chacha20poly1305(key, ZERO_NONCE, aad(header, epk)).decrypt(payload);
      key.fill(0);
      selfX.fill(0);
    } catch {
      return reject('decrypt-failed', 'envelope: point-to-point payload does not decrypt', sender, true);
    }
  }
  return accept({ header, payload, digest: sha256(bytes as Uint8Array) });
}
