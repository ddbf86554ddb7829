/**
 * The coordinator's signer-facing services, built from configuration by `createCoordinator`:
 * its libp2p identity (Ed25519, persisted in `<dataDir>/coordinator-p2p.key`, 0600, libp2p
 * private-key protobuf), a dial-only libp2p host pinned to the server signers registered in the
 * admin API (`server_signers`, re-read before every ceremony) with a link kept to each (dialled at
 * start, re-dialled forever with backoff when it drops: `@custodian/signer` links.ts), the control
 * client, the relay to signers for device parties, the device hub (WebSocket), the
 * {@link SignerGateway}, the master key {@link CeremonyClient} and the push of signed policy
 * versions to the signers (policy-sync.ts).
 *
 * Operators configure every signer with this coordinator's peer id (`coordinator.peerId`); it is
 * printed by `custodian coordinator peer-id` and logged at start.
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ControlClient, createCoordinatorRelay, PeerLinks } from '@custodian/signer-client';
import { DEFAULT_LIMITS, KeyAlgorithm } from '@custodian/wire';
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { type Logger, pino } from 'pino';
import type { CeremonyClient } from '../ceremony.js';
import type { Db } from '../db/db.js';
import { DeviceHub, type DeviceHubLimits } from '../devices/hub.js';
import { evidenceSignFields } from '../transfers/evidence.js';
import { signedPolicyVersions } from '../transfers/policies.js';
import {
  createSignerGateway,
  type PartyDirectory,
  type PartyDispatch,
  presignCeremony,
  type SignerGateway,
} from './gateway.js';
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

/** Peer id string of the coordinator identity in `dataDir` (created if missing). */
export async function coordinatorPeerId(dataDir: string): Promise<string> {
  return peerIdFromPrivateKey(await loadOrCreateCoordinatorKey(dataDir)).toString();
}

/** Options of {@link createSigningServices}. */
export interface SigningServicesOptions {
  db: Db;
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
   * Links kept to the registered server signers (`@custodian/signer` links.ts): dialled at start
   * and whenever the list is re-read, retried forever with a capped, jittered backoff (first base
   * `initialMs`, default 1000; cap `maxMs`, default 30 000), logged (`… unreachable …; reconnecting
   * in N ms (attempt k)`, `reconnected to server signer …`). `false`: off (dial on demand only).
   */
  signerLinks?: { initialMs?: number; maxMs?: number } | false;
}

/** The running services. */
export interface SigningServices {
  peerId: string;
  control: ControlClient;
  hub: DeviceHub;
  gateway: SignerGateway;
  ceremonyClient: CeremonyClient;
  /** The presignature pool (also the gateway's record of signing attempts). */
  presignatures: PresignaturePool;
  /**
   * Signed policy versions pushed to the server signers (policy-sync.ts): wire PolicyService
   * `onActivated` to `policySync.activated`; every ceremony first syncs its server parties.
   */
  policySync: PolicySync;
  /** Re-read the registered server signers (done before every ceremony). */
  refreshSigners(): Promise<void>;
  stop(): Promise<void>;
}

function stripP2p(addr: string): string {
  const i = addr.indexOf('/p2p/');
  return i >= 0 ? addr.slice(0, i) : addr;
}

/** Start the coordinator's libp2p host, relay, device hub, gateway and ceremony client. */
export async function createSigningServices(opts: SigningServicesOptions): Promise<SigningServices> {
  const privateKey = opts.privateKey ?? (await loadOrCreateCoordinatorKey(opts.dataDir));
  const peerId = peerIdFromPrivateKey(privateKey).toString();
  const peers = new Map<string, string[]>();
  const signerIds = new Map<string, string>(); // signer_id -> peer id
  let links: PeerLinks | undefined;
  const refreshSigners = async () => {
    const rows = await opts.db.query<{ signer_id: string; peer_id: string; address: string }>(
      'SELECT signer_id, peer_id, address FROM server_signers WHERE removed_at IS NULL',
    );
    peers.clear();
    signerIds.clear();
    for (const r of rows) {
      peers.set(r.peer_id, [stripP2p(r.address)]);
      signerIds.set(String(r.signer_id).toLowerCase(), r.peer_id);
    }
    links?.sync();
  };
  await refreshSigners();
  const control = await ControlClient.create(privateKey, peers, opts.log);
  if (opts.signerLinks !== false) {
    links = new PeerLinks(control.host, () => peers, {
      ...(opts.signerLinks ?? {}),
      log: opts.log ?? pino({ level: 'silent' }),
    });
    links.sync();
  }
  const warn = (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) =>
    opts.log?.[level](fields ?? {}, msg);
  let hub: DeviceHub | undefined;
  const relay = createCoordinatorRelay(control.host, {
    addrs: (p) => peers.get(p) ?? [],
    maxFrameBytes: DEFAULT_LIMITS.maxMessageBytes,
    log: opts.log ?? pino({ level: 'silent' }),
    onFrame: (from, frame) => hub?.fromSigner(from, frame),
  });
  hub = new DeviceHub({
    coordinator: { peerId, secretKey: Uint8Array.from(privateKey.raw.subarray(0, 32)) },
    lookupDevice: async (id) => {
      const r = (
        await opts.db.query<{ public_key: string; status: string; mpc_peer_id: string | null }>(
          'SELECT public_key, status, mpc_peer_id FROM devices WHERE device_id = $1',
          [id],
        )
      )[0];
      return r ? { publicKey: r.public_key, status: r.status, mpcPeerId: r.mpc_peer_id } : undefined;
    },
    isSignerPeer: (p) => peers.has(p),
    relayToSigner: (p, f) => relay.send(p, f),
    log: warn,
    ...(opts.deviceSockets ? { limits: opts.deviceSockets } : {}),
  });
  const h = hub;
  const policySync = new PolicySync({
    control,
    async signers() {
      await refreshSigners();
      return [...peers.keys()];
    },
    source: () => signedPolicyVersions(opts.db),
    log: warn,
  });
  const prepare = async (targets: readonly PartyDispatch[]) => {
    await refreshSigners();
    // a signer (re)connected since its last sync learns every signed policy version first
    await policySync.ensure(targets.filter((t) => t.party.kind === 'server').map((t) => t.peerId));
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
      const rec = (
        await opts.db.query<{ status: string }>('SELECT status FROM devices WHERE device_id = $1', [party.id])
      )[0];
      if (rec?.status !== 'APPROVED') throw new Error(`device ${party.id} is not an approved device`);
      const p = h.peerIdOf(party.id.toLowerCase());
      if (!p) throw new Error(`device ${party.id} has not connected`);
      return p;
    },
  };
  const poolOpts =
    typeof opts.presignaturePool === 'number' ? { target: opts.presignaturePool } : opts.presignaturePool;
  const ecdsa = opts.algorithms === undefined || opts.algorithms.includes(KeyAlgorithm.SECP256K1_ECDSA);
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
  const presignatures = new PresignaturePool(
    opts.db,
    (keyId, parties, count, deadline, signal) =>
      presignCeremony({ control, devices: h, directory, prepare }, keyId, parties, count, deadline, signal),
    { ...poolOpts, ...(ecdsa ? {} : { target: 0 }) },
    warn,
    holders,
  );
  const gateway = createSignerGateway({
    control,
    evidenceFields: evidenceSignFields,
    devices: h,
    prepare,
    directory,
    attempts: presignatures,
    log: (msg, fields) => warn('warn', msg, fields),
  });
  const ceremonyClient = createMasterKeyClient({
    control,
    devices: h,
    prepare,
    ...(opts.algorithms ? { algorithms: opts.algorithms } : {}),
    async deviceKey(deviceId) {
      const r = (
        await opts.db.query<{ public_key: string }>('SELECT public_key FROM devices WHERE device_id = $1', [deviceId])
      )[0];
      if (!r) throw new Error(`unknown device ${deviceId}`);
      return r.public_key;
    },
    async devicePeerId(deviceId, until, signal) {
      const known = h.peerIdOf(deviceId);
      if (known) return known;
      await h.waitOnline(deviceId, until, signal);
      return h.peerIdOf(deviceId) as string;
    },
  });
  presignatures.start();
  void policySync.ensureAll();
  opts.log?.info({ peerId }, 'coordinator libp2p identity (configure signers with this coordinator.peerId)');
  return {
    peerId,
    control,
    hub: h,
    gateway,
    ceremonyClient,
    presignatures,
    policySync,
    refreshSigners,
    async stop() {
      await presignatures.stop();
      links?.stop();
      h.close();
      relay.close();
      await control.stop();
    },
  };
}
