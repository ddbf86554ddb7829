/**
 * Hash commitments (commit–reveal), as used by CGGMP21 key generation (Fig. 5/6: V_i = H(sid, i, …, u_i))
 * and FROST-style chain-code contributions.
 *
 * commitment = SHA-256( canonicalEncode(["custodian/commit/v1", tag, sessionId, committer, value, r]) )
 * with r 32 uniformly random bytes (the decommitment). Hiding follows from r, binding from SHA-256's
 * collision resistance; the injective encoding rules out ambiguity between tag, committer and value.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { abytes, equalBytes, type RandomSource } from './bytes.js';
import { type Canonical, canonicalEncode } from './encoding.js';

/** Length of a commitment and of its randomness, in bytes. */
export const COMMITMENT_LENGTH = 32;

/** Context every commitment is bound to. */
export interface CommitmentContext {
  /** Protocol tag, e.g. `custodian.cggmp.keygen.round1`. */
  readonly tag: string;
  /** Session id (≥ 16 bytes). */
  readonly sessionId: Uint8Array;
  /** Identifier of the committing party (its index or identifier). */
  readonly committer: number | bigint | string;
}

function digest(ctx: CommitmentContext, value: Canonical, randomness: Uint8Array): Uint8Array {
  const committer = typeof ctx.committer === 'number' ? BigInt(ctx.committer) : ctx.committer;
  return sha256(canonicalEncode(['custodian/commit/v1', ctx.tag, ctx.sessionId, committer, value, randomness]));
}

/**
 * Commit to `value`.
 * @returns `commitment` (32 bytes, to publish now) and `randomness` (32 bytes, to reveal with the value)
 */
export function commit(
  ctx: CommitmentContext,
  value: Canonical,
  rng: RandomSource,
): { commitment: Uint8Array; randomness: Uint8Array } {
  const randomness = abytes(rng(COMMITMENT_LENGTH), 'rng output', COMMITMENT_LENGTH);
  return { commitment: digest(ctx, value, randomness), randomness };
}

/**
 * Check an opening. Returns false on any mismatch (never throws for well-typed input).
 * @throws RangeError when `commitment` or `randomness` is not 32 bytes
 */
export function verifyCommitment(
  ctx: CommitmentContext,
  commitment: Uint8Array,
  value: Canonical,
  randomness: Uint8Array,
): boolean {
  abytes(commitment, 'commitment', COMMITMENT_LENGTH);
  abytes(randomness, 'randomness', COMMITMENT_LENGTH);
  return equalBytes(digest(ctx, value, randomness), commitment);
}
