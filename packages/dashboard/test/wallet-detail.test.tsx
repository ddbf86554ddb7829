// @vitest-environment jsdom
import { cleanup, configure, screen, waitFor, within } from '@testing-library/react';
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
  archived_at: null as string | null,
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
    [`GET /admin/v1/profiles/${P}/wallets/${W1}/deposits`, (req) => deposits(req)],
  ]);
}

const TX = '0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060';
const deposit = (n: number) => ({
  tx_hash: n === 0 ? TX : `0x${String(n).padStart(64, '0')}`,
  blockchain_id: ETH,
  address: ADDR,
  asset_id: 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  asset_symbol: 'ETH',
  amount: n === 0 ? '0.000000000000000001' : '2.5',
  amount_base_units: n === 0 ? '1' : '2500000000000000000',
  block_height: n === 0 ? null : 100,
  confirmations: n === 0 ? 0 : 12,
  status: n === 0 ? 'UNCONFIRMED' : 'CONFIRMED',
  detected_at: '2026-11-20T10:00:00.000Z',
});
/** 21 deposits, served 20 a page as the server pages them. */
function deposits(req: Request): Reply {
  const q = new URL(req.url).searchParams;
  const page = Number(q.get('page') ?? '1');
  const size = Number(q.get('page_size') ?? '50');
  const all = Array.from({ length: 21 }, (_, i) => deposit(i));
  return { body: { data: all.slice((page - 1) * size, page * size), page, page_size: size, total: all.length } };
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

  it('shows the deposits from the server (hash with copy and explorer link, amount as given), paginated server-side', async () => {
    const seen = routes('VIEWER');
    open();
    expect(await screen.findByRole('heading', { level: 3, name: 'Deposits' })).toBeTruthy();
    const table = await screen.findByRole('table', { name: 'Deposits' });
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows.length).toBe(20);
    const first = rows[0]!;
    expect(within(first).getByText(TX)).toBeTruthy();
    expect(within(first).getByRole('button', { name: 'Copy transaction hash' })).toBeTruthy();
    const link = within(first).getByRole('link', { name: `View deposit ${TX} in block explorer` });
    expect(link.getAttribute('href')).toBe(`https://etherscan.io/tx/${TX}`);
    expect(within(first).getByText(ADDR)).toBeTruthy();
    expect(within(first).getByText('0.000000000000000001')).toBeTruthy();
    expect(within(first).getByText('Unconfirmed')).toBeTruthy();
    expect(within(first).getByText('0 confirmations')).toBeTruthy();
    expect(within(rows[1]!).getByText('2.5')).toBeTruthy();
    expect(within(rows[1]!).getByText('Confirmed')).toBeTruthy();
    expect(within(rows[1]!).getByText('12 confirmations')).toBeTruthy();
    const requested = () =>
      seen.filter((r) => new URL(r.url).pathname.endsWith('/deposits')).map((r) => new URL(r.url).search);
    expect(requested()).toEqual(['?page=1&page_size=20']);
    const user = userEvent.setup();
    await user.click(screen.getByRole('button', { name: 'Deposit pages: page 2' }));
    await within(await screen.findByRole('table', { name: 'Deposits' })).findByText(deposit(20).tx_hash);
    expect(requested()).toContain('?page=2&page_size=20');
    expect(within(screen.getByRole('table', { name: 'Deposits' })).getAllByRole('row').length).toBe(2);
  });

  it('an archived wallet shows the Archived badge and only Unarchive; unarchiving brings back Archive', async () => {
    const posts: string[] = [];
    let archivedAt: string | null = '2026-11-21T09:00:00.000Z';
    routes('ADMIN', [
      [
        `GET /admin/v1/profiles/${P}/wallets/${W1}`,
        () => ({ body: { ...wallet(W1, 'Treasury', [ETH]), archived_at: archivedAt } }),
      ],
      [
        `POST /admin/v1/profiles/${P}/wallets/${W1}/unarchive`,
        (req) => {
          posts.push(new URL(req.url).pathname);
          archivedAt = null;
          return { body: { wallet_id: W1, name: 'Treasury', archived_at: null } };
        },
      ],
    ]);
    open();
    expect(await screen.findByRole('heading', { level: 2, name: 'Treasury' })).toBeTruthy();
    expect(screen.getByText('Archived')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Unarchive wallet' })).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Archive wallet' })).toBeNull();
    const user = userEvent.setup();
    await user.click(screen.getByRole('button', { name: 'Unarchive wallet' }));
    expect(await screen.findByRole('button', { name: 'Archive wallet' })).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Unarchive wallet' })).toBeNull();
    expect(screen.queryByText('Archived')).toBeNull();
    expect(posts).toEqual([`/admin/v1/profiles/${P}/wallets/${W1}/unarchive`]);
  });

  it('an active wallet has no Archived badge and only Archive; a deposits error shows the problem', async () => {
    routes('ADMIN', [
      [
        `GET /admin/v1/profiles/${P}/wallets/${W1}/deposits`,
        () => ({ status: 503, body: { title: 'Service unavailable', status: 503, detail: 'database busy' } }),
      ],
    ]);
    open();
    expect(await screen.findByRole('button', { name: 'Archive wallet' })).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Unarchive wallet' })).toBeNull();
    expect(screen.queryByText('Archived')).toBeNull();
    await waitFor(() => expect(document.body.textContent).toContain('database busy'));
    expect(screen.queryByRole('table', { name: 'Deposits' })).toBeNull();
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
