/**
 * Attack (issue #22 "Backup and recovery", #20 item 8): a backup must never carry presignatures or
 * nonce state to the restored signer — a CGGMP21 presignature used twice (once by the lost
 * signer before it was lost, once by its restored copy) reveals the key share.
 *
 * Real path: two signer daemons (`startSigner`, in this process, libp2p on 127.0.0.1) holding a
 * 2-of-3 CGGMP21 key (the test-only fixture shares of packages/cggmp) on encrypted LevelDB stores,
 * driven by the test as the coordinator: a real PRESIGN, the signers stopped with their
 * presignatures still in their stores, an encrypted backup of one of them (`createBackup`), its
 * restore on a "new machine" (`restoreBackup`), and SIGN ceremonies against the restored daemon.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { type KeyRecord, presignaturePoolSizes } from '@custodian/ceremony';
import { SecureStore } from '@custodian/ceremony/level-store';
import { type KeyShare as EcdsaKeyShare, keyShareToJson } from '@custodian/cggmp';
import { bytesToHex, secp256k1Group } from '@custodian/crypto';
import { ControlClient, createHost, type Host } from '@custodian/signer-client';
import { CeremonyKind, type CeremonyResult, KeyAlgorithm, Outcome, type StartCeremony } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { fixtureShares2of3 } from '../../ceremony/test/in-process.js';
import {
  createBackup,
  createIdentity,
  type NodeIdentity,
  restoreBackup,
  type SignerConfig,
  type SignerDaemon,
  startSigner,
  writeRecoveryKey,
} from '../src/index.js';
import { freePort, tempDir } from './cluster.js';

const PASS_ENV = 'CUSTODIAN_BACKUP_PRESIGN_TEST_PASS';
const PASS = 'backup presignature test passphrase';
process.env[PASS_ENV] = PASS;
const SCRYPT = { N: 1 << 10, r: 8, p: 1 };
const keyId = 'ef'.repeat(16);
const enc = new TextEncoder();

const running: SignerDaemon[] = [];
const hosts: Host[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const d of running) await d.stop().catch(() => undefined);
  for (const h of hosts) await h.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function start(config: SignerConfig, logs: string[]): Promise<SignerDaemon> {
  const sink = new Writable({
    write(chunk, _e, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const d = await startSigner(config, pino({ level: 'info' }, sink));
  running.push(d);
  return d;
}

async function stop(d: SignerDaemon): Promise<void> {
  await d.stop();
  running.splice(running.indexOf(d), 1);
}

describe('attack: a restored backup cannot reuse a presignature', () => {
  it('presignatures in the store at backup time are absent after restore, a SIGN naming one is refused, a cold SIGN verifies', async () => {
    const dir = tempDir('backup-presign');
    dirs.push(dir);
    const coordKey = await generateKeyPair('Ed25519');
    const coordPeer = peerIdFromPrivateKey(coordKey).toString();
    const third = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString();
    const ports = [await freePort(), await freePort()];
    const ids: NodeIdentity[] = [];
    for (const i of [0, 1]) ids.push(await createIdentity(join(dir, `signer${i}`), PASS, SCRYPT));
    const share0 = fixtureShares2of3[0] as EcdsaKeyShare;
    const ecdsaKey = secp256k1Group.encodePoint(share0.core.publicKey);
    const configOf = (i: number, dataDir: string): SignerConfig => ({
      listen: `/ip4/127.0.0.1/tcp/${ports[i]}`,
      dataDir,
      peers: [{ peerId: ids[1 - i]?.peerId as string, addrs: [`/ip4/127.0.0.1/tcp/${ports[1 - i]}`] }],
      coordinator: { peerId: coordPeer },
      passphrase: { env: PASS_ENV },
      logLevel: 'info',
      scrypt: SCRYPT,
      allowUnenforcedSigning: true,
    });
    for (const i of [0, 1]) {
      const store = await SecureStore.open(join(dir, `signer${i}`, 'db'), PASS, SCRYPT);
      const rec: KeyRecord = {
        keyId,
        threshold: 2,
        parties: [...ids.map((x) => x.peerId), third],
        keys: [
          {
            algorithm: KeyAlgorithm.SECP256K1_ECDSA,
            suite: 'cggmp',
            publicKey: bytesToHex(ecdsaKey),
            chainCode: bytesToHex(share0.core.chainCode),
          },
        ],
        epoch: 0,
        createdAt: new Date().toISOString(),
      };
      await store.batch([
        {
          type: 'put',
          sublevel: 'shares',
          key: `${keyId}/cggmp`,
          value: enc.encode(JSON.stringify(keyShareToJson(fixtureShares2of3[i] as EcdsaKeyShare))),
        },
        { type: 'put', sublevel: 'shares', key: `${keyId}/meta`, value: enc.encode(JSON.stringify(rec)) },
      ]);
      await store.close();
    }
    const logs: string[][] = [[], [], []];
    const host = await createHost({
      privateKey: coordKey,
      listen: [],
      peers: new Map(ids.map((x, i) => [x.peerId, [`/ip4/127.0.0.1/tcp/${ports[i]}`]])),
      maxFrameBytes: 16 * 1024 * 1024,
      log: pino({ level: 'silent' }),
    });
    hosts.push(host);
    const client = ControlClient.fromHost(host, Uint8Array.from(coordKey.raw.subarray(0, 32)));
    const ceremony = (start: Omit<StartCeremony, 'ceremonyId' | 'parties' | 'threshold' | 'deadlineUnixMs'>) => {
      const req: StartCeremony = {
        ceremonyId: crypto.getRandomValues(new Uint8Array(16)),
        parties: ids.map((x) => ({ peerId: x.peerId })),
        threshold: 2,
        deadlineUnixMs: Date.now() + 120_000,
        ...start,
      };
      return Promise.all(ids.map((x) => client.startCeremony(x.peerId, req)));
    };

    let d0 = await start(configOf(0, join(dir, 'signer0')), logs[0] as string[]);
    let d1 = await start(configOf(1, join(dir, 'signer1')), logs[1] as string[]);
    const pre = await ceremony({ kind: CeremonyKind.PRESIGN, keyId, presignCount: 2 });
    for (const r of pre) expect(r.outcome, r.error).toBe(Outcome.OK);
    const [p1] = pre[0]?.presignatureIds ?? [];
    expect(p1).toBeDefined();
    await stop(d0);
    await stop(d1);

    // the stopped signer's store still holds both presignatures when the backup is taken
    const old = await SecureStore.open(join(dir, 'signer1', 'db'), PASS, SCRYPT);
    expect(Object.values(await presignaturePoolSizes(old)).reduce((a, b) => a + Number(b), 0)).toBe(2);
    await old.close();
    const recovery = await writeRecoveryKey(join(dir, 'offline'));
    await createBackup({
      dataDir: join(dir, 'signer1'),
      passphrase: PASS,
      scrypt: SCRYPT,
      recoveryPub: readFileSync(recovery.pub, 'utf8'),
      out: join(dir, 'signer1.backup'),
    });
    const newDir = join(dir, 'new-machine', 'signer1');
    await restoreBackup({
      file: new Uint8Array(readFileSync(join(dir, 'signer1.backup'))),
      recoveryKey: readFileSync(recovery.key, 'utf8'),
      dataDir: newDir,
      passphrase: PASS,
      scrypt: SCRYPT,
    });
    const fresh = await SecureStore.open(join(newDir, 'db'), PASS, SCRYPT);
    expect(await fresh.keys('presignatures')).toEqual([]);
    expect(await fresh.keys('nonces')).toEqual([]);
    await fresh.close();

    d0 = await start(configOf(0, join(dir, 'signer0')), logs[0] as string[]);
    d1 = await start(configOf(1, newDir), logs[2] as string[]);
    expect(d1.identity.peerId).toBe(ids[1]?.peerId);
    expect((logs[2] as string[]).join('')).toContain('STORE_ROLLED_BACK');

    const digest = sha256(enc.encode('a digest the lost signer might have signed with p1'));
    const named = await ceremony({
      kind: CeremonyKind.SIGN,
      sign: {
        keyId,
        algorithm: KeyAlgorithm.SECP256K1_ECDSA,
        derivationPath: [],
        digests: [digest],
        presignatureId: p1,
      },
    });
    const restoredAnswer = named[1] as CeremonyResult;
    expect(restoredAnswer.outcome).not.toBe(Outcome.OK);
    expect(restoredAnswer.error).toContain(`presignature ${p1} unknown`);
    expect(restoredAnswer.signatures ?? []).toEqual([]);

    // the restored share itself signs (cold, presigned inline) with the other signer
    const cold = await ceremony({
      kind: CeremonyKind.SIGN,
      sign: { keyId, algorithm: KeyAlgorithm.SECP256K1_ECDSA, derivationPath: [], digests: [digest] },
    });
    for (const r of cold) expect(r.outcome, r.error).toBe(Outcome.OK);
    const sig = cold[0]?.signatures?.[0]?.signature as Uint8Array;
    expect(secp256k1.verify(sig.subarray(0, 64), digest, ecdsaKey, { prehash: false })).toBe(true);
  }, 240_000);
});
