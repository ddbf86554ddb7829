// @vitest-environment jsdom
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { ProfileProvider, SessionProvider } from '../src/auth/session';
import { StepUpProvider } from '../src/auth/step-up';
import { ApiKeysPage } from '../src/pages/api-keys';
import { axeViolations, me, mockFetch, renderAt } from './render';

const PROFILE = '11111111-1111-4111-8111-111111111111';
const key = (over: Record<string, unknown> = {}) => ({
  api_key_id: '22222222-2222-4222-8222-222222222222',
  profile_id: PROFILE,
  name: 'backend',
  key_prefix: 'cst_ab12',
  allowed_cidrs: null,
  created_by: 'u1',
  created_at: '2026-01-01T00:00:00Z',
  revoked_at: null,
  last_used_at: null,
  ...over,
});
const SECRET = 'cst_ab12_SECRETVALUE_0123456789';

function page() {
  return (
    <SessionProvider>
      <ProfileProvider>
        <StepUpProvider>
          <ApiKeysPage />
        </StepUpProvider>
      </ProfileProvider>
    </SessionProvider>
  );
}

afterEach(() => {
  cleanup();
  localStorage.clear();
});

describe('API keys', () => {
  it('shows a created key once, and forgets it after the modal closes', async () => {
    const seen = mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/profiles', () => ({ body: [{ profile_id: PROFILE, name: 'Main', created_at: '' }] })],
      ['GET /admin/v1/api-keys', () => ({ body: { data: [key()], page: 1, page_size: 20, total: 1 } })],
      ['POST /admin/v1/api-keys', () => ({ status: 201, body: { ...key({ name: 'ops' }), api_key: SECRET } })],
    ]);
    renderAt(page());
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: 'Create API key' }));
    const dialog = await screen.findByRole('dialog', { name: 'Create API key' });
    await user.type(within(dialog).getByRole('textbox', { name: /Name/ }), 'ops');
    await user.type(within(dialog).getByRole('textbox', { name: /Allowed CIDRs/ }), '10.0.0.0/8\n192.0.2.7');
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    const shown = await screen.findByRole('dialog', { name: 'Your new API key' });
    expect(within(shown).getByText('Copy it now: it is shown only once')).toBeTruthy();
    expect(within(shown).getByText(SECRET)).toBeTruthy();
    expect(within(shown).getByRole('button', { name: 'Copy API key' })).toBeTruthy();
    expect(await axeViolations()).toEqual([]);
    const post = seen.find((r) => r.method === 'POST');
    expect(await post?.json()).toEqual({
      profile_id: PROFILE,
      name: 'ops',
      allowed_cidrs: ['10.0.0.0/8', '192.0.2.7'],
    });
    await user.click(within(shown).getByRole('button', { name: 'I have copied it' }));
    await waitFor(() => expect(screen.queryByText(SECRET)).toBeNull());
    expect(document.body.innerHTML).not.toContain(SECRET);
    expect(JSON.stringify({ ...localStorage })).not.toContain(SECRET);
  });

  it('asks before revoking, and revokes only after confirmation', async () => {
    const seen = mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/profiles', () => ({ body: [{ profile_id: PROFILE, name: 'Main', created_at: '' }] })],
      ['GET /admin/v1/api-keys', () => ({ body: { data: [key()], page: 1, page_size: 20, total: 1 } })],
      [/^DELETE \/admin\/v1\/api-keys\//, () => ({ status: 204 })],
    ]);
    renderAt(page());
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: 'Revoke backend' }));
    const dialog = await screen.findByRole('dialog', { name: 'Revoke API key?' });
    expect(seen.some((r) => r.method === 'DELETE')).toBe(false);
    await user.click(within(dialog).getByRole('button', { name: 'Revoke key' }));
    await waitFor(() =>
      expect(seen.filter((r) => r.method === 'DELETE').map((r) => new URL(r.url).pathname)).toEqual([
        '/admin/v1/api-keys/22222222-2222-4222-8222-222222222222',
      ]),
    );
  });

  it('shows the problem when the list fails', async () => {
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
      ['GET /admin/v1/profiles', () => ({ body: [{ profile_id: PROFILE, name: 'Main', created_at: '' }] })],
      [
        'GET /admin/v1/api-keys',
        () => ({
          status: 403,
          body: {
            title: 'Your role does not allow this action',
            status: 403,
            code: 'ROLE_FORBIDDEN',
            detail: 'needs ADMIN',
          },
        }),
      ],
    ]);
    renderAt(page());
    const alert = (await screen.findByText('needs ADMIN')).closest('[role="alert"]');
    expect(alert?.textContent).toContain('Your role does not allow this action');
  });
});
