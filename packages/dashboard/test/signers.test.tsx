// @vitest-environment jsdom
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { SignersPage } from '../src/pages/signers';
import { pg } from './fixtures';
import { axeViolations, me, mockFetch, RoleHarness, renderAt } from './render';

afterEach(cleanup);

const PEER = '12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo';
const signer = {
  signer_id: '44444444-4444-4444-8444-444444444444',
  name: 'Server one',
  peer_id: PEER,
  address: '/ip4/10.0.0.5/tcp/7400',
  fingerprint: 'ab12 cd34 ef56 0789',
  created_at: '2026-11-01T10:00:00Z',
};

describe('Server signers screen', () => {
  it('lists the signers and registers one with name, peer_id, address and fingerprint, through step-up', async () => {
    const bodies: unknown[] = [];
    let stepped = false;
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/signers', () => ({ body: pg([signer]) })],
      [
        'POST /admin/v1/session/step-up',
        async (req) => {
          expect(await req.json()).toEqual({ password: 'correct horse battery' });
          stepped = true;
          return { body: { method: 'password', step_up_expires_at: '2026-11-26T20:00:00Z' } };
        },
      ],
      [
        'POST /admin/v1/signers',
        async (req) => {
          if (!stepped)
            return {
              status: 403,
              body: { title: 'Step-up required', status: 403, code: 'STEP_UP_REQUIRED' },
            };
          bodies.push(await req.json());
          return { status: 201, body: { ...signer, signer_id: '55555555-5555-4555-8555-555555555555', name: 'Two' } };
        },
      ],
    ]);
    const user = userEvent.setup({ delay: null });
    renderAt(
      <RoleHarness>
        <SignersPage />
      </RoleHarness>,
      '/signers',
    );
    expect(await screen.findByRole('heading', { name: 'Server signers', level: 2 })).toBeTruthy();
    const table = await screen.findByRole('table', { name: 'Server signers' });
    expect(within(table).getByText('/ip4/10.0.0.5/tcp/7400')).toBeTruthy();
    expect(within(table).getByText(PEER)).toBeTruthy();

    await user.click(await screen.findByRole('button', { name: 'Register signer' }));
    const dialog = await screen.findByRole('dialog', { name: 'Register a server signer' });
    await user.type(within(dialog).getByRole('textbox', { name: /^Name/ }), 'Two');
    await user.type(within(dialog).getByRole('textbox', { name: /^Peer id/ }), PEER);
    await user.type(within(dialog).getByRole('textbox', { name: /^Address/ }), '/ip4/10.0.0.6/tcp/7400');
    await user.type(within(dialog).getByRole('textbox', { name: /^Fingerprint/ }), 'ffff 0000 1111');
    await user.click(within(dialog).getByRole('button', { name: 'Register signer' }));
    const stepUp = await screen.findByRole('dialog', { name: 'Confirm it is you' });
    await user.type(within(stepUp).getByLabelText(/^Password/), 'correct horse battery');
    await user.click(within(stepUp).getByRole('button', { name: 'Confirm' }));
    await waitFor(() => expect(bodies).toHaveLength(1));
    expect(bodies[0]).toEqual({
      name: 'Two',
      peer_id: PEER,
      address: '/ip4/10.0.0.6/tcp/7400',
      fingerprint: 'ffff 0000 1111',
    });
  });

  it('refuses an address that is not a multiaddr in the form, and shows the server problem on conflict', async () => {
    let posts = 0;
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/signers', () => ({ body: pg([]) })],
      [
        'POST /admin/v1/signers',
        () => {
          posts += 1;
          return {
            status: 409,
            body: { title: 'Conflict', status: 409, code: 'CONFLICT', detail: 'the peer id is already registered' },
          };
        },
      ],
    ]);
    const user = userEvent.setup({ delay: null });
    renderAt(
      <RoleHarness>
        <SignersPage />
      </RoleHarness>,
      '/signers',
    );
    expect(await screen.findByText(/No server signer is registered/)).toBeTruthy();
    await user.click(await screen.findByRole('button', { name: 'Register signer' }));
    const dialog = await screen.findByRole('dialog', { name: 'Register a server signer' });
    await user.type(within(dialog).getByRole('textbox', { name: /^Name/ }), 'Two');
    await user.type(within(dialog).getByRole('textbox', { name: /^Peer id/ }), PEER);
    await user.type(within(dialog).getByRole('textbox', { name: /^Address/ }), '10.0.0.6:7400');
    await user.type(within(dialog).getByRole('textbox', { name: /^Fingerprint/ }), 'ffff 0000 1111');
    await user.click(within(dialog).getByRole('button', { name: 'Register signer' }));
    expect(await within(dialog).findByText(/A multiaddr/)).toBeTruthy();
    expect(posts).toBe(0);
    const address = within(dialog).getByRole('textbox', { name: /^Address/ });
    await user.clear(address);
    await user.type(address, '/ip4/10.0.0.6/tcp/7400');
    await user.click(within(dialog).getByRole('button', { name: 'Register signer' }));
    const alert = await within(dialog).findByRole('alert');
    expect(alert.textContent).toContain('the peer id is already registered');
    expect(posts).toBe(1);
  });

  it('asks the server for page 2 of 20 and shows reachability and the x–y of total text', async () => {
    const seen = mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      [
        'GET /admin/v1/signers',
        () => ({
          body: {
            data: [
              { ...signer, reachable: true, last_seen_at: '2026-11-26T20:00:00Z' },
              {
                ...signer,
                signer_id: '55555555-5555-4555-8555-555555555555',
                name: 'Server two',
                reachable: false,
                last_seen_at: null,
              },
            ],
            page: 2,
            page_size: 20,
            total: 22,
          },
        }),
      ],
    ]);
    renderAt(
      <RoleHarness>
        <SignersPage />
      </RoleHarness>,
      '/signers?page=2',
    );
    const table = await screen.findByRole('table', { name: 'Server signers' });
    expect(within(table).getByText('Reachable')).toBeTruthy();
    expect(within(table).getByText('Unreachable')).toBeTruthy();
    expect(within(table).getByText('Not seen since the coordinator started')).toBeTruthy();
    expect(within(table).getByText(/^Last seen /)).toBeTruthy();
    expect(await screen.findByText('21–22 of 22')).toBeTruthy();
    const list = seen.find((r) => new URL(r.url).pathname === '/admin/v1/signers');
    expect(new URL(list!.url).searchParams.get('page')).toBe('2');
    expect(new URL(list!.url).searchParams.get('page_size')).toBe('20');
  });

  it('has no serious or critical axe violations, with the register dialog open too', async () => {
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/signers', () => ({ body: pg([signer]) })],
    ]);
    const user = userEvent.setup({ delay: null });
    const { container } = renderAt(
      <RoleHarness>
        <SignersPage />
      </RoleHarness>,
      '/signers',
    );
    await screen.findByRole('table', { name: 'Server signers' });
    await screen.findByText('signed in as ADMIN');
    expect(await axeViolations(container)).toEqual([]);
    await user.click(await screen.findByRole('button', { name: 'Register signer' }));
    expect(await axeViolations(await screen.findByRole('dialog'))).toEqual([]);
  });

  it('confirms before removing, and a Viewer sees neither Register nor Remove', async () => {
    const deleted: string[] = [];
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/signers', () => ({ body: pg([signer]) })],
      [
        `DELETE /admin/v1/signers/${signer.signer_id}`,
        () => {
          deleted.push(signer.signer_id);
          return { status: 204 };
        },
      ],
    ]);
    const user = userEvent.setup({ delay: null });
    const view = renderAt(
      <RoleHarness>
        <SignersPage />
      </RoleHarness>,
      '/signers',
    );
    await user.click(await screen.findByRole('button', { name: 'Remove Server one' }));
    const dialog = await screen.findByRole('dialog');
    expect(dialog.textContent).toContain('does not delete the signer');
    expect(deleted).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Remove signer' }));
    await waitFor(() => expect(deleted).toEqual([signer.signer_id]));
    view.unmount();

    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('VIEWER') })],
      ['GET /admin/v1/signers', () => ({ body: pg([signer]) })],
    ]);
    renderAt(
      <RoleHarness>
        <SignersPage />
      </RoleHarness>,
      '/signers',
    );
    await screen.findByRole('table', { name: 'Server signers' });
    await screen.findByText('signed in as VIEWER');
    expect(screen.queryByRole('button', { name: 'Register signer' })).toBeNull();
    expect(screen.queryByRole('button', { name: /Remove/ })).toBeNull();
  });
});
