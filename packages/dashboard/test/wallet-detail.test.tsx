// @vitest-environment jsdom
import { cleanup, configure, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { ReactNode } from 'react';
import { Navigate } from 'react-router';
import { afterEach, describe, expect, it } from 'vitest';
import { ProfileProvider, SessionProvider } from '../src/auth/session';
import { StepUpProvider } from '../src/auth/step-up';
import { WalletDetailPage } from '../src/pages/wallet-detail';
import { me, mockFetch, type Reply, renderAt } from './render';

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

const ADDR = '0x52908400098527886E0F7030069857D2E4169EE7';
const A1 = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';

function routes(role: string, extra: [string | RegExp, (req: Request) => Reply | Promise<Reply>][] = []) {
  return mockFetch([
    ...extra,
    ['GET /admin/v1/me', () => ({ body: me(role) })],
    ['GET /admin/v1/profiles', () => ({ body: [{ profile_id: P, name: 'Main', created_at: '2026-01-01T00:00:00Z' }] })],
    [`GET /admin/v1/profiles/${P}/wallets/${W1}`, () => ({ body: wallet(W1, 'Treasury', [ETH]) })],
    [
      `GET /admin/v1/profiles/${P}/wallets/${W1}/addresses`,
      () => ({
        body: {
          data: [
            {
              address_id: A1,
              wallet_id: W1,
              blockchain_id: ETH,
              address: ADDR,
              address_type: 'eoa',
              address_index: 0,
              derivation_path: 'm/44/60/0/0/0',
              label: 'Hot intake',
              archived_at: null,
            },
          ],
          page: 1,
          page_size: 20,
          total: 1,
        },
      }),
    ],
    [
      `GET /admin/v1/profiles/${P}/wallets/${W1}/balances`,
      () => ({
        body: {
          data: [
            {
              wallet_id: W1,
              blockchain_id: ETH,
              asset_id: 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
              symbol: 'ETH',
              decimals: 18,
              amount: '12345678901234.000000000000000001',
              amount_base_units: '12345678901234000000000000000001',
              updated_at: '2026-11-20T10:00:00.000Z',
            },
          ],
          page: 1,
          page_size: 20,
          total: 1,
        },
      }),
    ],
    [
      `GET /admin/v1/profiles/${P}/blockchains`,
      () => ({ body: { data: [chain(ETH, 'ethereum-mainnet', 'Ethereum', true)], page: 1, page_size: 200, total: 1 } }),
    ],
  ]);
}

function open() {
  renderAt(<Navigate to={`/wallets/${W1}`} />, '/', [
    {
      path: '/wallets/:walletId',
      element: (
        <App>
          <WalletDetailPage />
        </App>
      ),
    },
  ]);
}

// jsdom renders Mantine slowly; the default 1 s is tight on a loaded machine
configure({ asyncUtilTimeout: 8000 });

afterEach(() => {
  cleanup();
  localStorage.clear();
});

describe('Wallet detail', () => {
  it('shows the name, addresses (copy, QR) and balances exactly as the server gave them', async () => {
    routes('VIEWER');
    open();
    expect(await screen.findByRole('heading', { level: 2, name: 'Treasury' })).toBeTruthy();
    const addresses = await screen.findByRole('table', { name: 'Addresses' });
    expect(within(addresses).getByText(ADDR)).toBeTruthy();
    expect(within(addresses).getByText('Hot intake')).toBeTruthy();
    expect(within(addresses).getByRole('button', { name: 'Copy address' })).toBeTruthy();
    const balances = await screen.findByRole('table', { name: 'Balances' });
    // 33 significant digits: a JS number would have rounded this
    expect(within(balances).getByText('12345678901234.000000000000000001')).toBeTruthy();
    // a Viewer gets no wallet actions
    expect(screen.queryByRole('button', { name: 'Rename' })).toBeNull();
    expect(screen.queryByRole('button', { name: 'Archive wallet' })).toBeNull();
    const user = userEvent.setup();
    await user.click(within(addresses).getByRole('button', { name: 'Show QR code' }));
    const dialog = await screen.findByRole('dialog', { name: 'Deposit address' });
    expect(await within(dialog).findByRole('img', { name: `QR code of ${ADDR}` })).toBeTruthy();
  });

  it('an Admin archives only after confirming, and sees the problem when refused', async () => {
    const posts: string[] = [];
    routes('ADMIN', [
      [
        `POST /admin/v1/profiles/${P}/wallets/${W1}/archive`,
        (req) => {
          posts.push(new URL(req.url).pathname);
          return {
            status: 409,
            body: {
              title: 'The request conflicts with the current state',
              status: 409,
              code: 'CONFLICT',
              detail: 'wallet is busy',
            },
          };
        },
      ],
    ]);
    open();
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: 'Archive wallet' }));
    const dialog = await screen.findByRole('dialog', { name: 'Archive this wallet?' });
    expect(dialog.textContent).toContain('takes no new transfers');
    expect(posts).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Archive' }));
    const alert = await within(dialog).findByRole('alert');
    expect(alert.textContent).toContain('The request conflicts with the current state');
    expect(alert.textContent).toContain('wallet is busy');
    expect(posts).toEqual([`/admin/v1/profiles/${P}/wallets/${W1}/archive`]);
  });

  it('an Admin renames the wallet (PATCH with the new name)', async () => {
    let body: unknown;
    routes('ADMIN', [
      [
        `PATCH /admin/v1/profiles/${P}/wallets/${W1}`,
        async (req) => {
          body = await req.json();
          return { body: { ...wallet(W1, 'Reserve', [ETH]) } };
        },
      ],
    ]);
    open();
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: 'Rename' }));
    const dialog = await screen.findByRole('dialog', { name: 'Rename wallet' });
    const input = within(dialog).getByRole('textbox', { name: /Wallet name/ });
    await user.clear(input);
    await user.type(input, 'Reserve');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    expect(await screen.findByRole('heading', { level: 2, name: 'Reserve' })).toBeTruthy();
    expect(body).toEqual({ name: 'Reserve' });
  });
});
