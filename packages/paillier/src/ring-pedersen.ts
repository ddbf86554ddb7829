/**
 * Ring-Pedersen parameters (N̂, s, t) with trapdoor λ, s = t^λ mod N̂ (CGGMP21 ring-Pedersen commitments,
 * used in the auxiliary-info phase; spec §4.1 "Provisioning Protocol"): N̂ = p̂·q̂ a product of safe primes, t = r² mod N̂ a random quadratic
 * residue (generating QR_N̂ with overwhelming probability), λ ← Z_φ(N̂).
 *
 * Commitments s^x·t^y mod N̂ are computed by {@link RingPedersen.commit} with precomputed
 * fixed-base tables for s and t (spec §2, Yao's method), built once per parameter set (public
 * views are cached in a small LRU); arbitrary bases use CRT when the owner's secret is attached.
 */
import { bitLength, type RandomSource, systemRandom } from '@custodian/crypto';
import { gcd, randomBelow, randomUnit } from './arith.js';
import { DEFAULT_LEVEL, type SecurityLevel } from './levels.js';
import { CrtExp, FixedBaseTable, fixedBaseMultiExp, modPow } from './modexp.js';
import { assertModulus, PaillierSecretKey } from './paillier.js';
import { generateSafePrime, type PrimePool } from './primes.js';

/** Public ring-Pedersen parameters (a `Canonical` record: plain bigints). */
export interface RingPedersenParams {
  /** N̂, a Paillier–Blum modulus of ≥ 8κ − 1 bits */
  readonly N: bigint;
  /** s = t^λ mod N̂ */
  readonly s: bigint;
  /** t ∈ QR_N̂ */
  readonly t: bigint;
}

/** The owner's secret: factorisation of N̂ and λ. Never log or send it. */
export interface RingPedersenSecret {
  readonly p: bigint;
  readonly q: bigint;
  /** λ with s = t^λ mod N̂, 0 ≤ λ < φ(N̂) */
  readonly lambda: bigint;
}

/**
 * Check received parameters before any use (the verifier list): N̂ odd, ≥ minModulusBits,
 * not a square; s, t ∈ Z*_N̂ \ {1, N̂ − 1}; s ≠ t. Membership s ∈ ⟨t⟩ is what Πprm proves.
 * @throws TypeError for non-bigints; RangeError naming the failed check
 */
export function assertRingPedersenParams(params: unknown, level: SecurityLevel = DEFAULT_LEVEL): RingPedersenParams {
  const p = params as RingPedersenParams;
  if (typeof p !== 'object' || p === null) throw new TypeError('ring-Pedersen params: expected a record');
  const N = assertModulus(p.N, level, 'N̂');
  for (const f of ['s', 't'] as const) {
    const v = p[f];
    if (typeof v !== 'bigint') throw new TypeError(`${f}: expected bigint`);
    if (v <= 1n || v >= N - 1n) throw new RangeError(`${f}: must lie in (1, N̂ − 1)`);
    if (gcd(v, N) !== 1n) throw new RangeError(`${f}: not in Z*_N̂`);
  }
  if (p.s === p.t) throw new RangeError('s = t: rejected');
  return p;
}

/** Ring-Pedersen parameters with commitment helpers (and, for the owner, the trapdoor). */
export class RingPedersen {
  private crt: CrtExp | undefined;
  /** φ(N̂) for the owner */
  private phiN: bigint | undefined;
  private tables: { s: FixedBaseTable; t: FixedBaseTable } | undefined;

  private constructor(
    readonly params: RingPedersenParams,
    readonly secret: RingPedersenSecret | undefined,
  ) {
    if (secret) {
      this.crt = new CrtExp(secret.p, secret.p - 1n, secret.q, secret.q - 1n);
      this.phiN = (secret.p - 1n) * (secret.q - 1n);
    }
  }

  /**
   * Wrap public parameters received from another party (validated by
   * {@link assertRingPedersenParams}). Tables for s and t are built on first use.
   */
  static fromParams(params: RingPedersenParams, level: SecurityLevel = DEFAULT_LEVEL): RingPedersen {
    const p = assertRingPedersenParams(params, level);
    // a small LRU so the fixed-base tables of a peer's (N̂, s, t) are built once per process
    const key = `${p.N.toString(36)}:${p.s.toString(36)}:${p.t.toString(36)}`;
    const hit = RingPedersen.cache.get(key);
    if (hit) {
      RingPedersen.cache.delete(key);
      RingPedersen.cache.set(key, hit);
      return hit;
    }
    const rp = new RingPedersen({ N: p.N, s: p.s, t: p.t }, undefined);
    RingPedersen.cache.set(key, rp);
    if (RingPedersen.cache.size > 32) RingPedersen.cache.delete(RingPedersen.cache.keys().next().value as string);
    return rp;
  }

  private static readonly cache = new Map<string, RingPedersen>();

  /**
   * The owner's view (CRT commitments). Checks p·q = N̂ and s = t^λ.
   * @throws RangeError when the secret does not match the parameters
   */
  static fromSecret(params: RingPedersenParams, secret: RingPedersenSecret): RingPedersen {
    if (secret.p * secret.q !== params.N) throw new RangeError('ring-Pedersen secret: p·q ≠ N̂');
    const rp = new RingPedersen(params, secret);
    if (rp.crt?.pow(params.t, secret.lambda) !== params.s) throw new RangeError('ring-Pedersen secret: s ≠ t^λ');
    return rp;
  }

  /** N̂ */
  get N(): bigint {
    return this.params.N;
  }

  /** φ(N̂) when the secret is known. */
  get phi(): bigint | undefined {
    return this.secret ? (this.secret.p - 1n) * (this.secret.q - 1n) : undefined;
  }

  /**
   * s^x · t^y mod N̂ for any signed x, y. The owner (secret attached) uses the trapdoor:
   * s^x·t^y = t^(λ·x + y), one exponentiation with the exponent reduced modulo φ(N̂), by CRT
   * (≈ 0.6 ms at SECURITY_112 vs ≈ 3.5 ms for the tables); everyone else uses the fixed-base
   * tables of s and t (Yao's method). Both give the same value.
   */
  commit(x: bigint, y: bigint): bigint {
    if (this.crt && this.secret && this.phiN) {
      const phi = this.phiN;
      let e = (this.secret.lambda * x + y) % phi;
      if (e < 0n) e += phi;
      return this.crt.pow(this.params.t, e);
    }
    const tb = this.fixedTables();
    return fixedBaseMultiExp([
      [tb.s, x],
      [tb.t, y],
    ]);
  }

  /** t^y mod N̂ (fixed-base table). */
  powT(y: bigint): bigint {
    return this.fixedTables().t.pow(y);
  }

  /** b^e mod N̂ for an arbitrary base (CRT when the secret is known). */
  pow(b: bigint, e: bigint): bigint {
    if (this.crt && gcd(b, this.params.N) === 1n) return this.crt.pow(b, e);
    return modPow(b, e, this.params.N);
  }

  private fixedTables(): { s: FixedBaseTable; t: FixedBaseTable } {
    if (!this.tables)
      this.tables = {
        s: new FixedBaseTable(this.params.s, this.params.N),
        t: new FixedBaseTable(this.params.t, this.params.N),
      };
    return this.tables;
  }
}

/**
 * Ring-Pedersen parameters from a Paillier–Blum key's primes (the key owner's N̂ = p·q):
 * t = r² mod N̂ for r ← Z*_N̂, λ ← Z_φ(N̂), s = t^λ mod N̂ (spec §4.1, Provisioning Protocol).
 * Retries in the negligible case s, t ∈ {1, N̂ − 1} or s = t.
 */
export function ringPedersenFromKey(
  key: PaillierSecretKey,
  rng: RandomSource = systemRandom,
): { readonly params: RingPedersenParams; readonly secret: RingPedersenSecret } {
  const N = key.N;
  for (;;) {
    const r = randomUnit(rng, N);
    const t = (r * r) % N;
    const lambda = randomBelow(rng, key.phi);
    const s = key.crtN.pow(t, lambda);
    if (t <= 1n || s <= 1n || t === N - 1n || s === N - 1n || s === t) continue;
    return { params: { N, s, t }, secret: { p: key.p, q: key.q, lambda } };
  }
}

/**
 * Generate fresh ring-Pedersen parameters on a new modulus N̂ of 8κ bits (safe primes from the
 * pool when given, else from `node:crypto`).
 */
export async function generateRingPedersen(
  level: SecurityLevel = DEFAULT_LEVEL,
  opts: { primePool?: PrimePool; rng?: RandomSource } = {},
): Promise<{ readonly params: RingPedersenParams; readonly secret: RingPedersenSecret }> {
  const bits = 4 * level.kappa;
  const next = () => (opts.primePool ? opts.primePool.take() : generateSafePrime(bits));
  const p = await next();
  for (;;) {
    const q = await next();
    if (q === p || bitLength(p * q) !== 8 * level.kappa) continue;
    return ringPedersenFromKey(PaillierSecretKey.fromPrimes(p, q, level, { checkPrimality: false }), opts.rng);
  }
}
