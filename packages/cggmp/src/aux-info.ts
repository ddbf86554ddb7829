/**
 * CGGMP21 auxiliary information ("provisioning"): each party's Paillier–Blum modulus N_i with
 * ring-Pedersen parameters (N_i, s_i, t_i), proven with Πprm (broadcast), Πmod (broadcast) and Πfac
 * (one per receiver, against the receiver's ring-Pedersen parameters).
 *
 * Implements the LFDT-Lockness cggmp21 specification §4.1 "Provisioning Protocol" (CGGMP21 ePrint
 * 2021/060 Fig. 6, aux-info part). As in the specification, the ring-Pedersen modulus is the party's
 * Paillier modulus N_i (t_i = r² mod N_i, s_i = t_i^λ), so one pair of safe primes per party suffices.
 *
 *  0 → broadcast V_i = H(sid, n, i, N_i, s_i, t_i, ψ̂_i, ρ_i; u_i)              (commit)
 *  1 → broadcast (N_i, s_i, t_i, ψ̂_i = Πprm, ρ_i, u_i)                       (decommit)
 *  2 → broadcast ψ_i = Πmod(sid, i, ρ); p2p φ_i^j = Πfac(sid, i, ρ; R_j)       (proofs; ρ = ⊕ ρ_j)
 *  output (after the runtime's echo of round 2's broadcast).
 *
 * Safe-prime generation is slow (seconds to minutes per prime), so it happens before the protocol:
 * the caller passes two safe primes, normally taken from a prime pool. Aux info depends only on the
 * party set, not on the key: it may be generated once and reused by every key of the same ordered
 * party set (same n, same party order), and must be regenerated when the set changes or on refresh.
 *
 * Identifiable abort: bad decommitment, modulus too small / even / square, invalid ring-Pedersen
 * parameters, invalid Πprm, Πmod or Πfac — each names its prover.
 */
import {
  blame,
  type Canonical,
  commit,
  type ProtocolSpec,
  type RoundContext,
  Transcript,
  verifyCommitment,
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
import { bigintField, bytesField, record, xorAll } from './codec.js';

export const AUX_TAG = 'custodian.cggmp.aux.v1';

/** Inputs of aux-info generation for one party. */
export interface AuxInfoParams {
  readonly level: SecurityLevel;
  /** Two distinct safe primes of 4κ bits (from a prime pool). SECRET. */
  readonly primes: { readonly p: bigint; readonly q: bigint };
  /** Check primality of the given primes (default true; false only for already-checked pool primes). */
  readonly checkPrimality?: boolean;
}

/** Aux info of one party: its Paillier–Blum secret key and every party's ring-Pedersen parameters. */
export interface AuxInfo {
  readonly level: SecurityLevel;
  readonly i: number;
  readonly n: number;
  /** SECRET: the factors of N_i and the ring-Pedersen trapdoor λ_i. */
  readonly p: bigint;
  readonly q: bigint;
  readonly lambda: bigint;
  /** R_j = (N_j, s_j, t_j) for j = 0…n−1; N_j is also party j's Paillier modulus. */
  readonly R: readonly RingPedersenParams[];
}

interface Decommit {
  readonly params: RingPedersenParams;
  readonly prm: PrmProof;
  readonly rho: Uint8Array;
  readonly u: Uint8Array;
}

interface AuxState {
  readonly level: SecurityLevel;
  readonly key: PaillierSecretKey;
  readonly own: { params: RingPedersenParams; secret: { p: bigint; q: bigint; lambda: bigint } };
  readonly prm: PrmProof;
  readonly rho: Uint8Array;
  readonly u: Uint8Array;
  V: Map<number, Uint8Array>;
  R: Map<number, RingPedersenParams>;
  rhoAll?: Uint8Array;
}

function parties(n: number): number[] {
  return Array.from({ length: n }, (_, j) => j + 1);
}

/** The transcript all aux-info proofs fork from (binds sid, the party list and the stage). */
export function auxTranscript(sessionId: Uint8Array, n: number, stage: string, rho?: Uint8Array): Transcript {
  const t = Transcript.create(`${AUX_TAG}.${stage}`, { sessionId, parties: parties(n) });
  return rho ? t.append('rho', rho) : t;
}

function paramsCanonical(p: RingPedersenParams): Canonical {
  return { N: p.N, s: p.s, t: p.t };
}

function decommitCanonical(n: number, d: Omit<Decommit, 'u'>): Canonical {
  return { n, R: paramsCanonical(d.params), prm: { A: [...d.prm.A], z: [...d.prm.z] }, rho: d.rho };
}

/** Run Πprm/Πmod/Πfac verification results through blame. */
function check(party: number, what: string, res: { ok: boolean; reason?: string }): void {
  if (!res.ok) blame(party, `invalid ${what}: ${(res as { reason: string }).reason}`);
}

/**
 * Aux-info generation for the runtime. Output: this party's {@link AuxInfo}.
 * @throws RangeError at start when the primes are not valid 4κ-bit safe primes
 */
export function auxInfoProtocol(params: AuxInfoParams): ProtocolSpec<AuxState, AuxInfo> {
  const { level } = params;
  return {
    name: AUX_TAG,
    start(ctx: RoundContext) {
      const key = PaillierSecretKey.fromPrimes(params.primes.p, params.primes.q, level, {
        checkPrimality: params.checkPrimality !== false,
      });
      const own = ringPedersenFromKey(key, ctx.rng);
      const prm = provePrm(
        { transcript: auxTranscript(ctx.sessionId, ctx.n, 'prm'), prover: ctx.self },
        level,
        own.params,
        own.secret,
        ctx.rng,
      );
      const rho = ctx.rng(32);
      const { commitment, randomness } = commit(
        { tag: `${AUX_TAG}.round1`, sessionId: ctx.sessionId, committer: ctx.self },
        decommitCanonical(ctx.n, { params: own.params, prm, rho }),
        ctx.rng,
      );
      const state: AuxState = { level, key, own, prm, rho, u: randomness, V: new Map(), R: new Map() };
      return { state, send: { broadcast: commitment } };
    },
    rounds: [
      {
        name: `${AUX_TAG}.round1`,
        broadcast: (body) => bytesField(body, 'V', 32),
        process(state, received) {
          for (const [j, m] of received) state.V.set(j, m.broadcast as Uint8Array);
          return {
            state,
            send: {
              broadcast: {
                R: paramsCanonical(state.own.params),
                prm: { A: [...state.prm.A], z: [...state.prm.z] },
                rho: state.rho,
                u: state.u,
              },
            },
          };
        },
      },
      {
        name: `${AUX_TAG}.round2`,
        broadcast: (body, _from, state): Decommit => {
          const b = record(body, 'aux decommitment');
          const R = record(b.R, 'R');
          return {
            params: { N: bigintField(R.N, 'N'), s: bigintField(R.s, 's'), t: bigintField(R.t, 't') },
            prm: decodePrmProof(b.prm, state.level),
            rho: bytesField(b.rho, 'rho', 32),
            u: bytesField(b.u, 'u', 32),
          };
        },
        process(state, received, ctx) {
          for (const [j, m] of received) {
            const d = m.broadcast as Decommit;
            const ok = verifyCommitment(
              { tag: `${AUX_TAG}.round1`, sessionId: ctx.sessionId, committer: j },
              state.V.get(j) as Uint8Array,
              decommitCanonical(ctx.n, d),
              d.u,
            );
            if (!ok) blame(j, 'decommitment does not match the round-1 commitment');
            try {
              assertModulus(d.params.N, state.level, 'N');
              assertRingPedersenParams(d.params, state.level);
            } catch (e) {
              blame(j, `invalid Paillier modulus or ring-Pedersen parameters: ${(e as Error).message}`);
            }
            check(
              j,
              'Πprm',
              verifyPrm(
                { transcript: auxTranscript(ctx.sessionId, ctx.n, 'prm'), prover: j },
                state.level,
                d.params,
                d.prm,
              ),
            );
            state.R.set(j, d.params);
          }
          state.R.set(ctx.self, state.own.params);
          const rhoAll = xorAll([state.rho, ...[...received.values()].map((m) => (m.broadcast as Decommit).rho)], 32);
          state.rhoAll = rhoAll;
          const witness = { p: state.key.p, q: state.key.q };
          const mod = proveMod(
            { transcript: auxTranscript(ctx.sessionId, ctx.n, 'mod', rhoAll), prover: ctx.self },
            state.level,
            { N: state.key.N },
            witness,
            ctx.rng,
          );
          const p2p = new Map<number, Canonical>();
          for (const [j, Rj] of state.R) {
            if (j === ctx.self) continue;
            const fac = proveFac(
              { transcript: auxTranscript(ctx.sessionId, ctx.n, 'fac', rhoAll), prover: ctx.self, verifier: j },
              state.level,
              RingPedersen.fromParams(Rj, state.level),
              { N: state.key.N },
              witness,
              ctx.rng,
            );
            p2p.set(j, fac as unknown as Canonical);
          }
          return { state, send: { broadcast: mod as unknown as Canonical, p2p } };
        },
      },
      {
        name: `${AUX_TAG}.round3`,
        broadcast: (body, _from, state) => decodeModProof(body, state.level),
        p2p: (body) => decodeFacProof(body),
        process(state, received, ctx) {
          const rho = state.rhoAll as Uint8Array;
          const mine = RingPedersen.fromSecret(state.own.params, state.own.secret);
          for (const [j, m] of received) {
            const Nj = (state.R.get(j) as RingPedersenParams).N;
            check(
              j,
              'Πmod',
              verifyMod(
                { transcript: auxTranscript(ctx.sessionId, ctx.n, 'mod', rho), prover: j },
                state.level,
                { N: Nj },
                m.broadcast as ModProof,
              ),
            );
            check(
              j,
              'Πfac',
              verifyFac(
                { transcript: auxTranscript(ctx.sessionId, ctx.n, 'fac', rho), prover: j, verifier: ctx.self },
                state.level,
                mine,
                { N: Nj },
                m.p2p as FacProof,
              ),
            );
          }
          return {
            output: {
              level: state.level,
              i: ctx.self,
              n: ctx.n,
              p: state.key.p,
              q: state.key.q,
              lambda: state.own.secret.lambda,
              R: Array.from({ length: ctx.n }, (_, j) => state.R.get(j) as RingPedersenParams),
            },
          };
        },
      },
    ],
  };
}
