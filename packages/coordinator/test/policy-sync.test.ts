/**
 * Policy versions reach the signers (issue #26 item 3), end to end: a real coordinator (PGlite,
 * HTTP socket, signing services with their libp2p host) and a real signer daemon (`startSigner`,
 * libp2p on 127.0.0.1, encrypted store, the Admin device pinned) registered as a server signer.
 * An Admin device signs versions and a tombstone through the admin API; the coordinator pushes each
 * to the signer as it takes effect, and a signer that was offline at an activation catches up at
 * its next sync (before its next ceremony). The signer's own store is read at the end.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { learnedPolicy } from '@custodian/ceremony';
import { SecureStore } from '@custodian/ceremony/level-store';
import { bytesToHex } from '@custodian/crypto';
import { createIdentity, type SignerConfig, type SignerDaemon, startSigner } from '@custodian/signer';
import { type DeviceFrame, decodeDeviceFrame, deviceHelloDigest, encodeDeviceFrame } from '@custodian/signer-client';
import { DEFAULT_LIMITS, deviceSign, openControlRequest, type SignedPolicy, signPolicy } from '@custodian/wire';
import { peerIdFromString } from '@libp2p/peer-id';
import { p256 } from '@noble/curves/nist.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { freePort } from '../../signer/test/cluster.js';
import { DEVICE_MAX_FRAME_BYTES, DEVICE_WS_PATH } from '../src/devices/hub.js';
import { enrollmentBody, type PhoneKeys, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, type Json, startHarness } from './helpers.js';

const PASS_ENV = 'CUSTODIAN_POLICY_SYNC_TEST_PASS';
const PASS = 'policy sync test passphrase';
process.env[PASS_ENV] = PASS;
const SCRYPT = { N: 1 << 10, r: 8, p: 1 };
const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

describe('the coordinator pushes every signed policy version and tombstone to the server signers', () => {
  let h: Harness;
  let dir = '';
  let config: SignerConfig;
  let daemon: SignerDaemon | undefined;
  let peerId = '';
  const logs: string[] = [];
  const adminDevice = p256.utils.randomSecretKey();
  let adminDeviceId = '';
  /** The admin phone's keys (its MPC peer id is pinned at enrollment). */
  let adminPhone: PhoneKeys;
  const P = () => `/admin/v1/profiles/${h.profileId}`;

  async function startDaemon(): Promise<void> {
    const sink = new Writable({
      write(chunk, _e, cb) {
        logs.push(String(chunk));
        cb();
      },
    });
    daemon = await startSigner(config, pino({ level: 'info' }, sink));
  }

  async function stopDaemon(): Promise<void> {
    const d = daemon;
    daemon = undefined;
    await d?.stop();
  }

  /** The signer logged that it learned `version` of `policyId`. */
  const learned = (policyId: string, version: number) =>
    logs.some((l) => {
      const j = JSON.parse(l) as Json;
      return j.policy === policyId && j.version === version && /policy (version|tombstone) learned/.test(j.msg);
    });

  async function until(cond: () => boolean, ms = 10_000): Promise<void> {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end) throw new Error('condition not met in time');
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async function sign(p: Json, version: number): Promise<Json> {
    const v = p.versions.find((x: Json) => x.version === version);
    const r = await h.req('POST', `${P()}/policies/${p.policy_id}/versions/${version}/signature`, {
      token: h.adminToken,
      body: { device_id: adminDeviceId, signature: signPolicy(v.document, adminDeviceId, adminDevice).signature },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  }

  beforeAll(async () => {
    h = await startHarness({
      masterKey: false,
      coordinator: { signing: { enabled: true, presignaturePool: 0 }, transfers: { runPipeline: false } },
    });
    const e = await h.req('POST', '/devices/v1/enrollments', {
      body: enrollmentBody((adminPhone = await phoneKeys(adminDevice)), 'admin phone'),
    });
    expect(e.status).toBe(201);
    adminDeviceId = e.body.device_id;
    const a = await h.req('POST', `/admin/v1/devices/${adminDeviceId}/approve`, {
      token: h.adminToken,
      body: { fingerprint: e.body.fingerprint, user_id: await userIdOf(h, ADMIN_EMAIL) },
    });
    expect(a.status).toBe(200);
    dir = await mkdtemp(join(tmpdir(), 'custodian-policy-sync-'));
    const dataDir = join(dir, 'signer');
    peerId = (await createIdentity(dataDir, PASS, SCRYPT)).peerId;
    const port = await freePort();
    config = {
      listen: `/ip4/127.0.0.1/tcp/${port}`,
      dataDir,
      peers: [],
      coordinator: { peerId: h.c.signing?.peerId as string },
      passphrase: { env: PASS_ENV },
      logLevel: 'info',
      scrypt: SCRYPT,
      trustedAdminDevices: [{ deviceId: adminDeviceId, publicKey: bytesToHex(p256.getPublicKey(adminDevice, true)) }],
      chains: { 'ethereum-local': { family: 'ethereum', chainId: 31337, maxFee: '10000000000000000' } },
    };
    await startDaemon();
    await h.c.db.query(
      `INSERT INTO server_signers (signer_id, name, peer_id, address, fingerprint, created_at)
       VALUES ($1, 'signer-1', $2, $3, 'test', now())`,
      [randomUUID(), peerId, config.listen],
    );
  }, 60_000);

  afterAll(async () => {
    await stopDaemon();
    await h?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('each activation reaches the running signer; a signer offline at the deletion learns the tombstone at its next sync', async () => {
    const c = await h.req('POST', `${P()}/policies`, {
      token: h.adminToken,
      body: { name: 'ops', scope: { blockchain: 'ethereum-local' }, whitelist: [DEST] },
    });
    expect(c.status).toBe(201);
    const id = c.body.policy_id as string;
    await sign(c.body, 1);
    await until(() => learned(id, 1));
    const u = await h.req('PUT', `${P()}/policies/${id}`, {
      token: h.adminToken,
      body: { name: 'ops', scope: { blockchain: 'ethereum-local' }, whitelist: [] },
    });
    expect(u.status).toBe(200);
    // version 2 is pending: the signer is told nothing before it is signed
    await new Promise((r) => setTimeout(r, 200));
    expect(learned(id, 2)).toBe(false);
    await sign(u.body, 2);
    await until(() => learned(id, 2));

    // the signer is offline when the deletion takes effect
    await stopDaemon();
    const d = await h.req('DELETE', `${P()}/policies/${id}`, { token: h.adminToken });
    expect(d.status).toBe(202);
    await sign(d.body, 3);
    expect(learned(id, 3)).toBe(false);
    // back online: before its next ceremony the gateway syncs it (signing services `prepare`)
    await startDaemon();
    await h.c.signing?.policySync.ensure([peerId]);
    await until(() => learned(id, 3));
    expect(logs.some((l) => l.includes('policy tombstone learned'))).toBe(true);

    // what the signer's own store holds
    await stopDaemon();
    const store = await SecureStore.open(join(config.dataDir, 'db'), PASS, SCRYPT);
    try {
      expect(await learnedPolicy(store, id)).toMatchObject({ version: 3, deleted: true });
    } finally {
      await store.close();
    }
    await startDaemon();
  }, 60_000);

  it('connected phones get every signed version at connection and each new one as it takes effect', async () => {
    const c = await h.req('POST', `${P()}/policies`, {
      token: h.adminToken,
      body: { name: 'phones', scope: { blockchain: 'ethereum-local' }, whitelist: [DEST] },
    });
    expect(c.status).toBe(201);
    const id = c.body.policy_id as string;
    await sign(c.body, 1);
    // a phone (the Admin's device, an APPROVED device) over a real WebSocket
    const mpcPeerId = adminPhone.mpcPeerId;
    const ws = new WebSocket(`${h.url.replace(/^http/, 'ws')}${DEVICE_WS_PATH}`, {
      maxPayload: DEVICE_MAX_FRAME_BYTES,
    });
    const frames: DeviceFrame[] = [];
    ws.on('error', () => undefined);
    ws.on('message', (data: Buffer) => {
      const f = decodeDeviceFrame(new Uint8Array(data), { ...DEFAULT_LIMITS, maxMessageBytes: DEVICE_MAX_FRAME_BYTES });
      if (!f.ok) throw new Error(`undecodable frame from the hub: ${f.reason}`);
      frames.push(f.frame);
      const ch = f.frame.challenge;
      if (ch) {
        const digest = deviceHelloDigest(ch.nonce, ch.coordinatorPeerId, adminDeviceId, mpcPeerId);
        ws.send(
          encodeDeviceFrame({
            hello: { deviceId: adminDeviceId, mpcPeerId, signature: deviceSign(digest, adminDevice) },
          }),
        );
      }
    });
    const coordinatorKey = peerIdFromString(h.c.signing?.peerId as string).publicKey?.raw as Uint8Array;
    /** Signed versions pushed to the phone so far (each invitation verified as the phone does). */
    const pushed = (): SignedPolicy[] =>
      frames.flatMap((f) => {
        if (!f.invitation) return [];
        const o = openControlRequest(f.invitation.signedControl, coordinatorKey);
        if (!o.ok) throw new Error(`invitation not signed by the coordinator: ${o.rejection.reason}`);
        return (o.value.policySync?.signedPoliciesJson ?? []).map((j) => JSON.parse(j) as SignedPolicy);
      });
    const has = (v: number, deleted = false) =>
      pushed().some(
        (s) => s.document.policy_id === id && s.document.version === v && (s.document.deleted === true) === deleted,
      );
    try {
      await until(() => has(1));
      const d = await h.req('DELETE', `${P()}/policies/${id}`, { token: h.adminToken });
      expect(d.status).toBe(202);
      await new Promise((r) => setTimeout(r, 200));
      expect(has(2, true)).toBe(false); // pending: nothing to learn yet
      await sign(d.body, 2);
      await until(() => has(2, true));
    } finally {
      ws.terminate();
    }
  }, 30_000);
});
