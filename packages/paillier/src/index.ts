/**
 * @custodian/paillier — Paillier–Blum keys, ring-Pedersen parameters and the zero-knowledge
 * proofs of CGGMP21 (ePrint 2021/060 rev.): Πmod, Πprm, Πfac, Πenc, Πaff-g, Πaff-p, Πlog*, Πdec. See README.md.
 */

// Paillier–Blum keys: generation, encryption, decryption

export type { KeyGenOptions, PaillierSecretKeyData } from './paillier.js';
export { assertModulus, generatePaillierKey, PaillierPublicKey, PaillierSecretKey } from './paillier.js';

// Ring-Pedersen parameters (N̂, s, t) and their commitments

export type { RingPedersenParams, RingPedersenSecret } from './ring-pedersen.js';
export { assertRingPedersenParams, generateRingPedersen, RingPedersen, ringPedersenFromKey } from './ring-pedersen.js';

// Safe primes and the background pool that generates them

export type { PrimePoolOptions, PrimePoolProgress, PrimePoolSnapshot } from './primes.js';
export { generateSafePrime, isSafePrime, PrimePool } from './primes.js';

// Security levels and the range bounds the proofs check

export type { RangeBounds, SecurityLevel } from './levels.js';
export { assertLevel, rangeBounds, SECURITY_112, SECURITY_128 } from './levels.js';

// Integer arithmetic the proofs and the cggmp package share

export { gcd, jacobi, randomSigned, randomUnit } from './arith.js';

// Modular exponentiation (CRT, fixed-base tables)

export { CrtExp, FixedBaseTable, fixedBaseMultiExp, modPow } from './modexp.js';

// What every proof shares: the session-bound proof context and the verify result

export type { PartyId, ProofContext, VerifyResult } from './proofs/common.js';

// Πmod: Paillier–Blum modulus (CGGMP21 §6.3, Fig. 16)

export type { ModProof, ModStatement, ModWitness } from './proofs/mod.js';
export { decodeModProof, proveMod, verifyMod } from './proofs/mod.js';

// Πprm: ring-Pedersen parameters (CGGMP21 §6.4, Fig. 17)

export type { PrmProof, PrmStatement, PrmWitness } from './proofs/prm.js';
export { decodePrmProof, provePrm, verifyPrm } from './proofs/prm.js';

// Πfac: no small factor (CGGMP21 §C.5, Fig. 28)

export type { FacProof, FacStatement, FacWitness } from './proofs/fac.js';
export { decodeFacProof, proveFac, verifyFac } from './proofs/fac.js';

// Πenc: Paillier encryption in range (CGGMP21 §6.1, Fig. 14)

export type { EncProof, EncStatement, EncWitness } from './proofs/enc.js';
export { decodeEncProof, proveEnc, verifyEnc } from './proofs/enc.js';

// Πaff-g: Paillier affine operation with group commitment in range (CGGMP21 §6.2, Fig. 15)

export type { AffGProof, AffGStatement, AffGWitness } from './proofs/aff-g.js';
export { decodeAffGProof, proveAffG, verifyAffG } from './proofs/aff-g.js';

// Πaff-p: Paillier affine operation with Paillier commitment in range (CGGMP21 App. C, Πaff-p)

export type { AffPProof, AffPStatement, AffPWitness } from './proofs/aff-p.js';
export { decodeAffPProof, proveAffP, verifyAffP } from './proofs/aff-p.js';

// Πlog*: knowledge of exponent vs Paillier encryption (CGGMP21 §C.2, Fig. 25)

export type { LogStarProof, LogStarStatement, LogStarWitness } from './proofs/log-star.js';
export { decodeLogStarProof, proveLogStar, verifyLogStar } from './proofs/log-star.js';

// Πdec: Paillier decryption modulo q, group form X = (y mod q)·B (CGGMP21 App. C, Πdec)

export type { DecProof, DecStatement, DecWitness } from './proofs/dec.js';
export { decodeDecProof, decWitnessBound, proveDec, verifyDec } from './proofs/dec.js';
