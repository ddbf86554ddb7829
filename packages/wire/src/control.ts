/**
 * Control plane (coordinator ↔ signer, proto `custodian.v1` control.proto): signed requests and
 * responses. A request is `SignedControl { request, signature }` where `signature` is the
 * coordinator's Ed25519 signature (RFC 8032) over `"custodian/v1/control" ‖ 0x00 ‖ request`.
 * Signers accept requests signed by their configured coordinator key only.
 *
 * Longer than 400 lines because it declares the TypeScript shape of every control message (with
 * the blame evidence types) next to the one codec that signs and checks them.
 */
import { ed25519Sign, ed25519Verify } from '@custodian/crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, concatBytes, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { DEFAULT_LIMITS, decodeMessage, encodeMessage, type WireLimits } from './codec.js';
import { accept, reject, type WireResult } from './errors.js';
import { messageType } from './schema.js';

/** Control protocol version. */
export const CONTROL_VERSION = 1;

/**
 * Longest ceremony deadline a signer accepts, ms: a `StartCeremony.deadline_unix_ms` more than this
 * after the request reaches the signer is refused (the master key ceremony's 5 minutes, seed §8,
 * plus slack). The coordinator relies on it too: no signer still runs a ceremony started longer
 * ago than this.
 */
export const MAX_DEADLINE_MS = 10 * 60_000;

/** Length of the random `ControlRequest.nonce` {@link signControlRequest} draws, bytes. */
export const CONTROL_NONCE_BYTES = 16;

const ControlRequestType = messageType('custodian.v1.ControlRequest');
const SignedControlType = messageType('custodian.v1.SignedControl');
const ControlResponseType = messageType('custodian.v1.ControlResponse');
const ControlFrameType = messageType('custodian.v1.ControlFrame');
const PREFIX = concatBytes(utf8ToBytes('custodian/v1/control'), Uint8Array.of(0));

/** `custodian.v1.CeremonyKind` values. */
export const CeremonyKind = {
  MASTER_KEY: 1,
  SIGN: 2,
  REFRESH: 3,
  PRESIGN: 4,
  RESHARE: 5,
  RESHARE_COMMIT: 6,
  DRILL: 7,
} as const;
/** `custodian.v1.KeyAlgorithm` values. */
export const KeyAlgorithm = { ED25519: 1, SECP256K1_TAPROOT: 2, SECP256K1_ECDSA: 3 } as const;
/** `custodian.v1.Outcome` values. */
export const Outcome = { UNSPECIFIED: 0, OK: 1, ABORTED: 2, DEADLINE_EXCEEDED: 3, REFUSED: 4 } as const;

export interface TransferFields {
  transferId?: string;
  chain?: string;
  asset?: string;
  source?: string;
  destination?: string;
  amount?: string;
  fee?: string;
  unsignedTx?: Uint8Array;
}

export interface SignRequest {
  keyId: string;
  algorithm: number;
  derivationPath: number[];
  digests: Uint8Array[];
  transfer?: TransferFields;
  taprootMerkleRoot?: Uint8Array;
  /** ECDSA: pooled presignature id (absent/empty: cold signing). */
  presignatureId?: string;
  /** ECDSA: send the signature shares to the coordinator as interim frames (control.proto `interim_shares`). */
  interimShares?: boolean;
  /**
   * Per-digest keys (control.proto `digest_keys`): empty/absent — every digest is signed with
   * `algorithm` at `derivationPath`; otherwise exactly one per digest, in order (issue #28: mixed
   * P2WPKH/P2TR inputs of several wallet addresses in one ceremony).
   */
  digestKeys?: DigestKeyWire[];
  /** Transfer evidence (control.proto field 16) the signer verifies before contributing. */
  evidence?: TransferEvidenceWire;
}

/** `custodian.v1.DigestKey`: the key one digest is signed with (`KeyAlgorithm` value, non-hardened path). */
export interface DigestKeyWire {
  algorithm: number;
  derivationPath: number[];
}

/** `custodian.v1.TransferEvidence`: JSON texts of the evidence shapes of `evidence.ts`. */
export interface TransferEvidenceWire {
  intentJson?: string;
  policyJson?: string;
  approvalsJson?: string[];
  chainContextJson?: string;
}

/** `custodian.v1.ApproverDevice`: a key's approver device (33-byte compressed P-256 public key). */
export interface ApproverDeviceWire {
  deviceId: string;
  publicKey: Uint8Array;
}

export interface StartCeremony {
  ceremonyId: Uint8Array;
  kind: number;
  parties: { peerId: string }[];
  threshold: number;
  deadlineUnixMs: number;
  sign?: SignRequest;
  keyId?: string;
  /** Master key: algorithms to create (empty or absent: all). */
  algorithms?: number[];
  /** Presign: number of presignatures (1..64). */
  presignCount?: number;
  /** Master key: the key's approver devices (stored by the signers with the key). */
  approverDevices?: ApproverDeviceWire[];
  /** Reshare: the new set, threshold, approver devices and the Admin-signed key change (control.proto `ReshareRequest`). */
  reshare?: ReshareRequestWire;
  /** Reshare commit: the RESHARE ceremony whose pending shares to promote. */
  reshareCeremonyId?: Uint8Array;
  /** Reshare commit: every new party's `pendingAttestation`, in `reshare.newParties` order of the RESHARE. */
  pendingAttestations?: Uint8Array[];
}

/** `custodian.v1.ReshareRequest`. */
export interface ReshareRequestWire {
  /** Ordered new set: `newParties[k]` gets identifier k + 1. */
  newParties: { peerId: string }[];
  /** t' of the new set. */
  newThreshold: number;
  /** The key's approver devices after the change. */
  approverDevices: ApproverDeviceWire[];
  /** JSON `SignedKeyChange` (key-change.ts). */
  keyChangeJson: string;
}

/** `custodian.v1.RevokeApprover`: drop this device from every key's approver devices. */
export interface RevokeApproverWire {
  deviceId: string;
  /** 33-byte compressed P-256 key (empty: match by id only). */
  publicKey?: Uint8Array;
}

/** `custodian.v1.PolicySync`: Admin-signed policy versions and tombstones, JSON `SignedPolicy` each (evidence.ts). */
export interface PolicySyncWire {
  signedPoliciesJson: string[];
}

/** Outcome of one pushed version at a signer (control.proto `PolicySyncItem.outcome`). */
export type PolicySyncOutcome =
  | 'STORED'
  | 'KNOWN'
  | 'POLICY_SIGNATURE_VERIFICATION_FAILED'
  | 'MALFORMED'
  | 'ENFORCEMENT_NOT_CONFIGURED';

/** `custodian.v1.PolicySyncItem`. */
export interface PolicySyncItemWire {
  policyId: string;
  version: number;
  outcome: PolicySyncOutcome;
  /** The version the signer holds for the policy after the push (0: none), and whether it is a tombstone. */
  heldVersion: number;
  heldDeleted: boolean;
}

/**
 * `custodian.v1.PresignatureInventory`: which presignatures of `keyId` for the signing set
 * `parties` (peer ids, any order) the signer holds (ids only, never contents).
 */
export interface PresignatureInventoryWire {
  keyId: string;
  parties: { peerId: string }[];
}

/** `custodian.v1.HeldPresignature`: an id (`<ceremony id hex>.<index>`) and its age on the signer's clock, ms. */
export interface HeldPresignatureWire {
  id: string;
  ageMs: number;
}

/** `custodian.v1.DeletePresignatures`: delete these ids of `keyId` and the signing set `parties` (1..4096 ids). */
export interface DeletePresignaturesWire {
  keyId: string;
  parties: { peerId: string }[];
  ids: string[];
}

/** `custodian.v1.DeletePresignaturesResult`: presignatures deleted, and requested ids a SIGN ceremony is using (kept). */
export interface DeletePresignaturesResultWire {
  deleted: number;
  inUse: string[];
}

export interface ControlRequest {
  version: number;
  issuedUnixMs: number;
  /**
   * Random bytes that make each signed request distinct (control.proto `nonce`): senders leave it
   * unset and {@link signControlRequest} draws {@link CONTROL_NONCE_BYTES} fresh ones. Opened
   * requests of coordinators that predate it have it empty.
   */
  nonce?: Uint8Array;
  start?: StartCeremony;
  abort?: { ceremonyId: Uint8Array; reason: string };
  status?: Record<string, never>;
  /** Signed policy versions and tombstones for the signer to learn (control.proto `PolicySync`). */
  policySync?: PolicySyncWire;
  /** The presignature ids the signer holds for a key and signing set (reconciliation). */
  presignatureInventory?: PresignatureInventoryWire;
  /** Delete orphaned presignatures of a key and signing set (reconciliation). */
  deletePresignatures?: DeletePresignaturesWire;
  /** Revoke a device's approval rights on every key (only ever reduces rights). */
  revokeApprover?: RevokeApproverWire;
}

export interface PublicKeyInfo {
  algorithm: number;
  publicKey: Uint8Array;
  chainCode: Uint8Array;
}

export interface SignatureInfo {
  algorithm: number;
  digest: Uint8Array;
  signature: Uint8Array;
  publicKey: Uint8Array;
  /** ECDSA recovery id 0–3 as computed by the signers (a hint; absent or 0 for other algorithms). */
  recoveryId?: number;
}

/** `custodian.v1.BlameMessage`: a message as received (SignedEnvelope bytes) and its p2p one-message key (or empty). */
export interface BlameMessageInfo {
  signedEnvelope: Uint8Array;
  messageKey?: Uint8Array;
}

/** `custodian.v1.BroadcastStatement`: a party's signed claim of its broadcast's echo hash. */
export interface BroadcastStatementInfo {
  protocol: string;
  sessionId: Uint8Array;
  round: number;
  sender: number;
  hash: Uint8Array;
  signature: Uint8Array;
}

/**
 * `custodian.v1.Blame`: a party the reporting signer names, with the evidence a third party checks
 * (issue [blame]); signers that predate it send party, peerId and reason only.
 */
export interface BlameInfo {
  party: number;
  peerId: string;
  reason: string;
  check?: string;
  round?: number;
  protocol?: string;
  messages?: BlameMessageInfo[];
  statements?: BroadcastStatementInfo[];
  sessionParties?: string[];
  sessionId?: Uint8Array;
  sessionLabel?: string;
}

export interface CeremonyResult {
  ceremonyId: Uint8Array;
  outcome: number;
  keyId?: string;
  publicKeys?: PublicKeyInfo[];
  signatures?: SignatureInfo[];
  transcriptHash?: Uint8Array;
  blame?: BlameInfo[];
  /** Human-readable account of a failure (logs, operators; no secret). Never parsed: see `refusal`. */
  error?: string;
  presignatureIds?: string[];
  /**
   * REFUSED: why, as control.proto `RefusalCode` (refusals.ts: `refusalValue(code)` to send,
   * `refusalOf(value)` to read; absent or 0 reads as `UNKNOWN`).
   */
  refusal?: number;
  /** RESHARE from a new party: its 64-byte Ed25519 attestation over `reshareAttestationMessage` (key-change.ts). */
  pendingAttestation?: Uint8Array;
}

/** `custodian.v1.KeyInfo`: a key a signer holds, with its epoch and backup state. */
export interface NodeKeyInfo {
  keyId: string;
  publicKeys: PublicKeyInfo[];
  threshold: number;
  parties: { peerId: string }[];
  /** Refresh/reshare epoch of the shares (0 after the master key ceremony). */
  epoch?: number;
  /** Epoch of the newest encrypted backup (current when equal to `epoch`) and when it was written (Unix ms; 0: never). */
  backupEpoch?: number;
  backupUnixMs?: number;
  /** Hex id of a RESHARE ceremony whose shares are held pending (empty: none). */
  pendingReshare?: string;
}

export interface NodeStatus {
  peerId: string;
  keys: NodeKeyInfo[];
  connectedPeers: string[];
  activeCeremonies: number;
  presignaturePool?: Record<string, number>;
  /** Hex id of the signer's store (new after a restore from a backup). */
  storeId?: string;
}

/** `custodian.v1.SignatureShare`: a signer's share of one ECDSA signature for the coordinator's combination. */
export interface SignatureShareWire {
  /** Index into the request's `digests`. */
  digestIndex: number;
  /** R' = ρ·R, 33 bytes SEC1-compressed. */
  rPoint: Uint8Array;
  /** s_i = ρ⁻¹·σ_i mod q, 32 bytes big-endian. */
  s: Uint8Array;
}

/** `custodian.v1.SignatureShares`: the body of an interim frame of a SIGN exchange. */
export interface SignatureSharesWire {
  ceremonyId: Uint8Array;
  shares: SignatureShareWire[];
}

export interface ControlResponse {
  version: number;
  result?: CeremonyResult;
  status?: NodeStatus;
  /** Interim frames only: ECDSA signature shares (control.proto `SignatureShares`). */
  shares?: SignatureSharesWire;
  /** The answer to a `policySync` request: one item per pushed version, in order. */
  policySync?: { items: PolicySyncItemWire[] };
  /** The answer to a `presignatureInventory` request. */
  presignatureInventory?: { presignatures: HeldPresignatureWire[] };
  /** The answer to a `deletePresignatures` request. */
  deletePresignatures?: DeletePresignaturesResultWire;
  /** The answer to a `revokeApprover` request. */
  revokeApprover?: { keysUpdated: number };
}

function plain<T>(type: typeof ControlRequestType, m: unknown): T {
  return type.toObject(m as never, { longs: Number, defaults: true, arrays: true, objects: true, oneofs: false }) as T;
}

/**
 * Sign a control request with the coordinator's Ed25519 secret key (32 bytes). Unless `req.nonce`
 * is given, the request carries {@link CONTROL_NONCE_BYTES} fresh random bytes (the platform's
 * CSPRNG), so two calls with the same request — by coordinator replicas sharing the key, in the
 * same millisecond — give distinct signed requests that a signer does not take for a replay
 * (`req` itself is not changed). A given nonce is signed as is: only tests and vectors pass one
 * (an empty one encodes the request as a coordinator that predates the field did).
 * @returns SignedControl bytes
 * @throws WireSchemaError when `req` does not fit `custodian.v1.ControlRequest`
 */
export function signControlRequest(req: ControlRequest, coordinatorSecretKey: Uint8Array): Uint8Array {
  const withNonce = req.nonce === undefined ? { ...req, nonce: randomBytes(CONTROL_NONCE_BYTES) } : req;
  const request = encodeMessage(ControlRequestType, withNonce as unknown as Record<string, unknown>);
  const signature = ed25519Sign(concatBytes(PREFIX, request), coordinatorSecretKey);
  return encodeMessage(SignedControlType, { request, signature });
}

/**
 * The replay-window key of a SignedControl: hex SHA-256 (64 characters) of its signed `request`
 * bytes. Not of the SignedControl bytes themselves: anyone can re-encode those around the same
 * request and signature (fields reordered, unknown fields added) and get other bytes that still
 * verify; the signed request cannot change without the coordinator's key. Call it on a
 * SignedControl {@link openControlRequest} accepted.
 * @returns the key, or undefined when `bytes` is not a SignedControl
 */
export function controlRequestDigest(bytes: unknown, limits: WireLimits = DEFAULT_LIMITS): string | undefined {
  const outer = decodeMessage(SignedControlType, bytes, limits);
  if (!outer.ok) return undefined;
  const request = (outer.value as unknown as { request?: Uint8Array }).request ?? new Uint8Array(0);
  return bytesToHex(sha256(request));
}

/**
 * Verify and decode a SignedControl against the coordinator's Ed25519 public key (32 bytes).
 * Never throws: malformed, oversized or badly signed requests are typed rejections.
 */
export function openControlRequest(
  bytes: unknown,
  coordinatorPublicKey: Uint8Array,
  limits: WireLimits = DEFAULT_LIMITS,
): WireResult<ControlRequest> {
  const outer = decodeMessage(SignedControlType, bytes, limits);
  if (!outer.ok) return outer;
  const s = outer.value as unknown as { request?: Uint8Array; signature?: Uint8Array };
  const request = s.request ?? new Uint8Array(0);
  const signature = s.signature ?? new Uint8Array(0);
  let valid = false;
  try {
    valid = signature.length === 64 && ed25519Verify(signature, concatBytes(PREFIX, request), coordinatorPublicKey);
  } catch {
    valid = false;
  }
  if (!valid) return reject('bad-signature', 'control request: not signed by the configured coordinator');
  const inner = decodeMessage(ControlRequestType, request, limits);
  if (!inner.ok) return inner;
  let value: ControlRequest;
  try {
    value = plain<ControlRequest>(ControlRequestType, inner.value);
  } catch (e) {
    return reject('malformed', `control request: ${e instanceof Error ? e.message.slice(0, 120) : 'conversion'}`);
  }
  if (value.version !== CONTROL_VERSION)
    return reject('bad-version', `control request: unsupported version ${value.version}`);
  const present = [
    value.start,
    value.abort,
    value.status,
    value.policySync,
    value.presignatureInventory,
    value.deletePresignatures,
    value.revokeApprover,
  ].filter((x) => x !== undefined && x !== null).length;
  if (present !== 1)
    return reject(
      'malformed',
      'control request: exactly one of start, abort, status, policy_sync, presignature_inventory, delete_presignatures, revoke_approver expected',
    );
  return accept(value);
}

/** Encode a control response (unsigned: it travels on the Noise-authenticated stream the coordinator opened). */
export function encodeControlResponse(res: ControlResponse): Uint8Array {
  return encodeMessage(ControlResponseType, res as unknown as Record<string, unknown>);
}

/** Decode a control response. Never throws. */
export function decodeControlResponse(
  bytes: unknown,
  limits: WireLimits = DEFAULT_LIMITS,
): WireResult<ControlResponse> {
  const r = decodeMessage(ControlResponseType, bytes, limits);
  if (!r.ok) return r;
  try {
    return accept(plain<ControlResponse>(ControlResponseType, r.value));
  } catch (e) {
    return reject('malformed', `control response: ${e instanceof Error ? e.message.slice(0, 120) : 'conversion'}`);
  }
}

/** A frame of the multiplexed control stream: `id` pairs a response with its request. */
export interface ControlFrame {
  /** Exchange id, unique on the stream (a safe integer). */
  readonly id: number;
  /** SignedControl bytes (to a signer) or ControlResponse bytes (back). */
  readonly body: Uint8Array;
  /** Signer → coordinator: sent before the exchange's final response (which has it false). */
  readonly interim?: boolean;
}

/** Encode a control frame. @throws RangeError for an id that is not a safe non-negative integer */
export function encodeControlFrame(frame: ControlFrame): Uint8Array {
  if (!Number.isSafeInteger(frame.id) || frame.id < 0)
    throw new RangeError('control frame: id must be a safe integer ≥ 0');
  return encodeMessage(ControlFrameType, {
    id: frame.id,
    body: frame.body,
    ...(frame.interim ? { interim: true } : {}),
  });
}

/** Decode a control frame (size-limited). Never throws. */
export function decodeControlFrame(bytes: unknown, limits: WireLimits = DEFAULT_LIMITS): WireResult<ControlFrame> {
  const r = decodeMessage(ControlFrameType, bytes, limits);
  if (!r.ok) return r;
  const v = ControlFrameType.toObject(r.value, { longs: Number, defaults: true }) as {
    id: number;
    body: Uint8Array;
    interim: boolean;
  };
  if (!Number.isSafeInteger(v.id) || v.id < 0) return reject('malformed', 'control frame: id out of range');
  return accept({ id: v.id, body: v.body, interim: v.interim === true });
}
