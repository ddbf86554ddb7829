/**
 * @custodian/wire — the wire protocol (DESIGN §5): protobuf schemas of `proto/custodian/v1`
 * loaded by reflection, size-limited codecs that never throw on bad input, the Canonical ↔
 * protobuf converter for round messages, signed and encrypted envelopes, and per-session
 * replay protection. Control-plane messages (coordinator ↔ signer) are in `control.ts`, the
 * refusal catalogue (codes a signer refuses with, shared with the coordinator) in `refusals.ts`.
 */
export * from './codec.js';
export * from './control.js';
export * from './directory.js';
export * from './envelope.js';
export * from './errors.js';
export * from './evidence.js';
export * from './refusals.js';
export * from './rounds.js';
export * from './schema.js';
export * from './session.js';
