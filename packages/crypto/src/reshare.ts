/**
 * Resharing a Shamir-shared key to a new set of parties with a new threshold, keeping the public
 * key: the generic sans-IO protocol over any prime-order {@link Group}, used by FROST
 * (`@custodian/frost` reshareProtocol) and CGGMP21 (`@custodian/cggmp` reshareProtocol).
 *
 * Method — redistribution with Feldman VSS (Desmedt–Jajodia 1997, "Redistributing secret shares
 * to new access structures and its applications"; verifiability as in Wong–Wang–Wing 2002,
 * "Verifiable secret redistribution for archive systems"; the committee structure of tss-lib's
 * resharing as practice). The session is the union U of the dealers D (old parties present,
 * |D| ≥ t, each with its old identifier id_i and share s_i) and the new set N' (new identifiers
 * id'_j, threshold t'). A party may be both.
 *
 * - round 0 (dealers): w_i = λ_i^D·s_i (Lagrange coefficient at 0 over D's old identifiers), so
 *   Σ_{i∈D} w_i = x (the key). Dealer i samples f_i of degree t'−1 with f_i(0) = w_i and broadcasts
 *   `{ context, old, commitment: [A_i0 … A_i(t'−1)] }` with A_ik = a_ik·G, the old public package
 *   it holds (`old`: t, identifiers, verifying shares Y, public key, chain code, epoch) and the
 *   context digest (session id, caller context, expected key and chain code, the role of every
 *   runtime index, t'); p2p `{ share: f_i(id'_j) }` to every new party j.
 * - round 0 (process, every party): for each dealer i — context equal to ours; its old package's
 *   key and chain code = the EXPECTED ones given by the caller (the party's own record, or an
 *   Admin-signed key change for a party that is new); old packages of all dealers identical (a
 *   dealer: equal to its own; a new party: the dealers outside the largest agreeing group are
 *   named); A_i0 = λ_i^D·Y_i (a dealer cannot shift the key); then Σ_i A_i0 = PK; for new parties
 *   Feldman's check f_i(id'_j)·G = Σ_k id'_j^k·A_ik. Every failure names the dealer (the wire
 *   signs p2p messages, so a complaint about a share is provable). Then s'_j = Σ_i f_i(id'_j),
 *   C'_k = Σ_i A_ik (C'_0 = PK), Y'_j = Σ_k id'_j^k·C'_k. New parties broadcast `{ confirm }`, the
 *   digest of the new public package.
 * - round 1 (every party): every new party's confirmation must equal ours, else it is named. The
 *   output is released after the runtime's echo round, so dealers that are not new learn that the
 *   reshare completed. The caller deletes old shares only after that (and after a test signature).
 *
 * Identifiers on the wire: 32-byte big-endian. Points and scalars: the group's encodings.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, equalBytes } from './bytes.js';
import { type Canonical, canonicalEncode } from './encoding.js';
import type { Group, GroupPoint } from './group.js';
import {
  bytes,
  decodeOld,
  encodeOld,
  idBytes,
  list,
  type ReshareOldPackage,
  type ResharePartyRole,
  record,
  validateReshareRoles,
} from './reshare-messages.js';
import { type Culprit, type PartyIndex, ProtocolAbort, type ProtocolSpec } from './runtime/types.js';
import { lagrangeAtZero, vssDeal, vssEvaluateCommitments, vssVerifyShare } from './vss.js';

export type { ReshareOldPackage, ResharePartyRole } from './reshare-messages.js';
export { validateReshareRoles } from './reshare-messages.js';

/** Parameters of one party of the generic reshare. */
export interface ReshareParams<P extends GroupPoint<P>> {
  /** Protocol tag (ProtocolSpec.name), domain-separates every digest. */
  readonly tag: string;
  readonly group: Group<P>;
  /** Present iff this party deals: its SECRET old share s_i, old identifier and old public package. */
  readonly dealer?: { readonly share: bigint; readonly identifier: bigint; readonly old: ReshareOldPackage<P> };
  /** Role of every runtime index (length = session size n). */
  readonly parties: readonly ResharePartyRole[];
  /** New threshold t', 1 ≤ t' ≤ |N'|. */
  readonly newThreshold: number;
  /** The public key the caller expects (own record, or an Admin-signed key change). */
  readonly expectedPublicKey: P;
  /** The expected 32-byte chain code. */
  readonly expectedChainCode: Uint8Array;
  /** 32-byte caller context bound into every digest (e.g. the key-change digest). */
  readonly context: Uint8Array;
}

/** Output of the generic reshare for one party. */
export interface ReshareResult<P> {
  /** SECRET new share s'_j (new parties only). */
  readonly share?: bigint;
  /** This party's new identifier (new parties only). */
  readonly identifier?: bigint;
  /** New identifiers, ascending. */
  readonly identifiers: readonly bigint[];
  /** New threshold t'. */
  readonly threshold: number;
  /** C'_0…C'_{t'−1}; C'_0 = PK. */
  readonly commitments: readonly P[];
  /** Y'_j for each of `identifiers`, same order. */
  readonly verifyingShares: readonly P[];
  /** The old public package every dealer agreed on. */
  readonly old: ReshareOldPackage<P>;
  /** 32-byte digest of the new public package (what the new parties confirmed). */
  readonly confirm: Uint8Array;
}

interface Dealt<P> {
  readonly context: Uint8Array;
  readonly old: ReshareOldPackage<P>;
  readonly oldDigest: Uint8Array;
  readonly commitment: P[];
}

/** Internal state of a reshare party (opaque to callers; exported for type annotations). */
export interface ReshareState<P> {
  /** Does this party receive a new share? */
  readonly receiving: boolean;
  readonly dealers: PartyIndex[];
  readonly receivers: PartyIndex[];
  readonly newIds: bigint[];
  readonly context: Uint8Array;
  own?: { commitment: P[]; share?: bigint };
  result?: ReshareResult<P>;
}

/** Σ_k id^k·C_k over the new commitments for each identifier. */
function verifyingSharesOf<P extends GroupPoint<P>>(group: Group<P>, C: readonly P[], ids: readonly bigint[]): P[] {
  return ids.map((id) => vssEvaluateCommitments(group, C, id));
}

/**
 * The generic reshare protocol (module docs). Runtime index k has role `parties[k]`; this party's
 * own role must match `dealer` (present iff `parties[self].oldIdentifier` is). `finish` maps the
 * result to the scheme's output (e.g. a key share); it runs once, when the output is released.
 * @throws RangeError / TypeError from `start` for an inconsistent session (roles, thresholds,
 *   fewer dealers than the old threshold, a dealer share that does not match its old package)
 */
export function reshareSpec<P extends GroupPoint<P>, O = ReshareResult<P>>(
  params: ReshareParams<P>,
  finish: (result: ReshareResult<P>) => O = (r) => r as unknown as O,
): ProtocolSpec<ReshareState<P>, O> {
  const G = params.group;
  const tag = params.tag;
  const digest = (label: string, parts: Canonical[]) => sha256(canonicalEncode([`${tag}.${label}/v1`, ...parts]));
  const roles = validateReshareRoles(G, params.parties, params.newThreshold);
  const tNew = params.newThreshold;
  const expectedPk = params.expectedPublicKey;
  if (!(params.context instanceof Uint8Array) || params.context.length !== 32) {
    throw new RangeError('reshare: context must be 32 bytes');
  }
  if (!(params.expectedChainCode instanceof Uint8Array) || params.expectedChainCode.length !== 32) {
    throw new RangeError('reshare: expectedChainCode must be 32 bytes');
  }

  const round0 = {
    name: `${tag}.round0`,
    broadcast(body: unknown): Dealt<P> {
      const r = record(body, 'reshare dealing');
      const old = decodeOld(G, r.old);
      const commitment = list(r.commitment, 'commitment', tNew, tNew).map((c, k) =>
        G.decodePoint(bytes(c, `commitment[${k}]`), `commitment[${k}]`),
      );
      return {
        context: bytes(r.context, 'context', 32),
        old,
        oldDigest: digest('old', [encodeOld(G, old)]),
        commitment,
      };
    },
    // every dealer sends every other party a p2p part: a share to a new party, empty bytes to a
    // party that only deals (the runtime expects one p2p part per sender and round)
    p2p(body: unknown, _from: PartyIndex, state: ReshareState<P>): bigint | undefined {
      const b = bytes(record(body, 'reshare share').share, 'share');
      if (!state.receiving) {
        if (b.length !== 0) throw new RangeError('share: expected empty bytes for a party that receives no share');
        return undefined;
      }
      if (b.length !== G.scalarLength) throw new RangeError(`share: expected ${G.scalarLength} bytes`);
      return G.decodeScalar(b, 'share', { allowZero: true });
    },
  };

  return {
    name: tag,
    start(ctx) {
      if (ctx.n !== params.parties.length)
        throw new RangeError(`reshare: session has ${ctx.n} parties, roles list ${params.parties.length}`);
      const me = params.parties[ctx.self] as ResharePartyRole;
      const context = digest('context', [
        ctx.sessionId,
        params.context,
        G.name,
        G.encodePoint(expectedPk),
        params.expectedChainCode,
        params.parties.map((p) => [
          p.oldIdentifier === undefined ? new Uint8Array(0) : idBytes(p.oldIdentifier),
          p.newIdentifier === undefined ? new Uint8Array(0) : idBytes(p.newIdentifier),
        ]),
        tNew,
      ]);
      const state: ReshareState<P> = {
        receiving: me.newIdentifier !== undefined,
        dealers: roles.dealers,
        receivers: roles.receivers,
        newIds: roles.newIds,
        context,
      };
      if ((me.oldIdentifier !== undefined) !== (params.dealer !== undefined)) {
        throw new RangeError('reshare: a dealer needs its old share, and only a dealer has one');
      }
      if (!params.dealer) return { state, send: {} };
      const d = params.dealer;
      if (d.identifier !== me.oldIdentifier) throw new RangeError('reshare: old identifier does not match the share');
      const old = d.old;
      const self = old.identifiers.indexOf(d.identifier);
      if (self < 0) throw new RangeError('reshare: own old identifier not in the old package');
      for (const id of roles.oldIds) {
        if (!old.identifiers.includes(id))
          throw new RangeError('reshare: a dealer identifier is not in the old package');
      }
      if (roles.oldIds.length < old.threshold) {
        throw new RangeError(`reshare: ${roles.oldIds.length} dealers, the old threshold is ${old.threshold}`);
      }
      if (!G.mulBase(d.share).equals(old.verifyingShares[self] as P)) {
        throw new RangeError('reshare: old share does not match its verifying share');
      }
      const w = G.mod(lagrangeAtZero(G, roles.oldIds, d.identifier) * d.share);
      const dealing = vssDeal(G, w, tNew, roles.newIds, ctx.rng);
      const p2p = new Map<number, Canonical>();
      let ownShare: bigint | undefined;
      for (let k = 0; k < ctx.n; k++) {
        const newId = params.parties[k]?.newIdentifier;
        if (newId === undefined) {
          if (k !== ctx.self) p2p.set(k, { share: new Uint8Array(0) });
          continue;
        }
        const s = dealing.shares[roles.newIds.indexOf(newId)] as bigint;
        if (k === ctx.self) ownShare = s;
        else p2p.set(k, { share: G.encodeScalar(s) });
      }
      state.own = { commitment: [...dealing.commitments], ...(ownShare !== undefined ? { share: ownShare } : {}) };
      return {
        state,
        send: {
          broadcast: { context, old: encodeOld(G, old), commitment: dealing.commitments.map((A) => G.encodePoint(A)) },
          p2p,
        },
      };
    },
    rounds: [
      {
        name: round0.name,
        broadcast: round0.broadcast,
        p2p: round0.p2p,
        senders: (state: ReshareState<P>) => state.dealers,
        process(state, received, ctx) {
          return processDealings(state, received, ctx);
        },
      },
      {
        name: `${tag}.confirm`,
        broadcast: (body: unknown) => bytes(record(body, 'confirmation').confirm, 'confirm', 32),
        senders: (state: ReshareState<P>) => state.receivers,
        process(state, received) {
          const bad: Culprit[] = [];
          for (const [j, m] of received) {
            if (!equalBytes(m.broadcast as Uint8Array, (state.result as ReshareResult<P>).confirm)) {
              bad.push({
                party: j,
                reason: 'confirmed a different reshared public key package',
                check: 'reshare.confirm',
              });
            }
          }
          if (bad.length > 0) throw new ProtocolAbort(bad);
          return { output: finish(state.result as ReshareResult<P>) };
        },
      },
    ],
  };

  function processDealings(
    state: ReshareState<P>,
    received: ReadonlyMap<PartyIndex, { broadcast: unknown; p2p: unknown }>,
    ctx: { self: number; sessionId: Uint8Array },
  ) {
    const receiving = state.receiving;
    const dealt = new Map<PartyIndex, Dealt<P>>();
    for (const [j, m] of received) dealt.set(j, m.broadcast as Dealt<P>);
    if (params.dealer && state.own) {
      const old = params.dealer.old;
      dealt.set(ctx.self, {
        context: state.context,
        old,
        oldDigest: digest('old', [encodeOld(G, old)]),
        commitment: state.own.commitment,
      });
    }
    const culprits: Culprit[] = [];
    const blameAll = () => {
      if (culprits.length > 0) throw new ProtocolAbort(culprits);
    };
    // context, expected key and chain code
    for (const [j, d] of dealt) {
      if (j === ctx.self) continue;
      if (!equalBytes(d.context, state.context)) {
        culprits.push({
          party: j,
          reason: 'reshare context differs (session, key change, roles or new threshold)',
          check: 'reshare.context',
        });
      } else if (!d.old.publicKey.equals(expectedPk)) {
        culprits.push({
          party: j,
          reason: 'old public package has a different public key than expected',
          check: 'reshare.old-package',
        });
      } else if (!equalBytes(d.old.chainCode, params.expectedChainCode)) {
        culprits.push({
          party: j,
          reason: 'old public package has a different chain code than expected',
          check: 'reshare.old-package',
        });
      }
    }
    blameAll();
    // one old package: ours if we deal (a holder knows it, so it names every dealer that deviates);
    // a party new to the key cannot tell which dealers lie about a package it has never seen, nor
    // whether a majority of them colludes: on any disagreement it aborts naming NOBODY (the holders'
    // blame names the deviating dealer)
    let reference: Uint8Array;
    if (params.dealer) {
      reference = (dealt.get(ctx.self) as Dealt<P>).oldDigest;
    } else {
      const digests = new Set([...dealt.values()].map((d) => bytesToHex(d.oldDigest)));
      if (digests.size > 1) {
        throw new ProtocolAbort(
          [],
          'reshare: the dealers’ old public packages disagree (a new party cannot tell which is right)',
        );
      }
      reference = (dealt.values().next().value as Dealt<P>).oldDigest;
    }
    for (const [j, d] of dealt) {
      if (j !== ctx.self && !equalBytes(d.oldDigest, reference)) {
        culprits.push({
          party: j,
          reason: 'old public package differs from the other dealers’',
          check: 'reshare.old-package',
        });
      }
    }
    blameAll();
    const old = (dealt.values().next().value as Dealt<P>).old;
    const oldIds = state.dealers.map((k) => params.parties[k]?.oldIdentifier as bigint);
    if (oldIds.length < old.threshold) {
      throw new ProtocolAbort([], `reshare: ${oldIds.length} dealers, the old threshold is ${old.threshold}`);
    }
    for (const [j, d] of dealt) {
      const id = params.parties[j]?.oldIdentifier as bigint;
      const pos = old.identifiers.indexOf(id);
      if (pos < 0) {
        culprits.push({ party: j, reason: 'dealer identifier not in the old public package', check: 'reshare.dealer' });
        continue;
      }
      const expectedA0 = G.mulPublic(old.verifyingShares[pos] as P, lagrangeAtZero(G, oldIds, id));
      if (!(d.commitment[0] as P).equals(expectedA0)) {
        culprits.push({ party: j, reason: 'A_0 ≠ λ_i·Y_i (the dealing would shift the key)', check: 'reshare.a0' });
      }
    }
    blameAll();
    const A0sum = G.sum([...dealt.values()].map((d) => d.commitment[0] as P));
    if (!A0sum.equals(expectedPk)) {
      // only possible when the agreed old package is itself inconsistent: every dealer vouched for it
      throw new ProtocolAbort(
        [...dealt.keys()].map((j) => ({
          party: j,
          reason: 'old verifying shares do not interpolate to the key',
          check: 'reshare.old-shares',
        })),
      );
    }
    let share: bigint | undefined;
    const myNewId = params.parties[ctx.self]?.newIdentifier;
    if (receiving) {
      share = state.own?.share ?? 0n;
      for (const [j, m] of received) {
        const s = m.p2p as bigint;
        if (!vssVerifyShare(G, (dealt.get(j) as Dealt<P>).commitment, myNewId as bigint, s)) {
          culprits.push({
            party: j,
            reason: `reshare share sent to party ${ctx.self} fails the Feldman check`,
            check: 'reshare.feldman',
          });
        } else {
          share = G.mod(share + s);
        }
      }
      blameAll();
    }
    const commitments = Array.from({ length: tNew }, (_, k) =>
      G.sum([...dealt.values()].map((d) => d.commitment[k] as P)),
    );
    const verifyingShares = verifyingSharesOf(G, commitments, state.newIds);
    if (share !== undefined) {
      const pos = state.newIds.indexOf(myNewId as bigint);
      if (!G.mulBase(share).equals(verifyingShares[pos] as P)) throw new Error('reshare: new share inconsistent (bug)');
    }
    const confirm = digest('confirm', [
      ctx.sessionId,
      state.context,
      state.newIds.map(idBytes),
      tNew,
      commitments.map((C) => G.encodePoint(C)),
      old.chainCode,
      old.epoch,
    ]);
    const result: ReshareResult<P> = {
      ...(share !== undefined ? { share, identifier: myNewId as bigint } : {}),
      identifiers: state.newIds,
      threshold: tNew,
      commitments,
      verifyingShares,
      old,
      confirm,
    };
    const next: ReshareState<P> = { ...state, result };
    delete next.own;
    return { state: next, send: receiving ? { broadcast: { confirm } } : {} };
  }
}
