/**
 * @custodian/signer — the server signer node (DESIGN §1, §4, §6): the daemon running the ceremonies
 * of `@custodian/ceremony` on its encrypted LevelDB store (`@custodian/ceremony/level-store`), on
 * the libp2p host of `@custodian/signer-client` (pinned to configured peers), the store
 * generations, the signer's end of the device relay, and the `custodian signer` commands. The
 * public surface is the explicit list below, one line per module.
 *
 * Importing this package installs the Node.js 20 `Promise.withResolvers` polyfill that libp2p 3 needs.
 */
import '@custodian/signer-client/polyfills';

export {
  type BackupSummary,
  backupScope,
  createBackup,
  inspectBackup,
  type KeyBackupState,
  keyBackupState,
  type RestoreSummary,
  readBackupFile,
  restoreBackup,
  writeRecoveryKey,
} from './backup.js';
export {
  BACKUP_FORMAT,
  BACKUP_MAGIC,
  BACKUP_VERSION,
  type BackupEntry,
  BackupError,
  type BackupHeader,
  type BackupPayload,
  decryptBackup,
  encryptBackup,
  generateRecoveryKey,
  parseRecoveryKey,
  parseRecoveryPublicKey,
  type RecoveryKey,
  readBackupHeader,
  recoveryFingerprint,
  recoveryKeyFiles,
} from './backup-envelope.js';
export { createSignerProgram, registerSignerCommands, reloadRunningSigner } from './cli.js';
export {
  ConfigError,
  loadConfig,
  type PassphraseSource,
  parseConfig,
  readPassphrase,
  SIGNER_CONFIG_SCHEMA,
  type SignerConfig,
} from './config.js';
export {
  CONTROL_FRESHNESS_MS,
  type SignerDaemon,
  STATUS_FILE,
  startSigner,
} from './daemon.js';
export {
  defaultGenerationFile,
  GENERATION_FILE_FORMAT,
  GenerationFileError,
  type GenerationStart,
  readGenerationFile,
  startGeneration,
  stopGeneration,
  storedRollback,
  storeGeneration,
  writeGenerationFile,
} from './generation.js';
export {
  SIGNER_METRIC_NAMES,
  type SignerCheck,
  type SignerHealthSource,
  type SignerMetrics,
  signerReadiness,
} from './health.js';
export {
  createIdentity,
  IDENTITY_FILE,
  loadIdentity,
  type NodeIdentity,
  readPublicIdentity,
  writeIdentity,
} from './identity.js';
export { type LocalCluster, type LocalClusterOptions, startLocalCluster } from './local-cluster.js';
export { RELOADABLE_FIELDS, reloadedConfig, type SignerReload } from './reload.js';
export { attachSignerRelay, type SignerRelay } from './signer-relay.js';
export { verifySignature } from './verify.js';
