/**
 * Transfer evidence shared by the coordinator, the signers and the mobile signers (DESIGN §1:
 * signers enforce, the coordinator orchestrates): the transfer intent a signature is for, the policy
 * version an Admin's enrolled device signed, the approvals of enrolled devices, and the policy
 * evaluation every signer re-runs against its own ledger.
 *
 * Digests: SHA-256 over the injective `canonicalEncode` of a tagged record (`custodian.<kind>.v1`).
 * Device signatures: ECDSA P-256 (what phone secure enclaves hold) over the 32-byte digest, no
 * further hashing (`prehash: false`), 64-byte r‖s, low-s. Device public keys: 33-byte compressed
 * SEC1; a device fingerprint is SHA-256(public key) as 16 groups of 4 uppercase hex digits.
 * Amounts are integer base units as decimal strings.
 *
 * Longer than 400 lines because the transfer intent, the policy document, the approvals and their
 * digests form one signed format: split, a reader would lose which bytes each signature covers.
 */
import { bytesToHex, type Canonical, canonicalEncode, ed25519Sign, ed25519Verify, hexToBytes } from '@custodian/crypto';
import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { v5 as uuidv5 } from 'uuid';
import type { RefusalCode } from './refusals.js';

/** Algorithm of the key that signs a transfer (same names as `KeyAlgorithm` in control.proto). */
export type TransferKeyAlgorithm = 'SECP256K1_ECDSA' | 'SECP256K1_TAPROOT' | 'ED25519';

/** The transfer a signature is for. Every field is bound into {@link transferIntentDigest}. */
export interface TransferIntent {
  readonly transfer_id: string;
  readonly profile_id: string;
  readonly wallet_id: string;
  /** Chain key of the blockchain directory entry, e.g. `ethereum-local`, `litecoin-regtest`. */
  readonly blockchain: string;
  readonly asset_id: string;
  readonly asset_symbol: string;
  readonly asset_decimals: number;
  /** Token contract (ERC-20 / TRC-20), null for the native coin. */
  readonly asset_contract: string | null;
  readonly source_address: string;
  readonly destination_address: string;
  /** Integer base units, decimal string. */
  readonly amount: string;
  /** Non-hardened derivation path of the source address key. */
  readonly derivation_path: readonly number[];
  readonly key_algorithm: TransferKeyAlgorithm;
  /** Master key id the path derives from. */
  readonly key_id: string;
  /** ISO 8601 UTC creation time (the UTC day of the daily limit). */
  readonly created_at: string;
  /**
   * Fee cap the approvers accept: the most the transaction may pay in fees, in base units of the
   * blockchain's NATIVE asset (wei, satoshi/litoshi, sun), decimal string. Shown on the phone with
   * the amount. Signers refuse a transaction whose fee can exceed it (EVM: gas limit × max fee per
   * gas; TRON: fee_limit of a contract call; Bitcoin family: inputs − outputs), and also any fee
   * above their own per-blockchain ceiling. A fee bump above the cap is a new intent (same fields,
   * higher `max_fee`) that needs fresh approvals.
   */
  readonly max_fee: string;
}

/**
 * Namespace UUID of wallet ids: UUIDv5 (RFC 9562 §5.5) of the name `wallets.custodian.dev` under
 * the DNS namespace, fixed here so that every coordinator and signer derives the same ids.
 */
export const WALLET_ID_NAMESPACE = 'd2c9f834-0b39-5d4a-b9cf-014bc5f91934';

/**
 * The id of a wallet, derivable by anyone holding the key id (issue #20 review, finding 1): a
 * signer recomputes it from the intent's `key_id` and the wallet index of its `derivation_path`
 * (`m/44/{coin}/{wallet}/…`, element 2), so the coordinator cannot label one wallet's transfer with
 * another wallet's id (and so its policy scope and daily limit).
 * @param keyId the master key id as signers know it (32 lowercase hex digits: the key ceremony id
 *   without dashes; the coordinator's `transferKeyId`)
 * @param walletIndex the wallet's index, a non-hardened BIP32 index (integer in [0, 2^31))
 * @returns UUIDv5 of `custodian.wallet:<keyId>:<walletIndex>` under {@link WALLET_ID_NAMESPACE}
 *   (lowercase, 36 characters)
 * @throws TypeError when keyId is not a non-empty string; RangeError when walletIndex is not such an index
 */
export function walletIdOf(keyId: string, walletIndex: number): string {
  if (typeof keyId !== 'string' || keyId === '') throw new TypeError('keyId: expected a non-empty string');
  if (!Number.isSafeInteger(walletIndex) || walletIndex < 0 || walletIndex >= 0x8000_0000)
    throw new RangeError('walletIndex: expected an integer in [0, 2^31)');
  return uuidv5(`custodian.wallet:${keyId}:${walletIndex}`, WALLET_ID_NAMESPACE);
}

/** A policy version. Default deny: a transfer matching no policy is refused. */
export interface PolicyDocument {
  readonly policy_id: string;
  readonly version: number;
  readonly profile_id: string;
  /** Which transfers the policy governs; null matches any. */
  readonly scope: {
    readonly wallet_ids: readonly string[] | null;
    readonly blockchain: string | null;
    readonly asset_id: string | null;
  };
  /** Permitted destination addresses (exact, as the chain adapter normalises them). Empty: none permitted. */
  readonly whitelist: readonly string[];
  /** Maximum amount per transfer, base units; null: no limit. */
  readonly per_transaction_limit: string | null;
  /** Maximum sum per wallet and asset per UTC day, base units; null: no limit. */
  readonly daily_limit: string | null;
  /** Approvals: `quorum` distinct device approvals when amount > `above_amount`, else 1. */
  readonly approvals: { readonly quorum: number; readonly above_amount: string };
  readonly created_at: string;
  /**
   * `true`: this version is the policy's TOMBSTONE — its deletion, signed by an Admin device like
   * any change (the other fields repeat the last version's, for display). Once signed it ends the
   * policy: no version of it (≤ this one) authorises anything, at the coordinator and at every
   * signer that learned it (refusal `POLICY_DELETED`). Absent on every other version — and then
   * not part of {@link policyDigest}, so versions signed before the field existed still verify.
   */
  readonly deleted?: true;
}

/** A policy version signed by an Admin's enrolled device. */
export interface SignedPolicy {
  readonly document: PolicyDocument;
  readonly device_id: string;
  /** 33-byte compressed P-256 public key, hex. */
  readonly device_public_key: string;
  /** 64-byte r‖s over {@link policyDigest}, hex. */
  readonly signature: string;
}

/** A device's decision on a transfer. */
export interface Approval {
  readonly transfer_id: string;
  /** Hex of {@link transferIntentDigest}: the device approves exactly these fields. */
  readonly intent_digest: string;
  readonly decision: 'APPROVE' | 'REJECT';
  readonly device_id: string;
  /** 33-byte compressed P-256 public key, hex. */
  readonly device_public_key: string;
  readonly decided_at: string;
  /** 64-byte r‖s over {@link approvalDigest}, hex. */
  readonly signature: string;
}

function tagged(tag: string, value: Canonical): Uint8Array {
  return sha256(canonicalEncode([tag, value]));
}

function intentCanonical(i: TransferIntent): Canonical {
  return { ...i, derivation_path: i.derivation_path.map((n) => n) };
}

/** SHA-256 digest of a transfer intent (32 bytes). */
export function transferIntentDigest(intent: TransferIntent): Uint8Array {
  return tagged('custodian.transfer-intent.v1', intentCanonical(intent));
}

/** Whether a policy version is a tombstone (`deleted: true`, exactly). */
export function isPolicyTombstone(doc: PolicyDocument): boolean {
  return (doc as { deleted?: unknown }).deleted === true;
}

/**
 * SHA-256 digest of a policy document (32 bytes). `deleted` is bound only when it is `true` (a
 * tombstone); any other value is left out, exactly as an absent field — so the encoding of every
 * document without the flag is the one it always had, and a tombstone's digest differs from the
 * same fields without it.
 */
export function policyDigest(doc: PolicyDocument): Uint8Array {
  const { deleted: _d, ...fields } = doc as PolicyDocument & { deleted?: unknown };
  const c: Canonical = {
    ...fields,
    scope: { ...doc.scope, wallet_ids: doc.scope.wallet_ids ? [...doc.scope.wallet_ids] : null },
    whitelist: [...doc.whitelist],
    approvals: { ...doc.approvals },
    ...(isPolicyTombstone(doc) ? { deleted: true } : {}),
  };
  return tagged('custodian.policy.v1', c);
}

/**
 * Whether a signed policy version is signed by one of `trustedAdminKeys` (compressed P-256 hex, as
 * pinned in a signer's configuration): the device key is one of them verbatim, the signature is 128
 * lower-case hex digits and verifies over {@link policyDigest}. Never throws (false for any
 * malformed input).
 */
export function policySignedByTrustedAdmin(policy: SignedPolicy, trustedAdminKeys: readonly string[]): boolean {
  try {
    return (
      typeof policy === 'object' &&
      policy !== null &&
      CANONICAL_SIGNATURE.test(String(policy.signature)) &&
      trustedAdminKeys.includes(policy.device_public_key) &&
      deviceVerify(policy.signature, policyDigest(policy.document), policy.device_public_key)
    );
  } catch {
    return false;
  }
}

/** SHA-256 digest of an approval's content (everything but the signature). */
export function approvalDigest(a: Omit<Approval, 'signature'>): Uint8Array {
  const { signature: _s, ...rest } = a as Approval;
  return tagged('custodian.approval.v1', rest as unknown as Canonical);
}

/**
 * Fingerprint of a device public key (33-byte compressed P-256): SHA-256 of the key as 16 groups
 * of 4 uppercase hex digits, read aloud or compared out of band before an Admin approves a device.
 */
export function deviceFingerprint(publicKey: Uint8Array): string {
  const h = bytesToHex(sha256(publicKey)).toUpperCase();
  return h.match(/.{4}/g)?.join(' ') ?? h;
}

/**
 * Digest of a device's enrollment proof of possession (seed §1 item 3, issue #26 item 7): the
 * device's MPC identity key (Ed25519, the libp2p peer id it will use as its party id) signs
 * SHA-256(canonicalEncode(["custodian.device-enrollment.v1", { device_public_key, mpc_peer_id,
 * purpose: "enroll-mpc-peer" }])), where `device_public_key` is the 33-byte compressed P-256 device
 * key as lower-case hex and `mpc_peer_id` the base58btc peer id string. The tag and purpose keep the
 * signature from standing for anything else the MPC key signs (envelopes, control messages); the
 * device key binds it to this enrollment: copied into another device's request, it does not verify.
 * No instance name is bound: the app knows only a URL the coordinator cannot verify behind a
 * proxy, and a proof replayed to another instance gains nothing without the P-256 device key.
 * @param devicePublicKey SEC1 P-256 point, 33 or 65 bytes (compressed before hashing)
 * @throws Error for a key that is not a P-256 point
 */
export function deviceEnrollmentDigest(devicePublicKey: Uint8Array, mpcPeerId: string): Uint8Array {
  const key = bytesToHex(p256.Point.fromBytes(devicePublicKey).toBytes(true));
  return tagged('custodian.device-enrollment.v1', {
    device_public_key: key,
    mpc_peer_id: mpcPeerId,
    purpose: 'enroll-mpc-peer',
  });
}

/**
 * Sign the enrollment proof with the MPC identity's Ed25519 seed (32 bytes, SECRET).
 * @returns 64-byte Ed25519 signature (RFC 8032) as lower-case hex: the request's `mpc_peer_proof`
 */
export function signEnrollmentProof(devicePublicKey: Uint8Array, mpcPeerId: string, mpcSecretKey: Uint8Array): string {
  return bytesToHex(ed25519Sign(deviceEnrollmentDigest(devicePublicKey, mpcPeerId), mpcSecretKey));
}

/**
 * Verify an enrollment proof against the Ed25519 public key (32 bytes) the peer id encodes (the
 * caller decodes the peer id); false for any malformed input (never throws).
 */
export function verifyEnrollmentProof(
  proofHex: string,
  devicePublicKey: Uint8Array,
  mpcPeerId: string,
  mpcPublicKey: Uint8Array,
): boolean {
  try {
    if (!/^[0-9a-fA-F]{128}$/.test(proofHex)) return false;
    return ed25519Verify(hexToBytes(proofHex), deviceEnrollmentDigest(devicePublicKey, mpcPeerId), mpcPublicKey);
  } catch {
    return false;
  }
}

/** Sign a 32-byte evidence digest with a device's P-256 secret key (32 bytes). Returns 64-byte r‖s. */
export function deviceSign(digest: Uint8Array, secretKey: Uint8Array): Uint8Array {
  return p256.sign(digest, secretKey, { prehash: false, lowS: true });
}

/** Verify a device signature; false for any malformed input (never throws). */
export function deviceVerify(signatureHex: string, digest: Uint8Array, publicKeyHex: string): boolean {
  try {
    return p256.verify(hexToBytes(signatureHex), digest, hexToBytes(publicKeyHex), { prehash: false, lowS: true });
  } catch {
    return false;
  }
}

/** Sign a policy document as an Admin's device. */
export function signPolicy(document: PolicyDocument, deviceId: string, secretKey: Uint8Array): SignedPolicy {
  return {
    document,
    device_id: deviceId,
    device_public_key: bytesToHex(p256.getPublicKey(secretKey, true)),
    signature: bytesToHex(deviceSign(policyDigest(document), secretKey)),
  };
}

/** Sign a decision on a transfer intent as a device. */
export function signApproval(
  intent: TransferIntent,
  decision: 'APPROVE' | 'REJECT',
  deviceId: string,
  secretKey: Uint8Array,
  decidedAt: string,
): Approval {
  const body = {
    transfer_id: intent.transfer_id,
    intent_digest: bytesToHex(transferIntentDigest(intent)),
    decision,
    device_id: deviceId,
    device_public_key: bytesToHex(p256.getPublicKey(secretKey, true)),
    decided_at: decidedAt,
  };
  return { ...body, signature: bytesToHex(deviceSign(approvalDigest(body), secretKey)) };
}

/**
 * A device signature as it must travel: 64-byte r‖s as exactly 128 lower-case hex digits. Hex
 * decoding also accepts upper case, so without this one approval would have several encodings, and
 * a used approval re-encoded would look fresh to a ledger that remembers signatures as strings.
 */
const CANONICAL_SIGNATURE = /^[0-9a-f]{128}$/;

/**
 * Why evidence was refused: the codes of the refusal catalogue (refusals.ts, meanings there) that
 * {@link verifyTransferEvidence} and {@link evaluatePolicy} return; the transfer's sub_status.
 */
export type EvidenceRefusal = Extract<
  RefusalCode,
  | 'POLICY_SIGNATURE_VERIFICATION_FAILED'
  | 'POLICY_DELETED'
  | 'NO_POLICY_FOUND'
  | 'POLICY_OUT_OF_SCOPE'
  | 'DESTINATION_NOT_WHITELISTED'
  | 'TRANSACTION_LIMIT_EXCEEDED'
  | 'DAILY_LIMIT_EXCEEDED'
  | 'INSUFFICIENT_APPROVALS'
  | 'REJECTED_BY_APPROVER'
  | 'APPROVAL_SIGNATURE_INVALID'
  | 'DIGEST_MISMATCH'
>;

/** Does the policy's scope cover the intent? */
export function policyCovers(doc: PolicyDocument, intent: TransferIntent): boolean {
  const s = doc.scope;
  return (
    doc.profile_id === intent.profile_id &&
    (s.wallet_ids === null || s.wallet_ids.includes(intent.wallet_id)) &&
    (s.blockchain === null || s.blockchain === intent.blockchain) &&
    (s.asset_id === null || s.asset_id === intent.asset_id)
  );
}

/** Approvals a policy requires for an amount (base units). */
export function approvalsRequired(doc: PolicyDocument, amount: bigint): number {
  return amount > BigInt(doc.approvals.above_amount) ? Math.max(1, doc.approvals.quorum) : 1;
}

/**
 * Evaluate a policy for an intent (whitelist, per-transaction limit, daily limit). `spentToday` is
 * the sum of the wallet's transfers of that asset on the intent's UTC day that are not failed or
 * rejected — the coordinator takes it from its store, a signer from its own ledger.
 */
export function evaluatePolicy(
  doc: PolicyDocument,
  intent: TransferIntent,
  spentToday: bigint,
): { ok: true; approvalsRequired: number } | { ok: false; refusal: EvidenceRefusal } {
  if (!policyCovers(doc, intent)) return { ok: false, refusal: 'POLICY_OUT_OF_SCOPE' };
  if (!doc.whitelist.includes(intent.destination_address)) return { ok: false, refusal: 'DESTINATION_NOT_WHITELISTED' };
  const amount = BigInt(intent.amount);
  if (doc.per_transaction_limit !== null && amount > BigInt(doc.per_transaction_limit)) {
    return { ok: false, refusal: 'TRANSACTION_LIMIT_EXCEEDED' };
  }
  if (doc.daily_limit !== null && spentToday + amount > BigInt(doc.daily_limit)) {
    return { ok: false, refusal: 'DAILY_LIMIT_EXCEEDED' };
  }
  return { ok: true, approvalsRequired: approvalsRequired(doc, amount) };
}

/**
 * A signer's full check of the evidence accompanying a sign request (DESIGN §1):
 * the policy is signed by a trusted Admin device and is not a tombstone (`POLICY_DELETED`); the policy covers and allows the intent given the
 * signer's own `spentToday`; at least the required number of distinct approver devices (from
 * `approverKeys`: device id → public key hex, the key's mobile signers) approved exactly this
 * intent, with valid signatures, and none rejected it. Signatures must be 128 lower-case hex
 * digits and device keys exactly the enrolled (lower-case hex) keys: anything else is refused as
 * APPROVAL_SIGNATURE_INVALID / POLICY_SIGNATURE_VERIFICATION_FAILED.
 */
export function verifyTransferEvidence(args: {
  readonly intent: TransferIntent;
  readonly policy: SignedPolicy | null;
  readonly approvals: readonly Approval[];
  /** Admin device public keys (hex) this signer trusts, pinned in its configuration. */
  readonly trustedAdminKeys: readonly string[];
  /** Enrolled approver devices: device id → compressed public key hex. */
  readonly approverKeys: ReadonlyMap<string, string>;
  readonly spentToday: bigint;
}): { ok: true } | { ok: false; refusal: EvidenceRefusal } {
  const { intent, policy } = args;
  if (!policy) return { ok: false, refusal: 'NO_POLICY_FOUND' };
  if (!policySignedByTrustedAdmin(policy, args.trustedAdminKeys)) {
    return { ok: false, refusal: 'POLICY_SIGNATURE_VERIFICATION_FAILED' };
  }
  // a signed tombstone authorises nothing
  if (isPolicyTombstone(policy.document)) return { ok: false, refusal: 'POLICY_DELETED' };
  const verdict = evaluatePolicy(policy.document, intent, args.spentToday);
  if (!verdict.ok) return verdict;
  const digestHex = bytesToHex(transferIntentDigest(intent));
  const approvers = new Set<string>();
  for (const a of args.approvals) {
    const key = args.approverKeys.get(a.device_id);
    // one encoding per approval: callers remember used approvals by their signature string
    if (
      !key ||
      key !== a.device_public_key ||
      !CANONICAL_SIGNATURE.test(String(a.signature)) ||
      a.transfer_id !== intent.transfer_id ||
      a.intent_digest !== digestHex
    ) {
      return { ok: false, refusal: 'APPROVAL_SIGNATURE_INVALID' };
    }
    if (!deviceVerify(a.signature, approvalDigest(a), key)) return { ok: false, refusal: 'APPROVAL_SIGNATURE_INVALID' };
    if (a.decision === 'REJECT') return { ok: false, refusal: 'REJECTED_BY_APPROVER' };
    approvers.add(a.device_id);
  }
  if (approvers.size < verdict.approvalsRequired) return { ok: false, refusal: 'INSUFFICIENT_APPROVALS' };
  return { ok: true };
}
