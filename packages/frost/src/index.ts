/**
 * @custodian/frost — threshold Schnorr signatures: FROST (RFC 9591) for Ed25519, secp256k1 and
 * BIP340/Taproot, orchestrated on the sans-IO runtime of `@custodian/crypto` over `@noble/curves`'
 * FROST: DKG with identifiable abort and a joint chain code, signing with per-share verification
 * and one-time nonces, HD and Taproot tweaks, proactive refresh, versioned key shares.
 */

// Ciphersuites (RFC 9591 §6): Ed25519, secp256k1, secp256k1 with BIP340/Taproot

export type { AnyPoint, Suite, SuiteName } from './suites.js';
export { getSuite } from './suites.js';

// Key shares: versioned, validated when read

export type { KeyShare } from './keyshare.js';
export { decodeKeyShare, encodeKeyShare, KeyShareError, validateKeyShare } from './keyshare.js';

// Distributed key generation

export type { DkgOptions } from './dkg.js';
export { dkgProtocol } from './dkg.js';

// Proactive share refresh

export type { RefreshOptions } from './refresh.js';
export { refreshProtocol } from './refresh.js';

// Signing (RFC 9591 §5) and the nonce ledger that forbids nonce reuse

export type { NonceLedger, SignOptions, SignOutput } from './sign.js';
export { MemoryNonceLedger, signProtocol } from './sign.js';

// Public tweaks of a key: HD derivation and the Taproot tweak (BIP341)

export type { TweakedKey, TweakOptions } from './tweak.js';
export { taprootTweak, tweakedKey } from './tweak.js';

// Resharing to a new party set and threshold, same group key and chain code

export type { FrostReshareOptions, FrostReshareOutput } from './reshare.js';
export { FROST_RESHARE_TAG, reshareProtocol } from './reshare.js';
