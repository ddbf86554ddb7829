/**
 * Over 400 lines: the daemon is one closure over its store, runner, host and running configuration
 * (start, control routing, status, reload, stop share them); its parts live in their own files.
 *
 * The signer daemon: loads the identity and the encrypted store, starts the libp2p host, routes
 * MPC envelopes to the ceremony runner and control requests (signed by the configured coordinator)
 * to the ceremonies, signed policy pushes (`policy_sync`) to the ledger of learned policy
 * versions (enforce.ts `learnSignedPolicies`), and the coordinator's presignature reconciliation
 * (`presignature_inventory`, `delete_presignatures`: ceremonies.ts `presignatureControl`). Logs are pino JSON on stdout and never contain secret material (shares,
 * nonces, passphrase, payloads): only ids, codes, party indices, peer ids and reasons.
 * A `status.json` in the data folder is refreshed for `custodian signer status`; the optional
 * health port (health.ts) serves `/healthz`, `/readyz` and `/metrics`.
 * Slightly over 400 lines: the one start function wires store, runner, control handler, host,
 * relay and health port in the order their failures must unwind.
 */
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type CeremonyContext,
  CeremonyRunner,
  learnSignedPolicies,
  listKeys,
  PreparedPresignatures,
  pendingReshares,
  presignatureControl,
  presignaturePoolSizes,
  revokeApprover,
  runCeremony,
  StoredNonceLedger,
  StoredPrimePool,
  StoredSessionLedger,
} from '@custodian/ceremony';
import { SecureStore } from '@custodian/ceremony/level-store';
import { LEVELS } from '@custodian/cggmp';
import { bytesToHex } from '@custodian/crypto';
import { createHost, type Host } from '@custodian/signer-client';
import {
  type CeremonyResult,
  CONTROL_VERSION,
  controlRequestDigest,
  DEFAULT_LIMITS,
  encodeControlResponse,
  type NodeStatus,
  Outcome,
  openControlRequest,
  refusalValue,
} from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { type Logger, pino } from 'pino';
import { keyBackupState } from './backup.js';
import { readPassphrase, type SignerConfig } from './config.js';
import { defaultGenerationFile, type GenerationStart, startGeneration, stopGeneration } from './generation.js';
import { createSignerMetrics, observeCeremony, type SignerHealthSource, startHealthServer } from './health.js';
import { loadIdentity, type NodeIdentity } from './identity.js';
import { reloadedConfig, type SignerReload } from './reload.js';
import { attachSignerRelay, type SignerRelay } from './signer-relay.js';

/** Control requests issued longer ago (or further ahead) than this are refused as stale/replayed. */
export const CONTROL_FRESHNESS_MS = 5 * 60_000;

/** File name of the status snapshot in the data folder. */
export const STATUS_FILE = 'status.json';
/** Shortest interval between two rewrites of {@link STATUS_FILE} after ceremonies or peer changes. */
export const STATUS_DEBOUNCE_MS = 500;

/** A running signer. */
export interface SignerDaemon {
  readonly identity: NodeIdentity;
  readonly host: Host;
  readonly log: Logger;
  status(): Promise<NodeStatus>;
  /**
   * Re-read the configuration (`read`, e.g. `loadConfig(path)`) and apply what can change while
   * running: the trusted Admin devices (`trustedAdminDevices`; a policy version or tombstone pushed
   * afterwards is checked against the new list, and so is every sign request's policy), the
   * blockchains (`chains`) and `logLevel`. Other changed fields are reported in `restartRequired`
   * and keep their running value. A configuration that does not load, or that switches
   * `allowUnenforcedSigning`, is refused as a whole (`ok: false`; nothing changes). Logged and
   * written to `status.json`. Never throws.
   */
  reload(read: () => Promise<SignerConfig>): Promise<SignerReload>;
  stop(): Promise<void>;
}

/** Start a signer from its configuration. @throws ConfigError, StoreIntegrityError (wrong passphrase), listen errors */
export async function startSigner(initialConfig: SignerConfig, logger?: Logger): Promise<SignerDaemon> {
  // the running configuration: a reload replaces its reloadable fields (trusted Admin devices, chains, log level)
  let config = initialConfig;
  const passphrase = await readPassphrase(config.passphrase);
  const identity = await loadIdentity(config.dataDir, passphrase);
  // Logs go to stdout asynchronously (pino's SonicBoom, flushed at exit): a synchronous write per
  // line costs ≈ 0.1–0.2 ms of the signing latency on a virtual machine.
  const log = (
    logger ??
    pino({ level: config.logLevel, base: { service: 'custodian-signer' } }, pino.destination({ dest: 1, sync: false }))
  ).child({
    node: identity.peerId,
  });
  const store = await SecureStore.open(join(config.dataDir, 'db'), passphrase, config.scrypt);
  // first of all: a new store generation, presignatures of earlier lifetimes discarded, a restored
  // (rolled-back) store detected against the state file outside the data folder (generation.ts)
  const generationFile = config.generationFile ?? defaultGenerationFile(config.dataDir);
  let generation: GenerationStart;
  try {
    generation = await startGeneration(store, generationFile, { log });
  } catch (e) {
    await store.close();
    throw e;
  }
  const nonceLedger = new StoredNonceLedger(store);
  await nonceLedger.load();
  const coordinatorKey = peerIdFromString(config.coordinator.peerId).publicKey?.raw as Uint8Array;
  const usedControl = new Map<string, number>();

  let host: Host | undefined;
  let relay: SignerRelay | undefined;
  const signerPeers = new Set(config.peers.map((p) => p.peerId));
  // Configured signers are reached directly; any other party (a mobile device) through the
  // coordinator's relay (relay.ts): the envelope is signed and encrypted end to end either way.
  const runner = new CeremonyRunner(
    {
      send: (peer, bytes) =>
        signerPeers.has(peer)
          ? (host as Host).sendMpc(peer, bytes)
          : relay
            ? relay.send(peer, bytes)
            : Promise.reject(new Error('no relay')),
    },
    log,
    DEFAULT_LIMITS,
    // every session claimed durably before it starts: a re-sent StartCeremony never runs one twice
    new StoredSessionLedger(store),
  );
  let primePool: StoredPrimePool | undefined;
  if (config.ecdsa) {
    primePool = new StoredPrimePool(store, LEVELS[config.ecdsa.level] as NonNullable<(typeof LEVELS)[string]>, log);
    if (config.ecdsa.primeSeedFile) {
      const n = await primePool.seed(config.ecdsa.primeSeedFile);
      log.info({ imported: n, bits: primePool.bits }, 'safe primes imported into the pool');
    }
    primePool.fill(config.ecdsa.primePool);
  }
  const ctx: CeremonyContext = {
    store,
    runner,
    selfPeerId: identity.peerId,
    secretKey: identity.secretKey,
    log,
    nonceLedger,
    shareCache: new Map(),
    recordCache: new Map(),
    prepared: new PreparedPresignatures(),
    ...(primePool ? { primePool, primePoolTarget: config.ecdsa?.primePool ?? 0 } : {}),
    ...(config.trustedAdminDevices
      ? {
          enforcement: {
            trustedAdminKeys: config.trustedAdminDevices.map((d) => d.publicKey),
            chains: config.chains ?? {},
          },
        }
      : {}),
    ...(config.allowUnenforcedSigning ? { allowUnenforcedSigning: true } : {}),
    ...(generation.rollback ? { rollback: generation.rollback } : {}),
  };
  if (config.allowUnenforcedSigning) {
    log.warn(
      '!!! allowUnenforcedSigning is set: this signer signs ANY digest it is asked to, without checking policy, limits or approvals. DEVELOPMENT AND TESTS ONLY: never in production !!!',
    );
  } else if (!config.trustedAdminDevices) {
    log.warn('trustedAdminDevices not configured: every sign request will be refused (ENFORCEMENT_NOT_CONFIGURED)');
  } else if (Object.keys(config.chains ?? {}).length === 0) {
    log.warn('chains not configured: every transfer signature will be refused (CHAIN_NOT_CONFIGURED)');
  }

  // the optional health port's view of this daemon (health.ts)
  const healthSource: SignerHealthSource = {
    keys: async () => (await listKeys(store)).map((k) => k.keyId),
    presignatures: () => presignaturePoolSizes(store),
    coordinatorConnected: () => host?.connectedPeers().includes(config.coordinator.peerId) ?? false,
  };
  const metrics = createSignerMetrics(healthSource);
  let lastReload: SignerReload | undefined;
  const reload = async (read: () => Promise<SignerConfig>): Promise<SignerReload> => {
    const at = new Date().toISOString();
    let result: SignerReload;
    try {
      const next = await read();
      const r = reloadedConfig(config, next);
      config = r.config;
      const { applied, restartRequired } = r;
      (ctx as { enforcement?: CeremonyContext['enforcement'] }).enforcement = config.trustedAdminDevices
        ? { trustedAdminKeys: config.trustedAdminDevices.map((d) => d.publicKey), chains: config.chains ?? {} }
        : undefined;
      if (log.level !== config.logLevel) log.level = config.logLevel;
      result = { at, ok: true, applied, restartRequired };
      log.info(
        {
          applied,
          restartRequired,
          trustedAdminDevices: config.trustedAdminDevices?.map((d) => d.deviceId) ?? null,
          chains: Object.keys(config.chains ?? {}),
        },
        restartRequired.length > 0
          ? 'configuration reloaded; some changed fields need a restart to take effect'
          : 'configuration reloaded',
      );
    } catch (e) {
      result = { at, ok: false, applied: [], restartRequired: [], error: e instanceof Error ? e.message : String(e) };
      log.error({ err: result.error }, 'configuration reload refused; the running configuration is kept');
    }
    lastReload = result;
    await writeStatus().catch(() => undefined);
    return result;
  };

  const status = async (): Promise<NodeStatus> => {
    const keys = await listKeys(store);
    // the newest encrypted backup of each key (backup.ts; never backed up: 0 and 0)
    const backups = await Promise.all(keys.map((k) => keyBackupState(store, k.keyId)));
    const pending = await pendingReshares(store);
    return {
      peerId: identity.peerId,
      keys: keys.map((k, i) => ({
        keyId: k.keyId,
        epoch: k.epoch,
        pendingReshare: pending.get(k.keyId) ?? '',
        threshold: k.threshold,
        backupEpoch: backups[i]?.epoch ?? 0,
        backupUnixMs: backups[i]?.unixMs ?? 0,
        parties: k.parties.map((peerId) => ({ peerId })),
        publicKeys: k.keys.map((x) => ({
          algorithm: x.algorithm,
          publicKey: Uint8Array.from(Buffer.from(x.publicKey, 'hex')),
          chainCode: Uint8Array.from(Buffer.from(x.chainCode, 'hex')),
        })),
      })),
      connectedPeers: host?.connectedPeers() ?? [],
      activeCeremonies: runner.active,
      presignaturePool: await presignaturePoolSizes(store),
      // the store's id (generation.ts' state file names it): a restore from a backup gets a new one
      storeId: store.id,
    };
  };
  const writeStatus = async () => {
    const s = await status();
    const json = {
      peerId: s.peerId,
      pid: process.pid,
      listen: host?.addrs() ?? [],
      updatedAt: new Date().toISOString(),
      connectedPeers: s.connectedPeers,
      activeCeremonies: s.activeCeremonies,
      presignaturePool: s.presignaturePool,
      generation: generation.generation,
      storeId: s.storeId,
      trustedAdminDevices: config.trustedAdminDevices ?? null,
      ...(lastReload ? { reload: lastReload } : {}),
      ...(generation.rollback ? { rollbackDetectedAt: generation.rollback.detectedAt } : {}),
      ...(primePool ? { primePool: { bits: primePool.bits, size: await primePool.size() } } : {}),
      keys: s.keys.map((k) => ({
        keyId: k.keyId,
        threshold: k.threshold,
        parties: k.parties.map((p) => p.peerId),
        publicKeys: k.publicKeys.map((p) => ({ algorithm: p.algorithm, publicKey: bytesToHex(p.publicKey) })),
        backupEpoch: k.backupEpoch ?? 0,
        backupUnixMs: k.backupUnixMs ?? 0,
      })),
    };
    const path = join(config.dataDir, STATUS_FILE);
    await writeFile(`${path}.tmp`, `${JSON.stringify(json, null, 2)}\n`);
    await rename(`${path}.tmp`, path);
  };

  // status.json is rewritten at most once per STATUS_DEBOUNCE_MS (it lists every key and pooled
  // presignature: not work for the latency path of each signature)
  let statusTimer: NodeJS.Timeout | undefined;
  const scheduleStatus = () => {
    if (statusTimer) return;
    statusTimer = setTimeout(() => {
      statusTimer = undefined;
      writeStatus().catch(() => undefined);
    }, STATUS_DEBOUNCE_MS);
    statusTimer.unref();
  };

  // a control request that does not open (bad signature, malformed, stale, replayed)
  const refused = (error: string): Uint8Array =>
    encodeControlResponse({
      version: CONTROL_VERSION,
      result: {
        ceremonyId: new Uint8Array(0),
        outcome: Outcome.REFUSED,
        refusal: refusalValue('CONTROL_REQUEST_REJECTED'),
        error,
      },
    });

  const onControl = async (
    from: string,
    bytes: Uint8Array,
    interim: (body: Uint8Array) => void,
    closed: AbortSignal,
  ): Promise<Uint8Array> => {
    const opened = openControlRequest(bytes, coordinatorKey);
    if (!opened.ok) {
      log.warn({ peer: from, code: opened.rejection.code }, `control request rejected: ${opened.rejection.reason}`);
      return refused(opened.rejection.reason);
    }
    const req = opened.value;
    const now = Date.now();
    if (Math.abs(now - Number(req.issuedUnixMs)) > CONTROL_FRESHNESS_MS) {
      log.warn({ peer: from, code: 'stale' }, 'control request rejected: stale or future timestamp');
      return refused('stale request');
    }
    // the signed request's digest (nonce included), not the SignedControl's: the same request and
    // signature re-encoded in other outer bytes is the same request (wire control.ts)
    const digest = controlRequestDigest(bytes) as string;
    // oldest first (insertion order): stop at the first one still inside the window, so a request
    // costs the entries that expired since the last one, not the whole window's (10 minutes of them)
    for (const [k, t] of usedControl) {
      if (now - t <= 2 * CONTROL_FRESHNESS_MS) break;
      usedControl.delete(k);
    }
    if (usedControl.has(digest)) {
      log.warn({ peer: from, code: 'replay' }, 'control request rejected: replayed');
      return refused('replayed request');
    }
    usedControl.set(digest, now);
    if (req.status) return encodeControlResponse({ version: CONTROL_VERSION, status: await status() });
    if (req.policySync) {
      const items = await learnSignedPolicies(
        store,
        req.policySync.signedPoliciesJson ?? [],
        ctx.enforcement?.trustedAdminKeys ?? [],
      );
      for (const it of items) {
        if (it.outcome === 'STORED') {
          log.info(
            { policy: it.policyId, version: it.version, deleted: it.heldDeleted },
            it.heldDeleted
              ? 'policy tombstone learned: every version of the policy is refused'
              : 'policy version learned',
          );
        } else if (it.outcome !== 'KNOWN') {
          log.warn(
            { peer: from, policy: it.policyId, version: it.version, code: it.outcome },
            'policy version refused',
          );
        }
      }
      return encodeControlResponse({ version: CONTROL_VERSION, policySync: { items } });
    }
    if (req.revokeApprover) {
      // only ever reduces rights: the coordinator's signed request suffices (revoke.ts)
      const { deviceId, publicKey } = req.revokeApprover;
      try {
        const keysUpdated = await revokeApprover(store, deviceId, publicKey, ctx);
        log.warn({ device: deviceId, keysUpdated }, 'approver device revoked');
        scheduleStatus();
        return encodeControlResponse({ version: CONTROL_VERSION, revokeApprover: { keysUpdated } });
      } catch (e) {
        log.warn({ device: deviceId, err: e instanceof Error ? e.message : String(e) }, 'approver revocation refused');
        return encodeControlResponse({
          version: CONTROL_VERSION,
          result: {
            ceremonyId: new Uint8Array(0),
            outcome: Outcome.REFUSED,
            refusal: refusalValue('REQUEST_INVALID'),
            error: e instanceof Error ? e.message : 'revocation failed',
          },
        });
      }
    }
    if (req.presignatureInventory || req.deletePresignatures) {
      // the coordinator's reconciliation of its presignature pool: ids only, in-use ids untouched
      const res = await presignatureControl(ctx, req);
      if (req.deletePresignatures) scheduleStatus();
      return encodeControlResponse(res);
    }
    if (req.abort) {
      const n = runner.cancelGroup(bytesToHex(req.abort.ceremonyId), `aborted by coordinator: ${req.abort.reason}`);
      log.warn(
        { ceremony: bytesToHex(req.abort.ceremonyId).slice(0, 16), sessions: n },
        'ceremony aborted by coordinator',
      );
      return encodeControlResponse({
        version: CONTROL_VERSION,
        result: { ceremonyId: req.abort.ceremonyId, outcome: Outcome.ABORTED, error: 'aborted' },
      });
    }
    const start = req.start as NonNullable<typeof req.start>;
    // The ceremony's result goes back on the stream that started it: when that stream ends first
    // (the coordinator died, the connection dropped), nobody waits for the result. The ceremony is
    // aborted at once, as an AbortCeremony would (its sessions end, its transfer's reservation is
    // released; what it wrote before a share left stays), so the coordinator's retry after its
    // restart is not refused as SIGNING_IN_PROGRESS until this ceremony's deadline.
    const group = start.ceremonyId instanceof Uint8Array ? bytesToHex(start.ceremonyId) : '';
    const onClosed = () => {
      if (!group) return;
      const n = runner.cancelGroup(group, 'control stream closed');
      log.warn(
        { peer: from, ceremony: group.slice(0, 16), sessions: n },
        'ceremony aborted: the control stream that started it closed before its result',
      );
    };
    if (closed.aborted) onClosed();
    else closed.addEventListener('abort', onClosed, { once: true });
    let result: CeremonyResult | undefined;
    const began = performance.now();
    try {
      result = await runCeremony(ctx, start, {
        // the coordinator's fast path: each released ECDSA signature share as an interim frame
        onSignatureShares: (shares) => interim(encodeControlResponse({ version: CONTROL_VERSION, shares })),
      });
    } finally {
      closed.removeEventListener('abort', onClosed);
      observeCeremony(metrics, start.kind, result?.outcome, began);
    }
    scheduleStatus();
    return encodeControlResponse({ version: CONTROL_VERSION, result });
  };

  // Pooled presignatures left from before the restart are loaded and prepared BEFORE the host
  // exists, so no control request can take one while the pre-loading runs (issue #20 item 6; the
  // pool also tombstones every key taken, whatever the order). Costs ≈ 30 ms per stored
  // presignature (up to the pool's limit) plus ≈ 85 ms once, at start.
  try {
    const n = (await ctx.prepared?.warm(store, log)) ?? 0;
    if (n > 0) log.info({ presignatures: n }, 'pooled presignatures prepared for signing');
  } catch (e) {
    log.warn({ err: e instanceof Error ? e.message : String(e) }, 'pooled presignatures not prepared');
  }
  const peers = new Map<string, readonly string[]>(config.peers.map((p) => [p.peerId, p.addrs]));
  if (!peers.has(config.coordinator.peerId)) peers.set(config.coordinator.peerId, []);
  try {
    host = await createHost({
      privateKey: identity.privateKey,
      listen: [config.listen],
      peers,
      maxFrameBytes: DEFAULT_LIMITS.maxMessageBytes,
      log,
      onMpc: (from, bytes) => runner.deliver(from, bytes),
      onControl,
      controlPeers: new Set([config.coordinator.peerId]),
    });
  } catch (e) {
    await store.close();
    throw e;
  }
  const h = host;
  relay = await attachSignerRelay(h, {
    coordinatorPeerId: config.coordinator.peerId,
    maxFrameBytes: DEFAULT_LIMITS.maxMessageBytes,
    log,
    onEnvelope: (_from, bytes) => runner.deliver(undefined, bytes),
  });
  const onPeers = () => scheduleStatus();
  h.node.addEventListener('peer:connect', onPeers);
  h.node.addEventListener('peer:disconnect', onPeers);
  // The coordinator dials this signer (and re-dials it forever, with backoff, after a restart of
  // either side): the signer only says what it sees.
  const coordinatorPeer = config.coordinator.peerId;
  h.node.addEventListener('peer:connect', (e) => {
    if (e.detail.toString() === coordinatorPeer) log.info({ peer: coordinatorPeer }, 'coordinator connected');
  });
  h.node.addEventListener('peer:disconnect', (e) => {
    if (e.detail.toString() === coordinatorPeer)
      log.warn(
        { peer: coordinatorPeer },
        'coordinator disconnected; waiting for it to reconnect (the coordinator dials this signer)',
      );
  });
  const health =
    config.healthPort === undefined
      ? undefined
      : await startHealthServer(
          healthSource,
          metrics,
          { host: config.healthHost ?? '127.0.0.1', port: config.healthPort },
          log,
        ).catch(async (e: unknown) => {
          await h.stop();
          await store.close();
          throw e;
        });
  await writeStatus();
  log.info({ listen: h.addrs(), peers: config.peers.length }, 'signer started');
  let stopped = false;
  return {
    identity,
    host: h,
    log,
    status,
    reload,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (statusTimer) clearTimeout(statusTimer);
      await health?.app.close();
      runner.cancelAll('shutting down');
      primePool?.stop();
      ctx.shareCache?.clear();
      await h.stop();
      // a clean stop moves the generation on: a copy taken while this lifetime ran is then behind
      await stopGeneration(store, generationFile).catch((err: unknown) => {
        log.error({ err: err instanceof Error ? err.message : String(err) }, 'store generation not advanced at stop');
      });
      await store.close();
      identity.secretKey.fill(0);
      log.info('signer stopped');
    },
  };
}
