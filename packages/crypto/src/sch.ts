/**
 * Πsch — Schnorr proof of knowledge of a discrete logarithm, CGGMP21 §C.1 (Fig. 22 in ePrint
 * 2021/060 rev. with Πfac; the LFDT-Lockness spec's "Schnorr proof"), made non-interactive with a
 * {@link Transcript} (Fiat–Shamir).
 *
 * Statement X = x·G. Prover: α ← Z_q, A = α·G (first message, may be committed in advance as in
 * CGGMP21 key generation), e = H(transcript ‖ X ‖ A) mod q, z = α + e·x mod q.
 * Verifier: z·G == A + e·X.
 *
 * Encoding of a proof on the wire: A as the group's point encoding, z as a 32-byte scalar.
 */
import type { RandomSource } from './bytes.js';
import type { Group, GroupPoint } from './group.js';
import type { Transcript } from './transcript.js';

/** Πsch first message: the public A and the secret nonce α (wipe after use; never reuse). */
export interface SchCommitment<P> {
  readonly A: P;
  readonly alpha: bigint;
}

/** A Πsch proof: commitment A and response z ∈ Z_q. */
export interface SchProof<P> {
  readonly A: P;
  readonly z: bigint;
}

/** Sample the first message A = α·G. */
export function schCommit<P extends GroupPoint<P>>(group: Group<P>, rng: RandomSource): SchCommitment<P> {
  const alpha = group.randomScalar(rng);
  return { A: group.mulBase(alpha), alpha };
}

function challenge<P extends GroupPoint<P>>(group: Group<P>, transcript: Transcript, X: P, A: P): bigint {
  return transcript
    .fork('custodian.crypto.sch')
    .append('curve', group.name)
    .append('X', group.encodePoint(X))
    .append('A', group.encodePoint(A))
    .challengeScalar('e', group.order);
}

/**
 * Respond to the challenge with witness x for X = x·G.
 * @param transcript the session-bound transcript (not mutated: the proof uses a fork)
 * @throws RangeError when x is not a scalar or X ≠ x·G (a bug in the caller)
 */
export function schProve<P extends GroupPoint<P>>(
  group: Group<P>,
  transcript: Transcript,
  X: P,
  x: bigint,
  commitment: SchCommitment<P>,
): SchProof<P> {
  if (!group.isScalar(x) || x === 0n) throw new RangeError('sch witness: out of range');
  if (!group.mulBase(x).equals(X)) throw new RangeError('sch witness: does not match statement');
  const e = challenge(group, transcript, X, commitment.A);
  return { A: commitment.A, z: group.mod(commitment.alpha + e * x) };
}

/** Commit and prove in one step. */
export function schProveFresh<P extends GroupPoint<P>>(
  group: Group<P>,
  transcript: Transcript,
  X: P,
  x: bigint,
  rng: RandomSource,
): SchProof<P> {
  return schProve(group, transcript, X, x, schCommit(group, rng));
}

/**
 * Verify a Πsch proof for X. Returns false (never throws) for any failed check: identity X or A,
 * z out of range, or z·G ≠ A + e·X.
 */
export function schVerify<P extends GroupPoint<P>>(
  group: Group<P>,
  transcript: Transcript,
  X: P,
  proof: SchProof<P>,
): boolean {
  if (X.is0() || proof.A.is0() || !group.isScalar(proof.z)) return false;
  const e = challenge(group, transcript, X, proof.A);
  return group.mulBase(proof.z).equals(proof.A.add(group.mulPublic(X, e)));
}
