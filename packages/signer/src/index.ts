/**
 * @custodian/signer — the signer node (DESIGN §1, §4, §6): encrypted LevelDB store, libp2p host
 * pinned to configured peers, transport-agnostic ceremony runner, ceremonies (master key, sign,
 * refresh), the coordinator's control client, and the `custodian signer` commands.
 *
 * Importing this package installs the Node.js 20 `Promise.withResolvers` polyfill that libp2p 3 needs.
 */
import './polyfills.js';

export * from './assets.js';
export * from './backoff.js';
export * from './ceremonies.js';
export * from './cli.js';
export * from './config.js';
export * from './control-client.js';
export * from './daemon.js';
export * from './enforce.js';
export * from './errors.js';
export * from './generation.js';
export * from './host.js';
export * from './identity.js';
export * from './links.js';
export * from './local-cluster.js';
export * from './presignatures.js';
export * from './primes.js';
export * from './relay.js';
export * from './runner.js';
export * from './secretbox.js';
export * from './share-combiner.js';
export * from './store.js';
export * from './verify.js';
