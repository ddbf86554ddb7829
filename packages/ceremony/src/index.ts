/**
 * @custodian/ceremony — the ceremony logic a signer runs, shared by the server signer
 * (`@custodian/signer`, requests over libp2p) and the phone (`@custodian/mobile`, requests through
 * the coordinator's WebSocket relay): the transport-agnostic session runner, the ceremonies
 * (master key, sign, presign, refresh), the signer's own check of transfer evidence and its
 * ledger, the presignature store, the FROST nonce ledger, the safe-prime pool and the `chains`
 * configuration. It opens no socket and no database: the process hands it a transport
 * ({@link CeremonyTransport}) and an encrypted key-value store ({@link CeremonyStore}); the LevelDB
 * store is the separate entry `@custodian/ceremony/level-store`.
 */

export { assetMismatch, type NativeAsset, nativeAssetOf } from './assets.js';
export { type CeremonyContext, type CeremonyHooks, sessionId } from './ceremonies/context.js';
export { type KeyRecord, listKeys } from './ceremonies/keys.js';
// Key lifecycle (issue #22): pending reshares, approver revocation, test signatures
export { listPending, type PendingReshare, pendingReshares } from './ceremonies/pending.js';
export { presignatureControl } from './ceremonies/presign.js';
export { type RevokedApprover, revokeApprover, revokedApprovers } from './ceremonies/revoke.js';
export { runCeremony } from './ceremonies/run.js';
export { verifyTestSignature } from './ceremonies/test-sign.js';
export {
  type AssetConfig,
  CHAINS_CONFIG_SCHEMA,
  type ChainConfig,
  type ChainsConfig,
  parseChainsConfig,
} from './chains-config.js';
export { ConfigError, type ConfigSchema, checkConfig, closestKey, schemaKeys } from './config-check.js';
export {
  type EnforcementTrust,
  type EnforcementVerdict,
  enforceTransferEvidence,
  type MasterPublicKey,
} from './enforce/enforce.js';
export { CREATED_AT_SKEW_MS } from './enforce/intent.js';
export { type LedgerEntry, ledgerEntry } from './enforce/ledger.js';
export { type LearnedPolicy, learnedPolicy, learnSignedPolicies } from './enforce/policies.js';
export { EvidenceRefused, type SignerRefusal } from './enforce/refusals.js';
export { SignerError } from './errors.js';
export { StoredNonceLedger } from './nonce-ledger.js';
export {
  decodePresignature,
  deletePresignatures,
  type HeldPresignature,
  heldPresignatures,
  PreparedPresignatures,
  presignatureDiscards,
  presignaturePoolSizes,
  presignaturePuts,
  presignPrefix,
  takePresignature,
} from './presignatures.js';
export { StoredPrimePool } from './primes.js';
export { type RollbackRecord, rollbackRefusal, STORE_ROLLED_BACK } from './rollback.js';
export {
  CeremonyRunner,
  type CeremonyTransport,
  type SessionOutcome,
  type SessionParams,
  type SessionParty,
} from './runner.js';
export { type SessionLedger, StoredSessionLedger } from './session-ledger.js';
export type { CeremonyStore, StoreOp, Sublevel } from './storage.js';
