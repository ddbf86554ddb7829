/**
 * @custodian/frost — threshold Schnorr signatures: FROST (RFC 9591) for Ed25519, secp256k1 and
 * BIP340/Taproot, orchestrated on the sans-IO runtime of `@custodian/crypto` over `@noble/curves`'
 * FROST: DKG with identifiable abort and a joint chain code, signing with per-share verification
 * and one-time nonces, HD and Taproot tweaks, proactive refresh, versioned key shares.
 */

export * from './dkg.js';
export * from './keyshare.js';
export * from './refresh.js';
export * from './sign.js';
export * from './suites.js';
export * from './tweak.js';
