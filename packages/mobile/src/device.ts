/**
 * The mobile signer (DESIGN §1): connects OUT to the coordinator over WebSocket (`ws`; phones take
 * no inbound connections), authenticates with its device key, receives push notifications —
 * approval requests and ceremony invitations — and takes part in ceremonies through the
 * coordinator's relay, reusing `@custodian/ceremony`'s {@link CeremonyRunner} and `runCeremony` (the
 * same protocol code, checks and persistence rules as a server signer).
 *
 * Trust: ceremony invitations must be `SignedControl`s of the coordinator key pinned at the first
 * authenticated connection (trust on first use, printed for comparison); MPC envelopes are
 * authenticated by their senders' Ed25519 signatures and p2p payloads are encrypted end to end
 * (`@custodian/wire`), so the relay can neither read nor forge them. Approvals are signed with the
 * device key only after the decision callback (the person, with the PIN) says so; seed §1: no tap
 * for the master key ceremony.
 *
 * Connection: the phone reconnects forever after a lost or refused connection (the coordinator
 * restarted, the network dropped), with a capped, jittered exponential backoff ({@link
 * MobileSignerOptions.reconnectMs}); the pending timer keeps the process alive. The log says
 * `disconnected from the coordinator; reconnecting in N ms (attempt k)` and, once authenticated
 * again, `reconnected to the coordinator; resuming n pending approvals` (the coordinator re-sends
 * every approval request still pending for the device; one already answered is answered again
 * with the same signed decision, without asking). Ceremonies in flight end with the connection (the
 * coordinator aborts them); invitations to new ones arrive after the reconnection. A device the
 * coordinator revoked (REMOVED or REJECTED: close code 4403 or `Error { DEVICE_REVOKED }`) stops
 * for good and says so ({@link MobileSignerEvents.onRevoked}).
 *
 * Several coordinator URLs (the vault's `urls`, one per replica; issue #25): the phone connects to
 * one at a time and stays on it while it works; when it cannot connect or the connection drops
 * (not a revocation) it moves to the next URL (round robin), at the same backoff's pace, so a
 * phone whose replica died reconnects to a survivor. Every replica presents the same coordinator
 * peer id; a URL presenting another one is refused like any identity change (and the next is tried).
 *
 * Storage: shares in `<dataDir>/db`, the signer's encrypted LevelDB store
 * (`@custodian/ceremony/level-store`: XChaCha20-Poly1305 under a key derived by scrypt from the PIN).
 *
 * Longer than 400 lines because it is the phone's one connection state machine (hello, reconnect,
 * approvals, relay, ceremonies); the pieces it drives live in @custodian/ceremony and
 * @custodian/signer-client.
 */
import { join } from 'node:path';
import {
  type CeremonyContext,
  CeremonyRunner,
  type ChainsConfig,
  learnSignedPolicies,
  presignatureDiscards,
  revokeApprover,
  runCeremony,
  StoredNonceLedger,
  StoredPrimePool,
  StoredSessionLedger,
} from '@custodian/ceremony';
import { type ScryptParams, SecureStore } from '@custodian/ceremony/level-store';
import { LEVELS } from '@custodian/cggmp';
import { bytesToHex } from '@custodian/crypto';
import {
  Backoff,
  type DeviceFrame,
  decodeDeviceFrame,
  deviceHelloDigest,
  encodeDeviceFrame,
} from '@custodian/signer-client';
import {
  CONTROL_VERSION,
  controlRequestDigest,
  DEFAULT_LIMITS,
  deviceSign,
  encodeControlResponse,
  Outcome,
  openControlRequest,
  refusalValue,
  signApproval,
  type TransferIntent,
} from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { sha256 } from '@noble/hashes/sha2.js';
import { type Logger, pino } from 'pino';
import WebSocket from 'ws';
import { type ApprovalRefusal, approvalRefusal } from './approval-display.js';
import { readVaultInfo, type UnlockedVault, unlockVault, writeVaultInfo } from './vault.js';

/** Path of the coordinator's device endpoint. */
export const DEVICE_WS_PATH = '/devices/v1/ws';
/** WebSocket close code of the coordinator for a device REMOVED or REJECTED (no reconnection). */
export const DEVICE_REVOKED_CLOSE_CODE = 4403;
/** How long a signed approval answer is kept to answer a re-sent request again, ms (24 h). */
const ANSWER_KEEP_MS = 24 * 3600_000;
/** Most signed approval answers kept. */
const ANSWER_KEEP_MAX = 1024;

/** A decision on an approval request; undefined: no decision now (the request stays pending). */
export type ApprovalDecision = 'APPROVE' | 'REJECT' | undefined;

/** Options of {@link MobileSigner}. */
export interface MobileSignerOptions {
  dataDir: string;
  /** The PIN (opens the vault and the share store). SECRET. */
  pin: string;
  /** Decide an approval request (interactive prompt, or scripted). */
  decide(intent: TransferIntent): Promise<ApprovalDecision>;
  log?: Logger;
  /** CGGMP21 ECDSA: security level and a file of safe primes to import (`{ safePrimes: [hex…] }`). */
  ecdsa?: { level: 'SECURITY_128' | 'SECURITY_112'; primeSeedFile?: string; primePool?: number };
  /** scrypt cost of the share store (default the signer's). */
  storeScrypt?: ScryptParams;
  /**
   * Base of the first reconnect delay after a lost (or refused) connection, ms (default 1000). The
   * phone reconnects forever: attempt k waits a delay drawn from [b/2, b], b = min(reconnectMaxMs,
   * reconnectMs · 2^(k−1)) (`@custodian/signer-client` backoff.ts), and starts again from the first delay
   * once a connection is authenticated. Only a revocation (close code 4403 or an `Error` frame
   * `DEVICE_REVOKED`: the device was REMOVED or REJECTED) ends it.
   */
  reconnectMs?: number;
  /** Cap of the reconnect delay, ms (default 30 000). */
  reconnectMaxMs?: number;
  /**
   * Compressed P-256 keys (hex) of the Admin devices whose policy signatures this phone trusts:
   * when given, every sign request must carry evidence that passes `@custodian/ceremony`
   * enforce/enforce.ts (policy, limits against this phone's own ledger, approvals), exactly as on a
   * server signer.
   * Signed policy versions and tombstones the hub pushes (`policy_sync` invitations) are checked
   * against the same keys and their highest version per policy kept in the store: older versions
   * and deleted policies are then refused (`POLICY_VERSION_SUPERSEDED`, `POLICY_DELETED`).
   */
  trustedAdminKeys?: string[];
  /**
   * Blockchains this phone signs transfers for, with their chain id / network and fee ceiling
   * (`@custodian/ceremony` ChainsConfig, the `chains` object of a server signer's config). With
   * {@link trustedAdminKeys}, a transfer of a blockchain absent here is refused (`CHAIN_NOT_CONFIGURED`).
   * When given, approval requests are checked against it before {@link decide} sees them
   * (approval-display.ts `approvalRefusal`): one of an unconfigured blockchain or of an asset the
   * signers would refuse (`ASSET_MISMATCH`) is never shown, and is answered with a REJECT.
   */
  chains?: ChainsConfig;
  /**
   * DEVELOPMENT AND TESTS ONLY: without {@link trustedAdminKeys}, take part in sign ceremonies
   * without any evidence check (raw digests). Default false: without trusted Admin keys every sign
   * request is refused (`ENFORCEMENT_NOT_CONFIGURED`).
   */
  allowUnenforcedSigning?: boolean;
}

/** Events the simulator prints. */
export interface MobileSignerEvents {
  /**
   * Authenticated by the coordinator (every connection). `resumed`: a reconnection after a lost
   * connection; `pendingApprovals`: approval requests the coordinator re-sends right after.
   */
  onConnected?(coordinatorPeerId: string, info: { resumed: boolean; pendingApprovals: number; url: string }): void;
  /**
   * The connection was lost (or refused); the next attempt comes after `delayMs`, to `nextUrl`
   * (the next of the vault's coordinator URLs; `url` is the one that was lost).
   */
  onDisconnected?(info: {
    code: number;
    reason: string;
    attempt: number;
    delayMs: number;
    url: string;
    nextUrl: string;
  }): void;
  /**
   * The coordinator revoked this device (REMOVED or REJECTED by an administrator; `reason` names
   * the status): the signer has stopped (store closed, keys wiped) and will not reconnect.
   */
  onRevoked?(reason: string): void;
  onApprovalRequest?(intent: TransferIntent): void;
  onDecision?(intent: TransferIntent, decision: 'APPROVE' | 'REJECT'): void;
  /** An approval request refused before it was shown (then rejected): code `CHAIN_NOT_CONFIGURED` or `ASSET_MISMATCH`. */
  onApprovalRefused?(intent: TransferIntent, refusal: ApprovalRefusal): void;
  onCeremony?(kind: number, outcome: number, error?: string): void;
}

/** A running mobile signer. Create with {@link MobileSigner.start}. */
export class MobileSigner {
  private ws: WebSocket | undefined;
  private stopped = false;
  /** Why the coordinator revoked this device, once it has (then no reconnection). */
  private revokedReason: string | undefined;
  /** Has a connection been authenticated before (the next one is a resumption)? */
  private welcomedBefore = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly backoff: Backoff;
  /** Index in the vault's `urls` of the coordinator URL in use. */
  private urlIndex = 0;
  private readonly usedControl = new Map<string, number>();
  private readonly inflightApprovals = new Set<string>();
  /** Sockets this phone closed itself (a 4403 of its own is no revocation). */
  private readonly closingByUs = new WeakSet<WebSocket>();
  /**
   * Signed answers by request id and intent digest, kept {@link ANSWER_KEEP_MS}: a request the
   * coordinator re-sends after a reconnection (the answer may have been lost with the connection)
   * is answered again with the same decision, without asking again.
   */
  private readonly answered = new Map<string, { approvalJson: string; at: number }>();
  private connectedOnce: (() => void) | undefined;
  readonly ready: Promise<void>;

  private constructor(
    private readonly opts: MobileSignerOptions,
    private readonly vault: UnlockedVault,
    private readonly store: SecureStore,
    private readonly runner: CeremonyRunner,
    private readonly ctx: CeremonyContext,
    private readonly log: Logger,
    private readonly events: MobileSignerEvents,
    private readonly primePool: StoredPrimePool | undefined,
  ) {
    this.ready = new Promise((r) => {
      this.connectedOnce = r;
    });
    this.backoff = new Backoff({ initialMs: opts.reconnectMs ?? 1000, maxMs: opts.reconnectMaxMs ?? 30_000 });
  }

  /**
   * Unlock the vault with the PIN, open the share store and connect.
   * @throws WrongPinError; Error when the device is not enrolled, or when both
   *   `allowUnenforcedSigning` and `trustedAdminKeys` are given
   */
  static async start(opts: MobileSignerOptions, events: MobileSignerEvents = {}): Promise<MobileSigner> {
    if (opts.allowUnenforcedSigning && (opts.trustedAdminKeys?.length ?? 0) > 0)
      throw new Error('allowUnenforcedSigning and trustedAdminKeys exclude each other');
    const vault = await unlockVault(opts.dataDir, opts.pin);
    if (!vault.info.deviceId) throw new Error('this device has no enrollment: run `custodian mobile enroll` first');
    const log = (opts.log ?? pino({ level: 'info', base: { service: 'custodian-mobile' } })).child({
      device: vault.info.deviceId,
    });
    const store = await SecureStore.open(join(opts.dataDir, 'db'), opts.pin, opts.storeScrypt);
    // presignatures of an earlier run are discarded before anything else, as the server signer
    // does at every start (generation.ts): a folder restored from a backup or a copy never brings
    // back one that already signed (a second signature with it would reveal this phone's share)
    const discards = await presignatureDiscards(store);
    if (discards.length > 0) {
      await store.batch(discards, { sync: true });
      log.info({ discarded: discards.length }, 'presignatures of an earlier run discarded');
    }
    const nonceLedger = new StoredNonceLedger(store);
    await nonceLedger.load();
    let self: MobileSigner | undefined;
    const runner = new CeremonyRunner(
      {
        send: async (peerId, bytes) => {
          const ws = self?.ws;
          if (!ws || ws.readyState !== WebSocket.OPEN) throw new Error('not connected to the coordinator');
          ws.send(encodeDeviceFrame({ relay: { peerId, envelope: bytes } }));
        },
      },
      log,
      DEFAULT_LIMITS,
      // every session claimed in the phone's store before it starts (never run twice, even after a restart)
      new StoredSessionLedger(store),
    );
    let primePool: StoredPrimePool | undefined;
    if (opts.ecdsa) {
      primePool = new StoredPrimePool(store, LEVELS[opts.ecdsa.level] as NonNullable<(typeof LEVELS)[string]>, log);
      if (opts.ecdsa.primeSeedFile) await primePool.seed(opts.ecdsa.primeSeedFile);
      if (opts.ecdsa.primePool) primePool.fill(opts.ecdsa.primePool);
    }
    const ctx: CeremonyContext = {
      store,
      runner,
      selfPeerId: vault.info.mpcPeerId,
      secretKey: vault.mpcSecretKey,
      log,
      nonceLedger,
      shareCache: new Map(),
      ...(primePool ? { primePool, primePoolTarget: opts.ecdsa?.primePool ?? 0 } : {}),
      ...(opts.trustedAdminKeys && opts.trustedAdminKeys.length > 0
        ? { enforcement: { trustedAdminKeys: opts.trustedAdminKeys, chains: opts.chains ?? {} } }
        : {}),
      ...(opts.allowUnenforcedSigning ? { allowUnenforcedSigning: true } : {}),
    };
    if (!ctx.enforcement && opts.allowUnenforcedSigning) {
      log.warn(
        '!!! unenforced signing allowed: this device signs ANY digest it is asked to, without checking policy, limits or approvals. DEVELOPMENT AND TESTS ONLY !!!',
      );
    } else if (!ctx.enforcement) {
      log.warn('no trusted Admin keys configured: every sign request will be refused (ENFORCEMENT_NOT_CONFIGURED)');
    }
    self = new MobileSigner(opts, vault, store, runner, ctx, log, events, primePool);
    self.connect();
    return self;
  }

  /** Device id of the enrollment. */
  get deviceId(): string {
    return this.vault.info.deviceId as string;
  }

  /** MPC peer id (the device's party id in ceremonies). */
  get mpcPeerId(): string {
    return this.vault.info.mpcPeerId;
  }

  /** Coordinator base URL in use (one of the vault's `urls`). */
  get url(): string {
    const urls = this.vault.info.urls;
    return urls[this.urlIndex % urls.length] as string;
  }

  private wsUrl(): string {
    const u = new URL(this.url);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    u.pathname = DEVICE_WS_PATH;
    return u.toString();
  }

  private connect(): void {
    this.reconnectTimer = undefined;
    if (this.stopped) return;
    const ws = new WebSocket(this.wsUrl(), { maxPayload: DEFAULT_LIMITS.maxMessageBytes });
    this.ws = ws;
    let chain = Promise.resolve();
    ws.on('message', (data: Buffer) => {
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      chain = chain
        .then(() => this.onFrame(ws, Uint8Array.from(bytes)))
        .catch((e: unknown) =>
          this.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'frame handling failed'),
        );
    });
    ws.on('close', (code, reasonBytes) => {
      if (this.ws === ws) this.ws = undefined;
      if (this.stopped) return;
      const reason = reasonBytes.toString();
      // ceremonies need this connection: the coordinator has ended them (ABORTED) already
      this.runner.cancelAll('disconnected from the coordinator');
      if (code === DEVICE_REVOKED_CLOSE_CODE && !this.closingByUs.has(ws)) this.revokedReason ??= reason || 'revoked';
      if (this.revokedReason !== undefined) {
        const why = this.revokedReason;
        this.log.error(
          { code, reason: why },
          `device revoked by the coordinator (${why}): not reconnecting; this phone must be enrolled again`,
        );
        void this.stop().finally(() => this.events.onRevoked?.(why));
        return;
      }
      const { attempt, delayMs } = this.backoff.next();
      // the next replica's URL (the same one when there is only one)
      const url = this.url;
      this.urlIndex = (this.urlIndex + 1) % this.vault.info.urls.length;
      const nextUrl = this.url;
      this.log.warn(
        { code, reason, attempt, delayMs, url, nextUrl },
        `disconnected from the coordinator; reconnecting in ${delayMs} ms (attempt ${attempt})`,
      );
      this.events.onDisconnected?.({ code, reason, attempt, delayMs, url, nextUrl });
      // a ref'd timer: it keeps the process alive while the coordinator is away
      this.reconnectTimer = setTimeout(() => this.connect(), delayMs);
    });
    ws.on('error', (e) => this.log.debug({ err: e.message }, 'websocket error'));
  }

  private send(ws: WebSocket, f: DeviceFrame): void {
    if (ws.readyState === WebSocket.OPEN) ws.send(encodeDeviceFrame(f));
  }

  private async onFrame(ws: WebSocket, bytes: Uint8Array): Promise<void> {
    const d = decodeDeviceFrame(bytes);
    if (!d.ok) {
      this.log.warn({ reason: d.reason }, 'frame from the coordinator rejected');
      return;
    }
    const f = d.frame;
    if (f.challenge) return this.onChallenge(ws, f.challenge);
    if (f.welcome) {
      const pendingApprovals = Number(f.welcome.pendingApprovals ?? 0);
      const resumed = this.welcomedBefore || this.backoff.attempt > 0;
      this.welcomedBefore = true;
      this.backoff.reset();
      const coordinator = this.vault.info.coordinatorPeerId as string;
      const url = this.url;
      if (resumed)
        this.log.info(
          { coordinator, pendingApprovals, url },
          `reconnected to the coordinator; resuming ${pendingApprovals} pending approvals`,
        );
      else this.log.info({ coordinator, pendingApprovals, url }, 'connected to the coordinator');
      this.events.onConnected?.(coordinator, { resumed, pendingApprovals, url });
      this.connectedOnce?.();
      return;
    }
    if (f.relay) {
      this.runner.deliver(undefined, f.relay.envelope);
      return;
    }
    if (f.invitation) {
      void this.onInvitation(ws, f.invitation.signedControl);
      return;
    }
    if (f.approvalRequest) {
      void this.onApprovalRequest(ws, f.approvalRequest.requestId, f.approvalRequest.intentJson);
      return;
    }
    if (f.error) {
      this.log.warn({ code: f.error.code, message: f.error.message }, 'coordinator reported an error');
      // the coordinator closes the socket next; no reconnection then
      if (f.error.code === 'DEVICE_REVOKED') this.revokedReason ??= f.error.message || 'revoked';
      return;
    }
  }

  private async onChallenge(ws: WebSocket, c: NonNullable<DeviceFrame['challenge']>): Promise<void> {
    const info = this.vault.info;
    if (info.coordinatorPeerId === null) {
      info.coordinatorPeerId = c.coordinatorPeerId;
      // the file as it is now (its URLs may have been changed meanwhile) with the pinned identity
      const onDisk = await readVaultInfo(this.opts.dataDir);
      await writeVaultInfo(this.opts.dataDir, { ...onDisk, coordinatorPeerId: c.coordinatorPeerId });
      this.log.info({ coordinator: c.coordinatorPeerId }, 'coordinator identity pinned (first connection)');
    } else if (info.coordinatorPeerId !== c.coordinatorPeerId) {
      this.log.error(
        { pinned: info.coordinatorPeerId, presented: c.coordinatorPeerId, url: this.url },
        'coordinator identity changed: refusing to connect',
      );
      // not a revocation: the phone keeps trying (the real coordinator may be back), at the backoff's pace
      this.closingByUs.add(ws);
      ws.close(4403, 'coordinator identity changed');
      return;
    }
    if (c.nonce.length !== 32) {
      ws.close(4400, 'bad challenge');
      return;
    }
    const digest = deviceHelloDigest(c.nonce, c.coordinatorPeerId, info.deviceId as string, info.mpcPeerId);
    this.send(ws, {
      hello: {
        deviceId: info.deviceId as string,
        mpcPeerId: info.mpcPeerId,
        signature: deviceSign(digest, this.vault.deviceSecretKey),
      },
    });
  }

  private coordinatorKey(): Uint8Array {
    const pid = peerIdFromString(this.vault.info.coordinatorPeerId as string);
    return pid.publicKey?.raw as Uint8Array;
  }

  private async onInvitation(ws: WebSocket, signedControl: Uint8Array): Promise<void> {
    const opened = openControlRequest(signedControl, this.coordinatorKey());
    if (!opened.ok) {
      this.log.warn({ code: opened.rejection.code }, `ceremony invitation rejected: ${opened.rejection.reason}`);
      return;
    }
    const req = opened.value;
    const now = Date.now();
    if (Math.abs(now - Number(req.issuedUnixMs)) > 5 * 60_000) {
      this.log.warn({ code: 'stale' }, 'ceremony invitation rejected: stale');
      return;
    }
    // the signed request's digest, not the outer bytes' (those re-encode without the coordinator's key)
    const digest = controlRequestDigest(signedControl) as string;
    for (const [k, t] of this.usedControl) if (now - t > 10 * 60_000) this.usedControl.delete(k);
    if (this.usedControl.has(digest)) {
      this.log.warn({ code: 'replay' }, 'ceremony invitation rejected: replayed');
      return;
    }
    this.usedControl.set(digest, now);
    if (req.abort) {
      this.runner.cancelGroup(bytesToHex(req.abort.ceremonyId), `aborted by coordinator: ${req.abort.reason}`);
      return;
    }
    if (req.policySync) {
      // signed policy versions and tombstones: learned like a server signer (enforce.ts)
      const items = await learnSignedPolicies(
        this.ctx.store,
        req.policySync.signedPoliciesJson ?? [],
        this.ctx.enforcement?.trustedAdminKeys ?? [],
      );
      for (const it of items) {
        if (it.outcome === 'STORED')
          this.log.info(
            { policy: it.policyId, version: it.version, deleted: it.heldDeleted },
            'policy version learned',
          );
        else if (it.outcome !== 'KNOWN')
          this.log.warn({ policy: it.policyId, version: it.version, code: it.outcome }, 'policy version refused');
      }
      return;
    }
    if (req.revokeApprover) {
      // a device removed or suspended: its approvals are refused from now on (revoke.ts); the
      // answer carries an empty ceremony id
      const { deviceId, publicKey } = req.revokeApprover;
      let response: Uint8Array;
      try {
        const keysUpdated = await revokeApprover(this.ctx.store, deviceId, publicKey, this.ctx);
        this.log.warn({ device: deviceId, keysUpdated }, 'approver device revoked');
        response = encodeControlResponse({ version: CONTROL_VERSION, revokeApprover: { keysUpdated } });
      } catch (e) {
        this.log.warn({ device: deviceId }, 'approver revocation refused');
        response = encodeControlResponse({
          version: CONTROL_VERSION,
          result: {
            ceremonyId: new Uint8Array(0),
            outcome: Outcome.REFUSED,
            refusal: refusalValue('REQUEST_INVALID'),
            error: e instanceof Error ? e.message : 'revocation failed',
          },
        });
      }
      this.send(this.ws ?? ws, { answer: { ceremonyId: new Uint8Array(0), response } });
      return;
    }
    if (!req.start) return;
    const start = req.start;
    this.log.info({ kind: start.kind, parties: start.parties.length }, 'ceremony invitation');
    const result = await runCeremony(this.ctx, start);
    this.events.onCeremony?.(start.kind, result.outcome, result.error);
    const response = encodeControlResponse({ version: CONTROL_VERSION, result });
    const live = this.ws ?? ws;
    this.send(live, { answer: { ceremonyId: start.ceremonyId, response } });
  }

  private async onApprovalRequest(ws: WebSocket, requestId: string, intentJson: string): Promise<void> {
    if (this.inflightApprovals.has(requestId)) return;
    const now = Date.now();
    for (const [k, a] of this.answered) if (now - a.at > ANSWER_KEEP_MS) this.answered.delete(k);
    const answerKey = `${requestId}/${bytesToHex(sha256(new TextEncoder().encode(intentJson)))}`;
    const earlier = this.answered.get(answerKey);
    if (earlier) {
      // decided before (the answer may have been lost with a connection): the same answer again
      this.log.info({ request: requestId }, 'approval request already answered: answer sent again');
      this.send(this.ws ?? ws, { approvalAnswer: { requestId, approvalJson: earlier.approvalJson } });
      return;
    }
    let intent: TransferIntent;
    try {
      intent = JSON.parse(intentJson) as TransferIntent;
      if (typeof intent?.transfer_id !== 'string') throw new Error('transfer_id');
    } catch {
      this.log.warn({ request: requestId }, 'approval request rejected: not a transfer intent');
      return;
    }
    this.inflightApprovals.add(requestId);
    try {
      // checked against this phone's own configuration before anything is shown (never approved)
      const refusal = approvalRefusal(intent, this.opts.chains);
      let decision: ApprovalDecision;
      if (refusal) {
        this.log.warn(
          { transfer: intent.transfer_id, code: refusal.code },
          `approval request refused: ${refusal.reason}`,
        );
        this.events.onApprovalRefused?.(intent, refusal);
        decision = 'REJECT';
      } else {
        this.events.onApprovalRequest?.(intent);
        decision = await this.opts.decide(intent);
      }
      if (!decision) return;
      const approval = signApproval(
        intent,
        decision,
        this.vault.info.deviceId as string,
        this.vault.deviceSecretKey,
        new Date().toISOString(),
      );
      this.events.onDecision?.(intent, decision);
      const approvalJson = JSON.stringify(approval);
      this.answered.set(answerKey, { approvalJson, at: Date.now() });
      while (this.answered.size > ANSWER_KEEP_MAX) this.answered.delete(this.answered.keys().next().value as string);
      this.send(this.ws ?? ws, { approvalAnswer: { requestId, approvalJson } });
    } finally {
      this.inflightApprovals.delete(requestId);
    }
  }

  /** Stop reconnecting, disconnect, cancel ceremonies, close the store and wipe the keys. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.runner.cancelAll('shutting down');
    this.primePool?.stop();
    this.ws?.close(1000, 'bye');
    this.ctx.shareCache?.clear();
    await this.store.close();
    this.vault.wipe();
  }
}
