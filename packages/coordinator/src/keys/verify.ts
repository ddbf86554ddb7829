/**
 * The coordinator's own checks of key lifecycle ceremony outcomes (issue #22): every party reported
 * the same public keys, equal to the ones the key change (or the master key record) names, and the
 * test signatures verify — Ed25519 (RFC 8032 §5.1.7), BIP340 Schnorr (Taproot, x-only key: the
 * internal key or its BIP341 key-path tweak with no script tree), ECDSA over the 32-byte digest
 * itself (SEC 1 §4.1.4, low-s) — over `testSignatureDigest(purpose, keyId, ceremonyId)`.
 */
import {
  type CeremonyResult,
  KeyAlgorithm,
  type KeyChangeDocument,
  type PublicKeyInfo,
  type SignatureInfo,
} from '@custodian/wire';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, concatBytes, equalBytes, hexToBytes } from '@noble/curves/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';

/** A key of a master key: algorithm name, public key (hex: Ed25519 32 bytes, secp256k1 33 bytes) and chain code (hex). */
export type KeyEntry = KeyChangeDocument['public_keys'][number];

const NAMES: Record<number, KeyEntry['algorithm']> = {
  [KeyAlgorithm.ED25519]: 'ED25519',
  [KeyAlgorithm.SECP256K1_TAPROOT]: 'SECP256K1_TAPROOT',
  [KeyAlgorithm.SECP256K1_ECDSA]: 'SECP256K1_ECDSA',
};

/** Algorithm name of a wire `KeyAlgorithm` value (undefined for an unknown one). */
export function algorithmName(a: number): KeyEntry['algorithm'] | undefined {
  return NAMES[a];
}

/** Wire public keys → key entries, sorted by algorithm; secp256k1 x-only keys (32 bytes) get the 0x02 prefix. */
export function keyEntries(keys: readonly PublicKeyInfo[]): KeyEntry[] {
  const out: KeyEntry[] = [];
  for (const k of keys) {
    const algorithm = algorithmName(k.algorithm);
    if (!algorithm) continue;
    const pk =
      algorithm !== 'ED25519' && k.publicKey.length === 32 ? concatBytes(Uint8Array.of(2), k.publicKey) : k.publicKey;
    out.push({ algorithm, public_key: bytesToHex(pk), chain_code: bytesToHex(k.chainCode) });
  }
  return out.sort((a, b) => a.algorithm.localeCompare(b.algorithm));
}

/** Whether two key lists are equal (same algorithms, keys and chain codes). */
export function sameKeys(a: readonly KeyEntry[], b: readonly KeyEntry[]): boolean {
  const s = (x: readonly KeyEntry[]) =>
    JSON.stringify(
      [...x]
        .sort((p, q) => p.algorithm.localeCompare(q.algorithm))
        .map((k) => [k.algorithm, k.public_key, k.chain_code]),
    );
  return s(a) === s(b);
}

/**
 * The parties' common outcome: every result OK with the same public keys.
 * @returns the key entries, or the reason it is not accepted
 */
export function commonKeys(
  results: readonly { party: { kind: string; id: string }; result: CeremonyResult }[],
): { ok: true; keys: KeyEntry[] } | { ok: false; error: string } {
  let first: KeyEntry[] | undefined;
  for (const r of results) {
    const keys = keyEntries(r.result.publicKeys ?? []);
    if (first === undefined) first = keys;
    else if (!sameKeys(first, keys))
      return { ok: false, error: `${r.party.kind} ${r.party.id} reported other public keys` };
  }
  return first ? { ok: true, keys: first } : { ok: false, error: 'no party answered' };
}

function taprootTweaked(xOnly: Uint8Array): Uint8Array | undefined {
  try {
    const tag = sha256(new TextEncoder().encode('TapTweak'));
    const t = secp256k1.Point.Fn.fromBytes(sha256(concatBytes(tag, tag, xOnly)));
    const P = secp256k1.Point.fromHex(bytesToHex(concatBytes(Uint8Array.of(2), xOnly)));
    return P.add(secp256k1.Point.BASE.multiply(t)).toBytes(true).subarray(1);
  } catch {
    return undefined;
  }
}

/** One verified test signature as the admin API shows it (hex fields). */
export interface CheckedSignature {
  algorithm: string;
  public_key: string;
  digest: string;
  signature: string;
  verified: boolean;
}

/**
 * Verify `sig` over `digest` under the key of its algorithm in `keys`: the signature's public key
 * must be that key (Taproot: its x-only form or its key-path tweak) and the signature must verify.
 * Never throws.
 */
export function checkSignature(sig: SignatureInfo, digest: Uint8Array, keys: readonly KeyEntry[]): CheckedSignature {
  const algorithm = algorithmName(sig.algorithm) ?? `UNKNOWN_${sig.algorithm}`;
  const key = keys.find((k) => k.algorithm === algorithm);
  const view = {
    algorithm,
    public_key: key?.public_key ?? bytesToHex(sig.publicKey ?? new Uint8Array(0)),
    digest: bytesToHex(digest),
    signature: bytesToHex(sig.signature ?? new Uint8Array(0)),
  };
  let verified = false;
  try {
    if (key && equalBytes(sig.digest ?? new Uint8Array(0), digest)) {
      const pk = hexToBytes(key.public_key);
      if (algorithm === 'ED25519') verified = ed25519.verify(sig.signature, digest, pk);
      else if (algorithm === 'SECP256K1_ECDSA')
        verified = secp256k1.verify(sig.signature, digest, pk, { prehash: false, lowS: true });
      else if (algorithm === 'SECP256K1_TAPROOT') {
        const x = pk.subarray(1);
        const tweaked = taprootTweaked(x);
        verified =
          schnorr.verify(sig.signature, digest, x) ||
          (tweaked !== undefined && schnorr.verify(sig.signature, digest, tweaked));
      }
    }
  } catch {
    verified = false;
  }
  return { ...view, verified };
}

/**
 * Check the test signatures of a ceremony: for every key in `keys` at least one party returned a
 * signature that verifies. @returns the checked signatures (one per key, the first valid one, else
 * the first seen) and whether all keys are covered
 */
export function checkTestSignatures(
  results: readonly { result: CeremonyResult }[],
  digest: Uint8Array,
  keys: readonly KeyEntry[],
): { signatures: CheckedSignature[]; ok: boolean } {
  const all = results.flatMap((r) => r.result.signatures ?? []).map((s) => checkSignature(s, digest, keys));
  const signatures: CheckedSignature[] = [];
  for (const k of keys) {
    const mine = all.filter((s) => s.algorithm === k.algorithm);
    const pick = mine.find((s) => s.verified) ?? mine[0];
    signatures.push(
      pick ?? {
        algorithm: k.algorithm,
        public_key: k.public_key,
        digest: bytesToHex(digest),
        signature: '',
        verified: false,
      },
    );
  }
  return { signatures, ok: signatures.length > 0 && signatures.every((s) => s.verified) };
}
