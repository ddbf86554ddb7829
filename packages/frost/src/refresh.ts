/**
 * Proactive share refresh (Herzberg–Jarecki–Krawczyk–Yung 1995, zero-constant re-sharing) for
 * FROST key shares — noble has none. Same group key, every share changes, old shares become
 * useless together with new ones of other parties only up to the threshold as before.
 *
 * All n parties of the key take part (runtime index i ↔ `keyShare.identifiers[i]`):
 * - round 0: party i samples f_i of degree t−1 with f_i(0) = 0, broadcasts the Feldman commitment
 *   `{ context, commitment: [A_i0…A_i(t−1)] }` with A_i0 = identity (encoded as in
 *   {@link encodePointOrIdentity}) and sends `{ share: f_i(id_j) }` to each j. `context` digests
 *   the session id and the current public key package and epoch: a party with another key or
 *   epoch is named.
 * - round 1 (process): each receiver checks A_j0 = identity (else the dealer could shift the
 *   key) and f_j(id_i)·G = Σ_k id_i^k·A_jk (Feldman); a failure names the dealer (a provable
 *   complaint in the wire layer, where p2p messages are signed). New share
 *   s_i' = s_i + Σ_j f_j(id_i); new commitment C_k' = C_k + Σ_j A_jk (so C_0' = C_0: same key);
 *   new verifying shares from C'. Broadcast `{ confirm }` = digest of the new public package.
 * - round 2: all confirmations must match (else the sender is named); output the new key share
 *   with `epoch + 1` (released after the runtime's echo round). The caller replaces the old share
 *   only after this output, i.e. after every party confirmed.
 *
 * Randomness: the t−1 random coefficients, each from 64 bytes of the runtime's `RandomSource`
 * (`@custodian/crypto` randomPolynomial).
 */
import {
  type Canonical,
  canonicalEncode,
  equalBytes,
  ProtocolAbort,
  type ProtocolSpec,
  vssDeal,
  vssEvaluateCommitments,
  vssVerifyShare,
} from '@custodian/crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import type { KeyShare } from './keyshare.js';
import { type AnyPoint, decodePointOrIdentity, encodePointOrIdentity, getSuite, type Suite } from './suites.js';
import { asRecord, bytesField } from './util.js';

/** Refresh parameters. */
export interface RefreshOptions {
  /** This party's current key share; runtime index `self` must be its position in `identifiers`. */
  readonly keyShare: KeyShare;
}

interface RefreshState {
  readonly suite: Suite;
  readonly share: KeyShare;
  readonly context: Uint8Array;
  ownShare: bigint;
  ownCommitment: AnyPoint[];
  result?: KeyShare;
  confirm?: Uint8Array;
}

const TAG = 'custodian.frost.refresh';

function publicDigest(label: string, sessionId: Uint8Array, share: KeyShare): Uint8Array {
  return sha256(
    canonicalEncode([
      `${TAG}.${label}/v1`,
      sessionId,
      share.suite,
      share.threshold,
      share.identifiers as bigint[],
      share.vssCommitment as Uint8Array[],
      share.verifyingShares as Uint8Array[],
      share.chainCode,
      share.epoch,
    ]),
  );
}

/**
 * The refresh protocol for the runtime. Output: the new key share (same group key, epoch + 1).
 * @throws RangeError (from `start`) when the session does not match the key (n, self)
 */
export function refreshProtocol(opts: RefreshOptions): ProtocolSpec<RefreshState, KeyShare> {
  const share = opts.keyShare;
  const suite = getSuite(share.suite);
  const G = suite.group;
  return {
    name: TAG,
    start(ctx) {
      if (ctx.n !== share.identifiers.length)
        throw new RangeError(`refresh: all ${share.identifiers.length} parties must take part`);
      if (share.identifiers[ctx.self] !== share.identifier)
        throw new RangeError('refresh: runtime index does not match the key share');
      const dealing = vssDeal(G, 0n, share.threshold, share.identifiers, ctx.rng);
      const commitment = dealing.commitments.map((A) => encodePointOrIdentity(suite, A));
      const p2p = new Map<number, Canonical>();
      dealing.shares.forEach((s, j) => {
        if (j !== ctx.self) p2p.set(j, { share: G.encodeScalar(s) });
      });
      const context = publicDigest('context', ctx.sessionId, share);
      const state: RefreshState = {
        suite,
        share,
        context,
        ownShare: dealing.shares[ctx.self] as bigint,
        ownCommitment: [...dealing.commitments],
      };
      return { state, send: { broadcast: { context, commitment }, p2p } };
    },
    rounds: [
      {
        name: `${TAG}.round1`,
        broadcast(body) {
          const r = asRecord(body, 'refresh commitment');
          if (!Array.isArray(r.commitment) || r.commitment.length !== share.threshold) {
            throw new RangeError(`commitment: expected ${share.threshold} points`);
          }
          return {
            context: bytesField(r.context, 'context', 32),
            commitment: r.commitment.map((c, k) =>
              decodePointOrIdentity(suite, bytesField(c, `commitment[${k}]`), `commitment[${k}]`),
            ),
          };
        },
        p2p(body) {
          const s = bytesField(asRecord(body, 'refresh share').share, 'share', 32);
          return G.decodeScalar(s, 'share', { allowZero: true });
        },
        process(state, received, ctx) {
          const culprits: { party: number; reason: string; check: string }[] = [];
          const self = state.share.identifier;
          for (const [j, m] of received) {
            const A = m.broadcast.commitment as AnyPoint[];
            if (!equalBytes(m.broadcast.context, state.context)) {
              culprits.push({
                party: j,
                reason: 'refresh context differs (key, epoch or session)',
                check: 'frost.refresh-context',
              });
            } else if (!(A[0] as AnyPoint).is0()) {
              culprits.push({
                party: j,
                reason: 'refresh commitment A_0 is not the identity (would change the key)',
                check: 'frost.refresh-a0',
              });
            } else if (!vssVerifyShare(G, A, self, m.p2p as bigint)) {
              culprits.push({
                party: j,
                reason: `refresh share sent to party ${ctx.self} fails the Feldman check`,
                check: 'frost.feldman',
              });
            }
          }
          if (culprits.length > 0) throw new ProtocolAbort(culprits);
          let s = G.mod(state.share.signingShare + state.ownShare);
          const C = state.share.vssCommitment.map((c, k) => G.decodePoint(c, `vssCommitment[${k}]`));
          const add = (A: AnyPoint[]) => {
            for (let k = 0; k < C.length; k++) C[k] = C[k].add(A[k]);
          };
          add(state.ownCommitment);
          for (const m of received.values()) {
            s = G.mod(s + (m.p2p as bigint));
            add(m.broadcast.commitment as AnyPoint[]);
          }
          const verifyingShares = state.share.identifiers.map((id) => G.encodePoint(vssEvaluateCommitments(G, C, id)));
          const vssCommitment = C.map((c) => G.encodePoint(c));
          const result: KeyShare = {
            ...state.share,
            signingShare: s,
            groupPublicKey: vssCommitment[0] as Uint8Array,
            vssCommitment,
            verifyingShares,
            epoch: state.share.epoch + 1,
          };
          if (!G.mulBase(s).equals(G.decodePoint(verifyingShares[ctx.self] as Uint8Array, 'Y_self'))) {
            throw new Error('refresh: new share inconsistent (bug)');
          }
          const confirm = publicDigest('confirm', ctx.sessionId, result);
          return { state: { ...state, ownShare: 0n, result, confirm }, send: { broadcast: { confirm } } };
        },
      },
      {
        name: `${TAG}.confirm`,
        broadcast(body) {
          return bytesField(asRecord(body, 'confirmation').confirm, 'confirm', 32);
        },
        process(state, received) {
          const bad = [...received].filter(
            ([, m]) => !equalBytes(m.broadcast as Uint8Array, state.confirm as Uint8Array),
          );
          if (bad.length > 0) {
            throw new ProtocolAbort(
              bad.map(([j]) => ({
                party: j,
                reason: 'confirmed a different refreshed public key package',
                check: 'frost.confirm',
              })),
            );
          }
          return { output: state.result as KeyShare };
        },
      },
    ],
  };
}
