/**
 * Attack (issue #26 item 3): a compromised coordinator replays an OLDER signed policy version —
 * validly signed by the pinned Admin device when it was current — after a newer version was
 * activated but never used to sign, or after the policy was deleted. A signer that learns policy
 * versions only from the sign requests it served cannot know better, and signs under the looser,
 * superseded or deleted rules.
 *
 * Real path: a signer daemon (`startSigner`, in this process, libp2p on 127.0.0.1, encrypted
 * LevelDB store holding an ECDSA key record) with enforcement on (the Admin device pinned), and the
 * test as its coordinator sending signed control requests: `policy_sync` pushes of Admin-signed
 * versions and tombstones (control.proto `PolicySync`), then SIGN requests whose evidence carries
 * an older version.
 *
 * Must hold: the signer verifies every pushed version against its own trusted Admin devices, keeps
 * the highest per policy in its store (never lowering it, across restarts), refuses a sign request
 * under an older version (`POLICY_VERSION_SUPERSEDED`) and under any version of a policy whose
 * signed tombstone it holds (`POLICY_DELETED`); a push that is not signed by a trusted Admin
 * device is refused and stored nowhere.
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
  type PolicyDocument,
  refusalOf,
  type SignedPolicy,
  type SignRequest,
  signApproval,
  signPolicy,
  type TransferIntent,
  walletIdOf,
} from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { p256 } from '@noble/curves/nist.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intent as fixtureIntent } from '../../ceremony/test/attack-fixtures.js';
import { fixtureShares2of3 } from '../../ceremony/test/in-process.js';
import { createIdentity, type SignerConfig, type SignerDaemon, startSigner } from '../src/index.js';
import { freePort, tempDir } from './cluster.js';

const PASS_ENV = 'CUSTODIAN_POLICY_REPLAY_TEST_PASS';
const PASS = 'policy replay test passphrase';
process.env[PASS_ENV] = PASS;
const SCRYPT = { N: 1 << 10, r: 8, p: 1 };

const adminSk = p256.utils.randomSecretKey();
const deviceSk = p256.utils.randomSecretKey();
const pub = (sk: Uint8Array) => bytesToHex(p256.getPublicKey(sk, true));
const share = fixtureShares2of3[0] as EcdsaKeyShare;
const keyId = 'cd'.repeat(16);
const path = [44, 60, 0, 0, 1];
const child = derivedChild(share.core.publicKey, share.core.chainCode, path);
const from = ethereumAddress(child.publicKey);
const dest = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const other = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
const profile = '11111111-1111-4111-8111-111111111111';

/** Version `version` of policy `policyId`, signed by the pinned Admin device (or `sk`). */
function version(policyId: string, v: number, over: Partial<PolicyDocument> = {}, sk = adminSk): SignedPolicy {
  const doc: PolicyDocument = {
    policy_id: policyId,
    version: v,
    profile_id: profile,
    scope: { wallet_ids: null, blockchain: 'ethereum-local', asset_id: null },
    // version 1 is the loose one: two destinations, a high limit
    whitelist: v === 1 ? [dest, other] : [dest],
    per_transaction_limit: v === 1 ? '1000000' : '10',
    daily_limit: null,
    approvals: { quorum: 1, above_amount: '0' },
    created_at: `2026-01-0${v}T00:00:00.000Z`,
    ...over,
  };
  return signPolicy(doc, 'admin-phone', sk);
}

function intent(): TransferIntent {
  return fixtureIntent({
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
}

let nonce = 0;
/** A sign request for a fresh intent whose evidence carries `policy`. */
function request(policy: SignedPolicy): SignRequest {
  const i = intent();
  const ctx: EthereumContext = {
    chainId: 31337,
    from,
    fromPublicKey: bytesToHex(child.publicKey),
    fromPath: path,
    nonce: nonce++,
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

describe('a signer refuses policy versions older than the newest it learned, and every version of a deleted policy', () => {
  let dir = '';
  let config: SignerConfig;
  let daemon: SignerDaemon | undefined;
  let host: Host;
  let client: ControlClient;
  let peerId = '';
  const logs: string[] = [];
  /** A peer of the key that never answers: an accepted request ends without a signature (the deadline). */
  let absent = '';

  async function start(): Promise<void> {
    const sink = new Writable({
      write(chunk, _e, cb) {
        logs.push(String(chunk));
        cb();
      },
    });
    daemon = await startSigner(config, pino({ level: 'info' }, sink));
  }

  /** Push signed versions as the coordinator does (control.proto PolicySync); the per-item outcomes. */
  async function push(...signed: SignedPolicy[]): Promise<unknown> {
    const res = await client.send(peerId, {
      policySync: { signedPoliciesJson: signed.map((s) => JSON.stringify(s)) },
    } as never);
    return (res as { policySync?: { items?: unknown[] } }).policySync?.items;
  }

  /**
   * Ask for a signature under `policy`: the refusal code, or `NOT_REFUSED` when every check let it
   * through (the ceremony then waits for the absent co-signer and ends at its deadline).
   */
  async function sign(policy: SignedPolicy): Promise<string> {
    const result: CeremonyResult = await client.startCeremony(
      peerId,
      {
        ceremonyId: crypto.getRandomValues(new Uint8Array(16)),
        kind: CeremonyKind.SIGN,
        parties: [{ peerId }, { peerId: absent }],
        threshold: 2,
        deadlineUnixMs: Date.now() + 1500,
        sign: request(policy),
      },
      20_000,
    );
    if (result.outcome !== Outcome.REFUSED) return 'NOT_REFUSED';
    // the typed code (control.proto CeremonyResult.refusal), never the text
    return refusalOf(result.refusal);
  }

  beforeAll(async () => {
    dir = tempDir('attack-policy-replay');
    const coordKey = await generateKeyPair('Ed25519');
    absent = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString();
    const dataDir = join(dir, 'signer');
    const id = await createIdentity(dataDir, PASS, SCRYPT);
    peerId = id.peerId;
    const port = await freePort();
    config = {
      listen: `/ip4/127.0.0.1/tcp/${port}`,
      dataDir,
      peers: [],
      coordinator: { peerId: peerIdFromPrivateKey(coordKey).toString() },
      passphrase: { env: PASS_ENV },
      logLevel: 'info',
      scrypt: SCRYPT,
      trustedAdminDevices: [{ deviceId: 'admin-phone', publicKey: pub(adminSk) }],
      chains: { 'ethereum-local': { family: 'ethereum', chainId: 31337, maxFee: '10000000000000000' } },
    };
    const store = await SecureStore.open(join(dataDir, 'db'), PASS, SCRYPT);
    const rec: KeyRecord = {
      keyId,
      threshold: 2,
      parties: [peerId, absent],
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
    await start();
    host = await createHost({
      privateKey: coordKey,
      listen: [],
      peers: new Map([[peerId, [config.listen]]]),
      maxFrameBytes: 16 * 1024 * 1024,
      log: pino({ level: 'silent' }),
    });
    client = ControlClient.fromHost(host, Uint8Array.from(coordKey.raw.subarray(0, 32)));
  }, 60_000);

  afterAll(async () => {
    await host?.stop();
    await daemon?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('replaying version 1 after version 2 was pushed (and never signed under) is refused, also after a restart', async () => {
    const id = crypto.randomUUID();
    const v1 = version(id, 1);
    const v2 = version(id, 2);
    // the looser version 1 is in force: the signer lets it through
    expect(await sign(v1)).toBe('NOT_REFUSED');
    // version 2 is activated: the coordinator pushes it, but never uses it to sign
    expect(await push(v2)).toMatchObject([{ policyId: id, version: 2, outcome: 'STORED', heldVersion: 2 }]);
    // a compromised coordinator replays version 1
    expect(await sign(v1)).toBe('POLICY_VERSION_SUPERSEDED');
    // pushing version 1 again does not lower what the signer holds
    expect(await push(v1)).toMatchObject([{ version: 1, outcome: 'KNOWN', heldVersion: 2 }]);
    expect(await sign(v1)).toBe('POLICY_VERSION_SUPERSEDED');
    // the signer's store keeps it across a restart
    await daemon?.stop();
    await start();
    expect(await sign(v1)).toBe('POLICY_VERSION_SUPERSEDED');
    expect(await sign(v2)).toBe('NOT_REFUSED');
  }, 60_000);

  it('after a signed tombstone was pushed, every version of the policy is refused, the tombstone too', async () => {
    const id = crypto.randomUUID();
    const v1 = version(id, 1);
    const v2 = version(id, 2);
    const tombstone = version(id, 3, { deleted: true } as Partial<PolicyDocument>);
    expect(await sign(v2)).toBe('NOT_REFUSED');
    expect(await push(tombstone)).toMatchObject([{ version: 3, outcome: 'STORED', heldDeleted: true }]);
    expect(await sign(v2)).toBe('POLICY_DELETED');
    expect(await sign(v1)).toBe('POLICY_DELETED');
    expect(await sign(tombstone)).toBe('POLICY_DELETED');
    // a version pushed afterwards (older, or even newer) revives nothing: the tombstone is final
    expect(await push(v2, version(id, 4))).toMatchObject([
      { version: 2, outcome: 'KNOWN', heldVersion: 3, heldDeleted: true },
      { version: 4, outcome: 'KNOWN', heldVersion: 3, heldDeleted: true },
    ]);
    expect(await sign(v2)).toBe('POLICY_DELETED');
  }, 60_000);

  it('a pushed version or tombstone not signed by a trusted Admin device is refused, logged and stored nowhere', async () => {
    const id = crypto.randomUUID();
    const v1 = version(id, 1);
    const rogue = p256.utils.randomSecretKey();
    const forgedTombstone = version(id, 2, { deleted: true } as Partial<PolicyDocument>, rogue);
    const forgedNewer = version(id, 5, {}, rogue);
    // a tampered document under a genuine signature
    const genuine = version(id, 7);
    const tampered = { ...genuine, document: { ...genuine.document, version: 9 } };
    const items = (await push(forgedTombstone, forgedNewer, tampered)) as { outcome: string }[];
    expect(items?.map((x) => x.outcome)).toEqual([
      'POLICY_SIGNATURE_VERIFICATION_FAILED',
      'POLICY_SIGNATURE_VERIFICATION_FAILED',
      'POLICY_SIGNATURE_VERIFICATION_FAILED',
    ]);
    expect(logs.join('')).toContain('policy version refused');
    // nothing of them was kept: version 1 still passes the policy check
    expect(await sign(v1)).toBe('NOT_REFUSED');
  }, 60_000);

  // found by the hostile review of #26: a tombstone is final, and a learned version is one document
  it('a version numbered above a learned tombstone is refused at sign time (the tombstone is final)', async () => {
    const id = crypto.randomUUID();
    const tombstone = version(id, 3, { deleted: true } as Partial<PolicyDocument>);
    expect(await push(tombstone)).toMatchObject([{ version: 3, outcome: 'STORED', heldDeleted: true }]);
    // the revived policy: loose, numbered above the tombstone, signed by the pinned Admin device
    const revived = version(id, 4, { whitelist: [dest, other], per_transaction_limit: '1000000' });
    expect(await sign(revived)).toBe('POLICY_DELETED');
  }, 60_000);

  it('another document under the learned version number is refused; the learned document itself signs', async () => {
    const id = crypto.randomUUID();
    const strict = version(id, 2);
    expect(await push(strict)).toMatchObject([{ version: 2, outcome: 'STORED' }]);
    // a looser document carrying the same version number, also signed by the pinned Admin device
    // (a compromised coordinator showed it to the Admin as "version 2" of another policy view)
    const twin = version(id, 2, { whitelist: [dest, other], per_transaction_limit: '1000000' });
    expect(await sign(twin)).toBe('POLICY_VERSION_SUPERSEDED');
    expect(await sign(strict)).toBe('NOT_REFUSED');
  }, 60_000);
});
