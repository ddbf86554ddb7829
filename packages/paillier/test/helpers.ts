/**
 * Test fixtures: keys and ring-Pedersen parameters built from the committed TEST-ONLY safe primes
 * (`fixtures/test-only-safe-primes.json`). Never use these outside tests.
 */
import { readFileSync } from 'node:fs';
import { Transcript } from '@custodian/crypto';
import { seededRandom } from '@custodian/crypto/testing';
import {
  PaillierSecretKey,
  RingPedersen,
  ringPedersenFromKey,
  SECURITY_112,
  SECURITY_128,
  type SecurityLevel,
} from '../src/index.js';
import type { ProofContext } from '../src/proofs/common.js';

const fixture = JSON.parse(readFileSync(new URL('./fixtures/test-only-safe-primes.json', import.meta.url), 'utf8')) as {
  safePrimes1024: string[];
  safePrimes1536: string[];
};

/** Safe primes of 4κ bits for the level (TEST ONLY). */
export function testPrimes(level: SecurityLevel): bigint[] {
  const list = level === SECURITY_112 ? fixture.safePrimes1024 : fixture.safePrimes1536;
  return list.map((h) => BigInt(`0x${h}`));
}

/** The i-th test Paillier key of the level (primes 2i, 2i+1). */
export function testKey(level: SecurityLevel, i: number): PaillierSecretKey {
  const ps = testPrimes(level);
  return PaillierSecretKey.fromPrimes(ps[2 * i] as bigint, ps[2 * i + 1] as bigint, level, { checkPrimality: false });
}

/** Ring-Pedersen parameters on the i-th test key, public and owner views. */
export function testAux(level: SecurityLevel, i: number, seed = 'aux') {
  const key = testKey(level, i);
  const { params, secret } = ringPedersenFromKey(key, seededRandom(`${seed}-${level.name}-${i}`));
  return {
    key,
    params,
    secret,
    pub: RingPedersen.fromParams(params, level),
    owner: RingPedersen.fromSecret(params, secret),
  };
}

/** A proof context for session `sid` from `prover` to `verifier`. */
export function ctx(
  sid = 'session-0000000001',
  prover: string | number = 1,
  verifier: string | number | null = 2,
): ProofContext {
  const transcript = Transcript.create('custodian.test.paillier', {
    sessionId: new TextEncoder().encode(sid.padEnd(16, '.')),
    parties: [1n, 2n, 3n],
    round: 1,
  });
  return { transcript, prover, verifier };
}

export { SECURITY_112, SECURITY_128, seededRandom };

const G_BYTES_2 = Uint8Array.from([
  2, 198, 4, 127, 148, 65, 237, 125, 109, 48, 69, 64, 110, 149, 192, 124, 216, 92, 119, 142, 75, 140, 239, 60, 167, 171,
  172, 9, 185, 92, 112, 158, 229,
]); // 2·G on secp256k1, compressed

/**
 * Every single-field tampering of a record: bigints +1, booleans flipped, vectors with their first
 * element tampered and (separately) truncated by one, 33-byte points replaced by 2·G (or G+… when
 * already 2·G, by flipping the parity byte).
 */
export function tamperings<T extends object>(value: T): [string, T][] {
  const out: [string, T][] = [];
  for (const [k, v] of Object.entries(value)) {
    const put = (label: string, nv: unknown) => out.push([label, { ...value, [k]: nv } as T]);
    if (typeof v === 'bigint') put(`${k}+1`, v + 1n);
    else if (typeof v === 'boolean') put(`${k} flipped`, !v);
    else if (v instanceof Uint8Array) {
      const same = v.length === G_BYTES_2.length && v.every((b, i) => b === G_BYTES_2[i]);
      put(`${k} replaced`, same ? Uint8Array.from(v, (b, i) => (i === 0 ? b ^ 1 : b)) : G_BYTES_2);
    } else if (Array.isArray(v)) {
      const first = v[0];
      const changed = typeof first === 'boolean' ? !first : (first as bigint) + 1n;
      put(`${k}[0] tampered`, [changed, ...v.slice(1)]);
      put(`${k} truncated`, v.slice(1));
      put(`${k} extended`, [...v, v[0]]);
    }
  }
  return out;
}
