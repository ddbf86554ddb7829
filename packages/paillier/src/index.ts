/**
 * @custodian/paillier — Paillier–Blum keys, ring-Pedersen parameters and the zero-knowledge
 * proofs of CGGMP21 (ePrint 2021/060 rev.): Πmod, Πprm, Πfac, Πenc, Πaff-g, Πlog*. See README.md.
 */

export { gcd, inSigned, isqrt, isUnit, jacobi, randomBelow, randomSigned, randomUnit } from './arith.js';
export * from './levels.js';
export { CrtExp, FixedBaseTable, fixedBaseMultiExp, modPow } from './modexp.js';
export {
  assertModulus,
  generatePaillierKey,
  type KeyGenOptions,
  PaillierPublicKey,
  PaillierSecretKey,
  type PaillierSecretKeyData,
} from './paillier.js';
export * from './primes.js';
export {
  type AffGProof,
  type AffGStatement,
  type AffGWitness,
  decodeAffGProof,
  proveAffG,
  verifyAffG,
} from './proofs/aff-g.js';
export type { PartyId, ProofContext, VerifyResult } from './proofs/common.js';
export {
  decodeEncProof,
  type EncProof,
  type EncStatement,
  type EncWitness,
  proveEnc,
  verifyEnc,
} from './proofs/enc.js';
export {
  decodeFacProof,
  type FacProof,
  type FacStatement,
  type FacWitness,
  proveFac,
  verifyFac,
} from './proofs/fac.js';
export {
  decodeLogStarProof,
  type LogStarProof,
  type LogStarStatement,
  type LogStarWitness,
  proveLogStar,
  verifyLogStar,
} from './proofs/log-star.js';
export {
  decodeModProof,
  type ModProof,
  type ModStatement,
  type ModWitness,
  proveMod,
  verifyMod,
} from './proofs/mod.js';
export {
  decodePrmProof,
  type PrmProof,
  type PrmStatement,
  type PrmWitness,
  provePrm,
  verifyPrm,
} from './proofs/prm.js';
export * from './ring-pedersen.js';
