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
  assertModulus,
  assertRingPedersenParams,
  decodeFacProof,
  decodeModProof,
  decodePrmProof,
  type FacProof,
  type ModProof,
  PaillierSecretKey,
  type PrmProof,
  proveFac,
  proveMod,
  provePrm,
  RingPedersen,
  type RingPedersenParams,
  ringPedersenFromKey,
  type SecurityLevel,
  verifyFac,
  verifyMod,
  verifyPrm,
} from '@custodian/paillier';
import type { AuxInfo } from './aux-info.js';
import { bigintField, bytesField, listField, pointField, record, scalarField, xorAll } from './codec.js';
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
  readonly level: SecurityLevel;
  readonly share: KeyShare;
  readonly t: number;
  readonly coefficients: bigint[];
  readonly S: Secp256k1Point[];
  readonly tau: SchCommitment<Secp256k1Point>;
  readonly key: PaillierSecretKey;
  readonly own: { params: RingPedersenParams; secret: { p: bigint; q: bigint; lambda: bigint } };
  readonly prm: PrmProof;
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

function tr(sessionId: Uint8Array, n: number, stage: string, extra?: Uint8Array): Transcript {
  const t = Transcript.create(`${REFRESH_TAG}.${stage}`, {
    sessionId,
    parties: Array.from({ length: n }, (_, j) => j + 1),
  });
  return extra ? t.append('rho', extra) : t;
}

function commitValue(n: number, t: number, d: Omit<Decommit, 'u'>): Canonical {
  return {
    n,
    t,
    S: d.S.map(enc),
    A: enc(d.A),
    R: { N: d.R.N, s: d.R.s, t: d.R.t },
    prm: { A: [...d.prm.A], z: [...d.prm.z] },
    rho: d.rho,
  };
}

function verdict(party: number, what: string, res: { ok: boolean }): void {
  if (!res.ok) blame(party, `invalid ${what}: ${(res as { reason?: string }).reason ?? 'failed'}`);
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
      if (share.core.i !== ctx.self || share.core.n !== ctx.n)
        throw new RangeError('refresh: runtime index/size do not match the share');
      const level = params.level ?? share.aux.level;
      const t = share.core.t;
      // zero constant term: only the coefficients 1…t−1 are random and committed
      const coefficients = randomPolynomial(G, 0n, t, ctx.rng);
      const S = coefficients.slice(1).map((a) => G.mulBase(a));
      const tau = schCommit(G, ctx.rng);
      const key = PaillierSecretKey.fromPrimes(params.primes.p, params.primes.q, level, {
        checkPrimality: params.checkPrimality !== false,
      });
      const own = ringPedersenFromKey(key, ctx.rng);
      const prm = provePrm(
        { transcript: tr(ctx.sessionId, ctx.n, 'prm'), prover: ctx.self },
        level,
        own.params,
        own.secret,
        ctx.rng,
      );
      const rho = ctx.rng(32);
      const { commitment, randomness } = commit(
        { tag: `${REFRESH_TAG}.round1`, sessionId: ctx.sessionId, committer: ctx.self },
        commitValue(ctx.n, t, { S, A: tau.A, R: own.params, prm, rho }),
        ctx.rng,
      );
      const state: RefreshState = {
        level,
        share,
        t,
        coefficients,
        S,
        tau,
        key,
        own,
        prm,
        rho,
        u: randomness,
        V: new Map(),
        dec: new Map(),
        R: new Map(),
      };
      return { state, send: { broadcast: commitment } };
    },
    rounds: [
      {
        name: `${REFRESH_TAG}.round1`,
        broadcast: (body) => bytesField(body, 'V', 32),
        process(state, received, ctx) {
          for (const [j, m] of received) state.V.set(j, m.broadcast as Uint8Array);
          const p2p = new Map<number, Canonical>();
          for (let j = 0; j < ctx.n; j++) {
            if (j !== ctx.self) p2p.set(j, G.encodeScalar(evalPolynomial(G, state.coefficients, BigInt(j + 1))));
          }
          return {
            state,
            send: {
              broadcast: {
                S: state.S.map(enc),
                A: enc(state.tau.A),
                R: { N: state.own.params.N, s: state.own.params.s, t: state.own.params.t },
                prm: { A: [...state.prm.A], z: [...state.prm.z] },
                rho: state.rho,
                u: state.u,
              },
              p2p,
            },
          };
        },
      },
      {
        name: `${REFRESH_TAG}.round2`,
        broadcast: (body, _from, state): Decommit => {
          const b = record(body, 'refresh decommitment');
          const R = record(b.R, 'R');
          return {
            S: listField(b.S, 'S', state.t - 1, pointField),
            A: pointField(b.A, 'A'),
            R: { N: bigintField(R.N, 'N'), s: bigintField(R.s, 's'), t: bigintField(R.t, 't') },
            prm: decodePrmProof(b.prm, state.level),
            rho: bytesField(b.rho, 'rho', 32),
            u: bytesField(b.u, 'u', 32),
          };
        },
        p2p: (body) => scalarField(body, 'sigma', true),
        process(state, received, ctx) {
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
            if (!ok) blame(j, 'decommitment does not match the round-1 commitment');
            try {
              assertModulus(d.R.N, state.level, 'N');
              assertRingPedersenParams(d.R, state.level);
            } catch (e) {
              blame(j, `invalid Paillier modulus or ring-Pedersen parameters: ${(e as Error).message}`);
            }
            verdict(
              j,
              'Πprm',
              verifyPrm({ transcript: tr(ctx.sessionId, ctx.n, 'prm'), prover: j }, state.level, d.R, d.prm),
            );
            const full = [G.identity, ...d.S];
            const sigma = m.p2p as bigint;
            if (!vssVerifyShare(G, full, BigInt(ctx.self + 1), sigma)) {
              blame(j, 'refresh share inconsistent with its Feldman commitments');
            }
            x = G.mod(x + sigma);
            vectors.push(full);
            state.dec.set(j, d);
            state.R.set(j, d.R);
          }
          state.R.set(ctx.self, state.own.params);
          const F = sumCommitments(G, vectors);
          const X = core.publicShares.map((Xk, k) => Xk.add(vssEvaluateCommitments(G, F, BigInt(k + 1))));
          if (x === 0n || !G.mulBase(x).equals(X[ctx.self] as Secp256k1Point))
            throw new Error('refresh: own share inconsistent');
          const rho = xorAll([state.rho, ...[...state.dec.values()].map((d) => d.rho)], 32);
          state.rhoAll = rho;
          state.x = x;
          state.X = X;
          const sch = schProve(
            G,
            tr(ctx.sessionId, ctx.n, 'sch', rho).append('prover', ctx.self),
            X[ctx.self] as Secp256k1Point,
            x,
            state.tau,
          );
          const witness = { p: state.key.p, q: state.key.q };
          const mod = proveMod(
            { transcript: tr(ctx.sessionId, ctx.n, 'mod', rho), prover: ctx.self },
            state.level,
            { N: state.key.N },
            witness,
            ctx.rng,
          );
          const p2p = new Map<number, Canonical>();
          for (const [j, Rj] of state.R) {
            if (j === ctx.self) continue;
            const fac = proveFac(
              { transcript: tr(ctx.sessionId, ctx.n, 'fac', rho), prover: ctx.self, verifier: j },
              state.level,
              RingPedersen.fromParams(Rj, state.level),
              { N: state.key.N },
              witness,
              ctx.rng,
            );
            p2p.set(j, fac as unknown as Canonical);
          }
          return { state, send: { broadcast: { z: G.encodeScalar(sch.z), mod: mod as unknown as Canonical }, p2p } };
        },
      },
      {
        name: `${REFRESH_TAG}.round3`,
        broadcast: (body, _from, state) => {
          const b = record(body, 'refresh proofs');
          return { z: scalarField(b.z, 'z', true), mod: decodeModProof(b.mod, state.level) };
        },
        p2p: (body) => decodeFacProof(body),
        process(state, received, ctx) {
          const rho = state.rhoAll as Uint8Array;
          const X = state.X as Secp256k1Point[];
          const mine = RingPedersen.fromSecret(state.own.params, state.own.secret);
          for (const [j, m] of received) {
            const b = m.broadcast as { z: bigint; mod: ModProof };
            const d = state.dec.get(j) as Decommit;
            if (
              !schVerify(G, tr(ctx.sessionId, ctx.n, 'sch', rho).append('prover', j), X[j] as Secp256k1Point, {
                A: d.A,
                z: b.z,
              })
            ) {
              blame(j, 'invalid Πsch for its refreshed public share');
            }
            verdict(
              j,
              'Πmod',
              verifyMod(
                { transcript: tr(ctx.sessionId, ctx.n, 'mod', rho), prover: j },
                state.level,
                { N: d.R.N },
                b.mod,
              ),
            );
            verdict(
              j,
              'Πfac',
              verifyFac(
                { transcript: tr(ctx.sessionId, ctx.n, 'fac', rho), prover: j, verifier: ctx.self },
                state.level,
                mine,
                { N: d.R.N },
                m.p2p as FacProof,
              ),
            );
          }
          const old = state.share.core;
          const core = validateCoreKeyShare({ ...old, x: state.x as bigint, publicShares: X });
          const aux: AuxInfo = {
            level: state.level,
            i: ctx.self,
            n: ctx.n,
            p: state.key.p,
            q: state.key.q,
            lambda: state.own.secret.lambda,
            R: Array.from({ length: ctx.n }, (_, j) => state.R.get(j) as RingPedersenParams),
          };
          return { output: validateKeyShare({ core, aux }) };
        },
      },
    ],
  };
}
