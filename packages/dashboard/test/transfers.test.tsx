// @vitest-environment jsdom
import { cleanup, configure, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { ReactNode } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { ProfileProvider, SessionProvider } from '../src/auth/session';
import { StepUpProvider } from '../src/auth/step-up';
import { TransfersPage } from '../src/pages/transfers';
import { me, mockFetch, renderAt } from './render';

const P = '11111111-1111-4111-8111-111111111111';
const W1 = '22222222-2222-4222-8222-222222222222';
const ETH = '44444444-4444-4444-8444-444444444444';

function App({ children }: { children: ReactNode }) {
  return (
    <SessionProvider>
      <ProfileProvider>
        <StepUpProvider>{children}</StepUpProvider>
      </ProfileProvider>
    </SessionProvider>
  );
}

const T1 = '77777777-7777-4777-8777-777777777777';
const ASSET = '88888888-8888-4888-8888-888888888888';

const transfer = (status: string, sub: string | null) => ({
  transfer_id: T1,
  profile_id: P,
  wallet_id: W1,
  asset_id: ASSET,
  blockchain_id: ETH,
  source_address: '0x1111111111111111111111111111111111111111',
  destination_address: '0xabcdefabcdefabcdefabcdefabcdefabcdef1234',
  amount: '1.000000000000000001',
  amount_base_units: '1000000000000000001',
  max_fee: '0.01',
  max_fee_base_units: '10000000000000000',
  fee_currency: 'ETH',
  external_id: null,
  status,
  sub_status: sub,
  policy_id: null,
  policy_version: null,
  approvals_required: 1,
  approvals_received: 0,
  approval_deadline: null,
  tx_hash: null,
  fee_bump: null,
  created_at: '2026-11-20T10:00:00.000Z',
  updated_at: '2026-11-20T10:00:00.000Z',
  sent_at: null,
  delivered_at: null,
});

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
      <App>
        <TransfersPage />
      </App>,
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
      <App>
        <TransfersPage />
      </App>,
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
      <App>
        <TransfersPage />
      </App>,
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
      <App>
        <TransfersPage />
      </App>,
      '/transfers',
    );
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('Your role does not allow this action');
    expect(alert.textContent).toContain('nope');
  });
});
