/**
 * CGGMP21 presigning identification (ePrint 2021/060, Fig. 7 "Output", the identification steps
 * with Πaff-p / Πdec; issue #23 part 2): the rounds that run only when presigning's output check
 * fails with every proof valid, so that a failed check always names a party.
 *
 * Runtime rounds (i = prover, l = verifier, j ≠ i; presign.ts round 2 starts them):
 *  3 "ident.publish" (broadcast) — party i publishes the mode ("delta": δ·G ≠ ΣΔ_j; "chi":
 *    ΣS_j ≠ δ·Y), the MtA ciphertexts it SENT in round 1, D_{j,i} = K_j^{γ_i}·Enc_j(−β_{j,i}; s) and
 *    F_{j,i} = Enc_i(−β_{j,i}; r) [chi: D̂_{j,i}, F̂_{j,i} for x_i], and H_i = K_i^{γ_i}·Enc_i(0; ρ_H)
 *    [chi: Ĥ_i = K_i^{x_i}·Enc_i(0; ρ_Ĥ)]; for every verifier l, under l's ring-Pedersen aux:
 *    delta: Πaff-p(N0=N_j, N1=N_i, C=K_j, D=D_{j,i}, Y=F_{j,i}, X=G_i; x=γ_i, y=−β, ρ=s, ρy=r, ρx=v_i)
 *           per j, and Πaff-p(N0=N1=N_i, C=K_i, D=H_i, Y=1, X=G_i; x=γ_i, y=0, ρ=ρ_H, ρy=1, ρx=v_i);
 *    chi:   the same with Πaff-g and X = the point X_i = λ_i·X'_i, x = x_i.
 *    Y = 1 = Enc_i(0; 1) is fixed (not sent): were Y_H a ciphertext of the prover's choice, the
 *    proof would only show H_i = K_i^{γ_i}·Enc_i(y) for an unknown y, and y could absorb a wrong δ_i.
 *  3 process at l — for each i: i's mode equals l's (else `presign.ident-mode`); the ciphertexts i
 *    published as sent to l equal what l received from i in round 1 (else
 *    `presign.inconsistent-publication`, evidence = [i's round-1 p2p, i's round-3 broadcast], both
 *    signed by i); EVERY proof in i's publication verifies, the entry for each verifier l' under
 *    l''s ring-Pedersen aux (all parties hold every party's aux info), else `proof.aff-p` /
 *    `proof.aff-g`. The publication is a broadcast (echoed), so every honest party checks the same
 *    proofs and names the same prover: a bad proof in the entry for one verifier only cannot get its
 *    prover named by that verifier alone (which the others could not tell from a false accusation).
 *  4 "ident.prove" (broadcast) — party i sends, for every verifier l, Πdec(N0=N_i, C=C_i, X=δ_i·G,
 *    B=G) [chi: X=S_i, B=Γ], C_i = H_i · Π_j D_{i,j} · Π_j F_{j,i}^{−1} mod N_i² (every factor as
 *    published in round 3), witness y = dec_i(C_i) as a signed integer and its nonce ρ.
 *  4 process at l — every i with a failing Πdec in ANY verifier's entry (each under that verifier's
 *    aux) is named (`proof.dec`); the abort names all of them.
 *
 * Why a failed output check always names someone (and never an honest party):
 *  Every factor of C_i is bound by a proof that all honest verifiers checked. Πenc (round 0) puts
 *  k_i = dec(K_i) in ±2^{ℓ+ε}; Πlog* (round 1) makes G_i encrypt γ_i with Γ_i = γ_i·G; Πaff-p makes
 *  D_{i,j} encrypt k_i·x + y (mod N_i) where X = G_j encrypts x (so x = γ_j, |x| ≤ 2^{ℓ+ε}) and
 *  F_{i,j} encrypts the same y (|y| ≤ 2^{ℓ'+ε}) under N_j; H_i encrypts k_i·γ_i (y = 0). Hence the
 *  integer T_i = k_iγ_i + Σ_j (k_iγ_j + y_{i,j}) − Σ_j y_{j,i} has |T_i| ≪ N_i/2 and
 *  dec_i(C_i) = T_i exactly, and Σ_i T_i = kγ (the y terms cancel pairwise: y_{i,j} appears in C_i
 *  through D_{i,j} and, negated, in C_j through F_{i,j}^{−1}). Πdec shows δ_i ≡ dec_i(C_i) (mod q),
 *  so if all Πdec pass then δ = Σδ_i ≡ kγ, and Πlog* (round 2) gives Δ_i = k_i·Γ, so
 *  ΣΔ_i = kγ·G = δ·G: the delta check could not have failed. In the chi case the same argument
 *  with Πaff-g (x ≡ x_j mod q from X_j) gives Σ dec(Ĉ_i) ≡ k·x and S_i = χ_i·Γ with χ_i ≡ dec(Ĉ_i),
 *  so ΣS_i = kx·Γ = kxγ·G = δ·Y (δ ≡ kγ, the delta check having passed). So when the check fails,
 *  some proof fails, and its prover is named. An honest party publishes what it sent (so its
 *  ciphertexts match), its proofs are complete, and the C_i a verifier builds from published values
 *  is the one it decrypted (it checked the D_{i,j} published by each j against what it received, and
 *  aborted naming j otherwise), so its Πdec verifies and it is never named. If, impossibly for
 *  honest parties, nobody fails, the abort names nobody.
 *
 * Cost on success: none beyond keeping round 1's nonces and ciphertexts in the state (the rounds here
 * run only after a failed check). Cost on this rare path: each party verifies every proof of every
 * entry, n−1 times the proofs addressed to it — (n−1)²·n Πaff-p/Πaff-g and (n−1)² Πdec for n
 * signers, against (n−1)·n and n−1 were it to check its own entries only.
 *
 * Longer than 400 lines because the two identification rounds' prover, parser and verifier sides
 * share one set of statements (built from the same published values) and the soundness argument
 * above; split, a statement and its check would live in different files.
 */
import {
  blame,
  type Canonical,
  type Culprit,
  secp256k1Group as G,
  ProtocolAbort,
  type RoundContext,
  type Secp256k1Point,
  type Transcript,
} from '@custodian/crypto';
import {
  type AffGProof,
  type AffPProof,
  type DecProof,
  decodeAffGProof,
  decodeAffPProof,
  decodeDecProof,
  type PaillierPublicKey,
  type PaillierSecretKey,
  proveAffG,
  proveAffP,
  proveDec,
  type RingPedersen,
  randomUnit,
  type SecurityLevel,
  verifyAffG,
  verifyAffP,
  verifyDec,
} from '@custodian/paillier';
import { bigintField, record } from './codec.js';

/** Which output check failed: `delta` (δ·G ≠ ΣΔ_j, or δ = 0) or `chi` (ΣS_j ≠ δ·Y). */
export type IdentMode = 'delta' | 'chi';

/** What party i sent receiver j in round 1, with the secrets behind it. SECRET (β, β̂ and the nonces). */
export interface MtASent {
  /** D_{j,i}, D̂_{j,i} mod N_j²; F_{j,i}, F̂_{j,i} mod N_i². */
  readonly D: bigint;
  readonly F: bigint;
  readonly Dh: bigint;
  readonly Fh: bigint;
  /** β_{j,i}, β̂_{j,i} ∈ ±2^ℓ'. */
  readonly beta: bigint;
  readonly betaHat: bigint;
  /** nonces: s, ŝ ∈ Z*_{N_j}; r, r̂ ∈ Z*_{N_i}. */
  readonly s: bigint;
  readonly r: bigint;
  readonly sHat: bigint;
  readonly rHat: bigint;
}

/** What this party received from sender j in round 1 (public), with its transport evidence if any. */
export interface MtAReceived {
  readonly D: bigint;
  readonly F: bigint;
  readonly Dh: bigint;
  readonly Fh: bigint;
  /** The round-1 p2p message's transport evidence (ReceivedParts.evidence.p2p), where given. */
  readonly evidence?: Uint8Array;
}

/** One party's round-3 publication, parsed (proofs: every verifier's entry, decoded). */
export interface Publication {
  readonly mode: IdentMode;
  /** H_i (delta) or Ĥ_i (chi), mod N_i². */
  readonly H: bigint;
  /** by receiver j: (D_{j,i}, F_{j,i}) or (D̂_{j,i}, F̂_{j,i}) as published. */
  readonly sent: ReadonlyMap<number, { readonly D: bigint; readonly F: bigint }>;
  /** By verifier l (runtime index ≠ prover): its proofs [H, then one per receiver j ascending]. */
  readonly proofs: ReadonlyMap<number, readonly (AffPProof | AffGProof)[]>;
  /** The broadcast's transport evidence, where given. */
  readonly evidence?: Uint8Array;
}

/** The identification run's public data (kept in the presigning state). */
export interface IdentRun {
  readonly mode: IdentMode;
  /** δ_j as broadcast in round 2 (own included), by runtime index. */
  readonly deltas: readonly bigint[];
  /** S_j as broadcast in round 2 (own included). */
  readonly S: readonly Secp256k1Point[];
  /** Round-3 publications by runtime index (own included, once sent). */
  readonly published: Map<number, Publication>;
}

/** The presigning state fields identification reads (presign.ts `PresignState` has them). */
export interface IdentState {
  /** this party's runtime index */
  readonly self: number;
  readonly level: SecurityLevel;
  readonly signers: readonly number[];
  readonly sk: PaillierSecretKey;
  readonly ownAux: RingPedersen;
  readonly pk: readonly PaillierPublicKey[];
  readonly aux: readonly RingPedersen[];
  readonly x: bigint;
  readonly X: readonly Secp256k1Point[];
  readonly gamma: bigint;
  readonly v: bigint;
  readonly K: bigint;
  readonly Gi: bigint;
  readonly Kj: readonly bigint[];
  readonly Gj: readonly bigint[];
  readonly sent: ReadonlyMap<number, MtASent>;
  readonly got: ReadonlyMap<number, MtAReceived>;
  readonly Gamma?: Secp256k1Point;
  ident?: IdentRun;
}

const enc = (P: Secp256k1Point): Uint8Array => G.encodePoint(P);
const others = (n: number, i: number): number[] => Array.from({ length: n }, (_, j) => j).filter((j) => j !== i);
/** Transcript fork of one published item: `H` or `mta-<j>` (j = receiver's runtime index). */
const itemTag = (j: number | 'H'): string => (j === 'H' ? 'H' : `mta-${j}`);

/**
 * Round 3 (sender side): the publication of this party for `run.mode`, with proofs for every verifier.
 * @param tr `presignTranscript(sid, signers, 'ident.publish')`
 * @returns the broadcast body `{ mode, H, sent: [{ j, D, F }], proofs: [{ l, affP: [...], affG: [...] }] }`
 *   (custodian.v1.cggmp.PresignIdentPublish); stores the own publication in `run.published`.
 */
export function publish(state: IdentState, run: IdentRun, tr: Transcript, ctx: RoundContext): Canonical {
  const { sk, level } = state;
  const self = ctx.self;
  const delta = run.mode === 'delta';
  const rhoH = randomUnit(ctx.rng, sk.N);
  const H = sk.publicKey.add(sk.publicKey.mul(state.K, delta ? state.gamma : state.x), sk.encryptWithNonce(0n, rhoH));
  const js = others(ctx.n, self);
  const sentPub = new Map<number, { D: bigint; F: bigint }>();
  const sentBody: Canonical[] = [];
  for (const j of js) {
    const m = state.sent.get(j) as MtASent;
    const item = delta ? { D: m.D, F: m.F } : { D: m.Dh, F: m.Fh };
    sentPub.set(j, item);
    sentBody.push({ j, ...item });
  }
  const opts = { secretKey: sk };
  const Xi = enc(state.X[self] as Secp256k1Point);
  const proofsBody: Canonical[] = [];
  for (const l of js) {
    const aux = state.aux[l] as RingPedersen;
    const pctx = (item: number | 'H') => ({ transcript: tr.fork(itemTag(item)), prover: self, verifier: l });
    const list: (AffPProof | AffGProof)[] = [];
    if (delta) {
      list.push(
        proveAffP(
          pctx('H'),
          level,
          aux,
          { N0: sk.N, N1: sk.N, C: state.K, D: H, Y: 1n, X: state.Gi },
          { x: state.gamma, y: 0n, rho: rhoH, rhoX: state.v, rhoY: 1n },
          ctx.rng,
          opts,
        ),
      );
      for (const j of js) {
        const m = state.sent.get(j) as MtASent;
        list.push(
          proveAffP(
            pctx(j),
            level,
            aux,
            {
              N0: (state.pk[j] as PaillierPublicKey).N,
              N1: sk.N,
              C: state.Kj[j] as bigint,
              D: m.D,
              Y: m.F,
              X: state.Gi,
            },
            { x: state.gamma, y: -m.beta, rho: m.s, rhoX: state.v, rhoY: m.r },
            ctx.rng,
            opts,
          ),
        );
      }
    } else {
      list.push(
        proveAffG(
          pctx('H'),
          level,
          aux,
          { N0: sk.N, N1: sk.N, C: state.K, D: H, Y: 1n, X: Xi },
          { x: state.x, y: 0n, rho: rhoH, rhoY: 1n },
          ctx.rng,
          opts,
        ),
      );
      for (const j of js) {
        const m = state.sent.get(j) as MtASent;
        list.push(
          proveAffG(
            pctx(j),
            level,
            aux,
            { N0: (state.pk[j] as PaillierPublicKey).N, N1: sk.N, C: state.Kj[j] as bigint, D: m.Dh, Y: m.Fh, X: Xi },
            { x: state.x, y: -m.betaHat, rho: m.sHat, rhoY: m.rHat },
            ctx.rng,
            opts,
          ),
        );
      }
    }
    const proofs = list as unknown as Canonical[];
    proofsBody.push({ l, affP: delta ? proofs : [], affG: delta ? [] : proofs });
  }
  run.published.set(self, { mode: run.mode, H, sent: sentPub, proofs: new Map() });
  return { mode: run.mode, H, sent: sentBody, proofs: proofsBody };
}

/**
 * Round 3 (receiver side): parse party `from`'s publication. Checks the shape: one `sent` entry per
 * receiver j ≠ from ascending (D mod N_j², F mod N_from², both valid ciphertexts), H a ciphertext
 * mod N_from², one `proofs` entry per verifier l ≠ from ascending, each with n proofs of the mode's
 * kind (the other list must be empty); decodes all of them (every party verifies every entry).
 * @throws TypeError/RangeError naming the field (the runtime names `from`: malformed message)
 */
export function parsePublish(body: unknown, from: number, state: IdentState): Publication {
  const b = record(body, 'ident.publish');
  if (b.mode !== 'delta' && b.mode !== 'chi') throw new TypeError('mode: expected "delta" or "chi"');
  const mode = b.mode as IdentMode;
  const n = state.signers.length;
  const pki = state.pk[from] as PaillierPublicKey;
  const H = pki.assertCiphertext(bigintField(b.H, 'H'), 'H');
  const js = others(n, from);
  if (!Array.isArray(b.sent) || b.sent.length !== js.length) throw new RangeError(`sent: expected ${js.length} items`);
  const sent = new Map<number, { D: bigint; F: bigint }>();
  js.forEach((j, k) => {
    const e = record((b.sent as unknown[])[k], `sent[${k}]`);
    if (e.j !== j) throw new RangeError(`sent[${k}].j: expected ${j}`);
    const D = (state.pk[j] as PaillierPublicKey).assertCiphertext(bigintField(e.D, `sent[${k}].D`), `sent[${k}].D`);
    const F = pki.assertCiphertext(bigintField(e.F, `sent[${k}].F`), `sent[${k}].F`);
    sent.set(j, { D, F });
  });
  if (!Array.isArray(b.proofs) || b.proofs.length !== js.length) {
    throw new RangeError(`proofs: expected ${js.length} items`);
  }
  const proofs = new Map<number, (AffPProof | AffGProof)[]>();
  js.forEach((l, k) => {
    const e = record((b.proofs as unknown[])[k], `proofs[${k}]`);
    if (e.l !== l) throw new RangeError(`proofs[${k}].l: expected ${l}`);
    const [mine, other] = mode === 'delta' ? [e.affP, e.affG] : [e.affG, e.affP];
    if (!Array.isArray(mine) || !Array.isArray(other)) throw new TypeError(`proofs[${k}]: expected lists`);
    if (other.length !== 0) throw new RangeError(`proofs[${k}]: proofs of the other mode`);
    if (mine.length !== n) throw new RangeError(`proofs[${k}]: expected ${n} proofs`);
    proofs.set(
      l,
      mine.map((p) => (mode === 'delta' ? decodeAffPProof(p) : decodeAffGProof(p))),
    );
  });
  return { mode, H, sent, proofs };
}

/**
 * Round 3 (verifier side) then round 4 (sender side): check every publication (mode, consistency
 * with round 1, every proof of every verifier's entry under that verifier's aux), then return this party's Πdec for every
 * verifier: body `{ proofs: [{ l, dec }] }` (custodian.v1.cggmp.PresignIdentProve).
 * @param trPub `presignTranscript(sid, signers, 'ident.publish')`; `trProve` the same with 'ident.prove'
 * @throws ProtocolAbort naming every party whose publication fails a check (see module docs)
 */
export function verifyPublications(
  state: IdentState,
  received: ReadonlyMap<
    number,
    { readonly broadcast: unknown; readonly evidence?: { readonly broadcast?: Uint8Array } }
  >,
  trPub: Transcript,
  trProve: Transcript,
  ctx: RoundContext,
): Canonical {
  const run = state.ident as IdentRun;
  const self = ctx.self;
  const delta = run.mode === 'delta';
  const culprits: Culprit[] = [];
  const check = delta ? 'proof.aff-p' : 'proof.aff-g';
  for (const [i, m] of received) {
    const ev = m.evidence?.broadcast;
    const pub = { ...(m.broadcast as Publication), ...(ev ? { evidence: ev } : {}) };
    if (pub.mode !== run.mode) {
      culprits.push({
        party: i,
        reason: `identification mode ${pub.mode}, expected ${run.mode}`,
        check: 'presign.ident-mode',
      });
      continue;
    }
    const got = state.got.get(i) as MtAReceived;
    const toMe = pub.sent.get(self) as { D: bigint; F: bigint };
    const [D, F] = delta ? [got.D, got.F] : [got.Dh, got.Fh];
    if (toMe.D !== D || toMe.F !== F) {
      const messages = [got.evidence, ev].filter((e): e is Uint8Array => e !== undefined);
      culprits.push({
        party: i,
        reason: `published ${delta ? 'D/F' : 'D̂/F̂'} for party ${self} differ from what it sent in round 1`,
        check: 'presign.inconsistent-publication',
        round: 3,
        ...(messages.length > 0 ? { evidence: { messages } } : {}),
      });
      continue;
    }
    const Ni = (state.pk[i] as PaillierPublicKey).N;
    const Xi = enc(state.X[i] as Secp256k1Point);
    const items: (number | 'H')[] = ['H', ...others(ctx.n, i)];
    const failure = firstAffFailure(state, i, pub, items, trPub, delta, Ni, Xi);
    if (failure !== undefined) {
      culprits.push({ party: i, reason: failure, check });
      continue;
    }
    run.published.set(i, pub);
  }
  if (culprits.length > 0)
    throw new ProtocolAbort(culprits, `presign identification: ${culprits.length} culprit(s) in round 3`);
  // round 4: Πdec that C_i decrypts to δ_i (mod q) [chi: χ_i with S_i = χ_i·Γ]
  const C = combined(state, run, self);
  const { m: y, rho } = state.sk.decryptWithNonce(C);
  const statement = decStatement(state, run, self, C);
  const proofs: Canonical[] = [];
  for (const l of others(ctx.n, self)) {
    const dec = proveDec(
      { transcript: trProve, prover: self, verifier: l },
      state.level,
      state.aux[l] as RingPedersen,
      statement,
      { y, rho },
      ctx.rng,
      { secretKey: state.sk },
    );
    proofs.push({ l, dec: dec as unknown as Canonical });
  }
  return { proofs };
}

/**
 * The first failing Πaff-p/Πaff-g of prover i's publication, over every verifier l ≠ i (ascending,
 * each under l's ring-Pedersen aux, transcript bound to (i, l)), as a reason naming the item and
 * verifier; undefined when all verify.
 */
function firstAffFailure(
  state: IdentState,
  i: number,
  pub: Publication,
  items: readonly (number | 'H')[],
  trPub: Transcript,
  delta: boolean,
  Ni: bigint,
  Xi: Uint8Array,
): string | undefined {
  const opts = { secretKey: state.sk };
  for (const l of others(state.signers.length, i)) {
    const aux = state.aux[l] as RingPedersen;
    const proofs = pub.proofs.get(l) as readonly (AffPProof | AffGProof)[];
    for (let k = 0; k < items.length; k++) {
      const item = items[k] as number | 'H';
      const vctx = { transcript: trPub.fork(itemTag(item)), prover: i, verifier: l };
      const e = item === 'H' ? undefined : (pub.sent.get(item) as { D: bigint; F: bigint });
      const st =
        item === 'H' || e === undefined
          ? { N0: Ni, N1: Ni, C: state.Kj[i] as bigint, D: pub.H, Y: 1n }
          : { N0: (state.pk[item] as PaillierPublicKey).N, N1: Ni, C: state.Kj[item] as bigint, D: e.D, Y: e.F };
      const res = delta
        ? verifyAffP(vctx, state.level, aux, { ...st, X: state.Gj[i] as bigint }, proofs[k] as AffPProof, opts)
        : verifyAffG(vctx, state.level, aux, { ...st, X: Xi }, proofs[k] as AffGProof, opts);
      if (!res.ok) {
        const what = item === 'H' ? (delta ? 'H' : 'Ĥ') : `${delta ? 'D' : 'D̂'} for party ${item}`;
        return `invalid ${delta ? 'Πaff-p' : 'Πaff-g'} (${what}, verifier ${l}): ${res.reason}`;
      }
    }
  }
  return undefined;
}

/** C_i = H_i · Π_j D_{i,j} · Π_j F_{j,i}^{−1} mod N_i², from the round-3 publications. */
function combined(state: IdentState, run: IdentRun, i: number): bigint {
  const pk = state.pk[i] as PaillierPublicKey;
  const own = run.published.get(i) as Publication;
  let C = own.H;
  for (const j of others(state.signers.length, i)) {
    const Dij = (run.published.get(j) as Publication).sent.get(i) as { D: bigint };
    C = pk.add(C, Dij.D);
    C = pk.add(C, pk.mul((own.sent.get(j) as { F: bigint }).F, -1n));
  }
  return C;
}

/** Πdec statement of party i: (N_i, C_i, δ_i·G, G) or (N_i, C_i, S_i, Γ). @throws if δ_i = 0 (X the identity) */
function decStatement(state: IdentState, run: IdentRun, i: number, C: bigint) {
  const N0 = (state.pk[i] as PaillierPublicKey).N;
  if (run.mode === 'delta') {
    const d = run.deltas[i] as bigint;
    if (d === 0n) blame(i, 'δ_i = 0 cannot be the decryption of its C_i (presign.delta)', 'proof.dec');
    return { N0, C, X: enc(G.mulBasePublic(d)), B: enc(G.G) };
  }
  return { N0, C, X: enc(run.S[i] as Secp256k1Point), B: enc(state.Gamma as Secp256k1Point) };
}

/**
 * Round 4 (receiver side): parse party `from`'s Πdec list (one entry per verifier l ≠ from,
 * ascending); decodes every entry (every party verifies all of them).
 * @returns the Πdec proofs by verifier l
 * @throws TypeError/RangeError naming the field
 */
export function parseProve(body: unknown, from: number, n: number): ReadonlyMap<number, DecProof> {
  const b = record(body, 'ident.prove');
  const ls = others(n, from);
  if (!Array.isArray(b.proofs) || b.proofs.length !== ls.length)
    throw new RangeError(`proofs: expected ${ls.length} items`);
  const out = new Map<number, DecProof>();
  ls.forEach((l, k) => {
    const e = record((b.proofs as unknown[])[k], `proofs[${k}]`);
    if (e.l !== l) throw new RangeError(`proofs[${k}].l: expected ${l}`);
    out.set(l, decodeDecProof(e.dec));
  });
  return out;
}

/**
 * Round 4 (verifier side): verify every party's Πdec, in every verifier l's entry under l's aux,
 * against the statement built from public values (δ_i or S_i of round 2, Γ, the round-3 publications). Always throws.
 * @throws ProtocolAbort naming every party whose Πdec fails (check `proof.dec`), or nobody when all
 *   pass (impossible with honest parties: see the module docs)
 */
export function identify(
  state: IdentState,
  received: ReadonlyMap<number, { readonly broadcast: unknown }>,
  trProve: Transcript,
  ctx: RoundContext,
): never {
  const run = state.ident as IdentRun;
  const what = run.mode === 'delta' ? 'δ_i (presign.delta)' : 'S_i (presign.S)';
  const culprits: Culprit[] = [];
  for (const [i, m] of received) {
    const reason = `invalid Πdec: C_i does not decrypt to ${what}`;
    try {
      const st = decStatement(state, run, i, combined(state, run, i));
      const proofs = m.broadcast as ReadonlyMap<number, DecProof>;
      for (const l of others(ctx.n, i)) {
        const res = verifyDec(
          { transcript: trProve, prover: i, verifier: l },
          state.level,
          state.aux[l] as RingPedersen,
          st,
          proofs.get(l) as DecProof,
          { secretKey: state.sk },
        );
        if (!res.ok) {
          culprits.push({ party: i, reason: `${reason} (verifier ${l}): ${res.reason}`, check: 'proof.dec' });
          break;
        }
      }
    } catch (e) {
      if (!(e instanceof ProtocolAbort)) throw e;
      culprits.push(...e.culprits);
    }
  }
  if (culprits.length > 0) {
    throw new ProtocolAbort(
      culprits,
      `presign identification (${run.mode}): ${culprits.length} culprit(s) named by Πdec`,
    );
  }
  throw new ProtocolAbort(
    [],
    `presign identification (${run.mode}): every proof verified, no culprit (impossible for honest parties)`,
  );
}
