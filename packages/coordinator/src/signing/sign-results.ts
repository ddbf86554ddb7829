/**
 * How the coordinator reads the parties' results of a SIGN ceremony (signer gateway, DESIGN §1,
 * §4): {@link mapSignResults} turns every party's `CeremonyResult` into one {@link GatewaySignResult}.
 * Split from gateway.ts (issue #21): the result mapping and refusal handling apart from the ceremony
 * dispatch (dispatch.ts) and the gateway itself (gateway.ts).
 *
 * Refusals are read from the typed `CeremonyResult.refusal` (control.proto `RefusalCode`), by the
 * catalogue of `@custodian/wire` refusals.ts — never from the `error` text, which is for people: a
 * text that names another code (or starts with any upper-case word) changes nothing. A value this
 * build does not know, or none, reads as `UNKNOWN` (a definitive refusal).
 *
 * Result mapping (first match wins): any party REFUSED with a definitive code → `REFUSED` naming it
 * and the code; a blame whose evidence the coordinator verified (signing/blame.ts, issue #23) →
 * `ABORTED` naming the proven culprits in `culprits` (identifiable abort; a blame the coordinator
 * cannot verify names nobody: it is a dispute, listed with its accuser and claimed culprit in `disputes` of the ABORTED result below); a party that could not take part — unknown to the directory, not connected,
 * its control stream or WebSocket closed during the ceremony, no answer, a transient refusal
 * (catalogue `transient`, e.g. `SIGNING_IN_PROGRESS`; its error text in `unavailable`) — →
 * `UNAVAILABLE` naming it in `unavailable`; a deadline (the request's, or a party's) →
 * `DEADLINE_EXCEEDED`; a party aborted without blame → `ABORTED` with no culprit (the gateway adds
 * `abortedBy`: the party whose failure ended the ceremony, when one did before the coordinator
 * aborted anyone — not blame); every party OK with the same signatures → `ok` (a disagreement
 * between the parties' signatures is `ABORTED` with no culprit). Only `REFUSED` and `ABORTED` with
 * culprits are definitive; the others say the ceremony may succeed when tried again.
 */
import { type CeremonyResult, isTransientRefusal, Outcome, type ReceivedRefusal, refusalOf } from '@custodian/wire';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { equalBytes } from '@noble/curves/utils.js';
import { type BlameRecord, type SignDispute, signDisputes, unverifiedAccusers, verifiedCulprits } from './blame.js';

/** A party of a signing set: a server signer or a mobile device, by the coordinator's record id. */
export interface SignParty {
  kind: 'server' | 'device';
  /** `signer_id` (servers) or `device_id` (devices) of the coordinator's records. */
  id: string;
}

/** Outcome of a signing ceremony (gateway.ts `SignerGateway.sign`). */
export type GatewaySignResult =
  | {
      ok: true;
      /** The pooled presignature id the signature was made with (one round); absent: cold signing. */
      presignatureId?: string;
      /** True when the gateway combined the signers' shares itself (ECDSA fast path). */
      combinedByCoordinator?: boolean;
      /**
       * One per digest, in order. ECDSA: 64-byte r‖s (low-s) and `recovery` (0..3, the y-parity bit
       * of R, plus 2 if r overflowed); Taproot: 64-byte BIP340; Ed25519: 64-byte RFC 8032.
       * `publicKey`: the derived (tweaked) verification key — 33-byte SEC1 compressed (ECDSA),
       * 32-byte x-only (Taproot), 32-byte (Ed25519).
       */
      signatures: { signature: Uint8Array; recovery?: number; publicKey: Uint8Array }[];
    }
  | { ok: false; reason: 'REFUSED'; refusal: ReceivedRefusal; by: SignParty }
  /**
   * The protocol aborted. `culprits`: the parties a blame proves misbehaved — evidence the
   * coordinator verified itself (signing/blame.ts; identifiable abort: definitive); empty: no party
   * was proven to (aborted by the coordinator or a peer, parties that disagree, a blame without
   * valid evidence) — worth another attempt. `accusers`: the parties that reported a blame the
   * coordinator could not verify (never culprits); `disputes`: those blames, each with the party the
   * accuser named (`claimed`, never a culprit either) — a retry leaves out both the accuser and the
   * claimed party when the key still has a signing set without them, else neither
   * (transfers/signing-attempt.ts).
   */
  | {
      ok: false;
      reason: 'ABORTED';
      culprits: SignParty[];
      accusers?: SignParty[];
      disputes?: SignDispute[];
      message: string;
      /**
       * No culprit: the party whose failure ended the ceremony (the first to answer anything but OK
       * before the coordinator aborted anyone) — not blame (nothing proves it misbehaved), but the
       * party a retry should leave out of its signing set when the key has enough others.
       */
      abortedBy?: SignParty;
    }
  /** Parties that could not take part (unknown, not connected, connection closed, no answer): worth another attempt. */
  | { ok: false; reason: 'UNAVAILABLE'; unavailable: UnavailableParty[]; message: string }
  | { ok: false; reason: 'DEADLINE_EXCEEDED' };

/** A party that could not take part in a ceremony, and why (`error`: human-readable, no secret). */
export interface UnavailableParty {
  party: SignParty;
  error: string;
}

/** `server <id>` / `device <id>`. */
export const partyName = (p: SignParty): string => `${p.kind} ${p.id}`;

/** A party of a ceremony and its MPC peer id (libp2p Ed25519 peer id string). */
export interface PartyDispatch {
  party: SignParty;
  peerId: string;
}

/** One party's answer to a ceremony (`unreachable`: synthetic, the party could not be reached). */
export interface PartyResult {
  party: SignParty;
  result: CeremonyResult;
  unreachable: boolean;
  /** The MPC peer id the ceremony was dispatched to (the accuser of the result's blame); absent: never dispatched. */
  peerId?: string;
}

/**
 * The refusal of a REFUSED result, from its typed `refusal` field (never its text); undefined for
 * any other outcome.
 */
export function refusalOfResult(result: CeremonyResult): ReceivedRefusal | undefined {
  return result.outcome === Outcome.REFUSED ? refusalOf(result.refusal) : undefined;
}

/** Whether a party refused the pooled presignature it was asked to sign with (it does not hold it). */
export function refusedStalePresignature(results: readonly PartyResult[]): boolean {
  return results.some((r) => refusalOfResult(r.result) === 'PRESIGNATURE_UNAVAILABLE');
}

/**
 * ECDSA recovery id of a 64-byte compact signature over a 32-byte digest for a 33-byte key
 * (SEC 1 §4.1.6 public key recovery; each try ≈ 1 ms). `hint` (the signers' recovery id) is tried
 * first, then the others.
 * @throws Error when no recovery id recovers the key (not a valid signature)
 */
export function ecdsaRecovery(signature: Uint8Array, digest: Uint8Array, publicKey: Uint8Array, hint = 0): number {
  const order = [hint & 3, ...[0, 1, 2, 3].filter((b) => b !== (hint & 3))];
  for (const bit of order) {
    try {
      const p = secp256k1.Signature.fromBytes(signature, 'compact').addRecoveryBit(bit).recoverPublicKey(digest);
      if (equalBytes(p.toBytes(true), publicKey)) return bit;
    } catch {
      // this bit does not recover a point
    }
  }
  throw new Error('ECDSA signature: no recovery id recovers the public key');
}

/** Key algorithm names of the gateway (`GatewaySignRequest.algorithm`). */
export type KeyAlgorithmName = 'SECP256K1_ECDSA' | 'SECP256K1_TAPROOT' | 'ED25519';

/** The request fields naming the keys of its digests (gateway.ts `GatewaySignRequest`). */
export interface DigestKeysOf {
  readonly algorithm: KeyAlgorithmName;
  readonly digestKeys?: readonly { readonly algorithm: KeyAlgorithmName; readonly derivationPath: readonly number[] }[];
}

const nonHardened = (path: readonly unknown[]): boolean =>
  path.every((x) => Number.isSafeInteger(x) && (x as number) >= 0 && (x as number) < 0x8000_0000);

/** The algorithm digest `i` is signed with: its `digestKeys` entry's, else the request's. */
export function algorithmOf(req: DigestKeysOf, i: number): KeyAlgorithmName {
  return req.digestKeys?.[i]?.algorithm ?? req.algorithm;
}

/**
 * Whether `digestKeys` names any key other than the request's own (`algorithm` at
 * `derivationPath`): then the ceremony signs with several keys (issue #28).
 */
export function hasOtherDigestKeys(req: DigestKeysOf & { readonly derivationPath: readonly number[] }): boolean {
  return (req.digestKeys ?? []).some(
    (k) =>
      k.algorithm !== req.algorithm ||
      k.derivationPath.length !== req.derivationPath.length ||
      k.derivationPath.some((x, j) => x !== req.derivationPath[j]),
  );
}

/**
 * Check `digestKeys` of a gateway request (issue #28): absent or empty, or an array of exactly one
 * entry per digest, each a known algorithm and a non-hardened path (indices < 2^31).
 * @throws TypeError / RangeError naming the entry (a caller bug: the request shape)
 */
export function validateDigestKeys(
  req: DigestKeysOf & { readonly digests: readonly unknown[] },
  algorithms: Readonly<Record<string, number>>,
): void {
  if (req.digestKeys === undefined) return;
  if (!Array.isArray(req.digestKeys)) throw new TypeError('digestKeys: an array');
  if (req.digestKeys.length > 0 && req.digestKeys.length !== req.digests.length)
    throw new RangeError(`digestKeys: one per digest (${req.digests.length}), got ${req.digestKeys.length}`);
  for (const [i, k] of req.digestKeys.entries()) {
    if (typeof k !== 'object' || k === null || !Object.hasOwn(algorithms, k.algorithm))
      throw new RangeError(`digestKeys[${i}].algorithm: unknown ${String(k?.algorithm)}`);
    if (!Array.isArray(k.derivationPath) || !nonHardened(k.derivationPath))
      throw new RangeError(`digestKeys[${i}].derivationPath: non-hardened indices (< 2^31)`);
  }
}

/** Whether a 64-byte BIP340 signature verifies over a 32-byte digest under a 32-byte x-only key. */
function taprootValid(signature: Uint8Array, digest: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return schnorr.verify(signature, digest, publicKey);
  } catch {
    return false;
  }
}

/** `UNAVAILABLE` naming `parties`, its message listing each with its error. */
export function unavailableResult(parties: UnavailableParty[]): GatewaySignResult {
  return {
    ok: false,
    reason: 'UNAVAILABLE',
    unavailable: parties,
    message: parties.map((u) => `${partyName(u.party)}: ${u.error}`).join('; '),
  };
}

/**
 * Map the parties' results of a SIGN ceremony (see the module comment for the precedence).
 * @param blames the results' blames as the coordinator checked them (blame.ts `assessBlames` with the
 *   ceremony's id and `targets`); only verified ones name culprits. Default: none checked (no culprit).
 */
export function mapSignResults(
  req: {
    readonly algorithm: 'SECP256K1_ECDSA' | 'SECP256K1_TAPROOT' | 'ED25519';
    readonly digests: readonly Uint8Array[];
    /** Per-digest algorithms (issue #28); absent: every digest is `algorithm`'s. */
    readonly digestKeys?: readonly { readonly algorithm: 'SECP256K1_ECDSA' | 'SECP256K1_TAPROOT' | 'ED25519' }[];
  },
  targets: readonly PartyDispatch[],
  results: readonly PartyResult[],
  blames: readonly BlameRecord[] = [],
): GatewaySignResult {
  // a party still signing this transfer in an earlier ceremony refuses for now, not for good
  const busy = (r: PartyResult) => {
    const code = refusalOfResult(r.result);
    return code !== undefined && isTransientRefusal(code);
  };
  const refused = results.find((r) => r.result.outcome === Outcome.REFUSED && !busy(r));
  if (refused) return { ok: false, reason: 'REFUSED', refusal: refusalOf(refused.result.refusal), by: refused.party };
  const culprits = verifiedCulprits(blames, targets);
  if (culprits.length > 0) {
    const accusers = new Set(blames.filter((b) => b.verified).map((b) => b.accuser));
    const by = results.find((r) => r.peerId !== undefined && accusers.has(r.peerId));
    return { ok: false, reason: 'ABORTED', culprits, message: by?.result.error || 'aborted' };
  }
  // the others' ABORTED answers are the consequence (the coordinator aborted them): name the cause
  const unreachable = results.filter((r) => r.unreachable || busy(r));
  if (unreachable.length > 0)
    return unavailableResult(unreachable.map((r) => ({ party: r.party, error: r.result.error || 'unreachable' })));
  if (results.some((r) => r.result.outcome === Outcome.DEADLINE_EXCEEDED))
    return { ok: false, reason: 'DEADLINE_EXCEEDED' };
  const failed = results.filter((r) => r.result.outcome !== Outcome.OK);
  if (failed.length > 0) {
    const accusers = unverifiedAccusers(blames, targets);
    const disputes = signDisputes(blames, targets);
    return {
      ok: false,
      reason: 'ABORTED',
      culprits: [],
      ...(accusers.length > 0 ? { accusers } : {}),
      ...(disputes.length > 0 ? { disputes } : {}),
      message: failed.map((r) => `${r.party.kind} ${r.party.id}: ${r.result.error ?? 'failed'}`).join('; '),
    };
  }
  const first = results[0]?.result.signatures ?? [];
  const agree = results.every((r) => {
    const s = r.result.signatures ?? [];
    return (
      s.length === first.length && s.every((x, i) => equalBytes(x.signature, first[i]?.signature ?? new Uint8Array(0)))
    );
  });
  if (!agree || first.length !== req.digests.length)
    return { ok: false, reason: 'ABORTED', culprits: [], message: 'parties returned different signatures' };
  const perDigest = (req.digestKeys ?? []).length > 0;
  const algorithmAt = (i: number) => (perDigest ? req.digestKeys?.[i]?.algorithm : undefined) ?? req.algorithm;
  try {
    return {
      ok: true,
      signatures: first.map((s, i) => {
        const digest = req.digests[i] as Uint8Array;
        // per-digest keys: each signature is checked under its own algorithm and returned key
        if (perDigest && algorithmAt(i) === 'SECP256K1_TAPROOT' && !taprootValid(s.signature, digest, s.publicKey))
          throw new Error(`signatures[${i}]: not a valid BIP340 signature under its public key`);
        return {
          signature: Uint8Array.from(s.signature),
          publicKey: Uint8Array.from(s.publicKey),
          ...(algorithmAt(i) === 'SECP256K1_ECDSA'
            ? { recovery: ecdsaRecovery(s.signature, digest, s.publicKey, s.recoveryId ?? 0) }
            : {}),
        };
      }),
    };
  } catch (e) {
    return { ok: false, reason: 'ABORTED', culprits: [], message: e instanceof Error ? e.message : String(e) };
  }
}
