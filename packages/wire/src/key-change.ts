/**
 * Key changes an Admin's enrolled device signs (issue #22, DESIGN §3 "Refresh and resharing"):
 * moving a master key to a new party set, threshold and approver devices (`replace-signer`,
 * `reshare`). A change that adds a party or an approver device gives rights, so a signer takes
 * part in a RESHARE ceremony only for a key change signed by one of its trusted Admin devices
 * (its own configuration, `trustedAdminDevices`), and only when the request's fields are the
 * document's. A new party, which holds nothing of the key yet, learns the key's public keys from
 * the document and checks the reshared key against them.
 *
 * Digest: SHA-256 over the injective `canonicalEncode` of `['custodian.key-change.v1', document]`;
 * signature: P-256 ECDSA r‖s (64 bytes, low-s) over the digest, as for policies (evidence.ts).
 *
 * Also here: the fixed digest of test signatures ({@link testSignatureDigest}) that a reshare
 * and a recovery drill sign instead of a transaction.
 */
import { bytesToHex, type Canonical, canonicalEncode } from '@custodian/crypto';
import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { deviceSign, deviceVerify, type TransferKeyAlgorithm } from './evidence.js';

/** What a key change asks for. `reason` is informational (it is signed, and shown to the Admin). */
export interface KeyChangeDocument {
  readonly kind: 'custodian.key-change';
  /** UUID of the change (the coordinator's), unique. */
  readonly change_id: string;
  /** Signer key id of the master key (32 hex digits). */
  readonly key_id: string;
  /** Every key of the master key, unchanged by the change: public key and chain code, lower-case hex. */
  readonly public_keys: readonly {
    readonly algorithm: TransferKeyAlgorithm;
    /** Ed25519: 32 bytes; secp256k1: 33 bytes compressed (Taproot: the internal key). */
    readonly public_key: string;
    readonly chain_code: string;
  }[];
  /** libp2p peer ids of the new set, in order (identifier k + 1 for position k). */
  readonly new_parties: readonly string[];
  /** t' of the new set, 2 ≤ t' ≤ new_parties.length. */
  readonly new_threshold: number;
  /** The key's approver devices after the change (33-byte compressed P-256 keys, hex). */
  readonly approver_devices: readonly { readonly device_id: string; readonly public_key: string }[];
  /**
   * The key as the change finds it, as its holders store it: refresh/reshare epoch, parties (peer
   * ids, in order) and threshold. A holder takes part only while its record is exactly this, so a
   * signed change applies once: after its commit (epoch + 1) a replay is refused.
   */
  readonly base: { readonly epoch: number; readonly parties: readonly string[]; readonly threshold: number };
  /** ISO 8601 UTC; signers refuse the change after it, and one expiring more than 24 h after they see it. */
  readonly expires_at: string;
  readonly reason: 'replace-signer' | 'reshare';
  /** ISO 8601 UTC; informational. */
  readonly created_at: string;
}

/** A key change signed by an Admin's device (or unsigned: empty device fields and signature). */
export interface SignedKeyChange {
  readonly document: KeyChangeDocument;
  readonly device_id: string;
  /** 33-byte compressed P-256 public key, hex ('' when unsigned). */
  readonly device_public_key: string;
  /** 64-byte r‖s over {@link keyChangeDigest}, hex ('' when unsigned). */
  readonly signature: string;
}

/** SHA-256 digest (32 bytes) an Admin device signs for a key change. */
export function keyChangeDigest(doc: KeyChangeDocument): Uint8Array {
  const c: Canonical = {
    ...doc,
    public_keys: doc.public_keys.map((k) => ({ ...k })),
    new_parties: [...doc.new_parties],
    approver_devices: doc.approver_devices.map((d) => ({ ...d })),
    base: { ...doc.base, parties: [...doc.base.parties] },
  };
  return sha256(canonicalEncode(['custodian.key-change.v1', c]));
}

/** Sign a key change with an Admin device's P-256 secret key (32 bytes). */
export function signKeyChange(document: KeyChangeDocument, deviceId: string, secretKey: Uint8Array): SignedKeyChange {
  return {
    document,
    device_id: deviceId,
    device_public_key: bytesToHex(p256.getPublicKey(secretKey, true)),
    signature: bytesToHex(deviceSign(keyChangeDigest(document), secretKey)),
  };
}

/**
 * Whether a key change is signed by one of `trustedAdminKeys` (compressed P-256, lower-case hex).
 * Never throws (false for any malformed input).
 */
export function keyChangeSignedByTrustedAdmin(change: SignedKeyChange, trustedAdminKeys: readonly string[]): boolean {
  try {
    return (
      typeof change === 'object' &&
      change !== null &&
      /^[0-9a-f]{128}$/.test(String(change.signature)) &&
      trustedAdminKeys.includes(change.device_public_key) &&
      deviceVerify(change.signature, keyChangeDigest(change.document), change.device_public_key)
    );
  } catch {
    return false;
  }
}

/**
 * The 32-byte digest a test signature signs: SHA-256 of `canonicalEncode(['custodian.test-signature.v1',
 * purpose, keyId, hex(ceremonyId)])`. Signed as is (ECDSA and BIP340 sign it as the 32-byte
 * message, Ed25519 as a 32-byte message) under the master keys themselves (no derivation). No
 * transaction of any chain hashes to it, so a signer signs it without transfer evidence.
 */
export function testSignatureDigest(purpose: 'drill' | 'reshare', keyId: string, ceremonyId: Uint8Array): Uint8Array {
  return sha256(canonicalEncode(['custodian.test-signature.v1', purpose, keyId, bytesToHex(ceremonyId)]));
}

/**
 * The message a new party signs with its libp2p identity key (Ed25519, RFC 8032) when it holds a
 * reshare's shares pending: `"custodian/v1/reshare-pending" ‖ 0x00 ‖ canonicalEncode([keyId,
 * hex(reshareCeremonyId)])`. A RESHARE_COMMIT carries one per new party; a party commits (a leaving
 * one deletes its shares) only when all verify, so no party moves before every new share exists.
 */
export function reshareAttestationMessage(keyId: string, reshareCeremonyId: Uint8Array): Uint8Array {
  const tag = new TextEncoder().encode('custodian/v1/reshare-pending');
  const body = canonicalEncode([keyId, bytesToHex(reshareCeremonyId)]);
  const out = new Uint8Array(tag.length + 1 + body.length);
  out.set(tag, 0);
  out.set(body, tag.length + 1);
  return out;
}
