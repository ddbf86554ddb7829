/**
 * @custodian/wire — the wire protocol (DESIGN §5): protobuf schemas of `proto/custodian/v1`
 * loaded by reflection, size-limited codecs that never throw on bad input, the Canonical ↔
 * protobuf converter for round messages, signed and encrypted envelopes, and per-session
 * replay protection. Control-plane messages (coordinator ↔ signer) are in `control.ts`, the
 * refusal catalogue (codes a signer refuses with, shared with the coordinator) in `refusals.ts`.
 */

// Errors and typed rejections of the wire layer

export type { WireRejection, WireRejectionCode, WireResult } from './errors.js';
export { WireError } from './errors.js';

// The protobuf schemas of proto/custodian/v1, loaded by reflection

export { messageType } from './schema.js';

// Size-limited protobuf codecs

export type { WireLimits } from './codec.js';
export {
  bytesToCanonical,
  canonicalToBytes,
  DEFAULT_LIMITS,
  decodeMessage,
  encodeMessage,
  WireSchemaError,
} from './codec.js';

// Round message types: (protocol, round, part) → protobuf type

export type { ProtocolSchema, RoundTypes } from './rounds.js';
export { CGGMP_SIGN_SCHEMA, PROTOCOL_SCHEMAS, roundType } from './rounds.js';

// The refusal catalogue: the codes a signer refuses with (control.proto RefusalCode), shared with the coordinator

export type { ReceivedRefusal, RefusalCode, RefusalInfo } from './refusals.js';
export {
  isRefusalCode,
  isTransientRefusal,
  protoRefusalCodes,
  REFUSALS,
  refusalOf,
  refusalValue,
  UNKNOWN_REFUSAL,
} from './refusals.js';

// Envelopes: signed, point-to-point encrypted

export type { EnvelopeHeader, OpenContext, OpenedEnvelope, SealInput } from './envelope.js';
export {
  openAsThirdParty,
  openEnvelope,
  STATEMENT_SIG_PREFIX,
  sealEnvelope,
  statementSigningBytes,
} from './envelope.js';

// Blame evidence: third-party verification of a signer's blame (the coordinator's check)

export type {
  BlameContext,
  BlameMessageWire,
  BlameVerdict,
  BlameWire,
  BroadcastStatementWire,
} from './blame.js';
export { BLAME_EVIDENCE_LIMITS, blameSessionId, NOT_RE_RUN, runSessionId, verifyBlame } from './blame.js';

// Per-session wire: the round runtime's messages to and from envelopes

export type { AcceptedMessage, SessionWireOptions } from './session.js';
export { SessionWire, sessionAuth } from './session.js';

// Control plane (coordinator ↔ signer): signed requests, responses and frames

export type {
  ApproverDeviceWire,
  BlameInfo,
  BlameMessageInfo,
  BroadcastStatementInfo,
  CeremonyResult,
  ControlFrame,
  ControlRequest,
  ControlResponse,
  DeletePresignaturesResultWire,
  DeletePresignaturesWire,
  DigestKeyWire,
  HeldPresignatureWire,
  NodeKeyInfo,
  NodeStatus,
  PolicySyncItemWire,
  PolicySyncOutcome,
  PolicySyncWire,
  PresignatureInventoryWire,
  PublicKeyInfo,
  ReshareRequestWire,
  RevokeApproverWire,
  SignatureInfo,
  SignatureSharesWire,
  SignatureShareWire,
  SignRequest,
  StartCeremony,
  TransferEvidenceWire,
  TransferFields,
} from './control.js';
export {
  CeremonyKind,
  CONTROL_NONCE_BYTES,
  CONTROL_VERSION,
  controlRequestDigest,
  decodeControlFrame,
  decodeControlResponse,
  encodeControlFrame,
  encodeControlResponse,
  KeyAlgorithm,
  MAX_DEADLINE_MS,
  Outcome,
  openControlRequest,
  signControlRequest,
} from './control.js';

// Evidence shared by coordinator, signers and phones: transfer intents, policies, approvals, enrollment

export type {
  Approval,
  EvidenceRefusal,
  PolicyDocument,
  SignedPolicy,
  TransferIntent,
  TransferKeyAlgorithm,
} from './evidence.js';
export {
  approvalDigest,
  deviceEnrollmentDigest,
  deviceFingerprint,
  deviceSign,
  deviceVerify,
  evaluatePolicy,
  isPolicyTombstone,
  policyCovers,
  policyDigest,
  policySignedByTrustedAdmin,
  signApproval,
  signEnrollmentProof,
  signPolicy,
  transferIntentDigest,
  verifyEnrollmentProof,
  verifyTransferEvidence,
  walletIdOf,
} from './evidence.js';

// Directory identifiers (blockchain and asset ids)

export { assetId, blockchainId, DIRECTORY_NAMESPACE } from './directory.js';

// Key changes an Admin device signs (reshare, replace-signer) and the fixed test-signature digest

export type { KeyChangeDocument, SignedKeyChange } from './key-change.js';
export {
  keyChangeDigest,
  keyChangeSignedByTrustedAdmin,
  reshareAttestationMessage,
  signKeyChange,
  testSignatureDigest,
} from './key-change.js';
