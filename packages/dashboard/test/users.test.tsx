// @vitest-environment jsdom
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { SessionProvider } from '../src/auth/session';
import { StepUpProvider } from '../src/auth/step-up';
import { UsersPage } from '../src/pages/users';
import { axeViolations, mockFetch, pick, renderAt } from './render';

const user = (n: number, role: string, extra: object = {}) => ({
  user_id: `00000000-0000-4000-8000-00000000000${n}`,
  email: `u${n}@example.com`,
  name: `User ${n}`,
  role,
  totp_enabled: false,
  blocked: false,
  created_at: '2026-01-01T00:00:00.000Z',
  ...extra,
});
const ADMIN = { ...user(1, 'ADMIN'), step_up_expires_at: null };
const BOB = user(2, 'VIEWER');
const CAROL = user(3, 'FINANCE_MANAGER', { blocked: true, totp_enabled: true });
const page = (data: object[], total = data.length) => ({ body: { data, page: 1, page_size: 20, total } });
const path = (r: Request) => `${r.method} ${new URL(r.url).pathname}`;

function renderUsers(at = '/users') {
  return renderAt(
    <SessionProvider>
      <StepUpProvider>
        <UsersPage />
      </StepUpProvider>
    </SessionProvider>,
    at,
  );
}

afterEach(cleanup);

describe('users', () => {
  it.each([
    ['VIEWER', 'Viewer'],
    ['FINANCE_MANAGER', 'Finance Manager'],
  ])('%s sees no Invite button and no user list', async (role) => {
    const seen = mockFetch([['GET /admin/v1/me', () => ({ body: { ...ADMIN, role } })]]);
    renderUsers();
    // shown once GET /me answered (a loading page shows a spinner, not this)
    expect(await screen.findByText('Your role does not give access to this screen.')).toBeTruthy();
    expect(seen.some((r) => path(r) === 'GET /admin/v1/me')).toBe(true);
    expect(screen.queryByRole('button', { name: 'Invite user' })).toBeNull();
    expect(seen.some((r) => path(r) === 'GET /admin/v1/users')).toBe(false);
  });

  it('lists users of the page asked for (page_size 20) with their state', async () => {
    const seen = mockFetch([
      ['GET /admin/v1/me', () => ({ body: ADMIN })],
      ['GET /admin/v1/users', () => ({ body: { data: [ADMIN, BOB, CAROL], page: 2, page_size: 20, total: 43 } })],
    ]);
    renderUsers('/users?page=2');
    const table = await screen.findByRole('table', { name: 'Users' });
    expect(within(table).getByText('u2@example.com')).toBeTruthy();
    const carol = within(table).getByText('u3@example.com').closest('tr') as HTMLElement;
    expect(within(carol).getByText('Blocked')).toBeTruthy();
    expect(within(carol).getByText('On')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Unblock u3@example.com' })).toBeTruthy();
    expect(screen.getByText('21–40 of 43')).toBeTruthy();
    expect(await axeViolations()).toEqual([]);
    const list = seen.find((r) => path(r) === 'GET /admin/v1/users');
    const q = new URL(list?.url ?? '').searchParams;
    expect([q.get('page'), q.get('page_size')]).toEqual(['2', '20']);
  });

  it('shows the problem when the list fails, and an empty state', async () => {
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: ADMIN })],
      [
        'GET /admin/v1/users',
        () => ({
          status: 403,
          body: { title: 'Forbidden', status: 403, code: 'ROLE_FORBIDDEN', detail: 'your role cannot list users' },
        }),
      ],
    ]);
    renderUsers();
    expect((await screen.findByRole('alert', { name: 'Forbidden' })).textContent).toContain(
      'your role cannot list users',
    );
    cleanup();
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: ADMIN })],
      ['GET /admin/v1/users', () => page([])],
    ]);
    renderUsers();
    expect(await screen.findByText('No users yet. Invite one.')).toBeTruthy();
  });

  it('Admin invites a user (after a step-up) with email, name, role and password', async () => {
    let fresh = false;
    const seen = mockFetch([
      ['GET /admin/v1/me', () => ({ body: ADMIN })],
      ['GET /admin/v1/users', () => page([ADMIN])],
      [
        'POST /admin/v1/session/step-up',
        () => {
          fresh = true;
          return { body: { method: 'password', step_up_expires_at: '2026-01-01T00:05:00.000Z' } };
        },
      ],
      [
        'POST /admin/v1/users',
        () =>
          fresh
            ? { status: 201, body: user(4, 'FINANCE_MANAGER') }
            : { status: 403, body: { title: 'Step-up required', status: 403, code: 'STEP_UP_REQUIRED' } },
      ],
    ]);
    const ue = userEvent.setup();
    renderUsers();
    await ue.click(await screen.findByRole('button', { name: 'Invite user' }));
    const dialog = await screen.findByRole('dialog', { name: 'Invite user' });
    expect(await axeViolations()).toEqual([]);
    await ue.type(within(dialog).getByLabelText(/^Email/, { selector: 'input' }), 'u4@example.com');
    await ue.type(within(dialog).getByLabelText(/^Name/, { selector: 'input' }), 'User 4');
    await pick(ue, 'Role', 'Finance Manager');
    await ue.type(within(dialog).getByLabelText(/^Initial password/, { selector: 'input' }), 'a long initial phrase');
    await ue.click(within(dialog).getByRole('button', { name: 'Invite' }));

    const stepUp = await screen.findByRole('dialog', { name: 'Confirm it is you' });
    expect(await axeViolations()).toEqual([]);
    await ue.type(within(stepUp).getByLabelText(/^Password/, { selector: 'input' }), 'admin password');
    await ue.click(within(stepUp).getByRole('button', { name: 'Confirm' }));
    expect(await screen.findByText('User invited')).toBeTruthy();

    const creates = seen.filter((r) => path(r) === 'POST /admin/v1/users');
    expect(creates).toHaveLength(2);
    expect(await creates[1]?.json()).toEqual({
      email: 'u4@example.com',
      name: 'User 4',
      role: 'FINANCE_MANAGER',
      password: 'a long initial phrase',
    });
  });

  it('changes a role with PATCH { role }', async () => {
    const seen = mockFetch([
      ['GET /admin/v1/me', () => ({ body: ADMIN })],
      ['GET /admin/v1/users', () => page([ADMIN, BOB])],
      [`PATCH /admin/v1/users/${BOB.user_id}`, () => ({ body: { ...BOB, role: 'FINANCE_MANAGER' } })],
    ]);
    const ue = userEvent.setup();
    renderUsers();
    await pick(ue, 'Role of u2@example.com', 'Finance Manager');
    expect(await screen.findByText('Role changed')).toBeTruthy();
    const patch = seen.find((r) => r.method === 'PATCH');
    expect(new URL(patch?.url ?? '').pathname).toBe(`/admin/v1/users/${BOB.user_id}`);
    expect(await patch?.json()).toEqual({ role: 'FINANCE_MANAGER' });
  });

  it('blocks after a confirmation, resets a password, and shows a refused delete', async () => {
    const seen = mockFetch([
      ['GET /admin/v1/me', () => ({ body: ADMIN })],
      ['GET /admin/v1/users', () => page([ADMIN, BOB])],
      [`PATCH /admin/v1/users/${BOB.user_id}`, () => ({ body: BOB })],
      [
        `DELETE /admin/v1/users/${BOB.user_id}`,
        () => ({
          status: 409,
          body: { title: 'Conflict', status: 409, code: 'CONFLICT', detail: 'no active Admin would remain' },
        }),
      ],
    ]);
    const ue = userEvent.setup();
    renderUsers();
    await ue.click(await screen.findByRole('button', { name: 'Block u2@example.com' }));
    const block = await screen.findByRole('dialog', { name: 'Block user?' });
    expect(within(block).getByText(/sessions end/)).toBeTruthy();
    await ue.click(within(block).getByRole('button', { name: 'Block user' }));
    expect(await screen.findByText('User blocked')).toBeTruthy();

    await ue.click(screen.getByRole('button', { name: 'Reset password of u2@example.com' }));
    const reset = await screen.findByRole('dialog', { name: 'Reset password' });
    await ue.type(within(reset).getByLabelText(/^New password/, { selector: 'input' }), 'another long phrase');
    await ue.click(within(reset).getByRole('button', { name: 'Reset password' }));
    expect(await screen.findByText('Password reset')).toBeTruthy();

    const patches = seen.filter((r) => r.method === 'PATCH');
    expect(await patches[0]?.json()).toEqual({ blocked: true });
    expect(await patches[1]?.json()).toEqual({ password: 'another long phrase' });

    await ue.click(screen.getByRole('button', { name: 'Delete u2@example.com' }));
    const del = await screen.findByRole('dialog', { name: 'Delete user?' });
    await ue.click(within(del).getByRole('button', { name: 'Delete user' }));
    expect((await within(del).findByRole('alert')).textContent).toContain('no active Admin would remain');
    // the Admin cannot block or delete themselves
    expect(screen.getByRole('button', { name: 'Delete u1@example.com' }).hasAttribute('disabled')).toBe(true);
    await waitFor(() => expect(seen.filter((r) => r.method === 'DELETE')).toHaveLength(1));
  });
});
