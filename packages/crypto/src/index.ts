/**
 * @custodian/crypto — math shared by Custodian's protocols (DESIGN §2–3): validated scalars and
 * points on secp256k1 and Ed25519, canonical encoding, Fiat–Shamir transcripts, hash commitments,
 * Feldman VSS and Lagrange interpolation, Πsch, threshold HD derivation, and the sans-IO
 * round-based protocol runtime.
 */

// Errors: the one error base of every Custodian package, and this family's

export type { ErrorFamily } from './errors.js';
export { CryptoError, CustodianError } from './errors.js';

// Bytes and integers: assertion helpers at trust boundaries, big-endian conversions, hex, randomness

export type { RandomSource } from './bytes.js';
export {
  abytes,
  aint,
  bigintToBytes,
  bigintToMinimalBytes,
  bitLength,
  bytesToBigint,
  bytesToHex,
  equalBytes,
  hexToBytes,
  systemRandom,
} from './bytes.js';

// Canonical, injective encoding of structured values for hashing

export type { Canonical } from './encoding.js';
export { canonicalEncode } from './encoding.js';

// Prime-order groups (secp256k1, Ed25519): validated scalars and points

export type { CurveName, Ed25519Point, Group, GroupPoint, Secp256k1Point } from './group.js';
export { ed25519Group, invertMod, secp256k1Group } from './group.js';

// Ed25519 signatures (RFC 8032) for envelopes and control requests

export { ed25519Sign, ed25519Verify } from './ed25519.js';

// Fiat–Shamir transcripts (SHAKE256 duplex, domain-separated and session-bound)

export type { TranscriptBinding } from './transcript.js';
export { Transcript } from './transcript.js';

// Hash commitments (commit–reveal)

export type { CommitmentContext } from './commitment.js';
export { commit, verifyCommitment } from './commitment.js';

// Πsch: Schnorr proof of knowledge of a discrete logarithm (CGGMP21 §C.1)

export type { SchCommitment, SchProof } from './sch.js';
export { schCommit, schProve, schProveFresh, schVerify } from './sch.js';

// Feldman VSS, polynomials and Lagrange interpolation

export type { VssDealing } from './vss.js';
export {
  evalPolynomial,
  interpolatePoints,
  lagrangeAtZero,
  randomPolynomial,
  sumCommitments,
  validateIdentifiers,
  vssDeal,
  vssEvaluateCommitments,
  vssVerifyShare,
} from './vss.js';

// Threshold HD derivation from a master public key and chain code (BIP32-style)

export type { DerivedChildKey, InvalidChildReason, Secp256k1ChildNode } from './hd.js';
export {
  Bip32InvalidChildError,
  ckdPubSecp256k1,
  derivedChild,
  deriveEd25519,
  deriveSecp256k1,
  HARDENED_OFFSET,
  MAX_DERIVATION_DEPTH,
  parseDerivationPath,
} from './hd.js';

// The sans-IO round runtime: the contract of a protocol round, its messages and blame

export type {
  Aborted,
  BroadcastAuth,
  Culprit,
  CulpritEvidence,
  IncomingMessage,
  MessageKind,
  Outbox,
  OutgoingMessage,
  PartyIndex,
  ProtocolSpec,
  ReceivedParts,
  RoundContext,
  RoundResult,
  RoundSpec,
  SignedStatement,
} from './runtime/types.js';
export { blame, ProtocolAbort } from './runtime/types.js';

// The runtime's party driver: one party of a protocol, fed messages, returning steps

export type { PartyOptions, PartyStatus, Rejection, Step } from './runtime/party.js';
export { broadcastStatementBytes, echoHash, Party } from './runtime/party.js';

// The runtime's in-memory simulator: every party of a protocol in one process

export type { Delivery, Interceptor, SimulationResult } from './runtime/simulator.js';
export { simulate } from './runtime/simulator.js';

// Resharing to a new party set and threshold with the same key (Desmedt–Jajodia 1997, Feldman VSS)

export type { ReshareOldPackage, ReshareParams, ResharePartyRole, ReshareResult, ReshareState } from './reshare.js';
export { reshareSpec, validateReshareRoles } from './reshare.js';
