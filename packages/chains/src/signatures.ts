import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { InvalidSignatureError } from './errors.js';
import type { ChainSignature, DigestToSign } from './types.js';

const N = secp256k1.Point.CURVE().n;

/**
 * Checks an ECDSA signature (r, s, recovery id) over a 32-byte digest (no prehash) against the
 * digest's compressed key: the key recovered with the recovery id must equal it.
 * @throws InvalidSignatureError naming `index`
 */
export function checkEcdsa(index: number, d: DigestToSign, sig: ChainSignature, requireLowS: boolean): void {
  if (sig.scheme !== 'ecdsa' || d.scheme !== 'ecdsa')
    throw new InvalidSignatureError(index, 'expected an ECDSA signature');
  if (sig.r <= 0n || sig.r >= N || sig.s <= 0n || sig.s >= N)
    throw new InvalidSignatureError(index, 'r or s out of range');
  if (requireLowS && sig.s > N >> 1n) throw new InvalidSignatureError(index, 's is not low (BIP62/BIP146)');
  if (sig.recovery !== 0 && sig.recovery !== 1) throw new InvalidSignatureError(index, 'recovery id must be 0 or 1');
  let recovered: string;
  try {
    const s = new secp256k1.Signature(sig.r, sig.s, sig.recovery);
    recovered = s.recoverPublicKey(d.digest).toHex(true);
  } catch {
    throw new InvalidSignatureError(index, 'public key not recoverable');
  }
  if (recovered !== bytesToHex(d.key.publicKey))
    throw new InvalidSignatureError(index, 'does not verify under the key');
}

/** Normalises s to the low half (s' = n − s flips the recovery id); ECDSA stays valid. */
export function lowS(sig: ChainSignature & { scheme: 'ecdsa' }): ChainSignature & { scheme: 'ecdsa' } {
  if (sig.s <= N >> 1n) return sig;
  return { scheme: 'ecdsa', r: sig.r, s: N - sig.s, recovery: sig.recovery ^ 1 };
}
