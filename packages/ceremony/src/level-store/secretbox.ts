/**
 * Encryption at rest: a 32-byte key derived from the operator passphrase with scrypt (RFC 7914,
 * node:crypto / OpenSSL; N = 2^15, r = 8, p = 1 by default), and XChaCha20-Poly1305 (noble
 * `@noble/ciphers`; 24-byte random nonce) with associated data naming the slot a value belongs to,
 * so a ciphertext moved to another key or sublevel does not decrypt.
 *
 * Sealed format: `0x01 ‖ nonce(24) ‖ ciphertext‖tag(16)`.
 */
import { randomBytes, scrypt } from 'node:crypto';
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { SignerError } from '../errors.js';

/** scrypt cost parameters (RFC 7914 §2). */
export interface ScryptParams {
  readonly N: number;
  readonly r: number;
  readonly p: number;
}

/** Defaults: 32 MiB of memory, ~100 ms on a laptop core. */
export const DEFAULT_SCRYPT: ScryptParams = { N: 1 << 15, r: 8, p: 1 };

/**
 * Derive the 32-byte storage key from a passphrase (UTF-8) and a 16..64-byte salt.
 * @throws RangeError for an empty passphrase or a short salt
 */
export function deriveStorageKey(
  passphrase: string,
  salt: Uint8Array,
  params: ScryptParams = DEFAULT_SCRYPT,
): Promise<Uint8Array> {
  if (typeof passphrase !== 'string' || passphrase.length === 0) throw new RangeError('passphrase: must not be empty');
  if (salt.length < 16) throw new RangeError('salt: at least 16 bytes');
  return new Promise((resolve, reject) => {
    scrypt(
      passphrase.normalize('NFKC'),
      salt,
      32,
      { ...params, maxmem: 256 * params.N * params.r + 1024 * 1024 },
      (err, key) => (err ? reject(err) : resolve(new Uint8Array(key))),
    );
  });
}

const VERSION = 1;

/** Encrypt `plaintext` under `key` bound to `aad`. */
export function seal(key: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Uint8Array {
  const nonce = new Uint8Array(randomBytes(24));
  const ct = xchacha20poly1305(key, nonce, aad).encrypt(plaintext);
  const out = new Uint8Array(1 + 24 + ct.length);
  out[0] = VERSION;
  out.set(nonce, 1);
  out.set(ct, 25);
  return out;
}

/** Error for a stored value that does not decrypt (wrong passphrase, tampering, moved value). */
export class StoreIntegrityError extends SignerError {
  constructor(message: string) {
    super('STORE_INTEGRITY', message);
  }
}

/**
 * Decrypt a value produced by {@link seal}.
 * @throws StoreIntegrityError when the format is unknown or authentication fails
 */
export function open(key: Uint8Array, sealed: Uint8Array, aad: Uint8Array, what: string): Uint8Array {
  if (sealed.length < 1 + 24 + 16 || sealed[0] !== VERSION)
    throw new StoreIntegrityError(`${what}: unknown sealed format`);
  try {
    return xchacha20poly1305(key, sealed.subarray(1, 25), aad).decrypt(sealed.subarray(25));
  } catch {
    throw new StoreIntegrityError(`${what}: does not decrypt (wrong passphrase or tampered data)`);
  }
}
