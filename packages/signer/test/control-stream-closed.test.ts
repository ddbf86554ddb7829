/**
 * Defect found by the kill -9 sweep (packages/cli/test/kill-sweep.slow.test.ts): the coordinator is
 * killed while a SIGN ceremony runs; the ceremony it started on a signer runs on to its deadline
 * and holds the transfer's in-memory reservation, so the restarted coordinator's retry (the same
 * stored transaction, the same digests) was refused as "already in progress".
 *
 * Real path: two signer daemons (`startSigner`, in this process, libp2p on 127.0.0.1, encrypted
 * LevelDB stores holding shares of the TEST-ONLY 2-of-3 CGGMP21 fixture key) with enforcement on,
 * and the test as their coordinator (ControlClient on its own libp2p host).
 *
 * Must hold: when the control stream a SIGN was started on closes before its result is written,
 * the signer aborts that ceremony at once (its reservation released): a new coordinator connection
 * asking for the same transfer with the same digests is accepted and signs.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { KeyRecord } from '@custodian/ceremony';
import { SecureStore } from '@custodian/ceremony/level-store';
import { type KeyShare as EcdsaKeyShare, keyShareToJson } from '@custodian/cggmp';
import { type EthereumContext, ethereumAddress, recomputeEthereumDigests } from '@custodian/chains';
import { bytesToHex, derivedChild, secp256k1Group } from '@custodian/crypto';
import { ControlClient, createHost, type Host } from '@custodian/signer-client';
import {
  assetId,
  CeremonyKind,
  type CeremonyResult,
  KeyAlgorithm,
  Outcome,
  type SignRequest,
  signApproval,
  signPolicy,
  walletIdOf,
} from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { p256 } from '@noble/curves/nist.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intent as fixtureIntent } from '../../ceremony/test/attack-fixtures.js';
import { fixtureShares2of3 } from '../../ceremony/test/in-process.js';
import { createIdentity, type SignerConfig, type SignerDaemon, startSigner } from '../src/index.js';
import { freePort, tempDir } from './cluster.js';

const PASS_ENV = 'CUSTODIAN_STREAM_CLOSED_TEST_PASS';
const PASS = 'control stream closed test passphrase';
process.env[PASS_ENV] = PASS;
const SCRYPT = { N: 1 << 10, r: 8, p: 1 };

const adminSk = p256.utils.randomSecretKey();
const deviceSk = p256.utils.randomSecretKey();
const pub = (sk: Uint8Array) => bytesToHex(p256.getPublicKey(sk, true));
const keyId = 'ce'.repeat(16);
const path = [44, 60, 0, 0, 3];
const share0 = fixtureShares2of3[0] as EcdsaKeyShare;
const child = derivedChild(share0.core.publicKey, share0.core.chainCode, path);
const from = ethereumAddress(child.publicKey);
const dest = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const profile = '11111111-1111-4111-8111-111111111111';

/** One transfer's sign request (a fresh transfer id per call; Ethereum, nonce 0). */
function request(): SignRequest {
  const policy = signPolicy(
    {
      policy_id: crypto.randomUUID(),
      version: 1,
      profile_id: profile,
      scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: null },
      whitelist: [dest],
      per_transaction_limit: '1000',
      daily_limit: null,
      approvals: { quorum: 1, above_amount: '0' },
      created_at: '2026-01-01T00:00:00.000Z',
    },
    'admin-phone',
    adminSk,
  );
  const i = fixtureIntent({
    profile_id: profile,
    wallet_id: walletIdOf(keyId, path[2] as number),
    asset_id: assetId('ethereum-local', 'ETH'),
    source_address: from,
    destination_address: dest,
    amount: '5',
    derivation_path: path,
    key_id: keyId,
    created_at: new Date().toISOString(),
  });
  const ctx: EthereumContext = {
    chainId: 31337,
    from,
    fromPublicKey: bytesToHex(child.publicKey),
    fromPath: path,
    nonce: 0,
    gas: '21000',
    maxFeePerGas: '2000000000',
    maxPriorityFeePerGas: '1000000000',
  };
  const digests = recomputeEthereumDigests(
    { asset: { kind: 'native' }, destination: i.destination_address, amount: BigInt(i.amount) },
    ctx,
  ).map((d) => d.digest);
  return {
    keyId,
    algorithm: KeyAlgorithm.SECP256K1_ECDSA,
    derivationPath: path,
    digests,
    evidence: {
      intentJson: JSON.stringify(i),
      policyJson: JSON.stringify(policy),
      approvalsJson: [JSON.stringify(signApproval(i, 'APPROVE', 'dev-1', deviceSk, new Date().toISOString()))],
      chainContextJson: JSON.stringify(ctx),
    },
  };
}

describe('a signer aborts the ceremonies of a control stream that closes before their result', () => {
  let dir = '';
  let coordKey: PrivateKey;
  const daemons: SignerDaemon[] = [];
  const configs: SignerConfig[] = [];
  const peerIds: string[] = [];
  const hosts: Host[] = [];
  const logs: string[] = [];

  /** A coordinator connection of its own (a libp2p host with the coordinator key). */
  async function coordinator(): Promise<{ host: Host; client: ControlClient }> {
    const host = await createHost({
      privateKey: coordKey,
      listen: [],
      peers: new Map(configs.map((c, i) => [peerIds[i] as string, [c.listen]])),
      maxFrameBytes: 16 * 1024 * 1024,
      log: pino({ level: 'silent' }),
    });
    hosts.push(host);
    return { host, client: ControlClient.fromHost(host, Uint8Array.from(coordKey.raw.subarray(0, 32))) };
  }

  beforeAll(async () => {
    dir = tempDir('control-stream-closed');
    coordKey = await generateKeyPair('Ed25519');
    const ids = [];
    for (let i = 0; i < 2; i++) ids.push(await createIdentity(join(dir, `signer${i}`), PASS, SCRYPT));
    // the third party of the key never runs (a 2-of-3 key signed by the first two)
    const third = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString();
    for (const id of ids) peerIds.push(id.peerId);
    const ports = [await freePort(), await freePort()];
    for (let i = 0; i < 2; i++) {
      const dataDir = join(dir, `signer${i}`);
      configs.push({
        listen: `/ip4/127.0.0.1/tcp/${ports[i]}`,
        dataDir,
        peers: [{ peerId: peerIds[1 - i] as string, addrs: [`/ip4/127.0.0.1/tcp/${ports[1 - i]}`] }],
        coordinator: { peerId: peerIdFromPrivateKey(coordKey).toString() },
        passphrase: { env: PASS_ENV },
        logLevel: 'info',
        scrypt: SCRYPT,
        trustedAdminDevices: [{ deviceId: 'admin-phone', publicKey: pub(adminSk) }],
        chains: { 'ethereum-local': { family: 'ethereum', chainId: 31337, maxFee: '10000000000000000' } },
      });
      const share = fixtureShares2of3[i] as EcdsaKeyShare;
      const rec: KeyRecord = {
        keyId,
        threshold: 2,
        parties: [peerIds[0] as string, peerIds[1] as string, third],
        keys: [
          {
            algorithm: KeyAlgorithm.SECP256K1_ECDSA,
            suite: 'cggmp',
            publicKey: bytesToHex(secp256k1Group.encodePoint(share.core.publicKey)),
            chainCode: bytesToHex(share.core.chainCode),
          },
        ],
        epoch: 0,
        createdAt: new Date().toISOString(),
        approverDevices: [{ deviceId: 'dev-1', publicKey: pub(deviceSk) }],
      };
      const store = await SecureStore.open(join(dataDir, 'db'), PASS, SCRYPT);
      const enc = new TextEncoder();
      await store.batch([
        {
          type: 'put',
          sublevel: 'shares',
          key: `${keyId}/cggmp`,
          value: enc.encode(JSON.stringify(keyShareToJson(share))),
        },
        { type: 'put', sublevel: 'shares', key: `${keyId}/meta`, value: enc.encode(JSON.stringify(rec)) },
      ]);
      await store.close();
      const sink = new Writable({
        write(chunk, _e, cb) {
          logs.push(String(chunk));
          cb();
        },
      });
      daemons.push(await startSigner(configs[i] as SignerConfig, pino({ level: 'info' }, sink)));
    }
  }, 60_000);

  afterAll(async () => {
    for (const h of hosts) await h.stop().catch(() => undefined);
    for (const d of daemons) await d.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the coordinator connection closes mid-SIGN: the same transfer, same digests, is accepted and signs on a new connection', async () => {
    const req = request();
    const parties = peerIds.map((peerId) => ({ peerId }));
    const first = await coordinator();
    // the dead coordinator's ceremony: signer 0 only (its co-signer is never asked), a long deadline
    const started = logs.length;
    const orphan = first.client.startCeremony(
      peerIds[0] as string,
      {
        ceremonyId: crypto.getRandomValues(new Uint8Array(16)),
        kind: CeremonyKind.SIGN,
        parties,
        threshold: 2,
        deadlineUnixMs: Date.now() + 120_000,
        sign: req,
      },
      130_000,
    );
    orphan.catch(() => undefined);
    // the ceremony is running (evidence accepted, reservation held) when the coordinator goes away
    for (let i = 0; i < 200 && !logs.slice(started).some((l) => l.includes('"ceremony started"')); i++)
      await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    await first.host.stop();
    await expect(orphan).rejects.toThrow();
    // signer 0 ended the orphan at once (not at its deadline, 2 minutes away)
    for (let i = 0; i < 100 && !logs.some((l) => l.includes('control stream that started it closed')); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(logs.join('')).toContain('ceremony aborted: the control stream that started it closed before its result');

    // the restarted coordinator retries: same stored transaction, same digests, a new ceremony id
    const second = await coordinator();
    const retryId = crypto.getRandomValues(new Uint8Array(16));
    const results: CeremonyResult[] = await Promise.all(
      peerIds.map((p) =>
        second.client.startCeremony(
          p,
          {
            ceremonyId: retryId,
            kind: CeremonyKind.SIGN,
            parties,
            threshold: 2,
            deadlineUnixMs: Date.now() + 30_000,
            sign: req,
          },
          40_000,
        ),
      ),
    );
    for (const r of results) expect({ outcome: r.outcome, error: r.error }).toEqual({ outcome: Outcome.OK, error: '' });
    expect(results[0]?.signatures?.length).toBe(1);
  }, 120_000);
});
