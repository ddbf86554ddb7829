// @vitest-environment jsdom
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { MasterKeysPage } from '../src/pages/master-keys';
import { pg } from './fixtures';
import { axeViolations, me, mockFetch, RoleHarness, renderAt } from './render';

afterEach(cleanup);

const device = (n: number, name: string, status = 'APPROVED') => ({
  device_id: `${n}${n}${n}${n}${n}${n}${n}${n}-1111-4111-8111-111111111111`,
  name,
  platform: 'android',
  os_version: '14',
  public_key: '02',
  fingerprint: 'ab12',
  mpc_peer_id: '12D3KooW',
  user_id: null,
  status,
  created_at: '2026-11-01T10:00:00Z',
  decided_at: null,
  decided_by: null,
});
const phoneA = device(1, 'Phone A');
const phoneB = device(2, 'Phone B');
const phoneC = device(3, 'Phone pending', 'PENDING');
const server = {
  signer_id: '44444444-4444-4444-8444-444444444444',
  name: 'Server one',
  peer_id: '12D3KooWserver',
  address: '/ip4/10.0.0.5/tcp/7400',
  fingerprint: 'ffff0000',
  created_at: '2026-11-01T10:00:00Z',
};
const CEREMONY_ID = '55555555-5555-4555-8555-555555555555';
const ceremony = (over: Record<string, unknown>) => ({
  ceremony_id: CEREMONY_ID,
  kind: 'dkg',
  status: 'RUNNING',
  threshold: 2,
  parties: [
    { kind: 'device', id: phoneA.device_id },
    { kind: 'device', id: phoneB.device_id },
    { kind: 'server', id: server.signer_id },
  ],
  progress: { phase: 'KEYGEN', parties_ready: 1, parties_total: 3 },
  started_by: me('ADMIN').user_id,
  started_at: new Date().toISOString(),
  deadline: new Date(Date.now() + 5 * 60_000).toISOString(),
  finished_at: null,
  error: null,
  blamed: null,
  unverified_accusers: [],
  outcome: null,
  blame: [],
  transcript_hash: null,
  master_key_id: null,
  result: null,
  key_change_id: null,
  ...over,
});

const KEY_ID = '66666666-6666-4666-8666-666666666666';
const masterKey = {
  master_key_id: KEY_ID,
  ceremony_id: CEREMONY_ID,
  threshold: 2,
  parties: ceremony({}).parties,
  secp256k1_public_key: `02${'a'.repeat(64)}`,
  secp256k1_chain_code: 'c'.repeat(64),
  ed25519_public_key: 'e'.repeat(64),
  ed25519_chain_code: 'c'.repeat(64),
  taproot_public_key: null,
  taproot_chain_code: null,
  epoch: 0,
  refreshed_at: null,
  created_at: '2026-11-01T10:00:00Z',
};
const keyChange = {
  change_id: '77777777-7777-4777-8777-777777777777',
  master_key_id: KEY_ID,
  reason: 'replace-signer',
  status: 'AWAITING_SIGNATURE',
  document: {},
  digest: 'd'.repeat(64),
  ceremony_id: null,
  error: null,
  created_by: null,
  created_at: '2026-11-02T10:00:00Z',
  updated_at: '2026-11-02T10:00:00Z',
};
const verifiedBlame = {
  culprit: '12D3KooWserver',
  culprit_name: 'Server one',
  claimed_culprit: '12D3KooWserver',
  claimed_culprit_name: 'Server one',
  accuser: '12D3KooWphoneA',
  accuser_name: 'Phone A',
  check: 'echo.equivocation',
  round: 2,
  protocol: 'cggmp-keygen',
  verified: true,
  detail: 'two different round-2 messages',
  summary: 'Server one (12D3KooWserver) failed echo.equivocation',
  created_at: null,
};

describe('Master key screen', () => {
  it('refuses one mobile signer in the form, then starts the ceremony with the chosen parties and threshold', async () => {
    const bodies: unknown[] = [];
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/master-keys', () => ({ body: pg([]) })],
      ['GET /admin/v1/ceremonies', () => ({ body: pg([]) })],
      ['GET /admin/v1/devices', () => ({ body: pg([phoneA, phoneB, phoneC]) })],
      ['GET /admin/v1/signers', () => ({ body: pg([server]) })],
      [
        'POST /admin/v1/master-keys',
        async (req) => {
          bodies.push(await req.json());
          return { status: 202, body: ceremony({}) };
        },
      ],
      [`GET /admin/v1/ceremonies/${CEREMONY_ID}`, () => ({ body: ceremony({}) })],
    ]);
    const user = userEvent.setup({ delay: null });
    renderAt(
      <RoleHarness>
        <MasterKeysPage />
      </RoleHarness>,
      '/master-keys',
    );
    await user.click(await screen.findByRole('button', { name: 'Create master key' }));
    const dialog = await screen.findByRole('dialog');
    await user.click(await within(dialog).findByRole('checkbox', { name: 'Phone A' }));
    await user.click(within(dialog).getByRole('checkbox', { name: 'Server one' }));
    // a pending phone is not a party one may choose
    expect(within(dialog).queryByRole('checkbox', { name: 'Phone pending' })).toBeNull();
    const k = within(dialog).getByRole('textbox', { name: /Threshold \(k\)/ });
    await user.clear(k);
    await user.type(k, '2');
    await user.click(within(dialog).getByRole('button', { name: 'Start ceremony' }));
    expect((await within(dialog).findByRole('alert')).textContent).toContain('at least 2 mobile signers');
    expect(bodies).toHaveLength(0);

    await user.click(within(dialog).getByRole('checkbox', { name: 'Phone B' }));
    await user.click(within(dialog).getByRole('button', { name: 'Start ceremony' }));
    await waitFor(() => expect(bodies).toHaveLength(1));
    expect(bodies[0]).toEqual({
      threshold: 2,
      signers: [
        { kind: 'device', id: phoneA.device_id },
        { kind: 'server', id: server.signer_id },
        { kind: 'device', id: phoneB.device_id },
      ],
    });
    // the started ceremony is shown live
    const panel = await screen.findByRole('region', { name: 'Ceremony progress' });
    expect((await within(panel).findByText(/1 of 3 parties ready/)).textContent).toContain('KEYGEN');
    expect(within(panel).getByText(/Time left: [45]:\d\d/)).toBeTruthy();
  });

  it('shows the server problem when the ceremony cannot start', async () => {
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/master-keys', () => ({ body: pg([]) })],
      ['GET /admin/v1/ceremonies', () => ({ body: pg([]) })],
      ['GET /admin/v1/devices', () => ({ body: pg([phoneA, phoneB]) })],
      ['GET /admin/v1/signers', () => ({ body: pg([]) })],
      [
        'POST /admin/v1/master-keys',
        () => ({
          status: 503,
          body: {
            title: 'Signers unavailable',
            status: 503,
            code: 'SIGNERS_UNAVAILABLE',
            detail: 'no signer control channel',
          },
        }),
      ],
    ]);
    const user = userEvent.setup({ delay: null });
    renderAt(
      <RoleHarness>
        <MasterKeysPage />
      </RoleHarness>,
      '/master-keys',
    );
    await user.click(await screen.findByRole('button', { name: 'Create master key' }));
    const dialog = await screen.findByRole('dialog');
    await user.click(await within(dialog).findByRole('checkbox', { name: 'Phone A' }));
    await user.click(within(dialog).getByRole('checkbox', { name: 'Phone B' }));
    await user.click(within(dialog).getByRole('button', { name: 'Start ceremony' }));
    const alert = await within(dialog).findByRole('alert');
    expect(alert.textContent).toContain('Signers unavailable');
    expect(alert.textContent).toContain('no signer control channel');
  });

  it('follows a ceremony by polling (no EventSource in jsdom) and shows the culprit of a FAILED one', async () => {
    expect(typeof EventSource).toBe('undefined');
    let polls = 0;
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('VIEWER') })],
      ['GET /admin/v1/master-keys', () => ({ body: pg([]) })],
      ['GET /admin/v1/ceremonies', () => ({ body: pg([]) })],
      [
        `GET /admin/v1/ceremonies/${CEREMONY_ID}`,
        () => {
          polls += 1;
          return polls === 1
            ? { body: ceremony({}) }
            : {
                body: ceremony({
                  status: 'FAILED',
                  outcome: 'ABORTED',
                  error: 'a party misbehaved',
                  finished_at: new Date().toISOString(),
                  blamed: [`server:${server.signer_id}`],
                  blame: [
                    {
                      culprit: '12D3KooWserver',
                      culprit_name: 'Server one',
                      claimed_culprit: '12D3KooWserver',
                      claimed_culprit_name: 'Server one',
                      accuser: '12D3KooWphoneA',
                      accuser_name: 'Phone A',
                      check: 'echo.equivocation',
                      round: 2,
                      protocol: 'cggmp-keygen',
                      verified: true,
                      detail: 'two different round-2 messages',
                      summary: 'Server one (12D3KooWserver) failed echo.equivocation',
                      created_at: null,
                    },
                    {
                      culprit: null,
                      culprit_name: null,
                      claimed_culprit: '12D3KooWphoneB',
                      claimed_culprit_name: 'Phone B',
                      accuser: '12D3KooWserver',
                      accuser_name: 'Server one',
                      check: 'proof.enc',
                      round: 3,
                      protocol: 'cggmp-keygen',
                      verified: false,
                      detail: '',
                      summary: 'unverified: Server one accuses Phone B of proof.enc',
                      created_at: null,
                    },
                  ],
                }),
              };
        },
      ],
    ]);
    renderAt(
      <RoleHarness>
        <MasterKeysPage />
      </RoleHarness>,
      `/master-keys?ceremony=${CEREMONY_ID}`,
    );
    const panel = await screen.findByRole('region', { name: 'Ceremony progress' });
    expect(await within(panel).findByText('RUNNING')).toBeTruthy();
    // the fallback poll (every 2 s) brings the final state
    expect(await within(panel).findByText('FAILED', {}, { timeout: 6000 })).toBeTruthy();
    expect(polls).toBeGreaterThanOrEqual(2);
    const blame = within(panel).getByRole('table', { name: 'Culprits and evidence' });
    const rows = within(blame).getAllByRole('row');
    expect(within(rows[1] as HTMLElement).getByText('Server one')).toBeTruthy();
    expect(within(rows[1] as HTMLElement).getByText('echo.equivocation')).toBeTruthy();
    expect(within(rows[1] as HTMLElement).getByText('verified')).toBeTruthy();
    expect(within(rows[2] as HTMLElement).getByText('dispute')).toBeTruthy();
    expect(within(rows[2] as HTMLElement).getByText(/nobody proven/)).toBeTruthy();
    // a Viewer reads it all but gets no action
    await screen.findByText('signed in as VIEWER');
    expect(screen.queryByRole('button', { name: 'Create master key' })).toBeNull();
  });

  it('refreshes the key list and the ceremony row when the followed ceremony succeeds (no reload)', async () => {
    let done = false;
    let polls = 0;
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/master-keys', () => ({ body: pg(done ? [masterKey] : []) })],
      [
        'GET /admin/v1/ceremonies',
        () => ({
          body: pg([done ? ceremony({ status: 'SUCCEEDED', outcome: 'OK', master_key_id: KEY_ID }) : ceremony({})]),
        }),
      ],
      ['GET /admin/v1/devices', () => ({ body: pg([phoneA, phoneB]) })],
      ['GET /admin/v1/signers', () => ({ body: pg([server]) })],
      [`GET /admin/v1/master-keys/${KEY_ID}/key-changes`, () => ({ body: pg([]) })],
      [
        `GET /admin/v1/ceremonies/${CEREMONY_ID}`,
        () => {
          polls += 1;
          if (polls === 1) return { body: ceremony({}) };
          done = true;
          return { body: ceremony({ status: 'SUCCEEDED', outcome: 'OK', master_key_id: KEY_ID }) };
        },
      ],
    ]);
    renderAt(
      <RoleHarness>
        <MasterKeysPage />
      </RoleHarness>,
      `/master-keys?ceremony=${CEREMONY_ID}`,
    );
    expect(await screen.findByText(/^No master key yet/)).toBeTruthy();
    const recent = await screen.findByRole('table', { name: 'Recent ceremonies' });
    expect(within(recent).getByText('RUNNING')).toBeTruthy();
    const panel = screen.getByRole('region', { name: 'Ceremony progress' });
    expect(await within(panel).findByText('Ceremony succeeded', {}, { timeout: 6000 })).toBeTruthy();
    // the lists were read again: the new key's card, the row's final status
    expect(await screen.findByRole('heading', { level: 3, name: /^Master key 66666666/ })).toBeTruthy();
    expect(screen.queryByText(/^No master key yet/)).toBeNull();
    await waitFor(() =>
      expect(within(screen.getByRole('table', { name: 'Recent ceremonies' })).getByText('SUCCEEDED')).toBeTruthy(),
    );
    expect(within(screen.getByRole('table', { name: 'Recent ceremonies' })).queryByText('RUNNING')).toBeNull();
  });

  it('has no serious or critical axe violations: key card, ceremony panel with blame, create dialog', async () => {
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/master-keys', () => ({ body: pg([masterKey]) })],
      ['GET /admin/v1/ceremonies', () => ({ body: pg([ceremony({ status: 'SUCCEEDED', outcome: 'OK' })]) })],
      ['GET /admin/v1/devices', () => ({ body: pg([phoneA, phoneB]) })],
      ['GET /admin/v1/signers', () => ({ body: pg([server]) })],
      [`GET /admin/v1/master-keys/${KEY_ID}/key-changes`, () => ({ body: pg([keyChange]) })],
      [
        `GET /admin/v1/ceremonies/${CEREMONY_ID}`,
        () => ({ body: ceremony({ status: 'FAILED', outcome: 'ABORTED', blame: [verifiedBlame] }) }),
      ],
    ]);
    const user = userEvent.setup({ delay: null });
    const { container } = renderAt(
      <RoleHarness>
        <MasterKeysPage />
      </RoleHarness>,
      `/master-keys?ceremony=${CEREMONY_ID}`,
    );
    await screen.findByRole('table', { name: 'Culprits and evidence' });
    await screen.findByRole('table', { name: 'Key changes' });
    await screen.findByRole('table', { name: 'Recent ceremonies' });
    expect(await axeViolations(container)).toEqual([]);
    await user.click(await screen.findByRole('button', { name: 'Create master key' }));
    const dialog = await screen.findByRole('dialog');
    await within(dialog).findByRole('checkbox', { name: 'Phone A' });
    expect(await axeViolations(dialog)).toEqual([]);
  });

  it("shows a finished recovery drill's verified signatures and backup state", async () => {
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('VIEWER') })],
      ['GET /admin/v1/master-keys', () => ({ body: pg([]) })],
      ['GET /admin/v1/ceremonies', () => ({ body: pg([]) })],
      [
        `GET /admin/v1/ceremonies/${CEREMONY_ID}`,
        () => ({
          body: ceremony({
            kind: 'drill',
            status: 'SUCCEEDED',
            outcome: 'OK',
            result: {
              signatures: [
                { algorithm: 'ecdsa-secp256k1', public_key: '02aa', digest: 'dd', signature: 'ss', verified: true },
                { algorithm: 'eddsa-ed25519', public_key: 'ee', digest: 'dd', signature: 'ss', verified: false },
              ],
              signers: [
                { kind: 'server', id: 'srv', epoch: 1, backup_epoch: 0, backup_at: null, backup_current: false },
              ],
            },
          }),
        }),
      ],
    ]);
    renderAt(
      <RoleHarness>
        <MasterKeysPage />
      </RoleHarness>,
      `/master-keys?ceremony=${CEREMONY_ID}`,
    );
    const panel = await screen.findByRole('region', { name: 'Ceremony progress' });
    expect(await within(panel).findByText('ecdsa-secp256k1: signature verified')).toBeTruthy();
    expect(within(panel).getByText('eddsa-ed25519: signature NOT verified')).toBeTruthy();
    expect(within(panel).getByText(/server:srv — backup NOT current/)).toBeTruthy();
  });

  it('shows an Admin the key lifecycle and a key change waiting for a phone signature', async () => {
    const seen = mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/master-keys', () => ({ body: pg([masterKey]) })],
      ['GET /admin/v1/ceremonies', () => ({ body: pg([ceremony({ status: 'SUCCEEDED', outcome: 'OK' })]) })],
      ['GET /admin/v1/devices', () => ({ body: pg([phoneA, phoneB]) })],
      ['GET /admin/v1/signers', () => ({ body: pg([server]) })],
      [`GET /admin/v1/master-keys/${KEY_ID}/key-changes`, () => ({ body: pg([keyChange]) })],
    ]);
    renderAt(
      <RoleHarness>
        <MasterKeysPage />
      </RoleHarness>,
      '/master-keys',
    );
    const card = await screen.findByRole('region', { name: /Master key 66666666/ });
    expect(within(card).getByText('2 of 3')).toBeTruthy();
    expect(await within(card).findByText('Parties: Phone A, Phone B, Server one')).toBeTruthy();
    for (const name of ['Refresh shares', 'Replace a signer or reshare', 'Recovery drill'])
      expect(within(card).getByRole('button', { name })).toBeTruthy();
    const changes = await within(card).findByRole('table', { name: 'Key changes' });
    expect(within(changes).getByText('AWAITING_SIGNATURE')).toBeTruthy();
    expect(within(changes).getByText(/enrolled phone must sign/)).toBeTruthy();
    // the key changes are paged by the server
    const kc = seen.map((r) => new URL(r.url)).find((u) => u.pathname.endsWith('/key-changes'));
    expect(kc?.searchParams.get('page')).toBe('1');
    expect(kc?.searchParams.get('page_size')).toBe('20');
    const recent = await screen.findByRole('table', { name: 'Recent ceremonies' });
    expect(within(recent).getByText('SUCCEEDED')).toBeTruthy();
  });
});
