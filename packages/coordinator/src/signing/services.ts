/**
 * The coordinator's signer-facing services, built from configuration by `createCoordinator`:
 * its libp2p identity (Ed25519, persisted in `<dataDir>/coordinator-p2p.key`, 0600, libp2p
 * private-key protobuf), a dial-only libp2p host pinned to the server signers registered in the
 * admin API (`server_signers`, re-read before every ceremony) with a link kept to each (dialled at
 * start, re-dialled forever with backoff when it drops: `@custodian/signer-client` links.ts), the control
 * client, the relay to signers for device parties, the device hub (WebSocket), the
 * {@link SignerGateway}, the master key {@link CeremonyClient} and the push of signed policy
 * versions to the signers (policy-sync.ts).
 *
 * {@link createSigningServices} builds them (loading the identity and creating the dial-only
 * libp2p host, which listens nowhere); {@link SigningServices.start} starts their background work
 * (links to the signers, the presignature pool, the first policy sync), {@link SigningServices.stop}
 * ends it and stops the host. The device hub is a {@link Startable} of its own (the composition
 * root starts it after the HTTP server it serves and stops it before that server closes).
 *
 * Operators configure every signer with this coordinator's peer id (`coordinator.peerId`); it is
 * printed by `custodian coordinator peer-id` and logged at start.
 */
import { access, chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ControlClient, createCoordinatorRelay, PeerLinks } from '@custodian/signer-client';
import { DEFAULT_LIMITS, KeyAlgorithm } from '@custodian/wire';
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { type Logger, pino } from 'pino';
import type { CeremonyClient } from '../ceremony.js';
import type { Db } from '../db/db.js';
import { DeviceHub, type DeviceHubComponents, type DeviceHubLimits, type SignerFrames } from '../devices/hub.js';
import type { DeviceStore } from '../devices/store.js';
import { CoordinatorError } from '../errors.js';
import type { Startable } from '../lifecycle.js';
import { observedCeremonyClient } from '../metrics/observe.js';
import type { SigningMetrics } from '../metrics/registry.js';
import type { ReplicaBus } from '../replicas/bus.js';
import type { ReplicaOptions } from '../replicas/registry.js';
import type { MasterKeyStore, ServerSignerStore } from '../signers/store.js';
import { evidenceSignFields } from '../transfers/evidence.js';
import { signedPolicyVersions } from '../transfers/policies.js';
import { Emitter } from '../util.js';
import type { BlameStore } from './blame-store.js';
import {
  createSignerGateway,
  type PartyDirectory,
  type PartyDispatch,
  presignCeremony,
  type SignerGateway,
} from './gateway.js';
import { createKeyCeremonyPort, type KeyCeremonyPort, RevocationSync } from './key-ops.js';
import { createMasterKeyClient } from './master-key.js';
import { PolicySync } from './policy-sync.js';
import { type PresignatureHolders, PresignaturePool, type PresignaturePoolOptions } from './presignature-pool.js';

/** File of the coordinator's libp2p private key in the data folder. */
export const COORDINATOR_KEY_FILE = 'coordinator-p2p.key';

/**
 * Load the coordinator's libp2p Ed25519 identity from `<dataDir>/coordinator-p2p.key`, creating it
 * (mode 0600) on first use; without a data folder an ephemeral key (tests).
 * @throws Error when the file exists but is not an Ed25519 libp2p private key
 */
export async function loadOrCreateCoordinatorKey(dataDir: string | undefined): Promise<PrivateKey> {
  if (dataDir === undefined) return generateKeyPair('Ed25519');
  const path = join(dataDir, COORDINATOR_KEY_FILE);
  let raw: Buffer | undefined;
  try {
    raw = await readFile(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (raw) {
    const key = privateKeyFromProtobuf(new Uint8Array(raw));
    if (key.type !== 'Ed25519') throw new Error(`${path}: not an Ed25519 key`);
    return key;
  }
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const key = await generateKeyPair('Ed25519');
  await writeFile(path, privateKeyToProtobuf(key), { mode: 0o600, flag: 'wx' });
  await chmod(path, 0o600);
  return key;
}

/**
 * Peer id string of the coordinator identity in `dataDir` (`<dataDir>/coordinator-p2p.key`).
 * @param options.create create the identity (mode 0600) when it is missing; default true (the
 *   coordinator's own start). `false`: only read it (`custodian coordinator peer-id`).
 * @throws CoordinatorError `COORDINATOR_IDENTITY_MISSING` when there is no identity and `create`
 *   is false; Error when the file exists but is not an Ed25519 libp2p private key
 */
export async function coordinatorPeerId(dataDir: string, options: { create?: boolean } = {}): Promise<string> {
  if (options.create === false) {
    const path = join(dataDir, COORDINATOR_KEY_FILE);
    const present = await access(path).then(
      () => true,
      (e: NodeJS.ErrnoException) => {
        if (e.code === 'ENOENT') return false;
        throw e;
      },
    );
    if (!present)
      throw new CoordinatorError(
        'COORDINATOR_IDENTITY_MISSING',
        `no coordinator identity at ${path}: give the --data-dir the coordinator runs with, or pass --create to create one now`,
      );
  }
  return peerIdFromPrivateKey(await loadOrCreateCoordinatorKey(dataDir)).toString();
}

/** Components of {@link createSigningServices} (one object; nothing is set afterwards). */
export interface SigningServicesComponents {
  /** The signing room's tables (presignatures, refills, signing attempts) and signed policy versions. */
  db: Db;
  /** Master key records (signers room): the presignature pool's keys. */
  masterKeys: Pick<MasterKeyStore, 'listMasterKeys'>;
  /** Registered server signers (signers room), re-read before every ceremony. */
  signers: Pick<ServerSignerStore, 'live' | 'peerIdOf' | 'isLivePeer'>;
  /** Device records (devices room): the hub's checks, device parties' status and keys. */
  devices: Pick<DeviceStore, 'hubRecord' | 'status' | 'publicKey'>;
  /**
   * What the device hub takes from the other rooms ({@link DeviceHubComponents}): the legacy peer
   * id pinning and the revocations (devices), pending approvals and their answers (transfers), signed policy versions
   * (policies), the HTTP server and its client address rule. Each optional.
   */
  hub?: Pick<
    DeviceHubComponents,
    'pinLegacyPeer' | 'revocations' | 'approvals' | 'policies' | 'server' | 'clientAddress'
  >;
  /**
   * Several coordinator replicas (issue #25): the bus and the registry (its `options.ttlMs`). The
   * device hub then reaches phones connected to any live replica (devices/hub-replicas.ts), and
   * the gateway's availability and the party directory see them. Absent: one replica.
   */
  replicas?: { bus: ReplicaBus; registry: { readonly options: Pick<ReplicaOptions, 'ttlMs'> } };
  dataDir?: string;
  privateKey?: PrivateKey;
  log?: Logger;
  /** Master key algorithms (`KeyAlgorithm` values); default all three. */
  algorithms?: number[];
  /**
   * CGGMP21 presignatures kept per (ECDSA key, signing set) (signing/presignature-pool.ts): a
   * number (the target; 0 = off) or the pool options. Default 4. Off when `algorithms` has no ECDSA.
   */
  presignaturePool?: number | Partial<PresignaturePoolOptions>;
  /** Device WebSocket pre-hello caps (devices/hub.ts defaults). */
  deviceSockets?: Partial<DeviceHubLimits>;
  /**
   * Links kept to the registered server signers (`@custodian/signer-client` links.ts): dialled at start
   * and whenever the list is re-read, retried forever with a capped, jittered backoff (first base
   * `initialMs`, default 1000; cap `maxMs`, default 30 000), logged (`… unreachable …; reconnecting
   * in N ms (attempt k)`, `reconnected to server signer …`). `false`: off (dial on demand only).
   */
  signerLinks?: { initialMs?: number; maxMs?: number } | false;
  /** Signing latency, ceremony outcomes (sign, presign, master key) and blame; absent: not measured. */
  metrics?: SigningMetrics | undefined;
  /** Records the checked blames of SIGN ceremonies (blame-store.ts); absent: not recorded. */
  blames?: BlameStore | undefined;
}

/** The signing services (see the module comment). */
export interface SigningServices extends Startable {
  peerId: string;
  control: ControlClient;
  hub: DeviceHub;
  /**
   * The signer gateway, with `availability` (a device by its hub connection, a server signer by the
   * libp2p connection kept to it): the pipeline prefers signing sets of connected parties.
   */
  gateway: SignerGateway;
  ceremonyClient: CeremonyClient;
  /** The presignature pool (also the gateway's record of signing attempts). */
  presignatures: PresignaturePool;
  /**
   * Signed policy versions pushed to the server signers (policy-sync.ts): wire PolicyService
   * `activations` (PolicyServiceOptions) to `policySync.activated`; every ceremony first syncs its server parties.
   */
  policySync: PolicySync;
  /** Re-read the registered server signers (done before every ceremony). */
  refreshSigners(): Promise<void>;
  /**
   * The link to a server signer by peer id: `reachable` when a libp2p connection to it is open now;
   * `lastSeenAt` the last time one was (now when reachable; the close otherwise; null: not since start).
   */
  signerLink(peerId: string): { reachable: boolean; lastSeenAt: Date | null };
  /** Key lifecycle ceremonies, signer status and approver revocations (key-ops.ts; issue #22). */
  keyOps: KeyCeremonyPort;
}

function stripP2p(addr: string): string {
  const i = addr.indexOf('/p2p/');
  return i >= 0 ? addr.slice(0, i) : addr;
}

/**
 * Build the coordinator's libp2p host, relay, device hub, gateway, presignature pool and ceremony
 * client (not started: see {@link SigningServices.start}).
 * @throws Error when the identity file is not an Ed25519 key; RangeError for bad pool options
 */
export async function createSigningServices(c: SigningServicesComponents): Promise<SigningServices> {
  const privateKey = c.privateKey ?? (await loadOrCreateCoordinatorKey(c.dataDir));
  const peerId = peerIdFromPrivateKey(privateKey).toString();
  const peers = new Map<string, string[]>();
  const signerIds = new Map<string, string>(); // signer_id -> peer id
  let links: PeerLinks | undefined;
  let started = false;
  const refreshSigners = async () => {
    const rows = await c.signers.live();
    peers.clear();
    signerIds.clear();
    for (const r of rows) {
      peers.set(r.peer_id, [stripP2p(r.address)]);
      signerIds.set(String(r.signer_id).toLowerCase(), r.peer_id);
    }
    if (started) links?.sync();
  };
  await refreshSigners();
  const control = await ControlClient.create(privateKey, peers, c.log);
  // when a connection to each peer last closed (in memory): the signers list's last_seen_at
  const lastClosed = new Map<string, Date>();
  control.host.node.addEventListener('peer:disconnect', (e) => lastClosed.set(e.detail.toString(), new Date()));
  const signerLink = (peerId: string) => {
    if (control.host.connectedPeers().includes(peerId)) return { reachable: true, lastSeenAt: new Date() };
    return { reachable: false, lastSeenAt: lastClosed.get(peerId) ?? null };
  };
  if (c.signerLinks !== false) {
    links = new PeerLinks(control.host, () => peers, {
      ...(c.signerLinks ?? {}),
      log: c.log ?? pino({ level: 'silent' }),
    });
  }
  const warn = (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) =>
    c.log?.[level](fields ?? {}, msg);
  // the relay delivers signers' frames to the hub, the hub sends devices' frames through the
  // relay: a small emitter built before both breaks that cycle (devices/hub-types.ts SignerFrames)
  const signerFrames = new Emitter<Parameters<Parameters<SignerFrames['on']>[0]>>();
  const relay = createCoordinatorRelay(control.host, {
    addrs: (p) => peers.get(p) ?? [],
    maxFrameBytes: DEFAULT_LIMITS.maxMessageBytes,
    log: c.log ?? pino({ level: 'silent' }),
    onFrame: (from, frame) => signerFrames.emit(from, frame),
  });
  // issue #22: a signer that missed a device's revocation (offline at the removal) gets it before
  // it takes part in any ceremony (sign, presign, key lifecycle); a phone, when it connects
  const revocations = new RevocationSync({ db: c.db, control, clock: () => new Date() });
  const h = new DeviceHub({
    ...c.hub,
    revokedApprovers: () => revocations.revoked(),
    coordinator: { peerId, secretKey: Uint8Array.from(privateKey.raw.subarray(0, 32)) },
    devices: c.devices,
    isSignerPeer: (p) => peers.has(p),
    // a signer registered through another replica (issue #25): the list is read again on a miss
    signerPeerRegistered: async (p) => {
      if (peers.has(p)) return true;
      if (!(await c.signers.isLivePeer(p))) return false;
      await refreshSigners();
      return peers.has(p);
    },
    relayToSigner: (p, f) => relay.send(p, f),
    signerFrames,
    log: warn,
    ...(c.deviceSockets ? { limits: c.deviceSockets } : {}),
    ...(c.replicas ? { replicas: { bus: c.replicas.bus, db: c.db, ttlMs: c.replicas.registry.options.ttlMs } } : {}),
  });
  const policySync = new PolicySync({
    control,
    async signers() {
      await refreshSigners();
      return [...peers.keys()];
    },
    source: () => signedPolicyVersions(c.db),
    log: warn,
  });
  const prepare = async (targets: readonly PartyDispatch[]) => {
    await refreshSigners();
    const servers = targets.filter((t) => t.party.kind === 'server').map((t) => t.peerId);
    // a signer (re)connected since its last sync learns every signed policy version first
    await policySync.ensure(servers);
    // fail closed: a signer that cannot be told is not asked to sign
    const unrevoked = await revocations.ensure(servers);
    if (unrevoked.length > 0)
      throw new Error(`device revocations not acknowledged by server signer(s) ${unrevoked.join(', ')}`);
    if (!targets.some((t) => t.party.kind === 'device')) return;
    await Promise.all(targets.filter((t) => t.party.kind === 'server').map((t) => relay.ensure(t.peerId)));
  };
  const directory: PartyDirectory = {
    async peerIdOf(party) {
      if (party.kind === 'server') {
        await refreshSigners();
        const p = signerIds.get(party.id.toLowerCase());
        if (!p) throw new Error(`unknown server signer ${party.id}`);
        return p;
      }
      if ((await c.devices.status(party.id)) !== 'APPROVED') {
        throw new Error(`device ${party.id} is not an approved device`);
      }
      // connected here, or on another live replica (issue #25), or last announced here
      const p = await h.peerIdAnywhere(party.id.toLowerCase());
      if (!p) throw new Error(`device ${party.id} has not connected`);
      return p;
    },
  };
  const poolOpts = typeof c.presignaturePool === 'number' ? { target: c.presignaturePool } : c.presignaturePool;
  const ecdsa = c.algorithms === undefined || c.algorithms.includes(KeyAlgorithm.SECP256K1_ECDSA);
  // the pool's reconciliation asks the server signers over the control client (devices: not yet)
  const setPeers = (parties: readonly { kind: 'server' | 'device'; id: string }[]) =>
    Promise.all(parties.map((p) => directory.peerIdOf(p)));
  const holders: PresignatureHolders = {
    async held(party, keyId, parties) {
      return control.presignatureInventory(await directory.peerIdOf(party), keyId, await setPeers(parties));
    },
    async delete(party, keyId, parties, ids) {
      return control.deletePresignatures(await directory.peerIdOf(party), keyId, await setPeers(parties), ids);
    },
  };
  const presignatures = new PresignaturePool({
    db: c.db,
    masterKeys: c.masterKeys,
    presign: async (keyId, parties, count, deadline, signal) => {
      const r = await presignCeremony(
        { control, devices: h, directory, prepare, ...(c.blames ? { blames: c.blames } : {}) },
        keyId,
        parties,
        count,
        deadline,
        signal,
      );
      c.metrics?.ceremonies.inc({ kind: 'presign', outcome: r.ok ? 'ok' : 'failed' });
      return r;
    },
    options: { ...poolOpts, ...(ecdsa ? {} : { target: 0 }) },
    log: warn,
    holders,
  });
  const gateway = createSignerGateway({
    control,
    evidenceFields: evidenceSignFields,
    devices: h,
    prepare,
    directory,
    attempts: presignatures,
    log: (msg, fields) => warn('warn', msg, fields),
    metrics: c.metrics,
    ...(c.blames ? { blames: c.blames } : {}),
    // whether a party is connected now (the pipeline prefers signing sets of connected parties and
    // does not invite a device that is offline): a device by its hub connection on any live
    // replica, a server signer by the libp2p connection kept to it (signer links)
    async availability(party) {
      if (party.kind === 'device') return (await h.isOnline(party.id)) ? 'up' : 'down';
      const peer = await c.signers.peerIdOf(party.id);
      if (peer === undefined) return 'down';
      return control.host.connectedPeers().includes(peer) ? 'up' : 'down';
    },
  });
  const masterKeyClient = createMasterKeyClient({
    control,
    devices: h,
    prepare,
    ...(c.algorithms ? { algorithms: c.algorithms } : {}),
    async deviceKey(deviceId) {
      const key = await c.devices.publicKey(deviceId);
      if (key === undefined) throw new Error(`unknown device ${deviceId}`);
      return key;
    },
    async devicePeerId(deviceId, until, signal) {
      const known = await h.peerIdAnywhere(deviceId);
      if (known) return known;
      await h.waitOnline(deviceId, until, signal);
      return h.peerIdOf(deviceId) as string;
    },
  });
  const keyOps = createKeyCeremonyPort({
    db: c.db,
    revocations,
    pushToPhones: (revoked) => h.pushRevocations(revoked),
    control,
    directory,
    devices: h,
    async serverPeers() {
      await refreshSigners();
      return [...peers.keys()];
    },
    prepare,
    availability: (p) => (gateway.availability ? gateway.availability(p) : Promise.resolve(undefined)),
    clock: () => new Date(),
  });
  const ceremonyClient = c.metrics ? observedCeremonyClient(masterKeyClient, c.metrics) : masterKeyClient;
  c.log?.info({ peerId }, 'coordinator libp2p identity (configure signers with this coordinator.peerId)');
  let stopping: Promise<void> | undefined;
  return {
    peerId,
    control,
    hub: h,
    gateway,
    ceremonyClient,
    presignatures,
    policySync,
    refreshSigners,
    signerLink,
    keyOps,
    /** Links to the signers, the presignature pool and a first full policy sync. Idempotent. */
    async start() {
      if (started || stopping) return;
      started = true;
      links?.sync();
      await presignatures.start();
      void policySync.ensureAll();
    },
    /** Stop the pool (its ceremonies aborted), the links, the hub, the relay and the libp2p host. Idempotent. */
    stop() {
      stopping ??= (async () => {
        await presignatures.stop();
        links?.stop();
        h.close();
        relay.close();
        await control.stop();
      })();
      return stopping;
    },
  };
}
