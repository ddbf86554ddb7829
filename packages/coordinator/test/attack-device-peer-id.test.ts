/**
 * Attack (issue #26 item 7): an approved device claims any MPC peer id in its hello — a server
 * signer's included — and so hijacks relay routing (frames for that peer id reach the device's
 * socket) or impersonates another party. A real coordinator (PGlite, signing services with the
 * device hub on its real HTTP socket), devices enrolled over the real enrollment route and connected
 * over a real WebSocket speaking the device protocol.
 *
 * Must hold: a device's MPC peer id is bound at enrollment (an Ed25519 proof of possession by the
 * peer key over `deviceEnrollmentDigest`, pinned in the device record); a hello naming another id is
 * refused; no device may ever use a server signer's id (live or removed), nor another live device's;
 * and a server signer cannot be registered with a peer id a device holds.
 */

import { fingerprint, type RelayFrame } from '@custodian/signer-client';
import { signEnrollmentProof } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectPhone,
  enrollmentBody,
  enrollPhone,
  type Phone,
  type PhoneKeys,
  phoneKeys,
  userIdOf,
} from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, startHarness } from './helpers.js';

/** A server signer identity as `custodian signer init` makes one. */
async function signerIdentity() {
  const key = await generateKeyPair('Ed25519');
  return {
    peerId: peerIdFromPrivateKey(key).toString(),
    publicKey: key.publicKey.raw,
    seed: Uint8Array.from(key.raw.subarray(0, 32)),
  };
}

describe('a device MPC peer id is bound at enrollment', () => {
  let h: Harness;
  let adminId = '';
  const phones: Phone[] = [];
  let port = 7600;

  async function registerSigner(s: { peerId: string; publicKey: Uint8Array }) {
    return h.req('POST', '/admin/v1/signers', {
      token: h.adminToken,
      body: {
        name: `signer-${port}`,
        peer_id: s.peerId,
        address: `/ip4/127.0.0.1/tcp/${port++}`,
        fingerprint: fingerprint(s.publicKey),
      },
    });
  }

  function connect(deviceId: string, keys: PhoneKeys, mpcPeerId?: string): Phone {
    const p = connectPhone(h, deviceId, keys, mpcPeerId);
    phones.push(p);
    return p;
  }

  beforeAll(async () => {
    h = await startHarness({
      masterKey: false,
      coordinator: { signing: { enabled: true, presignaturePool: 0 }, transfers: { runPipeline: false } },
    });
    adminId = await userIdOf(h, ADMIN_EMAIL);
  }, 60_000);

  afterAll(async () => {
    for (const p of phones) p.ws.terminate();
    await h?.close();
  });

  it("refuses an approved device's hello claiming a server signer's peer id, and relays nothing to it", async () => {
    const signer = await signerIdentity();
    expect((await registerSigner(signer)).status).toBe(201);
    await h.c.signing!.refreshSigners();
    const keys = await phoneKeys();
    const deviceId = await enrollPhone(h, keys, 'thief', { userId: adminId });
    const phone = connect(deviceId, keys, signer.peerId);
    expect(await phone.welcomed).toBe(false);
    expect((await phone.closed).code).toBe(4401);
    // the hub routes nothing for the signer's id to the device
    expect(h.c.signing!.hub.peerIdOf(deviceId)).not.toBe(signer.peerId);
    const frame: RelayFrame = { peerId: signer.peerId, envelope: new Uint8Array([1, 2, 3]) };
    h.c.signing!.hub.fromSigner('12D3KooWSomeOtherSigner', frame);
    expect(phone.frames.some((f) => f.relay)).toBe(false);
  });

  it('refuses a hello naming another peer id than the one pinned at enrollment', async () => {
    const keys = await phoneKeys();
    const deviceId = await enrollPhone(h, keys, 'phone', { userId: adminId });
    const other = (await phoneKeys()).mpcPeerId;
    const bad = connect(deviceId, keys, other);
    expect(await bad.welcomed).toBe(false);
    expect(await bad.closed).toMatchObject({ code: 4401 });
    // its own pinned id is accepted
    const good = connect(deviceId, keys);
    expect(await good.welcomed).toBe(true);
    expect(h.c.signing!.hub.peerIdOf(deviceId)).toBe(keys.mpcPeerId);
  });

  it("refuses a hello naming another live device's peer id (impersonation of a co-signer)", async () => {
    const victim = await phoneKeys();
    const victimId = await enrollPhone(h, victim, 'victim', { userId: adminId });
    const keys = await phoneKeys();
    const deviceId = await enrollPhone(h, keys, 'attacker', { userId: adminId });
    const phone = connect(deviceId, keys, victim.mpcPeerId);
    expect(await phone.welcomed).toBe(false);
    const honest = connect(victimId, victim);
    expect(await honest.welcomed).toBe(true);
  });

  it('refuses an enrollment without a valid proof of possession of the peer key', async () => {
    const keys = await phoneKeys();
    const other = await phoneKeys();
    for (const bad of [
      { mpc_peer_proof: '00'.repeat(64) },
      // a proof made by another MPC key
      {
        mpc_peer_proof: signEnrollmentProof(p256.getPublicKey(keys.sk, true), keys.mpcPeerId, other.mpcSecretKey),
      },
      // a valid proof for another device key (copied from someone else's request)
      { mpc_peer_proof: enrollmentBody(other, 'x').mpc_peer_proof, mpc_peer_id: other.mpcPeerId },
    ]) {
      const r = await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(keys, 'phone', bad) });
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.code).toBe('VALIDATION_FAILED');
    }
    const { mpc_peer_proof: _p, mpc_peer_id: _i, ...legacy } = enrollmentBody(keys, 'phone');
    expect((await h.req('POST', '/devices/v1/enrollments', { body: legacy })).status).toBe(422);
  });

  it("refuses an enrollment naming a server signer's peer id, live or removed, even with the signer key's proof", async () => {
    const live = await signerIdentity();
    const removed = await signerIdentity();
    expect((await registerSigner(live)).status).toBe(201);
    const r = await registerSigner(removed);
    expect(r.status).toBe(201);
    expect((await h.req('DELETE', `/admin/v1/signers/${r.body.signer_id}`, { token: h.adminToken })).status).toBe(204);
    for (const s of [live, removed]) {
      const keys = { ...(await phoneKeys()), mpcPeerId: s.peerId, mpcSecretKey: s.seed };
      const e = await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(keys, 'signer twin') });
      expect(e.status, JSON.stringify(e.body)).toBe(409);
      expect(e.body.code).toBe('CONFLICT');
    }
  });

  it("refuses an enrollment naming another live device's peer id", async () => {
    const first = await phoneKeys();
    await enrollPhone(h, first, 'first', { userId: adminId, approve: false });
    const twin = { ...(await phoneKeys()), mpcPeerId: first.mpcPeerId, mpcSecretKey: first.mpcSecretKey };
    const e = await h.req('POST', '/devices/v1/enrollments', { body: enrollmentBody(twin, 'twin') });
    expect(e.status, JSON.stringify(e.body)).toBe(409);
  });

  it('refuses to register a server signer with a peer id a device holds', async () => {
    const s = await signerIdentity();
    const keys = { ...(await phoneKeys()), mpcPeerId: s.peerId, mpcSecretKey: s.seed };
    await enrollPhone(h, keys, 'phone first', { userId: adminId });
    const r = await registerSigner(s);
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect(r.body.code).toBe('CONFLICT');
  });
});

describe('devices enrolled before peer ids were bound (migration 6)', () => {
  let h: Harness;
  let adminId = '';
  const phones: Phone[] = [];

  /** An approved device whose record has no pinned peer id, as migration 6 leaves older devices. */
  async function legacyDevice(name: string): Promise<{ id: string; keys: PhoneKeys }> {
    const keys = await phoneKeys();
    const id = await enrollPhone(h, keys, name, { userId: adminId });
    await h.c.db.query('UPDATE devices SET mpc_peer_id = NULL, user_id = NULL WHERE device_id = $1', [id]);
    return { id, keys };
  }

  function connect(deviceId: string, keys: PhoneKeys, mpcPeerId?: string): Phone {
    const p = connectPhone(h, deviceId, keys, mpcPeerId);
    phones.push(p);
    return p;
  }

  beforeAll(async () => {
    h = await startHarness({
      masterKey: false,
      coordinator: { signing: { enabled: true, presignaturePool: 0 }, transfers: { runPipeline: false } },
    });
    adminId = await userIdOf(h, ADMIN_EMAIL);
  }, 60_000);

  afterAll(async () => {
    for (const p of phones) p.ws.terminate();
    await h?.close();
  });

  it('pins the peer id of the first hello (audited), then refuses any other', async () => {
    const { id, keys } = await legacyDevice('old phone');
    const first = connect(id, keys);
    expect(await first.welcomed).toBe(true);
    const row = (
      await h.c.db.query<{ mpc_peer_id: string }>('SELECT mpc_peer_id FROM devices WHERE device_id = $1', [id])
    )[0];
    expect(row?.mpc_peer_id).toBe(keys.mpcPeerId);
    const audit = await h.req('GET', '/admin/v1/audit?page_size=50', { token: h.adminToken });
    expect(
      audit.body.data.some(
        (e: { action: string; target_id: string }) => e.action === 'device.mpc_peer_pinned' && e.target_id === id,
      ),
    ).toBe(true);
    first.ws.terminate();
    const other = connect(id, keys, (await phoneKeys()).mpcPeerId);
    expect(await other.welcomed).toBe(false);
  });

  it("never pins a server signer's peer id (even a removed signer's) nor another device's", async () => {
    const s = await signerIdentity();
    const reg = await h.req('POST', '/admin/v1/signers', {
      token: h.adminToken,
      body: {
        name: 'gone',
        peer_id: s.peerId,
        address: '/ip4/127.0.0.1/tcp/7700',
        fingerprint: fingerprint(s.publicKey),
      },
    });
    expect(reg.status).toBe(201);
    expect((await h.req('DELETE', `/admin/v1/signers/${reg.body.signer_id}`, { token: h.adminToken })).status).toBe(
      204,
    );
    const a = await legacyDevice('old phone a');
    const signerClaim = connect(a.id, a.keys, s.peerId);
    expect(await signerClaim.welcomed).toBe(false);
    const victim = await phoneKeys();
    await enrollPhone(h, victim, 'victim', { userId: adminId });
    const deviceClaim = connect(a.id, a.keys, victim.mpcPeerId);
    expect(await deviceClaim.welcomed).toBe(false);
    const row = (
      await h.c.db.query<{ mpc_peer_id: string | null }>('SELECT mpc_peer_id FROM devices WHERE device_id = $1', [a.id])
    )[0];
    expect(row?.mpc_peer_id).toBeNull();
  });

  it('refuses to approve a PENDING device enrolled without a peer id (it must enrol again)', async () => {
    const keys = await phoneKeys();
    const id = await enrollPhone(h, keys, 'pending old phone', { userId: adminId, approve: false });
    await h.c.db.query('UPDATE devices SET mpc_peer_id = NULL WHERE device_id = $1', [id]);
    const d = await h.req('GET', `/admin/v1/devices/${id}`, { token: h.adminToken });
    const a = await h.req('POST', `/admin/v1/devices/${id}/approve`, {
      token: h.adminToken,
      body: { fingerprint: d.body.fingerprint, user_id: adminId },
    });
    expect(a.status).toBe(409);
  });
});
