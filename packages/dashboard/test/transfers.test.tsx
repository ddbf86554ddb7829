// @vitest-environment jsdom
import { cleanup, configure, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { TransfersPage } from '../src/pages/transfers';
import { ASSET, ETH, P, T1, transfer, W1 } from './fixtures';
import { me, mockFetch, ProfileHarness, renderAt } from './render';

function routes() {
  return mockFetch([
    ['GET /admin/v1/me', () => ({ body: me('VIEWER') })],
    ['GET /admin/v1/profiles', () => ({ body: [{ profile_id: P, name: 'Main', created_at: '2026-01-01T00:00:00Z' }] })],
    [
      `GET /admin/v1/profiles/${P}/transfers`,
      (req) => {
        const s = new URL(req.url).searchParams.get('status');
        const t = s === 'REJECTED' ? transfer('REJECTED', 'CANCELLED_BY_USER') : transfer('PENDING_APPROVAL', null);
        return { body: { data: [t], page: 1, page_size: 20, total: 1 } };
      },
    ],
    [
      `GET /admin/v1/profiles/${P}/wallets`,
      () => ({ body: { data: [{ wallet_id: W1 }], page: 1, page_size: 200, total: 1 } }),
    ],
    [
      `GET /admin/v1/profiles/${P}/wallets/${W1}`,
      () => ({
        body: {
          wallet_id: W1,
          profile_id: P,
          name: 'Treasury',
          blockchain_ids: [ETH],
          created_at: '2026-11-01T10:00:00.000Z',
          addresses: [],
        },
      }),
    ],
    [
      `GET /admin/v1/profiles/${P}/assets`,
      () => ({
        body: {
          data: [
            {
              asset_id: ASSET,
              symbol: 'ETH',
              name: 'Ether',
              decimals: 18,
              blockchain: 'ethereum-mainnet',
              blockchain_id: ETH,
              kind: 'native',
              contract_address: null,
            },
          ],
          page: 1,
          page_size: 200,
          total: 1,
        },
      }),
    ],
  ]);
}

// jsdom renders Mantine slowly; the default 1 s is tight on a loaded machine
configure({ asyncUtilTimeout: 8000 });

afterEach(() => {
  cleanup();
  localStorage.clear();
});

const transferCalls = (seen: Request[]) =>
  seen
    .filter((r) => new URL(r.url).pathname === `/admin/v1/profiles/${P}/transfers`)
    .map((r) => new URL(r.url).searchParams);

describe('Transfers screen', () => {
  it('shows amount as the decimal string given, wallet name, status and a link to the detail', async () => {
    routes();
    renderAt(
      <ProfileHarness>
        <TransfersPage />
      </ProfileHarness>,
      '/transfers',
    );
    const table = await screen.findByRole('table', { name: 'Transfers' });
    expect(await within(table).findByText('1.000000000000000001 ETH')).toBeTruthy();
    expect(await within(table).findByRole('link', { name: 'Treasury' })).toBeTruthy();
    expect(within(table).getByText('PENDING_APPROVAL')).toBeTruthy();
    expect(
      within(table)
        .getByRole('link', { name: `Open transfer ${T1}` })
        .getAttribute('href'),
    ).toBe(`/transfers/${T1}`);
  });

  it('the Status filter puts status= in the request and shows the filtered rows', async () => {
    const seen = routes();
    renderAt(
      <ProfileHarness>
        <TransfersPage />
      </ProfileHarness>,
      '/transfers',
    );
    await screen.findByRole('table', { name: 'Transfers' });
    expect(transferCalls(seen)[0]?.get('status')).toBeNull();
    const user = userEvent.setup();
    await user.click(screen.getByPlaceholderText('Any status'));
    await user.click(await screen.findByRole('option', { name: 'REJECTED', hidden: true }));
    await waitFor(() => expect(transferCalls(seen).some((q) => q.get('status') === 'REJECTED')).toBe(true));
    expect(await screen.findByText('CANCELLED_BY_USER')).toBeTruthy();
    expect(transferCalls(seen).at(-1)?.get('page_size')).toBe('20');
  });

  it('reads the filters from the URL (wallet_id and status sent)', async () => {
    const seen = routes();
    renderAt(
      <ProfileHarness>
        <TransfersPage />
      </ProfileHarness>,
      `/transfers?wallet=${W1}&status=REJECTED`,
    );
    await screen.findByText('CANCELLED_BY_USER');
    const q = transferCalls(seen)[0];
    expect(q?.get('wallet_id')).toBe(W1);
    expect(q?.get('status')).toBe('REJECTED');
  });

  it('shows the problem of a failed list', async () => {
    mockFetch([
      ['GET /admin/v1/me', () => ({ body: me('VIEWER') })],
      [
        'GET /admin/v1/profiles',
        () => ({ body: [{ profile_id: P, name: 'Main', created_at: '2026-01-01T00:00:00Z' }] }),
      ],
      [
        `GET /admin/v1/profiles/${P}/transfers`,
        () => ({
          status: 403,
          body: { title: 'Your role does not allow this action', status: 403, code: 'ROLE_FORBIDDEN', detail: 'nope' },
        }),
      ],
      [/^GET /, () => ({ body: { data: [], page: 1, page_size: 200, total: 0 } })],
    ]);
    renderAt(
      <ProfileHarness>
        <TransfersPage />
      </ProfileHarness>,
      '/transfers',
    );
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('Your role does not allow this action');
    expect(alert.textContent).toContain('nope');
  });
});
