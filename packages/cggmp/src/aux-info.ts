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
  readonly material: AuxMaterial;
  readonly rho: Uint8Array;
  readonly u: Uint8Array;
  V: Map<number, Uint8Array>;
  R: Map<number, RingPedersenParams>;
  rhoAll?: Uint8Array;
}

/** Transcript factory of one protocol: `(stage, rho?)` → a transcript bound to sid and the party list. */
export type AuxTranscripts = (stage: 'prm' | 'mod' | 'fac', rho?: Uint8Array) => Transcript;

function parties(n: number): number[] {
  return Array.from({ length: n }, (_, j) => j + 1);
}

/** The transcripts of a protocol `tag` (aux info or refresh): bind sid, the party list, the stage and ρ. */
export function auxTranscripts(tag: string, sessionId: Uint8Array, n: number): AuxTranscripts {
  return (stage, rho) => {
    const t = Transcript.create(`${tag}.${stage}`, { sessionId, parties: parties(n) });
    return rho ? t.append('rho', rho) : t;
  };
}

/** A party's new aux material: Paillier–Blum key, ring-Pedersen parameters on the same modulus, Πprm. SECRET. */
export interface AuxMaterial {
  readonly level: SecurityLevel;
  readonly key: PaillierSecretKey;
  readonly own: { readonly params: RingPedersenParams; readonly secret: { p: bigint; q: bigint; lambda: bigint } };
  readonly prm: PrmProof;
}

/**
 * Make a party's aux material from two safe primes (spec §4.1 round 1).
 * @throws RangeError when the primes are not valid 4κ-bit safe primes
 */
export function newAuxMaterial(
  level: SecurityLevel,
  primes: { readonly p: bigint; readonly q: bigint },
  checkPrimality: boolean,
  transcripts: AuxTranscripts,
  self: number,
  rng: RoundContext['rng'],
): AuxMaterial {
  const key = PaillierSecretKey.fromPrimes(primes.p, primes.q, level, { checkPrimality });
  const own = ringPedersenFromKey(key, rng);
  const prm = provePrm({ transcript: transcripts('prm'), prover: self }, level, own.params, own.secret, rng);
  return { level, key, own, prm };
}

/** Canonical form of ring-Pedersen parameters and a Πprm proof (for commitments and messages). */
export function auxCanonicalParts(params: RingPedersenParams, prm: PrmProof): { R: Canonical; prm: Canonical } {
  return { R: { N: params.N, s: params.s, t: params.t }, prm: { A: [...prm.A], z: [...prm.z] } };
}

/** Parse a received `R` record (shape only). */
export function parseRingPedersen(value: unknown): RingPedersenParams {
  const R = record(value, 'R');
  return { N: bigintField(R.N, 'N'), s: bigintField(R.s, 's'), t: bigintField(R.t, 't') };
}

/** @throws ProtocolAbort naming `party` with check id `proof.prm` / `proof.mod` / `proof.fac` when `res` fails */
function check(party: number, what: 'Πprm' | 'Πmod' | 'Πfac', res: { ok: boolean }): void {
  const id = what === 'Πprm' ? 'proof.prm' : what === 'Πmod' ? 'proof.mod' : 'proof.fac';
  if (!res.ok) blame(party, `invalid ${what}: ${(res as { reason?: string }).reason ?? 'failed'}`, id);
}

/** Check party j's modulus, ring-Pedersen parameters and Πprm; names j on failure. */
export function checkPeerAux(
  j: number,
  params: RingPedersenParams,
  prm: PrmProof,
  level: SecurityLevel,
  transcripts: AuxTranscripts,
): void {
  try {
    assertModulus(params.N, level, 'N');
    assertRingPedersenParams(params, level);
  } catch (e) {
    blame(j, `invalid Paillier modulus or ring-Pedersen parameters: ${(e as Error).message}`, 'aux.modulus');
  }
  check(j, 'Πprm', verifyPrm({ transcript: transcripts('prm'), prover: j }, level, params, prm));
}

/** Πmod (broadcast) and one Πfac per receiver against its R_j (spec §4.1 round 3). */
export function proveModAndFac(
  material: AuxMaterial,
  R: ReadonlyMap<number, RingPedersenParams>,
  self: number,
  rho: Uint8Array,
  transcripts: AuxTranscripts,
  rng: RoundContext['rng'],
): { mod: ModProof; fac: Map<number, Canonical> } {
  const { level, key } = material;
  const witness = { p: key.p, q: key.q };
  const mod = proveMod({ transcript: transcripts('mod', rho), prover: self }, level, { N: key.N }, witness, rng);
  const fac = new Map<number, Canonical>();
  for (const [j, Rj] of R) {
    if (j === self) continue;
    const proof = proveFac(
      { transcript: transcripts('fac', rho), prover: self, verifier: j },
      level,
      RingPedersen.fromParams(Rj, level),
      { N: key.N },
      witness,
      rng,
    );
    fac.set(j, proof as unknown as Canonical);
  }
  return { mod, fac };
}

/** Verify party j's Πmod and its Πfac to us; names j on failure. */
export function checkModAndFac(
  j: number,
  Nj: bigint,
  mod: ModProof,
  fac: FacProof,
  material: AuxMaterial,
  self: number,
  rho: Uint8Array,
  transcripts: AuxTranscripts,
): void {
  const { level } = material;
  const mine = RingPedersen.fromSecret(material.own.params, material.own.secret);
  check(j, 'Πmod', verifyMod({ transcript: transcripts('mod', rho), prover: j }, level, { N: Nj }, mod));
  check(
    j,
    'Πfac',
    verifyFac({ transcript: transcripts('fac', rho), prover: j, verifier: self }, level, mine, { N: Nj }, fac),
  );
}

/** The AuxInfo output of a party from its material and every party's R_j. */
export function auxInfoOf(
  material: AuxMaterial,
  self: number,
  n: number,
  R: ReadonlyMap<number, RingPedersenParams>,
): AuxInfo {
  return {
    level: material.level,
    i: self,
    n,
    p: material.key.p,
    q: material.key.q,
    lambda: material.own.secret.lambda,
    R: Array.from({ length: n }, (_, j) => R.get(j) as RingPedersenParams),
  };
}

function decommitCanonical(n: number, d: Omit<Decommit, 'u'>): Canonical {
  return { n, ...auxCanonicalParts(d.params, d.prm), rho: d.rho };
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
      const transcripts = auxTranscripts(AUX_TAG, ctx.sessionId, ctx.n);
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
        { tag: `${AUX_TAG}.round1`, sessionId: ctx.sessionId, committer: ctx.self },
        decommitCanonical(ctx.n, { params: material.own.params, prm: material.prm, rho }),
        ctx.rng,
      );
      const state: AuxState = { material, rho, u: randomness, V: new Map(), R: new Map() };
      return { state, send: { broadcast: { V: commitment } } };
    },
    rounds: [
      {
        name: `${AUX_TAG}.round1`,
        broadcast: (body) => bytesField(record(body, 'commitment').V, 'V', 32),
        process(state, received) {
          for (const [j, m] of received) state.V.set(j, m.broadcast as Uint8Array);
          const { own, prm } = state.material;
          return { state, send: { broadcast: { ...auxCanonicalParts(own.params, prm), rho: state.rho, u: state.u } } };
        },
      },
      {
        name: `${AUX_TAG}.round2`,
        broadcast: (body, _from, state): Decommit => {
          const b = record(body, 'aux decommitment');
          return {
            params: parseRingPedersen(b.R),
            prm: decodePrmProof(b.prm, state.material.level),
            rho: bytesField(b.rho, 'rho', 32),
            u: bytesField(b.u, 'u', 32),
          };
        },
        process(state, received, ctx) {
          const transcripts = auxTranscripts(AUX_TAG, ctx.sessionId, ctx.n);
          for (const [j, m] of received) {
            const d = m.broadcast as Decommit;
            const ok = verifyCommitment(
              { tag: `${AUX_TAG}.round1`, sessionId: ctx.sessionId, committer: j },
              state.V.get(j) as Uint8Array,
              decommitCanonical(ctx.n, d),
              d.u,
            );
            if (!ok) blame(j, 'decommitment does not match the round-1 commitment', 'aux.commitment');
            checkPeerAux(j, d.params, d.prm, state.material.level, transcripts);
            state.R.set(j, d.params);
          }
          state.R.set(ctx.self, state.material.own.params);
          const rhoAll = xorAll([state.rho, ...[...received.values()].map((m) => (m.broadcast as Decommit).rho)], 32);
          state.rhoAll = rhoAll;
          const { mod, fac } = proveModAndFac(state.material, state.R, ctx.self, rhoAll, transcripts, ctx.rng);
          return { state, send: { broadcast: mod as unknown as Canonical, p2p: fac } };
        },
      },
      {
        name: `${AUX_TAG}.round3`,
        broadcast: (body, _from, state) => decodeModProof(body, state.material.level),
        p2p: (body) => decodeFacProof(body),
        process(state, received, ctx) {
          const transcripts = auxTranscripts(AUX_TAG, ctx.sessionId, ctx.n);
          for (const [j, m] of received) {
            const Nj = (state.R.get(j) as RingPedersenParams).N;
            checkModAndFac(
              j,
              Nj,
              m.broadcast as ModProof,
              m.p2p as FacProof,
              state.material,
              ctx.self,
              state.rhoAll as Uint8Array,
              transcripts,
            );
          }
          return { output: auxInfoOf(state.material, ctx.self, ctx.n, state.R) };
        },
      },
    ],
  };
}
