/**
 * The admin API (seed §1 dashboard functions) over real HTTP: instance init, login with password
 * + email code or TOTP, sessions, roles (Admin / Finance Manager / Viewer), users, API keys,
 * server signers, device enrollment with fingerprint check, master key ceremonies, webhook
 * registrations, and the audit log.
 */

import { randomUUID } from 'node:crypto';
import { fingerprint } from '@custodian/signer-client';
import { peerIdFromString } from '@libp2p/peer-id';
import * as OTPAuth from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ADMIN_OPTIONS } from '../src/admin/options.js';
import { AuditLog } from '../src/audit/service.js';
import { CeremonyAbortedError, type CeremonyClient, type DkgRequest } from '../src/ceremony.js';
import { blockchainId } from '../src/directory.js';
import { SignerService } from '../src/signers/service.js';
import { WebhookRegistrations } from '../src/webhooks/registrations.js';
import { enrollmentBody, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, type Json, startHarness, testMasterKey } from './helpers.js';

let h: Harness;
const PW = 'a long enough password';

beforeAll(async () => {
  h = await startHarness({ masterKey: false });
});
afterAll(async () => {
  await h?.close();
});

async function makeUser(role: string) {
  const email = `${role.toLowerCase()}-${randomUUID().slice(0, 8)}@example.com`;
  const r = await h.req('POST', '/admin/v1/users', {
    token: h.adminToken,
    body: { email, name: role, role, password: PW },
  });
  expect(r.status).toBe(201);
  // stepped up (password), so the user's own sensitive actions (TOTP enrollment) are allowed
  return { ...r.body, email, token: await h.stepUp(await h.login(email, PW), PW) };
}

function expectProblem(r: { status: number; body: Json }, status: number, code: string) {
  expect(r.status).toBe(status);
  expect(r.body).toMatchObject({ status, code });
}

describe('instance and login', () => {
  it('initialises once: the first account is an Admin', async () => {
    const me = await h.req('GET', '/admin/v1/me', { token: h.adminToken });
    expect(me.body).toMatchObject({ email: ADMIN_EMAIL, role: 'ADMIN', totp_enabled: false });
    expect(me.body.password_hash).toBeUndefined();
    const again = await h.req('POST', '/admin/v1/init', { body: { email: 'x@example.com', name: 'x', password: PW } });
    expectProblem(again, 409, 'ALREADY_INITIALISED');
  });

  it('rejects wrong passwords and unknown users alike, wrong / expired / exhausted codes', async () => {
    expectProblem(
      await h.req('POST', '/admin/v1/login', { body: { email: ADMIN_EMAIL, password: 'wrong password!' } }),
      401,
      'INVALID_CREDENTIALS',
    );
    expectProblem(
      await h.req('POST', '/admin/v1/login', { body: { email: 'nobody@example.com', password: PW } }),
      401,
      'INVALID_CREDENTIALS',
    );
    const l = await h.req('POST', '/admin/v1/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
    expect(l.body.method).toBe('email');
    for (let i = 0; i < 5; i++) {
      const v = await h.req('POST', '/admin/v1/login/verify', {
        body: { challenge_id: l.body.challenge_id, code: '000000' },
      });
      expectProblem(v, 401, 'INVALID_SECOND_FACTOR');
    }
    // Locked after 5 wrong codes, even with the right one.
    const { readMailbox } = await import('../src/mailer.js');
    const mails = await readMailbox(h.c.mailboxDir!);
    const code = /code is (\d{6})/.exec(mails.at(-1)!.text)![1]!;
    expectProblem(
      await h.req('POST', '/admin/v1/login/verify', { body: { challenge_id: l.body.challenge_id, code } }),
      401,
      'INVALID_SECOND_FACTOR',
    );
    // Expired challenge.
    const l2 = await h.req('POST', '/admin/v1/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
    const code2 = /code is (\d{6})/.exec((await readMailbox(h.c.mailboxDir!)).at(-1)!.text)![1]!;
    h.clockOffset.ms += 11 * 60_000;
    try {
      expectProblem(
        await h.req('POST', '/admin/v1/login/verify', { body: { challenge_id: l2.body.challenge_id, code: code2 } }),
        401,
        'INVALID_SECOND_FACTOR',
      );
    } finally {
      h.clockOffset.ms -= 11 * 60_000;
    }
  });

  it('sessions expire and can be revoked by logout', async () => {
    const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
    expect((await h.req('GET', '/admin/v1/me', { token })).status).toBe(200);
    h.clockOffset.ms += 8 * 3600_000 + 1000;
    try {
      expectProblem(await h.req('GET', '/admin/v1/me', { token }), 401, 'SESSION_REQUIRED');
    } finally {
      h.clockOffset.ms -= 8 * 3600_000 + 1000;
    }
    expect((await h.req('POST', '/admin/v1/logout', { token })).status).toBe(204);
    expectProblem(await h.req('GET', '/admin/v1/me', { token }), 401, 'SESSION_REQUIRED');
    expectProblem(await h.req('GET', '/admin/v1/me'), 401, 'SESSION_REQUIRED');
    expectProblem(await h.req('GET', '/admin/v1/me', { token: 'nope' }), 401, 'SESSION_REQUIRED');
  });

  it('TOTP (RFC 6238): enroll, confirm, log in with it, disable; each code is accepted once', async () => {
    const u = await makeUser('VIEWER');
    const e = await h.req('POST', '/admin/v1/me/totp', { token: u.token });
    expect(e.body.otpauth_uri).toMatch(/^otpauth:\/\/totp\//);
    const totp = new OTPAuth.TOTP({
      secret: OTPAuth.Secret.fromBase32(e.body.secret),
      digits: 6,
      period: 30,
      algorithm: 'SHA1',
    });
    // Put the coordinator's clock 3 s into a step T; the ±1 window accepts steps T-1..T+1.
    const shift = (30_000 - ((Date.now() + h.clockOffset.ms) % 30_000) + 3_000) % 30_000;
    h.clockOffset.ms += shift;
    try {
      const T = Math.floor((Date.now() + h.clockOffset.ms) / 30_000);
      const codeAt = (step: number) => totp.generate({ timestamp: step * 30_000 });
      expectProblem(
        await h.req('POST', '/admin/v1/me/totp/confirm', {
          token: u.token,
          body: { code: '123456' === codeAt(T - 1) ? '654321' : '123456' },
        }),
        401,
        'INVALID_SECOND_FACTOR',
      );
      const c = await h.req('POST', '/admin/v1/me/totp/confirm', { token: u.token, body: { code: codeAt(T - 1) } });
      expect(c.body.totp_enabled).toBe(true);
      const l = await h.req('POST', '/admin/v1/login', { body: { email: u.email, password: PW } });
      expect(l.body.method).toBe('totp');
      const v = await h.req('POST', '/admin/v1/login/verify', {
        body: { challenge_id: l.body.challenge_id, code: codeAt(T) },
      });
      expect(v.status).toBe(200);
      // Codes are single-use (RFC 6238 §5.2): the login code cannot disable the factor.
      expectProblem(
        await h.req('POST', '/admin/v1/me/totp/disable', { token: v.body.token, body: { code: codeAt(T) } }),
        401,
        'INVALID_SECOND_FACTOR',
      );
      const d = await h.req('POST', '/admin/v1/me/totp/disable', {
        token: v.body.token,
        body: { code: codeAt(T + 1) },
      });
      expect(d.body.totp_enabled).toBe(false);
    } finally {
      h.clockOffset.ms -= shift;
    }
  });
});

describe('roles (seed §1 table)', () => {
  it('Viewer and Finance Manager get 403 on every Admin route, and may read wallets and profiles', async () => {
    const viewer = await makeUser('VIEWER');
    const fm = await makeUser('FINANCE_MANAGER');
    const adminOnly: [string, string, unknown?][] = [
      ['GET', '/admin/v1/users'],
      ['POST', '/admin/v1/users', { email: 'z@example.com', name: 'z', role: 'ADMIN', password: PW }],
      ['PATCH', `/admin/v1/users/${fm.user_id}`, { role: 'ADMIN' }],
      ['DELETE', `/admin/v1/users/${fm.user_id}`],
      ['GET', '/admin/v1/api-keys'],
      ['POST', '/admin/v1/api-keys', { profile_id: h.profileId, name: 'x' }],
      ['DELETE', `/admin/v1/api-keys/${randomUUID()}`],
      ['GET', '/admin/v1/signers'],
      ['POST', '/admin/v1/signers', {}],
      ['GET', '/admin/v1/devices'],
      ['POST', `/admin/v1/devices/${randomUUID()}/approve`, { fingerprint: 'x' }],
      ['POST', '/admin/v1/master-keys', { threshold: 2, signers: [] }],
      ['POST', '/admin/v1/profiles', { name: 'p' }],
      ['PUT', `/admin/v1/profiles/${h.profileId}/blockchains/${blockchainId('bitcoin-mainnet')}`, { enabled: false }],
      ['POST', `/admin/v1/profiles/${h.profileId}/wallets`, { blockchain_ids: [blockchainId('bitcoin-mainnet')] }],
      ['GET', `/admin/v1/profiles/${h.profileId}/webhooks`],
      [
        'POST',
        `/admin/v1/profiles/${h.profileId}/webhooks`,
        { url: 'https://example.com', event_types: ['WALLET_CREATED'] },
      ],
      ['GET', '/admin/v1/audit'],
    ];
    for (const u of [viewer, fm]) {
      for (const [m, p, body] of adminOnly) {
        const r = await h.req(m, p, { token: u.token, ...(body !== undefined ? { body } : {}) });
        expect(r.status, `${u.role} ${m} ${p}`).toBe(403);
        expect(r.body.code).toBe('ROLE_FORBIDDEN');
      }
      for (const p of [
        '/admin/v1/profiles',
        `/admin/v1/profiles/${h.profileId}/wallets`,
        '/admin/v1/master-keys',
        '/admin/v1/me',
      ]) {
        expect((await h.req('GET', p, { token: u.token })).status, `${u.role} GET ${p}`).toBe(200);
      }
    }
  });
});

describe('users', () => {
  it('creates, updates roles, blocks, deletes; keeps one Admin', async () => {
    const u = await makeUser('VIEWER');
    expect((await h.req('GET', `/admin/v1/users/${u.user_id}`, { token: h.adminToken })).body.role).toBe('VIEWER');
    const up = await h.req('PATCH', `/admin/v1/users/${u.user_id}`, {
      token: h.adminToken,
      body: { role: 'FINANCE_MANAGER' },
    });
    expect(up.body.role).toBe('FINANCE_MANAGER');
    const dup = await h.req('POST', '/admin/v1/users', {
      token: h.adminToken,
      body: { email: u.email.toUpperCase(), name: 'd', role: 'VIEWER', password: PW },
    });
    expectProblem(dup, 409, 'CONFLICT');
    const short = await h.req('POST', '/admin/v1/users', {
      token: h.adminToken,
      body: { email: 'a@example.com', name: 'd', role: 'VIEWER', password: 'short' },
    });
    expectProblem(short, 422, 'VALIDATION_FAILED');
    expect(short.body.errors[0].field).toBe('body.password');
    const blocked = await h.req('PATCH', `/admin/v1/users/${u.user_id}`, {
      token: h.adminToken,
      body: { blocked: true },
    });
    expect(blocked.body.blocked).toBe(true);
    expectProblem(await h.req('GET', '/admin/v1/me', { token: u.token }), 401, 'SESSION_REQUIRED');
    expectProblem(
      await h.req('POST', '/admin/v1/login', { body: { email: u.email, password: PW } }),
      401,
      'INVALID_CREDENTIALS',
    );
    expect((await h.req('DELETE', `/admin/v1/users/${u.user_id}`, { token: h.adminToken })).status).toBe(204);
    expectProblem(
      await h.req('GET', `/admin/v1/users/${u.user_id}`, { token: h.adminToken }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    const me = (await h.req('GET', '/admin/v1/me', { token: h.adminToken })).body;
    expectProblem(
      await h.req('PATCH', `/admin/v1/users/${me.user_id}`, { token: h.adminToken, body: { role: 'VIEWER' } }),
      409,
      'CONFLICT',
    );
    expectProblem(await h.req('DELETE', `/admin/v1/users/${me.user_id}`, { token: h.adminToken }), 409, 'CONFLICT');
    const list = await h.req('GET', '/admin/v1/users?page_size=200', { token: h.adminToken });
    expect(list.body.data.every((x: Json) => x.password_hash === undefined)).toBe(true);
  });
});

describe('API keys', () => {
  it('are named, shown once, never listed with the secret, revocable', async () => {
    const k = await h.req('POST', '/admin/v1/api-keys', {
      token: h.adminToken,
      body: { profile_id: h.profileId, name: 'ops' },
    });
    expect(k.body.api_key).toMatch(/^cst_[A-Za-z0-9_-]{43}$/);
    const list = await h.req('GET', `/admin/v1/api-keys?profile_id=${h.profileId}`, { token: h.adminToken });
    expect(JSON.stringify(list.body)).not.toContain(k.body.api_key);
    expect(list.body.data.find((x: Json) => x.api_key_id === k.body.api_key_id)).toMatchObject({
      name: 'ops',
      revoked_at: null,
      last_used_at: null,
    });
    await h.req('GET', `/api/v1/profiles/${h.profileId}/assets`, { key: k.body.api_key });
    const lastUsed = async () =>
      (await h.req('GET', '/admin/v1/api-keys?page_size=200', { token: h.adminToken })).body.data.find(
        (x: Json) => x.api_key_id === k.body.api_key_id,
      ).last_used_at;
    await expect.poll(lastUsed).toEqual(expect.any(String));
    const stored = await h.c.db.query<{ key_hash: string }>('SELECT key_hash FROM api_keys WHERE api_key_id = $1', [
      k.body.api_key_id,
    ]);
    expect(stored[0]!.key_hash).not.toContain(k.body.api_key);
    expect((await h.req('DELETE', `/admin/v1/api-keys/${k.body.api_key_id}`, { token: h.adminToken })).status).toBe(
      204,
    );
    expectProblem(
      await h.req('DELETE', `/admin/v1/api-keys/${randomUUID()}`, { token: h.adminToken }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expectProblem(
      await h.req('POST', '/admin/v1/api-keys', { token: h.adminToken, body: { profile_id: randomUUID(), name: 'x' } }),
      404,
      'RESOURCE_NOT_FOUND',
    );
  });
});

const PEER = '12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN';

describe('signers, devices, master key', () => {
  let serverId = '';
  const devices: string[] = [];

  it('registers server signers (peer id, address, fingerprint)', async () => {
    const body = {
      name: 'signer-1',
      peer_id: PEER,
      address: '/ip4/127.0.0.1/tcp/7400',
      fingerprint: fingerprint((peerIdFromString(PEER).publicKey as { raw: Uint8Array }).raw),
    };
    const r = await h.req('POST', '/admin/v1/signers', { token: h.adminToken, body });
    expect(r.status).toBe(201);
    serverId = r.body.signer_id;
    expectProblem(await h.req('POST', '/admin/v1/signers', { token: h.adminToken, body }), 409, 'CONFLICT');
    expectProblem(
      await h.req('POST', '/admin/v1/signers', { token: h.adminToken, body: { ...body, peer_id: 'bad id!' } }),
      422,
      'VALIDATION_FAILED',
    );
    const signers = (await h.req('GET', '/admin/v1/signers?page_size=1', { token: h.adminToken })).body;
    expect(signers).toMatchObject({ page: 1, page_size: 1, total: 1 });
    // no signing services in this harness: no link kept, never seen
    expect(signers.data[0]).toMatchObject({ reachable: false, last_seen_at: null });
  });

  it('enrolls devices: requirements checked, approval needs the right fingerprint', async () => {
    const base = { platform: 'ios', os_version: '15.5', hardware_backed_keystore: true };
    const adminId = await userIdOf(h, ADMIN_EMAIL);
    for (const [bad, field] of [
      [{ os_version: '15.4' }, 'body.os_version'],
      [{ platform: 'android', os_version: '9' }, 'body.os_version'],
      [{ hardware_backed_keystore: false }, 'body.hardware_backed_keystore'],
      [{ public_key: `04${'00'.repeat(64)}` }, 'body.public_key'],
      [{ mpc_peer_id: 'QmNotAnEd25519PeerIdButLongEnoughToMatchThePattern' }, 'body.mpc_peer_id'],
    ] as const) {
      const r = await h.req('POST', '/devices/v1/enrollments', {
        body: enrollmentBody(await phoneKeys(), 'phone', { ...base, ...bad }),
      });
      expectProblem(r, 422, 'VALIDATION_FAILED');
      expect(r.body.errors[0].field).toBe(field);
    }
    for (const platform of [
      { platform: 'ios', os_version: '17.2' },
      { platform: 'android', os_version: '10' },
      { platform: 'android', os_version: '14' },
    ]) {
      const keys = await phoneKeys();
      const body = enrollmentBody(keys, 'phone', { ...base, ...platform });
      const r = await h.req('POST', '/devices/v1/enrollments', { body });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({
        status: 'PENDING',
        fingerprint: expect.stringMatching(/^([0-9A-F]{4} ){15}[0-9A-F]{4}$/),
        mpc_peer_id: keys.mpcPeerId,
      });
      expectProblem(await h.req('POST', '/devices/v1/enrollments', { body }), 409, 'CONFLICT');
      const wrong = await h.req('POST', `/admin/v1/devices/${r.body.device_id}/approve`, {
        token: h.adminToken,
        body: { fingerprint: '0000', user_id: adminId },
      });
      expectProblem(wrong, 422, 'VALIDATION_FAILED');
      const fp = r.body.fingerprint.replaceAll(' ', '').toLowerCase();
      // the device is bound to a user at approval: required, existing
      for (const user of [{}, { user_id: randomUUID() }]) {
        const noUser = await h.req('POST', `/admin/v1/devices/${r.body.device_id}/approve`, {
          token: h.adminToken,
          body: { fingerprint: fp, ...user },
        });
        expectProblem(noUser, 422, 'VALIDATION_FAILED');
      }
      const ok = await h.req('POST', `/admin/v1/devices/${r.body.device_id}/approve`, {
        token: h.adminToken,
        body: { fingerprint: fp, user_id: adminId },
      });
      expect(ok.body).toMatchObject({ status: 'APPROVED', user_id: adminId });
      const shown = await h.req('GET', `/admin/v1/devices/${r.body.device_id}`, { token: h.adminToken });
      expect(shown.body).toMatchObject({ user_id: adminId, mpc_peer_id: keys.mpcPeerId });
      expectProblem(
        await h.req('POST', `/admin/v1/devices/${r.body.device_id}/reject`, { token: h.adminToken }),
        409,
        'CONFLICT',
      );
      expect((await h.req('GET', `/devices/v1/enrollments/${r.body.device_id}`)).body.status).toBe('APPROVED');
      devices.push(r.body.device_id);
    }
    const removed = await h.req('DELETE', `/admin/v1/devices/${devices.pop()}`, { token: h.adminToken });
    expect(removed.body.status).toBe('REMOVED');
    const approved = (await h.req('GET', '/admin/v1/devices?status=APPROVED', { token: h.adminToken })).body;
    expect(approved.data).toHaveLength(2);
    expect(approved.total).toBe(2);
    // pages: LIMIT/OFFSET in a stable order, total counts the filter
    const p2 = (await h.req('GET', '/admin/v1/devices?status=APPROVED&page=2&page_size=1', { token: h.adminToken }))
      .body;
    expect(p2).toMatchObject({ page: 2, page_size: 1, total: 2 });
    expect(p2.data.map((d: { device_id: string }) => d.device_id)).toEqual([approved.data[1].device_id]);
    expect((await h.req('GET', '/admin/v1/devices?page_size=201', { token: h.adminToken })).status).toBe(422);
  });

  it('wallet creation before the master key exists is 409 NO_MASTER_KEY; the ceremony without a signer channel is 503', async () => {
    const k = await h.req('POST', '/admin/v1/api-keys', {
      token: h.adminToken,
      body: { profile_id: h.profileId, name: 'w' },
    });
    const w = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
      key: k.body.api_key,
      headers: { 'idempotency-key': randomUUID() },
      body: { blockchain_ids: [blockchainId('ethereum-mainnet')] },
    });
    expectProblem(w, 409, 'NO_MASTER_KEY');
    const signers = [{ kind: 'server', id: serverId }, ...devices.map((id) => ({ kind: 'device', id }))];
    const r = await h.req('POST', '/admin/v1/master-keys', { token: h.adminToken, body: { threshold: 2, signers } });
    expectProblem(r, 503, 'SIGNERS_UNAVAILABLE');
  });

  it('runs the ceremony through a CeremonyClient: validation, failure with blame, timeout, success, one key only', async () => {
    // A signer channel double that drives the coordinator's ceremony state machine.
    let behaviour: 'fail' | 'hang' | 'ok' = 'fail';
    const seen: DkgRequest[] = [];
    const client: CeremonyClient = {
      async runDkg(req) {
        seen.push(req);
        req.onProgress({ phase: 'KEYGEN', parties_ready: 1, parties_total: req.parties.length });
        if (behaviour === 'fail') throw new CeremonyAbortedError('bad proof', [req.parties[1]!.id]);
        if (behaviour === 'hang') {
          await new Promise((_, reject) => req.signal.addEventListener('abort', () => reject(req.signal.reason)));
        }
        const mk = testMasterKey();
        return { secp256k1: mk.secp256k1, ed25519: mk.ed25519, transcriptHash: 'ab'.repeat(32) };
      },
    };
    const clock = () => new Date();
    const svc = new SignerService({
      db: h.c.db,
      clock,
      audit: new AuditLog({ db: h.c.db, clock }),
      ceremonyClient: client,
      options: { ...DEFAULT_ADMIN_OPTIONS, dkgTimeoutMs: 300 },
    }).ceremonies;
    const me = (await h.req('GET', '/admin/v1/me', { token: h.adminToken })).body.user_id;
    const signers = [
      { kind: 'server' as const, id: serverId },
      ...devices.map((id) => ({ kind: 'device' as const, id })),
    ];
    await expect(svc.startDkg(me, { threshold: 4, signers })).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    await expect(svc.startDkg(me, { threshold: 2, signers: signers.slice(0, 2) })).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });
    await expect(svc.startDkg(me, { threshold: 2, signers: [...signers, signers[0]!] })).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });

    const wait = async (id: string) => {
      for (;;) {
        const c = (await h.req('GET', `/admin/v1/ceremonies/${id}`, { token: h.adminToken })).body;
        if (c.status !== 'RUNNING') return c;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const failed = await svc.startDkg(me, { threshold: 2, signers });
    expect(failed.status).toBe('RUNNING');
    const f = await wait(failed.ceremony_id as string);
    expect(f).toMatchObject({ status: 'FAILED', blamed: [devices[0]], master_key_id: null });

    behaviour = 'hang';
    const hung = await svc.startDkg(me, { threshold: 2, signers });
    expect(await wait(hung.ceremony_id as string)).toMatchObject({ status: 'TIMED_OUT' });
    expect(seen.at(-1)!.signal.aborted).toBe(true);

    behaviour = 'ok';
    const ok = await svc.startDkg(me, { threshold: 2, signers });
    const done = await wait(ok.ceremony_id as string);
    expect(done).toMatchObject({ status: 'SUCCEEDED', transcript_hash: 'ab'.repeat(32) });
    expect(seen.at(-1)!.parties.map((p) => p.kind)).toEqual(['server', 'device', 'device']);
    expect(seen.at(-1)!.deadline.getTime() - Date.now()).toBeLessThanOrEqual(300);
    const page = (await h.req('GET', '/admin/v1/master-keys', { token: h.adminToken })).body;
    expect(page).toMatchObject({ page: 1, page_size: 50, total: 1 });
    const keys = page.data;
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ master_key_id: done.master_key_id, threshold: 2 });
    expect(keys[0].secp256k1_public_key).toMatch(/^0[23][0-9a-f]{64}$/);
    await expect(svc.startDkg(me, { threshold: 2, signers })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(DEFAULT_ADMIN_OPTIONS.dkgTimeoutMs).toBe(5 * 60_000);

    // The key is usable at once: dashboard wallet creation derives addresses.
    const w = await h.req('POST', `/admin/v1/profiles/${h.profileId}/wallets`, {
      token: h.adminToken,
      body: { name: 'ops', blockchain_ids: [blockchainId('bitcoin-mainnet')] },
    });
    expect(w.status).toBe(201);
    const got = await h.req('GET', `/admin/v1/profiles/${h.profileId}/wallets/${w.body.wallet_id}`, {
      token: h.adminToken,
    });
    expect(got.body.addresses[0].address).toMatch(/^bc1q/);
  });
});

describe('webhooks and audit', () => {
  it('registers HTTPS webhooks (http only to loopback in development), updates and deletes them', async () => {
    const path = `/admin/v1/profiles/${h.profileId}/webhooks`;
    const ok = await h.req('POST', path, {
      token: h.adminToken,
      body: {
        url: 'https://hooks.example.com/custodian',
        event_types: ['TRANSFER_UPDATED', 'WALLET_CREATED'],
        description: 'ops',
      },
    });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ event_types: ['TRANSFER_UPDATED', 'WALLET_CREATED'], description: 'ops' });
    expect(
      (
        await h.req('POST', path, {
          token: h.adminToken,
          body: { url: 'http://127.0.0.1:9000/h', event_types: ['WALLET_CREATED'] },
        })
      ).status,
    ).toBe(201);
    for (const body of [
      { url: 'http://example.com/h', event_types: ['WALLET_CREATED'] },
      { url: 'ftp://example.com/h', event_types: ['WALLET_CREATED'] },
      { url: 'not a url', event_types: ['WALLET_CREATED'] },
      { url: 'https://example.com', event_types: ['NOPE'] },
      { url: 'https://example.com', event_types: [] },
    ]) {
      expectProblem(await h.req('POST', path, { token: h.adminToken, body }), 422, 'VALIDATION_FAILED');
    }
    const prod = new WebhookRegistrations({
      db: h.c.db,
      clock: () => new Date(),
      audit: h.c.audit,
      notifications: h.c.webhooks.service,
      signingKeys: h.c.webhooks.keys,
      profiles: h.c.wallets.profiles,
      options: { mode: 'production' },
    });
    expect(() => prod.checkWebhookUrl('http://127.0.0.1:9000/h')).toThrow(/HTTPS/);
    const id = ok.body.webhook_id;
    const up = await h.req('PATCH', `${path}/${id}`, {
      token: h.adminToken,
      body: { event_types: ['BALANCE_UPDATED'], description: null },
    });
    expect(up.body).toMatchObject({
      event_types: ['BALANCE_UPDATED'],
      description: null,
      url: 'https://hooks.example.com/custodian',
    });
    expect((await h.req('GET', path, { token: h.adminToken })).body.data).toHaveLength(2);
    expect((await h.req('DELETE', `${path}/${id}`, { token: h.adminToken })).status).toBe(204);
    expectProblem(await h.req('GET', `${path}/${id}`, { token: h.adminToken }), 404, 'RESOURCE_NOT_FOUND');
  });

  it('records admin actions in an append-only audit log', async () => {
    const r = await h.req('GET', '/admin/v1/audit?page_size=200', { token: h.adminToken });
    const actions = new Set(r.body.data.map((e: Json) => e.action));
    for (const a of [
      'instance.init',
      'login.succeeded',
      'login.failed',
      'user.created',
      'user.role_updated',
      'user.blocked',
      'user.deleted',
      'api_key.created',
      'api_key.revoked',
      'server_signer.added',
      'device.approved',
      'device.removed',
      'master_key.ceremony_failed',
      'master_key.ceremony_timed_out',
      'master_key.created',
      'webhook.created',
      'webhook.deleted',
      'wallet.created',
    ]) {
      expect(actions.has(a), a).toBe(true);
    }
    expect(JSON.stringify(r.body)).not.toContain(PW);
    await expect(h.c.db.query('UPDATE audit_log SET action = $1', ['x'])).rejects.toThrow(/append-only/);
    await expect(h.c.db.query('DELETE FROM audit_log')).rejects.toThrow(/append-only/);
  });
});
