/**
 * What every ceremony shares (DESIGN §4): the context a process hands to {@link runCeremony} (its
 * store, runner, identity, pools, enforcement settings), the REQUEST_REFUSED error, the session id
 * of a protocol run, the party set of a request, and how a ceremony's outcome becomes its
 * `CeremonyResult` and its audit record (sublevel `ceremonies`, key `<ceremonyIdHex>`, JSON).
 */
import type { KeyShare as EcdsaKeyShare } from '@custodian/cggmp';
import { bytesToHex, canonicalEncode } from '@custodian/crypto';
import type { KeyShare } from '@custodian/frost';
import {
  type BlameInfo,
  type BlameMessageInfo,
  type CeremonyResult,
  DEFAULT_LIMITS,
  decodeMessage,
  messageType,
  Outcome,
  type RefusalCode,
  refusalValue,
  type SignatureSharesWire,
  type StartCeremony,
} from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { sha256 } from '@noble/hashes/sha2.js';
import type { Logger } from 'pino';
import type { ChainsConfig } from '../chains-config.js';
import { SignerError } from '../errors.js';
import type { StoredNonceLedger } from '../nonce-ledger.js';
import type { PreparedPresignatures } from '../presignatures.js';
import type { StoredPrimePool } from '../primes.js';
import type { RollbackRecord } from '../rollback.js';
import type { CeremonyRunner, SessionOutcome, SessionParty } from '../runner.js';
import type { CeremonyStore, StoreOp } from '../storage.js';
import type { KeyRecord } from './keys.js';

const enc = new TextEncoder();

/** What ceremonies need from the node. */
export interface CeremonyContext {
  readonly store: CeremonyStore;
  readonly runner: CeremonyRunner;
  readonly selfPeerId: string;
  /** Own Ed25519 identity secret key (32 bytes). SECRET. */
  readonly secretKey: Uint8Array;
  readonly log: Logger;
  readonly nonceLedger: StoredNonceLedger;
  /** Safe-prime pool for CGGMP21 (absent: this signer does not take part in ECDSA key creation). */
  readonly primePool?: StoredPrimePool;
  /** Pool size to refill to after a ceremony consumed primes. */
  readonly primePoolTarget?: number;
  /**
   * Decoded and validated key shares by `<keyId>/<suite>`, so signing does not re-validate a
   * share (CGGMP21 aux validation costs hundreds of ms). SECRET material, kept in process memory
   * only; cleared for a key when a refresh replaces its shares.
   */
  readonly shareCache?: Map<string, KeyShare | EcdsaKeyShare>;
  /** Key records by key id (public data), so a signature does not read and decrypt them again; cleared for a key on refresh. */
  readonly recordCache?: Map<string, KeyRecord>;
  /** Pooled presignatures' public parts with R's fixed-base table (presignatures.ts): memory only. */
  readonly prepared?: PreparedPresignatures;
  /**
   * Transfer evidence enforcement (enforce/enforce.ts, DESIGN §1: signers enforce): when set, every sign
   * request must carry evidence that passes the checks with these pinned Admin device keys
   * (compressed P-256, hex), for a blockchain of `chains` (the signer's own chain ids / networks
   * and fee ceilings; absent: every transfer is refused `CHAIN_NOT_CONFIGURED`).
   */
  readonly enforcement?: { readonly trustedAdminKeys: readonly string[]; readonly chains?: ChainsConfig };
  /**
   * DEVELOPMENT/TEST ONLY: sign requests without evidence are signed as asked (raw digests) when
   * {@link enforcement} is absent. Default false: without `enforcement` every sign request is
   * refused with `ENFORCEMENT_NOT_CONFIGURED`.
   */
  readonly allowUnenforcedSigning?: boolean;
  /**
   * The store's latest detected rollback (the server signer's generation.ts `startGeneration`; rollback.ts): with enforcement, sign
   * requests it does not allow are refused with `STORE_ROLLED_BACK` ({@link rollbackRefusal}).
   */
  readonly rollback?: RollbackRecord;
}

/** What a ceremony tells its requester before its result (the daemon sends them as interim control frames). */
export interface CeremonyHooks {
  /**
   * ECDSA signing: this signer's share of a signature (control.proto `SignatureShares`), given once
   * it is released to the co-signers, i.e. after the release gate's batch is durable. The
   * coordinator combines the shares itself (`share-combiner.ts`) and need not wait for the result.
   */
  readonly onSignatureShares?: (shares: SignatureSharesWire) => void;
}

/**
 * A refusal: the request is invalid for this signer. `refusal` (a code of the wire catalogue,
 * default REQUEST_INVALID) travels as the REFUSED result's `refusal`, the message as its `error`.
 */
export class Refused extends SignerError {
  constructor(
    message: string,
    readonly refusal: RefusalCode = 'REQUEST_INVALID',
  ) {
    super('REQUEST_REFUSED', message);
  }
}

/** The REFUSED (a {@link Refused}) or ABORTED result of a request that failed with `e`. */
export function refusedOrAborted(ceremonyId: Uint8Array, e: unknown): CeremonyResult {
  return e instanceof Refused
    ? { ceremonyId, outcome: Outcome.REFUSED, refusal: refusalValue(e.refusal), error: e.message }
    : { ceremonyId, outcome: Outcome.ABORTED, error: e instanceof Error ? e.message : 'failed' };
}

/** Session id of one protocol run of a ceremony: SHA-256 of the canonical encoding of (tag, ceremony id, label). */
export function sessionId(ceremonyId: Uint8Array, label: string): Uint8Array {
  return sha256(canonicalEncode(['custodian/v1/session', ceremonyId, label]));
}

/** Ed25519 public keys of peer ids already parsed (a node talks to the same few peers). */
const peerKeys = new Map<string, Uint8Array>();

/**
 * The session parties of a request's peer ids, in the given order (runtime index = position).
 * @throws Refused naming the index of a peer id that is malformed, not Ed25519, or repeated
 */
export function toSessionParties(peerIds: readonly string[]): SessionParty[] {
  const seen = new Set<string>();
  return peerIds.map((s, i) => {
    let publicKey = peerKeys.get(s);
    if (!publicKey) {
      let pid: ReturnType<typeof peerIdFromString>;
      try {
        pid = peerIdFromString(s);
      } catch {
        throw new Refused(`parties[${i}]: not a peer id`);
      }
      if (pid.type !== 'Ed25519' || !pid.publicKey) throw new Refused(`parties[${i}]: not an Ed25519 peer id`);
      publicKey = pid.publicKey.raw;
      if (peerKeys.size >= 1024) peerKeys.clear();
      peerKeys.set(s, publicKey);
    }
    if (seen.has(s)) throw new Refused(`parties[${i}]: duplicate`);
    seen.add(s);
    return { peerId: s, publicKey: Uint8Array.from(publicKey) };
  });
}

const BlameMessageType = messageType('custodian.v1.BlameMessage');

/** One culprit's transport evidence (encoded `custodian.v1.BlameMessage`, wire SessionWire) decoded; undecodable entries dropped. */
function blameMessages(evidence: readonly Uint8Array[]): BlameMessageInfo[] {
  const out: BlameMessageInfo[] = [];
  for (const e of evidence) {
    const d = decodeMessage(BlameMessageType, e, DEFAULT_LIMITS);
    if (!d.ok) continue;
    const m = d.value as unknown as { signedEnvelope?: Uint8Array; messageKey?: Uint8Array };
    if (!(m.signedEnvelope instanceof Uint8Array) || m.signedEnvelope.length === 0) continue;
    out.push({ signedEnvelope: m.signedEnvelope, messageKey: m.messageKey ?? new Uint8Array(0) });
  }
  return out;
}

/**
 * The blamed parties of an aborted session, else none: index, peer id, reason, and the evidence a
 * third party checks (control.proto `Blame`: check, round, protocol, messages, statements, the
 * run's ordered peer ids, session id and label).
 */
export function blameOf(outcome: SessionOutcome<unknown>, parties: readonly SessionParty[]): BlameInfo[] {
  if (outcome.status !== 'aborted') return [];
  const sessionParties = parties.map((p) => p.peerId);
  return outcome.aborted.culprits.map((c) => ({
    party: c.party,
    peerId: parties[c.party]?.peerId ?? '',
    reason: c.reason,
    ...(c.check !== undefined ? { check: c.check } : {}),
    ...(c.round !== undefined ? { round: c.round } : {}),
    ...(outcome.protocol !== undefined ? { protocol: outcome.protocol } : {}),
    messages: blameMessages(c.evidence?.messages ?? []),
    statements: (c.evidence?.statements ?? []).map((s) => ({
      protocol: s.protocol,
      sessionId: s.sessionId,
      round: s.round,
      sender: s.sender,
      hash: s.hash,
      signature: s.signature,
    })),
    sessionParties,
    ...(outcome.sessionId !== undefined ? { sessionId: outcome.sessionId } : {}),
    ...(outcome.sessionLabel !== undefined ? { sessionLabel: outcome.sessionLabel } : {}),
  }));
}

/**
 * A blame list without its evidence (for logs and the audit record): party, peer id, reason, check,
 * round. The evidence is sent to the coordinator only: a point-to-point message key opens that
 * message, which may carry a share.
 */
export function blameSummary(
  blame: readonly BlameInfo[] | undefined,
): { party: number; peerId: string; reason: string; check?: string; round?: number }[] {
  return (blame ?? []).map((b) => ({
    party: b.party,
    peerId: b.peerId,
    reason: b.reason,
    ...(b.check !== undefined ? { check: b.check } : {}),
    ...(b.round !== undefined ? { round: b.round } : {}),
  }));
}

/** SHA-256 of the canonical encoding of the ceremony id and every session's transcript hash (32 bytes). */
export function combinedTranscript(ceremonyId: Uint8Array, outs: readonly SessionOutcome<unknown>[]): Uint8Array {
  return sha256(
    canonicalEncode([
      'custodian/v1/ceremony-transcript',
      ceremonyId,
      outs.map((o) => (o.status === 'ok' ? o.transcriptHash : new Uint8Array(0))),
    ]),
  );
}

/** The result of a ceremony whose sessions did not all succeed: ABORTED with blame, or DEADLINE_EXCEEDED. */
export function failure(
  ceremonyId: Uint8Array,
  outs: readonly SessionOutcome<unknown>[],
  parties: readonly SessionParty[],
): CeremonyResult {
  const aborted = outs.find((o) => o.status === 'aborted');
  if (aborted) {
    return {
      ceremonyId,
      outcome: Outcome.ABORTED,
      blame: blameOf(aborted, parties),
      error: aborted.status === 'aborted' ? aborted.aborted.reason : '',
    };
  }
  if (outs.some((o) => o.status === 'deadline'))
    return { ceremonyId, outcome: Outcome.DEADLINE_EXCEEDED, error: 'deadline exceeded' };
  const c = outs.find((o) => o.status === 'cancelled');
  return { ceremonyId, outcome: Outcome.ABORTED, error: c && c.status === 'cancelled' ? c.reason : 'failed' };
}

/**
 * The ceremony's audit record (sublevel `ceremonies`, key: ceremony id hex; JSON: kind, parties,
 * threshold, key id, the reshare ceremony id of a RESHARE_COMMIT, outcome, transcript hash, blame, error, time); `pending` before a share left.
 */
export function record(ceremonyId: Uint8Array, start: StartCeremony, result: CeremonyResult, pending = false): StoreOp {
  const value = {
    ...(pending ? { pending: true } : {}),
    ceremonyId: bytesToHex(ceremonyId),
    kind: start.kind,
    parties: start.parties.map((p) => p.peerId),
    threshold: start.threshold,
    keyId: result.keyId ?? start.keyId ?? start.sign?.keyId ?? '',
    ...(start.reshareCeremonyId instanceof Uint8Array
      ? { reshareCeremonyId: bytesToHex(start.reshareCeremonyId) }
      : {}),
    outcome: result.outcome,
    transcriptHash: result.transcriptHash ? bytesToHex(result.transcriptHash) : '',
    blame: blameSummary(result.blame),
    error: result.error ?? '',
    at: new Date().toISOString(),
  };
  return { type: 'put', sublevel: 'ceremonies', key: bytesToHex(ceremonyId), value: enc.encode(JSON.stringify(value)) };
}
