/**
 * Coordinator side of `/custodian/control/2`: signs requests with the coordinator's libp2p
 * Ed25519 key and reads the signers' responses. Used by the coordinator ([pipeline]) and by the
 * multi-process tests as the coordinator.
 */
import {
  CeremonyKind,
  type CeremonyResult,
  CONTROL_VERSION,
  type ControlRequest,
  type ControlResponse,
  DEFAULT_LIMITS,
  type DeletePresignaturesResultWire,
  decodeControlResponse,
  type HeldPresignatureWire,
  type NodeStatus,
  Outcome,
  type PolicySyncItemWire,
  type SignedPolicy,
  type StartCeremony,
  signControlRequest,
} from '@custodian/wire';
import type { PrivateKey } from '@libp2p/interface';
import { type Logger, pino } from 'pino';
import { createHost, type Host } from './host.js';
import type { EcdsaShareCombiner } from './share-combiner.js';

/** A connected control client. */
export class ControlClient {
  private constructor(
    readonly host: Host,
    private readonly secretKey: Uint8Array,
  ) {}

  /** Start a dial-only libp2p host for the coordinator key, pinned to `signers` (peer id → addrs). */
  static async create(
    privateKey: PrivateKey,
    signers: ReadonlyMap<string, readonly string[]>,
    log?: Logger,
  ): Promise<ControlClient> {
    const host = await createHost({
      privateKey,
      listen: [],
      peers: signers,
      maxFrameBytes: DEFAULT_LIMITS.maxMessageBytes,
      log: log ?? pino({ level: 'silent' }),
    });
    return new ControlClient(host, Uint8Array.from(privateKey.raw.subarray(0, 32)));
  }

  /** Use an existing host (e.g. one that also listens for MPC traffic) with the coordinator key's 32-byte Ed25519 seed. */
  static fromHost(host: Host, secretKey: Uint8Array): ControlClient {
    return new ControlClient(host, Uint8Array.from(secretKey));
  }

  /** Send a signed request and decode the response. @throws Error on transport failure or an undecodable response */
  async send(
    peerId: string,
    body: Omit<ControlRequest, 'version' | 'issuedUnixMs' | 'nonce'>,
    timeoutMs = 60_000,
  ): Promise<ControlResponse> {
    return this.exchange(peerId, this.sign(body), timeoutMs);
  }

  /** Ask one signer to run its part of a ceremony; resolves with its result. */
  async startCeremony(peerId: string, start: StartCeremony, timeoutMs?: number): Promise<CeremonyResult> {
    const [result] = this.startCeremonies([peerId], start, timeoutMs);
    return result as Promise<CeremonyResult>;
  }

  /**
   * Ask several signers to run their parts of one ceremony. The request is signed once and the
   * same bytes go to every signer (a request names no receiver, and each signer keeps its own
   * replay window), so the last signer starts as early as the first.
   * @param timeoutMs for each exchange (default: the ceremony's deadline plus 10 s)
   * @param onInterim called with the position (in `peerIds`) and body of each interim frame a signer
   *   sends before its result (ECDSA signature shares, for an {@link EcdsaShareCombiner});
   *   undecodable interim frames are dropped (the result is what counts)
   * @returns one promise per peer id, in order; each rejects as {@link send} does
   */
  startCeremonies(
    peerIds: readonly string[],
    start: StartCeremony,
    timeoutMs?: number,
    onInterim?: (position: number, response: ControlResponse) => void,
  ): Promise<CeremonyResult>[] {
    const deadline = timeoutMs ?? Math.max(1000, start.deadlineUnixMs - Date.now() + 10_000);
    let signed: Uint8Array;
    try {
      signed = this.sign({ start });
    } catch (e) {
      // e.g. a request the wire encoding refuses: every exchange fails with it, none throws here
      return peerIds.map(() => Promise.reject(e));
    }
    return peerIds.map(async (peerId, position) => {
      const interim = onInterim
        ? (body: Uint8Array) => {
            const r = decodeControlResponse(body);
            if (r.ok) onInterim(position, r.value);
          }
        : undefined;
      const res = await this.exchange(peerId, signed, deadline, interim);
      if (!res.result) throw new Error(`control response from ${peerId}: no result`);
      return res.result;
    });
  }

  /** Sign `body` now; every call draws a fresh nonce (replicas sharing the key never sign alike). */
  private sign(body: Omit<ControlRequest, 'version' | 'issuedUnixMs' | 'nonce'>): Uint8Array {
    const { nonce: _ignored, ...rest } = body as ControlRequest;
    return signControlRequest({ ...rest, version: CONTROL_VERSION, issuedUnixMs: Date.now() }, this.secretKey);
  }

  private async exchange(
    peerId: string,
    signed: Uint8Array,
    timeoutMs: number,
    onInterim?: (body: Uint8Array) => void,
  ): Promise<ControlResponse> {
    const res = decodeControlResponse(await this.host.request(peerId, signed, timeoutMs, onInterim));
    if (!res.ok) throw new Error(`control response from ${peerId}: ${res.rejection.reason}`);
    return res.value;
  }

  /**
   * Push Admin-signed policy versions and tombstones to a signer (control.proto `PolicySync`).
   * @param signed the signed versions (evidence.ts `SignedPolicy`)
   * @returns the signer's outcome per version, in order
   * @throws Error on transport failure, a refused request or an answer without items
   */
  async syncPolicies(
    peerId: string,
    signed: readonly SignedPolicy[],
    timeoutMs = 10_000,
  ): Promise<PolicySyncItemWire[]> {
    const res = await this.send(
      peerId,
      { policySync: { signedPoliciesJson: signed.map((s) => JSON.stringify(s)) } },
      timeoutMs,
    );
    if (!res.policySync)
      throw new Error(`control response from ${peerId}: ${res.result?.error || 'no policy sync result'}`);
    return res.policySync.items ?? [];
  }

  /**
   * The presignature ids a signer holds for `keyId` and the signing set `parties` (peer ids), with
   * their ages on the signer's clock (control.proto `PresignatureInventory`).
   * @throws Error on transport failure or a refused request (its error text)
   */
  async presignatureInventory(
    peerId: string,
    keyId: string,
    parties: readonly string[],
    timeoutMs = 10_000,
  ): Promise<HeldPresignatureWire[]> {
    const res = await this.send(
      peerId,
      { presignatureInventory: { keyId, parties: parties.map((p) => ({ peerId: p })) } },
      timeoutMs,
    );
    if (!res.presignatureInventory)
      throw new Error(`control response from ${peerId}: ${res.result?.error || 'no presignature inventory'}`);
    return res.presignatureInventory.presignatures ?? [];
  }

  /**
   * Delete presignatures of `keyId` and the signing set `parties` at a signer (control.proto
   * `DeletePresignatures`); ids a SIGN is using are kept and returned in `inUse`.
   * @throws Error on transport failure or a refused request (its error text)
   */
  async deletePresignatures(
    peerId: string,
    keyId: string,
    parties: readonly string[],
    ids: readonly string[],
    timeoutMs = 10_000,
  ): Promise<DeletePresignaturesResultWire> {
    const res = await this.send(
      peerId,
      { deletePresignatures: { keyId, parties: parties.map((p) => ({ peerId: p })), ids: [...ids] } },
      timeoutMs,
    );
    if (!res.deletePresignatures)
      throw new Error(`control response from ${peerId}: ${res.result?.error || 'no deletion result'}`);
    return { deleted: res.deletePresignatures.deleted ?? 0, inUse: res.deletePresignatures.inUse ?? [] };
  }

  /**
   * Query a signer's status. Each key's `epoch`, `backupEpoch`, `backupUnixMs` (numbers, 0 when
   * the signer sends none) and `pendingReshare` (hex ceremony id, '' when none) are always set.
   */
  async status(peerId: string): Promise<NodeStatus> {
    const res = await this.send(peerId, { status: {} }, 10_000);
    if (!res.status) throw new Error(`control response from ${peerId}: no status`);
    return {
      ...res.status,
      keys: (res.status.keys ?? []).map((k) => ({
        ...k,
        epoch: Number(k.epoch ?? 0),
        backupEpoch: Number(k.backupEpoch ?? 0),
        backupUnixMs: Number(k.backupUnixMs ?? 0),
        pendingReshare: k.pendingReshare ?? '',
      })),
    };
  }

  /**
   * Revoke an approver device at a signer (control.proto `RevokeApprover`): the signer drops it
   * from the approver devices of every key it holds, durably, before answering.
   * @param publicKey the device's 33-byte compressed P-256 key (optional: also matched by key)
   * @returns the number of key records whose approver list changed
   * @throws Error on transport failure or a refused request (its error text)
   */
  async revokeApprover(peerId: string, deviceId: string, publicKey?: Uint8Array, timeoutMs = 10_000): Promise<number> {
    const res = await this.send(
      peerId,
      { revokeApprover: { deviceId, ...(publicKey ? { publicKey } : {}) } },
      timeoutMs,
    );
    if (!res.revokeApprover)
      throw new Error(`control response from ${peerId}: ${res.result?.error || 'no revocation result'}`);
    return Number(res.revokeApprover.keysUpdated ?? 0);
  }

  async stop(): Promise<void> {
    this.secretKey.fill(0);
    await this.host.stop();
  }
}

/**
 * Coordinator-side keeper of the CGGMP21 presignature pool of one key and signing set: runs
 * PRESIGN ceremonies (in the background, `batch` at a time) until `target` presignatures are
 * available, and hands out ids that every signer of the set stored (each id once). Presignatures
 * whose ids are handed out are consumed by the signers in the signing ceremony.
 */
export class PresignaturePoolKeeper {
  private readonly ids: string[] = [];
  private refilling: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly client: ControlClient,
    readonly keyId: string,
    /** Peer ids of the signing set. */
    readonly signers: readonly string[],
    readonly target: number,
    readonly batch = 4,
    /** Deadline of one PRESIGN ceremony, ms. */
    readonly deadlineMs = 120_000,
  ) {}

  /** Presignatures ready to use. */
  get size(): number {
    return this.ids.length;
  }

  /** Start refilling if below target (resolves when this refill round ends). */
  refill(): Promise<void> {
    if (this.refilling) return this.refilling;
    const run = async () => {
      while (!this.stopped && this.ids.length < this.target) {
        const count = Math.min(this.batch, this.target - this.ids.length);
        const ceremonyId = new Uint8Array(24);
        globalThis.crypto.getRandomValues(ceremonyId);
        const start: StartCeremony = {
          ceremonyId,
          kind: CeremonyKind.PRESIGN,
          parties: this.signers.map((peerId) => ({ peerId })),
          threshold: 0,
          deadlineUnixMs: Date.now() + this.deadlineMs,
          keyId: this.keyId,
          presignCount: count,
        };
        const results = await Promise.all(this.client.startCeremonies(this.signers, start));
        const sets = results.map((r) => new Set(r.outcome === Outcome.OK ? (r.presignatureIds ?? []) : []));
        const common = [...(sets[0] ?? [])].filter((id) => sets.every((s) => s.has(id)));
        if (common.length === 0) throw new Error(`presign ceremony failed: ${results.map((r) => r.error).join('; ')}`);
        this.ids.push(...common);
      }
    };
    // cleared once settled, never before it is set (a full pool settles without awaiting anything)
    const refilling = run().finally(() => {
      if (this.refilling === refilling) this.refilling = undefined;
    });
    this.refilling = refilling;
    return refilling;
  }

  /**
   * Take one presignature id and, unless `refill` is false, start a background refill.
   * @returns undefined when empty
   */
  take(options: { refill?: boolean } = {}): string | undefined {
    const id = this.ids.shift();
    if (options.refill !== false && this.ids.length < this.target) void this.refill().catch(() => undefined);
    return id;
  }

  stop(): void {
    this.stopped = true;
  }
}
