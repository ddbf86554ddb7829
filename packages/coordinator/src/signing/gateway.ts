/**
 * Signer gateway: the coordinator's side of signing ceremonies (DESIGN §1, §4). The coordinator
 * sequences, the signers execute and enforce: the gateway sends one `StartCeremony` (kind SIGN,
 * control.proto) signed with the coordinator's libp2p Ed25519 key to every party of the signing
 * set (dispatch.ts: server signers over libp2p, mobile signers through the device hub), waits for
 * every party's `CeremonyResult`, and maps them to a {@link GatewaySignResult} (sign-results.ts:
 * the precedence of outcomes, and refusals read from the typed `refusal` field by the catalogue of
 * `@custodian/wire` refusals.ts). The MPC traffic itself flows between the parties (directly over
 * libp2p between servers, through the coordinator relay for devices), end-to-end signed and
 * encrypted, so the gateway never sees a share or a nonce. This module re-exports dispatch.ts and
 * sign-results.ts, so importers of the gateway see one surface.
 *
 * Per-digest keys (issue #28, `GatewaySignRequest.digestKeys`): validated (one per digest, known
 * algorithms, non-hardened paths) and forwarded as `SignRequest.digestKeys`; a request whose
 * digest keys name any key other than its own skips the ECDSA fast path (the signers combine), and
 * each returned signature is checked under its own digest's algorithm (sign-results.ts).
 *
 * ECDSA fast path (control.proto `SignatureShares`; `@custodian/signer-client` share-combiner.ts): when the
 * request gives the master ECDSA key and chain code (`ecdsaKey`) and every party is a server signer,
 * each signer sends its share of each signature as an interim frame as soon as the share leaves for
 * its co-signers; the gateway combines them and answers `ok` (`combinedByCoordinator`) once every
 * signature verifies under the child key it derives itself — one network hop and the signers' own
 * combination earlier than their results. It trusts no share: shares that do not combine into a
 * valid signature only turn the fast path off, and the parties' results are mapped (sign-results.ts). The
 * results still arrive (and are logged if one is not OK: the signature is valid all the same).
 *
 * Presignature pool (issue 7, 11; signing/presignature-pool.ts): with an {@link SigningAttemptLog},
 * every ceremony is recorded before it starts, and an ECDSA request over ONE digest takes a pooled
 * CGGMP21 presignature of exactly its signing set in that same database transaction (so an id is
 * handed out once, across replicas too); the signers then sign in one round
 * (`SignRequest.presignature_id`). When a signer no longer has the id (refusal
 * `PRESIGNATURE_UNAVAILABLE`: a refresh dropped it, or its store lost it), the other parties are
 * aborted at once and the request is signed cold (presign + sign) in a new ceremony, so a stale
 * pool never fails a transfer.
 *
 * Over 400 lines: the request shape, its validation and the one `sign` flow (attempt record, pool,
 * fast path, stale-presignature retry) are kept together so the order of those steps reads in one place.
 */
import { type ControlClient, EcdsaShareCombiner } from '@custodian/signer-client';
import {
  type Approval,
  CeremonyKind,
  type ControlResponse,
  KeyAlgorithm,
  type SignedPolicy,
  type SignRequest,
  type StartCeremony,
  type TransferIntent,
} from '@custodian/wire';
import { bytesToHex } from '@noble/curves/utils.js';
import { observeSign } from '../metrics/observe.js';
import type { SigningMetrics } from '../metrics/registry.js';
import { assessBlames, type BlameRecord } from './blame.js';
import { type DeviceCeremonyPort, dispatchCeremony, newCeremonyId, type PartyDirectory } from './dispatch.js';
import {
  algorithmOf,
  type GatewaySignResult,
  hasOtherDigestKeys,
  mapSignResults,
  type PartyDispatch,
  type PartyResult,
  refusedStalePresignature,
  type SignParty,
  type UnavailableParty,
  unavailableResult,
  validateDigestKeys,
} from './sign-results.js';

export type { DeviceCeremonyPort, DispatchInit, PartyDirectory } from './dispatch.js';
export { dispatchCeremony, newCeremonyId, presignCeremony } from './dispatch.js';
export type { GatewaySignResult, PartyDispatch, PartyResult, SignParty, UnavailableParty } from './sign-results.js';
export {
  algorithmOf,
  ecdsaRecovery,
  hasOtherDigestKeys,
  mapSignResults,
  partyName,
  refusalOfResult,
  refusedStalePresignature,
  unavailableResult,
} from './sign-results.js';

/** What the signers check before contributing (packages/wire/src/evidence.ts). */
export interface SignEvidence {
  intent: TransferIntent;
  policy: SignedPolicy | null;
  approvals: Approval[];
  /** JSON the chains `recompute…Digests(fields, context)` needs. */
  chainContext: string;
}

/** One signing request. */
export interface GatewaySignRequest {
  keyId: string;
  algorithm: 'SECP256K1_ECDSA' | 'SECP256K1_TAPROOT' | 'ED25519';
  /** The t signers, in key party order. */
  parties: SignParty[];
  /** Non-hardened BIP32 path (indices < 2^31) applied as an additive tweak. */
  derivationPath: number[];
  /** 32-byte digests (secp256k1), or messages of any length (Ed25519); 1..64 of them. */
  digests: Uint8Array[];
  /**
   * Per-digest keys (control.proto `SignRequest.digest_keys`, issue #28): absent — every digest is
   * signed with `algorithm` at `derivationPath`; else exactly one per digest, in order (a
   * Bitcoin-family transaction with inputs of several addresses, P2WPKH by ECDSA, P2TR by Taproot).
   * `algorithm` / `derivationPath` then name the intent's source key.
   */
  digestKeys?: { algorithm: GatewaySignRequest['algorithm']; derivationPath: number[] }[];
  /** BIP341 script tree root (32 bytes), Taproot only. */
  taprootMerkleRoot?: Uint8Array;
  evidence: SignEvidence;
  deadline: Date;
  signal?: AbortSignal;
  /**
   * ECDSA: the master key as recorded at the master key ceremony — `publicKey` 33 bytes
   * SEC1-compressed, `chainCode` 32 bytes. With it (and server signers only) the gateway combines
   * the signers' shares itself (the fast path, see the module comment).
   */
  ecdsaKey?: { publicKey: Uint8Array; chainCode: Uint8Array };
}

/** Runs signing ceremonies. */
export interface SignerGateway {
  /** Never rejects for ceremony failures (those are results); rejects only for a caller bug (bad request shape). */
  sign(req: GatewaySignRequest): Promise<GatewaySignResult>;
  /**
   * What the coordinator knows of a party's connection now: `'up'` (linked / connected), `'down'`
   * (not connected: a ceremony would fail or wait), `undefined` (not known: e.g. no links kept).
   * Absent: nothing is known.
   */
  availability?(party: SignParty): Promise<'up' | 'down' | undefined>;
}

/** One SIGN ceremony as recorded by a {@link SigningAttemptLog}. */
export interface SigningAttempt {
  /** Ceremony id, hex (48 digits). */
  ceremonyId: string;
  keyId: string;
  algorithm: GatewaySignRequest['algorithm'];
  /** The signing set, in key party order. */
  parties: readonly SignParty[];
  /** `intent.transfer_id` of the evidence, or null. */
  transferId: string | null;
  /** Take a pooled presignature for exactly `parties` (ECDSA over one digest only). */
  pooled: boolean;
}

/** Records signing attempts and hands out pooled presignatures (implemented by presignature-pool.ts). */
export interface SigningAttemptLog {
  /**
   * Record the attempt; when `pooled`, take (delete) one pooled presignature id of `(keyId,
   * parties)` in the same transaction. @returns that id, or undefined (pool empty or not pooled)
   */
  begin(attempt: SigningAttempt): Promise<string | undefined>;
  /** Record the outcome (`OK`, `PRESIGNATURE_UNAVAILABLE`, `REFUSED:<code>`, `ABORTED`, `UNAVAILABLE`, `DEADLINE_EXCEEDED`). */
  finish(attempt: SigningAttempt, outcome: string): Promise<void>;
}

/** Components of {@link createSignerGateway}. */
export interface SignerGatewayInit {
  control: ControlClient;
  directory: PartyDirectory;
  devices?: DeviceCeremonyPort;
  /** The evidence fields of the SignRequest (control.proto 16–31); default {@link evidenceWire}. */
  evidenceFields?: (e: SignEvidence) => Partial<SignRequest>;
  /** Extra slack after the deadline for the parties' responses to arrive, ms. Default 10 000. */
  responseSlackMs?: number;
  /** Called before a ceremony starts (opens relay streams to server signers when devices take part). */
  prepare?(targets: readonly PartyDispatch[]): Promise<void>;
  /** Attempt records and the presignature pool; absent: every ECDSA signature is cold. */
  attempts?: SigningAttemptLog;
  /** Warnings (a failed attempt record never fails a signature). */
  log?(msg: string, fields?: Record<string, unknown>): void;
  /** {@link SignerGateway.availability}: whether a party is connected now (absent: not known). */
  availability?(party: SignParty): Promise<'up' | 'down' | undefined>;
  /** Signing latency, ceremony outcomes and blame (metrics/registry.ts); absent: not measured. */
  metrics?: SigningMetrics | undefined;
  /**
   * Records the checked blames of a ceremony (signing/blame-store.ts `BlameStore.save`: the
   * `ceremony_blames` rows and a SIGNER_MISBEHAVIOUR event each); absent: not recorded. A failed
   * record is logged and never changes the result.
   */
  blames?: { save(ceremonyId: string, kind: string, records: readonly BlameRecord[]): Promise<void> };
}

const ALGORITHMS = {
  SECP256K1_ECDSA: KeyAlgorithm.SECP256K1_ECDSA,
  SECP256K1_TAPROOT: KeyAlgorithm.SECP256K1_TAPROOT,
  ED25519: KeyAlgorithm.ED25519,
} as const;

/** Transfer fields of a SignRequest from the intent (informational; signers recompute what they enforce). */
function transferFields(e: SignEvidence): SignRequest['transfer'] {
  const i = e.intent;
  return {
    transferId: i.transfer_id,
    chain: i.blockchain,
    asset: i.asset_id,
    source: i.source_address,
    destination: i.destination_address,
    amount: i.amount,
  };
}

/** Default evidence mapping: `SignRequest.evidence` (control.proto field 16) as the JSON texts of evidence.ts. */
export function evidenceWire(e: SignEvidence): Partial<SignRequest> {
  return {
    evidence: {
      intentJson: JSON.stringify(e.intent),
      policyJson: e.policy ? JSON.stringify(e.policy) : '',
      approvalsJson: e.approvals.map((a) => JSON.stringify(a)),
      chainContextJson: e.chainContext,
    },
  };
}

function validate(req: GatewaySignRequest): void {
  if (typeof req.keyId !== 'string' || req.keyId.length === 0) throw new TypeError('keyId: non-empty string');
  if (!(req.algorithm in ALGORITHMS)) throw new RangeError(`algorithm: unknown ${String(req.algorithm)}`);
  if (!Array.isArray(req.parties) || req.parties.length === 0) throw new RangeError('parties: at least one');
  const seen = new Set<string>();
  for (const [i, p] of req.parties.entries()) {
    if ((p.kind !== 'server' && p.kind !== 'device') || typeof p.id !== 'string' || p.id === '')
      throw new TypeError(`parties[${i}]: {kind: server|device, id}`);
    const k = `${p.kind}:${p.id}`;
    if (seen.has(k)) throw new RangeError(`parties[${i}]: duplicate`);
    seen.add(k);
  }
  if (!Array.isArray(req.digests) || req.digests.length < 1 || req.digests.length > 64)
    throw new RangeError('digests: 1..64 expected');
  validateDigestKeys(req, ALGORITHMS);
  for (const [i, d] of req.digests.entries()) {
    if (!(d instanceof Uint8Array)) throw new TypeError(`digests[${i}]: Uint8Array`);
    if (algorithmOf(req, i) !== 'ED25519' && d.length !== 32) throw new RangeError(`digests[${i}]: 32 bytes`);
  }
  if (!(req.deadline instanceof Date) || Number.isNaN(req.deadline.getTime()))
    throw new TypeError('deadline: a valid Date');
  if (
    req.ecdsaKey !== undefined &&
    (!(req.ecdsaKey.publicKey instanceof Uint8Array) ||
      req.ecdsaKey.publicKey.length !== 33 ||
      !(req.ecdsaKey.chainCode instanceof Uint8Array) ||
      req.ecdsaKey.chainCode.length !== 32)
  )
    throw new TypeError('ecdsaKey: {publicKey: 33 bytes, chainCode: 32 bytes}');
}

/**
 * The combiner of the ECDSA fast path for `req`, or undefined when it does not apply (another
 * algorithm, no `ecdsaKey`, a device among the parties: devices send no interim shares).
 * An `ecdsaKey` that is not a valid point turns it off (logged): the signers' results still sign.
 */
function fastPath(
  req: GatewaySignRequest,
  targets: readonly PartyDispatch[],
  log: SignerGatewayInit['log'],
): EcdsaShareCombiner | undefined {
  if (req.algorithm !== 'SECP256K1_ECDSA' || !req.ecdsaKey) return undefined;
  // per-digest keys other than the request's (issue #28): the signers combine (their results are verified)
  if (hasOtherDigestKeys(req)) return undefined;
  if (targets.some((t) => t.party.kind !== 'server')) return undefined;
  try {
    return new EcdsaShareCombiner({
      publicKey: req.ecdsaKey.publicKey,
      chainCode: req.ecdsaKey.chainCode,
      derivationPath: req.derivationPath,
      digests: req.digests,
      signers: targets.length,
    });
  } catch (e) {
    log?.('ECDSA fast path off: the master key does not decode', { err: e instanceof Error ? e.message : String(e) });
    return undefined;
  }
}

/** Build a gateway over the control client (server signers) and, when given, the device hub. */
export function createSignerGateway(init: SignerGatewayInit): SignerGateway {
  return {
    async sign(req) {
      validate(req);
      if (req.signal?.aborted || req.deadline.getTime() <= Date.now())
        return { ok: false, reason: 'DEADLINE_EXCEEDED' };
      const targets: PartyDispatch[] = [];
      const unknown: UnavailableParty[] = [];
      for (const party of req.parties) {
        try {
          targets.push({ party, peerId: await init.directory.peerIdOf(party) });
        } catch (e) {
          unknown.push({ party, error: e instanceof Error ? e.message : String(e) });
        }
      }
      if (unknown.length > 0) return unavailableResult(unknown);
      const algorithm = ALGORITHMS[req.algorithm];
      const base: SignRequest = {
        keyId: req.keyId,
        algorithm,
        derivationPath: [...req.derivationPath],
        digests: req.digests.map((d) => Uint8Array.from(d)),
        transfer: transferFields(req.evidence),
        ...(req.taprootMerkleRoot ? { taprootMerkleRoot: Uint8Array.from(req.taprootMerkleRoot) } : {}),
        ...(req.digestKeys && req.digestKeys.length > 0
          ? {
              digestKeys: req.digestKeys.map((k) => ({
                algorithm: ALGORITHMS[k.algorithm],
                derivationPath: [...k.derivationPath],
              })),
            }
          : {}),
        ...(init.evidenceFields ?? evidenceWire)(req.evidence),
      };
      try {
        await init.prepare?.(targets);
      } catch (e) {
        // policy sync or the relay stream to a server signer failed: a signer not reachable now
        return {
          ok: false,
          reason: 'UNAVAILABLE',
          unavailable: [],
          message: `relay: ${e instanceof Error ? e.message : String(e)}`,
        };
      }
      const attempt = async (pooled: boolean): Promise<{ result: GatewaySignResult; stale: boolean }> => {
        const ceremonyId = newCeremonyId();
        const record: SigningAttempt = {
          ceremonyId: bytesToHex(ceremonyId),
          keyId: req.keyId,
          algorithm: req.algorithm,
          parties: req.parties,
          transferId: req.evidence.intent?.transfer_id ?? null,
          pooled,
        };
        const began = performance.now();
        let presignatureId: string | undefined;
        try {
          presignatureId = await init.attempts?.begin(record);
        } catch (e) {
          init.log?.('signing attempt not recorded', { err: e instanceof Error ? e.message : String(e) });
        }
        // every blame checked against this ceremony's id and parties (never the accuser's word), and
        // recorded before the result is returned (a failed record is logged, the result unchanged)
        const checked = async (results: readonly PartyResult[]): Promise<BlameRecord[]> => {
          const records = assessBlames(
            ceremonyId,
            targets.map((t) => t.peerId),
            results,
          );
          await init.blames?.save(record.ceremonyId, 'sign', records).catch((e: unknown) => {
            init.log?.('blame not recorded', {
              ceremonyId: record.ceremonyId,
              err: e instanceof Error ? e.message : String(e),
            });
          });
          return records;
        };
        // the fast path: the signers also send their shares here (interim frames), combined below
        const combiner = fastPath(req, targets, init.log);
        const start: StartCeremony = {
          ceremonyId,
          kind: CeremonyKind.SIGN,
          parties: targets.map((t) => ({ peerId: t.peerId })),
          threshold: 0,
          deadlineUnixMs: req.deadline.getTime(),
          sign: {
            ...base,
            ...(presignatureId !== undefined ? { presignatureId } : {}),
            ...(combiner ? { interimShares: true } : {}),
          },
        };
        // a party that cannot take part (refused, unreachable, a device that went away) ends the
        // ceremony everywhere at once instead of leaving the others to wait for the deadline
        let firstFailed: SignParty | undefined;
        const dispatched = dispatchCeremony(init, targets, start, req.signal, {
          abortOnFailure: true,
          onFirstFailure: (p) => {
            firstFailed = p;
          },
          ...(combiner
            ? {
                onInterim: (position: number, res: ControlResponse) => {
                  if (res.shares) combiner.add(position, res.shares);
                },
              }
            : {}),
        });
        // Y' is derived while the signers work (after the requests are written), not between their shares
        if (combiner) setImmediate(() => combiner.prepare());
        const fast = combiner ? await Promise.race([combiner.done, dispatched.then(() => undefined)]) : undefined;
        let result: GatewaySignResult;
        let stale = false;
        if (fast) {
          result = {
            ok: true,
            combinedByCoordinator: true,
            signatures: fast.map((s) => ({ signature: s.compact, recovery: s.recovery, publicKey: s.publicKey })),
          };
          // the signers' own results come later: a failure among them does not undo a valid signature
          dispatched.then(
            async (results) => {
              const late = mapSignResults(req, targets, results, await checked(results));
              if (!late.ok)
                init.log?.('a signer reported a failure after the gateway combined a valid signature', {
                  ceremonyId: record.ceremonyId,
                  reason: late.reason,
                });
            },
            (e: unknown) =>
              init.log?.('the signers’ results were not collected after the fast path', {
                ceremonyId: record.ceremonyId,
                err: e instanceof Error ? e.message : String(e),
              }),
          );
        } else {
          const results = await dispatched;
          result = mapSignResults(req, targets, results, await checked(results));
          if (!result.ok && result.reason === 'ABORTED' && result.culprits.length === 0 && firstFailed !== undefined)
            result = { ...result, abortedBy: firstFailed };
          stale = presignatureId !== undefined && refusedStalePresignature(results);
        }
        if (result.ok && presignatureId !== undefined) result = { ...result, presignatureId };
        const outcome = result.ok
          ? 'OK'
          : stale
            ? 'PRESIGNATURE_UNAVAILABLE'
            : result.reason === 'REFUSED'
              ? `REFUSED:${result.refusal}`
              : result.reason;
        observeSign(init.metrics, req.algorithm, presignatureId !== undefined, outcome, result, began);
        await init.attempts?.finish(record, outcome).catch((e: unknown) => {
          init.log?.('signing attempt outcome not recorded', { err: e instanceof Error ? e.message : String(e) });
        });
        return { result, stale };
      };
      // a pooled presignature signs one ECDSA digest (at any path: the tweak is applied when signing)
      const pooled =
        algorithmOf(req, 0) === 'SECP256K1_ECDSA' && req.digests.length === 1 && init.attempts !== undefined;
      const first = await attempt(pooled);
      if (!first.stale) return first.result;
      // the signers no longer hold that presignature: sign cold instead of failing the transfer
      if (req.signal?.aborted || req.deadline.getTime() <= Date.now())
        return { ok: false, reason: 'DEADLINE_EXCEEDED' };
      init.log?.('pooled presignature unavailable at the signers; signing cold', { keyId: req.keyId });
      return (await attempt(false)).result;
    },
    ...(init.availability ? { availability: init.availability } : {}),
  };
}

/** Hex of a ceremony id (logs, records). */
export const ceremonyIdHex = (id: Uint8Array): string => bytesToHex(id);
