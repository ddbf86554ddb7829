/**
 * Signer gateway: the coordinator's side of signing ceremonies (DESIGN §1, §4). The coordinator
 * sequences, the signers execute and enforce: the gateway sends one `StartCeremony` (kind SIGN,
 * control.proto) signed with the coordinator's libp2p Ed25519 key to every party of the signing
 * set — server signers over libp2p `/custodian/control/2` (`@custodian/signer` {@link ControlClient}),
 * mobile signers through the device hub (WebSocket, `devices/hub.ts`) — waits for every party's
 * `CeremonyResult`, and maps them to a {@link GatewaySignResult}. The MPC traffic itself flows between
 * the parties (directly over libp2p between servers, through the coordinator relay for devices),
 * end-to-end signed and encrypted, so the gateway never sees a share or a nonce.
 *
 * Result mapping (first match wins): any party REFUSED → `REFUSED` naming it and the refusal code
 * (the leading `UPPER_CASE` word of its error, e.g. `POLICY_SIGNATURE_VERIFICATION_FAILED`, else the
 * error text), except a transient refusal ({@link TRANSIENT_REFUSALS}: `SIGNING_IN_PROGRESS`); any
 * party ABORTED with blame → `ABORTED` naming the blamed parties in `culprits` (identifiable abort);
 * a party that could not take part — unknown to the directory, not connected, its control stream
 * or WebSocket closed during the ceremony, no answer, a transient refusal (its error, with the
 * code, in `unavailable`) — → `UNAVAILABLE` naming it in `unavailable`; a deadline (the request's,
 * or a party's) → `DEADLINE_EXCEEDED`; a party aborted without blame → `ABORTED` with no culprit
 * (`abortedBy` names the party whose failure ended the ceremony, when one did before the
 * coordinator aborted anyone: not blame); every party OK with the same signatures → `ok` (a
 * disagreement between the parties' signatures is `ABORTED` with no culprit). Only `REFUSED` and
 * `ABORTED` with culprits are definitive; the others say the ceremony may succeed when tried again.
 * A party that cannot take part ends the ceremony on every party at once (AbortCeremony, best
 * effort), as do a deadline and `signal`.
 *
 * ECDSA fast path (control.proto `SignatureShares`; `@custodian/signer` share-combiner.ts): when the
 * request gives the master ECDSA key and chain code (`ecdsaKey`) and every party is a server signer,
 * each signer sends its share of each signature as an interim frame as soon as the share leaves for
 * its co-signers; the gateway combines them and answers `ok` (`combinedByCoordinator`) once every
 * signature verifies under the child key it derives itself — one network hop and the signers' own
 * combination earlier than their results. It trusts no share: shares that do not combine into a
 * valid signature only turn the fast path off, and the parties' results are mapped as below. The
 * results still arrive (and are logged if one is not OK: the signature is valid all the same).
 *
 * Presignature pool (issue 7, 11; signing/presignature-pool.ts): with an {@link SigningAttemptLog},
 * every ceremony is recorded before it starts, and an ECDSA request over ONE digest takes a pooled
 * CGGMP21 presignature of exactly its signing set in that same database transaction (so an id is
 * handed out once, across replicas too); the signers then sign in one round
 * (`SignRequest.presignature_id`). When a signer no longer has the id (refusal `presignature …
 * unknown or already used`: a refresh dropped it, or its store lost it), the other parties are
 * aborted at once and the request is signed cold (presign + sign) in a new ceremony, so a stale
 * pool never fails a transfer.
 */
import { type ControlClient, EcdsaShareCombiner } from '@custodian/signer-client';
import {
  type Approval,
  CeremonyKind,
  type CeremonyResult,
  type ControlResponse,
  KeyAlgorithm,
  Outcome,
  type SignedPolicy,
  type SignRequest,
  type StartCeremony,
  type TransferIntent,
} from '@custodian/wire';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, equalBytes } from '@noble/curves/utils.js';

/** A party of a signing set: a server signer or a mobile device, by the coordinator's record id. */
export interface SignParty {
  kind: 'server' | 'device';
  /** `signer_id` (servers) or `device_id` (devices) of the coordinator's records. */
  id: string;
}

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

/** Outcome of {@link SignerGateway.sign}. */
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
  | { ok: false; reason: 'REFUSED'; refusal: string; by: SignParty }
  /**
   * The protocol aborted. `culprits`: the parties the blame names (identifiable abort: definitive);
   * empty: no party was blamed (aborted by the coordinator or a peer, parties that disagree) — worth
   * another attempt.
   */
  | {
      ok: false;
      reason: 'ABORTED';
      culprits: SignParty[];
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

/** Resolves the coordinator's party records to MPC peer ids (libp2p Ed25519 peer id strings). */
export interface PartyDirectory {
  /**
   * Peer id of a party: a server signer's libp2p peer id, or a device's MPC identity peer id
   * (the Ed25519 key the device announced when it connected).
   * @throws Error when the party is unknown or not usable (removed signer, unapproved device)
   */
  peerIdOf(party: SignParty): Promise<string>;
}

/**
 * Carries a StartCeremony to device parties (implemented by the device hub, `devices/hub.ts`).
 * Absent: device parties are refused with `ABORTED` naming them.
 */
export interface DeviceCeremonyPort {
  /** Run the device's part of a ceremony; resolves with its result (rejects when the device is offline or silent). */
  startCeremony(deviceId: string, start: StartCeremony): Promise<CeremonyResult>;
  /** Best-effort abort. */
  abortCeremony(deviceId: string, ceremonyId: Uint8Array, reason: string): Promise<void>;
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

/** The refusal a signer gives for a pooled presignature id it does not hold (packages/signer ceremonies.ts). */
const STALE_PRESIGNATURE = /^presignature \S+ unknown or already used/;

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
}

const ALGORITHMS = {
  SECP256K1_ECDSA: KeyAlgorithm.SECP256K1_ECDSA,
  SECP256K1_TAPROOT: KeyAlgorithm.SECP256K1_TAPROOT,
  ED25519: KeyAlgorithm.ED25519,
} as const;

/**
 * Refusal codes that say "not now" rather than "no": `SIGNING_IN_PROGRESS` (the signer is still
 * running an earlier ceremony of the same transfer, e.g. one a coordinator that died started; it
 * ends at its result, its abort or its deadline). Mapped to `UNAVAILABLE`, so the pipeline retries.
 */
export const TRANSIENT_REFUSALS: ReadonlySet<string> = new Set(['SIGNING_IN_PROGRESS']);

/** The refusal code of a REFUSED result: its leading UPPER_SNAKE word, else the whole text. */
export function refusalCode(error: string | undefined): string {
  const m = /^([A-Z][A-Z0-9_]{2,})\b/.exec(error ?? '');
  return m?.[1] ?? (error || 'REFUSED');
}

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
  for (const [i, d] of req.digests.entries()) {
    if (!(d instanceof Uint8Array)) throw new TypeError(`digests[${i}]: Uint8Array`);
    if (req.algorithm !== 'ED25519' && d.length !== 32) throw new RangeError(`digests[${i}]: 32 bytes`);
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

/** Run one ceremony on every party; maps server/device dispatch and abort. Shared with the master key client. */
export interface PartyDispatch {
  party: SignParty;
  peerId: string;
}

/**
 * Send `start` to every party and collect the results (a party that fails to answer yields a
 * synthetic ABORTED result with its error). Aborts everywhere when `signal` fires.
 */
export async function dispatchCeremony(
  init: Pick<SignerGatewayInit, 'control' | 'devices' | 'responseSlackMs'>,
  targets: readonly PartyDispatch[],
  start: StartCeremony,
  signal?: AbortSignal,
  /**
   * `abortOnFailure`: abort the ceremony on every party as soon as one party answers anything but
   * OK. `onInterim`: interim frames of server signers (their position in `targets` and the body).
   */
  options: {
    abortOnFailure?: boolean;
    onInterim?: (position: number, response: ControlResponse) => void;
    /** The first party that failed (answered anything but OK, or could not be reached) before any abort by the coordinator. */
    onFirstFailure?: (party: SignParty) => void;
  } = {},
): Promise<{ party: SignParty; result: CeremonyResult; unreachable: boolean }[]> {
  const slack = init.responseSlackMs ?? 10_000;
  const timeoutMs = Math.max(1000, Number(start.deadlineUnixMs) - Date.now() + slack);
  let aborting = false;
  const failed = (party: SignParty) => {
    if (!aborting) options.onFirstFailure?.(party);
    aborting = true;
  };
  const abortAll = (reason: string) => {
    aborting = true;
    for (const t of targets) {
      const p =
        t.party.kind === 'server'
          ? init.control.send(t.peerId, { abort: { ceremonyId: start.ceremonyId, reason } }, 10_000)
          : (init.devices?.abortCeremony(t.party.id, start.ceremonyId, reason) ?? Promise.resolve());
      p.catch(() => undefined);
    }
  };
  const onAbort = () => abortAll(String(signal?.reason ?? 'aborted by the coordinator'));
  signal?.addEventListener('abort', onAbort, { once: true });
  const deadlineTimer = setTimeout(() => abortAll('deadline exceeded'), Math.max(0, timeoutMs - slack + 500));
  deadlineTimer.unref?.();
  // server signers get the same signed request (signed once: the last starts as early as the first)
  const servers = targets.filter((t) => t.party.kind === 'server');
  const onInterim = options.onInterim;
  const serverCalls = new Map(
    init.control
      .startCeremonies(
        servers.map((t) => t.peerId),
        start,
        timeoutMs,
        onInterim ? (i, res) => onInterim(targets.indexOf(servers[i] as PartyDispatch), res) : undefined,
      )
      .map((p, i) => {
        p.catch(() => undefined); // awaited below
        return [servers[i] as PartyDispatch, p] as const;
      }),
  );
  try {
    return await Promise.all(
      targets.map(async (t) => {
        try {
          let result: CeremonyResult;
          if (t.party.kind === 'server') {
            result = await (serverCalls.get(t) as Promise<CeremonyResult>);
          } else {
            if (!init.devices) throw new Error('no device hub configured');
            result = await withTimeout(init.devices.startCeremony(t.party.id, start), timeoutMs);
          }
          if (result.outcome !== Outcome.OK) failed(t.party);
          if (options.abortOnFailure && result.outcome !== Outcome.OK)
            abortAll(`${t.party.kind} ${t.party.id} did not take part`);
          return { party: t.party, result, unreachable: false };
        } catch (e) {
          const msg = e instanceof Error ? e.message : String(e);
          failed(t.party);
          // a party that cannot take part (not reachable, its stream or socket closed, silent):
          // the others cannot finish without it — end the ceremony everywhere now, not at the deadline
          if (options.abortOnFailure) abortAll(`${t.party.kind} ${t.party.id} is unreachable`);
          return {
            party: t.party,
            result: { ceremonyId: start.ceremonyId, outcome: Outcome.ABORTED, error: `unreachable: ${msg}` },
            unreachable: true,
          };
        }
      }),
    );
  } finally {
    clearTimeout(deadlineTimer);
    signal?.removeEventListener('abort', onAbort);
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    t.unref?.();
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
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

/** Random 24-byte ceremony id. */
export function newCeremonyId(): Uint8Array {
  const id = new Uint8Array(24);
  globalThis.crypto.getRandomValues(id);
  return id;
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
        let presignatureId: string | undefined;
        try {
          presignatureId = await init.attempts?.begin(record);
        } catch (e) {
          init.log?.('signing attempt not recorded', { err: e instanceof Error ? e.message : String(e) });
        }
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
            (results) => {
              const late = mapSignResults(req, targets, results);
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
          result = mapSignResults(req, targets, results);
          if (!result.ok && result.reason === 'ABORTED' && result.culprits.length === 0 && firstFailed !== undefined)
            result = { ...result, abortedBy: firstFailed };
          stale =
            presignatureId !== undefined &&
            results.some((r) => r.result.outcome === Outcome.REFUSED && STALE_PRESIGNATURE.test(r.result.error ?? ''));
        }
        if (result.ok && presignatureId !== undefined) result = { ...result, presignatureId };
        const outcome = result.ok
          ? 'OK'
          : stale
            ? 'PRESIGNATURE_UNAVAILABLE'
            : result.reason === 'REFUSED'
              ? `REFUSED:${result.refusal}`
              : result.reason;
        await init.attempts?.finish(record, outcome).catch((e: unknown) => {
          init.log?.('signing attempt outcome not recorded', { err: e instanceof Error ? e.message : String(e) });
        });
        return { result, stale };
      };
      const pooled = req.algorithm === 'SECP256K1_ECDSA' && req.digests.length === 1 && init.attempts !== undefined;
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

/** `UNAVAILABLE` naming `parties`, its message listing each with its error. */
function unavailableResult(parties: UnavailableParty[]): GatewaySignResult {
  return {
    ok: false,
    reason: 'UNAVAILABLE',
    unavailable: parties,
    message: parties.map((u) => `${partyName(u.party)}: ${u.error}`).join('; '),
  };
}

/**
 * Run one CGGMP21 PRESIGN ceremony (kind PRESIGN, `presign_count` = `count`, 1..64) for the
 * ECDSA key `keyId` among exactly `parties` (servers over libp2p, devices through the hub).
 * @returns the presignature ids every party stored (each `<ceremony id hex>.<index>`), or the failure
 */
export async function presignCeremony(
  init: Pick<SignerGatewayInit, 'control' | 'devices' | 'responseSlackMs' | 'directory' | 'prepare'>,
  keyId: string,
  parties: readonly SignParty[],
  count: number,
  deadline: Date,
  signal?: AbortSignal,
): Promise<{ ok: true; ids: string[] } | { ok: false; error: string }> {
  if (!Number.isSafeInteger(count) || count < 1 || count > 64) throw new RangeError('count: 1..64');
  const targets: PartyDispatch[] = [];
  try {
    for (const party of parties) targets.push({ party, peerId: await init.directory.peerIdOf(party) });
    await init.prepare?.(targets);
  } catch (e) {
    return { ok: false, error: `party unavailable: ${e instanceof Error ? e.message : String(e)}` };
  }
  const start: StartCeremony = {
    ceremonyId: newCeremonyId(),
    kind: CeremonyKind.PRESIGN,
    parties: targets.map((t) => ({ peerId: t.peerId })),
    threshold: 0,
    deadlineUnixMs: deadline.getTime(),
    keyId,
    presignCount: count,
  };
  const results = await dispatchCeremony(init, targets, start, signal, { abortOnFailure: true });
  const failed = results.filter((r) => r.result.outcome !== Outcome.OK);
  if (failed.length > 0)
    return {
      ok: false,
      error: failed.map((r) => `${r.party.kind} ${r.party.id}: ${r.result.error || 'failed'}`).join('; '),
    };
  const sets = results.map((r) => new Set(r.result.presignatureIds ?? []));
  const ids = [...(sets[0] ?? [])].filter((id) => sets.every((s) => s.has(id)));
  return ids.length > 0 ? { ok: true, ids } : { ok: false, error: 'the parties stored no common presignature' };
}

/** Map the parties' results of a SIGN ceremony (see the module comment for the precedence). */
export function mapSignResults(
  req: Pick<GatewaySignRequest, 'algorithm' | 'digests'>,
  targets: readonly PartyDispatch[],
  results: readonly { party: SignParty; result: CeremonyResult; unreachable: boolean }[],
): GatewaySignResult {
  const byPeer = new Map(targets.map((t) => [t.peerId, t.party]));
  // a party still signing this transfer in an earlier ceremony refuses for now, not for good
  const busy = (r: (typeof results)[number]) =>
    r.result.outcome === Outcome.REFUSED && TRANSIENT_REFUSALS.has(refusalCode(r.result.error));
  const refused = results.find((r) => r.result.outcome === Outcome.REFUSED && !busy(r));
  if (refused) return { ok: false, reason: 'REFUSED', refusal: refusalCode(refused.result.error), by: refused.party };
  const blamed = results.find((r) => r.result.outcome === Outcome.ABORTED && (r.result.blame?.length ?? 0) > 0);
  if (blamed) {
    const culprits = [
      ...new Map(
        (blamed.result.blame ?? [])
          .map((b) => byPeer.get(b.peerId))
          .filter((p): p is SignParty => p !== undefined)
          .map((p) => [`${p.kind}:${p.id}`, p]),
      ).values(),
    ];
    return { ok: false, reason: 'ABORTED', culprits, message: blamed.result.error ?? 'aborted' };
  }
  // the others' ABORTED answers are the consequence (the coordinator aborted them): name the cause
  const unreachable = results.filter((r) => r.unreachable || busy(r));
  if (unreachable.length > 0)
    return unavailableResult(unreachable.map((r) => ({ party: r.party, error: r.result.error || 'unreachable' })));
  if (results.some((r) => r.result.outcome === Outcome.DEADLINE_EXCEEDED))
    return { ok: false, reason: 'DEADLINE_EXCEEDED' };
  const failed = results.filter((r) => r.result.outcome !== Outcome.OK);
  if (failed.length > 0) {
    return {
      ok: false,
      reason: 'ABORTED',
      culprits: [],
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
  try {
    return {
      ok: true,
      signatures: first.map((s, i) => ({
        signature: Uint8Array.from(s.signature),
        publicKey: Uint8Array.from(s.publicKey),
        ...(req.algorithm === 'SECP256K1_ECDSA'
          ? { recovery: ecdsaRecovery(s.signature, req.digests[i] as Uint8Array, s.publicKey, s.recoveryId ?? 0) }
          : {}),
      })),
    };
  } catch (e) {
    return { ok: false, reason: 'ABORTED', culprits: [], message: e instanceof Error ? e.message : String(e) };
  }
}

/** Hex of a ceremony id (logs, records). */
export const ceremonyIdHex = (id: Uint8Array): string => bytesToHex(id);
