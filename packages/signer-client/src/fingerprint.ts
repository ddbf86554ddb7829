/**
 * The fingerprint of a node's identity key, which operators compare out of band: a server signer
 * prints it when its identity is created (`custodian signer init`), and the coordinator checks the
 * one an operator types when the signer is registered (signers/service.ts).
 */
import { sha256 } from '@noble/hashes/sha2.js';

/**
 * Short fingerprint for out-of-band checks: first 10 bytes of SHA-256(public key), hex in groups
 * of four ("ab12 cd34 …", 24 characters).
 * @param publicKey the key's bytes (a node's Ed25519 public key, 32 bytes; any length is hashed)
 */
export function fingerprint(publicKey: Uint8Array): string {
  const h = Buffer.from(sha256(publicKey).subarray(0, 10)).toString('hex');
  return h.match(/.{4}/g)?.join(' ') ?? h;
}
