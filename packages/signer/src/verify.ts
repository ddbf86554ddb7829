/**
 * Independent signature verification of ceremony results (noble): Ed25519 (RFC 8032 §5.1.7) and
 * BIP340 Schnorr for Taproot, ECDSA (SEC 1 §4.1.4) over a 32-byte digest for CGGMP21. For the coordinator to check a signature before broadcasting it.
 */
import { KeyAlgorithm } from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';

/**
 * Verify `signature` over `message` under `publicKey` (Ed25519: 32 bytes; Taproot: 32-byte x-only; ECDSA: 33-byte compressed).
 * @returns false for an invalid signature or malformed input (never throws for bad input)
 * @throws RangeError for an algorithm without a verifier here
 */
export function verifySignature(
  algorithm: number,
  publicKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
): boolean {
  try {
    if (algorithm === KeyAlgorithm.ED25519) return ed25519.verify(signature, message, publicKey);
    if (algorithm === KeyAlgorithm.SECP256K1_TAPROOT) return schnorr.verify(signature, message, publicKey);
    // ECDSA over the 32-byte digest itself (no further hashing), 64-byte r‖s, low-s (BIP 62)
    if (algorithm === KeyAlgorithm.SECP256K1_ECDSA)
      return secp256k1.verify(signature, message, publicKey, { prehash: false, lowS: true });
  } catch {
    return false;
  }
  throw new RangeError(`algorithm: no verifier for ${algorithm}`);
}
