/**
 * FROST distributed key generation on the sans-IO runtime: the Pedersen DKG with proofs of
 * knowledge of ZcashFoundation FROST / Komlo–Goldberg 2020 Fig. 1 (RFC 9591 leaves DKG out of
 * scope; Appendix C gives the VSS it uses), wrapping `@noble/curves`' `DKG.round1/2/3`, plus a
 * jointly random 32-byte chain code by commit–reveal XOR (as in CGGMP21 keygen).
 *
 * Messages (runtime rounds; every message carries the session id; the wire layer signs them):
 * - round 0, broadcast: `{ params, commitment: [φ_i0…φ_i(t−1)], pok, chainCodeCommitment }` —
 *   noble `DKG_Round1` (Feldman commitment and proof of knowledge of a_i0) and a hash commitment to
 *   the party's chain-code contribution c_i (32 random bytes). `params` is a digest of
 *   (suite, t, identifiers, session id): a party configured differently is named.
 * - round 1, p2p to each j: `{ share: f_i(id_j) }` (noble `DKG_Round2`); broadcast:
 *   `{ chainCode: c_i, randomness }` (the opening). Sent only after every round-0 broadcast
 *   arrived, so no party can choose c_i after seeing the others' (the XOR is uniform if one
 *   party is honest).
 * - round 2, broadcast: `{ confirm }` = digest of the session id and the resulting public key
 *   package and chain code; the output is released only when all confirmations match (and after
 *   the runtime's echo round), so no honest party finishes unless every party accepted its shares.
 *
 * Identifiable abort ({@link ProtocolAbort}): a bad proof of knowledge names its sender; a share
 * failing the Feldman check (RFC 9591 App. C.2 vss_verify) names its SENDER — the receiver's
 * complaint is provable in the wire layer because p2p messages are signed by their sender (the
 * receiver can show the signed share, which anyone checks against the broadcast commitment); a
 * wrong chain-code opening, a parameter mismatch or a differing confirmation names its sender;
 * equivocated broadcasts are named by the runtime's echo.
 *
 * Identifiers: runtime party index i uses identifier i+1 (noble `Identifier.fromNumber(i + 1)`)
 * unless `identifiers` is given.
 *
 * Session binding: noble's proof-of-knowledge challenge is the frost-rs one (context string,
 * identifier, φ_i0, R) and does not include the session id; the session is bound by the runtime
 * (messages of another session are rejected), the `params` digest, the chain-code commitments
 * (tag `custodian.frost.dkg.chaincode`, session id, committer) and the final confirmation digest.
 * A replayed round-0 package of another party from an earlier session does not verify under a
 * different identifier, and its sender cannot produce shares consistent with it.
 *
 * Randomness: all of it comes from the runtime's `RandomSource`: first noble's round1 (a_i0,
 * a_i1…a_i(t−1), the proof nonce; 48 bytes each), then c_i (32) and the commitment randomness (32).
 */
import {
  type Canonical,
  canonicalEncode,
  commit,
  equalBytes,
  ProtocolAbort,
  type ProtocolSpec,
  type RoundContext,
  verifyCommitment,
  vssVerifyShare,
} from '@custodian/crypto';
import type { DKG_Round1, DKG_Secret } from '@noble/curves/abstract/frost.js';
import { sha256 } from '@noble/hashes/sha2.js';
import type { KeyShare } from './keyshare.js';
import { type AnyPoint, getSuite, nobleRng, type Suite, type SuiteName } from './suites.js';
import { asRecord, bytesField, defaultIdentifiers, validateIdentifierList } from './util.js';

/** DKG parameters (the party count n and own index come from the runtime). */
export interface DkgOptions {
  readonly suite: SuiteName;
  /** t, 2 ≤ t ≤ n (noble, like frost-rs, requires t ≥ 2). */
  readonly threshold: number;
  /** Identifier per runtime index (default i+1). Nonzero, distinct, below the group order. */
  readonly identifiers?: readonly bigint[];
}

const TAG = 'custodian.frost.dkg';

interface R0 {
  readonly params: Uint8Array;
  readonly commitment: readonly Uint8Array[];
  readonly pok: Uint8Array;
  readonly chainCodeCommitment: Uint8Array;
}
interface R1b {
  readonly chainCode: Uint8Array;
  readonly randomness: Uint8Array;
}
interface R1p {
  readonly share: Uint8Array;
}

interface DkgState {
  readonly suite: Suite;
  readonly t: number;
  readonly ids: readonly bigint[];
  readonly params: Uint8Array;
  secret: DKG_Secret;
  chainCode: Uint8Array;
  ccRandomness: Uint8Array;
  chainCodeCommitments?: Map<number, Uint8Array>;
  round1?: Map<number, DKG_Round1>;
  result?: KeyShare;
  confirm?: Uint8Array;
}

function paramsDigest(suite: Suite, t: number, ids: readonly bigint[], sessionId: Uint8Array): Uint8Array {
  return sha256(canonicalEncode([`${TAG}.params/v1`, suite.name, t, ids as bigint[], sessionId]));
}

function confirmDigest(sessionId: Uint8Array, share: KeyShare): Uint8Array {
  return sha256(
    canonicalEncode([
      `${TAG}.confirm/v1`,
      sessionId,
      share.suite,
      share.threshold,
      share.identifiers as bigint[],
      share.vssCommitment as Uint8Array[],
      share.verifyingShares as Uint8Array[],
      share.chainCode,
    ]),
  );
}

function chainCtx(ctx: RoundContext, committer: number) {
  return { tag: `${TAG}.chaincode`, sessionId: ctx.sessionId, committer };
}

/**
 * The FROST DKG protocol for the runtime's `Party`/`simulate`.
 * Output: this party's {@link KeyShare} (epoch 0). Aborts name culprits (see module docs).
 * @throws RangeError (from `start`) when the options do not fit the session (n, identifiers, t)
 */
export function dkgProtocol(options: DkgOptions): ProtocolSpec<DkgState, KeyShare> {
  const suite = getSuite(options.suite);
  return {
    name: TAG,
    start(ctx) {
      const ids = options.identifiers ?? defaultIdentifiers(ctx.n);
      validateIdentifierList(suite, ids, ctx.n);
      const t = options.threshold;
      if (!Number.isSafeInteger(t) || t < 2 || t > ctx.n)
        throw new RangeError(`threshold: ${t} not in [2, n=${ctx.n}]`);
      const self = ids[ctx.self] as bigint;
      const r1 = suite.frost.DKG.round1(suite.idHex(self), { min: t, max: ctx.n }, undefined, nobleRng(ctx.rng));
      const chainCode = ctx.rng(32);
      if (chainCode.length !== 32) throw new RangeError('rng output: expected 32 bytes');
      const cc = commit(chainCtx(ctx, ctx.self), chainCode, ctx.rng);
      const params = paramsDigest(suite, t, ids, ctx.sessionId);
      const state: DkgState = { suite, t, ids, params, secret: r1.secret, chainCode, ccRandomness: cc.randomness };
      return {
        state,
        send: {
          broadcast: {
            params,
            commitment: r1.public.commitment,
            pok: r1.public.proofOfKnowledge,
            chainCodeCommitment: cc.commitment,
          },
        },
      };
    },
    rounds: [
      {
        name: `${TAG}.round1`,
        broadcast(body, _from, state): R0 {
          const r = asRecord(body, 'round-0 body');
          const commitment = r.commitment;
          if (!Array.isArray(commitment) || commitment.length !== state.t) {
            throw new RangeError(`commitment: expected ${state.t} points`);
          }
          for (const [k, c] of commitment.entries()) {
            state.suite.group.decodePoint(bytesField(c, `commitment[${k}]`), `commitment[${k}]`);
          }
          return {
            params: bytesField(r.params, 'params', 32),
            commitment: commitment as Uint8Array[],
            pok: bytesField(r.pok, 'pok', state.suite.pokLength),
            chainCodeCommitment: bytesField(r.chainCodeCommitment, 'chainCodeCommitment', 32),
          };
        },
        process(state, received) {
          const bad = [...received].filter(([, m]) => !equalBytes(m.broadcast.params, state.params));
          if (bad.length > 0) {
            throw new ProtocolAbort(
              bad.map(([j]) => ({ party: j, reason: 'DKG parameters or session differ', check: 'frost.dkg-context' })),
            );
          }
          const round1 = new Map<number, DKG_Round1>();
          const ccs = new Map<number, Uint8Array>();
          for (const [j, m] of received) {
            round1.set(j, {
              identifier: state.suite.idHex(state.ids[j] as bigint),
              commitment: [...m.broadcast.commitment],
              proofOfKnowledge: m.broadcast.pok,
            });
            ccs.set(j, m.broadcast.chainCodeCommitment);
          }
          let r2: Record<string, { signingShare: Uint8Array }>;
          try {
            r2 = state.suite.frost.DKG.round2(state.secret, [...round1.values()]);
          } catch (e) {
            // noble does not say whose package failed: find the culprits ourselves.
            const culprits = [...round1].filter(
              ([j, p]) =>
                !state.suite.verifyProofOfKnowledge(
                  state.ids[j] as bigint,
                  p.commitment[0] as Uint8Array,
                  p.proofOfKnowledge,
                ),
            );
            if (culprits.length > 0) {
              throw new ProtocolAbort(
                culprits.map(([j]) => ({
                  party: j,
                  reason: 'invalid proof of knowledge (DKG round 1)',
                  check: 'frost.pok',
                })),
              );
            }
            throw e;
          }
          const p2p = new Map<number, Canonical>();
          for (const j of round1.keys()) {
            const pkg = r2[state.suite.idHex(state.ids[j] as bigint)];
            if (!pkg) throw new Error('dkg: noble round2 produced no share for a party');
            p2p.set(j, { share: pkg.signingShare });
          }
          state.round1 = round1;
          state.chainCodeCommitments = ccs;
          return {
            state,
            send: { broadcast: { chainCode: Uint8Array.from(state.chainCode), randomness: state.ccRandomness }, p2p },
          };
        },
      },
      {
        name: `${TAG}.round2`,
        broadcast(body): R1b {
          const r = asRecord(body, 'round-1 broadcast');
          return {
            chainCode: bytesField(r.chainCode, 'chainCode', 32),
            randomness: bytesField(r.randomness, 'randomness', 32),
          };
        },
        p2p(body, _from, state): R1p {
          const r = asRecord(body, 'round-1 share');
          const share = bytesField(r.share, 'share', 32);
          state.suite.group.decodeScalar(share, 'share', { allowZero: true });
          return { share };
        },
        process(state, received, ctx) {
          const G = state.suite.group;
          const chainCode = Uint8Array.from(state.chainCode);
          const badOpen: number[] = [];
          for (const [j, m] of received) {
            const c = state.chainCodeCommitments?.get(j) as Uint8Array;
            if (!verifyCommitment(chainCtx(ctx, j), c, m.broadcast.chainCode, m.broadcast.randomness)) badOpen.push(j);
            for (let k = 0; k < 32; k++) chainCode[k] = (chainCode[k] as number) ^ (m.broadcast.chainCode[k] as number);
          }
          if (badOpen.length > 0) {
            throw new ProtocolAbort(
              badOpen.map((j) => ({
                party: j,
                reason: 'chain-code opening does not match its commitment',
                check: 'frost.chain-code',
              })),
            );
          }
          const round1 = state.round1 as Map<number, DKG_Round1>;
          const self = state.ids[ctx.self] as bigint;
          const selfHex = state.suite.idHex(self);
          const round2 = [...received].map(([j, m]) => ({
            identifier: state.suite.idHex(state.ids[j] as bigint),
            signingShare: m.p2p.share,
          }));
          let key: ReturnType<typeof state.suite.frost.DKG.round3>;
          try {
            key = state.suite.dkgFinal.DKG.round3(state.secret, [...round1.values()], round2);
          } catch (e) {
            const culprits = [...received].filter(([j, m]) => {
              const C = (round1.get(j) as DKG_Round1).commitment.map((c, k) => G.decodePoint(c, `commitment[${k}]`));
              return !vssVerifyShare(
                G,
                C as AnyPoint[],
                self,
                G.decodeScalar(m.p2p.share, 'share', { allowZero: true }),
              );
            });
            if (culprits.length > 0) {
              throw new ProtocolAbort(
                culprits.map(([j]) => ({
                  party: j,
                  reason: `share sent to party ${ctx.self} fails the Feldman check`,
                  check: 'frost.feldman',
                })),
              );
            }
            throw e;
          }
          if (key.secret.identifier !== selfHex) throw new Error('dkg: noble returned a key for another identifier');
          const result: KeyShare = {
            version: 1,
            suite: state.suite.name,
            threshold: state.t,
            identifiers: [...state.ids],
            identifier: self,
            signingShare: state.suite.frost.utils.Fn.fromBytes(key.secret.signingShare),
            groupPublicKey: key.public.commitments[0] as Uint8Array,
            vssCommitment: [...key.public.commitments],
            verifyingShares: state.ids.map((id) => {
              const y = key.public.verifyingShares[state.suite.idHex(id)];
              if (!y) throw new Error('dkg: missing verifying share');
              return y;
            }),
            chainCode,
            epoch: 0,
          };
          const confirm = confirmDigest(ctx.sessionId, result);
          const next: DkgState = { ...state, result, confirm };
          delete next.round1;
          state.chainCode.fill(0);
          return { state: next, send: { broadcast: { confirm } } };
        },
      },
      {
        name: `${TAG}.confirm`,
        broadcast(body): { confirm: Uint8Array } {
          return { confirm: bytesField(asRecord(body, 'confirmation').confirm, 'confirm', 32) };
        },
        process(state, received) {
          const bad = [...received].filter(([, m]) => !equalBytes(m.broadcast.confirm, state.confirm as Uint8Array));
          if (bad.length > 0) {
            throw new ProtocolAbort(
              bad.map(([j]) => ({
                party: j,
                reason: 'confirmed a different public key package or chain code',
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
