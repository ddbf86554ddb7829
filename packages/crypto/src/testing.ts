/**
 * TEST-ONLY helpers. Never import from product code: reconstructing a secret defeats threshold
 * custody. Exposed as `@custodian/crypto/testing` for tests and benchmarks only.
 */

import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { type RandomSource, systemRandom } from './bytes.js';
import { ed25519Sign, ed25519Verify } from './ed25519.js';
import type { Group, GroupPoint } from './group.js';
import { broadcastStatementBytes, echoHash } from './runtime/party.js';
import type { BroadcastAuth, IncomingMessage, PartyIndex } from './runtime/types.js';
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

/**
 * Test-only {@link BroadcastAuth} for n parties: real Ed25519 (RFC 8032) with deterministic 32-byte
 * seeds SHA-256(seed ‖ i), signing the statement bytes directly (the wire layer adds its own prefix).
 * @returns one BroadcastAuth per party index, and the public keys
 */
export function ed25519AuthsForTest(
  n: number,
  seed = 'custodian/test/broadcast-auth',
): { auths: BroadcastAuth[]; publicKeys: Uint8Array[] } {
  const enc = new TextEncoder().encode(seed);
  const secrets = Array.from({ length: n }, (_, i) => sha256(new Uint8Array([...enc, i])));
  const publicKeys = secrets.map((s) => ed25519.getPublicKey(s));
  const verify = (party: PartyIndex, statement: Uint8Array, signature: Uint8Array): boolean => {
    const pk = publicKeys[party];
    if (!pk || !(signature instanceof Uint8Array) || signature.length !== 64) return false;
    try {
      return ed25519Verify(signature, statement, pk);
    } catch {
      return false;
    }
  };
  const auths = secrets.map((s) => ({ sign: (statement: Uint8Array) => ed25519Sign(statement, s), verify }));
  return { auths, publicKeys };
}

/**
 * Test-only: `m` with its statement signature recomputed under `auth` for its (possibly altered)
 * body, as a cheating broadcaster that equivocates with valid signatures would send it.
 */
export function resignForTest(auth: BroadcastAuth, protocol: string, m: IncomingMessage): IncomingMessage {
  const hash = echoHash(m.sessionId, m.round, m.from, m.body);
  return { ...m, statementSignature: auth.sign(broadcastStatementBytes(protocol, m.sessionId, m.round, m.from, hash)) };
}

export type { AdversaryLog, Cheat, CheatKind } from './testing-adversary.js';
export {
  adversarialRunForTest,
  blameViolationsForTest,
  broadcastAdversaryForTest,
  CHEAT_KINDS,
} from './testing-adversary.js';
