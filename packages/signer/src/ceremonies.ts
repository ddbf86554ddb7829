/**
 * Ceremonies a signer executes on the coordinator's request (DESIGN §4): master key creation,
 * signing, refresh. The coordinator sequences; the signer validates the request itself (party set
 * contains it, known key, threshold, deadline), runs the protocol sessions through the
 * {@link CeremonyRunner}, and persists results in ONE store batch only when every session of the
 * ceremony succeeded — on abort or deadline nothing of the ceremony is kept but its audit record.
 *
 * Master key: FROST(Ed25519, SHA-512) and FROST(secp256k1) for BIP340/Taproot, each with its own
 * joint chain code (packages/frost `dkgProtocol`). CGGMP21 ECDSA keygen + aux-info will be added as
 * two more sessions of the same ceremony when @custodian/cggmp lands (registration in `PROTOCOLS`).
 *
 * Storage (sublevel `shares`): `<keyId>/meta` (JSON {@link KeyRecord}), `<keyId>/<suite>` (FROST key
 * share format v1, packages/frost keyshare.ts). Sublevel `ceremonies`: `<ceremonyIdHex>` JSON audit
 * record. Sublevel `nonces`: FROST nonce commitments seen (replay ledger).
 */
import {
  type AuxInfo,
  auxInfoProtocol,
  type CoreKeyShare,
  combinerShare,
  type KeyShare as EcdsaKeyShare,
  type EcdsaSignature,
  refreshProtocol as ecdsaRefreshProtocol,
  signProtocol as ecdsaSignProtocol,
  keygenProtocol,
  keyShareFromJson,
  keyShareToJson,
  type Presignature,
  presignProtocol,
  validateKeyShare as validateEcdsaKeyShare,
} from '@custodian/cggmp';
import {
  bytesToHex,
  canonicalEncode,
  ckdPubSecp256k1,
  type Secp256k1ChildNode,
  type Secp256k1Point,
  secp256k1Group,
} from '@custodian/crypto';
import {
  decodeKeyShare,
  dkgProtocol,
  encodeKeyShare,
  type KeyShare,
  type NonceLedger,
  refreshProtocol,
  type SignOutput,
  type SuiteName,
  signProtocol,
} from '@custodian/frost';
import {
  CeremonyKind,
  type CeremonyResult,
  CONTROL_VERSION,
  type ControlRequest,
  type ControlResponse,
  KeyAlgorithm,
  Outcome,
  type PublicKeyInfo,
  type RefusalCode,
  refusalValue,
  type SignatureInfo,
  type SignatureSharesWire,
  type StartCeremony,
} from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { sha256 } from '@noble/hashes/sha2.js';
import type { Logger } from 'pino';
import type { ChainsConfig } from './config.js';
import { type EnforcementVerdict, EvidenceRefused, enforceTransferEvidence } from './enforce.js';
import { SignerError } from './errors.js';
import { type RollbackRecord, rollbackRefusal } from './generation.js';
import {
  deletePresignatures,
  heldPresignatures,
  type PreparedPresignatures,
  presignaturePuts,
  takePresignature,
} from './presignatures.js';
import type { StoredPrimePool } from './primes.js';
import type { CeremonyRunner, SessionOutcome, SessionParty } from './runner.js';
import type { SecureStore, StoreOp } from './store.js';

/** Public description of a master key held by this signer. */
export interface KeyRecord {
  readonly keyId: string;
  readonly threshold: number;
  /** Peer ids of the key's parties, in DKG order (party i has FROST identifier i+1). */
  readonly parties: readonly string[];
  readonly keys: readonly { algorithm: number; suite: SuiteName | 'cggmp'; publicKey: string; chainCode: string }[];
  readonly epoch: number;
  readonly createdAt: string;
  /**
   * The key's approver devices (its mobile signers' P-256 keys, compressed hex), from
   * StartCeremony.approver_devices of the master key ceremony: the only devices whose transfer
   * approvals this signer accepts (enforce.ts).
   */
  readonly approverDevices?: readonly { deviceId: string; publicKey: string }[];
}

/** Longest deadline accepted (the master key ceremony's 5 minutes, seed §8, plus slack). */
export const MAX_DEADLINE_MS = 10 * 60_000;

const FROST_SUITES: readonly { suite: SuiteName; algorithm: number }[] = [
  { suite: 'ed25519', algorithm: KeyAlgorithm.ED25519 },
  { suite: 'secp256k1-tr', algorithm: KeyAlgorithm.SECP256K1_TAPROOT },
];

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * FROST nonce-commitment ledger backed by the store (sublevel `nonces`, key: the commitment's
 * encoded point in hex, empty value), loaded at start. The signing round that computes this
 * signer's share (packages/frost sign.ts, RFC 9591 §5.2) {@link add}s every commitment of the
 * session, its own included; the runner then holds the share until {@link persist}'s synced batch
 * is durable (`SessionParams.beforeRelease`), so a crash after the share left can never forget
 * the nonce it used: after a restart a repeated own commitment (an RNG failure, a VM snapshot
 * restored) is refused by `signProtocol` before any share is computed.
 */
export class StoredNonceLedger implements NonceLedger {
  private readonly seen = new Set<string>();
  /** Added, not yet handed to a batch. */
  private readonly fresh = new Set<string>();
  /** Batches under way (scheduled or being written). */
  private readonly writing = new Set<Promise<void>>();
  #scheduled: Promise<void> | undefined;
  constructor(private readonly store: SecureStore) {}
  async load(): Promise<void> {
    for (const k of await this.store.keys('nonces')) this.seen.add(k);
  }
  has(h: string): boolean {
    return this.seen.has(h);
  }
  add(h: string): void {
    if (!this.seen.has(h)) this.fresh.add(h);
    this.seen.add(h);
  }
  /**
   * Make every commitment added so far durable: one synced batch (LevelDB `sync: true`) with the
   * entries added in this turn of the event loop (the rounds of concurrent sessions share it).
   * @returns a promise that resolves once every entry added before the call is durable, or
   *   undefined when all of them already are; it rejects when the write fails (the entries are
   *   then written by a later call)
   */
  persist(): Promise<void> | undefined {
    if (this.fresh.size > 0 && !this.#scheduled) {
      const w = new Promise<void>((r) => setImmediate(r)).then(async () => {
        this.#scheduled = undefined;
        const keys = [...this.fresh];
        this.fresh.clear();
        try {
          await this.store.batch(
            keys.map((k): StoreOp => ({ type: 'put', sublevel: 'nonces', key: k, value: new Uint8Array(0) })),
          );
        } catch (e) {
          for (const k of keys) this.fresh.add(k);
          throw e;
        }
      });
      this.#scheduled = w;
      this.writing.add(w);
      const done = () => this.writing.delete(w);
      w.then(done, done);
    }
    if (this.writing.size === 0) return undefined;
    return Promise.all([...this.writing]).then(() => undefined);
  }
  /** {@link persist} and wait (nothing to do when every entry is durable). */
  async flush(): Promise<void> {
    await this.persist();
  }
}

/** What ceremonies need from the node. */
export interface CeremonyContext {
  readonly store: SecureStore;
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
   * Transfer evidence enforcement (enforce.ts, DESIGN §1: signers enforce): when set, every sign
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
   * The store's latest detected rollback (generation.ts `startGeneration`): with enforcement, sign
   * requests it does not allow are refused with `STORE_ROLLED_BACK` ({@link rollbackRefusal}).
   */
  readonly rollback?: RollbackRecord;
}

/**
 * A refusal: the request is invalid for this signer. `refusal` (a code of the wire catalogue,
 * default REQUEST_INVALID) travels as the REFUSED result's `refusal`, the message as its `error`.
 */
class Refused extends SignerError {
  constructor(
    message: string,
    readonly refusal: RefusalCode = 'REQUEST_INVALID',
  ) {
    super('REQUEST_REFUSED', message);
  }
}

/** The REFUSED (a {@link Refused}) or ABORTED result of a request that failed with `e`. */
function refusedOrAborted(ceremonyId: Uint8Array, e: unknown): CeremonyResult {
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

function toSessionParties(peerIds: readonly string[]): SessionParty[] {
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

/** Read a key's public record. */
export async function loadKeyRecord(store: SecureStore, keyId: string): Promise<KeyRecord | undefined> {
  const b = await store.get('shares', `${keyId}/meta`);
  return b ? (JSON.parse(dec.decode(b)) as KeyRecord) : undefined;
}

/** {@link loadKeyRecord} through the node's record cache. */
async function keyRecord(ctx: CeremonyContext, keyId: string): Promise<KeyRecord | undefined> {
  const hit = ctx.recordCache?.get(keyId);
  if (hit) return hit;
  const rec = await loadKeyRecord(ctx.store, keyId);
  if (rec) ctx.recordCache?.set(keyId, rec);
  return rec;
}

/** All key records held. */
export async function listKeys(store: SecureStore): Promise<KeyRecord[]> {
  const out: KeyRecord[] = [];
  for (const k of await store.keys('shares')) {
    if (!k.endsWith('/meta')) continue;
    const r = await loadKeyRecord(store, k.slice(0, -'/meta'.length));
    if (r) out.push(r);
  }
  return out;
}

function publicKeys(rec: KeyRecord): PublicKeyInfo[] {
  return rec.keys.map((k) => ({
    algorithm: k.algorithm,
    publicKey: hexBytes(k.publicKey),
    chainCode: hexBytes(k.chainCode),
  }));
}

function hexBytes(h: string): Uint8Array {
  return Uint8Array.from(Buffer.from(h, 'hex'));
}

function blameOf(outcome: SessionOutcome<unknown>, parties: readonly SessionParty[]): CeremonyResult['blame'] {
  if (outcome.status === 'aborted') {
    return outcome.aborted.culprits.map((c) => ({
      party: c.party,
      peerId: parties[c.party]?.peerId ?? '',
      reason: c.reason,
    }));
  }
  return [];
}

function combinedTranscript(ceremonyId: Uint8Array, outs: readonly SessionOutcome<unknown>[]): Uint8Array {
  return sha256(
    canonicalEncode([
      'custodian/v1/ceremony-transcript',
      ceremonyId,
      outs.map((o) => (o.status === 'ok' ? o.transcriptHash : new Uint8Array(0))),
    ]),
  );
}

function failure(
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

function record(ceremonyId: Uint8Array, start: StartCeremony, result: CeremonyResult, pending = false): StoreOp {
  const value = {
    ...(pending ? { pending: true } : {}),
    ceremonyId: bytesToHex(ceremonyId),
    kind: start.kind,
    parties: start.parties.map((p) => p.peerId),
    threshold: start.threshold,
    keyId: result.keyId ?? start.keyId ?? start.sign?.keyId ?? '',
    outcome: result.outcome,
    transcriptHash: result.transcriptHash ? bytesToHex(result.transcriptHash) : '',
    blame: result.blame ?? [],
    error: result.error ?? '',
    at: new Date().toISOString(),
  };
  return { type: 'put', sublevel: 'ceremonies', key: bytesToHex(ceremonyId), value: enc.encode(JSON.stringify(value)) };
}

/**
 * What must be durable before this signer's signature share leaves the process (DESIGN §3): the
 * ceremony's pending record (the ceremony id is then used for good) and, with enforcement, the
 * transfer's ledger entry (so a share never leaves unaccounted, even if the peers then abort). One
 * synced batch, written once; a pooled ECDSA signature writes it together with the presignature's
 * deletion. `ready` is the check that the ceremony id is unused (read while the request is
 * prepared); nothing is written before it passes.
 */
class ReleaseGate {
  #written: Promise<void> | undefined;
  #done = false;
  readonly #submitted: { promise: Promise<void>; resolve: () => void };
  constructor(
    private readonly store: SecureStore,
    private readonly ready: Promise<void>,
    private readonly ops: readonly StoreOp[],
  ) {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    this.#submitted = { promise, resolve };
  }

  /** Has the batch been written? */
  get written(): boolean {
    return this.#done;
  }

  /** Wait for a write that was started (success or not). */
  async settled(): Promise<void> {
    await this.#written?.catch(() => undefined);
  }

  /**
   * Resolves once the batch has been handed to the store (its synced write under way) or has
   * failed before that; never rejects. Awaiting it before CPU-bound work (deriving the path,
   * computing the share) lets the write run during that work: the callbacks that start it (the
   * ceremony id check) would otherwise wait for the work to end.
   */
  get submitted(): Promise<void> {
    return this.#submitted.promise;
  }

  /** Write the batch with `extra` ops (the first caller's extra only); later calls await the same write. */
  commit(extra: readonly StoreOp[] = []): Promise<void> {
    this.#written ??= (async () => {
      try {
        await this.ready;
        const writing = this.store.batch([...extra, ...this.ops]);
        this.#submitted.resolve();
        await writing;
        this.#done = true;
      } finally {
        this.#submitted.resolve();
      }
    })();
    return this.#written;
  }
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

/** Ceremony ids being run, per store (a second request with the same id is refused at once). */
const running = new WeakMap<SecureStore, Set<string>>();

/**
 * Execute a StartCeremony request. Never throws for bad requests or failed protocols: the result
 * says REFUSED, ABORTED (with blame) or DEADLINE_EXCEEDED. A key ceremony writes one store batch:
 * its outputs (only on success) together with its audit record. A signing ceremony writes its
 * pending record and ledger entry before its first share leaves ({@link ReleaseGate}, synced) and
 * its final record after, while the answer goes out (not synced and not awaited: the pending one
 * is durable; the store's close waits for it); one that fails before any share left writes only
 * the final record, synced, before answering.
 */
export async function runCeremony(
  ctx: CeremonyContext,
  start: StartCeremony,
  hooks: CeremonyHooks = {},
): Promise<CeremonyResult> {
  const ceremonyId = start.ceremonyId instanceof Uint8Array ? start.ceremonyId : new Uint8Array(0);
  const idHex = bytesToHex(ceremonyId);
  const log = ctx.log.child({ ceremony: idHex.slice(0, 16), kind: start.kind });
  let ids = running.get(ctx.store);
  if (!ids) running.set(ctx.store, (ids = new Set()));
  let gate: ReleaseGate | undefined;
  let claimed = false;
  try {
    if (ceremonyId.length < 16 || ceremonyId.length > 64) throw new Refused('ceremonyId: 16..64 bytes');
    if (ids.has(idHex)) throw new Refused('ceremony id already used');
    ids.add(idHex);
    claimed = true;
    // read while the request is prepared; awaited before anything is written
    const unused = ctx.store.get('ceremonies', idHex).then((v) => {
      if (v) throw new Refused('ceremony id already used');
    });
    unused.catch(() => undefined);
    if (start.kind !== CeremonyKind.SIGN) await unused;
    const now = Date.now();
    const deadline = Number(start.deadlineUnixMs);
    if (!Number.isSafeInteger(deadline) || deadline <= now || deadline > now + MAX_DEADLINE_MS) {
      throw new Refused('deadline: must be in the future and at most 10 minutes away');
    }
    const parties = toSessionParties(start.parties.map((p) => p.peerId));
    const self = parties.findIndex((p) => p.peerId === ctx.selfPeerId);
    if (self < 0) throw new Refused('this signer is not in the party set');
    log.info({ parties: parties.length, threshold: start.threshold }, 'ceremony started');
    let result: CeremonyResult;
    let ops: StoreOp[];
    let verdict: EnforcementVerdict | undefined;
    let stored: (() => void) | undefined;
    switch (start.kind) {
      case CeremonyKind.MASTER_KEY:
        ({ result, ops } = await masterKey(ctx, start, ceremonyId, parties, self, deadline));
        break;
      case CeremonyKind.SIGN: {
        verdict = await enforce(ctx, start);
        try {
          const pending = record(ceremonyId, start, { ceremonyId, outcome: Outcome.UNSPECIFIED }, true);
          gate = new ReleaseGate(ctx.store, unused, [...(verdict?.ledgerOps ?? []), pending]);
          ({ result, ops } = await sign(ctx, start, ceremonyId, parties, self, deadline, gate, hooks));
          await unused; // a duplicate id that failed before its gate must not overwrite the old record
          const final = [...ops, record(ceremonyId, start, result)];
          if (gate.written && ops.length === 0) {
            // the pending record is durable: the outcome is written while the answer goes out
            // (a crash in between leaves the pending record, which says what was released)
            void ctx.store.batchLater(final, { sync: false }).catch((err: unknown) => {
              log.error({ err: err instanceof Error ? err.message : String(err) }, 'final ceremony record not written');
            });
          } else {
            await ctx.store.batch(final);
          }
        } finally {
          verdict?.release();
        }
        break;
      }
      case CeremonyKind.PRESIGN:
        ({ result, ops, stored } = await presign(ctx, start, ceremonyId, parties, deadline));
        break;
      case CeremonyKind.REFRESH:
        // the key's presignatures are deleted with the new shares: none is taken from memory meanwhile
        ctx.prepared?.forgetKey(start.keyId ?? '');
        ({ result, ops } = await refresh(ctx, start, ceremonyId, parties, self, deadline));
        break;
      default:
        throw new Refused(`kind: unsupported ceremony kind ${start.kind}`);
    }
    if (start.kind !== CeremonyKind.SIGN) await ctx.store.batch([...ops, record(ceremonyId, start, result)]);
    stored?.();
    if (start.kind === CeremonyKind.REFRESH && ctx.shareCache) {
      for (const k of [...ctx.shareCache.keys()]) if (k.startsWith(`${start.keyId}/`)) ctx.shareCache.delete(k);
    }
    if (start.kind === CeremonyKind.REFRESH) {
      ctx.prepared?.forgetKey(start.keyId ?? '');
      ctx.recordCache?.delete(start.keyId ?? '');
    }
    await ctx.nonceLedger.flush();
    // only key creation and refresh consume safe primes (a refill scans the pool)
    if (ctx.primePool && (start.kind === CeremonyKind.MASTER_KEY || start.kind === CeremonyKind.REFRESH))
      ctx.primePool.fill(ctx.primePoolTarget ?? 0);
    log.info({ outcome: result.outcome, blame: result.blame }, 'ceremony finished');
    return result;
  } catch (e) {
    if (!(e instanceof Refused)) {
      log.error({ err: e instanceof Error ? e.message : String(e) }, 'ceremony failed');
    } else {
      log.warn({ reason: e.message }, 'ceremony refused');
    }
    const result = refusedOrAborted(ceremonyId, e);
    // a pending record (shares may have left) gets its outcome
    await gate?.settled();
    if (gate?.written) {
      await ctx.store.batch([record(ceremonyId, start, result)], { sync: false }).catch((err: unknown) => {
        log.error({ err: err instanceof Error ? err.message : String(err) }, 'final ceremony record not written');
      });
    }
    return result;
  } finally {
    if (claimed) ids.delete(idHex);
  }
}

/**
 * Enforcement of a sign request (enforce.ts), then the rollback rule (generation.ts
 * `rollbackRefusal`, code `STORE_ROLLED_BACK`); a refusal becomes a REFUSED result whose `refusal`
 * is the code and whose `error` text starts with it (`DIGEST_MISMATCH: …`). Without `ctx.enforcement` the request is
 * refused (`ENFORCEMENT_NOT_CONFIGURED`) unless `ctx.allowUnenforcedSigning` opts out (then
 * undefined: nothing is checked nor written to the ledger).
 */
async function enforce(ctx: CeremonyContext, start: StartCeremony): Promise<EnforcementVerdict | undefined> {
  if (!ctx.enforcement) {
    if (ctx.allowUnenforcedSigning === true) return undefined;
    throw new Refused(
      'ENFORCEMENT_NOT_CONFIGURED: this signer trusts no Admin device (trustedAdminDevices) and does not allow unenforced signing',
      'ENFORCEMENT_NOT_CONFIGURED',
    );
  }
  const req = start.sign;
  if (!req) throw new Refused('sign: missing sign request');
  const rec = await keyRecord(ctx, req.keyId);
  if (!rec) throw new Refused(`unknown key ${req.keyId}`, 'KEY_UNKNOWN');
  const approverKeys = new Map((rec.approverDevices ?? []).map((d) => [d.deviceId, d.publicKey]));
  let verdict: EnforcementVerdict;
  const now = new Date(); // one clock reading for both rules
  try {
    verdict = await enforceTransferEvidence(
      ctx.store,
      req,
      {
        trustedAdminKeys: ctx.enforcement.trustedAdminKeys,
        approverKeys,
        chains: ctx.enforcement.chains ?? {},
        keys: rec.keys,
      },
      now,
    );
  } catch (e) {
    if (e instanceof EvidenceRefused) throw new Refused(e.message, e.code);
    throw e;
  }
  // after a detected restore of the store: nothing its rolled-back ledger cannot vouch for
  if (ctx.rollback) {
    let dailyLimit: string | null | undefined;
    try {
      dailyLimit = (JSON.parse(req.evidence?.policyJson ?? '') as { document?: { daily_limit?: string | null } })
        .document?.daily_limit;
    } catch {
      dailyLimit = undefined; // enforce accepted the request: a policy it parsed is there
    }
    const refusal = rollbackRefusal(ctx.rollback, verdict.intent, dailyLimit, now);
    if (refusal) {
      verdict.release();
      throw new Refused(refusal, 'STORE_ROLLED_BACK');
    }
  }
  return verdict;
}

async function masterKey(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  self: number,
  deadline: number,
): Promise<{ result: CeremonyResult; ops: StoreOp[] }> {
  const t = start.threshold;
  if (!Number.isSafeInteger(t) || t < 2 || t > parties.length)
    throw new Refused(`threshold: ${t} not in [2, ${parties.length}]`);
  const keyId = bytesToHex(ceremonyId);
  if (await loadKeyRecord(ctx.store, keyId)) throw new Refused('key id already exists');
  const approverDevices = (start.approverDevices ?? []).map((d, i) => {
    if (typeof d.deviceId !== 'string' || d.deviceId === '' || !(d.publicKey instanceof Uint8Array)) {
      throw new Refused(`approverDevices[${i}]: device id and public key required`);
    }
    if (d.publicKey.length !== 33) throw new Refused(`approverDevices[${i}]: 33-byte compressed P-256 key`);
    return { deviceId: d.deviceId, publicKey: bytesToHex(d.publicKey) };
  });
  const requested = start.algorithms && start.algorithms.length > 0 ? new Set(start.algorithms) : undefined;
  const frostSuites = FROST_SUITES.filter((s) => !requested || requested.has(s.algorithm));
  const ecdsa = requested ? requested.has(KeyAlgorithm.SECP256K1_ECDSA) : ctx.primePool !== undefined;
  for (const a of requested ?? []) {
    if (![KeyAlgorithm.ED25519, KeyAlgorithm.SECP256K1_TAPROOT, KeyAlgorithm.SECP256K1_ECDSA].includes(a as 1)) {
      throw new Refused(`algorithms: unknown algorithm ${a}`);
    }
  }
  let primes: { p: bigint; q: bigint; keys: string[] } | undefined;
  if (ecdsa) {
    if (!ctx.primePool)
      throw new Refused('ECDSA requested but this signer has no prime pool configured', 'PRIME_POOL_NOT_CONFIGURED');
    primes = await ctx.primePool.take();
    if (!primes) throw new Refused('prime pool empty: retry when it has refilled', 'PRIME_POOL_EMPTY');
  }
  const pool = ctx.primePool;
  const primeKeys = primes?.keys ?? [];
  try {
    const common = { parties, self, secretKey: ctx.secretKey, deadline, group: keyId };
    const frost = Promise.all(
      frostSuites.map(({ suite }) =>
        ctx.runner.run<KeyShare>({
          ...common,
          sessionId: sessionId(ceremonyId, `frost.dkg.${suite}`),
          spec: dkgProtocol({ suite, threshold: t }),
          label: `frost.dkg.${suite}`,
        }),
      ),
    );
    const cggmp = primes
      ? Promise.all([
          ctx.runner.run<CoreKeyShare>({
            ...common,
            sessionId: sessionId(ceremonyId, 'cggmp.keygen'),
            spec: keygenProtocol({ t }),
            label: 'cggmp.keygen',
          }),
          ctx.runner.run<AuxInfo>({
            ...common,
            sessionId: sessionId(ceremonyId, 'cggmp.aux'),
            spec: auxInfoProtocol({
              level: (pool as StoredPrimePool).level,
              primes: { p: primes.p, q: primes.q },
              checkPrimality: false,
            }),
            label: 'cggmp.aux',
          }),
        ] as const)
      : Promise.resolve(undefined);
    const [frostOuts, cggmpOuts] = await Promise.all([frost, cggmp]);
    const outs: SessionOutcome<unknown>[] = [...frostOuts, ...(cggmpOuts ?? [])];
    const consumed = pool ? pool.consumeOps(primeKeys) : [];
    if (!outs.every((o) => o.status === 'ok')) return { result: failure(ceremonyId, outs, parties), ops: consumed };
    const shares = frostOuts.map((o) => (o as { output: KeyShare }).output);
    const keys: { algorithm: number; suite: SuiteName | 'cggmp'; publicKey: string; chainCode: string }[] = shares.map(
      (s, i) => ({
        algorithm: (frostSuites[i] as { algorithm: number }).algorithm,
        suite: s.suite,
        publicKey: bytesToHex(s.groupPublicKey),
        chainCode: bytesToHex(s.chainCode),
      }),
    );
    const ops: StoreOp[] = [
      ...consumed,
      ...shares.map(
        (s): StoreOp => ({ type: 'put', sublevel: 'shares', key: `${keyId}/${s.suite}`, value: encodeKeyShare(s) }),
      ),
    ];
    if (cggmpOuts) {
      const ecdsaShare = validateEcdsaKeyShare({
        core: (cggmpOuts[0] as { output: CoreKeyShare }).output,
        aux: (cggmpOuts[1] as { output: AuxInfo }).output,
      });
      keys.push({
        algorithm: KeyAlgorithm.SECP256K1_ECDSA,
        suite: 'cggmp',
        publicKey: bytesToHex(secp256k1Group.encodePoint(ecdsaShare.core.publicKey)),
        chainCode: bytesToHex(ecdsaShare.core.chainCode),
      });
      ops.push({
        type: 'put',
        sublevel: 'shares',
        key: `${keyId}/cggmp`,
        value: enc.encode(JSON.stringify(keyShareToJson(ecdsaShare))),
      });
    }
    const rec: KeyRecord = {
      keyId,
      threshold: t,
      parties: parties.map((p) => p.peerId),
      keys,
      epoch: 0,
      createdAt: new Date().toISOString(),
      approverDevices,
    };
    ops.push({ type: 'put', sublevel: 'shares', key: `${keyId}/meta`, value: enc.encode(JSON.stringify(rec)) });
    return {
      result: {
        ceremonyId,
        outcome: Outcome.OK,
        keyId,
        publicKeys: publicKeys(rec),
        transcriptHash: combinedTranscript(ceremonyId, outs),
      },
      ops,
    };
  } catch (e) {
    // the primes were not consumed by a batch: give them back only if no session saw them
    if (pool) pool.release(primeKeys);
    throw e;
  }
}

async function loadEcdsaShare(ctx: CeremonyContext, keyId: string): Promise<EcdsaKeyShare> {
  const cached = ctx.shareCache?.get(`${keyId}/cggmp`);
  if (cached) return cached as EcdsaKeyShare;
  const b = await ctx.store.get('shares', `${keyId}/cggmp`);
  if (!b) throw new Refused(`no ECDSA share for key ${keyId}`, 'KEY_UNKNOWN');
  const share = keyShareFromJson(JSON.parse(dec.decode(b)));
  ctx.shareCache?.set(`${keyId}/cggmp`, share);
  return share;
}

async function loadShare(ctx: CeremonyContext, keyId: string, suite: SuiteName): Promise<KeyShare> {
  const cached = ctx.shareCache?.get(`${keyId}/${suite}`);
  if (cached) return cached as KeyShare;
  const b = await ctx.store.get('shares', `${keyId}/${suite}`);
  if (!b) throw new Refused(`no ${suite} share for key ${keyId}`, 'KEY_UNKNOWN');
  const share = decodeKeyShare(b);
  ctx.shareCache?.set(`${keyId}/${suite}`, share);
  return share;
}

async function sign(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  self: number,
  deadline: number,
  gate: ReleaseGate,
  hooks: CeremonyHooks,
): Promise<{ result: CeremonyResult; ops: StoreOp[] }> {
  const req = start.sign;
  if (!req) throw new Refused('sign: missing sign request');
  const rec = await keyRecord(ctx, req.keyId);
  if (!rec) throw new Refused(`unknown key ${req.keyId}`, 'KEY_UNKNOWN');
  const entry = rec.keys.find((k) => k.algorithm === req.algorithm);
  if (!entry) throw new Refused(`key ${req.keyId} has no key for algorithm ${req.algorithm}`, 'KEY_UNKNOWN');
  if (parties.length < rec.threshold) throw new Refused(`need at least ${rec.threshold} signers`);
  if (entry.suite === 'cggmp') return ecdsaSign(ctx, start, ceremonyId, parties, deadline, rec, gate, hooks);
  const signers = parties.map((p, i) => {
    const pos = rec.parties.indexOf(p.peerId);
    if (pos < 0) throw new Refused(`parties[${i}]: not a party of key ${req.keyId}`);
    return BigInt(pos + 1);
  });
  const digests = req.digests ?? [];
  if (digests.length < 1 || digests.length > 64) throw new Refused('digests: 1..64 expected');
  if (entry.suite === 'secp256k1-tr' && digests.some((d) => d.length !== 32))
    throw new Refused('digests: 32 bytes for Taproot');
  const path = req.derivationPath ?? [];
  if (path.some((i) => !Number.isSafeInteger(i) || i < 0 || i >= 0x8000_0000))
    throw new Refused('derivationPath: non-hardened indices only');
  const share = await loadShare(ctx, req.keyId, entry.suite as SuiteName);
  const merkleRoot = req.taprootMerkleRoot ?? new Uint8Array(0);
  if (merkleRoot.length !== 0 && merkleRoot.length !== 32) throw new Refused('taprootMerkleRoot: empty or 32 bytes');
  // wallet P2TR outputs are BIP86 (key path, no script tree): an enforcing signer tweaks with nothing else
  if (ctx.enforcement && merkleRoot.length !== 0)
    throw new Refused(
      'DIGEST_MISMATCH: taprootMerkleRoot: wallet P2TR outputs have no script tree (BIP86)',
      'DIGEST_MISMATCH',
    );
  await gate.commit();
  const outs = await Promise.all(
    digests.map((digest, i) =>
      ctx.runner.run<SignOutput>({
        sessionId: sessionId(ceremonyId, `frost.sign.${i}`),
        spec: signProtocol({
          keyShare: share,
          signers,
          message: Uint8Array.from(digest),
          nonceLedger: ctx.nonceLedger,
          ...(path.length > 0 ? { derivationPath: path } : {}),
          ...(entry.suite === 'secp256k1-tr' ? { taproot: { merkleRoot: Uint8Array.from(merkleRoot) } } : {}),
        }),
        parties,
        self,
        secretKey: ctx.secretKey,
        deadline,
        label: `frost.sign.${entry.suite}.${i}`,
        group: bytesToHex(ceremonyId),
        // the round computing the share records the session's nonce commitments: durable first
        beforeRelease: () => ctx.nonceLedger.persist(),
      }),
    ),
  );
  if (!outs.every((o) => o.status === 'ok')) return { result: failure(ceremonyId, outs, parties), ops: [] };
  const signatures: SignatureInfo[] = outs.map((o, i) => {
    const out = (o as { output: SignOutput }).output;
    return {
      algorithm: req.algorithm,
      digest: digests[i] as Uint8Array,
      signature: out.signature,
      publicKey: out.verifyingKey,
    };
  });
  return {
    result: {
      ceremonyId,
      outcome: Outcome.OK,
      keyId: req.keyId,
      signatures,
      transcriptHash: combinedTranscript(ceremonyId, outs),
    },
    ops: [],
  };
}

/** Entries of {@link derivedChild}'s memo (≈ 300 bytes each). */
const DERIVATION_CACHE_LIMIT = 4096;
const derivations = new Map<string, Secp256k1ChildNode>();
const rootIds = new WeakMap<Secp256k1Point, { hex: string; encoded: Uint8Array }>();

/**
 * The child key of a non-hardened BIP32 path (`deriveSecp256k1`: point, encoding, chain code and
 * additive tweak δ), memoised per key and path prefix: derivation is public data, each level costs
 * a multiplication, an HMAC and an encoding (≈ 0.2 ms), and a wallet signs under the same few
 * prefixes (and hot addresses) again and again. The path is derived one level at a time
 * (`ckdPubSecp256k1`) from its longest memoised prefix, which gives the same child (CKDpub
 * composes: the tweaks add up); the master point is used as it is, never decoded again.
 * @param publicKey the master key (a validated point, e.g. a key share's Y)
 * @param chainCode its chain code, 32 bytes
 * @throws as `ckdPubSecp256k1` (a hardened index, an invalid child)
 */
export function derivedChild(
  publicKey: Secp256k1Point,
  chainCode: Uint8Array,
  path: readonly number[],
): Secp256k1ChildNode {
  let id = rootIds.get(publicKey);
  if (!id) {
    const encoded = secp256k1Group.encodePoint(publicKey);
    id = { hex: bytesToHex(encoded), encoded };
    rootIds.set(publicKey, id);
  }
  const root = `${id.hex}.${bytesToHex(chainCode)}`;
  let k = path.length;
  let node: Secp256k1ChildNode | undefined;
  for (; k > 0 && !node; k--) node = derivations.get(`${root}/${path.slice(0, k).join('/')}`);
  if (node) k++;
  let cur: Secp256k1ChildNode = node ?? { point: publicKey, publicKey: id.encoded, chainCode, tweak: 0n };
  for (let j = k; j < path.length; j++) {
    cur = ckdPubSecp256k1(cur, path[j] as number, j + 1);
    if (derivations.size >= DERIVATION_CACHE_LIMIT) derivations.delete(derivations.keys().next().value as string);
    derivations.set(`${root}/${path.slice(0, j + 1).join('/')}`, cur);
  }
  return cur;
}

/**
 * CGGMP21 ECDSA signing, cold: one presigning (3 rounds) then the one-round signing per digest.
 * Runtime parties are ordered by key index (the presigning protocol's signing set is ascending).
 * The presignature lives only in memory and is consumed by the signing protocol before σ_i leaves.
 */
async function ecdsaSign(
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
  const share = await loadEcdsaShare(ctx, req.keyId);
  const { signers, ordered, self } = signingSet(ctx, rec, parties);
  const pooled = req.presignatureId ?? '';
  if (pooled !== '' && digests.length !== 1) throw new Refused('presignatureId: signs exactly one digest');
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
  const derived = path.length > 0 ? derivedChild(share.core.publicKey, share.core.chainCode, path) : undefined;
  const tweak = derived?.tweak ?? 0n;
  const common = { parties: ordered, self, secretKey: ctx.secretKey, deadline, group: bytesToHex(ceremonyId) };
  let deleted: Promise<void> | undefined;
  const outs = await Promise.all(
    digests.map(async (digest, i): Promise<SessionOutcome<EcdsaSignature>> => {
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
  if (!outs.every((o) => o.status === 'ok')) return { result: failure(ceremonyId, outs, ordered), ops: [] };
  const signatures: SignatureInfo[] = outs.map((o, i) => {
    const sig = (o as { output: EcdsaSignature }).output;
    return {
      algorithm: req.algorithm,
      digest: digests[i] as Uint8Array,
      signature: sig.compact,
      publicKey: sig.publicKey,
      recoveryId: sig.recovery,
    };
  });
  return {
    result: {
      ceremonyId,
      outcome: Outcome.OK,
      keyId: req.keyId,
      signatures,
      transcriptHash: combinedTranscript(ceremonyId, outs),
    },
    ops: [],
  };
}

/** Order a signing subset by key index (CGGMP21 signing sets are ascending key indices). */
function signingSet(ctx: CeremonyContext, rec: KeyRecord, parties: readonly SessionParty[]) {
  const byIndex = parties.map((p) => ({ p, k: rec.parties.indexOf(p.peerId) })).sort((a, b) => a.k - b.k);
  if (byIndex.some((x) => x.k < 0)) throw new Refused('parties: not all are parties of the key');
  if (byIndex.length < rec.threshold) throw new Refused(`need at least ${rec.threshold} signers`);
  const ordered = byIndex.map((x) => x.p);
  return { signers: byIndex.map((x) => x.k), ordered, self: ordered.findIndex((p) => p.peerId === ctx.selfPeerId) };
}

/** A presignature id: `<ceremony id hex (16..64 bytes)>.<index 0..63>`. */
const PRESIGNATURE_ID = /^(?:[0-9a-f]{2}){16,64}\.(?:[0-9]|[1-5][0-9]|6[0-3])$/;

/**
 * Answer the coordinator's presignature reconciliation requests (control.proto
 * `PresignatureInventory`, `DeletePresignatures`; presignatures.ts {@link heldPresignatures},
 * {@link deletePresignatures}): the signing set is given as the parties' peer ids (any order),
 * which must be parties of the key (with this signer among them, at least the threshold). Ids and
 * ages only, never contents; an id a SIGN is taking is neither listed nor deleted. Counts are
 * logged, not ids.
 * @returns the answer, or a REFUSED result naming the problem (unknown key, no ECDSA key, a party
 *   not of the key, a malformed id)
 */
export async function presignatureControl(
  ctx: CeremonyContext,
  req: Pick<ControlRequest, 'presignatureInventory' | 'deletePresignatures'>,
): Promise<ControlResponse> {
  const body = req.presignatureInventory ?? req.deletePresignatures;
  try {
    if (!body) throw new Refused('no presignature request');
    const keyId = body.keyId ?? '';
    if (keyId === '' || keyId.includes('/') || keyId.length > 128) throw new Refused('keyId: malformed');
    const rec = await keyRecord(ctx, keyId);
    if (!rec) throw new Refused(`unknown key ${keyId}`, 'KEY_UNKNOWN');
    if (!rec.keys.some((k) => k.suite === 'cggmp')) throw new Refused(`key ${keyId} has no ECDSA key`, 'KEY_UNKNOWN');
    const parties = toSessionParties((body.parties ?? []).map((p) => p.peerId));
    const { signers, self } = signingSet(ctx, rec, parties);
    if (self < 0) throw new Refused('this signer is not in the party set');
    if (req.presignatureInventory) {
      const presignatures = await heldPresignatures(ctx.store, keyId, signers);
      ctx.log.debug({ key: keyId, signers, held: presignatures.length }, 'presignature inventory');
      return { version: CONTROL_VERSION, presignatureInventory: { presignatures } };
    }
    const ids = req.deletePresignatures?.ids ?? [];
    const bad = ids.findIndex((id) => typeof id !== 'string' || !PRESIGNATURE_ID.test(id));
    if (bad >= 0) throw new Refused(`ids[${bad}]: not a presignature id`);
    const r = await deletePresignatures(ctx.store, keyId, signers, ids, ctx.prepared);
    ctx.log.info(
      { key: keyId, signers, requested: ids.length, deleted: r.deleted, inUse: r.inUse.length },
      'orphaned presignatures deleted at the coordinator’s request',
    );
    return { version: CONTROL_VERSION, deletePresignatures: r };
  } catch (e) {
    if (!(e instanceof Refused))
      ctx.log.error({ err: e instanceof Error ? e.message : String(e) }, 'presignature request failed');
    return { version: CONTROL_VERSION, result: refusedOrAborted(new Uint8Array(0), e) };
  }
}

/**
 * CGGMP21 presigning for the pool: `presignCount` presignatures for the signing set `parties` of
 * key `keyId`, stored (encrypted) in one batch with ids `<ceremony id hex>.<i>` only when every
 * session succeeded.
 */
async function presign(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  deadline: number,
): Promise<{ result: CeremonyResult; ops: StoreOp[]; stored?: () => void }> {
  const keyId = start.keyId ?? '';
  const rec = await loadKeyRecord(ctx.store, keyId);
  if (!rec) throw new Refused(`unknown key ${keyId}`, 'KEY_UNKNOWN');
  if (!rec.keys.some((k) => k.suite === 'cggmp')) throw new Refused(`key ${keyId} has no ECDSA key`, 'KEY_UNKNOWN');
  const count = start.presignCount ?? 0;
  if (!Number.isSafeInteger(count) || count < 1 || count > 64) throw new Refused('presignCount: 1..64');
  const share = await loadEcdsaShare(ctx, keyId);
  const { signers, ordered, self } = signingSet(ctx, rec, parties);
  const cid = bytesToHex(ceremonyId);
  const outs = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      ctx.runner.run<Presignature>({
        parties: ordered,
        self,
        secretKey: ctx.secretKey,
        deadline,
        group: cid,
        sessionId: sessionId(ceremonyId, `cggmp.presign.${i}`),
        spec: presignProtocol({ share, signers }),
        label: `cggmp.presign.${i}`,
      }),
    ),
  );
  if (!outs.every((o) => o.status === 'ok')) return { result: failure(ceremonyId, outs, ordered), ops: [] };
  const items = outs.map((o, i) => ({ id: `${cid}.${i}`, presignature: (o as { output: Presignature }).output }));
  // exporting seals the handles: the stored bytes are the presignatures from here on
  const ops = presignaturePuts(keyId, items);
  return {
    // held in memory only once durably stored (PreparedPresignatures' invariant)
    stored: () => ctx.prepared?.add(ops),
    result: {
      ceremonyId,
      outcome: Outcome.OK,
      keyId,
      presignatureIds: items.map((x) => x.id),
      transcriptHash: combinedTranscript(ceremonyId, outs),
    },
    ops,
  };
}

async function refresh(
  ctx: CeremonyContext,
  start: StartCeremony,
  ceremonyId: Uint8Array,
  parties: SessionParty[],
  self: number,
  deadline: number,
): Promise<{ result: CeremonyResult; ops: StoreOp[] }> {
  const keyId = start.keyId ?? '';
  const rec = await loadKeyRecord(ctx.store, keyId);
  if (!rec) throw new Refused(`unknown key ${keyId}`, 'KEY_UNKNOWN');
  if (rec.parties.length !== parties.length || rec.parties.some((p, i) => parties[i]?.peerId !== p)) {
    throw new Refused('refresh: every party of the key must take part, in DKG order');
  }
  const frostKeys = rec.keys.filter((k) => k.suite !== 'cggmp');
  const shares = await Promise.all(frostKeys.map((k) => loadShare(ctx, keyId, k.suite as SuiteName)));
  const hasEcdsa = rec.keys.some((k) => k.suite === 'cggmp');
  let primes: { p: bigint; q: bigint; keys: string[] } | undefined;
  if (hasEcdsa) {
    if (!ctx.primePool) throw new Refused('ECDSA key refresh needs a prime pool', 'PRIME_POOL_NOT_CONFIGURED');
    primes = await ctx.primePool.take();
    if (!primes) throw new Refused('prime pool empty: retry when it has refilled', 'PRIME_POOL_EMPTY');
  }
  const common = { parties, self, secretKey: ctx.secretKey, deadline, group: bytesToHex(ceremonyId) };
  const ecdsaShare = hasEcdsa ? await loadEcdsaShare(ctx, keyId) : undefined;
  const ecdsaRun =
    ecdsaShare && primes
      ? ctx.runner.run<EcdsaKeyShare>({
          ...common,
          sessionId: sessionId(ceremonyId, 'cggmp.refresh'),
          spec: ecdsaRefreshProtocol({
            share: ecdsaShare,
            primes: { p: primes.p, q: primes.q },
            checkPrimality: false,
          }),
          label: 'cggmp.refresh',
        })
      : Promise.resolve(undefined);
  const frostRuns = Promise.all(
    shares.map((share) =>
      ctx.runner.run<KeyShare>({
        ...common,
        sessionId: sessionId(ceremonyId, `frost.refresh.${share.suite}`),
        spec: refreshProtocol({ keyShare: share }),
        label: `frost.refresh.${share.suite}`,
      }),
    ),
  );
  const [frostOuts, ecdsaOut] = await Promise.all([frostRuns, ecdsaRun]);
  const consumed = ctx.primePool && primes ? ctx.primePool.consumeOps(primes.keys) : [];
  const outs: SessionOutcome<unknown>[] = [...frostOuts, ...(ecdsaOut ? [ecdsaOut] : [])];
  if (!outs.every((o) => o.status === 'ok')) return { result: failure(ceremonyId, outs, parties), ops: consumed };
  const fresh = frostOuts.map((o) => (o as { output: KeyShare }).output);
  const next: KeyRecord = { ...rec, epoch: rec.epoch + 1 };
  const ops: StoreOp[] = [
    ...consumed,
    ...fresh.map(
      (s): StoreOp => ({ type: 'put', sublevel: 'shares', key: `${keyId}/${s.suite}`, value: encodeKeyShare(s) }),
    ),
    { type: 'put', sublevel: 'shares', key: `${keyId}/meta`, value: enc.encode(JSON.stringify(next)) },
  ];
  // presignatures were made with the old shares and Paillier keys: they go with them
  for (const k of await ctx.store.keys('presignatures', `${keyId}/`))
    ops.push({ type: 'del', sublevel: 'presignatures', key: k });
  if (ecdsaOut && ecdsaOut.status === 'ok') {
    ops.push({
      type: 'put',
      sublevel: 'shares',
      key: `${keyId}/cggmp`,
      value: enc.encode(JSON.stringify(keyShareToJson(ecdsaOut.output))),
    });
  }
  return {
    result: {
      ceremonyId,
      outcome: Outcome.OK,
      keyId,
      publicKeys: publicKeys(next),
      transcriptHash: combinedTranscript(ceremonyId, outs),
    },
    ops,
  };
}
