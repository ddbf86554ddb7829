/**
 * The signer's durable store of safe primes for CGGMP21 aux-info and refresh (each needs two safe
 * primes of 4κ bits: 1536 bits at SECURITY_128, 1024 at SECURITY_112), kept encrypted in the
 * store's `primes` sublevel so ceremonies are not bound by prime search (spec §4.1
 * "Provisioning"). Primes come from `@custodian/paillier`'s `generateSafePrime` (the one
 * safe-prime generator: OpenSSL, off the event loop), exactly as many as the store lacks, or from
 * a file of pre-generated primes (each checked with `isSafePrime`). Primes taken by a ceremony are
 * reserved, and deleted in the ceremony's final store batch whatever its outcome, so a modulus is
 * never reused.
 *
 * Not `@custodian/paillier`'s `PrimePool`: that one is an in-memory pool for library users (a
 * worker thread keeps it topped up, a snapshot is theirs to store); this one is the signer's
 * encrypted, restart-safe store with reservations, and generates only what it lacks.
 */

import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { bigintToMinimalBytes, bytesToBigint, bytesToHex } from '@custodian/crypto';
import { generateSafePrime, isSafePrime, type SecurityLevel } from '@custodian/paillier';
import type { Logger } from 'pino';
import type { CeremonyStore, StoreOp } from './storage.js';

/** Durable pool of safe primes of one bit length. */
export class StoredPrimePool {
  private readonly reserved = new Set<string>();
  private filling = false;
  private stopped = false;

  constructor(
    private readonly store: CeremonyStore,
    readonly level: SecurityLevel,
    private readonly log: Logger,
  ) {}

  /** Bit length of the pool's primes (4κ). */
  get bits(): number {
    return 4 * this.level.kappa;
  }

  private prefix(): string {
    return `${this.bits}/`;
  }

  /** Number of primes available (not reserved by a running ceremony). */
  async size(): Promise<number> {
    return (await this.store.keys('primes', this.prefix())).filter((k) => !this.reserved.has(k)).length;
  }

  private async add(p: bigint): Promise<void> {
    await this.store.put('primes', `${this.prefix()}${bytesToHex(randomBytes(8))}`, bigintToMinimalBytes(p));
  }

  /**
   * Import pre-generated safe primes from a JSON file `{ "safePrimes": ["hex", …] }`; each must be
   * a safe prime of exactly `bits` bits. @returns the number imported
   * @throws Error naming the first invalid entry (nothing is imported then)
   */
  async seed(file: string): Promise<number> {
    const json = JSON.parse(await readFile(file, 'utf8')) as { safePrimes?: unknown };
    if (!Array.isArray(json.safePrimes)) throw new Error(`${file}: expected { "safePrimes": [hex…] }`);
    const primes = json.safePrimes.map((h, i) => {
      if (typeof h !== 'string' || !/^[0-9a-f]+$/i.test(h)) throw new Error(`${file}: safePrimes[${i}] is not hex`);
      const p = BigInt(`0x${h}`);
      if (p.toString(2).length !== this.bits || !isSafePrime(p))
        throw new Error(`${file}: safePrimes[${i}] is not a ${this.bits}-bit safe prime`);
      return p;
    });
    const existing = new Set<string>();
    for (const k of await this.store.keys('primes', this.prefix())) {
      const v = await this.store.get('primes', k);
      if (v) existing.add(bytesToHex(v));
    }
    let n = 0;
    for (const p of primes) {
      if (existing.has(bytesToHex(bigintToMinimalBytes(p)))) continue;
      await this.add(p);
      n++;
    }
    return n;
  }

  /** Generate primes in the background until the store holds `target` (one at a time; errors are logged). */
  fill(target: number): void {
    if (this.filling || target <= 0) return;
    this.filling = true;
    void (async () => {
      try {
        while (!this.stopped && (await this.size()) < target) {
          const t0 = Date.now();
          const p = await generateSafePrime(this.bits);
          if (this.stopped) break;
          await this.add(p);
          this.log.info(
            { bits: this.bits, ms: Date.now() - t0, pool: await this.size() },
            'safe prime added to the pool',
          );
        }
      } catch (e) {
        if (!this.stopped)
          this.log.error({ err: e instanceof Error ? e.message : String(e) }, 'prime pool refill failed');
      } finally {
        this.filling = false;
      }
    })();
  }

  /**
   * Reserve two distinct primes for a ceremony. The caller deletes them with `consumeOps` in its
   * final batch (or `release` to return them, e.g. when the ceremony was refused before starting).
   * @returns undefined when fewer than two primes are available
   */
  async take(): Promise<{ p: bigint; q: bigint; keys: string[] } | undefined> {
    const keys = (await this.store.keys('primes', this.prefix())).filter((k) => !this.reserved.has(k)).slice(0, 2);
    if (keys.length < 2) return undefined;
    for (const k of keys) this.reserved.add(k);
    const [p, q] = await Promise.all(
      keys.map(async (k) => bytesToBigint((await this.store.get('primes', k)) as Uint8Array)),
    );
    if (p === q) throw new Error('prime pool: duplicate prime');
    return { p: p as bigint, q: q as bigint, keys };
  }

  /** Store ops deleting reserved primes (put them in the ceremony's final batch). */
  consumeOps(keys: readonly string[]): StoreOp[] {
    return keys.map((key) => ({ type: 'del', sublevel: 'primes', key }));
  }

  /** Forget the reservation (after the delete batch was written, or to give the primes back). */
  release(keys: readonly string[]): void {
    for (const k of keys) this.reserved.delete(k);
  }

  /** Stop generating (a prime in progress is not stored); stored primes stay. */
  stop(): void {
    this.stopped = true;
  }
}
