import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { createBase58check } from '@scure/base';
import { InvalidAddressError } from '../errors.js';

const b58c = createBase58check(sha256);

/** TRON address prefix byte (mainnet, Nile and Shasta alike). */
export const TRON_ADDRESS_PREFIX = 0x41;

/**
 * TRON address of a secp256k1 public key (33 or 65 bytes): 0x41 ‖ keccak256(X‖Y)[12..32],
 * base58check (double-SHA-256 checksum).
 */
export function tronAddress(publicKey: Uint8Array): string {
  return b58c.encode(tronAddressBytes(publicKey));
}

/** The 21-byte form (0x41 ‖ 20 bytes). */
export function tronAddressBytes(publicKey: Uint8Array): Uint8Array {
  if (!(publicKey instanceof Uint8Array) || (publicKey.length !== 33 && publicKey.length !== 65))
    throw new RangeError('publicKey: expected 33 or 65 bytes');
  const xy = secp256k1.Point.fromBytes(publicKey).toBytes(false).subarray(1);
  const out = new Uint8Array(21);
  out[0] = TRON_ADDRESS_PREFIX;
  out.set(keccak_256(xy).subarray(12), 1);
  return out;
}

/**
 * Decodes a base58check TRON address to its 21 bytes.
 * @throws InvalidAddressError (bad characters/length, bad checksum, prefix ≠ 0x41)
 */
export function decodeTronAddress(address: string, field = 'destination'): Uint8Array {
  if (typeof address !== 'string' || !/^[1-9A-HJ-NP-Za-km-z]{25,40}$/.test(address))
    throw new InvalidAddressError(field, 'format', 'not a base58 TRON address');
  let bytes: Uint8Array;
  try {
    bytes = b58c.decode(address);
  } catch {
    throw new InvalidAddressError(field, 'checksum', 'base58check checksum mismatch');
  }
  if (bytes.length !== 21) throw new InvalidAddressError(field, 'format', `expected 21 bytes, got ${bytes.length}`);
  if (bytes[0] !== TRON_ADDRESS_PREFIX)
    throw new InvalidAddressError(field, 'wrong-network', `prefix 0x${bytes[0]?.toString(16)} is not TRON's 0x41`);
  return bytes;
}

/** Hex (41…) of a base58 address. */
export function tronAddressHex(address: string, field = 'destination'): string {
  return bytesToHex(decodeTronAddress(address, field));
}

export function encodeTronAddress(bytes21: Uint8Array): string {
  return b58c.encode(bytes21);
}
