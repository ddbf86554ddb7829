/**
 * CGGMP21 t-of-n key refresh with new auxiliary info, in one ceremony.
 *
 * The shares of the same key are re-randomised by zero-constant Feldman re-sharing: each party
 * deals f_i with f_i(0) = 0 (its commitment vector starts with the identity, which receivers
 * check), so Y and the chain code stay the same, x'_i = x_i + Σ_j f_j(i+1) and
 * X'_k = X_k + Σ_j F_j(k+1). Every party also generates a new Paillier–Blum modulus and
 * ring-Pedersen parameters (aux info, as in {@link auxInfoProtocol}), so old and new shares do
 * not mix: presigning needs matching aux info. This follows CGGMP21 ePrint 2021/060 Fig. 6 ("Auxiliary
 * Info. & Key Refresh"), made threshold with Feldman VSS the way the LFDT-Lockness specification
 * makes key generation threshold (§4.2.2); the specification itself only refreshes n-of-n.
 *
 *  0 → broadcast V_i = H(sid, n, i, t, S_i, A_i, R_i, ψ̂_i, ρ_i; u_i)
 *  1 → broadcast decommitment; p2p σ_{i,j} = f_i(j+1)
 *  2 → broadcast (Πsch for x'_i with A_i, Πmod); p2p Πfac for each receiver
 *  output (after the runtime's echo) — the caller deletes the old share only after every party
 *  confirmed (the signer does this in the ceremony's final confirmation).
 *
 * Identifiable abort: bad decommitment, nonzero constant term, inconsistent VSS share, invalid
 * modulus/ring-Pedersen parameters, Πprm, Πsch, Πmod, Πfac — each names the party.
 * With t = 1 every share equals the key, so only the aux info is refreshed.
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
import {
  decodeFacProof,
  decodeModProof,
  decodePrmProof,
  type FacProof,
  type ModProof,
  type PrmProof,
  type RingPedersenParams,
  type SecurityLevel,
} from '@custodian/paillier';
import {
  type AuxMaterial,
  auxCanonicalParts,
  auxInfoOf,
  auxTranscripts,
  checkModAndFac,
  checkPeerAux,
  newAuxMaterial,
  parseRingPedersen,
  proveModAndFac,
} from './aux-info.js';
import { bytesField, listField, pointField, record, scalarField, xorAll } from './codec.js';
import { type KeyShare, validateCoreKeyShare, validateKeyShare } from './key-share.js';

export const REFRESH_TAG = 'custodian.cggmp.refresh.v1';

/** Inputs of a refresh for one party. */
export interface RefreshParams {
  /** The party's current key share. SECRET. */
  readonly share: KeyShare;
  /** Two new safe primes of 4κ bits for the new Paillier key (from a prime pool). SECRET. */
  readonly primes: { readonly p: bigint; readonly q: bigint };
  /** Security level of the new aux info (default: the current one). */
  readonly level?: SecurityLevel;
  readonly checkPrimality?: boolean;
}

interface Decommit {
  readonly S: Secp256k1Point[];
  readonly A: Secp256k1Point;
  readonly R: RingPedersenParams;
  readonly prm: PrmProof;
  readonly rho: Uint8Array;
  readonly u: Uint8Array;
}

interface RefreshState {
  readonly share: KeyShare;
  readonly t: number;
  readonly coefficients: bigint[];
  readonly S: Secp256k1Point[];
  readonly tau: SchCommitment<Secp256k1Point>;
  readonly material: AuxMaterial;
  readonly rho: Uint8Array;
  readonly u: Uint8Array;
  V: Map<number, Uint8Array>;
  dec: Map<number, Decommit>;
  R: Map<number, RingPedersenParams>;
  rhoAll?: Uint8Array;
  x?: bigint;
  X?: Secp256k1Point[];
}

const enc = (P: Secp256k1Point) => G.encodePoint(P);

/** Πsch transcript of the refreshed share x'_j (bound to sid, the party list, ρ and the prover). */
function schTranscript(sessionId: Uint8Array, n: number, rho: Uint8Array, prover: number): Transcript {
  return Transcript.create(`${REFRESH_TAG}.sch`, { sessionId, parties: Array.from({ length: n }, (_, j) => j + 1) })
    .append('rho', rho)
    .append('prover', prover);
}

function commitValue(n: number, t: number, d: Omit<Decommit, 'u'>): Canonical {
  return { n, t, S: d.S.map(enc), A: enc(d.A), ...auxCanonicalParts(d.R, d.prm), rho: d.rho };
}

/**
 * Key refresh for the runtime (all n parties of the key; runtime index = key index).
 * Output: the new {@link KeyShare} (same public key and chain code, new x_i, X_j and aux info).
 */
export function refreshProtocol(params: RefreshParams): ProtocolSpec<RefreshState, KeyShare> {
  return {
    name: REFRESH_TAG,
    start(ctx) {
      const share = validateKeyShare(params.share);
      if (share.core.i !== ctx.self || share.core.n !== ctx.n) {
        throw new RangeError('refresh: runtime index/size do not match the share');
      }
      const level: SecurityLevel = params.level ?? share.aux.level;
      const t = share.core.t;
      // zero constant term: only the coefficients 1…t−1 are random and committed
      const coefficients = randomPolynomial(G, 0n, t, ctx.rng);
      const S = coefficients.slice(1).map((a) => G.mulBase(a));
      const tau = schCommit(G, ctx.rng);
      const transcripts = auxTranscripts(REFRESH_TAG, ctx.sessionId, ctx.n);
      const material = newAuxMaterial(
        level,
        params.primes,
        params.checkPrimality !== false,
        transcripts,
        ctx.self,
        ctx.rng,
      );
      const rho = ctx.rng(32);
      const { commitment, randomness } = commit(
        { tag: `${REFRESH_TAG}.round1`, sessionId: ctx.sessionId, committer: ctx.self },
        commitValue(ctx.n, t, { S, A: tau.A, R: material.own.params, prm: material.prm, rho }),
        ctx.rng,
      );
      const state: RefreshState = {
        share,
        t,
        coefficients,
        S,
        tau,
        material,
        rho,
        u: randomness,
        V: new Map(),
        dec: new Map(),
        R: new Map(),
      };
      return { state, send: { broadcast: { V: commitment } } };
    },
    rounds: [
      {
        name: `${REFRESH_TAG}.round1`,
        broadcast: (body) => bytesField(record(body, 'commitment').V, 'V', 32),
        process(state, received, ctx) {
          for (const [j, m] of received) state.V.set(j, m.broadcast as Uint8Array);
          const p2p = new Map<number, Canonical>();
          for (let j = 0; j < ctx.n; j++) {
            if (j !== ctx.self)
              p2p.set(j, { sigma: G.encodeScalar(evalPolynomial(G, state.coefficients, BigInt(j + 1))) });
          }
          const { own, prm } = state.material;
          const broadcast = {
            S: state.S.map(enc),
            A: enc(state.tau.A),
            ...auxCanonicalParts(own.params, prm),
            rho: state.rho,
            u: state.u,
          };
          return { state, send: { broadcast, p2p } };
        },
      },
      {
        name: `${REFRESH_TAG}.round2`,
        broadcast: (body, _from, state): Decommit => {
          const b = record(body, 'refresh decommitment');
          return {
            S: listField(b.S, 'S', state.t - 1, pointField),
            A: pointField(b.A, 'A'),
            R: parseRingPedersen(b.R),
            prm: decodePrmProof(b.prm, state.material.level),
            rho: bytesField(b.rho, 'rho', 32),
            u: bytesField(b.u, 'u', 32),
          };
        },
        p2p: (body) => scalarField(record(body, 'share').sigma, 'sigma', true),
        process(state, received, ctx) {
          const transcripts = auxTranscripts(REFRESH_TAG, ctx.sessionId, ctx.n);
          const core = state.share.core;
          let x = G.mod(core.x + evalPolynomial(G, state.coefficients, BigInt(ctx.self + 1)));
          const vectors: Secp256k1Point[][] = [[G.identity, ...state.S]];
          for (const [j, m] of received) {
            const d = m.broadcast as Decommit;
            const ok = verifyCommitment(
              { tag: `${REFRESH_TAG}.round1`, sessionId: ctx.sessionId, committer: j },
              state.V.get(j) as Uint8Array,
              commitValue(ctx.n, state.t, d),
              d.u,
            );
            if (!ok) blame(j, 'decommitment does not match the round-1 commitment', 'refresh.commitment');
            checkPeerAux(j, d.R, d.prm, state.material.level, transcripts);
            const full = [G.identity, ...d.S];
            const sigma = m.p2p as bigint;
            if (!vssVerifyShare(G, full, BigInt(ctx.self + 1), sigma)) {
              blame(j, 'refresh share inconsistent with its Feldman commitments', 'refresh.feldman');
            }
            x = G.mod(x + sigma);
            vectors.push(full);
            state.dec.set(j, d);
            state.R.set(j, d.R);
          }
          state.R.set(ctx.self, state.material.own.params);
          const F = sumCommitments(G, vectors);
          const X = core.publicShares.map((Xk, k) => Xk.add(vssEvaluateCommitments(G, F, BigInt(k + 1))));
          if (x === 0n || !G.mulBase(x).equals(X[ctx.self] as Secp256k1Point)) {
            throw new Error('refresh: own share inconsistent');
          }
          const rho = xorAll([state.rho, ...[...state.dec.values()].map((d) => d.rho)], 32);
          state.rhoAll = rho;
          state.x = x;
          state.X = X;
          const sch = schProve(
            G,
            schTranscript(ctx.sessionId, ctx.n, rho, ctx.self),
            X[ctx.self] as Secp256k1Point,
            x,
            state.tau,
          );
          const { mod, fac } = proveModAndFac(state.material, state.R, ctx.self, rho, transcripts, ctx.rng);
          return {
            state,
            send: { broadcast: { z: G.encodeScalar(sch.z), mod: mod as unknown as Canonical }, p2p: fac },
          };
        },
      },
      {
        name: `${REFRESH_TAG}.round3`,
        broadcast: (body, _from, state) => {
          const b = record(body, 'refresh proofs');
          return { z: scalarField(b.z, 'z', true), mod: decodeModProof(b.mod, state.material.level) };
        },
        p2p: (body) => decodeFacProof(body),
        process(state, received, ctx) {
          const transcripts = auxTranscripts(REFRESH_TAG, ctx.sessionId, ctx.n);
          const rho = state.rhoAll as Uint8Array;
          const X = state.X as Secp256k1Point[];
          for (const [j, m] of received) {
            const b = m.broadcast as { z: bigint; mod: ModProof };
            const d = state.dec.get(j) as Decommit;
            if (
              !schVerify(G, schTranscript(ctx.sessionId, ctx.n, rho, j), X[j] as Secp256k1Point, { A: d.A, z: b.z })
            ) {
              blame(j, 'invalid Πsch for its refreshed public share', 'proof.sch');
            }
            checkModAndFac(j, d.R.N, b.mod, m.p2p as FacProof, state.material, ctx.self, rho, transcripts);
          }
          const core = validateCoreKeyShare({ ...state.share.core, x: state.x as bigint, publicShares: X });
          const aux = auxInfoOf(state.material, ctx.self, ctx.n, state.R);
          return { output: validateKeyShare({ core, aux }) };
        },
      },
    ],
  };
}
