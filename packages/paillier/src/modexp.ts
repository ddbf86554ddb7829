/**
 * Modular exponentiation for the Paillier machinery, behind one entry point ({@link modPow}).
 *
 * - {@link modPow}: base^exp mod m. Large odd moduli (512–10 000 bits) go to OpenSSL's Montgomery
 *   exponentiation through `node:crypto` (see "OpenSSL backend" below); everything else uses
 *   {@link modPowBigint}, native `bigint` left-to-right sliding-window exponentiation (window 1–6
 *   bits by exponent size). Negative exponents use the modular inverse of the base.
 * - {@link CrtExp}: the key owner's exponentiation modulo m₁·m₂ with known coprime factors and
 *   their Euler totients (spec §2 "Using the Chinese Remainder Theorem", Algorithm 2): exponents are
 *   reduced modulo φ(mᵢ), two half-size exponentiations, Garner recombination.
 * - {@link FixedBaseTable}: precomputed powers g^(B^i) for a fixed base (ring-Pedersen s, t), and
 *   {@link fixedBaseMultiExp}, Yao's bucket method (spec §2 "Speeding up Fixed-Based
 *   Multiexponentiation Using Preprocessing", Algorithm 3): ≈ k + 2B multiplications for k base-B
 *   digits instead of one squaring per exponent bit.
 *
 * OpenSSL backend: a `DiffieHellman` object of `node:crypto` whose "prime" is the modulus m
 * computes y^x mod m for a private value x = exp and a peer value y = base
 * (`setPrivateKey(x)`, `computeSecret(y)`, i.e. OpenSSL `DH_compute_key`, `BN_mod_exp_mont_consttime`).
 * Creating the object runs OpenSSL's `DH_check` once (≈ 20 ms for 4096 bits: it only reports that
 * m is not a safe prime, which we ignore); objects are cached per modulus (LRU of
 * {@link OPENSSL_CACHE_SIZE}), since the moduli of a key share (N_j, N_j², N̂_j, p², q²) recur in
 * every session. `DH_compute_key` enforces 1 < y < m − 1 and 512 ≤ bits(m) ≤ 10 000; the bases 0, 1
 * and m − 1, even moduli and moduli outside that range are handled in `bigint`, and any error from
 * OpenSSL falls back to `bigint` too, so results are always those of {@link modPowBigint}
 * (property-tested). Measured (4096-bit modulus, 2048-bit exponent): ≈ 9 ms vs ≈ 60 ms in `bigint`.
 *
 * `bigint` arithmetic in JavaScript is not constant-time; OpenSSL's exponentiation is (for the
 * exponent), the conversions around it are not. Secret exponents are used only by the key owner,
 * as in every JavaScript and Go CGGMP21 implementation.
 */
import { createDiffieHellman, type DiffieHellman } from 'node:crypto';
import { bitLength } from '@custodian/crypto';
import { invertMod, mod } from './arith.js';

function windowFor(bits: number): number {
  if (bits > 2048) return 6;
  if (bits > 512) return 5;
  if (bits > 128) return 4;
  if (bits > 24) return 3;
  return 1;
}

/** Number of per-modulus OpenSSL contexts kept (least recently used evicted). */
export const OPENSSL_CACHE_SIZE = 64;
const OPENSSL_MIN_BITS = 512;
const OPENSSL_MAX_BITS = 10_000;
/** Exponents shorter than this stay in `bigint` (call overhead dominates). */
const OPENSSL_MIN_EXP_BITS = 16;

interface OsslCtx {
  readonly dh: DiffieHellman;
  /** byte length of m */
  readonly len: number;
}

const osslCache = new Map<bigint, OsslCtx>();
let osslDisabled = false;

/** Bit length of x ≥ 0 (hex-based: 4× shorter string than `toString(2)`). */
function bits(x: bigint): number {
  if (x === 0n) return 0;
  const h = x.toString(16);
  return (h.length - 1) * 4 + (32 - Math.clz32(Number.parseInt(h[0] as string, 16)));
}

function toBuf(x: bigint): Buffer {
  const h = x.toString(16);
  return Buffer.from(h.length & 1 ? `0${h}` : h, 'hex');
}

function fromBuf(b: Buffer): bigint {
  return b.length === 0 ? 0n : BigInt(`0x${b.toString('hex')}`);
}

function osslCtx(m: bigint): OsslCtx | undefined {
  const hit = osslCache.get(m);
  if (hit) {
    osslCache.delete(m);
    osslCache.set(m, hit);
    return hit;
  }
  let dh: DiffieHellman;
  try {
    dh = createDiffieHellman(toBuf(m), Buffer.from([2]));
  } catch {
    return undefined;
  }
  const ctx = { dh, len: Math.ceil(bitLength(m) / 8) };
  osslCache.set(m, ctx);
  if (osslCache.size > OPENSSL_CACHE_SIZE) osslCache.delete(osslCache.keys().next().value as bigint);
  return ctx;
}

/** b^e mod m by OpenSSL for 1 < b < m − 1, e > 0, odd m in range; undefined when not possible. */
function osslPow(b: bigint, e: bigint, m: bigint, mBits: number): bigint | undefined {
  if (osslDisabled || mBits < OPENSSL_MIN_BITS || mBits > OPENSSL_MAX_BITS || (m & 1n) === 0n) return undefined;
  const ctx = osslCtx(m);
  if (!ctx) return undefined;
  try {
    ctx.dh.setPrivateKey(toBuf(e));
    return fromBuf(ctx.dh.computeSecret(toBuf(b)));
  } catch {
    return undefined;
  }
}

/**
 * Turn the OpenSSL backend off (true) or on again (false); for benchmarks and tests comparing the
 * two paths. Results are identical either way.
 */
export function setOpensslModPow(enabled: boolean): void {
  osslDisabled = !enabled;
}

/**
 * base^exp mod m: OpenSSL for odd moduli of 512–10 000 bits and bases in (1, m − 1) (see the
 * module docs), {@link modPowBigint} otherwise; the result is the same either way.
 * @param base any integer (reduced modulo m)
 * @param exp any integer; negative exponents require gcd(base, m) = 1
 * @param m modulus ≥ 1
 * @returns the value in [0, m)
 * @throws RangeError when m < 1, or exp < 0 and base is not invertible modulo m
 */
export function modPow(base: bigint, exp: bigint, m: bigint): bigint {
  if (m < 1n) throw new RangeError('modPow: modulus must be positive');
  if (m === 1n) return 0n;
  let b = mod(base, m);
  if (exp < 0n) {
    b = invertMod(b, m);
    exp = -exp;
  }
  if (exp === 0n) return 1n;
  if (b <= 1n) return b;
  if (b === m - 1n) return (exp & 1n) === 0n ? 1n : b;
  if (exp >= 1n << BigInt(OPENSSL_MIN_EXP_BITS - 1)) {
    const r = osslPow(b, exp, m, bits(m));
    if (r !== undefined) return r;
  }
  return modPowBigint(b, exp, m);
}

/**
 * base^exp mod m in native `bigint` (sliding window), the reference and fallback of {@link modPow}.
 * @throws RangeError when m < 1, or exp < 0 and base is not invertible modulo m
 */
export function modPowBigint(base: bigint, exp: bigint, m: bigint): bigint {
  if (m < 1n) throw new RangeError('modPow: modulus must be positive');
  if (m === 1n) return 0n;
  let b = mod(base, m);
  if (exp < 0n) {
    b = invertMod(b, m);
    exp = -exp;
  }
  if (exp === 0n) return 1n;
  if (b === 0n) return 0n;
  const bits = exp.toString(2);
  const w = windowFor(bits.length);
  if (w === 1) {
    let r = 1n;
    for (let i = 0; i < bits.length; i++) {
      r = (r * r) % m;
      if (bits.charCodeAt(i) === 49) r = (r * b) % m;
    }
    return r;
  }
  // odd powers b^1, b^3, …, b^(2^w − 1)
  const b2 = (b * b) % m;
  const odd: bigint[] = [b];
  for (let i = 1; i < 1 << (w - 1); i++) odd.push(((odd[i - 1] as bigint) * b2) % m);
  let r = 1n;
  let started = false;
  let i = 0;
  const n = bits.length;
  while (i < n) {
    if (bits.charCodeAt(i) === 48) {
      if (started) r = (r * r) % m;
      i++;
      continue;
    }
    // longest window ≤ w ending in a 1 bit
    let j = Math.min(i + w, n) - 1;
    while (bits.charCodeAt(j) === 48) j--;
    const len = j - i + 1;
    const val = Number.parseInt(bits.slice(i, j + 1), 2);
    if (started) for (let k = 0; k < len; k++) r = (r * r) % m;
    r = started ? (r * (odd[val >> 1] as bigint)) % m : (odd[val >> 1] as bigint);
    started = true;
    i = j + 1;
  }
  return r;
}

/** Plain square-and-multiply (window 1), kept as the benchmark baseline for {@link modPow}. */
export function modPowBinary(base: bigint, exp: bigint, m: bigint): bigint {
  if (exp < 0n) return modPowBinary(invertMod(mod(base, m), m), -exp, m);
  let r = 1n;
  let b = mod(base, m);
  while (exp > 0n) {
    if (exp & 1n) r = (r * b) % m;
    b = (b * b) % m;
    exp >>= 1n;
  }
  return r % m;
}

/**
 * Exponentiation modulo M = m₁·m₂ for the owner of the factorisation (spec §2, Algorithm 2).
 * Valid for bases coprime to M (exponents are reduced modulo φ(mᵢ)); use {@link modPow} otherwise.
 */
export class CrtExp {
  /** M = m₁·m₂ */
  readonly modulus: bigint;
  private readonly beta: bigint;

  /**
   * @param m1 first factor (e.g. p or p²)
   * @param phi1 φ(m₁) (e.g. p − 1 or p(p − 1))
   * @param m2 second factor, coprime to m₁
   * @param phi2 φ(m₂)
   * @throws RangeError when the factors are not coprime
   */
  constructor(
    readonly m1: bigint,
    readonly phi1: bigint,
    readonly m2: bigint,
    readonly phi2: bigint,
  ) {
    this.modulus = m1 * m2;
    this.beta = invertMod(m1, m2); // throws when gcd(m1, m2) ≠ 1
  }

  /** Recombine residues r₁ mod m₁ and r₂ mod m₂ into [0, M) (Garner). */
  combine(r1: bigint, r2: bigint): bigint {
    return r1 + mod((r2 - r1) * this.beta, this.m2) * this.m1;
  }

  /**
   * base^exp mod M for gcd(base, M) = 1 (any sign of exp). Exponents at least as long as φ(mᵢ)
   * are reduced modulo φ(mᵢ); shorter ones (e.g. 129-bit challenges, possibly negative) are used
   * as they are, since reducing a negative one would lengthen it to |φ(mᵢ)| bits.
   */
  pow(base: bigint, exp: bigint): bigint {
    return this.combine(this.powPart(base, exp, this.m1, this.phi1), this.powPart(base, exp, this.m2, this.phi2));
  }

  private powPart(base: bigint, exp: bigint, m: bigint, phi: bigint): bigint {
    const e = bitLength(exp) >= bitLength(phi) ? mod(exp, phi) : exp;
    return modPow(base % m, e, m);
  }
}

/**
 * Precomputed powers g^(B^i) mod m of a fixed base g (B = 2^window), grown on demand to cover the
 * largest exponent seen. Negative exponents use a lazily built table of g⁻¹.
 */
export class FixedBaseTable {
  /** window bits w; B = 2^w */
  readonly window: number;
  private readonly powers: bigint[];
  private inverse: FixedBaseTable | undefined;

  /**
   * @param base g, reduced modulo m; must be a unit when negative exponents are used
   * @param m modulus > 1
   * @param window digit size in bits (1–10; 6 is a good default for 2000–4000-bit exponents)
   */
  constructor(
    readonly base: bigint,
    readonly m: bigint,
    window = 6,
  ) {
    if (m <= 1n) throw new RangeError('FixedBaseTable: modulus must exceed 1');
    if (!Number.isInteger(window) || window < 1 || window > 10) throw new RangeError('FixedBaseTable: window 1…10');
    this.window = window;
    this.powers = [mod(base, m)];
  }

  /** Number of stored powers (digits covered). */
  get size(): number {
    return this.powers.length;
  }

  /** Ensure powers for `digits` base-B digits exist. */
  ensure(digits: number): void {
    const w = this.window;
    while (this.powers.length < digits) {
      let x = this.powers[this.powers.length - 1] as bigint;
      for (let k = 0; k < w; k++) x = (x * x) % this.m;
      this.powers.push(x);
    }
  }

  /** The table of g⁻¹ (built on first use). @throws RangeError when g is not a unit */
  negated(): FixedBaseTable {
    if (!this.inverse) this.inverse = new FixedBaseTable(invertMod(this.base, this.m), this.m, this.window);
    return this.inverse;
  }

  /** g^exp mod m. */
  pow(exp: bigint): bigint {
    return fixedBaseMultiExp([[this, exp]]);
  }
}

/**
 * ∏ gᵢ^eᵢ mod m for tables sharing the modulus m, by Yao's bucket method (spec Algorithm 3): every
 * nonzero base-B digit costs one multiplication into its bucket, then ≈ 2B multiplications fold
 * the buckets. Exponents may be negative (the table of gᵢ⁻¹ is used).
 * @throws RangeError when the tables use different moduli or windows
 */
export function fixedBaseMultiExp(terms: readonly (readonly [FixedBaseTable, bigint])[]): bigint {
  const first = terms[0];
  if (!first) return 1n;
  const m = first[0].m;
  const w = first[0].window;
  const B = 1 << w;
  const buckets: (bigint | undefined)[] = new Array(B);
  const maskB = BigInt(B - 1);
  const wb = BigInt(w);
  for (const [table0, e0] of terms) {
    if (table0.m !== m || table0.window !== w) throw new RangeError('fixedBaseMultiExp: tables differ');
    const table = e0 < 0n ? table0.negated() : table0;
    let e = e0 < 0n ? -e0 : e0;
    const digits = Math.ceil(bitLength(e) / w);
    table.ensure(digits);
    for (let i = 0; e > 0n; i++, e >>= wb) {
      const d = Number(e & maskB);
      if (d === 0) continue;
      const g = (table as unknown as { powers: bigint[] }).powers[i] as bigint;
      const cur = buckets[d];
      buckets[d] = cur === undefined ? g : (cur * g) % m;
    }
  }
  let acc: bigint | undefined;
  let res: bigint | undefined;
  for (let b = B - 1; b >= 1; b--) {
    const bucket = buckets[b];
    if (bucket !== undefined) acc = acc === undefined ? bucket : (acc * bucket) % m;
    if (acc !== undefined) res = res === undefined ? acc : (res * acc) % m;
  }
  return res === undefined ? 1n % m : res;
}
