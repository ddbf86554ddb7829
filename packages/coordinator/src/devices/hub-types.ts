/**
 * The device hub's constants, components and events (the hub itself: `hub.ts`; the upgrade gate:
 * `hub-gate.ts`; hello checks: `hub-hello.ts`; approval requests: `hub-approvals.ts`).
 */
import type { IncomingMessage, Server } from 'node:http';
import type { RelayFrame } from '@custodian/signer-client';
import type { Approval, SignedPolicy, TransferIntent } from '@custodian/wire';
import type { HubReplicaComponents } from './hub-replicas.js';

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

/** Where the hub logs (never secrets). */
export type HubLog = (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;

/**
 * Frames server signers send to devices over the libp2p relay (`@custodian/signer-client` relay.ts),
 * delivered to the hub by subscription. The relay and the hub need each other (the hub sends
 * through the relay, the relay delivers to the hub): this small emitter, built before both and
 * given to each at construction, breaks that cycle.
 */
export interface SignerFrames {
  /** Subscribe; returns the unsubscribe function. */
  on(listener: (fromSignerPeerId: string, frame: RelayFrame) => void): () => void;
}

/** Components of the device hub (one object at construction; nothing is set afterwards). */
export interface DeviceHubComponents {
  /** The enrolled device records (the devices room's `DeviceStore`), read at every hello and send. */
  devices: { hubRecord(deviceId: string): Promise<HubDeviceRecord | undefined> };
  /** Coordinator libp2p identity: peer id and 32-byte Ed25519 seed (signs ceremony invitations). SECRET. */
  coordinator: { peerId: string; secretKey: Uint8Array };
  /** Is `peerId` a server signer reachable over the relay protocol (this replica's list of them now)? */
  isSignerPeer(peerId: string): boolean;
  /**
   * {@link isSignerPeer}, reading the registered signers again when `peerId` is not in this
   * replica's list (a signer registered through another replica, issue #25): true when it is one
   * now (and then known to {@link isSignerPeer} and {@link relayToSigner}). Absent: the list only.
   * @throws Error when the store cannot be read
   */
  signerPeerRegistered?(peerId: string): Promise<boolean>;
  /** Forward a device's envelope to a server signer (libp2p relay). */
  relayToSigner(signerPeerId: string, frame: RelayFrame): Promise<void>;
  /** Frames from server signers to devices (see {@link SignerFrames}); absent: none arrive. */
  signerFrames?: SignerFrames;
  /**
   * Pin the MPC peer id of an APPROVED device that has none (enrolled before peer ids were bound)
   * at its first authenticated hello; true when pinned (the devices room's `pinLegacyPeerId`).
   * Absent: such a device is refused.
   */
  pinLegacyPeer?: (deviceId: string, peerId: string) => Promise<boolean>;
  /**
   * Devices whose status left APPROVED (device id, new status), after the change committed: each
   * is cut off at once ({@link DeviceHub.revokeDevice}). The devices room reports them and the
   * hub pins through it, so they need each other: an emitter (util.ts `Emitter`) built before
   * both breaks that cycle. Absent: revocations are seen at the device's next send only.
   */
  revocations?: { on(listener: (deviceId: string, status: string) => void): () => void };
  /**
   * Approval requests of the transfers (the transfer service): `pending` is read when a device
   * connects (requests survive a coordinator restart); `decided` receives every verified answer
   * (as {@link DeviceHub.onApproval} observers do). Absent: nothing pending at connection.
   */
  approvals?: {
    pending(deviceId: string): Promise<{ requestId: string; intent: TransferIntent }[]>;
    decided(e: ApprovalEvent): void;
  };
  /**
   * The highest signed version of every policy (PolicyService `signedVersions`), pushed to a device
   * when it connects (issue #26 item 3). Absent: nothing is pushed at connection.
   */
  policies?: { signedVersions(): Promise<readonly SignedPolicy[]> };
  /**
   * Devices whose approval rights were revoked (issue #22; `revoked_approvers`): pushed to every
   * phone as it connects (`RevokeApprover` control requests). Absent: none pushed at connect.
   */
  revokedApprovers?: () => Promise<readonly { deviceId: string; publicKey: string }[]>;
  /** HTTP server whose upgrades to {@link DEVICE_WS_PATH} the hub serves from `start()`; absent: none. */
  server?: Server;
  /**
   * Client address bucket of an upgrade request (the pre-hello cap counts per bucket). Default: the
   * socket's peer address (IPv6 by /64). The coordinator passes one honouring its `trustProxy`.
   */
  clientAddress?: (req: IncomingMessage) => string;
  log?: HubLog;
  limits?: Partial<DeviceHubLimits>;
  /**
   * Several coordinator replicas (issue #25, hub-replicas.ts): the bus, the database of the
   * `device_connections` routes and the replica TTL. The hub then records where each phone is
   * connected and sends what is for a phone held by another replica (approval requests and
   * withdrawals, revocations, policy pushes, ceremony invitations, relay frames) through the bus.
   * Absent: one replica, nothing leaves the process.
   */
  replicas?: HubReplicaComponents;
}
