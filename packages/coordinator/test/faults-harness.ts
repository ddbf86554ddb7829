/**
 * Harness of the faults-* tests (issue #27 items 2–4): REAL components only — three signer
 * processes (CGGMP21 ECDSA at SECURITY_112 from the committed TEST-ONLY safe primes, enforcement
 * on), the signer gateway over libp2p, a coordinator on PGlite persisted to a folder, and as the
 * chain the TEST-ONLY TRON-shaped HTTP model of packages/chains (it checks each broadcast
 * transaction's signature). Signer 0 and signer 2 get four primes each, so a second master key
 * can be made among them ({@link masterKey} with `[2, 0]`).
 *
 * The coordinator's own pipeline does not run: each test builds its {@link TransferPipeline}
 * instances on the coordinator's database (the real class, with its own options and log).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tronAddress } from '@custodian/chains';
import { hexToBytes } from '@custodian/crypto';
import { ControlClient } from '@custodian/signer-client';
import { CeremonyKind, type CeremonyResult, KeyAlgorithm, Outcome } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, beforeAll, expect } from 'vitest';
import { serveTronModel, TronChainModel, type TronModelServer } from '../../chains/test/helpers/tron-model.js';
import {
  buildSigner,
  freePort,
  initNode,
  type NodeSpec,
  ROOT,
  startNode,
  stopNode,
  tempDir,
  writeConfig,
} from '../../signer/test/cluster.js';
import type { Coordinator, CoordinatorOptions } from '../src/coordinator.js';
import { createSignerGateway, type SignerGateway } from '../src/signing/gateway.js';
import { evidenceSignFields } from '../src/transfers/evidence.js';
import { DEFAULT_PIPELINE_OPTIONS, type PipelineOptions, TransferPipeline } from '../src/transfers/pipeline.js';
import { TEST_CHAINS } from './enforcing-signers.js';
import type { Json } from './helpers.js';
import { approveAs, CoordinatorApi, hexPub, pipelineCoordinator } from './pipeline-harness.js';

const addr = (k: bigint) => tronAddress(secp256k1.Point.BASE.multiply(k).toBytes(true));
export const FUNDER = addr(11n);
export const DEST = addr(12n);
export const TRX = 1_000_000n;

/** The fixture primes each signer is seeded with (indices into safePrimes1024). */
const PRIMES = [
  [0, 1, 6, 7],
  [2, 3],
  [4, 5, 8, 9],
];

export interface FaultsEnv {
  dir: string;
  model: TronChainModel;
  server: TronModelServer;
  nodes: NodeSpec[];
  control: ControlClient;
  gateway: SignerGateway;
  coord: Coordinator;
  api: CoordinatorApi;
  serverIds: string[];
  dev1: Uint8Array;
  dev1Id: string;
  trxAsset: string;
  pipelines: TransferPipeline[];
}

/**
 * Start the signers, the chain model and the coordinator (pipeline not running); enrol the devices and sign a TRX policy.
 * `availability`: the gateway tells the pipeline whether a server signer is connected, as the
 * coordinator's does (coordinator.ts partyAvailability: the control host's libp2p connections).
 */
export async function startFaultsEnv(
  label: string,
  opts: { availability?: boolean; health?: CoordinatorOptions['health'] } = {},
): Promise<FaultsEnv> {
  buildSigner();
  const dir = tempDir(label);
  const model = new TronChainModel({ [FUNDER]: 10_000n * TRX }, {});
  for (let i = 0; i < 3; i++) model.mine();
  const server = await serveTronModel(model);
  const adminDevice = p256.utils.randomSecretKey();
  const dev1 = p256.utils.randomSecretKey();
  const serverIds: string[] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];

  const coordKey = await generateKeyPair('Ed25519');
  const fixture = JSON.parse(
    readFileSync(join(ROOT, 'packages/paillier/test/fixtures/test-only-safe-primes.json'), 'utf8'),
  ) as { safePrimes1024: string[] };
  const ports: number[] = [];
  for (let i = 0; i < 3; i++) ports.push(await freePort());
  const nodes = ports.map((p, i) => initNode(dir, `signer${i}`, p));
  nodes.forEach((n, i) => {
    const seed = join(dir, `primes${i}.json`);
    writeFileSync(seed, JSON.stringify({ safePrimes: (PRIMES[i] ?? []).map((k) => fixture.safePrimes1024[k]) }));
    writeConfig(
      n,
      nodes,
      { peerId: peerIdFromPrivateKey(coordKey).toString() },
      {
        ecdsa: { level: 'SECURITY_112', primePool: 0, primeSeedFile: seed },
        trustedAdminDevices: [{ deviceId: 'admin-phone', publicKey: hexPub(adminDevice) }],
        chains: TEST_CHAINS,
      },
    );
  });
  await Promise.all(nodes.map((n) => startNode(n)));
  const control = await ControlClient.create(
    coordKey,
    new Map(nodes.map((n) => [n.peerId, [`/ip4/127.0.0.1/tcp/${n.port}`]])),
  );
  const gateway = createSignerGateway({
    control,
    evidenceFields: evidenceSignFields,
    directory: {
      async peerIdOf(party) {
        const i = serverIds.indexOf(party.id);
        if (party.kind !== 'server' || i < 0) throw new Error(`unknown party ${party.id}`);
        return (nodes[i] as NodeSpec).peerId;
      },
    },
    ...(opts.availability
      ? {
          async availability(party: { kind: 'server' | 'device'; id: string }) {
            const i = serverIds.indexOf(party.id);
            if (party.kind !== 'server' || i < 0) return 'down' as const;
            return control.host.connectedPeers().includes((nodes[i] as NodeSpec).peerId) ? 'up' : 'down';
          },
        }
      : {}),
  });
  const dataDir = join(dir, 'coord');
  const coord = await pipelineCoordinator(dataDir, {
    chains: { 'tron-nile': { rpcUrl: server.url, confirmations: 2, pollIntervalMs: 200 } },
    transfers: {
      gateway,
      feeCaps: { 'tron-nile': '20000000' },
      trustedAdminKeys: [hexPub(adminDevice)],
      runPipeline: false,
    },
    ...(opts.health !== undefined ? { health: opts.health } : {}),
  });
  const api = new CoordinatorApi();
  api.url = await coord.start();
  const pipelines: TransferPipeline[] = [];
  // new work wakes the tests' pipelines only (the coordinator's own one would run a pass on a kick)
  coord.transfers.signals.work.on(() => {
    for (const p of pipelines) p.kick();
  });
  await api.signIn(join(dataDir, 'mailbox'), label);
  const adminDeviceId = await api.enroll(adminDevice, 'admin phone');
  const dev1Id = await api.enroll(dev1, 'approver 1');
  const trxAsset = await api.assetId((a) => a.blockchain === 'tron-nile' && a.kind === 'native');
  await api.signedPolicy(
    {
      name: 'trx',
      scope: { blockchain: 'tron-nile', asset_id: trxAsset },
      whitelist: [DEST],
      daily_limit: (1000n * TRX).toString(),
      approvals: { quorum: 1, above_amount: '0' },
    },
    { deviceId: adminDeviceId, secretKey: adminDevice },
  );
  return {
    dir,
    model,
    server,
    nodes,
    control,
    gateway,
    coord,
    api,
    serverIds,
    dev1,
    dev1Id,
    trxAsset,
    pipelines,
  };
}

/**
 * ECDSA master key ceremony among the signers `members` (indices, in key party order; threshold
 * 2) with approver device 1, recorded in the coordinator (new wallets use it).
 */
export async function masterKey(env: FaultsEnv, members: number[]): Promise<string> {
  const nodes = members.map((i) => env.nodes[i] as NodeSpec);
  const ceremonyUuid = crypto.randomUUID();
  const keyId = ceremonyUuid.replaceAll('-', '');
  const results: CeremonyResult[] = await Promise.all(
    nodes.map((n) =>
      env.control.startCeremony(
        n.peerId,
        {
          ceremonyId: hexToBytes(keyId),
          kind: CeremonyKind.MASTER_KEY,
          parties: nodes.map((x) => ({ peerId: x.peerId })),
          threshold: 2,
          deadlineUnixMs: Date.now() + 120_000,
          algorithms: [KeyAlgorithm.SECP256K1_ECDSA],
          approverDevices: [{ deviceId: env.dev1Id, publicKey: p256.getPublicKey(env.dev1, true) }],
        },
        140_000,
      ),
    ),
  );
  for (const r of results) expect(r.outcome, r.error).toBe(Outcome.OK);
  const ek = results[0]?.publicKeys?.find((k) => k.algorithm === KeyAlgorithm.SECP256K1_ECDSA);
  if (!ek) throw new Error('no ECDSA key');
  const now = new Date();
  await env.coord.db.query(
    `INSERT INTO ceremonies (ceremony_id, kind, status, threshold, parties, progress, started_at, deadline, finished_at)
     VALUES ($1, 'dkg', 'SUCCEEDED', 2, '[]'::jsonb, '{}'::jsonb, $2, $2, $2)`,
    [ceremonyUuid, now],
  );
  const mk = await env.coord.signers.masterKeys.insertMasterKey({
    ceremonyId: ceremonyUuid,
    threshold: 2,
    parties: [
      ...members.map((i) => ({
        kind: 'server',
        id: env.serverIds[i] as string,
        peer: (env.nodes[i] as NodeSpec).peerId,
        address: null,
      })),
      { kind: 'device', id: env.dev1Id, peer: 'd1', address: null },
    ],
    secp256k1: { publicKey: ek.publicKey, chainCode: ek.chainCode },
    ed25519: { publicKey: ed25519.getPublicKey(ed25519.utils.randomSecretKey()), chainCode: new Uint8Array(32) },
  });
  return mk.master_key_id;
}

/** A TRON wallet on the newest master key, with 100 TRX deposited on the chain model and recorded as its balance. */
export async function fundedWallet(env: FaultsEnv): Promise<string> {
  const w = await env.api.createWallet('tron-nile');
  expect(w.status, JSON.stringify(w.body)).toBe(201);
  const walletId: string = w.body.wallet_id;
  env.model.mine([env.model.tx('trx', FUNDER, w.body.addresses[0].address, 100n * TRX)]);
  env.model.mine();
  // the coordinator's deposit watchers run with its pipeline (not started here): record the balance
  await env.coord.wallets.balances.setBalance(walletId, env.trxAsset, (100n * TRX).toString());
  return walletId;
}

/** Create a TRX transfer to DEST and approve it: PENDING_SIGNATURE. @returns its id */
export async function approvedTransfer(env: FaultsEnv, walletId: string, amount: string): Promise<string> {
  const c = await env.api.req('POST', `/api/v1/profiles/${env.api.profileId}/transfers`, {
    key: env.api.apiKey,
    idem: true,
    body: { wallet_id: walletId, asset_id: env.trxAsset, destination_address: DEST, amount },
  });
  expect(c.body, JSON.stringify(c.body)).toMatchObject({ status: 'PENDING_APPROVAL' });
  expect((await approveAs(env.coord, c.body.transfer_id, env.dev1, env.dev1Id)).status).toBe('PENDING_SIGNATURE');
  return c.body.transfer_id;
}

/** A pipeline on the coordinator's database (the real class), started; stopped by {@link closeFaultsEnv}. */
export function pipeline(
  env: FaultsEnv,
  o: Partial<Omit<PipelineOptions, 'log'>> = {},
  lines: string[] = [],
  clock: () => Date = () => new Date(),
): TransferPipeline {
  const p = new TransferPipeline({
    db: env.coord.db,
    clock,
    chains: env.coord.transfers.chains,
    service: env.coord.transfers.service,
    gateway: env.gateway,
    options: {
      ...DEFAULT_PIPELINE_OPTIONS,
      pollMs: 200,
      confirmationRecheckMs: 200,
      ...o,
      log: (level, msg, fields) => lines.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`),
    },
  });
  env.pipelines.push(p);
  p.start();
  return p;
}

/** Poll the transfer (every 100 ms, up to `ms`) until `pred` holds. */
export async function waitTransfer(
  env: FaultsEnv,
  transferId: string,
  pred: (t: Json) => boolean,
  ms = 60_000,
): Promise<Json> {
  return env.api.waitStatus(transferId, pred, ms);
}

/** `event_type sub_status` of the transfer's webhook events, in order. */
export async function eventsOf(env: FaultsEnv, transferId: string): Promise<string[]> {
  const r = await env.coord.db.query<{ event_type: string; sub: string | null; status: string | null }>(
    `SELECT event_type, body::jsonb->'data'->>'status' AS status, body::jsonb->'data'->>'sub_status' AS sub
     FROM webhook_events WHERE body::jsonb->'data'->>'transfer_id' = $1 ORDER BY occurred_at, event_id`,
    [transferId],
  );
  return r.map((x) => `${x.event_type} ${x.status} ${x.sub}`);
}

/** Resume a SIGSTOPped signer. */
export function resume(node: NodeSpec): void {
  if (node.proc?.pid && node.proc.exitCode === null) node.proc.kill('SIGCONT');
}

/** Freeze a signer (SIGSTOP): its connections stay open, it answers nothing. */
export function freeze(node: NodeSpec): void {
  if (node.proc?.pid && node.proc.exitCode === null) node.proc.kill('SIGSTOP');
}

export async function closeFaultsEnv(env: FaultsEnv | undefined): Promise<void> {
  if (!env) return;
  for (const n of env.nodes) resume(n);
  await Promise.all(env.pipelines.map((p) => p.stop().catch(() => {})));
  await env.coord.stop().catch(() => {});
  await env.control.stop().catch(() => {});
  await Promise.all(env.nodes.map((n) => stopNode(n, 'SIGKILL')));
  await env.server.close();
  if (!process.env.CUSTODIAN_KEEP_TEST_DIR) rmSync(env.dir, { recursive: true, force: true });
}

/** What a faults test starts from: its environment and one funded wallet per master key. */
export interface FaultsSetup {
  env: FaultsEnv;
  /** The funded TRON wallets, one per entry of `keys`, in order. */
  wallets: string[];
  /** `wallets[0]`. */
  wallet: string;
}

/**
 * The common setup of the faults tests, as hooks of the calling `describe`: before its tests,
 * {@link startFaultsEnv} (`label`, `availability`), then for each entry of `keys` (default
 * `[[0, 1, 2]]`) a {@link masterKey} among those signers and a {@link fundedWallet} on it; after
 * them, {@link closeFaultsEnv}. Each describe that calls it gets its own environment, so any test
 * runs alone (`vitest -t`). The returned object is filled in by the `beforeAll` hook: read its
 * fields inside the tests, not when the describe is collected.
 */
export function useFaultsEnv(
  label: string,
  opts: { availability?: boolean; keys?: number[][]; health?: CoordinatorOptions['health'] } = {},
): FaultsSetup {
  const setup = {} as FaultsSetup;
  beforeAll(async () => {
    setup.env = await startFaultsEnv(label, { availability: opts.availability, health: opts.health });
    setup.wallets = [];
    for (const members of opts.keys ?? [[0, 1, 2]]) {
      await masterKey(setup.env, members);
      setup.wallets.push(await fundedWallet(setup.env));
    }
    setup.wallet = setup.wallets[0] as string;
  }, 300_000);
  afterAll(async () => {
    await closeFaultsEnv(setup.env);
  });
  return setup;
}
