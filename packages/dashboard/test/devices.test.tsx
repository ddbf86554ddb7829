// @vitest-environment jsdom
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { DevicesPage } from '../src/pages/devices';
import { pg } from './fixtures';
import { axeViolations, me, mockFetch, RoleHarness, renderAt } from './render';

afterEach(cleanup);

const FP = 'ab12cd34ef560789ab12cd34ef560789ab12cd34ef560789ab12cd34ef560789';
const pending = {
  device_id: '11111111-1111-4111-8111-111111111111',
  name: 'Pixel of Bob',
  platform: 'android',
  os_version: '14',
  public_key: '02'.padEnd(66, 'a'),
  fingerprint: FP,
  mpc_peer_id: '12D3KooW',
  user_id: null,
  status: 'PENDING',
  created_at: '2026-11-01T10:00:00Z',
  decided_at: null,
  decided_by: null,
};
const approved = {
  ...pending,
  device_id: '22222222-2222-4222-8222-222222222222',
  name: 'iPhone of Alice',
  platform: 'ios',
  os_version: '17.1',
  status: 'APPROVED',
  user_id: me('ADMIN').user_id,
};
const bob = {
  user_id: '00000000-0000-4000-8000-0000000000bb',
  email: 'bob@example.com',
  name: 'Bob',
  role: 'ADMIN',
  totp_enabled: false,
  blocked: false,
  created_at: '2026-01-01T00:00:00Z',
};

function routes(role: string, onApprove: (body: unknown) => void = () => {}) {
  return mockFetch([
    ['GET /admin/v1/me', () => ({ body: me(role) })],
    ['GET /admin/v1/devices', () => ({ body: pg([pending, approved]) })],
    ['GET /admin/v1/users', () => ({ body: { data: [me('ADMIN'), bob], page: 1, page_size: 200, total: 2 } })],
    [
      `POST /admin/v1/devices/${pending.device_id}/approve`,
      async (req) => {
        onApprove(await req.json());
        return { body: { device_id: pending.device_id, status: 'APPROVED', user_id: bob.user_id } };
      },
    ],
  ]);
}

describe('Devices screen', () => {
  it('shows a pending fingerprint grouped for reading aloud and approves with {fingerprint, user_id} only after the match checkbox', async () => {
    const bodies: unknown[] = [];
    const seen = routes('ADMIN', (b) => bodies.push(b));
    const user = userEvent.setup({ delay: null });
    renderAt(
      <RoleHarness>
        <DevicesPage />
      </RoleHarness>,
      '/devices',
    );
    const card = await screen.findByRole('region', { name: 'Enrollment request Pixel of Bob' });
    expect(
      within(card).getByText('ab12 cd34 ef56 0789 ab12 cd34 ef56 0789 ab12 cd34 ef56 0789 ab12 cd34 ef56 0789'),
    ).toBeTruthy();
    await user.click(within(card).getByRole('button', { name: 'Approve Pixel of Bob' }));
    const dialog = await screen.findByRole('dialog');
    const approve = within(dialog).getByRole('button', { name: 'Approve device' });
    expect(approve.hasAttribute('disabled')).toBe(true);

    await user.click(within(dialog).getByRole('combobox', { name: 'Owner' }));
    await user.click(await screen.findByRole('option', { name: 'Bob (bob@example.com)', hidden: true }));
    // owner chosen, fingerprint not yet confirmed: still refused
    expect(approve.hasAttribute('disabled')).toBe(true);
    await user.click(approve);
    expect(seen.filter((r) => r.method === 'POST')).toHaveLength(0);

    await user.click(within(dialog).getByRole('checkbox', { name: 'The fingerprint matches the one on the phone' }));
    expect(approve.hasAttribute('disabled')).toBe(false);
    await user.click(approve);
    await waitFor(() => expect(bodies).toHaveLength(1));
    expect(bodies[0]).toEqual({ fingerprint: FP, user_id: bob.user_id });
  });

  it('lists every device with status, platform and owner, and explains the key consequences before removing', async () => {
    routes('ADMIN');
    const user = userEvent.setup({ delay: null });
    renderAt(
      <RoleHarness>
        <DevicesPage />
      </RoleHarness>,
      '/devices',
    );
    const table = await screen.findByRole('table', { name: 'All devices' });
    const row = within(table).getByText('iPhone of Alice').closest('tr') as HTMLElement;
    expect(within(row).getByText('APPROVED')).toBeTruthy();
    expect(within(row).getByText('ios 17.1')).toBeTruthy();
    await waitFor(() => expect(within(row).getByText('Alice')).toBeTruthy());
    await user.click(within(row).getByRole('button', { name: 'Remove iPhone of Alice' }));
    const dialog = await screen.findByRole('dialog');
    expect(dialog.textContent).toContain('still holds its key share');
    expect(dialog.textContent).toContain('replace the signer');
  });

  it('has no serious or critical axe violations, with the approve dialog open too', async () => {
    routes('ADMIN');
    const user = userEvent.setup({ delay: null });
    const { container } = renderAt(
      <RoleHarness>
        <DevicesPage />
      </RoleHarness>,
      '/devices',
    );
    await screen.findByRole('table', { name: 'All devices' });
    await screen.findByText('signed in as ADMIN');
    expect(await axeViolations(container)).toEqual([]);
    await user.click(await screen.findByRole('button', { name: 'Approve Pixel of Bob' }));
    expect(await axeViolations(await screen.findByRole('dialog'))).toEqual([]);
  });

  it('shows a Viewer no Approve, Reject or Remove', async () => {
    routes('VIEWER');
    renderAt(
      <RoleHarness>
        <DevicesPage />
      </RoleHarness>,
      '/devices',
    );
    await screen.findByRole('table', { name: 'All devices' });
    await screen.findByRole('region', { name: 'Enrollment request Pixel of Bob' });
    // the session has loaded before we look for the buttons it hides
    await screen.findByText('signed in as VIEWER');
    expect(screen.queryByRole('columnheader', { name: 'Actions' })).toBeNull();
    expect(screen.queryByRole('button', { name: /Approve/ })).toBeNull();
    expect(screen.queryByRole('button', { name: /Reject/ })).toBeNull();
    expect(screen.queryByRole('button', { name: /Remove/ })).toBeNull();
  });

  it('shows the problem when the device list fails', async () => {
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/users', () => ({ body: { data: [], page: 1, page_size: 200, total: 0 } })],
      [
        'GET /admin/v1/devices',
        () => ({
          status: 403,
          body: { title: 'Forbidden', status: 403, code: 'ROLE_FORBIDDEN', detail: 'your role may not list devices' },
        }),
      ],
    ]);
    renderAt(
      <RoleHarness>
        <DevicesPage />
      </RoleHarness>,
      '/devices',
    );
    const detail = await screen.findAllByText('your role may not list devices');
    const alert = detail[0]?.closest('[role="alert"]');
    expect(alert?.textContent).toContain('Forbidden');
  });
});
