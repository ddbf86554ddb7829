/**
 * Device hub: the coordinator's WebSocket endpoint for mobile signers (DESIGN §1, §5; proto
 * `custodian/v1/relay.proto` `DeviceFrame`, one binary WebSocket message per frame). Its
 * components, constants and events are in `hub-types.ts`.
 *
 * Longer than 400 lines because the connection registry (connections by device and by MPC peer
 * id), the per-socket frame loop and every send (approval requests, ceremony invitations, relay,
 * policy pushes) read and change the same private state, and each of them also acts for phones
 * connected to another replica (the bus handlers read and change that state too); the parts that
 * stand alone are split out (`hub-gate.ts`, `hub-hello.ts`, `hub-approvals.ts`, and the routes,
 * bus bodies, remote ceremonies and ordered forwarding of `hub-replicas.ts`).
 *
 * - **Replicas** (issue #25; `components.replicas`): a phone's socket is held by one replica. At
 *   its accepted hello the hub records the route (`device_connections`) and tells the others (an
 *   older socket of the device there is closed, 4409). Approval requests and withdrawals,
 *   revocations ({@link DeviceHub.revokeDevice}) and pushes to every phone are broadcast on the
 *   bus: each replica acts for its own sockets. A ceremony invitation for a phone held elsewhere
 *   goes to its replica, which sends it and routes the answer (or the phone's disconnection) back
 *   on the ceremony's topic. Relay frames for a phone held elsewhere go to its replica, in order;
 *   a device's frames to a server signer go over this replica's own libp2p relay (a signer
 *   registered through another replica is found by reading the registered signers again when a
 *   destination is neither a device nor a signer this replica knows).
 *
 * - **Authentication**: on connect the hub sends `DeviceChallenge { nonce (32 random bytes),
 *   coordinator_peer_id }`; the device answers `DeviceHello` within 10 s, checked by `hub-hello.ts`
 *   (APPROVED device, its pinned MPC peer id, its signature). Anything else closes the socket (code
 *   4401; for a device REMOVED or REJECTED after an `Error { code: DEVICE_REVOKED }` frame, so that
 *   it stops reconnecting). A second connection of the same device replaces the first. The
 *   `DeviceWelcome` carries `pending_approvals`, the number of pending approval requests sent right
 *   after it.
 * - **Before the hello** (issue #26 item 11): caps on sockets and bytes, `hub-gate.ts`.
 * - **Revocation**: a device whose status leaves APPROVED (removed, rejected) is cut off at
 *   once by {@link DeviceHub.revokeDevice} (the admin service calls it after the change commits):
 *   an `Error { code: DEVICE_REVOKED }` frame, then close code {@link DEVICE_REVOKED_CLOSE_CODE}
 *   with the reason `device is <STATUS>, not APPROVED`, and its approval queue is dropped. The
 *   status is read again from the store before every approval request, ceremony invitation and
 *   accepted approval answer (send time, not only at hello), so a change made behind this hub
 *   (another coordinator replica, a direct database edit) cuts the device off at its next send.
 * - **Approvals**: {@link DeviceHub.notifyApprovalRequest} pushes a transfer intent (queued while
 *   the device is offline, re-sent on every reconnect until answered); answers are verified by
 *   `hub-approvals.ts` before `approvals.decided` and {@link DeviceHub.onApproval} listeners see them.
 *   Every replica queues every request (the bus); a verified answer on one withdraws the request
 *   from the others' queues (`cancel` broadcast), as a withdrawal does.
 * - **Ceremonies**: {@link DeviceHub.startCeremony} sends a `SignedControl` (the coordinator key
 *   signs it, as for server signers) and resolves with the device's `CeremonyResult`.
 * - **Relay**: `RelayFrame`s from a device are forwarded to the destination device's socket or, for
 *   a server signer, over libp2p `/custodian/relay/1` (`@custodian/signer-client` relay.ts); frames from
 *   signers reach devices through {@link DeviceHub.fromSigner} (subscribed to `signerFrames`). The
 *   hub only moves SignedEnvelope bytes: it cannot read point-to-point payloads nor forge a sender.
 * - **Lifecycle** ({@link Startable}): `start()` serves the upgrades of `components.server`;
 *   `stop()` closes every device socket (1001) and stops accepting.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { bytesToHex, hexToBytes } from '@custodian/crypto';
import { type DeviceFrame, decodeDeviceFrame, encodeDeviceFrame, type RelayFrame } from '@custodian/signer-client';
import {
  type CeremonyResult,
  CONTROL_VERSION,
  DEFAULT_LIMITS,
  decodeControlResponse,
  Outcome,
  refusalValue,
  type SignedPolicy,
  type StartCeremony,
  signControlRequest,
  type TransferIntent,
} from '@custodian/wire';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Startable } from '../lifecycle.js';
import type { DeviceCeremonyPort } from '../signing/gateway.js';
import { policySyncBatches } from '../signing/policy-sync.js';
import { ApprovalDesk } from './hub-approvals.js';
import { PreHelloGate } from './hub-gate.js';
import { checkHello } from './hub-hello.js';
import { ceremonyTopic, DeviceRoutes, HUB_TOPICS, type RemoteAnswerHeader, unpackBody } from './hub-replicas.js';
import {
  type ApprovalEvent,
  DEVICE_HELLO_MAX_FRAME_BYTES,
  DEVICE_MAX_FRAME_BYTES,
  DEVICE_PRE_HELLO_PER_ADDRESS,
  DEVICE_PRE_HELLO_TOTAL,
  DEVICE_REVOKED_CLOSE_CODE,
  DEVICE_WS_PATH,
  type DeviceHubComponents,
  type RelayedEvent,
} from './hub-types.js';

export type {
  ApprovalEvent,
  DeviceHubComponents,
  DeviceHubLimits,
  HubDeviceRecord,
  HubLog,
  RelayedEvent,
  SignerFrames,
} from './hub-types.js';
export {
  DEVICE_HELLO_MAX_FRAME_BYTES,
  DEVICE_MAX_FRAME_BYTES,
  DEVICE_PRE_HELLO_PER_ADDRESS,
  DEVICE_PRE_HELLO_TOTAL,
  DEVICE_REVOKED_CLOSE_CODE,
  DEVICE_WS_PATH,
} from './hub-types.js';

const HELLO_TIMEOUT_MS = 10_000;

interface Conn {
  ws: WebSocket;
  deviceId: string;
  mpcPeerId: string;
  /** `connected_at` of its `device_connections` row (replicas); undefined until recorded. */
  routeToken?: string;
}

/** The device hub. Create with `new DeviceHub(components)`; `start()` serves `components.server`. */
export class DeviceHub implements DeviceCeremonyPort, Startable {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: DEVICE_MAX_FRAME_BYTES });
  private readonly byDevice = new Map<string, Conn>();
  private readonly byPeer = new Map<string, Conn>();
  private readonly desk: ApprovalDesk;
  private readonly gate: PreHelloGate;
  private readonly relayListeners = new Set<(e: RelayedEvent) => void>();
  private readonly answers = new Map<string, (res: CeremonyResult, raw: Uint8Array) => void>();
  private readonly onlineWaiters = new Set<() => void>();
  /** Last MPC peer id each device announced (kept across disconnects). */
  private readonly knownPeer = new Map<string, string>();
  private readonly unsubscribe: () => void;
  /** Routes and messages among coordinator replicas (hub-replicas.ts); absent: one replica. */
  private readonly routes: DeviceRoutes | undefined;
  private attached = false;
  private closed = false;
  /** Re-assertion of this replica's routes (replicas), every third of the TTL while serving. */
  private routeTimer: NodeJS.Timeout | undefined;

  constructor(private readonly init: DeviceHubComponents) {
    const log = (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => this.log(level, msg, fields);
    this.desk = new ApprovalDesk(log);
    const decided = init.approvals?.decided;
    if (decided) this.desk.on((e) => decided(e));
    this.gate = new PreHelloGate(
      {
        preHelloPerAddress: init.limits?.preHelloPerAddress ?? DEVICE_PRE_HELLO_PER_ADDRESS,
        preHelloTotal: init.limits?.preHelloTotal ?? DEVICE_PRE_HELLO_TOTAL,
      },
      init.clientAddress,
      log,
    );
    const offFrames = init.signerFrames?.on((from, frame) => this.fromSigner(from, frame));
    const offRevocations = init.revocations?.on((deviceId, status) => this.revokeDevice(deviceId, status));
    this.routes = init.replicas ? new DeviceRoutes(init.replicas, log) : undefined;
    const offBus = this.routes ? this.subscribeReplicas(this.routes) : [];
    this.unsubscribe = () => {
      offFrames?.();
      offRevocations?.();
      for (const off of offBus) off();
    };
  }

  /**
   * Serve {@link DEVICE_WS_PATH} on `components.server` (HTTP upgrade; none without a server). An
   * upgrade beyond the pre-hello caps is answered `429 Too Many Requests` (per address) or `503
   * Service Unavailable` (in all). Idempotent.
   */
  async start(): Promise<void> {
    const server = this.init.server;
    if (!server || this.attached || this.closed) return;
    this.attached = true;
    if (this.routes && this.init.replicas) {
      const routes = this.routes;
      const every = Math.max(100, Math.floor(this.init.replicas.ttlMs / 3));
      const tick = () => {
        this.routeTimer = setTimeout(() => {
          const mine = [...this.byDevice.values()].flatMap((c) =>
            c.routeToken === undefined ? [] : [{ deviceId: c.deviceId, mpcPeerId: c.mpcPeerId, token: c.routeToken }],
          );
          routes
            .reassert(mine)
            .catch((e: unknown) =>
              this.log('warn', 'device routes not re-asserted', { err: e instanceof Error ? e.message : String(e) }),
            )
            .finally(() => {
              if (!this.closed) tick();
            });
        }, every);
        this.routeTimer.unref?.();
      };
      tick();
    }
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== DEVICE_WS_PATH || this.closed) {
        socket.destroy();
        return;
      }
      this.gate.admit(req, socket, head, (authenticated, opened) =>
        this.wss.handleUpgrade(req, socket, head, (ws) => {
          opened(ws);
          this.accept(ws, authenticated);
        }),
      );
    });
  }

  /** {@link close}, then the deletion of this replica's device routes. */
  async stop(): Promise<void> {
    this.close();
    await this.routes?.dropAll().catch((e: unknown) =>
      this.log('warn', 'device routes of this replica not deleted', {
        err: e instanceof Error ? e.message : String(e),
      }),
    );
  }

  /**
   * Push signed policy versions and tombstones (a signed `PolicySync` control request in an
   * `invitation` frame, no answer expected) to one connected device, or to every connected device
   * whose status is APPROVED at send time. The device checks each against its own trusted Admin
   * keys and keeps the highest version per policy (`@custodian/ceremony` enforce/policies.ts
   * `learnSignedPolicies`). Best effort: a device offline now gets all of them when it connects.
   * Without `deviceId`, every replica pushes them to its own phones (the bus, topic `hub.push`).
   */
  pushPolicies(signed: readonly SignedPolicy[], deviceId?: string): void {
    if (signed.length === 0) return;
    if (deviceId === undefined) this.routes?.broadcast(HUB_TOPICS.push, { kind: 'policies', signed });
    this.pushPoliciesHere(signed, deviceId);
  }

  private pushPoliciesHere(signed: readonly SignedPolicy[], deviceId?: string): void {
    const conns = deviceId === undefined ? [...this.byDevice.values()] : [this.byDevice.get(deviceId)];
    for (const c of conns) {
      if (!c) continue;
      void this.ifApproved(c)
        .then((ok) => {
          if (!ok) return;
          for (const batch of policySyncBatches(signed)) {
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

  /**
   * Push `RevokeApprover` control requests (issue #22: these devices approve nothing any more) in
   * `invitation` frames to one connected device, or to every connected APPROVED device. Best
   * effort: a phone offline now gets every revocation when it connects
   * ({@link DeviceHubComponents.revokedApprovers}). Without `deviceId`, every replica pushes them
   * to its own phones.
   */
  pushRevocations(revoked: readonly { deviceId: string; publicKey: string }[], deviceId?: string): void {
    if (revoked.length === 0) return;
    if (deviceId === undefined) this.routes?.broadcast(HUB_TOPICS.push, { kind: 'revocations', revoked });
    this.pushRevocationsHere(revoked, deviceId);
  }

  private pushRevocationsHere(revoked: readonly { deviceId: string; publicKey: string }[], deviceId?: string): void {
    const conns = deviceId === undefined ? [...this.byDevice.values()] : [this.byDevice.get(deviceId)];
    for (const c of conns) {
      if (!c) continue;
      void this.ifApproved(c)
        .then((ok) => {
          if (!ok) return;
          for (const r of revoked) {
            const signedControl = signControlRequest(
              {
                version: CONTROL_VERSION,
                issuedUnixMs: Date.now(),
                revokeApprover: {
                  deviceId: r.deviceId,
                  ...(/^0[23][0-9a-f]{64}$/.test(r.publicKey) ? { publicKey: hexToBytes(r.publicKey) } : {}),
                },
              },
              this.init.coordinator.secretKey,
            );
            this.send(c.ws, { invitation: { signedControl } });
          }
        })
        .catch((e: unknown) =>
          this.log('warn', 'revocations not pushed to a device', {
            device: c.deviceId,
            err: e instanceof Error ? e.message : String(e),
          }),
        );
    }
  }

  private log(level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>): void {
    this.init.log?.(level, msg, fields);
  }

  /** Device ids connected and authenticated now, on THIS replica (see {@link onlineAnywhere}). */
  online(): string[] {
    return [...this.byDevice.keys()];
  }

  /** Device ids connected now on any live replica (this one's sockets, and the routes of the others). */
  async onlineAnywhere(): Promise<string[]> {
    const here = this.online();
    if (!this.routes) return here;
    return [...new Set([...here, ...(await this.routes.online())])].sort();
  }

  /** Whether `deviceId` is connected now, here or on another live replica. */
  async isOnline(deviceId: string): Promise<boolean> {
    const id = deviceId.toLowerCase();
    if (this.byDevice.has(id)) return true;
    return (await this.routes?.holder(id)) !== undefined;
  }

  /**
   * MPC peer id of a device connected here or on another live replica, or last announced here;
   * undefined if none of these.
   */
  async peerIdAnywhere(deviceId: string): Promise<string | undefined> {
    const id = deviceId.toLowerCase();
    const here = this.peerIdOf(id);
    if (here !== undefined) return here;
    const route = await this.routes?.holder(id);
    if (route) this.knownPeer.set(id, route.mpcPeerId);
    return route?.mpcPeerId;
  }

  /** MPC peer id of a device (connected now, or last announced); undefined if never seen. */
  peerIdOf(deviceId: string): string | undefined {
    return this.byDevice.get(deviceId)?.mpcPeerId ?? this.knownPeer.get(deviceId);
  }

  /**
   * Wait until `deviceId` is connected, here or on another live replica (its MPC peer id is then
   * known to {@link peerIdOf}); rejects at `until` (Unix ms).
   */
  async waitOnline(deviceId: string, until: number, signal?: AbortSignal): Promise<void> {
    await this.waitConnected(deviceId, until, signal);
  }

  /** {@link waitOnline}: this replica's connection, or the live replica holding the device. */
  private async waitConnected(
    deviceId: string,
    until: number,
    signal?: AbortSignal,
  ): Promise<{ conn: Conn } | { holder: string }> {
    for (;;) {
      const c = this.byDevice.get(deviceId);
      if (c) return { conn: c };
      const route = await this.routes?.holder(deviceId);
      if (route && route.replicaId !== this.routes?.replicaId) {
        this.knownPeer.set(deviceId, route.mpcPeerId);
        return { holder: route.replicaId };
      }
      const again = this.byDevice.get(deviceId);
      if (again) return { conn: again };
      if (Date.now() >= until || this.closed) throw new Error(`device ${deviceId} is not connected`);
      if (signal?.aborted) throw new Error('aborted');
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.min(this.routes ? 250 : 1000, Math.max(0, until - Date.now())));
        function done() {
          clearTimeout(t);
          resolve();
        }
        this.onlineWaiters.add(done);
      });
    }
  }

  /**
   * Subscribe to verified approval decisions (observers; the transfer service gets them as
   * `components.approvals.decided`); returns the unsubscribe function.
   */
  onApproval(listener: (e: ApprovalEvent) => void): () => void {
    return this.desk.on(listener);
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
    this.routes?.broadcast(HUB_TOPICS.approvals, { op: 'add', deviceId, requestId, intent });
    this.approvalHere(deviceId, requestId, intent);
    return requestId;
  }

  /** {@link notifyApprovalRequest} for this replica's queue and socket. */
  private approvalHere(deviceId: string, requestId: string, intent: TransferIntent): void {
    this.desk.add(deviceId, requestId, intent);
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
  }

  /**
   * Cut a device off: its status is no longer APPROVED (`REMOVED`, `REJECTED`, or any other).
   * Drops its approval queue, its remembered key and MPC peer id, sends `Error { code:
   * DEVICE_REVOKED }` and closes its socket with {@link DEVICE_REVOKED_CLOSE_CODE} (a ceremony it
   * was in ends ABORTED at once). Idempotent; a device not connected only loses its queue.
   * Every replica does the same for its own socket of the device (the bus, topic `hub.revoke`).
   * @param status the device's new status, named in the close reason (no secret)
   */
  revokeDevice(deviceId: string, status: string): void {
    const id = deviceId.toLowerCase();
    this.routes?.broadcast(HUB_TOPICS.revoke, { deviceId: id, status });
    this.revokeHere(id, status);
  }

  /** {@link revokeDevice} on this replica only. */
  private revokeHere(id: string, status: string): void {
    this.desk.forget(id);
    this.knownPeer.delete(id);
    const c = this.byDevice.get(id);
    if (!c) return;
    this.byDevice.delete(id);
    if (this.byPeer.get(c.mpcPeerId) === c) this.byPeer.delete(c.mpcPeerId);
    this.dropRoute(c);
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
    const rec = await this.init.devices.hubRecord(c.deviceId);
    if (rec?.status === 'APPROVED') return this.byDevice.get(c.deviceId) === c;
    this.revokeHere(c.deviceId, rec?.status ?? 'UNKNOWN');
    return false;
  }

  /** Withdraw a pending approval request (transfer cancelled, expired or decided), on every replica. */
  cancelApprovalRequest(deviceId: string, requestId: string): void {
    const id = deviceId.toLowerCase();
    this.routes?.broadcast(HUB_TOPICS.approvals, { op: 'cancel', deviceId: id, requestId });
    this.desk.cancel(id, requestId);
  }

  /**
   * {@link DeviceCeremonyPort}: run a device's part of a ceremony (waits for it to connect until the
   * deadline). Resolves with the device's result; rejects when the device does not connect in time
   * or its connection closes before it answers. A device connected to another replica gets the
   * invitation through the bus and answers through it (hub-replicas.ts `runRemote`: rejects too
   * when that replica stops or dies, and at the deadline).
   */
  async startCeremony(deviceId: string, start: StartCeremony): Promise<CeremonyResult> {
    deviceId = deviceId.toLowerCase();
    const where = await this.waitConnected(deviceId, Number(start.deadlineUnixMs));
    const notApproved: CeremonyResult = {
      ceremonyId: start.ceremonyId,
      outcome: Outcome.REFUSED,
      refusal: refusalValue('DEVICE_NOT_APPROVED'),
      error: 'device is not APPROVED',
    };
    if ('holder' in where) return this.remoteCeremony(where.holder, deviceId, start, notApproved);
    const conn = where.conn;
    // checked at send time: an invitation goes only to a device APPROVED now
    if (!(await this.ifApproved(conn))) return notApproved;
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

  /** {@link startCeremony} of a device connected to the replica `holder`. */
  private async remoteCeremony(
    holder: string,
    deviceId: string,
    start: StartCeremony,
    notApproved: CeremonyResult,
  ): Promise<CeremonyResult> {
    const routes = this.routes as DeviceRoutes;
    // the status now (the holder checks it again before it sends the invitation)
    const rec = await this.init.devices.hubRecord(deviceId);
    if (rec?.status !== 'APPROVED') {
      this.revokeDevice(deviceId, rec?.status ?? 'UNKNOWN');
      return notApproved;
    }
    const signedControl = signControlRequest(
      { version: CONTROL_VERSION, issuedUnixMs: Date.now(), start },
      this.init.coordinator.secretKey,
    );
    const out = await routes.runRemote({
      holder,
      deviceId,
      ceremonyId: start.ceremonyId,
      deadlineUnixMs: Number(start.deadlineUnixMs),
      signedControl,
    });
    if (out.kind === 'refused') return notApproved;
    const res = decodeControlResponse(out.response);
    if (!res.ok || !res.value.result) throw new Error(`device ${deviceId}: malformed ceremony answer`);
    return res.value.result;
  }

  /** {@link DeviceCeremonyPort}: best-effort abort of a device's ceremony (here, or on the replica holding it). */
  async abortCeremony(deviceId: string, ceremonyId: Uint8Array, reason: string): Promise<void> {
    const id = deviceId.toLowerCase();
    const signedControl = signControlRequest(
      { version: CONTROL_VERSION, issuedUnixMs: Date.now(), abort: { ceremonyId, reason } },
      this.init.coordinator.secretKey,
    );
    const c = this.byDevice.get(id);
    if (c) {
      this.send(c.ws, { invitation: { signedControl } });
      return;
    }
    const route = await this.routes?.holder(id);
    if (!route || route.replicaId === this.routes?.replicaId) return;
    await this.routes
      ?.send(route.replicaId, HUB_TOPICS.abort, { deviceId: id, ceremonyId: bytesToHex(ceremonyId) }, signedControl)
      .catch(() => undefined);
  }

  /**
   * An envelope a server signer sent to a device (libp2p relay): forward it to the device's socket,
   * or through the bus to the replica holding the device (in order, hub-replicas.ts `forward`).
   */
  fromSigner(signerPeerId: string, frame: RelayFrame): void {
    const c = this.byPeer.get(frame.peerId);
    if (c) {
      this.emitRelayed({
        direction: 'signer-to-device',
        from: signerPeerId,
        to: frame.peerId,
        envelope: frame.envelope,
      });
      this.send(c.ws, { relay: { peerId: signerPeerId, envelope: frame.envelope } });
      return;
    }
    void this.forward(frame.peerId, signerPeerId, 'signer-to-device', frame.envelope).then((sent) => {
      if (!sent) this.log('warn', 'relay: destination device not connected', { to: frame.peerId, from: signerPeerId });
    });
  }

  /** Forward a relay frame to the replica holding `to`; false when none does (or the bus failed). */
  private async forward(to: string, from: string, direction: RelayedEvent['direction'], envelope: Uint8Array) {
    if (!this.routes) return false;
    try {
      const sent = await this.routes.forward(to, { from, to, direction }, envelope);
      if (sent) this.emitRelayed({ direction, from, to, envelope });
      return sent;
    } catch (e) {
      this.log('warn', 'relay: forwarding to another replica failed', {
        to,
        err: e instanceof Error ? e.message : String(e),
      });
      return false;
    }
  }

  /** A device's frame to a server signer: over this replica's own libp2p relay. */
  private async toSigner(c: Conn, to: string, envelope: Uint8Array): Promise<void> {
    this.emitRelayed({ direction: 'device-to-signer', from: c.mpcPeerId, to, envelope });
    await this.init
      .relayToSigner(to, { peerId: c.mpcPeerId, envelope })
      .catch((e: unknown) =>
        this.log('warn', 'relay to signer failed', { to, err: e instanceof Error ? e.message : String(e) }),
      );
  }

  /** Whether `peerId` is a server signer registered through any replica (the store read again); false when unreadable. */
  private async signerRegistered(peerId: string): Promise<boolean> {
    try {
      return (await this.init.signerPeerRegistered?.(peerId)) === true;
    } catch (e) {
      this.log('warn', 'server signers could not be read', { err: e instanceof Error ? e.message : String(e) });
      return false;
    }
  }

  /** Delete the route of a connection of this replica (when recorded; a newer one stays). */
  private dropRoute(c: Conn): void {
    const token = c.routeToken;
    if (!this.routes || token === undefined) return;
    c.routeToken = undefined;
    this.routes.drop(c.deviceId, token).catch((e: unknown) =>
      this.log('warn', 'device route not deleted', {
        device: c.deviceId,
        err: e instanceof Error ? e.message : String(e),
      }),
    );
  }

  /** Act on what other replicas publish for the phones connected here (hub-replicas.ts HUB_TOPICS). */
  private subscribeReplicas(routes: DeviceRoutes): (() => void)[] {
    const self = routes.replicaId;
    // a throwing handler is logged by the bus; bodies come from replicas of this instance
    const on = <T>(topic: string, fn: (header: T, payload: Uint8Array, sender: string) => void, others = true) =>
      routes.bus.subscribe(topic, (body, sender) => {
        if (others && sender === self) return;
        const m = unpackBody<T>(body);
        fn(m.header, m.payload, sender);
      });
    type Approvals =
      | { op: 'add'; deviceId: string; requestId: string; intent: TransferIntent }
      | { op: 'cancel'; deviceId: string; requestId: string };
    type Push =
      | { kind: 'policies'; signed: SignedPolicy[] }
      | { kind: 'revocations'; revoked: { deviceId: string; publicKey: string }[] };
    return [
      on<Approvals>(HUB_TOPICS.approvals, (h) => {
        if (h.op === 'add') this.approvalHere(h.deviceId, h.requestId, h.intent);
        else this.desk.cancel(h.deviceId, h.requestId);
      }),
      on<{ deviceId: string; status: string }>(HUB_TOPICS.revoke, (h) => this.revokeHere(h.deviceId, h.status)),
      on<Push>(HUB_TOPICS.push, (h) => {
        if (h.kind === 'policies') this.pushPoliciesHere(h.signed);
        else this.pushRevocationsHere(h.revoked);
      }),
      on<{ deviceId: string }>(HUB_TOPICS.connected, (h) => void this.replacedElsewhere(h.deviceId)),
      on<{ origin: string; deviceId: string; ceremonyId: string; deadlineUnixMs: number }>(
        HUB_TOPICS.invite,
        (h, payload) => void this.serveRemoteInvite(routes, h, Uint8Array.from(payload)),
        false,
      ),
      on<{ deviceId: string; ceremonyId: string }>(
        HUB_TOPICS.abort,
        (h, payload) => {
          const c = this.byDevice.get(h.deviceId);
          if (c) this.send(c.ws, { invitation: { signedControl: Uint8Array.from(payload) } });
        },
        false,
      ),
      on<{ from: string; to: string; direction: RelayedEvent['direction'] }>(
        HUB_TOPICS.relay,
        (h, payload) => {
          const c = this.byPeer.get(h.to);
          if (!c) {
            this.log('warn', 'relay: destination device not connected here any more', { to: h.to, from: h.from });
            return;
          }
          const envelope = Uint8Array.from(payload);
          this.emitRelayed({ direction: h.direction, from: h.from, to: h.to, envelope });
          this.send(c.ws, { relay: { peerId: h.from, envelope } });
        },
        false,
      ),
    ];
  }

  /** Another replica accepted a connection of `deviceId`: close the one here unless the route is (again) ours. */
  private async replacedElsewhere(deviceId: string): Promise<void> {
    const c = this.byDevice.get(deviceId);
    if (!c || !this.routes) return;
    const route = await this.routes.holder(deviceId).catch(() => undefined);
    if (route === undefined || route.replicaId === this.routes.replicaId || this.byDevice.get(deviceId) !== c) return;
    this.byDevice.delete(deviceId);
    if (this.byPeer.get(c.mpcPeerId) === c) this.byPeer.delete(c.mpcPeerId);
    c.routeToken = undefined; // the row is the other replica's now
    c.ws.close(4409, 'replaced by a new connection');
  }

  /** Holder side of a ceremony started on replica `h.origin` for a device connected here. */
  private async serveRemoteInvite(
    routes: DeviceRoutes,
    h: { origin: string; deviceId: string; ceremonyId: string; deadlineUnixMs: number },
    signedControl: Uint8Array,
  ): Promise<void> {
    const reply = (header: RemoteAnswerHeader, payload?: Uint8Array) =>
      routes.send(h.origin, ceremonyTopic(h.ceremonyId), header, payload).catch((e: unknown) =>
        this.log('warn', 'ceremony answer not sent to the replica running it', {
          device: h.deviceId,
          err: e instanceof Error ? e.message : String(e),
        }),
      );
    const c = this.byDevice.get(h.deviceId);
    if (!c) {
      await reply({ deviceId: h.deviceId, kind: 'gone', reason: `device ${h.deviceId} is not connected` });
      return;
    }
    if (!(await this.ifApproved(c))) {
      await reply({ deviceId: h.deviceId, kind: 'refused', status: 'not APPROVED' });
      return;
    }
    const key = `${h.deviceId}/${h.ceremonyId}`;
    const cleanup = () => {
      clearTimeout(timer);
      c.ws.off('close', gone);
      if (this.answers.get(key) === answered) this.answers.delete(key);
    };
    const answered = (_res: CeremonyResult, raw: Uint8Array) => {
      cleanup();
      void reply({ deviceId: h.deviceId, kind: 'result' }, raw);
    };
    const gone = () => {
      cleanup();
      const reason = this.closed
        ? 'coordinator shutting down'
        : `device ${h.deviceId} disconnected during the ceremony`;
      void reply({ deviceId: h.deviceId, kind: 'gone', reason });
    };
    // the originator gives up at the deadline: forget the ceremony a little after it
    const timer = setTimeout(cleanup, Math.max(0, h.deadlineUnixMs - Date.now()) + 15_000);
    timer.unref?.();
    this.answers.set(key, answered);
    c.ws.once('close', gone);
    this.send(c.ws, { invitation: { signedControl } });
  }

  /**
   * Close every device connection (authenticated ones with 1001 `coordinator shutting down`, others
   * at once) and stop accepting. Idempotent. Called by the coordinator's stop before the HTTP
   * server closes (which waits for every open socket).
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.routeTimer);
    this.unsubscribe();
    for (const c of this.byDevice.values()) {
      this.dropRoute(c);
      c.ws.close(1001, 'coordinator shutting down');
    }
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
        this.dropRoute(conn);
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
    const fail = (why: string, code = 'UNAUTHENTICATED') => {
      this.log('warn', 'device authentication failed', { device: hello.deviceId, reason: why });
      this.send(ws, { error: { code, message: why } });
      ws.close(4401, why);
      return undefined;
    };
    const v = await checkHello(this.init, nonce, hello);
    if (!v.ok) return fail(v.why, v.revoked ? 'DEVICE_REVOKED' : 'UNAUTHENTICATED');
    if (v.pinned) {
      this.log('info', 'device MPC peer id pinned at first hello', { device: hello.deviceId, peer: hello.mpcPeerId });
    }
    const other = this.byPeer.get(v.mpcPeerId);
    if (other && other.deviceId !== v.deviceId) return fail('mpc_peer_id used by another device');
    const conn: Conn = { ws, deviceId: v.deviceId, mpcPeerId: v.mpcPeerId };
    const prev = this.byDevice.get(conn.deviceId);
    if (prev) {
      this.byPeer.delete(prev.mpcPeerId);
      prev.ws.close(4409, 'replaced by a new connection');
    }
    this.byDevice.set(conn.deviceId, conn);
    this.byPeer.set(conn.mpcPeerId, conn);
    this.knownPeer.set(conn.deviceId, conn.mpcPeerId);
    this.desk.rememberKey(conn.deviceId, v.record.publicKey);
    if (this.init.approvals) {
      try {
        for (const p of await this.init.approvals.pending(conn.deviceId))
          this.desk.add(conn.deviceId, p.requestId, p.intent);
      } catch (e) {
        this.log('warn', 'pending approvals could not be read', { err: e instanceof Error ? e.message : String(e) });
      }
    }
    // the route (replicas): the other replicas send what is for this device here from now on,
    // and close an older socket of it they hold
    if (this.routes) {
      try {
        const token = await this.routes.record(conn.deviceId, conn.mpcPeerId);
        if (this.byDevice.get(conn.deviceId) === conn) {
          conn.routeToken = token;
          this.routes.broadcast(HUB_TOPICS.connected, { deviceId: conn.deviceId });
        } else await this.routes.drop(conn.deviceId, token);
      } catch (e) {
        this.log('warn', 'device route not recorded', { err: e instanceof Error ? e.message : String(e) });
      }
    }
    // the status again, after the awaits above: a removal that committed meanwhile wins
    if (!(await this.ifApproved(conn))) return undefined;
    // the welcome says how many pending approval requests follow (the device logs what it resumes)
    const pending = this.desk.pending(conn.deviceId);
    this.send(ws, { welcome: { pendingApprovals: pending.length } });
    this.log('info', 'device connected', { device: conn.deviceId, peer: conn.mpcPeerId, pending: pending.length });
    for (const [id, intent] of pending) this.sendApprovalRequest(conn, id, intent);
    if (this.init.revokedApprovers) {
      try {
        this.pushRevocations(await this.init.revokedApprovers(), conn.deviceId);
      } catch (e) {
        this.log('warn', 'revoked approvers could not be read', { err: e instanceof Error ? e.message : String(e) });
      }
    }
    if (this.init.policies) {
      try {
        this.pushPolicies(await this.init.policies.signedVersions(), conn.deviceId);
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
        await this.toSigner(c, to, f.relay.envelope);
      } else if (await this.forward(to, c.mpcPeerId, 'device-to-device', f.relay.envelope)) {
        // a device held by another replica
      } else if (await this.signerRegistered(to)) {
        // a server signer registered through another replica since this one read the list
        await this.toSigner(c, to, f.relay.envelope);
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
      resolve(res.value.result, f.answer.response);
      return;
    }
    if (f.approvalAnswer) {
      if (!(await this.ifApproved(c))) return;
      const { requestId } = f.approvalAnswer;
      // answered: the other replicas' queues drop it too (each got the request by the broadcast),
      // or a reconnection there would ask the phone again and decide its answer twice
      if (this.desk.answer(c.deviceId, requestId, f.approvalAnswer.approvalJson))
        this.routes?.broadcast(HUB_TOPICS.approvals, { op: 'cancel', deviceId: c.deviceId, requestId });
      return;
    }
    if (f.error) {
      this.log('warn', 'device reported an error', { device: c.deviceId, code: f.error.code });
      return;
    }
    this.log('warn', 'unexpected device frame', { device: c.deviceId });
  }
}
