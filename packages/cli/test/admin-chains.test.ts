/**
 * `custodian admin chains …` (issue #29: enabling a chain in production without reading ids from
 * the database): a real coordinator in production mode, where development networks such as
 * `ethereum-local` are off by default; the commander program in-process over real HTTP.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, startHarness } from '../../coordinator/test/helpers.js';
import { runAdmin } from './admin-cli.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ coordinator: { mode: 'production', mail: { transport: 'file' } } });
});
afterAll(async () => {
  await h?.close();
});

function cli(...args: string[]): Promise<{ out: string; err: string; code: number }> {
  return runAdmin(h.dir, ['--coordinator-url', h.url, '--session-file', join(h.dir, 'session.json')], args);
}

const restKeys = async () =>
  (
    (await h.req('GET', `/api/v1/profiles/${h.profileId}/blockchains?page_size=200`, { key: h.apiKey })).body.data as {
      key: string;
    }[]
  ).map((b) => b.key);

describe('custodian admin chains', () => {
  beforeAll(async () => {
    const r = await cli('login', '--email', ADMIN_EMAIL, '--password', ADMIN_PASSWORD, '--mailbox', h.c.mailboxDir!);
    expect(r.code).toBe(0);
  });

  it('list --all shows development networks off in production; enable KEY turns one on by its key', async () => {
    expect(await restKeys()).not.toContain('ethereum-local');
    const enabled = await cli('chains', 'list');
    expect(enabled.code).toBe(0);
    expect(enabled.out).not.toMatch(/ethereum-local/);
    expect(enabled.out).toMatch(/ethereum-mainnet/);
    const all = await cli('--json', 'chains', 'list', '--all');
    const rows = JSON.parse(all.out) as { key: string; enabled: boolean; development: boolean }[];
    expect(rows.find((r) => r.key === 'ethereum-local')).toMatchObject({ enabled: false, development: true });
    expect(rows.find((r) => r.key === 'ethereum-mainnet')).toMatchObject({ enabled: true, development: false });

    const on = await cli('chains', 'enable', 'ethereum-local');
    expect(on.code).toBe(0);
    expect(on.out).toBe(`ethereum-local enabled for profile ${h.profileId}`);
    expect(await restKeys()).toContain('ethereum-local');
    expect((await cli('chains', 'list')).out).toMatch(/ethereum-local/);
    const audit = await h.req('GET', '/admin/v1/audit?page_size=200', { token: h.adminToken });
    expect(JSON.stringify(audit.body)).toContain('profile.blockchain_enabled');

    expect((await cli('chains', 'disable', 'ethereum-local')).code).toBe(0);
    expect(await restKeys()).not.toContain('ethereum-local');
  });

  it('an unknown key is refused naming the keys of the directory; nothing changes', async () => {
    const before = await restKeys();
    const r = await cli('chains', 'enable', 'ethereum-locl');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/no blockchain with key "ethereum-locl"; the directory has: .*ethereum-local/);
    expect(await restKeys()).toEqual(before);
  });

  it('wallets create takes blockchain keys as well as ids', async () => {
    const w = await cli('--json', 'wallets', 'create', h.profileId, '--blockchain', 'ethereum-mainnet', '--name', 'k');
    expect(w.code).toBe(0);
    const wallet = JSON.parse(w.out) as { addresses: { address: string }[] };
    expect(wallet.addresses[0]?.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const bad = await cli('wallets', 'create', h.profileId, '--blockchain', 'ethereum-moonnet');
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/no blockchain with key "ethereum-moonnet"/);
  });

  it('with several profiles --profile is required; the admin API answers 404 for an unknown profile', async () => {
    const p = await cli('--json', 'profiles', 'create', 'second');
    const second = JSON.parse(p.out).profile_id as string;
    const r = await cli('chains', 'enable', 'ethereum-local');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/2 profiles: pass --profile/);
    expect((await cli('chains', 'enable', 'ethereum-local', '--profile', second)).code).toBe(0);
    const list = await cli('--json', 'chains', 'list', '--profile', second);
    expect(JSON.parse(list.out).map((b: { key: string }) => b.key)).toContain('ethereum-local');
    // the first profile is untouched
    expect(await restKeys()).not.toContain('ethereum-local');
    const missing = await h.req('GET', '/admin/v1/profiles/00000000-0000-4000-8000-000000000000/blockchains?all=true', {
      token: h.adminToken,
    });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('RESOURCE_NOT_FOUND');
  });
});
