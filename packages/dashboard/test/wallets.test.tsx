// @vitest-environment jsdom
import { cleanup, configure, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { ReactNode } from 'react';
import { useParams } from 'react-router';
import { afterEach, describe, expect, it } from 'vitest';
import { ProfileProvider, SessionProvider } from '../src/auth/session';
import { StepUpProvider } from '../src/auth/step-up';
import { WalletsPage } from '../src/pages/wallets';
import { me, mockFetch, type Reply, renderAt } from './render';

const P = '11111111-1111-4111-8111-111111111111';
const W1 = '22222222-2222-4222-8222-222222222222';
const W2 = '33333333-3333-4333-8333-333333333333';
const ETH = '44444444-4444-4444-8444-444444444444';
const BTC = '55555555-5555-4555-8555-555555555555';
const DEV = '66666666-6666-4666-8666-666666666666';

function App({ children }: { children: ReactNode }) {
  return (
    <SessionProvider>
      <ProfileProvider>
        <StepUpProvider>{children}</StepUpProvider>
      </ProfileProvider>
    </SessionProvider>
  );
}

function Detail() {
  return <p>detail of {useParams().walletId}</p>;
}

const wallet = (id: string, name: string, chains: string[]) => ({
  wallet_id: id,
  profile_id: P,
  name,
  blockchain_ids: chains,
  created_at: '2026-11-01T10:00:00.000Z',
  addresses: [],
});
const chain = (id: string, key: string, name: string, enabled: boolean) => ({
  blockchain_id: id,
  key,
  name,
  family: key.split('-')[0],
  network: 'mainnet',
  chain_id: null,
  account_model: key.startsWith('bitcoin') ? 'utxo' : 'account',
  testnet: false,
  address_types: [],
  native_asset_id: null,
  enabled,
  development: false,
});

function routes(role: string, extra: [string | RegExp, (req: Request) => Reply | Promise<Reply>][] = []) {
  return mockFetch([
    ...extra,
    ['GET /admin/v1/me', () => ({ body: me(role) })],
    ['GET /admin/v1/profiles', () => ({ body: [{ profile_id: P, name: 'Main', created_at: '2026-01-01T00:00:00Z' }] })],
    [
      `GET /admin/v1/profiles/${P}/wallets`,
      () => ({ body: { data: [{ wallet_id: W1 }], page: 1, page_size: 20, total: 1 } }),
    ],
    [`GET /admin/v1/profiles/${P}/wallets/${W1}`, () => ({ body: wallet(W1, 'Treasury', [ETH]) })],
    [
      `GET /admin/v1/profiles/${P}/blockchains`,
      () => ({
        body: {
          data: [
            chain(ETH, 'ethereum-mainnet', 'Ethereum', true),
            chain(BTC, 'bitcoin-mainnet', 'Bitcoin', true),
            chain(DEV, 'ethereum-local', 'Ethereum local', false),
          ],
          page: 1,
          page_size: 200,
          total: 3,
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

describe('Wallets screen', () => {
  it('lists wallets with name link, networks and page size 20', async () => {
    const seen = routes('VIEWER');
    renderAt(
      <App>
        <WalletsPage />
      </App>,
      '/wallets',
    );
    const table = await screen.findByRole('table', { name: 'Wallets' });
    const link = await within(table).findByRole('link', { name: 'Treasury' });
    expect(link.getAttribute('href')).toBe(`/wallets/${W1}`);
    expect(await within(table).findByText('Ethereum')).toBeTruthy();
    const list = seen.find((r) => new URL(r.url).pathname === `/admin/v1/profiles/${P}/wallets`);
    expect(new URL(list!.url).searchParams.get('page_size')).toBe('20');
  });

  it('a Viewer sees no "Create wallet"', async () => {
    routes('VIEWER');
    renderAt(
      <App>
        <WalletsPage />
      </App>,
      '/wallets',
    );
    await screen.findByRole('table', { name: 'Wallets' });
    expect(screen.queryByRole('button', { name: 'Create wallet' })).toBeNull();
  });

  it('an Admin creates a wallet with name and networks, then lands on its page', async () => {
    let body: unknown;
    routes('ADMIN', [
      [
        `POST /admin/v1/profiles/${P}/wallets`,
        async (req) => {
          body = await req.json();
          return { status: 201, body: wallet(W2, 'Cold', [ETH, BTC]) };
        },
      ],
    ]);
    renderAt(
      <App>
        <WalletsPage />
      </App>,
      '/wallets',
      [{ path: '/wallets/:walletId', element: <Detail /> }],
    );
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: 'Create wallet' }));
    const dialog = await screen.findByRole('dialog', { name: 'Create wallet' });
    await user.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'Cold');
    await user.click(within(dialog).getByLabelText('Networks'));
    // only enabled networks are offered (the dropdown is portalled beside the modal, so `hidden: true`)
    await user.click(await screen.findByRole('option', { name: 'Ethereum', hidden: true }));
    await user.click(await screen.findByRole('option', { name: 'Bitcoin', hidden: true }));
    expect(screen.queryByRole('option', { name: 'Ethereum local', hidden: true })).toBeNull();
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    expect(await screen.findByText(`detail of ${W2}`)).toBeTruthy();
    expect(body).toEqual({ name: 'Cold', blockchain_ids: [ETH, BTC] });
  });

  it('shows the problem when creation fails', async () => {
    routes('ADMIN', [
      [
        `POST /admin/v1/profiles/${P}/wallets`,
        () => ({
          status: 409,
          body: {
            title: 'No master key exists yet; run the master key ceremony first',
            status: 409,
            code: 'NO_MASTER_KEY',
            detail: 'create the master key first',
          },
        }),
      ],
    ]);
    renderAt(
      <App>
        <WalletsPage />
      </App>,
      '/wallets',
    );
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: 'Create wallet' }));
    const dialog = await screen.findByRole('dialog', { name: 'Create wallet' });
    await user.click(within(dialog).getByLabelText('Networks'));
    await user.click(await screen.findByRole('option', { name: 'Ethereum', hidden: true }));
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    const alert = await within(dialog).findByRole('alert');
    await waitFor(() => expect(alert.textContent).toContain('create the master key first'));
    expect(alert.textContent).toContain('No master key exists yet');
  });
});
