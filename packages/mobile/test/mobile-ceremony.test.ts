/**
 * Mobile signers in ceremonies, with real processes: a coordinator (device hub + libp2p relay),
 * 2 server signer processes and 2 mobile simulator processes. Master key 3-of-4 (FROST Ed25519 and
 * Taproot; ECDSA runs in mobile-ecdsa.slow.test.ts), signatures with devices in the signing set
 * verified independently (noble), the relay sees no plaintext of the point-to-point payloads it
 * carries, and a tampered relayed envelope is rejected by its receiver.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { type RelayedEvent, type SignerGateway, type SignParty, signerKeyId } from '@custodian/coordinator';
import { deriveEd25519 } from '@custodian/crypto';
import { decodeDeviceFrame, deviceHelloDigest, encodeDeviceFrame } from '@custodian/signer-client';
import {
  decodeMessage,
  deviceSign,
  KeyAlgorithm,
  messageType,
  openEnvelope,
  type TransferIntent,
  transferIntentDigest,
} from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { enrollDevice } from '../src/enroll.js';
import { unlockVault } from '../src/vault.js';
import { buildAll, type Instance, PIN, readLog, startInstance, waitFor } from './harness.js';

const SignedEnvelope = messageType('custodian.v1.SignedEnvelope');
const Envelope = messageType('custodian.v1.Envelope');

let inst: Instance;
const relayed: RelayedEvent[] = [];
const ceremonyUuid = randomUUID();
let dkgPeers: string[] = [];
let outcome: Awaited<ReturnType<NonNullable<Instance['coord']['signing']>['ceremonyClient']['runDkg']>>;

function intent(id: string): TransferIntent {
  return {
    transfer_id: id,
    profile_id: 'p',
    wallet_id: 'w',
    blockchain: 'test',
    asset_id: 'a',
    asset_symbol: 'TST',
    asset_decimals: 0,
    asset_contract: null,
    source_address: 's',
    destination_address: 'd',
    amount: '1',
    derivation_path: [0, 7],
    key_algorithm: 'ED25519',
    key_id: signerKeyId(ceremonyUuid),
    created_at: new Date().toISOString(),
    max_fee: '10000000000000000',
  };
}

function gateway(): SignerGateway {
  return inst.coord.signing?.gateway as SignerGateway;
}

const server = (i: number): SignParty => ({ kind: 'server', id: inst.signers[i]?.signerId as string });
const device = (i: number): SignParty => ({ kind: 'device', id: inst.mobiles[i]?.deviceId as string });

describe('mobile signers through the coordinator relay (2 server + 2 mobile processes)', () => {
  beforeAll(async () => {
    buildAll();
    inst = await startInstance({
      label: 'mobile-ceremony',
      servers: 2,
      devices: 2,
      algorithms: [KeyAlgorithm.ED25519, KeyAlgorithm.SECP256K1_TAPROOT],
    });
    inst.coord.signing?.hub.onRelayed((e) => relayed.push({ ...e, envelope: Uint8Array.from(e.envelope) }));
  }, 90_000);

  afterAll(async () => {
    await inst?.stop();
  }, 30_000);

  it('master key ceremony 3-of-4 (2 server + 2 mobile signers, no approval tap) within its deadline', async () => {
    const ac = new AbortController();
    const phases: string[] = [];
    const client = inst.coord.signing?.ceremonyClient;
    if (!client) throw new Error('no ceremony client');
    outcome = await client.runDkg({
      ceremonyId: ceremonyUuid,
      threshold: 3,
      parties: [
        ...inst.signers.map((s) => ({
          kind: 'server' as const,
          id: s.signerId,
          peer: s.peerId,
          address: `/ip4/127.0.0.1/tcp/${s.port}`,
        })),
        ...inst.mobiles.map((m) => ({ kind: 'device' as const, id: m.deviceId, peer: m.fingerprint, address: null })),
      ],
      deadline: new Date(Date.now() + 5 * 60_000),
      signal: ac.signal,
      onProgress: (p) => phases.push(p.phase),
    });
    dkgPeers = [...inst.signers.map((s) => s.peerId), ...inst.mobiles.map((m) => m.mpcPeerId)];
    expect(outcome.ed25519.publicKey).toHaveLength(32);
    expect(outcome.secp256k1.publicKey).toHaveLength(33);
    expect(outcome.transcriptHash).toMatch(/^[0-9a-f]{64}$/);
    expect(phases[0]).toBe('CONNECTING');
    expect(phases).toContain('KEYGEN');
    // Both mobile simulators ran the ceremony on their own (outcome OK = 1).
    for (const m of inst.mobiles) expect(m.stdout).toMatch(/"event":"ceremony","kind":1,"outcome":1/);
    // Device traffic went through the relay in every direction.
    const dirs = new Set(relayed.map((r) => r.direction));
    expect(dirs).toEqual(new Set(['device-to-device', 'device-to-signer', 'signer-to-device']));
  }, 120_000);

  it('Ed25519 and Taproot signatures with devices in the signing set, verified independently', async () => {
    const path = [0, 7];
    const msg = new TextEncoder().encode('custodian mobile test message');
    const r = await gateway().sign({
      keyId: signerKeyId(ceremonyUuid),
      algorithm: 'ED25519',
      parties: [server(0), server(1), device(0)],
      derivationPath: path,
      digests: [msg],
      evidence: { intent: intent('t-ed'), policy: null, approvals: [], chainContext: '{}' },
      deadline: new Date(Date.now() + 60_000),
    });
    if (!r.ok) throw new Error(`sign failed: ${JSON.stringify(r)}`);
    const child = deriveEd25519(outcome.ed25519.publicKey, outcome.ed25519.chainCode, path);
    const sig = r.signatures[0];
    expect(sig?.publicKey).toEqual(child.publicKey);
    expect(ed25519.verify(sig?.signature as Uint8Array, msg, child.publicKey)).toBe(true);

    const digest = sha256(msg);
    const t = await gateway().sign({
      keyId: signerKeyId(ceremonyUuid),
      algorithm: 'SECP256K1_TAPROOT',
      parties: [server(1), device(0), device(1)],
      derivationPath: [],
      digests: [digest],
      evidence: { intent: intent('t-tr'), policy: null, approvals: [], chainContext: '{}' },
      deadline: new Date(Date.now() + 60_000),
    });
    if (!t.ok) throw new Error(`sign failed: ${JSON.stringify(t)}`);
    const ts = t.signatures[0];
    expect(schnorr.verify(ts?.signature as Uint8Array, digest, ts?.publicKey as Uint8Array)).toBe(true);
  }, 120_000);

  it('the relay carries no plaintext of the point-to-point payloads (decrypted here with the device key)', async () => {
    // The test knows the PIN, so it can open mobile0's vault and decrypt what was sent TO it.
    const vault = await unlockVault(inst.mobiles[0]?.dir as string, PIN);
    const self = dkgPeers.indexOf(vault.info.mpcPeerId);
    const parties = dkgPeers.map((p) => peerIdFromString(p).publicKey?.raw as Uint8Array);
    const plaintexts: Uint8Array[] = [];
    for (const r of relayed) {
      if (r.to !== vault.info.mpcPeerId) continue;
      const outer = decodeMessage(SignedEnvelope, r.envelope);
      if (!outer.ok) continue;
      const inner = decodeMessage(Envelope, (outer.value as unknown as { envelope: Uint8Array }).envelope);
      if (!inner.ok) continue;
      const h = inner.value as unknown as { sessionId: Uint8Array; receiver?: number; broadcast?: boolean };
      if (h.receiver !== self) continue;
      const opened = openEnvelope(r.envelope, {
        sessionId: h.sessionId,
        parties,
        self,
        selfSecretKey: vault.mpcSecretKey,
      });
      if (opened.ok) plaintexts.push(opened.value.payload);
    }
    vault.wipe();
    expect(plaintexts.length).toBeGreaterThan(0);
    const haystack = relayed.map((r) => Buffer.from(r.envelope));
    let windows = 0;
    for (const p of plaintexts) {
      if (p.length < 32) continue;
      for (let i = 0; i + 32 <= p.length; i += 8) {
        const needle = Buffer.from(p.subarray(i, i + 32));
        windows++;
        for (const h of haystack) expect(h.includes(needle)).toBe(false);
      }
    }
    expect(windows).toBeGreaterThan(0);
  });

  it('a tampered relayed envelope is rejected by its receiver; signing works again afterwards', async () => {
    const hub = inst.coord.signing?.hub;
    if (!hub) throw new Error('no hub');
    let tampered = 0;
    const off = hub.onRelayed((e) => {
      // A malicious relay: flip one bit of the sender's signature of the first device→signer envelope.
      if (tampered === 0 && e.direction === 'device-to-signer' && e.to === inst.signers[0]?.peerId) {
        tampered++;
        const i = e.envelope.length - 1;
        e.envelope[i] = (e.envelope[i] as number) ^ 1;
      }
    });
    const before = readLog(inst.signers[0] as never).length;
    const msg = new TextEncoder().encode('tampered');
    const r = await gateway().sign({
      keyId: signerKeyId(ceremonyUuid),
      algorithm: 'ED25519',
      parties: [server(0), device(0), device(1)],
      derivationPath: [],
      digests: [msg],
      evidence: { intent: intent('t-x'), policy: null, approvals: [], chainContext: '{}' },
      deadline: new Date(Date.now() + 6_000),
    });
    off();
    expect(tampered).toBe(1);
    expect(r.ok).toBe(false);
    await waitFor(
      () => /message rejected/.test(readLog(inst.signers[0] as never).slice(before)),
      5000,
      'rejection log',
    );
    const log = readLog(inst.signers[0] as never).slice(before);
    expect(log).toMatch(/"code":"bad-signature"/);

    const again = await gateway().sign({
      keyId: signerKeyId(ceremonyUuid),
      algorithm: 'ED25519',
      parties: [server(0), device(0), device(1)],
      derivationPath: [],
      digests: [msg],
      evidence: { intent: intent('t-y'), policy: null, approvals: [], chainContext: '{}' },
      deadline: new Date(Date.now() + 60_000),
    });
    if (!again.ok) throw new Error(`sign failed: ${JSON.stringify(again)}`);
    expect(ed25519.verify(again.signatures[0]?.signature as Uint8Array, msg, outcome.ed25519.publicKey)).toBe(true);
  }, 60_000);

  it('approval requests are pushed to the device, approved with the PIN-sealed device key, and verified by the hub', async () => {
    const hub = inst.coord.signing?.hub;
    if (!hub) throw new Error('no hub');
    const got: { deviceId: string; approval: { decision: string; intent_digest: string; signature: string } }[] = [];
    const off = hub.onApproval((e) => got.push(e));
    const i = intent(`t-approve-${randomUUID()}`);
    for (const m of inst.mobiles) hub.notifyApprovalRequest(m.deviceId, i);
    await waitFor(() => got.length === inst.mobiles.length, 15_000, 'approvals');
    off();
    expect(new Set(got.map((g) => g.deviceId))).toEqual(new Set(inst.mobiles.map((m) => m.deviceId)));
    for (const g of got) {
      expect(g.approval.decision).toBe('APPROVE');
      expect(g.approval.intent_digest).toBe(Buffer.from(transferIntentDigest(i)).toString('hex'));
      expect(g.approval.signature).toMatch(/^[0-9a-f]{128}$/);
    }
    for (const m of inst.mobiles)
      expect(m.stdout).toContain(`"event":"decision","transfer_id":"${i.transfer_id}","decision":"APPROVE"`);
  }, 30_000);

  it('the hub admits only APPROVED devices that sign its challenge with the enrolled key', async () => {
    const dir = join(inst.dir, 'pending-phone');
    const r = await enrollDevice({
      url: inst.url,
      dataDir: dir,
      pin: PIN,
      name: 'pending',
      kdf: { N: 1024, r: 8, p: 1 },
    });
    expect(r.status).toBe('PENDING');
    const vault = await unlockVault(dir, PIN);
    const attempt = (sign: (nonce: Uint8Array, coord: string) => Uint8Array, deviceId: string) =>
      new Promise<{ code: number; reason: string }>((resolve) => {
        const ws = new WebSocket(`${inst.url.replace('http', 'ws')}/devices/v1/ws`);
        ws.on('message', (data: Buffer) => {
          const d = decodeDeviceFrame(new Uint8Array(data));
          if (d.ok && d.frame.challenge) {
            const c = d.frame.challenge;
            ws.send(
              encodeDeviceFrame({
                hello: { deviceId, mpcPeerId: vault.info.mpcPeerId, signature: sign(c.nonce, c.coordinatorPeerId) },
              }),
            );
          }
        });
        ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
      });
    const good = (nonce: Uint8Array, coord: string) =>
      deviceSign(deviceHelloDigest(nonce, coord, r.device_id, vault.info.mpcPeerId), vault.deviceSecretKey);
    expect(await attempt(good, r.device_id)).toEqual({ code: 4401, reason: 'device is PENDING, not APPROVED' });
    await inst.coord.db.query(`UPDATE devices SET status = 'APPROVED' WHERE device_id = $1`, [r.device_id]);
    // An approved device id, but the challenge signed by another key (the relay replaying a hello fails the same way).
    const other = p256.utils.randomSecretKey();
    const forged = (nonce: Uint8Array, coord: string) =>
      deviceSign(deviceHelloDigest(nonce, coord, r.device_id, vault.info.mpcPeerId), other);
    expect(await attempt(forged, r.device_id)).toEqual({ code: 4401, reason: 'bad signature' });
    await inst.coord.db.query(`UPDATE devices SET status = 'REMOVED' WHERE device_id = $1`, [r.device_id]);
    vault.wipe();
  }, 30_000);
  it('a device that disconnects mid-ceremony ends the ceremony at once (ABORTED), not at its deadline', async () => {
    const victim = inst.mobiles[1];
    if (!victim?.proc) throw new Error('no mobile process');
    const t0 = Date.now();
    const pending = gateway().sign({
      keyId: signerKeyId(ceremonyUuid),
      algorithm: 'ED25519',
      parties: [server(0), server(1), device(1)],
      derivationPath: [0, 9],
      digests: [new TextEncoder().encode('device goes away')],
      evidence: { intent: intent('t-gone'), policy: null, approvals: [], chainContext: '{}' },
      deadline: new Date(Date.now() + 60_000),
    });
    await new Promise((r) => setTimeout(r, 30)); // the invitation is out (the device was online)
    victim.proc.kill('SIGKILL');
    const r = await pending;
    expect(r.ok).toBe(false);
    expect(JSON.stringify(r)).toMatch(/disconnected/);
    expect(Date.now() - t0).toBeLessThan(20_000); // the deadline was 60 s away
  }, 90_000);
});
