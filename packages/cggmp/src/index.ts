/**
 * @custodian/cggmp — threshold ECDSA on secp256k1 after CGGMP21 (Canetti, Gennaro, Goldfeder,
 * Makriyannis, Peled; ePrint 2021/060, revised with Πfac), following the LFDT-Lockness cggmp21
 * specification. Sans-IO: every protocol is a `ProtocolSpec` for the @custodian/crypto runtime.
 */

export * from './aux-info.js';
export * from './key-share.js';
export * from './keygen.js';
export * from './presign.js';
// the handle, its errors and format; not the package-internal mint/consume functions
export {
  PRESIGNATURE_FORMAT,
  Presignature,
  type PresignaturePublic,
  PresignatureSpentError,
  type PresignatureUseCode,
  PresignatureUseError,
} from './presignature.js';
export * from './refresh.js';
export * from './sign.js';
