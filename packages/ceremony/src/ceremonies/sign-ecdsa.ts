/**
 * CGGMP21 ECDSA signing (spec §5 presign + sign; DESIGN §3: a presignature signs at most once):
 * cold (a presigning of 3 rounds, then the one-round signing) or from a pooled presignature whose
 * deletion is durable before the signature share leaves. Called by sign.ts for a `cggmp` key.
 */
import {
  combinerShare,
  type EcdsaSignature,
  signProtocol as ecdsaSignProtocol,
  type Presignature,
  presignProtocol,
} from '@custodian/cggmp';
import { bytesToHex, derivedChild, secp256k1Group } from '@custodian/crypto';
import { type CeremonyResult, KeyAlgorithm, Outcome, type SignatureInfo, type StartCeremony } from '@custodian/wire';
import { takePresignature } from '../presignatures.js';
import type { SessionOutcome, SessionParty } from '../runner.js';
import type { StoreOp } from '../storage.js';
import {
  type CeremonyContext,
  type CeremonyHooks,
  combinedTranscript,
  failure,
  Refused,
  sessionId,
} from './context.js';
import { type KeyRecord, loadEcdsaShare } from './keys.js';
import type { ReleaseGate } from './release-gate.js';

/** One digest of a sign request and the key it is signed with: its global index and non-hardened path. */
export interface DigestItem {
  readonly digest: Uint8Array;
  /** Position in `SignRequest.digests` (session labels, signature order, interim shares). */
  readonly index: number;
  readonly path: readonly number[];
}

/** What the sessions of one part of a ceremony (one algorithm's digests) gave. */
export interface SignPart {
  /** Session outcomes, one per item, in item order (the signing sessions). */
  readonly outs: SessionOutcome<unknown>[];
  /** The runtime party order of these sessions (blame indices refer to it). */
  readonly parties: SessionParty[];
  /** Per item, its index in `SignRequest.digests`. */
  readonly indices: readonly number[];
  /** Per item, once every session is ok. */
  signatures(): SignatureInfo[];
}

/**
 * CGGMP21 ECDSA signing, cold: one presigning (3 rounds) then the one-round signing per digest.
 * Runtime parties are ordered by key index (the presigning protocol's signing set is ascending).
 * The presignature lives only in memory and is consumed by the signing protocol before σ_i leaves.
 */
export async function ecdsaSign(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  deadline: number,
  rec: KeyRecord,
  gate: ReleaseGate,
  hooks: CeremonyHooks,
): Promise<{ result: CeremonyResult; ops: StoreOp[] }> {
  const req = start.sign as NonNullable<StartCeremony['sign']>;
  const digests = req.digests ?? [];
  if (digests.length < 1 || digests.length > 64 || digests.some((d) => d.length !== 32))
    throw new Refused('digests: 1..64 digests of 32 bytes');
  const path = req.derivationPath ?? [];
  if (path.some((i) => !Number.isSafeInteger(i) || i < 0 || i >= 0x8000_0000))
    throw new Refused('derivationPath: non-hardened indices only');
  const part = await ecdsaSignPart(
    ctx,
    start,
    ceremonyId,
    parties,
    deadline,
    rec,
    gate,
    hooks,
    digests.map((digest, index) => ({ digest, index, path })),
  );
  if (!part.outs.every((o) => o.status === 'ok'))
    return { result: failure(ceremonyId, part.outs, part.parties), ops: [] };
  return {
    result: {
      ceremonyId,
      outcome: Outcome.OK,
      keyId: req.keyId,
      signatures: part.signatures(),
      transcriptHash: combinedTranscript(ceremonyId, part.outs),
    },
    ops: [],
  };
}

/**
 * The ECDSA part of a signing ceremony: each item signed cold (its own presigning, sessions
 * `cggmp.presign.<index>` / `cggmp.sign.<index>`) with its own path's tweak, or — a request of
 * exactly one digest naming `presignatureId` — from that pooled presignature. Paths and digests
 * are checked by the caller (non-hardened, 32 bytes).
 * @throws Refused presignatureId with more than one digest; PRESIGNATURE_UNAVAILABLE
 */
export async function ecdsaSignPart(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  deadline: number,
  rec: KeyRecord,
  gate: ReleaseGate,
  hooks: CeremonyHooks,
  items: readonly DigestItem[],
): Promise<SignPart> {
  const req = start.sign as NonNullable<StartCeremony['sign']>;
  const share = await loadEcdsaShare(ctx, req.keyId);
  const { signers, ordered, self } = signingSet(ctx, rec, parties);
  const pooled = req.presignatureId ?? '';
  if (pooled !== '' && (req.digests ?? []).length !== 1) throw new Refused('presignatureId: signs exactly one digest');
  // the pooled presignature's deletion is written with the gate's batch (at once for a prepared
  // one, else after its read) while the path is derived and the share computed; the share leaves
  // only once that batch is durable
  const taking =
    pooled !== ''
      ? takePresignature(ctx.store, req.keyId, signers, pooled, ctx.prepared, (ops) => gate.commit(ops))
      : undefined;
  taking?.catch(() => undefined);
  // a prepared presignature's deletion is under way once the ceremony id check is back: let it
  // start before the CPU-bound derivation and share
  if (taking)
    await taking.then(
      (t) => (t ? gate.submitted : undefined),
      () => undefined,
    );
  const derivations = new Map<string, ReturnType<typeof derivedChild> | undefined>();
  const derive = (path: readonly number[]) => {
    const id = path.join('/');
    if (!derivations.has(id))
      derivations.set(
        id,
        path.length > 0 ? derivedChild(share.core.publicKey, share.core.chainCode, [...path]) : undefined,
      );
    return derivations.get(id);
  };
  const common = { parties: ordered, self, secretKey: ctx.secretKey, deadline, group: bytesToHex(ceremonyId) };
  let deleted: Promise<void> | undefined;
  const outs = await Promise.all(
    items.map(async ({ digest, index: i, path }): Promise<SessionOutcome<EcdsaSignature>> => {
      const derived = derive(path);
      const tweak = derived?.tweak ?? 0n;
      let presignature: Presignature;
      if (taking) {
        const taken = await taking;
        if (!taken) throw new Refused(`presignature ${pooled} unknown or already used`, 'PRESIGNATURE_UNAVAILABLE');
        presignature = taken.presignature;
        deleted = taken.deleted;
      } else {
        const pre = await ctx.runner.run<Presignature>({
          ...common,
          sessionId: sessionId(ceremonyId, `cggmp.presign.${i}`),
          spec: presignProtocol({ share, signers }),
          label: `cggmp.presign.${i}`,
        });
        if (pre.status !== 'ok') return pre;
        presignature = pre.output;
        await gate.commit();
      }
      // σ_i leaves for the co-signers once this resolves (the runner holds it until then)
      const released = deleted ?? Promise.resolve();
      // only when the coordinator asked for them (one that predates interim frames would take one for the answer)
      const onSignatureShares = req.interimShares ? hooks.onSignatureShares : undefined;
      return ctx.runner.run<EcdsaSignature>({
        ...common,
        sessionId: sessionId(ceremonyId, `cggmp.sign.${i}`),
        spec: ecdsaSignProtocol({
          presignature,
          digest: Uint8Array.from(digest),
          tweak,
          ...(derived ? { derived } : {}),
          ...(onSignatureShares
            ? {
                onShare: (sigma: bigint, sctx: Parameters<typeof combinerShare>[1]) => {
                  const given = combinerShare(sigma, sctx);
                  const shares = [{ digestIndex: i, rPoint: given.Rp, s: secp256k1Group.encodeScalar(given.s) }];
                  released.then(
                    () => onSignatureShares({ ceremonyId, shares }),
                    () => undefined, // not released: nothing goes out
                  );
                },
              }
            : {}),
        }),
        label: `cggmp.sign.${i}`,
        ...(deleted ? { releaseAfter: deleted } : {}),
      });
    }),
  );
  await deleted; // its failure (a used ceremony id, a store error) is the ceremony's, not a peer's
  return {
    outs,
    parties: ordered,
    indices: items.map((x) => x.index),
    signatures: () =>
      outs.map((o, k) => {
        const sig = (o as { output: EcdsaSignature }).output;
        return {
          algorithm: KeyAlgorithm.SECP256K1_ECDSA,
          digest: (items[k] as DigestItem).digest,
          signature: sig.compact,
          publicKey: sig.publicKey,
          recoveryId: sig.recovery,
        };
      }),
  };
}

/** Order a signing subset by key index (CGGMP21 signing sets are ascending key indices). */
export function signingSet(ctx: CeremonyContext, rec: KeyRecord, parties: readonly SessionParty[]) {
  const byIndex = parties.map((p) => ({ p, k: rec.parties.indexOf(p.peerId) })).sort((a, b) => a.k - b.k);
  if (byIndex.some((x) => x.k < 0)) throw new Refused('parties: not all are parties of the key');
  if (byIndex.length < rec.threshold) throw new Refused(`need at least ${rec.threshold} signers`);
  const ordered = byIndex.map((x) => x.p);
  return { signers: byIndex.map((x) => x.k), ordered, self: ordered.findIndex((p) => p.peerId === ctx.selfPeerId) };
}
