/**
 * @custodian/signer — the server signer node (DESIGN §1, §4, §6): the daemon running the ceremonies
 * of `@custodian/ceremony` on its encrypted LevelDB store (`@custodian/ceremony/level-store`), the
 * libp2p host pinned to configured peers, the store generations, the coordinator's control client,
 * and the `custodian signer` commands.
 *
 * Importing this package installs the Node.js 20 `Promise.withResolvers` polyfill that libp2p 3 needs.
 */
import './polyfills.js';

// assets, ceremonies, enforce, errors, presignatures, primes, runner, secretbox and store moved to
// @custodian/ceremony (issue #21); the coordinator's presignature pool still reads this bound here
export { MAX_DEADLINE_MS } from '@custodian/ceremony';
export * from './backoff.js';
export * from './cli.js';
export * from './config.js';
export * from './control-client.js';
export * from './daemon.js';
export * from './generation.js';
export * from './host.js';
export * from './identity.js';
export * from './links.js';
export * from './local-cluster.js';
export * from './relay.js';
export * from './share-combiner.js';
export * from './verify.js';
