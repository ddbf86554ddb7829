/**
 * The blame the coordinator records (issue #23 part 3; docs/protocols.md "Blame evidence"): a
 * signer that aborts a ceremony names a culprit, but the coordinator believes it only when the
 * evidence attached to the `custodian.v1.Blame` proves it (`verifyBlame` of `@custodian/wire`,
 * checked here with the ceremony's own id and parties, never the accuser's claim of them).
 *
 * From the parties' `CeremonyResult`s of ONE ceremony, {@link assessBlames} checks every Blame of
 * every ABORTED result (the accuser: the peer id the coordinator dispatched that result's party
 * to) and yields one {@link BlameRecord} each: verified → `culprit` is the proven culprit; not
 * verified → a DISPUTE: `culprit` is null, the accuser's claim is kept in `claimedCulprit`, and
 * nobody is named (an honest victim of a cheater that sent a bad share or proof to it alone
 * cannot prove it: neither the victim nor the claimed party is recorded as culprit). Only
 * verified culprits are ever named as culprits (transfer failure, `blamed`, metrics by party).
 */
import { type BlameVerdict, type BlameWire, type CeremonyResult, Outcome, verifyBlame } from '@custodian/wire';
import type { PartyDispatch, SignParty } from './sign-results.js';

/** At most this many blames of one result are checked and recorded (a signer cannot flood the table). */
export const MAX_BLAMES_PER_RESULT = 16;

/** One checked blame (stored in `ceremony_blames`, shown by the admin API, sent as SIGNER_MISBEHAVIOUR). */
export interface BlameRecord {
  /** Verified: the proven culprit's libp2p peer id; unverified (a dispute): null — nobody is named. */
  readonly culprit: string | null;
  /** The peer id the accuser named (≤ 128 characters; '' when none): the claim, proven only when `verified`. */
  readonly claimedCulprit: string;
  /** Peer id of the signer that reported the blame. */
  readonly accuser: string;
  /** Stable id of the failed check (e.g. `echo.equivocation`, `proof.enc`; `check.unspecified` when none). */
  readonly check: string;
  /** Runtime round (0-based) of the offending message(s). */
  readonly round: number;
  /** Protocol tag of the run (e.g. `cggmp21.sign`), '' when none. */
  readonly protocol: string;
  /** Whether the coordinator verified the evidence itself. */
  readonly verified: boolean;
  /** How it was checked, or why it could not be (no secrets; ≤ 500 characters). */
  readonly detail: string;
}

/** The result of one party, with the peer id the coordinator dispatched it to. */
export interface AccusingResult {
  readonly peerId?: string | undefined;
  readonly result: CeremonyResult;
}

// the claim, check and protocol are the accuser's text: shown by the admin API and printed by the
// CLI, so control characters (terminal escapes, newlines) are replaced and the length is capped
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it removes
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const clip = (s: unknown, n: number): string => (typeof s === 'string' ? s.slice(0, n).replace(CONTROL, '?') : '');

function record(v: BlameVerdict, claimed: string, accuser: string): BlameRecord {
  const verified = v.verified === true && v.culprit !== '';
  return {
    culprit: verified ? clip(v.culprit, 128) : null,
    claimedCulprit: clip(claimed, 128),
    accuser,
    check: clip(v.check, 64) || 'check.unspecified',
    round: Number.isSafeInteger(v.round) && v.round >= 0 ? v.round : 0,
    protocol: clip(v.protocol, 64),
    verified,
    detail: clip(v.detail, 500),
  };
}

/**
 * Check every Blame of every ABORTED result of one ceremony.
 * @param ceremonyId the ceremony id the coordinator sent (`StartCeremony.ceremony_id`: 24 bytes for
 *   SIGN / PRESIGN, 16 for the master key and lifecycle ceremonies)
 * @param ceremonyParties the peer ids of `StartCeremony.parties` (a run's session parties must be among them)
 * @param results the parties' results; one without `peerId` (synthetic: the party was not reached) is skipped
 * @returns one record per blame (at most {@link MAX_BLAMES_PER_RESULT} per result, duplicates dropped); never throws
 */
export function assessBlames(
  ceremonyId: Uint8Array,
  ceremonyParties: readonly string[],
  results: readonly AccusingResult[],
): BlameRecord[] {
  const out: BlameRecord[] = [];
  const seen = new Set<string>();
  for (const r of results) {
    const accuser = r.peerId;
    if (accuser === undefined || accuser === '' || r.result.outcome !== Outcome.ABORTED) continue;
    const blames = Array.isArray(r.result.blame) ? r.result.blame.slice(0, MAX_BLAMES_PER_RESULT) : [];
    for (const b of blames as BlameWire[]) {
      let v: BlameVerdict;
      try {
        v = verifyBlame(b, { ceremonyId, ceremonyParties, accuser });
      } catch {
        v = {
          verified: false,
          culprit: '',
          accuser,
          check: clip(b?.check, 64) || 'check.unspecified',
          round: 0,
          protocol: '',
          detail: 'the evidence could not be read',
        };
      }
      const rec = record(v, clip(b?.peerId, 128), accuser);
      const key = JSON.stringify(rec);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(rec);
    }
  }
  return out;
}

/** The parties of `targets` proven culprits by `records` (verified only), each once, in `targets` order. */
export function verifiedCulprits(records: readonly BlameRecord[], targets: readonly PartyDispatch[]): SignParty[] {
  const proven = new Set(records.flatMap((r) => (r.verified && r.culprit !== null ? [r.culprit] : [])));
  return targets.filter((t) => proven.has(t.peerId)).map((t) => t.party);
}

/** The parties of `targets` that reported a blame the coordinator could not verify, each once, in `targets` order. */
export function unverifiedAccusers(records: readonly BlameRecord[], targets: readonly PartyDispatch[]): SignParty[] {
  const accusers = new Set(records.filter((r) => !r.verified).map((r) => r.accuser));
  return targets.filter((t) => accusers.has(t.peerId)).map((t) => t.party);
}

/** An unverified blame between two parties of a signing set: nobody is proven to have misbehaved. */
export interface SignDispute {
  readonly accuser: SignParty;
  /** The party the accuser named; absent when the claim names no party of the set. */
  readonly claimed?: SignParty;
  readonly check: string;
}

/** The unverified blames of `records` whose accuser is in `targets`, each (accuser, claimed, check) once. */
export function signDisputes(records: readonly BlameRecord[], targets: readonly PartyDispatch[]): SignDispute[] {
  const byPeer = new Map(targets.map((t) => [t.peerId, t.party]));
  const out: SignDispute[] = [];
  const seen = new Set<string>();
  for (const r of records) {
    const accuser = byPeer.get(r.accuser);
    if (r.verified || accuser === undefined) continue;
    const claimed = byPeer.get(r.claimedCulprit);
    const key = JSON.stringify([r.accuser, claimed ? r.claimedCulprit : '', r.check]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ accuser, ...(claimed !== undefined && claimed !== accuser ? { claimed } : {}), check: r.check });
  }
  return out;
}
