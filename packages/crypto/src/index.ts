/**
 * @custodian/crypto — math shared by Custodian's protocols (DESIGN §2–3): validated scalars and
 * points on secp256k1 and Ed25519, canonical encoding, Fiat–Shamir transcripts, hash commitments,
 * Feldman VSS and Lagrange interpolation, Πsch, threshold HD derivation, and the sans-IO
 * round-based protocol runtime.
 */
export * from './bytes.js';
export * from './commitment.js';
export * from './ed25519.js';
export * from './encoding.js';
export * from './errors.js';
export * from './group.js';
export * from './hd.js';
export * from './runtime/index.js';
export * from './sch.js';
export * from './transcript.js';
export * from './vss.js';
