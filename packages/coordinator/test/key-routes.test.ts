/**
 * Key lifecycle admin routes (issue #22; keys/routes.ts, keys/service.ts) on a real coordinator
 * (PGlite) with its signing services on, without signers: who may call them (attack: a Finance
 * Manager or a Viewer session starts a refresh, a key change or a drill), the checks of a key
 * change (threshold range, ≥ 2 approved devices in the new set, OLD a party, NEW not, NEW known),
 * 404 / 409, and the Admin device signature a reshare needs (attack: a non-Admin device's
 * signature, or a signature over another digest, starts nothing).
 */
import { randomUUID } from 'node:crypto';
import { fingerprint } from '@custodian/signer-client';
import { deviceSign, type KeyChangeDocument, keyChangeDigest, openControlRequest } from '@custodian/wire';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id';
import { bytesToHex } from '@noble/curves/utils.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPhone, enrollPhone, type Phone, type PhoneKeys, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, type Json, startHarness, testMasterKey } from './helpers.js';

const PASSWORD = 'another correct horse battery';

let h: Harness;
let mkId = '';
let serverA = '';
let serverB = '';
let phone1 = '';
let phone2 = '';
let phone3 = '';
let phone2Keys: PhoneKeys;
let phone3Keys: PhoneKeys;
let adminKeys: PhoneKeys;
let fmPhone = '';
let fmKeys: PhoneKeys;
let fmToken = '';
let viewerToken = '';

async function createUser(role: 'FINANCE_MANAGER' | 'VIEWER'): Promise<{ id: string; token: string }> {
  const email = `${role.toLowerCase()}-${randomUUID()}@example.com`;
  const r = await h.req('POST', '/admin/v1/users', {
    token: h.adminToken,
    body: { email, name: role.toLowerCase(), role, password: PASSWORD },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { id: r.body.user_id, token: await h.login(email, PASSWORD) };
}

async function registerServer(name: string): Promise<string> {
  const peer = peerIdFromPrivateKey(await generateKeyPair('Ed25519'));
  const r = await h.req('POST', '/admin/v1/signers', {
    token: h.adminToken,
    body: {
      name,
      peer_id: peer.toString(),
      address: '/ip4/127.0.0.1/tcp/9',
      fingerprint: fingerprint((peer.publicKey as { raw: Uint8Array }).raw),
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.signer_id;
}

beforeAll(async () => {
  h = await startHarness({
    masterKey: false,
    coordinator: { signing: { enabled: true, presignaturePool: 0 }, transfers: { runPipeline: false } },
  });
  const adminId = await userIdOf(h, ADMIN_EMAIL);
  adminKeys = await phoneKeys();
  phone1 = await enrollPhone(h, adminKeys, 'admin phone', { userId: adminId });
  phone2Keys = await phoneKeys();
  phone3Keys = await phoneKeys();
  phone2 = await enrollPhone(h, phone2Keys, 'phone 2', { userId: adminId });
  phone3 = await enrollPhone(h, phone3Keys, 'phone 3', { userId: adminId });
  serverA = await registerServer('server a');
  serverB = await registerServer('server b');
  const fm = await createUser('FINANCE_MANAGER');
  fmToken = fm.token;
  fmKeys = await phoneKeys();
  fmPhone = await enrollPhone(h, fmKeys, 'finance phone', { userId: fm.id });
  viewerToken = (await createUser('VIEWER')).token;
  const mk = await h.c.signers.masterKeys.insertMasterKey({
    ...testMasterKey(),
    threshold: 2,
    parties: [
      { kind: 'device', id: phone1, peer: 'fp1', address: null },
      { kind: 'device', id: phone2, peer: 'fp2', address: null },
      { kind: 'server', id: serverA, peer: 'p', address: '/ip4/127.0.0.1/tcp/9' },
    ],
  });
  mkId = mk.master_key_id;
}, 60_000);

afterAll(async () => {
  await h?.close();
});

const K = () => `/admin/v1/master-keys/${mkId}`;
const ceremonies = async () => (await h.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM ceremonies'))[0]?.n;

describe('attack: key lifecycle routes are Admin only', () => {
  it('a Finance Manager or a Viewer gets 403 ROLE_FORBIDDEN on every route, and nothing starts', async () => {
    const before = await ceremonies();
    const change = randomUUID();
    const routes: [string, string, Json?][] = [
      ['POST', `${K()}/refresh`, {}],
      ['POST', `${K()}/key-changes`, { reason: 'reshare', threshold: 2, signers: [] }],
      ['GET', `${K()}/key-changes`],
      ['GET', `${K()}/key-changes/${change}`],
      ['POST', `${K()}/key-changes/${change}/signature`, { device_id: phone1, signature: '0'.repeat(128) }],
      ['POST', `${K()}/drill`, {}],
    ];
    for (const token of [fmToken, viewerToken]) {
      for (const [method, path, body] of routes) {
        const r = await h.req(method, path, { token, ...(body !== undefined ? { body } : {}) });
        expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(403);
        expect(r.body.code).toBe('ROLE_FORBIDDEN');
      }
    }
    expect(await ceremonies()).toBe(before);
  });
});

describe('key change checks', () => {
  const post = (body: Json) => h.req('POST', `${K()}/key-changes`, { token: h.adminToken, body });

  it.each([
    ['t′ = 1', { reason: 'reshare', threshold: 1, signers: [] }, 'body.threshold'],
    ['t′ > n′', { reason: 'reshare', threshold: 4, signers: [] }, 'body.threshold'],
  ])('refuses %s', async (_what, body, field) => {
    const b = { ...body } as Json;
    b.signers = [
      { kind: 'device', id: phone1 },
      { kind: 'device', id: phone2 },
      { kind: 'server', id: serverB },
    ];
    const r = await post(b);
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.errors[0].field).toBe(field);
  });

  it('refuses a new set with fewer than 2 approved devices (seed §8)', async () => {
    const r = await post({
      reason: 'reshare',
      threshold: 2,
      signers: [
        { kind: 'device', id: phone1 },
        { kind: 'server', id: serverA },
        { kind: 'server', id: serverB },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.detail ?? r.body.title).toMatch(/approved devices/);
  });

  it('refuses replacing a signer that is not a party, or by one that already is, or by an unknown one', async () => {
    const a = await post({
      reason: 'replace-signer',
      old: { kind: 'server', id: serverB },
      new: { kind: 'device', id: phone3 },
    });
    expect(a.status).toBe(422);
    expect(a.body.errors[0].field).toBe('body.old');
    const b = await post({
      reason: 'replace-signer',
      old: { kind: 'server', id: serverA },
      new: { kind: 'device', id: phone2 },
    });
    expect(b.status).toBe(422);
    expect(b.body.errors[0].field).toBe('body.new');
    const c = await post({
      reason: 'replace-signer',
      old: { kind: 'server', id: serverA },
      new: { kind: 'server', id: randomUUID() },
    });
    expect(c.status).toBe(422);
    expect(c.body.errors[0].field).toBe('body.new');
    const d = await post({ reason: 'replace-signer', old: { kind: 'server', id: serverA } });
    expect(d.status).toBe(422);
    expect(d.body.errors[0].field).toBe('body.new');
  });

  it('a removed (no longer approved) device cannot join the new set', async () => {
    const gone = await enrollPhone(h, await phoneKeys(), 'gone phone', { userId: await userIdOf(h, ADMIN_EMAIL) });
    expect((await h.req('DELETE', `/admin/v1/devices/${gone}`, { token: h.adminToken })).status).toBeLessThan(300);
    const r = await post({
      reason: 'replace-signer',
      old: { kind: 'server', id: serverA },
      new: { kind: 'device', id: gone },
    });
    expect(r.status).toBe(422);
    expect(r.body.errors[0].field).toBe('body.new');
  });

  it('404 for an unknown master key or key change', async () => {
    const other = `/admin/v1/master-keys/${randomUUID()}`;
    expect((await h.req('POST', `${other}/refresh`, { token: h.adminToken, body: {} })).status).toBe(404);
    expect((await h.req('POST', `${other}/drill`, { token: h.adminToken, body: {} })).status).toBe(404);
    expect((await h.req('GET', `${other}/key-changes`, { token: h.adminToken })).status).toBe(404);
    expect((await h.req('GET', `${K()}/key-changes/${randomUUID()}`, { token: h.adminToken })).status).toBe(404);
  });

  it('409 while a key ceremony runs for the key', async () => {
    const id = randomUUID();
    await h.c.db.query(
      `INSERT INTO ceremonies (ceremony_id, kind, status, threshold, parties, progress, started_at, deadline, master_key_id)
       VALUES ($1, 'refresh', 'RUNNING', 2, '[]'::jsonb, '{}'::jsonb, now(), now() + interval '5 minutes', $2)`,
      [id, mkId],
    );
    try {
      for (const [path, body] of [
        [`${K()}/refresh`, {}],
        [`${K()}/drill`, {}],
        [
          `${K()}/key-changes`,
          { reason: 'replace-signer', old: { kind: 'server', id: serverA }, new: { kind: 'server', id: serverB } },
        ],
      ] as const) {
        const r = await h.req('POST', path, { token: h.adminToken, body });
        expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(409);
        expect(r.body.code).toBe('CONFLICT');
      }
    } finally {
      await h.c.db.query(`UPDATE ceremonies SET status = 'FAILED' WHERE ceremony_id = $1`, [id]);
    }
  });
});

describe('attack: starting a key operation needs a fresh step-up', () => {
  it('an Admin session without step-up gets 403 STEP_UP_REQUIRED on refresh, key-changes, signature and drill; nothing starts', async () => {
    const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
    const changes = async () => (await h.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM key_changes'))[0]?.n;
    const before = [await ceremonies(), await changes()];
    const change = randomUUID();
    const routes: [string, Json][] = [
      [`${K()}/refresh`, {}],
      [
        `${K()}/key-changes`,
        { reason: 'replace-signer', old: { kind: 'server', id: serverA }, new: { kind: 'server', id: serverB } },
      ],
      [`${K()}/key-changes/${change}/signature`, { device_id: phone1, signature: '0'.repeat(128) }],
      [`${K()}/drill`, {}],
    ];
    for (const [path, body] of routes) {
      const r = await h.req('POST', path, { token, body });
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(403);
      expect(r.body.code).toBe('STEP_UP_REQUIRED');
    }
    expect([await ceremonies(), await changes()]).toEqual(before);
    // the same session stepped up reaches the service (here: the change names an unknown key → 404)
    const up = await h.stepUp(token, ADMIN_PASSWORD);
    const r = await h.req('POST', `/admin/v1/master-keys/${randomUUID()}/drill`, { token: up, body: {} });
    expect(r.status, JSON.stringify(r.body)).toBe(404);
  });
});

describe('attack: the reshare needs an Admin device signature over the change digest', () => {
  /** A key change AWAITING_SIGNATURE as the service records it (its document names a server set). */
  async function awaitingChange(
    parties: { kind: 'server' | 'device'; id: string; peer: string; address: string | null }[] = [],
  ): Promise<{ id: string; document: KeyChangeDocument }> {
    const id = randomUUID();
    const document: KeyChangeDocument = {
      kind: 'custodian.key-change',
      change_id: id,
      key_id: mkId.replaceAll('-', ''),
      public_keys: [],
      new_parties: ['a', 'b', 'c'],
      new_threshold: 2,
      approver_devices: [],
      base: { epoch: 0, parties: ['a', 'b', 'd'], threshold: 2 },
      expires_at: new Date(Date.now() + 3600_000).toISOString(),
      reason: 'replace-signer',
      created_at: new Date().toISOString(),
    };
    await h.c.db.tx((q) =>
      h.c.keys.store.insertChange(q, {
        id,
        masterKeyId: mkId,
        reason: 'replace-signer',
        document: JSON.stringify(document),
        digest: bytesToHex(keyChangeDigest(document)),
        threshold: 2,
        parties,
        actor: null as unknown as string,
        now: new Date(),
      }),
    );
    return { id, document };
  }
  const sign = (change: { id: string }, deviceId: string, signature: string) =>
    h.req('POST', `${K()}/key-changes/${change.id}/signature`, {
      token: h.adminToken,
      body: { device_id: deviceId, signature },
    });

  it("refuses a Finance Manager's approved device, and starts no ceremony", async () => {
    const change = await awaitingChange();
    const before = await ceremonies();
    const r = await sign(change, fmPhone, bytesToHex(deviceSign(keyChangeDigest(change.document), fmKeys.sk)));
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.errors[0].field).toBe('body.device_id');
    expect(await ceremonies()).toBe(before);
    const v = await h.req('GET', `${K()}/key-changes/${change.id}`, { token: h.adminToken });
    expect(v.body.status).toBe('AWAITING_SIGNATURE');
  });

  it('refuses to start a change whose new set lost a device since it was prepared (409)', async () => {
    const gone = await enrollPhone(h, await phoneKeys(), 'soon gone', { userId: await userIdOf(h, ADMIN_EMAIL) });
    const change = await awaitingChange([{ kind: 'device', id: gone, peer: 'fp', address: null }]);
    expect((await h.req('DELETE', `/admin/v1/devices/${gone}`, { token: h.adminToken })).status).toBe(200);
    const before = await ceremonies();
    const r = await sign(change, phone1, bytesToHex(deviceSign(keyChangeDigest(change.document), adminKeys.sk)));
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect(await ceremonies()).toBe(before);
  });

  it("refuses the Admin device's signature over another digest, and starts no ceremony", async () => {
    const change = await awaitingChange();
    const other = { ...change.document, new_threshold: 3 };
    const before = await ceremonies();
    const r = await sign(change, phone1, bytesToHex(deviceSign(keyChangeDigest(other), adminKeys.sk)));
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.errors[0].field).toBe('body.signature');
    expect(await ceremonies()).toBe(before);
    expect(
      (await h.req('GET', `${K()}/key-changes`, { token: h.adminToken })).body.data.map((c: Json) => c.change_id),
    ).toContain(change.id);
  });
});

describe('a removed device is revoked at the phones too', () => {
  /** Device ids in the RevokeApprover control requests a phone received. */
  const revokedAt = (p: Phone) => {
    const key = peerIdFromString(h.c.signing?.peerId as string).publicKey?.raw as Uint8Array;
    return p.frames.flatMap((f) => {
      if (!f.invitation) return [];
      const o = openControlRequest(f.invitation.signedControl, key);
      return o.ok && o.value.revokeApprover ? [o.value.revokeApprover.deviceId] : [];
    });
  };
  const until = async (cond: () => boolean, ms = 5000) => {
    const end = Date.now() + ms;
    while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    return cond();
  };

  it('a connected phone gets RevokeApprover at the removal, a phone connecting later at its hello', async () => {
    const early = connectPhone(h, phone2, phone2Keys);
    try {
      expect(await early.welcomed).toBe(true);
      const lost = await enrollPhone(h, await phoneKeys(), 'lost phone', { userId: await userIdOf(h, ADMIN_EMAIL) });
      expect((await h.req('DELETE', `/admin/v1/devices/${lost}`, { token: h.adminToken })).status).toBe(200);
      expect(await until(() => revokedAt(early).includes(lost))).toBe(true);
      const late = connectPhone(h, phone3, phone3Keys);
      try {
        expect(await late.welcomed).toBe(true);
        expect(await until(() => revokedAt(late).includes(lost))).toBe(true);
      } finally {
        late.ws.terminate();
      }
    } finally {
      early.ws.terminate();
    }
  });
});
