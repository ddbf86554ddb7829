/**
 * CGGMP21 threshold (t-of-n) key generation on secp256k1.
 *
 * Implements the LFDT-Lockness cggmp21 specification §4.2.2 "Threshold (t-out-of-n) Key
 * Generation" (CGGMP21 ePrint 2021/060 Fig. 5 made threshold with Feldman VSS), with HD-wallet
 * support: a jointly random 32-byte chain code c = ⊕ c_j. Rounds (runtime round numbers):
 *
 *  0 → broadcast V_i = H(sid, n, i, t, rid_i, S_i, A_i, c_i; u_i)            (commit)
 *  1 → broadcast (rid_i, S_i, A_i, c_i, u_i); p2p σ_{i,j} = f_i(j+1)         (decommit, shares)
 *  2 → broadcast ψ_i = Πsch(x_i; A_i) with e bound to (sid, i, rid)           (proof)
 *  output after the runtime's broadcast echo.
 *
 * Identifiable abort (culprit named): bad decommitment, commitment vector of the wrong length or a
 * zero constant term, a share inconsistent with the sender's Feldman commitments (in the wire layer
 * the complaint is provable: the share arrives in a message signed by the sender), an invalid Πsch,
 * malformed messages, broadcast equivocation (runtime echo).
 *
 * Party i (0-based runtime index) has VSS identifier I(i) = i + 1.
 */
import {
  blame,
  type Canonical,
  commit,
  evalPolynomial,
  secp256k1Group as G,
  type ProtocolSpec,
  randomPolynomial,
  type SchCommitment,
  type Secp256k1Point,
  schCommit,
  schProve,
  schVerify,
  sumCommitments,
  Transcript,
  verifyCommitment,
  vssEvaluateCommitments,
  vssVerifyShare,
} from '@custodian/crypto';
import { bytesField, listField, pointField, record, scalarField, xorAll } from './codec.js';
import type { CoreKeyShare } from './key-share.js';

/** Protocol tag bound into every commitment and transcript of key generation. */
export const KEYGEN_TAG = 'custodian.cggmp.keygen.v1';

/** Parameters of a key generation. */
export interface KeygenParams {
  /** Threshold t: any t parties can sign (1 ≤ t ≤ n). */
  readonly t: number;
}

interface Decommitment {
  readonly rid: Uint8Array;
  readonly S: Secp256k1Point[];
  readonly A: Secp256k1Point;
  readonly chainCode: Uint8Array;
  readonly u: Uint8Array;
}

interface KeygenState {
  readonly t: number;
  readonly coefficients: bigint[];
  readonly S: Secp256k1Point[];
  readonly sigma: bigint[];
  readonly rid: Uint8Array;
  readonly chainCode: Uint8Array;
  readonly tau: SchCommitment<Secp256k1Point>;
  readonly u: Uint8Array;
  V: Map<number, Uint8Array>;
  decommitments: Map<number, Decommitment>;
  x?: bigint;
  X?: Secp256k1Point[];
  Y?: Secp256k1Point;
  ridAll?: Uint8Array;
  chainCodeAll?: Uint8Array;
}

const enc = (P: Secp256k1Point) => G.encodePoint(P);

function commitValue(n: number, t: number, d: Omit<Decommitment, 'u'>): Canonical {
  return { n, t, rid: d.rid, S: d.S.map(enc), A: enc(d.A), chainCode: d.chainCode };
}

/** Transcript of party `prover`'s Πsch (spec: e_i = challenge(sid, i, rid, X_i, A_i)). */
export function keygenSchTranscript(sessionId: Uint8Array, n: number, prover: number, rid: Uint8Array): Transcript {
  return Transcript.create(`${KEYGEN_TAG}.sch`, {
    sessionId,
    parties: Array.from({ length: n }, (_, j) => j + 1),
    round: 2,
  })
    .append('prover', prover)
    .append('rid', rid);
}

/**
 * The key generation protocol for the runtime (`new Party(keygenProtocol({ t }), { self, n, sessionId, rng })`).
 * Output: the party's {@link CoreKeyShare}.
 * @throws RangeError when t is not in [1, n] (at start)
 */
export function keygenProtocol(params: KeygenParams): ProtocolSpec<KeygenState, CoreKeyShare> {
  return {
    name: KEYGEN_TAG,
    start(ctx) {
      const { t } = params;
      if (!Number.isSafeInteger(t) || t < 1 || t > ctx.n) throw new RangeError(`t: must be in [1, ${ctx.n}]`);
      const coefficients = randomPolynomial(G, G.randomScalar(ctx.rng), t, ctx.rng);
      const S = coefficients.map((a) => G.mulBase(a));
      const sigma = Array.from({ length: ctx.n }, (_, j) => evalPolynomial(G, coefficients, BigInt(j + 1)));
      const rid = ctx.rng(32);
      const chainCode = ctx.rng(32);
      const tau = schCommit(G, ctx.rng);
      const { commitment, randomness } = commit(
        { tag: `${KEYGEN_TAG}.round1`, sessionId: ctx.sessionId, committer: ctx.self },
        commitValue(ctx.n, t, { rid, S, A: tau.A, chainCode }),
        ctx.rng,
      );
      const state: KeygenState = {
        t,
        coefficients,
        S,
        sigma,
        rid,
        chainCode,
        tau,
        u: randomness,
        V: new Map(),
        decommitments: new Map(),
      };
      return { state, send: { broadcast: { V: commitment } } };
    },
    rounds: [
      {
        name: `${KEYGEN_TAG}.round1`,
        broadcast: (body) => bytesField(record(body, 'commitment').V, 'V', 32),
        process(state, received) {
          for (const [j, m] of received) state.V.set(j, m.broadcast as Uint8Array);
          const p2p = new Map<number, Canonical>();
          for (const [j, s] of state.sigma.entries()) p2p.set(j, { sigma: G.encodeScalar(s) });
          return {
            state,
            send: {
              broadcast: {
                rid: state.rid,
                S: state.S.map(enc),
                A: enc(state.tau.A),
                chainCode: state.chainCode,
                u: state.u,
              },
              p2p,
            },
          };
        },
      },
      {
        name: `${KEYGEN_TAG}.round2`,
        broadcast: (body, _from, state): Decommitment => {
          const b = record(body, 'decommitment');
          return {
            rid: bytesField(b.rid, 'rid', 32),
            S: listField(b.S, 'S', state.t, pointField),
            A: pointField(b.A, 'A'),
            chainCode: bytesField(b.chainCode, 'chainCode', 32),
            u: bytesField(b.u, 'u', 32),
          };
        },
        p2p: (body) => scalarField(record(body, 'share').sigma, 'sigma', true),
        process(state, received, ctx) {
          const ownId = BigInt(ctx.self + 1);
          let x = state.sigma[ctx.self] as bigint;
          const vectors: Secp256k1Point[][] = [state.S];
          for (const [j, m] of received) {
            const d = m.broadcast as Decommitment;
            const ok = verifyCommitment(
              { tag: `${KEYGEN_TAG}.round1`, sessionId: ctx.sessionId, committer: j },
              state.V.get(j) as Uint8Array,
              commitValue(ctx.n, state.t, d),
              d.u,
            );
            if (!ok) blame(j, 'decommitment does not match the round-1 commitment', 'keygen.commitment');
            const sigma = m.p2p as bigint;
            if (!vssVerifyShare(G, d.S, ownId, sigma))
              blame(j, 'VSS share inconsistent with its Feldman commitments', 'keygen.feldman');
            state.decommitments.set(j, d);
            vectors.push(d.S);
            x = G.mod(x + sigma);
          }
          const F = sumCommitments(G, vectors);
          const X = Array.from({ length: ctx.n }, (_, j) => vssEvaluateCommitments(G, F, BigInt(j + 1)));
          const Y = F[0] as Secp256k1Point;
          if (Y.is0()) throw new Error('cggmp keygen: public key is the identity');
          const ids = [ctx.self, ...received.keys()];
          const ridAll = xorAll(
            [state.rid, ...[...received.values()].map((m) => (m.broadcast as Decommitment).rid)],
            32,
          );
          const chainCodeAll = xorAll(
            [state.chainCode, ...[...received.values()].map((m) => (m.broadcast as Decommitment).chainCode)],
            32,
          );
          if (ids.length !== ctx.n) throw new Error('cggmp keygen: missing parties');
          if (x === 0n || !G.mulBase(x).equals(X[ctx.self] as Secp256k1Point)) {
            throw new Error('cggmp keygen: own share inconsistent');
          }
          const proof = schProve(
            G,
            keygenSchTranscript(ctx.sessionId, ctx.n, ctx.self, ridAll),
            X[ctx.self] as Secp256k1Point,
            x,
            state.tau,
          );
          state.x = x;
          state.X = X;
          state.Y = Y;
          state.ridAll = ridAll;
          state.chainCodeAll = chainCodeAll;
          return { state, send: { broadcast: { z: G.encodeScalar(proof.z) } } };
        },
      },
      {
        name: `${KEYGEN_TAG}.round3`,
        broadcast: (body) => scalarField(record(body, 'sch').z, 'z', true),
        process(state, received, ctx) {
          const X = state.X as Secp256k1Point[];
          for (const [j, m] of received) {
            const d = state.decommitments.get(j) as Decommitment;
            const t = keygenSchTranscript(ctx.sessionId, ctx.n, j, state.ridAll as Uint8Array);
            if (!schVerify(G, t, X[j] as Secp256k1Point, { A: d.A, z: m.broadcast as bigint })) {
              blame(j, 'invalid Πsch for its public share X_j', 'proof.sch');
            }
          }
          return {
            output: {
              curve: 'secp256k1',
              i: ctx.self,
              n: ctx.n,
              t: state.t,
              publicKey: state.Y as Secp256k1Point,
              publicShares: X,
              x: state.x as bigint,
              chainCode: state.chainCodeAll as Uint8Array,
              rid: state.ridAll as Uint8Array,
            },
          };
        },
      },
    ],
  };
}
