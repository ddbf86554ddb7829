/**
 * TEST-ONLY helpers. Never import from product code: reconstructing a secret defeats threshold
 * custody. Exposed as `@custodian/crypto/testing` for tests and benchmarks only.
 */

import { sha256 } from '@noble/hashes/sha2.js';
import { type RandomSource, systemRandom } from './bytes.js';
import type { Group, GroupPoint } from './group.js';
import { lagrangeAtZero } from './vss.js';

/** Reconstruct f(0) from t shares (test-only). */
export function reconstructSecretForTest<P extends GroupPoint<P>>(
  group: Group<P>,
  ids: readonly bigint[],
  shares: readonly bigint[],
): bigint {
  return group.mod(ids.reduce((acc, id, k) => acc + lagrangeAtZero(group, ids, id) * (shares[k] as bigint), 0n));
}

/** A deterministic RandomSource from a seed (SHA-256 in counter mode). Test-only: not a CSPRNG API. */
export function seededRandom(seed: string | Uint8Array): RandomSource {
  const s = typeof seed === 'string' ? new TextEncoder().encode(seed) : seed;
  let counter = 0;
  return (length) => {
    const out = new Uint8Array(length);
    for (let off = 0; off < length; off += 32) {
      const c = new Uint8Array(4);
      new DataView(c.buffer).setUint32(0, counter++);
      const block = sha256(new Uint8Array([...s, ...c]));
      out.set(block.subarray(0, Math.min(32, length - off)), off);
    }
    return out;
  };
}

export { systemRandom };
