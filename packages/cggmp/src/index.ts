/**
 * @custodian/cggmp — threshold ECDSA on secp256k1 after CGGMP21 (Canetti, Gennaro, Goldfeder,
 * Makriyannis, Peled; ePrint 2021/060, revised with Πfac), following the LFDT-Lockness cggmp21
 * specification. Sans-IO: every protocol is a `ProtocolSpec` for the @custodian/crypto runtime.
 */

// Key shares: types, validation and the versioned storage format

export type { CoreKeyShare, CoreKeyShareJson, KeyShare, KeyShareJson } from './key-share.js';
export {
  coreKeyShareFromJson,
  coreKeyShareToJson,
  KEY_SHARE_FORMAT,
  KEY_SHARE_VERSION,
  keyShareFromJson,
  keyShareToJson,
  LEVELS,
  validateCoreKeyShare,
  validateKeyShare,
} from './key-share.js';

// Key generation (t-of-n)

export type { KeygenParams } from './keygen.js';
export { keygenProtocol } from './keygen.js';

// Auxiliary information (Paillier and ring-Pedersen material, with their proofs)

export type { AuxInfo, AuxInfoParams } from './aux-info.js';
export { auxInfoProtocol } from './aux-info.js';

// Key refresh with new auxiliary information

export type { RefreshParams } from './refresh.js';
export { refreshProtocol } from './refresh.js';

// Presigning (three rounds)

export type { PresignParams } from './presign.js';
export { presignProtocol } from './presign.js';

// The presignature handle, its errors and format (not the package-internal mint/consume functions)

export type { PresignaturePublic, PresignatureUseCode } from './presignature.js';
export { PRESIGNATURE_FORMAT, Presignature, PresignatureSpentError, PresignatureUseError } from './presignature.js';

// Signing from a presignature (one round), with HD tweak and re-randomisation

export type {
  CombinationContext,
  CombinerShare,
  EcdsaSignature,
  SigningContext,
  SignOptions,
  SignParams,
} from './sign.js';
export {
  combinationContext,
  combinerShare,
  combineSignature,
  combineSignerShares,
  finishCombination,
  prepareSigning,
  SignatureShareError,
  signingContext,
  signProtocol,
  signShare,
  verifyEcdsa,
} from './sign.js';

// Resharing the core key share to a new party set and threshold (same key; then new aux info)

export type { EcdsaReshareOptions, EcdsaReshareOutput } from './reshare.js';
export { RESHARE_TAG, reshareProtocol } from './reshare.js';
