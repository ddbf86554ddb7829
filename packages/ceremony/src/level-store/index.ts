/**
 * `@custodian/ceremony/level-store` — the LevelDB implementation of the ceremony package's
 * `CeremonyStore` (storage.ts; values sealed with XChaCha20-Poly1305 under a scrypt-derived key), and
 * that sealing itself (the server signer also seals its identity file with it). A separate entry
 * so that the package's main entry imports no `level`: a process with another store (a phone's
 * keychain-backed one) links none of it.
 */
export { DEFAULT_SCRYPT, deriveStorageKey, open, type ScryptParams, StoreIntegrityError, seal } from './secretbox.js';
export { SecureStore } from './store.js';
