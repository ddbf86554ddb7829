// @vitest-environment jsdom
/**
 * Hostile review (issue #24, round 2): the API key "shown once" must be gone from memory once its
 * modal closes (api-keys.tsx header). `create.reset()` detaches the observer only: TanStack Query
 * keeps the finished mutation — with the secret as `state.data` — in the QueryClient's
 * MutationCache until its gcTime (5 min) runs out. Any script in the page (an XSS, a
 * browser extension, React Query devtools) reads it from there. This test FAILS today.
 */
import { cleanup, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { afterEach, describe, expect, it } from 'vitest';
import { createQueryClient, Providers } from '../src/app';
import { ProfileProvider, SessionProvider } from '../src/auth/session';
import { StepUpProvider } from '../src/auth/step-up';
import { ApiKeysPage } from '../src/pages/api-keys';
import { mockFetch, polyfillDom } from './render';

const PROFILE = '11111111-1111-4111-8111-111111111111';
const SECRET = 'cst_ab12_SECRETVALUE_0123456789';
const key = {
  api_key_id: '22222222-2222-4222-8222-222222222222',
  profile_id: PROFILE,
  name: 'ops',
  key_prefix: 'cst_ab12',
  allowed_cidrs: null,
  created_by: 'u1',
  created_at: '2026-01-01T00:00:00Z',
  revoked_at: null,
  last_used_at: null,
};

afterEach(() => {
  cleanup();
  localStorage.clear();
});

describe('review: the API key shown once stays in memory', () => {
  it('after "I have copied it", no part of the query client still holds the secret', async () => {
    mockFetch([
      [
        'GET /admin/v1/me',
        () => ({
          body: {
            user_id: 'u1',
            email: 'a@x.test',
            name: 'Ada',
            role: 'ADMIN',
            totp_enabled: false,
            blocked: false,
            created_at: '2026-01-01T00:00:00Z',
            step_up_expires_at: null,
          },
        }),
      ],
      ['GET /admin/v1/profiles', () => ({ body: [{ profile_id: PROFILE, name: 'Main', created_at: '' }] })],
      ['GET /admin/v1/api-keys', () => ({ body: { data: [], page: 1, page_size: 20, total: 0 } })],
      ['POST /admin/v1/api-keys', () => ({ status: 201, body: { ...key, api_key: SECRET } })],
    ]);
    polyfillDom();
    const client = createQueryClient();
    const router = createMemoryRouter(
      [
        {
          path: '/',
          element: (
            <SessionProvider>
              <ProfileProvider>
                <StepUpProvider>
                  <ApiKeysPage />
                </StepUpProvider>
              </ProfileProvider>
            </SessionProvider>
          ),
        },
      ],
      { initialEntries: ['/'] },
    );
    render(
      <Providers client={client}>
        <RouterProvider router={router} />
      </Providers>,
    );
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: 'Create API key' }));
    const dialog = await screen.findByRole('dialog', { name: 'Create API key' });
    await user.type(within(dialog).getByRole('textbox', { name: /Name/ }), 'ops');
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    const shown = await screen.findByRole('dialog', { name: 'Your new API key' });
    expect(within(shown).getByText(SECRET)).toBeTruthy();
    await user.click(within(shown).getByRole('button', { name: 'I have copied it' }));
    await waitFor(() => expect(screen.queryByText(SECRET)).toBeNull());

    // what a hostile script in the page can read after the modal closed
    const mutations = client
      .getMutationCache()
      .getAll()
      .map((m) => m.state);
    const queries = client
      .getQueryCache()
      .getAll()
      .map((q) => q.state.data);
    expect(JSON.stringify({ mutations, queries })).not.toContain(SECRET);
  });
});
