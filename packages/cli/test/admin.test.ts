/**
 * `custodian admin …` end to end: commander program in-process, real HTTP to a real coordinator,
 * session file on disk, JSON and table output.
 */

import { join } from 'node:path';
import { blockchainId } from '@custodian/coordinator';
import { fingerprint } from '@custodian/signer-client';
import { peerIdFromString } from '@libp2p/peer-id';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollmentBody, phoneKeys, userIdOf } from '../../coordinator/test/device-fixtures.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, startHarness } from '../../coordinator/test/helpers.js';
import { runAdmin } from './admin-cli.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

function cli(...args: string[]): Promise<{ out: string; err: string; code: number }> {
  return runAdmin(h.dir, ['--coordinator-url', h.url, '--session-file', join(h.dir, 'session.json')], args);
}

describe('custodian admin CLI', () => {
  it('logs in with the code from the development mailbox and saves the session', async () => {
    const r = await cli('login', '--email', ADMIN_EMAIL, '--password', ADMIN_PASSWORD, '--mailbox', h.c.mailboxDir!);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/logged in as admin@example.com \(ADMIN\)/);
    const me = await cli('--json', 'whoami');
    expect(JSON.parse(me.out)).toMatchObject({ email: ADMIN_EMAIL, role: 'ADMIN' });
    const table = await cli('whoami');
    expect(table.out).toMatch(/^FIELD\s+VALUE/);
  });

  it('covers users, profiles, API keys, signers, devices, wallets, webhooks, master keys and audit', async () => {
    // sensitive commands need a step-up of the saved session first (#26 item 5)
    const early = await cli('api-keys', 'create', '--profile', h.profileId, '--name', 'early');
    expect(early.code).not.toBe(0);
    expect(early.err).toMatch(/403 STEP_UP_REQUIRED.*custodian admin step-up/);
    expect((await cli('step-up', '--password', ADMIN_PASSWORD)).out).toMatch(/^stepped up \(password\) until /);
    const u = await cli(
      '--json',
      'users',
      'create',
      '--email',
      'fm@example.com',
      '--name',
      'FM',
      '--role',
      'FINANCE_MANAGER',
      '--password',
      'another long password',
    );
    expect(u.code).toBe(0);
    const userId = JSON.parse(u.out).user_id;
    expect((await cli('users', 'update', userId, '--role', 'VIEWER')).out).toMatch(/VIEWER/);
    expect((await cli('users', 'list')).out).toMatch(/fm@example.com/);

    const key = await cli('api-keys', 'create', '--profile', h.profileId, '--name', 'cli');
    expect(key.out).toMatch(/cst_[A-Za-z0-9_-]{43}/);
    expect((await cli('api-keys', 'list')).out).not.toMatch(/cst_[A-Za-z0-9_-]{43}/);
    const pinned = await cli(
      '--json',
      'api-keys',
      'create',
      '--profile',
      h.profileId,
      '--name',
      'pinned',
      '--allowed-cidr',
      '10.0.0.0/8',
      '2001:DB8::/32',
    );
    expect(JSON.parse(pinned.out).allowed_cidrs).toEqual(['10.0.0.0/8', '2001:db8::/32']);

    const signerPeer = '12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN';
    const addSigner = (fp: string) =>
      cli(
        '--json',
        'signers',
        'add',
        '--name',
        's1',
        '--peer-id',
        signerPeer,
        '--address',
        '/ip4/127.0.0.1/tcp/7400',
        '--fingerprint',
        fp,
      );
    // a fingerprint that is not the peer id's key: the command refuses and registers nothing
    const wrong = await addSigner('aa:bb:cc:dd');
    expect(wrong.code).not.toBe(0);
    expect(wrong.err).toMatch(/fingerprint/);
    const s = await addSigner(fingerprint((peerIdFromString(signerPeer).publicKey as { raw: Uint8Array }).raw));
    expect(s.code).toBe(0);
    const signerList = (await cli('signers', 'list', '--page-size', '5')).out;
    expect(signerList).toMatch(/s1/);
    expect(signerList).toMatch(/REACHABLE/);
    expect(signerList).toMatch(/page 1 of 1 \(1 total\)/);
    const signerJson = JSON.parse((await cli('--json', 'signers', 'list')).out);
    expect(signerJson).toMatchObject({ page: 1, page_size: 50, total: 1 });
    expect(signerJson.data[0]).toMatchObject({ reachable: false, last_seen_at: null });

    const enr = await h.req('POST', '/devices/v1/enrollments', {
      body: enrollmentBody(await phoneKeys(), 'phone', { os_version: '13' }),
    });
    const bad = await cli('devices', 'approve', enr.body.device_id, '--fingerprint', 'FFFF', '--user', ADMIN_EMAIL);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/422 VALIDATION_FAILED/);
    const approved = await cli(
      'devices',
      'approve',
      enr.body.device_id,
      '--fingerprint',
      enr.body.fingerprint,
      '--user',
      ADMIN_EMAIL,
    );
    expect(approved.out).toMatch(/APPROVED/);
    expect(approved.out).toContain(await userIdOf(h, ADMIN_EMAIL));
    expect((await cli('devices', 'list', '--status', 'APPROVED')).out).toMatch(enr.body.device_id);
    expect((await cli('devices', 'list', '--status', 'APPROVED', '--page', '2', '--page-size', '1')).out).toMatch(
      /page 2 of 1 \(1 total\)/,
    );

    const noSigners = await cli(
      'master-keys',
      'create',
      '--threshold',
      '2',
      '--device',
      enr.body.device_id,
      '--server',
      JSON.parse(s.out).signer_id,
    );
    expect(noSigners.code).toBe(1);
    expect(noSigners.err).toMatch(/SIGNERS_UNAVAILABLE|VALIDATION_FAILED/);
    expect((await cli('master-keys', 'list')).out).toMatch(/MASTER_KEY_ID/);

    const w = await cli(
      'wallets',
      'create',
      h.profileId,
      '--blockchain',
      blockchainId('bitcoin-regtest'),
      blockchainId('ethereum-local'),
      '--name',
      'dev',
    );
    expect(w.out).toMatch(/bcrt1q/);
    expect(w.out).toMatch(/0x[0-9a-fA-F]{40}/);
    const walletId = /wallet ([0-9a-f-]{36})/.exec(w.out)![1]!;
    expect((await cli('wallets', 'list', h.profileId)).out).toMatch(walletId);
    expect((await cli('wallets', 'balances', h.profileId, walletId)).out).toMatch(/BTC/);
    expect((await cli('profiles', 'blockchains', h.profileId, '--page-size', '3')).out).toMatch(
      /page 1 of 4 \(11 total\)/,
    );
    expect((await cli('profiles', 'disable-blockchain', h.profileId, blockchainId('tron-nile'))).code).toBe(0);

    const hook = await cli(
      '--json',
      'webhooks',
      'create',
      h.profileId,
      '--url',
      'https://example.com/h',
      '--events',
      'WALLET_CREATED,TRANSFER_UPDATED',
    );
    expect(JSON.parse(hook.out).event_types).toEqual(['WALLET_CREATED', 'TRANSFER_UPDATED']);
    expect((await cli('webhooks', 'list', h.profileId)).out).toMatch(/example.com/);
    expect((await cli('webhooks', 'delete', h.profileId, JSON.parse(hook.out).webhook_id)).out).toBe('ok');
    const ihook = await cli(
      '--json',
      'instance-webhooks',
      'create',
      '--url',
      'https://example.com/security',
      '--events',
      'USER_CREATED,ROLE_SCOPE_LOGIN',
    );
    expect(JSON.parse(ihook.out)).toMatchObject({
      profile_id: null,
      event_types: ['USER_CREATED', 'ROLE_SCOPE_LOGIN'],
    });
    expect((await cli('instance-webhooks', 'list')).out).toMatch(/example.com\/security/);
    expect((await cli('instance-webhooks', 'delete', JSON.parse(ihook.out).webhook_id)).out).toBe('ok');

    const audit = await cli('audit', '--page-size', '100');
    expect(audit.out).toMatch(/webhook.deleted/);
    expect(audit.out).toMatch(/device.approved/);
    expect((await cli('--json', 'mailbox', '--dir', h.c.mailboxDir!, '--last')).out).toMatch(/login code/);
  });

  it('password: a user changes their own password; a weak new one is refused with the field named', async () => {
    const email = 'self@example.com';
    const created = await h.req('POST', '/admin/v1/users', {
      token: h.adminToken,
      body: { email, name: 'Self', role: 'VIEWER', password: 'another long password' },
    });
    expect(created.status).toBe(201);
    expect(
      (await cli('login', '--email', email, '--password', 'another long password', '--mailbox', h.c.mailboxDir!)).code,
    ).toBe(0);
    const weak = await cli('password', '--current', 'another long password', '--new', 'password1234');
    expect(weak.code).toBe(1);
    expect(weak.err).toMatch(/422 VALIDATION_FAILED/);
    expect(weak.err).toMatch(/body\.new_password/);
    expect(weak.err).not.toMatch(/password1234/);
    const ok = await cli('password', '--current', 'another long password', '--new', 'lantern meadow copper 57');
    expect(ok.code).toBe(0);
    expect(ok.out).toMatch(/password changed/);
    await expect(h.login(email, 'lantern meadow copper 57')).resolves.toMatch(/^css_/);
    // Back to the Admin's session for the tests after this one.
    expect(
      (await cli('login', '--email', ADMIN_EMAIL, '--password', ADMIN_PASSWORD, '--mailbox', h.c.mailboxDir!)).code,
    ).toBe(0);
  });

  it('logout revokes and forgets the session', async () => {
    expect((await cli('logout')).out).toBe('ok');
    const r = await cli('whoami');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/not logged in/);
  });
});
