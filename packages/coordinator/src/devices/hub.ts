/**
 * Device hub: the coordinator's WebSocket endpoint for mobile signers (DESIGN §1, §5; proto
 * `custodian/v1/relay.proto` `DeviceFrame`, one binary WebSocket message per frame).
 *
 * - **Authentication**: on connect the hub sends `DeviceChallenge { nonce (32 random bytes),
 *   coordinator_peer_id }`; the device answers `DeviceHello { device_id, mpc_peer_id, signature }`
 *   within 10 s, the signature (P-256, 64-byte r‖s) over `deviceHelloDigest(...)` by the device key
 *   of an **APPROVED** enrolled device, naming the MPC peer id pinned at its enrollment (issue #26
 *   item 7: never another, never a server signer's; a device enrolled before peer ids were bound
 *   gets the id of its first hello pinned through {@link DeviceHub.pinLegacyPeer}). Anything else
 *   closes the socket (code 4401; for a device REMOVED or REJECTED after an `Error { code:
 *   DEVICE_REVOKED }` frame, so that it stops reconnecting). A second connection of the same device
 *   replaces the first. The `DeviceWelcome` carries `pending_approvals`, the number of pending
 *   approval requests sent right after it.
 * - **Before the hello** (issue #26 item 11): a socket may send one frame of at most
 *   {@link DEVICE_HELLO_MAX_FRAME_BYTES} (else close 1009) and at most that many bytes in all; a first
 *   frame that is not a decodable hello closes it (4400 / 4401). At most
 *   {@link DEVICE_PRE_HELLO_PER_ADDRESS} sockets per client address (IPv6: per /64; behind a trusted
 *   proxy, the forwarded address) and {@link DEVICE_PRE_HELLO_TOTAL} in all wait for their hello at
 *   once; a further upgrade is answered HTTP 429 (503 for the total) and never becomes a WebSocket.
 * - **Revocation**: a device whose status leaves APPROVED (removed, rejected) is cut off at
 *   once by {@link DeviceHub.revokeDevice} (the admin service calls it after the change commits):
 *   an `Error { code: DEVICE_REVOKED }` frame, then close code {@link DEVICE_REVOKED_CLOSE_CODE}
 *   with the reason `device is <STATUS>, not APPROVED`, and its approval queue is dropped. The
 *   status is read again from the store before every approval request, ceremony invitation and
 *   accepted approval answer (send time, not only at hello), so a change made behind this hub
 *   (another coordinator replica, a direct database edit) cuts the device off at its next send.
 * - **Approvals**: {@link DeviceHub.notifyApprovalRequest} pushes a transfer intent (queued while
 *   the device is offline, re-sent on every reconnect until answered); the device's signed
 *   `Approval` is verified here (device id and key of the record, intent digest, signature) before
 *   {@link DeviceHub.onApproval} listeners see it. Signers verify it again themselves.
 * - **Ceremonies**: {@link DeviceHub.startCeremony} sends a `SignedControl` (the coordinator key
 *   signs it, as for server signers) and resolves with the device's `CeremonyResult`.
 * - **Relay**: `RelayFrame`s from a device are forwarded to the destination device's socket or, for
 *   a server signer, over libp2p `/custodian/relay/1` (`@custodian/signer` relay.ts); frames from
 *   signers reach devices through {@link DeviceHub.fromSigner}. The hub only moves SignedEnvelope
 *   bytes: it cannot read point-to-point payloads nor forge a sender.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { bytesToHex } from '@custodian/crypto';
import {
  type DeviceFrame,
  decodeDeviceFrame,
  deviceHelloDigest,
  encodeDeviceFrame,
  type RelayFrame,
} from '@custodian/signer';
import {
  type Approval,
  approvalDigest,
  type CeremonyResult,
  CONTROL_VERSION,
  DEFAULT_LIMITS,
  decodeControlResponse,
  deviceVerify,
  Outcome,
  refusalValue,
  type SignedPolicy,
  type StartCeremony,
  signControlRequest,
  type TransferIntent,
  transferIntentDigest,
} from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { p256 } from '@noble/curves/nist.js';
import { type WebSocket, WebSocketServer } from 'ws';
import { addressBucket } from '../server.js';
import type { DeviceCeremonyPort } from '../signing/gateway.js';

/** Path of the device WebSocket endpoint. */
export const DEVICE_WS_PATH = '/devices/v1/ws';
/** Largest WebSocket message accepted after the hello, bytes (CGGMP21 aux-info envelopes are the largest). */
export const DEVICE_MAX_FRAME_BYTES = 4 * 1024 * 1024;
/**
 * Largest frame, and largest byte count in all (WebSocket framing included), a socket may send
 * before its hello is accepted. A hello is about 200 bytes (device id, peer id, 64-byte signature).
 */
export const DEVICE_HELLO_MAX_FRAME_BYTES = 4096;
/** Sockets per client address waiting for their hello at once (default of {@link DeviceHubLimits}). */
export const DEVICE_PRE_HELLO_PER_ADDRESS = 16;
/** Sockets waiting for their hello at once, all addresses (default of {@link DeviceHubLimits}). */
export const DEVICE_PRE_HELLO_TOTAL = 1024;
/** WebSocket framing allowance on top of the hello frame (header, mask key, a close frame). */
const PRE_HELLO_FRAMING_BYTES = 64;
const HELLO_TIMEOUT_MS = 10_000;
/** WebSocket close code of a device whose status left APPROVED (the reason names the status). */
export const DEVICE_REVOKED_CLOSE_CODE = 4403;

/** The enrolled device record the hub checks. */
export interface HubDeviceRecord {
  /** Compressed P-256 public key, hex (33 bytes). */
  publicKey: string;
  status: 'PENDING' | 'APPROVED' | 'REJECTED' | 'REMOVED' | string;
  /** MPC peer id pinned at enrollment; null for a device enrolled before peer ids were bound. */
  mpcPeerId: string | null;
}

/** Limits on sockets that have not said hello yet. */
export interface DeviceHubLimits {
  /** Default {@link DEVICE_PRE_HELLO_PER_ADDRESS}. */
  preHelloPerAddress: number;
  /** Default {@link DEVICE_PRE_HELLO_TOTAL}. */
  preHelloTotal: number;
}

/** A verified approval decision. */
export interface ApprovalEvent {
  deviceId: string;
  requestId: string;
  approval: Approval;
}

/** Something the hub relayed (observers: audit, tests). */
export interface RelayedEvent {
  direction: 'device-to-device' | 'device-to-signer' | 'signer-to-device';
  from: string;
  to: string;
  envelope: Uint8Array;
}

/** Components of the hub. */
export interface DeviceHubInit {
  lookupDevice(deviceId: string): Promise<HubDeviceRecord | undefined>;
  /** Coordinator libp2p identity: peer id and 32-byte Ed25519 seed (signs ceremony invitations). SECRET. */
  coordinator: { peerId: string; secretKey: Uint8Array };
  /** Is `peerId` a server signer reachable over the relay protocol? */
  isSignerPeer(peerId: string): boolean;
  /** Forward a device's envelope to a server signer (libp2p relay). */
  relayToSigner(signerPeerId: string, frame: RelayFrame): Promise<void>;
  log?: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
  limits?: Partial<DeviceHubLimits>;
}

/** Options of {@link DeviceHub.attach}. */
export interface DeviceHubAttachOptions {
  /**
   * Client address bucket of an upgrade request (the pre-hello cap counts per bucket). Default: the
   * socket's peer address (IPv6 by /64). The coordinator passes one honouring its `trustProxy`.
   */
  clientAddress?: (req: IncomingMessage) => string;
}

interface Conn {
  ws: WebSocket;
  deviceId: string;
  mpcPeerId: string;
}

/** The device hub. Create with `new DeviceHub(init)`, then {@link DeviceHub.attach} to the HTTP server. */
export class DeviceHub implements DeviceCeremonyPort {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: DEVICE_MAX_FRAME_BYTES });
  private readonly byDevice = new Map<string, Conn>();
  private readonly byPeer = new Map<string, Conn>();
  private readonly approvalQueue = new Map<string, Map<string, TransferIntent>>();
  private readonly approvalListeners = new Set<(e: ApprovalEvent) => void>();
  private readonly relayListeners = new Set<(e: RelayedEvent) => void>();
  private readonly answers = new Map<string, (res: CeremonyResult) => void>();
  private readonly onlineWaiters = new Set<() => void>();
  /** Last MPC peer id each device announced (kept across disconnects). */
  private readonly knownPeer = new Map<string, string>();
  /** Sockets waiting for their hello, per client address bucket. */
  private readonly preHello = new Map<string, number>();
  private preHelloTotal = 0;
  private readonly limits: DeviceHubLimits;
  private closed = false;
  /**
   * Pin the MPC peer id of an APPROVED device that has none (enrolled before peer ids were bound)
   * at its first authenticated hello; true when pinned. Set by `createCoordinator` (the admin
   * service's `pinLegacyPeerId`). Unset: such a device is refused.
   */
  pinLegacyPeer: ((deviceId: string, peerId: string) => Promise<boolean>) | undefined;
  /**
   * Durable source of a device's pending approval requests (the transfer store), read when the
   * device connects, so requests survive a coordinator restart. Set by `createCoordinator`.
   */
  pendingSource: ((deviceId: string) => Promise<{ requestId: string; intent: TransferIntent }[]>) | undefined;
  /**
   * The highest signed version of every policy (PolicyService `signedVersions`), pushed to a device
   * when it connects (issue #26 item 3: mobile signers enforce like server signers). Set by
   * `createCoordinator`; absent: nothing is pushed at connection.
   */
  policySource: (() => Promise<readonly SignedPolicy[]>) | undefined;

  constructor(private readonly init: DeviceHubInit) {
    this.limits = {
      preHelloPerAddress: init.limits?.preHelloPerAddress ?? DEVICE_PRE_HELLO_PER_ADDRESS,
      preHelloTotal: init.limits?.preHelloTotal ?? DEVICE_PRE_HELLO_TOTAL,
    };
  }

  /**
   * Push signed policy versions and tombstones (a signed `PolicySync` control request in an
   * `invitation` frame, no answer expected) to one connected device, or to every connected device
   * whose status is APPROVED at send time. The device checks each against its own trusted Admin
   * keys and keeps the highest version per policy (`@custodian/signer` enforce.ts
   * `learnSignedPolicies`). Best effort: a device offline now gets all of them when it connects.
   */
  pushPolicies(signed: readonly SignedPolicy[], deviceId?: string): void {
    if (signed.length === 0) return;
    const conns = deviceId === undefined ? [...this.byDevice.values()] : [this.byDevice.get(deviceId)];
    for (const c of conns) {
      if (!c) continue;
      void this.ifApproved(c)
        .then((ok) => {
          if (!ok) return;
          for (const batch of policyBatches(signed)) {
            const signedControl = signControlRequest(
              {
                version: CONTROL_VERSION,
                issuedUnixMs: Date.now(),
                policySync: { signedPoliciesJson: batch.map((x) => JSON.stringify(x)) },
              },
              this.init.coordinator.secretKey,
            );
            this.send(c.ws, { invitation: { signedControl } });
          }
        })
        .catch((e: unknown) =>
          this.log('warn', 'policy versions not pushed to a device', {
            device: c.deviceId,
            err: e instanceof Error ? e.message : String(e),
          }),
        );
    }
  }

  private log(level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>): void {
    this.init.log?.(level, msg, fields);
  }

  /**
   * Serve {@link DEVICE_WS_PATH} on `server` (HTTP upgrade). An upgrade beyond the pre-hello caps
   * is answered `429 Too Many Requests` (per address) or `503 Service Unavailable` (in all).
   */
  attach(server: Server, opts: DeviceHubAttachOptions = {}): void {
    const addressOf = opts.clientAddress ?? ((req: IncomingMessage) => defaultAddress(req));
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== DEVICE_WS_PATH || this.closed) {
        socket.destroy();
        return;
      }
      let address: string;
      try {
        address = addressOf(req);
      } catch {
        address = defaultAddress(req);
      }
      const mine = this.preHello.get(address) ?? 0;
      if (mine >= this.limits.preHelloPerAddress || this.preHelloTotal >= this.limits.preHelloTotal) {
        const perAddress = mine >= this.limits.preHelloPerAddress;
        this.log('warn', 'device socket refused before hello: too many waiting', { perAddress });
        refuseUpgrade(socket, perAddress ? 429 : 503, perAddress ? 'Too Many Requests' : 'Service Unavailable');
        return;
      }
      // counted from the upgrade request until the hello is accepted or the socket closes
      this.preHello.set(address, mine + 1);
      this.preHelloTotal++;
      let counted = true;
      const release = () => {
        if (!counted) return;
        counted = false;
        this.preHelloTotal--;
        const n = (this.preHello.get(address) ?? 1) - 1;
        if (n <= 0) this.preHello.delete(address);
        else this.preHello.set(address, n);
      };
      socket.once('close', release);
      // every byte before the hello counts (frame headers included): a few KiB, not 4 MiB
      let received = head.length;
      let wsRef: WebSocket | undefined;
      const meter = (chunk: Buffer) => {
        received += chunk.length;
        if (received <= DEVICE_HELLO_MAX_FRAME_BYTES + PRE_HELLO_FRAMING_BYTES) return;
        socket.off('data', meter);
        socket.pause(); // read nothing more; the close frame still goes out
        this.log('warn', 'device socket sent too much before its hello');
        if (wsRef) wsRef.close(1009, 'too much data before hello');
        setTimeout(() => socket.destroy(), 1000).unref?.();
        if (!wsRef) socket.destroy();
      };
      socket.on('data', meter);
      const authenticated = () => {
        socket.off('data', meter);
        release();
      };
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        wsRef = ws;
        this.accept(ws, authenticated);
      });
    });
  }

  /** Device ids connected and authenticated now. */
  online(): string[] {
    return [...this.byDevice.keys()];
  }

  /** MPC peer id of a device (connected now, or last announced); undefined if never seen. */
  peerIdOf(deviceId: string): string | undefined {
    return this.byDevice.get(deviceId)?.mpcPeerId ?? this.knownPeer.get(deviceId);
  }

  /** Wait until `deviceId` is connected; rejects at `until` (Unix ms). */
  async waitOnline(deviceId: string, until: number, signal?: AbortSignal): Promise<Conn> {
    for (;;) {
      const c = this.byDevice.get(deviceId);
      if (c) return c;
      if (Date.now() >= until || this.closed) throw new Error(`device ${deviceId} is not connected`);
      if (signal?.aborted) throw new Error('aborted');
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.min(1000, Math.max(0, until - Date.now())));
        function done() {
          clearTimeout(t);
          resolve();
        }
        this.onlineWaiters.add(done);
      });
    }
  }

  /** Subscribe to verified approval decisions; returns the unsubscribe function. */
  onApproval(listener: (e: ApprovalEvent) => void): () => void {
    this.approvalListeners.add(listener);
    return () => this.approvalListeners.delete(listener);
  }

  /** Observe relayed envelopes (audit, tests); returns the unsubscribe function. */
  onRelayed(listener: (e: RelayedEvent) => void): () => void {
    this.relayListeners.add(listener);
    return () => this.relayListeners.delete(listener);
  }

  /**
   * Push an approval request for `intent` to a device: sent now if the device is connected, and on
   * every reconnect until it answers or {@link DeviceHub.cancelApprovalRequest} is called.
   * @returns the request id (echoed in {@link ApprovalEvent})
   */
  notifyApprovalRequest(deviceId: string, intent: TransferIntent, requestId: string = intent.transfer_id): string {
    deviceId = deviceId.toLowerCase();
    let q = this.approvalQueue.get(deviceId);
    if (!q) {
      q = new Map();
      this.approvalQueue.set(deviceId, q);
    }
    q.set(requestId, intent);
    const c = this.byDevice.get(deviceId);
    if (c) {
      void this.ifApproved(c)
        .then((ok) => {
          if (ok) this.sendApprovalRequest(c, requestId, intent);
        })
        .catch((e: unknown) =>
          this.log('warn', 'approval request not sent', {
            device: deviceId,
            err: e instanceof Error ? e.message : String(e),
          }),
        );
    }
    return requestId;
  }

  /**
   * Cut a device off: its status is no longer APPROVED (`REMOVED`, `REJECTED`, or any other).
   * Drops its approval queue, its remembered key and MPC peer id, sends `Error { code:
   * DEVICE_REVOKED }` and closes its socket with {@link DEVICE_REVOKED_CLOSE_CODE} (a ceremony it
   * was in ends ABORTED at once). Idempotent; a device not connected only loses its queue.
   * @param status the device's new status, named in the close reason (no secret)
   */
  revokeDevice(deviceId: string, status: string): void {
    const id = deviceId.toLowerCase();
    this.approvalQueue.delete(id);
    this.knownKeys.delete(id);
    this.knownPeer.delete(id);
    const c = this.byDevice.get(id);
    if (!c) return;
    this.byDevice.delete(id);
    if (this.byPeer.get(c.mpcPeerId) === c) this.byPeer.delete(c.mpcPeerId);
    const reason = `device is ${status}, not APPROVED`;
    this.send(c.ws, { error: { code: 'DEVICE_REVOKED', message: reason } });
    c.ws.close(DEVICE_REVOKED_CLOSE_CODE, reason);
    this.log('info', 'device revoked: connection closed, approval queue dropped', { device: id, status });
  }

  /**
   * Read the device's status from the store now; if it is no longer APPROVED (or unknown) the
   * device is revoked ({@link DeviceHub.revokeDevice}) and false is returned.
   */
  private async ifApproved(c: Conn): Promise<boolean> {
    const rec = await this.init.lookupDevice(c.deviceId);
    if (rec?.status === 'APPROVED') return this.byDevice.get(c.deviceId) === c;
    this.revokeDevice(c.deviceId, rec?.status ?? 'UNKNOWN');
    return false;
  }

  /** Withdraw a pending approval request (transfer cancelled, expired or decided). */
  cancelApprovalRequest(deviceId: string, requestId: string): void {
    this.approvalQueue.get(deviceId)?.delete(requestId);
  }

  /**
   * {@link DeviceCeremonyPort}: run a device's part of a ceremony (waits for it to connect until the
   * deadline). Resolves with the device's result; rejects when the device does not connect in time
   * or its connection closes before it answers.
   */
  async startCeremony(deviceId: string, start: StartCeremony): Promise<CeremonyResult> {
    const conn = await this.waitOnline(deviceId, Number(start.deadlineUnixMs));
    // checked at send time: an invitation goes only to a device APPROVED now
    if (!(await this.ifApproved(conn))) {
      return {
        ceremonyId: start.ceremonyId,
        outcome: Outcome.REFUSED,
        refusal: refusalValue('DEVICE_NOT_APPROVED'),
        error: 'device is not APPROVED',
      };
    }
    const key = `${deviceId}/${bytesToHex(start.ceremonyId)}`;
    let fail: (e: Error) => void = () => {};
    const answer = new Promise<CeremonyResult>((resolve, reject) => {
      this.answers.set(key, resolve);
      fail = reject;
    });
    // rejected if this connection closes first: the device cannot finish without it, and the
    // gateway counts it unavailable (it ends the ceremony on every party at once)
    const gone = () =>
      fail(
        new Error(this.closed ? 'coordinator shutting down' : `device ${deviceId} disconnected during the ceremony`),
      );
    conn.ws.once('close', gone);
    const signedControl = signControlRequest(
      { version: CONTROL_VERSION, issuedUnixMs: Date.now(), start },
      this.init.coordinator.secretKey,
    );
    this.send(conn.ws, { invitation: { signedControl } });
    try {
      return await answer;
    } finally {
      conn.ws.off('close', gone);
      this.answers.delete(key);
    }
  }

  /** {@link DeviceCeremonyPort}: best-effort abort of a device's ceremony. */
  async abortCeremony(deviceId: string, ceremonyId: Uint8Array, reason: string): Promise<void> {
    const c = this.byDevice.get(deviceId);
    if (!c) return;
    const signedControl = signControlRequest(
      { version: CONTROL_VERSION, issuedUnixMs: Date.now(), abort: { ceremonyId, reason } },
      this.init.coordinator.secretKey,
    );
    this.send(c.ws, { invitation: { signedControl } });
  }

  /** An envelope a server signer sent to a device (libp2p relay): forward it to the device's socket. */
  fromSigner(signerPeerId: string, frame: RelayFrame): void {
    const c = this.byPeer.get(frame.peerId);
    if (!c) {
      this.log('warn', 'relay: destination device not connected', { to: frame.peerId, from: signerPeerId });
      return;
    }
    this.emitRelayed({ direction: 'signer-to-device', from: signerPeerId, to: frame.peerId, envelope: frame.envelope });
    this.send(c.ws, { relay: { peerId: signerPeerId, envelope: frame.envelope } });
  }

  /**
   * Close every device connection (authenticated ones with 1001 `coordinator shutting down`, others
   * at once) and stop accepting. Idempotent. Called by the coordinator's stop before the HTTP
   * server closes (which waits for every open socket).
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const c of this.byDevice.values()) c.ws.close(1001, 'coordinator shutting down');
    // sockets not yet authenticated go at once: an HTTP server's close waits for every socket
    const authenticated = new Set([...this.byDevice.values()].map((c) => c.ws));
    for (const ws of this.wss.clients) if (!authenticated.has(ws)) ws.terminate();
    this.wss.close();
    for (const w of this.onlineWaiters) w();
  }

  private emitRelayed(e: RelayedEvent): void {
    for (const l of this.relayListeners) {
      try {
        l(e);
      } catch {
        // observers never break the relay
      }
    }
  }

  private send(ws: WebSocket, f: DeviceFrame): void {
    if (ws.readyState !== ws.OPEN) return;
    ws.send(encodeDeviceFrame(f));
  }

  private sendApprovalRequest(c: Conn, requestId: string, intent: TransferIntent): void {
    this.send(c.ws, { approvalRequest: { requestId, intentJson: JSON.stringify(intent) } });
  }

  private accept(ws: WebSocket, authenticated: () => void = () => undefined): void {
    const nonce = Uint8Array.from(randomBytes(32));
    let conn: Conn | undefined;
    let helloSeen = false;
    const timer = setTimeout(() => {
      if (!conn) ws.close(4401, 'authentication timeout');
    }, HELLO_TIMEOUT_MS);
    timer.unref?.();
    this.send(ws, { challenge: { nonce, coordinatorPeerId: this.init.coordinator.peerId } });
    let chain = Promise.resolve();
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      chain = chain.then(async () => {
        if (!conn && helloSeen) return; // the one pre-hello frame is being checked, or failed
        if (!isBinary) {
          ws.close(4400, 'binary frames only');
          return;
        }
        if (!conn && data.byteLength > DEVICE_HELLO_MAX_FRAME_BYTES) {
          helloSeen = true;
          ws.close(1009, 'hello too large');
          return;
        }
        const d = decodeDeviceFrame(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), {
          ...DEFAULT_LIMITS,
          maxMessageBytes: conn ? DEVICE_MAX_FRAME_BYTES : DEVICE_HELLO_MAX_FRAME_BYTES,
        });
        if (!conn) helloSeen = true;
        if (!d.ok) {
          this.log('warn', 'device frame rejected', { reason: d.reason, device: conn?.deviceId });
          if (!conn) ws.close(4400, 'hello expected');
          return;
        }
        const f = d.frame;
        if (!conn) {
          if (!f.hello) {
            ws.close(4401, 'hello expected');
            return;
          }
          conn = await this.authenticate(ws, nonce, f.hello);
          clearTimeout(timer);
          if (conn) authenticated();
          return;
        }
        await this.handle(conn, f);
      });
      chain = chain.catch((e: unknown) => {
        this.log('warn', 'device frame handling failed', { err: e instanceof Error ? e.message : String(e) });
      });
    });
    ws.on('close', () => {
      clearTimeout(timer);
      if (conn && this.byDevice.get(conn.deviceId) === conn) {
        this.byDevice.delete(conn.deviceId);
        this.byPeer.delete(conn.mpcPeerId);
        this.log('info', 'device disconnected', { device: conn.deviceId });
      }
    });
    ws.on('error', () => undefined);
  }

  private async authenticate(
    ws: WebSocket,
    nonce: Uint8Array,
    hello: NonNullable<DeviceFrame['hello']>,
  ): Promise<Conn | undefined> {
    const fail = (why: string) => {
      this.log('warn', 'device authentication failed', { device: hello.deviceId, reason: why });
      this.send(ws, { error: { code: 'UNAUTHENTICATED', message: why } });
      ws.close(4401, why);
      return undefined;
    };
    if (!/^[0-9a-f-]{36}$/i.test(hello.deviceId)) return fail('unknown device');
    const rec = await this.init.lookupDevice(hello.deviceId.toLowerCase());
    if (!rec) return fail('unknown device');
    if (rec.status === 'REMOVED' || rec.status === 'REJECTED') {
      // final: the device is told it was revoked (it stops reconnecting), then refused as any other
      const why = `device is ${rec.status}, not APPROVED`;
      this.log('warn', 'device authentication failed', { device: hello.deviceId, reason: why });
      this.send(ws, { error: { code: 'DEVICE_REVOKED', message: why } });
      ws.close(4401, why);
      return undefined;
    }
    if (rec.status !== 'APPROVED') return fail(`device is ${rec.status}, not APPROVED`);
    try {
      const pid = peerIdFromString(hello.mpcPeerId);
      if (pid.type !== 'Ed25519') return fail('mpc_peer_id: not an Ed25519 peer id');
    } catch {
      return fail('mpc_peer_id: not a peer id');
    }
    const digest = deviceHelloDigest(nonce, this.init.coordinator.peerId, hello.deviceId, hello.mpcPeerId);
    if (!deviceVerify(bytesToHex(hello.signature), digest, rec.publicKey)) return fail('bad signature');
    // the peer id is the one bound at enrollment, never a server signer's (issue #26 item 7)
    if (this.init.isSignerPeer(hello.mpcPeerId)) return fail("mpc_peer_id is a server signer's");
    if (rec.mpcPeerId === null) {
      const pin = this.pinLegacyPeer;
      if (!pin || !(await pin(hello.deviceId.toLowerCase(), hello.mpcPeerId))) {
        return fail('mpc_peer_id: none bound at enrollment and this one cannot be pinned; enrol again');
      }
      this.log('info', 'device MPC peer id pinned at first hello', { device: hello.deviceId, peer: hello.mpcPeerId });
    } else if (rec.mpcPeerId !== hello.mpcPeerId) {
      return fail('mpc_peer_id differs from the one bound at enrollment');
    }
    const other = this.byPeer.get(hello.mpcPeerId);
    if (other && other.deviceId !== hello.deviceId.toLowerCase()) return fail('mpc_peer_id used by another device');
    const conn: Conn = { ws, deviceId: hello.deviceId.toLowerCase(), mpcPeerId: hello.mpcPeerId };
    const prev = this.byDevice.get(conn.deviceId);
    if (prev) {
      this.byPeer.delete(prev.mpcPeerId);
      prev.ws.close(4409, 'replaced by a new connection');
    }
    this.byDevice.set(conn.deviceId, conn);
    this.byPeer.set(conn.mpcPeerId, conn);
    this.knownPeer.set(conn.deviceId, conn.mpcPeerId);
    this.rememberKey(conn.deviceId, rec.publicKey);
    if (this.pendingSource) {
      try {
        for (const p of await this.pendingSource(conn.deviceId)) {
          let q = this.approvalQueue.get(conn.deviceId);
          if (!q) {
            q = new Map();
            this.approvalQueue.set(conn.deviceId, q);
          }
          q.set(p.requestId, p.intent);
        }
      } catch (e) {
        this.log('warn', 'pending approvals could not be read', { err: e instanceof Error ? e.message : String(e) });
      }
    }
    // the status again, after the awaits above: a removal that committed meanwhile wins
    if (!(await this.ifApproved(conn))) return undefined;
    // the welcome says how many pending approval requests follow (the device logs what it resumes)
    const pending = [...(this.approvalQueue.get(conn.deviceId) ?? [])];
    this.send(ws, { welcome: { pendingApprovals: pending.length } });
    this.log('info', 'device connected', { device: conn.deviceId, peer: conn.mpcPeerId, pending: pending.length });
    for (const [id, intent] of pending) this.sendApprovalRequest(conn, id, intent);
    if (this.policySource) {
      try {
        this.pushPolicies(await this.policySource(), conn.deviceId);
      } catch (e) {
        this.log('warn', 'signed policy versions could not be read', {
          err: e instanceof Error ? e.message : String(e),
        });
      }
    }
    for (const w of [...this.onlineWaiters]) {
      this.onlineWaiters.delete(w);
      w();
    }
    return conn;
  }

  private async handle(c: Conn, f: DeviceFrame): Promise<void> {
    if (f.relay) {
      const to = f.relay.peerId;
      const dev = this.byPeer.get(to);
      if (dev) {
        this.emitRelayed({ direction: 'device-to-device', from: c.mpcPeerId, to, envelope: f.relay.envelope });
        this.send(dev.ws, { relay: { peerId: c.mpcPeerId, envelope: f.relay.envelope } });
      } else if (this.init.isSignerPeer(to)) {
        this.emitRelayed({ direction: 'device-to-signer', from: c.mpcPeerId, to, envelope: f.relay.envelope });
        await this.init
          .relayToSigner(to, { peerId: c.mpcPeerId, envelope: f.relay.envelope })
          .catch((e: unknown) =>
            this.log('warn', 'relay to signer failed', { to, err: e instanceof Error ? e.message : String(e) }),
          );
      } else {
        this.log('warn', 'relay: unknown destination', { device: c.deviceId, to });
      }
      return;
    }
    if (f.answer) {
      const key = `${c.deviceId}/${bytesToHex(f.answer.ceremonyId)}`;
      const resolve = this.answers.get(key);
      const res = decodeControlResponse(f.answer.response);
      if (!resolve) {
        this.log('warn', 'ceremony answer for no pending ceremony', { device: c.deviceId });
        return;
      }
      if (!res.ok || !res.value.result) {
        this.log('warn', 'ceremony answer malformed', { device: c.deviceId });
        return;
      }
      resolve(res.value.result);
      return;
    }
    if (f.approvalAnswer) {
      if (!(await this.ifApproved(c))) return;
      this.onApprovalAnswer(c, f.approvalAnswer.requestId, f.approvalAnswer.approvalJson);
      return;
    }
    if (f.error) {
      this.log('warn', 'device reported an error', { device: c.deviceId, code: f.error.code });
      return;
    }
    this.log('warn', 'unexpected device frame', { device: c.deviceId });
  }

  private onApprovalAnswer(c: Conn, requestId: string, json: string): void {
    const intent = this.approvalQueue.get(c.deviceId)?.get(requestId);
    if (!intent) {
      this.log('warn', 'approval for no pending request', { device: c.deviceId, request: requestId });
      return;
    }
    let a: Approval;
    try {
      a = JSON.parse(json) as Approval;
    } catch {
      this.log('warn', 'approval: not JSON', { device: c.deviceId });
      return;
    }
    const problem = this.checkApproval(c, intent, a);
    if (problem) {
      this.log('warn', 'approval rejected', { device: c.deviceId, request: requestId, reason: problem });
      return;
    }
    this.approvalQueue.get(c.deviceId)?.delete(requestId);
    for (const l of this.approvalListeners) {
      try {
        l({ deviceId: c.deviceId, requestId, approval: a });
      } catch (e) {
        this.log('warn', 'approval listener failed', { err: e instanceof Error ? e.message : String(e) });
      }
    }
  }

  private checkApproval(c: Conn, intent: TransferIntent, a: Approval): string | undefined {
    if (typeof a !== 'object' || a === null) return 'not an object';
    if (a.device_id?.toLowerCase() !== c.deviceId) return 'device_id differs from the connected device';
    if (a.transfer_id !== intent.transfer_id) return 'transfer_id differs';
    if (a.decision !== 'APPROVE' && a.decision !== 'REJECT') return 'decision';
    if (a.intent_digest !== bytesToHex(transferIntentDigest(intent))) return 'intent_digest differs';
    const { signature, ...body } = a;
    try {
      const expected = this.knownKeys.get(c.deviceId);
      if (expected && expected !== a.device_public_key) return 'device_public_key differs from the enrolled key';
      // one encoding per approval (signers remember used approvals by their signature string)
      if (!/^[0-9a-f]{128}$/.test(String(signature))) return 'signature: 128 lower-case hex digits';
      if (!deviceVerify(signature, approvalDigest(body), a.device_public_key)) return 'bad signature';
    } catch {
      return 'bad signature';
    }
    return undefined;
  }

  private readonly knownKeys = new Map<string, string>();

  /** Remember the enrolled key of a device (filled at authentication) so approvals are checked against it. */
  private rememberKey(deviceId: string, publicKey: string): void {
    this.knownKeys.set(deviceId, p256.Point.fromHex(publicKey).toHex(true));
  }
}

/** Signed versions in groups of at most 1 MiB of JSON (a device frame carries up to {@link DEVICE_MAX_FRAME_BYTES}). */
function policyBatches(signed: readonly SignedPolicy[]): SignedPolicy[][] {
  const out: SignedPolicy[][] = [];
  let cur: SignedPolicy[] = [];
  let size = 0;
  for (const x of signed) {
    const n = JSON.stringify(x).length;
    if (cur.length > 0 && size + n > 1024 * 1024) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(x);
    size += n;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** Client address bucket of an upgrade request without a proxy: the socket peer, IPv6 by /64. */
function defaultAddress(req: IncomingMessage): string {
  return addressBucket(req.socket.remoteAddress ?? 'unknown');
}

/** Answer an upgrade request with a plain HTTP error and close the socket (no WebSocket). */
function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () => socket.destroy());
  setTimeout(() => socket.destroy(), 1000).unref?.();
}
