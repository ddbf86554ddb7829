/**
 * @custodian/signer — the signer node (DESIGN §1, §4, §6): encrypted LevelDB store, transport-agnostic
 * ceremony runner, ceremonies (master key, sign, refresh), enforcement, the daemon on the libp2p host
 * of `@custodian/signer-client` (which also holds the coordinator's control client and share
 * combiner), and the `custodian signer` commands. The public surface is the explicit list below, one
 * line per module.
 *
 * Importing this package installs the Node.js 20 `Promise.withResolvers` polyfill that libp2p 3 needs.
 */
import '@custodian/signer-client/polyfills';

export { assetMismatch, type NativeAsset, nativeAssetOf } from './assets.js';
export {
  type CeremonyContext,
  type CeremonyHooks,
  derivedChild,
  type KeyRecord,
  listKeys,
  loadKeyRecord,
  MAX_DEADLINE_MS,
  presignatureControl,
  runCeremony,
  StoredNonceLedger,
  sessionId,
} from './ceremonies.js';
export { createSignerProgram, registerSignerCommands } from './cli.js';
export {
  type AssetConfig,
  type ChainConfig,
  type ChainsConfig,
  ConfigError,
  loadConfig,
  type PassphraseSource,
  parseChainsConfig,
  parseConfig,
  readPassphrase,
  type SignerConfig,
} from './config.js';
export { type SignerDaemon, STATUS_FILE, startSigner } from './daemon.js';
export {
  assetIdentity,
  CREATED_AT_SKEW_MS,
  type EnforcementTrust,
  type EnforcementVerdict,
  EvidenceRefused,
  enforceTransferEvidence,
  intentFields,
  intentTime,
  type LearnedPolicy,
  type LedgerEntry,
  learnedPolicy,
  learnSignedPolicies,
  ledgerEntry,
  ledgerSpent,
  type MasterPublicKey,
  recomputeIntentDigests,
  type SignerRefusal,
  type SpendIdentity,
  utcDay,
} from './enforce.js';
export { SignerError } from './errors.js';
export {
  defaultGenerationFile,
  GENERATION_FILE_FORMAT,
  GenerationFileError,
  type GenerationStart,
  type RollbackRecord,
  readGenerationFile,
  rollbackRefusal,
  STORE_ROLLED_BACK,
  startGeneration,
  stopGeneration,
  storedRollback,
  storeGeneration,
  writeGenerationFile,
} from './generation.js';
export { createIdentity, loadIdentity, type NodeIdentity } from './identity.js';
export { type LocalCluster, type LocalClusterOptions, startLocalCluster } from './local-cluster.js';
export {
  decodePresignature,
  deletePresignatures,
  encodePresignature,
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
export {
  CeremonyRunner,
  type CeremonyTransport,
  type SessionOutcome,
  type SessionParams,
  type SessionParty,
} from './runner.js';
export { DEFAULT_SCRYPT, deriveStorageKey, open, type ScryptParams, StoreIntegrityError, seal } from './secretbox.js';
export { attachSignerRelay, type SignerRelay } from './signer-relay.js';
export { SecureStore, type StoreOp, SUBLEVELS, type Sublevel } from './store.js';
export { verifySignature } from './verify.js';
