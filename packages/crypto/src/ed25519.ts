/**
 * Ed25519 signatures (RFC 8032 §5.1.6 sign, §5.1.7 verify) for envelopes and control requests,
 * computed by OpenSSL through `node:crypto` (≈ 0.02 ms to sign and ≈ 0.06 ms to verify here, against
 * ≈ 0.37 / 0.86 ms for `@noble/curves` in JavaScript), with `@noble/curves` as the fallback when
 * `node:crypto` has no Ed25519 or refuses a key.
 *
 * Both give the same signatures (Ed25519 is deterministic) and the same verdicts: verification is
 * RFC 8032's strict one in both (noble with `zip215: false`: S < L, canonical A and R encodings,
 * cofactorless equation), property-tested in `test/ed25519.test.ts`. Key objects are cached per key
 * (the keys of a ceremony recur in every message), in a bounded map.
 */
import { createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { abytes, equalBytes } from './bytes.js';

const CACHE_LIMIT = 256;
const b64 = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64url');
const publicKeys = new Map<string, KeyObject>();
/** True when this `node:crypto` cannot do Ed25519 (probed once at load): noble does everything. */
const disabled = (() => {
  try {
    const d = new Uint8Array(32).fill(7);
    const x = ed25519.getPublicKey(d);
    const key = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', d: b64(d), x: b64(x) }, format: 'jwk' });
    return !equalBytes(new Uint8Array(sign(null, x, key)), ed25519.sign(x, d));
  } catch {
    return true;
  }
})();

function publicKeyObject(publicKey: Uint8Array): KeyObject {
  const k = b64(publicKey);
  let key = publicKeys.get(k);
  if (!key) {
    key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k }, format: 'jwk' });
    if (publicKeys.size >= CACHE_LIMIT) publicKeys.delete(publicKeys.keys().next().value as string);
    publicKeys.set(k, key);
  }
  return key;
}

/**
 * Private key objects, per secret-key array (WeakMap: they live as long as the
 * caller's array). Callers must not change a secret key array in place except to wipe it.
 */
const privateKeys = new WeakMap<Uint8Array, { key: KeyObject | undefined }>();

function privateEntry(secretKey: Uint8Array) {
  let e = privateKeys.get(secretKey);
  if (!e) {
    const pub = ed25519.getPublicKey(secretKey);
    let key: KeyObject | undefined;
    if (!disabled) {
      try {
        key = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', d: b64(secretKey), x: b64(pub) }, format: 'jwk' });
      } catch {
        key = undefined; // noble signs instead
      }
    }
    e = { key };
    privateKeys.set(secretKey, e);
  }
  return e;
}

/**
 * Sign `message` with a 32-byte Ed25519 secret key: 64-byte signature R ‖ S (RFC 8032 §5.1.6).
 * @throws RangeError for a secret key that is not 32 bytes, or is all zero (wiped)
 */
export function ed25519Sign(message: Uint8Array, secretKey: Uint8Array): Uint8Array {
  abytes(secretKey, 'secretKey', 32);
  if (secretKey.every((b) => b === 0)) throw new RangeError('secretKey: all zero (a wiped key?)');
  const { key } = privateEntry(secretKey);
  if (key) {
    try {
      return new Uint8Array(sign(null, message, key));
    } catch {
      // fall through to noble
    }
  }
  return ed25519.sign(message, secretKey);
}

/**
 * Verify a 64-byte Ed25519 signature on `message` under a 32-byte public key (RFC 8032 §5.1.7,
 * strict). Never throws: wrong lengths, invalid points or scalars give false.
 */
export function ed25519Verify(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature.length !== 64 || publicKey.length !== 32) return false;
  if (!disabled) {
    let key: KeyObject | undefined;
    try {
      key = publicKeyObject(publicKey);
    } catch {
      return false; // not a valid Ed25519 public key encoding
    }
    try {
      return verify(null, message, key, signature);
    } catch {
      return false;
    }
  }
  try {
    return ed25519.verify(signature, message, publicKey, { zip215: false });
  } catch {
    return false;
  }
}
