/**
 * Paillier encryption over Paillier–Blum moduli N = p·q (p, q safe primes, hence p ≡ q ≡ 3 mod 4),
 * as used by CGGMP21 (ePrint 2021/060 rev. and spec §2 "Paillier Encryption Scheme"):
 *
 *   Enc(m; ρ) = (1 + N)^m · ρ^N mod N² = (1 + m·N) · ρ^N mod N²,  m ∈ Z_N, ρ ∈ Z*_N
 *   Dec(c) by CRT modulo p² and q² (the key owner), returned in [0, N) or signed in ±(N−1)/2
 *   c₁ ⊕ c₂ = c₁·c₂ mod N²,  k ⊙ c = c^k mod N²
 *
 * Ciphertexts received from others must pass {@link PaillierPublicKey.assertCiphertext}
 * (0 < c < N², gcd(c, N) = 1) before any use.
 */
import { bitLength, type RandomSource, systemRandom } from '@custodian/crypto';
import { gcd, invertMod, isqrt, mod, randomUnit } from './arith.js';
import { DEFAULT_LEVEL, modulusBits, primeBits, type SecurityLevel } from './levels.js';
import { CrtExp, modPow } from './modexp.js';
import { generateSafePrime, isSafePrime, type PrimePool } from './primes.js';

/** A Paillier public key. Construct with {@link PaillierPublicKey.fromModulus} (validated). */
export class PaillierPublicKey {
  /** N² */
  readonly N2: bigint;
  /** (N − 1)/2, the bound of signed plaintexts */
  readonly halfN: bigint;

  private constructor(readonly N: bigint) {
    this.N2 = N * N;
    this.halfN = (N - 1n) / 2n;
  }

  /**
   * Validate and wrap a received modulus: odd, between `level.minModulusBits` and
   * `level.maxModulusBits` bits, not a perfect square. (Πmod and Πfac prove the rest: Blum structure, no small factor.)
   * @throws TypeError when N is not a bigint; RangeError naming the failed check
   */
  static fromModulus(N: bigint, level: SecurityLevel = DEFAULT_LEVEL): PaillierPublicKey {
    assertModulus(N, level, 'N');
    return new PaillierPublicKey(N);
  }

  /** @internal construct without validation (key generation, proofs on already-checked values) */
  static unchecked(N: bigint): PaillierPublicKey {
    return new PaillierPublicKey(N);
  }

  /** Is c a valid ciphertext: bigint, 0 < c < N², gcd(c, N) = 1? */
  isCiphertext(c: unknown): c is bigint {
    return typeof c === 'bigint' && c > 0n && c < this.N2 && gcd(c, this.N) === 1n;
  }

  /**
   * Are all `ciphertexts` in Z*_{N²} and all `units` in Z*_N? Range-checks each value and then runs
   * ONE gcd with N on the product modulo N (gcd(∏ v mod N, N) = 1 iff every v is coprime to N),
   * instead of one gcd per value. Callers that must name the failing value re-check individually
   * (with {@link isCiphertext}) only when this returns false.
   */
  allCiphertexts(ciphertexts: readonly unknown[], units: readonly unknown[] = []): boolean {
    const N = this.N;
    let acc = 1n;
    for (const c of ciphertexts) {
      if (typeof c !== 'bigint' || c <= 0n || c >= this.N2) return false;
      acc = (acc * (c % N)) % N;
    }
    for (const u of units) {
      if (typeof u !== 'bigint' || u <= 0n || u >= N) return false;
      acc = (acc * u) % N;
    }
    return gcd(acc, N) === 1n;
  }

  /**
   * Assert c ∈ Z*_{N²}.
   * @throws TypeError when not a bigint; RangeError when out of range or not coprime to N
   */
  assertCiphertext(c: unknown, field = 'ciphertext'): bigint {
    if (typeof c !== 'bigint') throw new TypeError(`${field}: expected bigint`);
    if (c <= 0n || c >= this.N2) throw new RangeError(`${field}: outside (0, N²)`);
    if (gcd(c, this.N) !== 1n) throw new RangeError(`${field}: not coprime to N`);
    return c;
  }

  /**
   * Enc(m; ρ) = (1 + m·N)·ρ^N mod N².
   * @param m plaintext, any integer (taken modulo N; signed values in ±(N−1)/2 round-trip through {@link PaillierSecretKey.decryptSigned})
   * @param rho nonce ρ ∈ Z*_N
   * @throws RangeError when ρ ∉ Z*_N
   */
  encryptWithNonce(m: bigint, rho: bigint): bigint {
    if (rho <= 0n || rho >= this.N || gcd(rho, this.N) !== 1n) throw new RangeError('rho: not in Z*_N');
    return ((1n + mod(m, this.N) * this.N) * modPow(rho, this.N, this.N2)) % this.N2;
  }

  /** Encrypt with a fresh nonce; returns the ciphertext and the nonce (a secret of the encryptor). */
  encrypt(m: bigint, rng: RandomSource = systemRandom): { readonly c: bigint; readonly rho: bigint } {
    const rho = randomUnit(rng, this.N);
    return { c: this.encryptWithNonce(m, rho), rho };
  }

  /** c₁ ⊕ c₂ = c₁·c₂ mod N²: Dec = m₁ + m₂ mod N. */
  add(c1: bigint, c2: bigint): bigint {
    return (c1 * c2) % this.N2;
  }

  /** k ⊙ c = c^k mod N²: Dec = k·m mod N. Negative k uses c⁻¹ (c must be a valid ciphertext). */
  mul(c: bigint, k: bigint): bigint {
    return modPow(c, k, this.N2);
  }

  /** (1+N)^m mod N² = 1 + (m mod N)·N. */
  gammaPow(m: bigint): bigint {
    return 1n + mod(m, this.N) * this.N;
  }
}

/** Validate a modulus received from another party (see {@link PaillierPublicKey.fromModulus}). */
export function assertModulus(N: unknown, level: SecurityLevel, field: string): bigint {
  if (typeof N !== 'bigint') throw new TypeError(`${field}: expected bigint`);
  if (N <= 0n || (N & 1n) === 0n) throw new RangeError(`${field}: must be odd and positive`);
  if (bitLength(N) < level.minModulusBits) {
    throw new RangeError(`${field}: ${bitLength(N)} bits, below the ${level.minModulusBits} bits of ${level.name}`);
  }
  if (bitLength(N) > level.maxModulusBits) {
    throw new RangeError(
      `${field}: ${bitLength(N)} bits, above the ${level.maxModulusBits} bits accepted at ${level.name}`,
    );
  }
  const r = isqrt(N);
  if (r * r === N) throw new RangeError(`${field}: is a perfect square`);
  return N;
}

/** Serialisable secret key material: the two safe primes. Never log or send it. */
export interface PaillierSecretKeyData {
  readonly p: bigint;
  readonly q: bigint;
}

/** A Paillier secret key (p, q) with CRT precomputation. */
export class PaillierSecretKey {
  readonly publicKey: PaillierPublicKey;
  /** φ(N) = (p − 1)(q − 1) */
  readonly phi: bigint;
  /** CRT modulo N² = p²·q² */
  readonly crtN2: CrtExp;
  /** CRT modulo N = p·q */
  readonly crtN: CrtExp;
  private readonly qModPm1: bigint;
  private readonly pModQm1: bigint;
  private readonly hp: bigint;
  private readonly hq: bigint;
  /** N⁻¹ mod (p − 1) = q⁻¹ mod (p − 1) and N⁻¹ mod (q − 1): the N-th root exponents of {@link decryptWithNonce} */
  private readonly nInvP: bigint;
  private readonly nInvQ: bigint;
  private readonly p2: bigint;
  private readonly q2: bigint;

  private constructor(
    readonly p: bigint,
    readonly q: bigint,
  ) {
    const N = p * q;
    this.publicKey = PaillierPublicKey.unchecked(N);
    this.phi = (p - 1n) * (q - 1n);
    this.p2 = p * p;
    this.q2 = q * q;
    this.crtN2 = new CrtExp(this.p2, p * (p - 1n), this.q2, q * (q - 1n));
    this.crtN = new CrtExp(p, p - 1n, q, q - 1n);
    this.qModPm1 = q % (p - 1n);
    this.pModQm1 = p % (q - 1n);
    // L_p((1+N)^(p−1) mod p²) = (p − 1)·q ≡ −q (mod p); h_p is its inverse
    this.hp = invertMod(mod(-q, p), p);
    this.hq = invertMod(mod(-p, q), q);
    // N ≡ q (mod p − 1); gcd(q, p − 1) = 1 since p − 1 = 2·p′ with p′ ≠ q prime (safe primes)
    this.nInvP = invertMod(this.qModPm1, p - 1n);
    this.nInvQ = invertMod(this.pModQm1, q - 1n);
  }

  /**
   * Build a key from two safe primes (e.g. restored from storage, or test fixtures).
   * Checks: p ≠ q, both ≡ 3 (mod 4), each of 4κ bits, N = p·q of exactly 8κ bits; with
   * `checkPrimality` (default true) also that p, (p−1)/2, q, (q−1)/2 are probable primes.
   * @throws TypeError / RangeError naming the failed check (never the values)
   */
  static fromPrimes(
    p: bigint,
    q: bigint,
    level: SecurityLevel = DEFAULT_LEVEL,
    opts: { checkPrimality?: boolean } = {},
  ): PaillierSecretKey {
    if (typeof p !== 'bigint' || typeof q !== 'bigint') throw new TypeError('p, q: expected bigint');
    if (p === q) throw new RangeError('p, q: must differ');
    for (const [x, f] of [
      [p, 'p'],
      [q, 'q'],
    ] as const) {
      if ((x & 3n) !== 3n) throw new RangeError(`${f}: not ≡ 3 mod 4`);
      if (bitLength(x) !== primeBits(level)) throw new RangeError(`${f}: not ${primeBits(level)} bits`);
      if (opts.checkPrimality !== false && !isSafePrime(x)) throw new RangeError(`${f}: not a safe prime`);
    }
    if (bitLength(p * q) !== modulusBits(level)) throw new RangeError(`N: not ${modulusBits(level)} bits`);
    return new PaillierSecretKey(p, q);
  }

  /** N */
  get N(): bigint {
    return this.publicKey.N;
  }

  /** The serialisable secret (p, q). */
  toData(): PaillierSecretKeyData {
    return { p: this.p, q: this.q };
  }

  /**
   * Dec(c) ∈ [0, N) by CRT (Paillier 1999 §7; spec §2): m_p = L_p(c^(p−1) mod p²)·h_p mod p, same
   * for q, recombined modulo N.
   * @throws RangeError when c is not a valid ciphertext
   */
  decrypt(c: bigint): bigint {
    this.publicKey.assertCiphertext(c);
    const { p, q } = this;
    const mp = (((modPow(c % this.p2, p - 1n, this.p2) - 1n) / p) * this.hp) % p;
    const mq = (((modPow(c % this.q2, q - 1n, this.q2) - 1n) / q) * this.hq) % q;
    return this.crtN.combine(mp, mq);
  }

  /** Dec(c) as a signed value in ±(N−1)/2. */
  decryptSigned(c: bigint): bigint {
    const m = this.decrypt(c);
    return m > this.publicKey.halfN ? m - this.N : m;
  }

  /**
   * Decrypt and recover the nonce: c = (1+N)^m·ρ^N mod N² with m ∈ ±(N−1)/2 (as
   * {@link decryptSigned}) and ρ ∈ Z*_N. Since (1+N)^m ≡ 1 (mod N), ρ^N ≡ c (mod N), so
   * ρ = c^(N⁻¹ mod φ(N)) mod N, computed by CRT as (c mod p)^(N⁻¹ mod (p−1)) mod p and the same
   * modulo q (Damgård–Jurik 2001, Thm. 1). For a homomorphic combination c = ∏ cᵢ^kᵢ the result is
   * ρ = ∏ ρᵢ^kᵢ mod N, the nonce a proof about c (e.g. Πdec) needs. The nonce is as secret as m.
   * @returns `{ m, rho }` with Enc(m; ρ) = c
   * @throws RangeError when c is not a valid ciphertext
   */
  decryptWithNonce(c: bigint): { readonly m: bigint; readonly rho: bigint } {
    const m = this.decryptSigned(c);
    const { p, q } = this;
    const rho = this.crtN.combine(modPow(c % p, this.nInvP, p), modPow(c % q, this.nInvQ, q));
    return { m, rho };
  }

  /** Textbook decryption L(c^φ mod N²)·φ⁻¹ mod N (no CRT); a reference for tests and benches. */
  decryptPlain(c: bigint): bigint {
    this.publicKey.assertCiphertext(c);
    const N = this.N;
    const u = modPow(c, this.phi, this.publicKey.N2);
    return mod(((u - 1n) / N) * invertMod(this.phi, N), N);
  }

  /**
   * x^N mod N² for any integer x, by CRT (the key owner's fast path for ρ^N and w^N). Modulo p²,
   * x^N = (x^q)^p and y^p mod p² depends only on y mod p (the binomial terms of (y + kp)^p beyond
   * the first are multiples of p²), so x^N ≡ ((x mod p)^(q mod (p−1)) mod p)^p (mod p²): a
   * half-size exponentiation modulo p and a p-bit one modulo p², instead of an N-bit one modulo p²
   * (≈ 40 % less work). Same for q. Exact for every x (including non-units).
   * @returns x^N mod N² in [0, N²)
   */
  powN(x: bigint): bigint {
    const { p, q } = this;
    const xp = modPow(modPow(mod(x, p), this.qModPm1, p), p, this.p2);
    const xq = modPow(modPow(mod(x, q), this.pModQm1, q), q, this.q2);
    return this.crtN2.combine(xp, xq);
  }

  /** Enc(m; ρ) with ρ^N computed by CRT modulo p², q² ({@link powN}; the key owner's fast path). */
  encryptWithNonce(m: bigint, rho: bigint): bigint {
    const pk = this.publicKey;
    if (rho <= 0n || rho >= pk.N || gcd(rho, pk.N) !== 1n) throw new RangeError('rho: not in Z*_N');
    return (pk.gammaPow(m) * this.powN(rho)) % pk.N2;
  }

  /** Encrypt with a fresh nonce using CRT. */
  encrypt(m: bigint, rng: RandomSource = systemRandom): { readonly c: bigint; readonly rho: bigint } {
    const rho = randomUnit(rng, this.N);
    return { c: this.encryptWithNonce(m, rho), rho };
  }
}

/** Options of {@link generatePaillierKey}. */
export interface KeyGenOptions {
  /** Take primes from this pool (its `bits` must be 4κ of the level) instead of searching. */
  readonly primePool?: PrimePool;
}

/**
 * Generate a Paillier–Blum key: two distinct safe primes of 4κ bits from `node:crypto`
 * (OpenSSL, its own CSPRNG), retried until N has exactly 8κ bits. Asynchronous: the prime search
 * runs on libuv's thread pool (or in the pool's worker), never blocking the event loop.
 * @throws RangeError when the pool's prime size does not match the level
 */
export async function generatePaillierKey(
  level: SecurityLevel = DEFAULT_LEVEL,
  opts: KeyGenOptions = {},
): Promise<PaillierSecretKey> {
  const bits = primeBits(level);
  if (opts.primePool && opts.primePool.bits !== bits) {
    throw new RangeError(`primePool: holds ${opts.primePool.bits}-bit primes, level needs ${bits}`);
  }
  const next = () => (opts.primePool ? opts.primePool.take() : generateSafePrime(bits));
  const p = await next();
  for (;;) {
    const q = await next();
    if (q !== p && bitLength(p * q) === modulusBits(level))
      return PaillierSecretKey.fromPrimes(p, q, level, { checkPrimality: false });
  }
}
