/**
 * @custodian/signer-client — what the coordinator needs to talk to signers (DESIGN §2), and nothing
 * of the signer daemon (no share store, no LevelDB, no ceremonies): the libp2p host both ends build,
 * the control protocol client (`/custodian/control/2`), the presignature pool keeper, the ECDSA
 * share combiner (the fast path), the links kept to server signers, the coordinator's end of the
 * relay (`/custodian/relay/1`) and the device WebSocket frames, the backoff used by whatever
 * reconnects, and the identity-key fingerprint. `@custodian/signer` builds its daemon on it.
 *
 * Importing this package installs the Node.js 20 `Promise.withResolvers` polyfill that libp2p 3 needs.
 */
import './polyfills.js';

export { Backoff, type BackoffOptions, backoffDelay } from './backoff.js';
export { ControlClient, PresignaturePoolKeeper } from './control-client.js';
export { fingerprint } from './fingerprint.js';
export {
  CONTROL_PROTOCOL,
  createHost,
  type Host,
  type HostOptions,
  isStreamEnd,
  MPC_PROTOCOL,
  WRITE_TIMEOUT_MS,
  writeDeadline,
} from './host.js';
export { PeerLinks, type PeerLinksOptions } from './links.js';
export { LOG_LEVEL_ENV, LOG_LEVELS, type LogLevel, resolveLogLevel } from './log-level.js';
export {
  type CoordinatorRelay,
  createCoordinatorRelay,
  type DeviceFrame,
  decodeDeviceFrame,
  decodeRelayFrame,
  deviceHelloDigest,
  encodeDeviceFrame,
  encodeRelayFrame,
  RELAY_PROTOCOL,
  type RelayFrame,
} from './relay.js';
export { EcdsaShareCombiner, type EcdsaShareCombinerInit } from './share-combiner.js';
export {
  DEFAULT_SHUTDOWN_SIGNALS,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  handleShutdownSignals,
  parseShutdownTimeout,
  type ShutdownHandle,
  type ShutdownLog,
  type ShutdownOptions,
  type ShutdownSignal,
} from './shutdown.js';
