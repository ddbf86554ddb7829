/**
 * CGGMP21 threshold presigning (three rounds) on secp256k1.
 *
 * Implements the LFDT-Lockness cggmp21 specification §4.3 "Threshold (t-out-of-n) Presigning" and
 * §4.3.1 "Non-Threshold Presigning" (CGGMP21 ePrint 2021/060 Fig. 7), with two additions used for
 * identifiable abort in signing: each party also publishes S_i = χ_i·Γ, and the output is checked
 * with Σ_j S_j = δ·Y. Shamir shares are mapped to additive shares of the signing set with Lagrange
 * coefficients: x_i = λ_i·x'_{S(i)}, X_j = λ_j·X'_{S(j)}.
 *
 * Runtime rounds (i = this party, j ≠ i):
 *  0 → broadcast (K_i, G_i); p2p ψ⁰_{j,i} = Πenc(K_i; R_j)
 *  1 → broadcast Γ_i; p2p (D_{j,i}, F_{j,i}, D̂_{j,i}, F̂_{j,i}, ψ_{j,i} = Πaff-g(γ_i), ψ̂_{j,i} = Πaff-g(x_i),
 *      ψ'_{j,i} = Πlog*(γ_i; G_i, Γ_i))
 *  2 → broadcast (δ_i, Δ_i = k_i·Γ, S_i = χ_i·Γ); p2p ψ''_{j,i} = Πlog*(k_i; K_i, Δ_i, base Γ)
 *  output (after the runtime's echo, round 5): the presignature as a one-shot `Presignature` handle
 *      (presignature.ts): public R = δ⁻¹·Γ, Γ, Δ_j, S_j; k_i and χ_i in private fields only.
 *  3, 4 → only when the output check fails (δ·G ≠ ΣΔ_j, or ΣS_j ≠ δ·Y): identification
 *      (presign-ident.ts) — round 3 publishes the MtA ciphertexts sent with Πaff-p [Πaff-g] proofs,
 *      round 4 proves with Πdec that each δ_i [S_i] is what its ciphertexts decrypt to; it aborts
 *      naming every party whose publication or proof fails.
 *
 * Identifiable abort: malformed messages, ciphertexts not in Z*_{N_j²}, and every failed Πenc,
 * Πaff-g (both), Πlog* (both) name their prover (check ids `proof.enc`, `proof.aff-g`,
 * `proof.log-star`); broadcast equivocation is named by the echo; a failed output check with every
 * proof valid is named by identification (`proof.aff-p`/`proof.aff-g`, `proof.dec`,
 * `presign.inconsistent-publication`). To make that possible each party keeps round 1's nonces
 * (s, r, ŝ, r̂, β, β̂ per receiver, v_i) and the ciphertexts sent and received, with the received
 * messages' transport evidence, until the output; nothing more is computed on success.
 *
 * Longer than 400 lines because it follows the paper's presigning figure round by round (one state
 * machine per party); its ZK proofs live in @custodian/paillier.
 */
import {
  blame,
  type Canonical,
  secp256k1Group as G,
  lagrangeAtZero,
  ProtocolAbort,
  type ProtocolSpec,
  type Secp256k1Point,
  Transcript,
} from '@custodian/crypto';
import {
  type AffGProof,
  decodeAffGProof,
  decodeEncProof,
  decodeLogStarProof,
  type EncProof,
  type LogStarProof,
  PaillierPublicKey,
  PaillierSecretKey,
  proveAffG,
  proveEnc,
  proveLogStar,
  RingPedersen,
  randomSigned,
  randomUnit,
  rangeBounds,
  type SecurityLevel,
  verifyAffG,
  verifyEnc,
  verifyLogStar,
} from '@custodian/paillier';
import { bigintField, pointField, record, scalarField } from './codec.js';
import { identifiers, type KeyShare } from './key-share.js';
import {
  type IdentMode,
  type IdentRun,
  identify,
  type MtAReceived,
  type MtASent,
  parseProve,
  parsePublish,
  publish,
  verifyPublications,
} from './presign-ident.js';
import { mintPresignature, type Presignature } from './presignature.js';

export const PRESIGN_TAG = 'custodian.cggmp.presign.v1';

/** Options of one presigning run. */
export interface PresignParams {
  /** This party's key share (core + aux info). SECRET. */
  readonly share: KeyShare;
  /**
   * Key indices S(0…m−1) of the signing set, ascending, |set| ≥ t; runtime party index j is key
   * party signers[j]. This party's runtime index must be signers.indexOf(share.core.i).
   */
  readonly signers: readonly number[];
}

interface P2P1 {
  D: bigint;
  F: bigint;
  Dh: bigint;
  Fh: bigint;
  aff: AffGProof;
  affHat: AffGProof;
  logG: LogStarProof;
}

interface PresignState {
  /** this party's runtime index */
  readonly self: number;
  readonly level: SecurityLevel;
  readonly signers: readonly number[];
  readonly sk: PaillierSecretKey;
  readonly ownAux: RingPedersen;
  readonly pk: PaillierPublicKey[];
  readonly aux: RingPedersen[];
  readonly x: bigint;
  readonly X: Secp256k1Point[];
  readonly publicKey: Secp256k1Point;
  readonly k: bigint;
  readonly gamma: bigint;
  readonly rho: bigint;
  readonly K: bigint;
  readonly Gi: bigint;
  /** G_i's nonce v_i (Πlog* in round 1, Πaff-p in identification). SECRET. */
  readonly v: bigint;
  Kj: bigint[];
  Gj: bigint[];
  /** per receiver j: the MtA ciphertexts sent and their secrets β, β̂, s, r, ŝ, r̂ (identification). SECRET. */
  sent: Map<number, MtASent>;
  /** per sender j: the MtA ciphertexts received and their round-1 transport evidence (identification). */
  got: Map<number, MtAReceived>;
  Gammas: Secp256k1Point[];
  Gamma?: Secp256k1Point;
  delta?: bigint;
  chi?: bigint;
  /** own Δ_i = k_i·Γ and S_i = χ_i·Γ, computed in round 2 and reused in the output */
  Delta?: Secp256k1Point;
  S?: Secp256k1Point;
  /** identification (runs only when the output check fails): presign-ident.ts */
  ident?: IdentRun;
}

/** The transcript every presigning proof forks from (binds sid, the signing set and the stage). */
export function presignTranscript(sessionId: Uint8Array, signers: readonly number[], stage: string): Transcript {
  return Transcript.create(`${PRESIGN_TAG}.${stage}`, { sessionId, parties: signers.map((s) => s + 1) });
}

/** Stable check ids ({@link Culprit.check}) of the proofs named in `verdict`. */
const CHECK_OF: Record<string, string> = { Πenc: 'proof.enc', 'Πaff-g': 'proof.aff-g', 'Πlog*': 'proof.log-star' };

function verdict(party: number, what: string, res: { ok: boolean }): void {
  if (!res.ok) {
    blame(
      party,
      `invalid ${what}: ${(res as { reason?: string }).reason ?? 'failed'}`,
      CHECK_OF[what.split(' ')[0] as string],
    );
  }
}

function enc(P: Secp256k1Point): Uint8Array {
  return G.encodePoint(P);
}

/**
 * The party's own Paillier secret key and ring-Pedersen view (with trapdoor), and every party's
 * public key and ring-Pedersen view (validated once, with its fixed-base tables), built once per aux
 * info object and reused by every presigning session of that share: CRT constants, the parameter
 * checks and the `s = t^λ` check of {@link RingPedersen.fromSecret} are not recomputed per session. Keyed weakly
 * by the share's `aux` record (the secrets live exactly as long as the share does).
 */
interface ShareKeys {
  readonly sk: PaillierSecretKey;
  readonly ownAux: RingPedersen;
  /** by key index: the parties' Paillier public keys and ring-Pedersen views (own: with trapdoor) */
  readonly pk: readonly PaillierPublicKey[];
  readonly aux: readonly RingPedersen[];
}

const ownKeyCache = new WeakMap<KeyShare['aux'], ShareKeys>();

function ownKeys(share: KeyShare): ShareKeys {
  const hit = ownKeyCache.get(share.aux);
  if (hit) return hit;
  const { aux } = share;
  const ownAux = RingPedersen.fromSecret(aux.R[share.core.i]!, { p: aux.p, q: aux.q, lambda: aux.lambda });
  const keys: ShareKeys = {
    sk: PaillierSecretKey.fromPrimes(aux.p, aux.q, aux.level, { checkPrimality: false }),
    ownAux,
    pk: aux.R.map((R) => PaillierPublicKey.unchecked(R.N)),
    aux: aux.R.map((R, s) => (s === share.core.i ? ownAux : RingPedersen.fromParams(R, aux.level))),
  };
  ownKeyCache.set(share.aux, keys);
  return keys;
}

/**
 * Validate the signing set against the key share and return this party's runtime index.
 * @throws RangeError naming the problem
 */
export function signerPosition(share: KeyShare, signers: readonly number[]): number {
  const { n, t, i } = share.core;
  if (signers.length < t) throw new RangeError(`signers: need at least t = ${t}`);
  for (let k = 0; k < signers.length; k++) {
    const s = signers[k] as number;
    if (!Number.isSafeInteger(s) || s < 0 || s >= n) throw new RangeError(`signers[${k}]: not a key party`);
    if (k > 0 && s <= (signers[k - 1] as number)) throw new RangeError('signers: must be strictly ascending');
  }
  const pos = signers.indexOf(i);
  if (pos < 0) throw new RangeError('signers: this party is not in the signing set');
  return pos;
}

/**
 * Presigning for the runtime. Run with `new Party(presignProtocol({ share, signers }), { self:
 * signers.indexOf(share.core.i), n: signers.length, sessionId, rng })`.
 * @throws RangeError at start when the signing set or runtime index does not match the share
 */
export function presignProtocol(params: PresignParams): ProtocolSpec<PresignState, Presignature> {
  const { share, signers } = params;
  return {
    name: PRESIGN_TAG,
    start(ctx) {
      const pos = signerPosition(share, signers);
      if (pos !== ctx.self || signers.length !== ctx.n) throw new RangeError('runtime index/size do not match signers');
      const level = share.aux.level;
      const keys = ownKeys(share);
      const { sk, ownAux } = keys;
      const ids = identifiers(share.core.n);
      const set = signers.map((s) => ids[s] as bigint);
      const lambdas = set.map((id) => lagrangeAtZero(G, set, id));
      const x = G.mod((lambdas[ctx.self] as bigint) * share.core.x);
      const X = signers.map((s, j) => G.mulPublic(share.core.publicShares[s] as Secp256k1Point, lambdas[j] as bigint));
      const pk = signers.map((s) => keys.pk[s] as PaillierPublicKey);
      const aux = signers.map((s) => keys.aux[s] as RingPedersen);
      const k = G.randomScalar(ctx.rng);
      const gamma = G.randomScalar(ctx.rng);
      const rho = randomUnit(ctx.rng, sk.N);
      const v = randomUnit(ctx.rng, sk.N);
      const K = sk.encryptWithNonce(k, rho);
      const Gi = sk.encryptWithNonce(gamma, v);
      const tr = presignTranscript(ctx.sessionId, signers, 'round1');
      const p2p = new Map<number, Canonical>();
      for (let j = 0; j < ctx.n; j++) {
        if (j === ctx.self) continue;
        const psi0 = proveEnc(
          { transcript: tr, prover: ctx.self, verifier: j },
          level,
          aux[j] as RingPedersen,
          { N0: sk.N, K },
          { k, rho },
          ctx.rng,
          { secretKey: sk },
        );
        p2p.set(j, psi0 as unknown as Canonical);
      }
      const state: PresignState = {
        self: ctx.self,
        level,
        signers,
        sk,
        ownAux,
        pk,
        aux,
        x,
        X,
        publicKey: share.core.publicKey,
        k,
        gamma,
        rho,
        K,
        Gi,
        v,
        Kj: [],
        Gj: [],
        sent: new Map(),
        got: new Map(),
        Gammas: [],
      };
      return { state, send: { broadcast: { K, G: Gi }, p2p } };
    },
    rounds: [
      {
        name: `${PRESIGN_TAG}.round1`,
        broadcast: (body, from, state) => {
          const b = record(body, 'round1');
          const pkj = state.pk[from] as PaillierPublicKey;
          const K = bigintField(b.K, 'K');
          const Gc = bigintField(b.G, 'G');
          // one gcd for both; on failure the individual asserts throw the error naming the field
          if (!pkj.allCiphertexts([K, Gc])) {
            pkj.assertCiphertext(K, 'K');
            pkj.assertCiphertext(Gc, 'G');
          }
          return { K, G: Gc };
        },
        p2p: (body) => decodeEncProof(body),
        process(state, received, ctx) {
          const tr1 = presignTranscript(ctx.sessionId, state.signers, 'round1');
          state.Kj[ctx.self] = state.K;
          state.Gj[ctx.self] = state.Gi;
          for (const [j, m] of received) {
            const { K, G: Gj } = m.broadcast as { K: bigint; G: bigint };
            const pj = state.pk[j] as PaillierPublicKey;
            verdict(
              j,
              'Πenc',
              verifyEnc(
                { transcript: tr1, prover: j, verifier: ctx.self },
                state.level,
                state.ownAux,
                { N0: pj.N, K },
                m.p2p as EncProof,
              ),
            );
            state.Kj[j] = K;
            state.Gj[j] = Gj;
          }
          const GammaI = G.mulBase(state.gamma);
          state.Gammas[ctx.self] = GammaI;
          const { ellPrime } = rangeBounds(state.level);
          const tr2 = presignTranscript(ctx.sessionId, state.signers, 'round2');
          const v = state.v;
          const p2p = new Map<number, Canonical>();
          for (let j = 0; j < ctx.n; j++) {
            if (j === ctx.self) continue;
            const pj = state.pk[j] as PaillierPublicKey;
            const Kj = state.Kj[j] as bigint;
            const beta = randomSigned(ctx.rng, ellPrime);
            const betaHat = randomSigned(ctx.rng, ellPrime);
            const s = randomUnit(ctx.rng, pj.N);
            const sHat = randomUnit(ctx.rng, pj.N);
            const r = randomUnit(ctx.rng, state.sk.N);
            const rHat = randomUnit(ctx.rng, state.sk.N);
            const D = pj.add(pj.mul(Kj, state.gamma), pj.encryptWithNonce(-beta, s));
            const F = state.sk.encryptWithNonce(-beta, r);
            const Dh = pj.add(pj.mul(Kj, state.x), pj.encryptWithNonce(-betaHat, sHat));
            const Fh = state.sk.encryptWithNonce(-betaHat, rHat);
            const pctx = { transcript: tr2, prover: ctx.self, verifier: j };
            const auxj = state.aux[j] as RingPedersen;
            const opts = { secretKey: state.sk };
            const aff = proveAffG(
              pctx,
              state.level,
              auxj,
              { N0: pj.N, N1: state.sk.N, C: Kj, D, Y: F, X: enc(GammaI) },
              { x: state.gamma, y: -beta, rho: s, rhoY: r },
              ctx.rng,
              opts,
            );
            const affHat = proveAffG(
              { ...pctx, transcript: tr2.fork('hat') },
              state.level,
              auxj,
              { N0: pj.N, N1: state.sk.N, C: Kj, D: Dh, Y: Fh, X: enc(state.X[ctx.self] as Secp256k1Point) },
              { x: state.x, y: -betaHat, rho: sHat, rhoY: rHat },
              ctx.rng,
              opts,
            );
            const logG = proveLogStar(
              pctx,
              state.level,
              auxj,
              { N0: state.sk.N, C: state.Gi, X: enc(GammaI) },
              { x: state.gamma, rho: v },
              ctx.rng,
              opts,
            );
            state.sent.set(j, { D, F, Dh, Fh, beta, betaHat, s, r, sHat, rHat });
            p2p.set(j, { D, F, Dh, Fh, aff, affHat, logG } as unknown as Canonical);
          }
          return { state, send: { broadcast: { Gamma: enc(GammaI) }, p2p } };
        },
      },
      {
        name: `${PRESIGN_TAG}.round2`,
        broadcast: (body) => pointField(record(body, 'round2').Gamma, 'Gamma'),
        p2p: (body, from, state): P2P1 => {
          const b = record(body, 'round2');
          const own = state.sk.publicKey;
          const pj = state.pk[from] as PaillierPublicKey;
          const D = bigintField(b.D, 'D');
          const F = bigintField(b.F, 'F');
          const Dh = bigintField(b.Dh, 'Dh');
          const Fh = bigintField(b.Fh, 'Fh');
          // one gcd per modulus; on failure the individual asserts throw the error naming the field
          if (!own.allCiphertexts([D, Dh]) || !pj.allCiphertexts([F, Fh])) {
            own.assertCiphertext(D, 'D');
            pj.assertCiphertext(F, 'F');
            own.assertCiphertext(Dh, 'Dh');
            pj.assertCiphertext(Fh, 'Fh');
          }
          return {
            D,
            F,
            Dh,
            Fh,
            aff: decodeAffGProof(b.aff),
            affHat: decodeAffGProof(b.affHat),
            logG: decodeLogStarProof(b.logG),
          };
        },
        process(state, received, ctx) {
          const tr2 = presignTranscript(ctx.sessionId, state.signers, 'round2');
          const own = state.sk;
          let delta = G.mod(state.gamma * state.k);
          let chi = G.mod(state.x * state.k);
          for (const [j, m] of received) {
            const GammaJ = m.broadcast as Secp256k1Point;
            const p = m.p2p as P2P1;
            const Nj = (state.pk[j] as PaillierPublicKey).N;
            const vctx = { transcript: tr2, prover: j, verifier: ctx.self };
            const opts = { secretKey: own };
            verdict(
              j,
              'Πaff-g (γ)',
              verifyAffG(
                vctx,
                state.level,
                state.ownAux,
                { N0: own.N, N1: Nj, C: state.K, D: p.D, Y: p.F, X: enc(GammaJ) },
                p.aff,
                opts,
              ),
            );
            verdict(
              j,
              'Πaff-g (x)',
              verifyAffG(
                { ...vctx, transcript: tr2.fork('hat') },
                state.level,
                state.ownAux,
                { N0: own.N, N1: Nj, C: state.K, D: p.Dh, Y: p.Fh, X: enc(state.X[j] as Secp256k1Point) },
                p.affHat,
                opts,
              ),
            );
            verdict(
              j,
              'Πlog* (Γ)',
              verifyLogStar(
                vctx,
                state.level,
                state.ownAux,
                { N0: Nj, C: state.Gj[j] as bigint, X: enc(GammaJ) },
                p.logG,
              ),
            );
            state.Gammas[j] = GammaJ;
            const ev = m.evidence?.p2p;
            state.got.set(j, { D: p.D, F: p.F, Dh: p.Dh, Fh: p.Fh, ...(ev ? { evidence: ev } : {}) });
            const alpha = own.decryptSigned(p.D);
            const alphaHat = own.decryptSigned(p.Dh);
            const mine = state.sent.get(j) as MtASent;
            delta = G.mod(delta + alpha + mine.beta);
            chi = G.mod(chi + alphaHat + mine.betaHat);
          }
          const Gamma = G.sum(state.Gammas);
          if (Gamma.is0()) throw new ProtocolAbort([], 'Γ is the identity');
          const Delta = G.mul(Gamma, state.k);
          const S = G.mul(Gamma, chi);
          const tr3 = presignTranscript(ctx.sessionId, state.signers, 'round3');
          const p2p = new Map<number, Canonical>();
          for (let j = 0; j < ctx.n; j++) {
            if (j === ctx.self) continue;
            const psi = proveLogStar(
              { transcript: tr3, prover: ctx.self, verifier: j },
              state.level,
              state.aux[j] as RingPedersen,
              { N0: own.N, C: state.K, X: enc(Delta), B: enc(Gamma) },
              { x: state.k, rho: state.rho },
              ctx.rng,
              { secretKey: own },
            );
            p2p.set(j, psi as unknown as Canonical);
          }
          state.Gamma = Gamma;
          state.delta = delta;
          state.chi = chi;
          state.Delta = Delta;
          state.S = S;
          return {
            state,
            send: { broadcast: { delta: G.encodeScalar(delta), bigDelta: enc(Delta), S: enc(S) }, p2p },
          };
        },
      },
      {
        name: `${PRESIGN_TAG}.round3`,
        broadcast: (body) => {
          const b = record(body, 'round3');
          return {
            delta: scalarField(b.delta, 'delta', true),
            Delta: pointField(b.bigDelta, 'bigDelta'),
            S: pointField(b.S, 'S'),
          };
        },
        p2p: (body) => decodeLogStarProof(body),
        process(state, received, ctx) {
          const tr3 = presignTranscript(ctx.sessionId, state.signers, 'round3');
          const Gamma = state.Gamma as Secp256k1Point;
          const Deltas: Secp256k1Point[] = [];
          const Ss: Secp256k1Point[] = [];
          Deltas[ctx.self] = state.Delta as Secp256k1Point;
          Ss[ctx.self] = state.S as Secp256k1Point;
          let delta = state.delta as bigint;
          for (const [j, m] of received) {
            const b = m.broadcast as { delta: bigint; Delta: Secp256k1Point; S: Secp256k1Point };
            verdict(
              j,
              'Πlog* (Δ)',
              verifyLogStar(
                { transcript: tr3, prover: j, verifier: ctx.self },
                state.level,
                state.ownAux,
                { N0: (state.pk[j] as PaillierPublicKey).N, C: state.Kj[j] as bigint, X: enc(b.Delta), B: enc(Gamma) },
                m.p2p as LogStarProof,
              ),
            );
            Deltas[j] = b.Delta;
            Ss[j] = b.S;
            delta = G.mod(delta + b.delta);
          }
          // the output checks; on failure (every proof above valid) identification names the culprit
          let mode: IdentMode | undefined;
          if (delta === 0n || !G.mulBasePublic(delta).equals(G.sum(Deltas))) mode = 'delta';
          else if (!G.sum(Ss).equals(G.mulPublic(G.sum(state.X), delta))) mode = 'chi';
          if (mode !== undefined) {
            const deltas: bigint[] = [];
            deltas[ctx.self] = state.delta as bigint;
            for (const [j, m] of received) deltas[j] = (m.broadcast as { delta: bigint }).delta;
            state.ident = { mode, deltas, S: Ss, published: new Map() };
            const tr = presignTranscript(ctx.sessionId, state.signers, 'ident.publish');
            return { state, send: { broadcast: publish(state, state.ident, tr, ctx) } };
          }
          // no fixed-base table here: a pool builds it (`prepareSigning`) for presignatures kept for
          // later; a presignature used at once (cold signing) is cheaper without (GLV, ≈ 0.64 ms)
          const R = G.mulPublic(Gamma, G.inv(delta));
          // the output is an opaque one-shot handle (presignature.ts): (k_i, χ_i) only in its private fields
          return {
            output: mintPresignature(
              { signers: state.signers, publicKey: state.publicKey, R, Gamma, Delta: Deltas, S: Ss },
              ctx.self,
              state.k,
              state.chi as bigint,
            ),
          };
        },
      },
      {
        name: `${PRESIGN_TAG}.ident.publish`,
        broadcast: (body, from, state) => parsePublish(body, from, state),
        process(state, received, ctx) {
          const trPub = presignTranscript(ctx.sessionId, state.signers, 'ident.publish');
          const trProve = presignTranscript(ctx.sessionId, state.signers, 'ident.prove');
          return { state, send: { broadcast: verifyPublications(state, received, trPub, trProve, ctx) } };
        },
      },
      {
        name: `${PRESIGN_TAG}.ident.prove`,
        broadcast: (body, from, state) => parseProve(body, from, state.signers.length),
        process(state, received, ctx) {
          identify(state, received, presignTranscript(ctx.sessionId, state.signers, 'ident.prove'), ctx);
        },
      },
    ],
  };
}
