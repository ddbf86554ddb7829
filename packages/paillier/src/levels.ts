/**
 * Security levels of the CGGMP21 Paillier machinery, as one parameter object.
 *
 * The parameters are named as in the LFDT-Lockness cggmp21 specification (`spec/main.tex` §2
 * "Security Parameters", L = (κ, ε, ℓ, ℓ', m, Q)) and CGGMP21 (ePrint 2021/060 rev.):
 *
 * - κ: Paillier / ring-Pedersen primes have 4κ bits, so moduli have 8κ bits.
 * - ℓ, ℓ': honest plaintext ranges ±2^ℓ (e.g. k, x) and ±2^ℓ' (e.g. the affine masks y).
 * - ε: slack; the proofs only guarantee ±2^(ℓ+ε) and ±2^(ℓ'+ε).
 * - m: iterations of Πmod and Πprm (soundness 2^-m).
 * - Q = 2^logQ: challenge space ±Q of Πenc, Πaff-g, Πlog*, Πfac (soundness 1/Q).
 *
 * Correctness constraints (spec §2): ℓ ≥ λ = 256 (curve order bits), ε ≥ 8 + log Q, ℓ' ≤ 8κ.
 * Every range bound in `proofs/` is derived from these values by {@link rangeBounds}.
 */

/** One security level. All fields are plain numbers (bit counts). */
export interface SecurityLevel {
  /** Stable name, bound into every proof transcript. */
  readonly name: 'SECURITY_128' | 'SECURITY_112';
  /** κ: primes have 4κ bits, moduli 8κ bits. */
  readonly kappa: number;
  /** Smallest bit length a verifier accepts for a Paillier or ring-Pedersen modulus: 8κ − 1 (as LFDT `validate_public_paillier_key_size`). Honest key generation always produces exactly 8κ bits. */
  readonly minModulusBits: number;
  /** Largest bit length a verifier accepts (2 × 8κ): a guard against denial of service by huge moduli. */
  readonly maxModulusBits: number;
  /** ε (slack bits). */
  readonly epsilon: number;
  /** ℓ (bits). */
  readonly ell: number;
  /** ℓ' (bits). */
  readonly ellPrime: number;
  /** m: iterations of Πmod and Πprm. Fixed by the verifier; never lowered. */
  readonly m: number;
  /** log₂ Q: challenges e are uniform in ±Q = [−2^logQ, 2^logQ]. */
  readonly logQ: number;
}

/**
 * 128-bit security, the default: 3072-bit moduli (κ = 384), ε = 230, ℓ = 256, ℓ' = 848, m = 128,
 * Q = 2^128 — exactly LFDT-Lockness cggmp21 `SecurityLevel128` (`cggmp21/src/security_level.rs`).
 */
export const SECURITY_128: SecurityLevel = Object.freeze({
  name: 'SECURITY_128',
  kappa: 384,
  minModulusBits: 8 * 384 - 1,
  maxModulusBits: 2 * 8 * 384,
  epsilon: 230,
  ell: 256,
  ellPrime: 848,
  m: 128,
  logQ: 128,
});

/**
 * 112-bit security (2048-bit moduli, κ = 256; NIST SP 800-57 rates RSA-2048 at 112 bits), the
 * modulus size Taurus multi-party-sig and tss-lib use. Only κ changes: the statistical
 * parameters ε, ℓ, ℓ', m, Q stay those of {@link SECURITY_128} (they are independent of the
 * factoring assumption and satisfy ℓ' ≤ 8κ = 2048), so no iteration count or slack is lowered.
 */
export const SECURITY_112: SecurityLevel = Object.freeze({
  name: 'SECURITY_112',
  kappa: 256,
  minModulusBits: 8 * 256 - 1,
  maxModulusBits: 2 * 8 * 256,
  epsilon: 230,
  ell: 256,
  ellPrime: 848,
  m: 128,
  logQ: 128,
});

/** The default level. */
export const DEFAULT_LEVEL: SecurityLevel = SECURITY_128;

/** Bit length of each safe prime of a key at this level (4κ). */
export function primeBits(level: SecurityLevel): number {
  return 4 * level.kappa;
}

/** Bit length of honestly generated moduli at this level (8κ). */
export function modulusBits(level: SecurityLevel): number {
  return 8 * level.kappa;
}

/** The ranges used by the proofs, as powers of two (bigints). */
export interface RangeBounds {
  /** 2^ℓ */
  readonly ell: bigint;
  /** 2^(ℓ+ε) */
  readonly ellEps: bigint;
  /** 2^ℓ' */
  readonly ellPrime: bigint;
  /** 2^(ℓ'+ε) */
  readonly ellPrimeEps: bigint;
  /** Q = 2^logQ */
  readonly Q: bigint;
}

/** Powers of two derived from a level (CGGMP21 Fig. 14–17, 26; spec §3). */
export function rangeBounds(level: SecurityLevel): RangeBounds {
  return {
    ell: 1n << BigInt(level.ell),
    ellEps: 1n << BigInt(level.ell + level.epsilon),
    ellPrime: 1n << BigInt(level.ellPrime),
    ellPrimeEps: 1n << BigInt(level.ellPrime + level.epsilon),
    Q: 1n << BigInt(level.logQ),
  };
}

/**
 * Check a level's internal constraints (spec §2): ℓ ≥ 256, ε ≥ 8 + log Q, ℓ' ≤ 8κ, m ≥ 80,
 * ℓ' + ε < 8κ − 2 (so masked plaintexts stay below N/2).
 * @throws RangeError naming the violated constraint
 */
export function assertLevel(level: SecurityLevel): SecurityLevel {
  if (level !== SECURITY_128 && level !== SECURITY_112) {
    throw new RangeError('security level: use SECURITY_128 or SECURITY_112');
  }
  if (level.ell < 256) throw new RangeError('security level: ℓ < 256');
  if (level.epsilon < 8 + level.logQ) throw new RangeError('security level: ε < 8 + log Q');
  if (level.ellPrime > 8 * level.kappa) throw new RangeError("security level: ℓ' > 8κ");
  if (level.ellPrime + level.epsilon >= 8 * level.kappa - 2) throw new RangeError("security level: ℓ' + ε too large");
  if (level.m < 80) throw new RangeError('security level: m too small');
  return level;
}
