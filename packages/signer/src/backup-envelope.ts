/**
 * The encrypted backup file of a server signer (issue #22, "Backup and recovery") and the operator
 * RECOVERY KEY it is encrypted to. Only primitives of @noble (X25519 RFC 7748, HKDF-SHA256
 * RFC 5869, SHA-256) and the store's XChaCha20-Poly1305 sealing (`seal`/`open` of
 * @custodian/ceremony/level-store, @noble/ciphers underneath); nothing hand-rolled.
 *
 * ## Recovery key (`custodian signer backup keygen --out DIR`)
 * - `recovery.key` (SECRET, mode 0600, keep OFFLINE): JSON
 *   `{ format: "custodian.signer.recovery-key", version: 1, secretKey, publicKey, fingerprint }`,
 *   `secretKey` and `publicKey` 32-byte X25519 keys as lowercase hex (RFC 7748 §5 / §6.1).
 * - `recovery.pub` (public): JSON `{ format: "custodian.signer.recovery-pub", version: 1, publicKey, fingerprint }`.
 * - fingerprint: the first 16 bytes of SHA-256(publicKey), lowercase hex (32 characters).
 *
 * ## Backup file, format version 1 (byte offsets)
 * ```
 *   0 ..  8        magic, ASCII "CUSTBKUP"
 *   8 .. 12        H = header length in bytes, uint32 big-endian (1 ..= 1 MiB)
 *  12 .. 12+H      header, UTF-8 JSON {@link BackupHeader} (NOT encrypted, authenticated)
 *  12+H .. end     sealed payload: 0x01 ‖ nonce(24) ‖ XChaCha20-Poly1305 ciphertext ‖ tag(16)
 * ```
 * The AEAD's associated data is bytes `0 .. 12+H` (magic, length and header): a changed header
 * byte, like a changed ciphertext byte, fails authentication. The header is readable without any
 * secret (`custodian signer backup inspect`): format, version, creation time, the signer's peer id,
 * the recipient fingerprint, the ephemeral public key, and the ids and epochs of the keys inside —
 * none of it secret, and none of it trustworthy until a restore has authenticated it.
 * The AEAD gives confidentiality and integrity, NOT origin: anyone holding `recovery.pub` can write
 * a file that decrypts. A forged file cannot carry the lost signer's identity key (the header's
 * peer id must be that of the identity inside), so a restore pins the expected peer id
 * (`--peer-id`) — a forged backup then restores nothing.
 *
 * Payload key (ECIES-style, ephemeral-static X25519): the writer draws an ephemeral X25519 pair
 * (e, E = e·G) for every file; `Z = X25519(e, R)` with R the recovery public key (a reader with
 * r: `Z = X25519(r, E)`; an all-zero Z, from a low-order R or E, is refused — RFC 7748 §6.1);
 * `K = HKDF-SHA256(IKM = Z, salt = "custodian.signer.backup/v1", info = "custodian.signer.backup/v1 payload key" ‖ E ‖ R, L = 32)`.
 * Binding E and R in `info` ties K to this exchange and this recipient. K encrypts exactly one
 * payload (fresh e per file; the 24-byte nonce is random as well).
 *
 * Payload plaintext: UTF-8 JSON {@link BackupPayload}.
 */

import { SignerError } from '@custodian/ceremony';
import { open as openSealed, seal } from '@custodian/ceremony/level-store';
import { bytesToHex } from '@custodian/crypto';
import { x25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';

/** ASCII magic of a backup file (bytes 0..8). */
export const BACKUP_MAGIC = 'CUSTBKUP';
/** `format` of the header. */
export const BACKUP_FORMAT = 'custodian.signer.backup';
/** The only file format version this release writes and reads. */
export const BACKUP_VERSION = 1;
/** Largest header accepted (bytes). */
export const MAX_HEADER_BYTES = 1 << 20;

const enc = new TextEncoder();
const dec = new TextDecoder();
const SALT = enc.encode('custodian.signer.backup/v1');
const INFO = enc.encode('custodian.signer.backup/v1 payload key');

/**
 * A backup or recovery-key file is unusable. Codes: `BACKUP_FORMAT` (not a backup file,
 * truncated, malformed header, unsupported version), `BACKUP_WRONG_RECOVERY_KEY` (encrypted to
 * another recovery key), `BACKUP_INTEGRITY` (does not authenticate: tampered or corrupted),
 * `RECOVERY_KEY_INVALID`, `BACKUP_TARGET_NOT_EMPTY` (restore into a non-empty data folder),
 * `BACKUP_WRONG_SIGNER` (the backup is of another signer than the restore expects),
 * `BACKUP_STORE_LOCKED` (the daemon holds the store). Messages never contain secret material.
 */
export class BackupError extends SignerError {}

/** The unencrypted, authenticated header of a backup file. */
export interface BackupHeader {
  readonly format: typeof BACKUP_FORMAT;
  readonly version: number;
  /** When the backup was written (ISO 8601, UTC). */
  readonly createdAt: string;
  /** The backed-up signer's libp2p peer id (its identity travels in the payload). */
  readonly peerId: string;
  /** Fingerprint of the recovery public key the payload is encrypted to. */
  readonly recipient: string;
  /** E, the ephemeral X25519 public key (32 bytes, hex). */
  readonly ephemeralPublicKey: string;
  /** The keys inside: id and epoch of its shares (KeyRecord.epoch). */
  readonly keys: readonly { readonly keyId: string; readonly epoch: number }[];
}

/** One store value in the payload (`v`: base64 of the plaintext value). */
export interface BackupEntry {
  readonly s: 'shares' | 'ledger' | 'state';
  readonly k: string;
  readonly v: string;
}

/** The encrypted payload. SECRET. */
export interface BackupPayload {
  /** The libp2p identity private key, protobuf (`privateKeyToProtobuf`), base64. */
  readonly identity: string;
  readonly entries: readonly BackupEntry[];
}

/** An X25519 recovery key pair. */
export interface RecoveryKey {
  /** r (32 bytes). SECRET. */
  readonly secretKey: Uint8Array;
  /** R = r·G (32 bytes). */
  readonly publicKey: Uint8Array;
}

/** Fingerprint of a recovery public key: SHA-256(R)[0..16], hex. */
export function recoveryFingerprint(publicKey: Uint8Array): string {
  return bytesToHex(sha256(publicKey).subarray(0, 16));
}

/** Draw a new recovery key pair (node:crypto randomness through noble). */
export function generateRecoveryKey(): RecoveryKey {
  const secretKey = x25519.utils.randomSecretKey();
  return { secretKey, publicKey: x25519.getPublicKey(secretKey) };
}

/** The two files of a recovery key: `recovery.key` (secret) and `recovery.pub`, as JSON text. */
export function recoveryKeyFiles(key: RecoveryKey): { secret: string; pub: string } {
  const fingerprint = recoveryFingerprint(key.publicKey);
  const publicKey = bytesToHex(key.publicKey);
  return {
    secret: `${JSON.stringify(
      {
        format: 'custodian.signer.recovery-key',
        version: 1,
        note: 'SECRET: decrypts every signer backup made to this key. Keep it offline.',
        secretKey: bytesToHex(key.secretKey),
        publicKey,
        fingerprint,
      },
      null,
      2,
    )}\n`,
    pub: `${JSON.stringify({ format: 'custodian.signer.recovery-pub', version: 1, publicKey, fingerprint }, null, 2)}\n`,
  };
}

function hex32(v: unknown, what: string): Uint8Array {
  if (typeof v !== 'string' || !/^[0-9a-f]{64}$/.test(v))
    throw new BackupError('RECOVERY_KEY_INVALID', `${what}: expected 32 bytes as lowercase hex`);
  return Uint8Array.from(Buffer.from(v, 'hex'));
}

function parseJson(text: string, what: string): Record<string, unknown> {
  try {
    const o = JSON.parse(text) as unknown;
    if (typeof o === 'object' && o !== null) return o as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new BackupError('RECOVERY_KEY_INVALID', `${what}: not a recovery key file`);
}

/**
 * Parse `recovery.pub`.
 * @throws BackupError `RECOVERY_KEY_INVALID`, also for the SECRET `recovery.key` (it belongs
 *   offline, never on a signer: the backup needs only the public key)
 */
export function parseRecoveryPublicKey(text: string): Uint8Array {
  const o = parseJson(text, 'recovery public key');
  if (o.format === 'custodian.signer.recovery-key')
    throw new BackupError(
      'RECOVERY_KEY_INVALID',
      'this is the SECRET recovery key (recovery.key): a backup needs only recovery.pub; keep recovery.key offline',
    );
  if (o.format !== 'custodian.signer.recovery-pub' || o.version !== 1)
    throw new BackupError('RECOVERY_KEY_INVALID', 'recovery public key: not a custodian.signer.recovery-pub v1 file');
  return hex32(o.publicKey, 'recovery public key');
}

/**
 * Parse `recovery.key`; checks that its public key is r·G.
 * @throws BackupError `RECOVERY_KEY_INVALID` (the message never contains the key)
 */
export function parseRecoveryKey(text: string): RecoveryKey {
  const o = parseJson(text, 'recovery key');
  if (o.format !== 'custodian.signer.recovery-key' || o.version !== 1)
    throw new BackupError('RECOVERY_KEY_INVALID', 'recovery key: not a custodian.signer.recovery-key v1 file');
  const secretKey = hex32(o.secretKey, 'recovery key');
  const publicKey = hex32(o.publicKey, 'recovery key public half');
  if (bytesToHex(x25519.getPublicKey(secretKey)) !== bytesToHex(publicKey))
    throw new BackupError('RECOVERY_KEY_INVALID', 'recovery key: public key does not match the secret key');
  return { secretKey, publicKey };
}

function payloadKey(shared: Uint8Array, ephemeral: Uint8Array, recipient: Uint8Array): Uint8Array {
  if (shared.every((b) => b === 0))
    throw new BackupError('BACKUP_INTEGRITY', 'X25519 shared secret is zero (low-order key)');
  const info = new Uint8Array(INFO.length + 64);
  info.set(INFO);
  info.set(ephemeral, INFO.length);
  info.set(recipient, INFO.length + 32);
  return hkdf(sha256, shared, SALT, info, 32);
}

function sharedSecret(secret: Uint8Array, pub: Uint8Array): Uint8Array {
  try {
    return x25519.getSharedSecret(secret, pub);
  } catch {
    throw new BackupError('BACKUP_INTEGRITY', 'X25519: invalid public key in the backup header');
  }
}

/**
 * Encrypt `payload` to the recovery public key `recipient` (32 bytes).
 * @returns the whole backup file (format above)
 */
export function encryptBackup(
  header: Omit<BackupHeader, 'format' | 'version' | 'recipient' | 'ephemeralPublicKey'>,
  payload: BackupPayload,
  recipient: Uint8Array,
): Uint8Array {
  const e = x25519.utils.randomSecretKey();
  const E = x25519.getPublicKey(e);
  const full: BackupHeader = {
    format: BACKUP_FORMAT,
    version: BACKUP_VERSION,
    createdAt: header.createdAt,
    peerId: header.peerId,
    recipient: recoveryFingerprint(recipient),
    ephemeralPublicKey: bytesToHex(E),
    keys: header.keys,
  };
  const headerBytes = enc.encode(JSON.stringify(full));
  const prefix = new Uint8Array(12 + headerBytes.length);
  prefix.set(enc.encode(BACKUP_MAGIC));
  new DataView(prefix.buffer).setUint32(8, headerBytes.length, false);
  prefix.set(headerBytes, 12);
  const key = payloadKey(sharedSecret(e, recipient), E, recipient);
  e.fill(0);
  const plain = enc.encode(JSON.stringify(payload));
  const sealed = seal(key, plain, prefix);
  key.fill(0);
  plain.fill(0);
  const out = new Uint8Array(prefix.length + sealed.length);
  out.set(prefix);
  out.set(sealed, prefix.length);
  return out;
}

/**
 * Read the header of a backup file without decrypting (NOT authenticated: only a restore
 * authenticates it).
 * @throws BackupError `BACKUP_FORMAT` for a file that is not a backup, is truncated, or has another version
 */
export function readBackupHeader(file: Uint8Array): { header: BackupHeader; prefixLength: number } {
  if (file.length < 12 || dec.decode(file.subarray(0, 8)) !== BACKUP_MAGIC)
    throw new BackupError('BACKUP_FORMAT', 'not a custodian signer backup file (bad magic)');
  const h = new DataView(file.buffer, file.byteOffset, file.byteLength).getUint32(8, false);
  if (h === 0 || h > MAX_HEADER_BYTES || file.length < 12 + h)
    throw new BackupError('BACKUP_FORMAT', 'backup file truncated or header length invalid');
  let o: Partial<BackupHeader>;
  try {
    o = JSON.parse(dec.decode(file.subarray(12, 12 + h))) as Partial<BackupHeader>;
  } catch {
    throw new BackupError('BACKUP_FORMAT', 'backup header is not JSON');
  }
  if (o?.format !== BACKUP_FORMAT) throw new BackupError('BACKUP_FORMAT', 'backup header: unknown format');
  if (o.version !== BACKUP_VERSION)
    throw new BackupError(
      'BACKUP_FORMAT',
      `backup format version ${String(o.version)} is not supported (this release reads version ${BACKUP_VERSION})`,
    );
  if (
    typeof o.createdAt !== 'string' ||
    typeof o.peerId !== 'string' ||
    typeof o.recipient !== 'string' ||
    typeof o.ephemeralPublicKey !== 'string' ||
    !/^[0-9a-f]{64}$/.test(o.ephemeralPublicKey) ||
    !Array.isArray(o.keys) ||
    !o.keys.every((k) => typeof k?.keyId === 'string' && Number.isSafeInteger(k?.epoch))
  )
    throw new BackupError('BACKUP_FORMAT', 'backup header: malformed fields');
  return { header: o as BackupHeader, prefixLength: 12 + h };
}

/**
 * Authenticate and decrypt a backup file with the recovery key.
 * @throws BackupError `BACKUP_FORMAT`, `BACKUP_WRONG_RECOVERY_KEY` (the header names another
 *   recipient), `BACKUP_INTEGRITY` (the AEAD fails: a changed or truncated byte anywhere)
 */
export function decryptBackup(file: Uint8Array, key: RecoveryKey): { header: BackupHeader; payload: BackupPayload } {
  const { header, prefixLength } = readBackupHeader(file);
  if (header.recipient !== recoveryFingerprint(key.publicKey))
    throw new BackupError(
      'BACKUP_WRONG_RECOVERY_KEY',
      `backup is encrypted to recovery key ${header.recipient}, not to ${recoveryFingerprint(key.publicKey)}`,
    );
  const E = Uint8Array.from(Buffer.from(header.ephemeralPublicKey, 'hex'));
  const k = payloadKey(sharedSecret(key.secretKey, E), E, key.publicKey);
  let plain: Uint8Array;
  try {
    plain = openSealed(k, file.subarray(prefixLength), file.subarray(0, prefixLength), 'backup payload');
  } catch {
    throw new BackupError('BACKUP_INTEGRITY', 'backup does not authenticate: the file was changed or is incomplete');
  } finally {
    k.fill(0);
  }
  let payload: BackupPayload;
  try {
    payload = JSON.parse(dec.decode(plain)) as BackupPayload;
  } catch {
    throw new BackupError('BACKUP_FORMAT', 'backup payload is not JSON');
  } finally {
    plain.fill(0);
  }
  if (
    typeof payload?.identity !== 'string' ||
    !Array.isArray(payload.entries) ||
    !payload.entries.every(
      (e) =>
        (e?.s === 'shares' || e?.s === 'ledger' || e?.s === 'state') &&
        typeof e.k === 'string' &&
        typeof e.v === 'string',
    )
  )
    throw new BackupError('BACKUP_FORMAT', 'backup payload: malformed');
  return { header, payload };
}
