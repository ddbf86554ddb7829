// @vitest-environment jsdom
import { cleanup, configure, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Navigate } from 'react-router';
import { afterEach, describe, expect, it } from 'vitest';
import { TransferDetailPage } from '../src/pages/transfer-detail';
import { ASSET, ETH, P, T1, transfer, W1 } from './fixtures';
import { me, mockFetch, ProfileHarness, renderAt } from './render';

const LOCAL = '99999999-9999-4999-8999-999999999999';
const chain = (id: string, key: string, name: string) => ({
  blockchain_id: id,
  key,
  name,
  family: 'ethereum',
  network: 'mainnet',
  chain_id: '1',
  account_model: 'account',
  testnet: false,
  address_types: [],
  native_asset_id: null,
  enabled: true,
  development: false,
});

type Handler = (req: Request) => { status?: number; body?: unknown } | Promise<{ status?: number; body?: unknown }>;

/** The transfer GET answers from `views` in turn (the last one repeats). */
function routes(role: string, views: unknown[], extra: [string, Handler][] = []) {
  let n = 0;
  return mockFetch([
    ...extra,
    ['GET /admin/v1/me', () => ({ body: me(role) })],
    ['GET /admin/v1/profiles', () => ({ body: [{ profile_id: P, name: 'Main', created_at: '2026-01-01T00:00:00Z' }] })],
    [`GET /admin/v1/profiles/${P}/transfers/${T1}`, () => ({ body: views[Math.min(n++, views.length - 1)] })],
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
      `GET /admin/v1/profiles/${P}/blockchains`,
      () => ({
        body: {
          data: [chain(ETH, 'ethereum-mainnet', 'Ethereum'), chain(LOCAL, 'ethereum-local', 'Ethereum local')],
          page: 1,
          page_size: 200,
          total: 2,
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

function open() {
  renderAt(<Navigate to={`/transfers/${T1}`} />, '/', [
    {
      path: '/transfers/:transferId',
      element: (
        <ProfileHarness>
          <TransferDetailPage />
        </ProfileHarness>
      ),
    },
  ]);
}

const HASH = '0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060';

// jsdom renders Mantine slowly; the default 1 s is tight on a loaded machine
configure({ asyncUtilTimeout: 8000 });

afterEach(() => {
  cleanup();
  localStorage.clear();
});

describe('Transfer detail', () => {
  it('shows the details and timeline, and polls (no EventSource in jsdom) to the new status', async () => {
    const seen = routes('VIEWER', [transfer('PENDING_APPROVAL', null), transfer('REJECTED', 'APPROVAL_EXPIRED')]);
    open();
    expect(await screen.findByRole('heading', { level: 2, name: `Transfer ${T1}` })).toBeTruthy();
    expect(await screen.findByText('1.000000000000000001 ETH')).toBeTruthy();
    expect(screen.getByRole('heading', { level: 3, name: 'Status timeline' })).toBeTruthy();
    expect(screen.getByText('Created')).toBeTruthy();
    expect(screen.getAllByText('PENDING_APPROVAL').length).toBeGreaterThan(0);
    // the poll brings the final status and its sub-status into the badge and the timeline
    await waitFor(() => expect(screen.getAllByText('APPROVAL_EXPIRED').length).toBe(2), { timeout: 8000 });
    expect(screen.getAllByText('REJECTED').length).toBe(2);
    // a Viewer gets no actions
    expect(screen.queryByRole('button', { name: 'Cancel transfer' })).toBeNull();
    // final: the polling stops
    const gets = () => seen.filter((r) => new URL(r.url).pathname.endsWith(T1)).length;
    const after = gets();
    await new Promise((r) => setTimeout(r, 2500));
    expect(gets()).toBe(after);
  }, 30_000);

  it('shows the server timeline, each device decision with its owner, and signing attempts linked to their ceremony', async () => {
    const CER = 'ab'.repeat(24);
    routes('VIEWER', [
      {
        ...transfer('PENDING_SIGNATURE', 'SIGNING_RETRY'),
        approvals_received: 1,
        timeline: [
          { status: 'PENDING', sub_status: null, at: '2026-11-20T10:00:00.000Z' },
          { status: 'PENDING_APPROVAL', sub_status: null, at: '2026-11-20T10:00:01.000Z' },
          { status: 'PENDING_SIGNATURE', sub_status: 'SIGNING_RETRY', at: '2026-11-20T10:05:00.000Z' },
        ],
        approvals: [
          {
            round: 0,
            device_id: 'd1',
            device_name: 'Ada phone',
            user_id: 'u1',
            user_name: 'Ada',
            user_email: 'a@example.com',
            decision: 'APPROVE',
            at: '2026-11-20T10:04:00.000Z',
          },
          {
            round: 0,
            device_id: 'd2',
            device_name: 'Bob phone',
            user_id: null,
            user_name: null,
            user_email: null,
            decision: 'REJECT',
            at: '2026-11-20T10:04:30.000Z',
          },
        ],
        signing: [
          {
            attempt: 1,
            ceremony_id: CER,
            signers: [
              { kind: 'server', id: 's1', name: 'signer-a' },
              { kind: 'device', id: 'd1', name: 'Ada phone' },
            ],
            outcome: 'ABORTED',
            started_at: '2026-11-20T10:05:00.000Z',
            finished_at: '2026-11-20T10:05:30.000Z',
          },
        ],
      },
    ]);
    open();
    const timeline = await screen.findByLabelText('Status timeline');
    // every transition from the server, in order, with its sub-status; no fallback "Created" entry
    expect(within(timeline).getByText('PENDING')).toBeTruthy();
    expect(within(timeline).getByText('PENDING_APPROVAL')).toBeTruthy();
    expect(within(timeline).getByText('PENDING_SIGNATURE')).toBeTruthy();
    expect(within(timeline).getByText('SIGNING_RETRY')).toBeTruthy();
    expect(within(timeline).queryByText('Created')).toBeNull();
    expect(timeline.querySelectorAll('time').length).toBe(3);
    expect(timeline.querySelectorAll('time')[2]!.getAttribute('datetime')).toBe('2026-11-20T10:05:00.000Z');

    const approvals = screen.getByRole('table', { name: 'Device approvals' });
    const rows = within(approvals).getAllByRole('row').slice(1);
    expect(rows.length).toBe(2);
    expect(within(rows[0]!).getByText('Ada phone')).toBeTruthy();
    expect(within(rows[0]!).getByText('Ada')).toBeTruthy();
    expect(within(rows[0]!).getByText('Approved')).toBeTruthy();
    expect(within(rows[1]!).getByText('Bob phone')).toBeTruthy();
    expect(within(rows[1]!).getByText('Rejected')).toBeTruthy();
    expect(within(rows[1]!).getByText('—')).toBeTruthy();

    expect(screen.getByRole('heading', { level: 3, name: 'Signing attempts' })).toBeTruthy();
    const signing = screen.getByRole('table', { name: 'Signing attempts' });
    expect(within(signing).getByText('signer-a (server), Ada phone (device)')).toBeTruthy();
    expect(within(signing).getByText('ABORTED')).toBeTruthy();
    // the accessible name starts with the visible (shortened) id, the full id is in the title
    const link = within(signing).getByRole('link', { name: /: signing ceremony of attempt 1$/ });
    expect(link.getAttribute('aria-label')?.startsWith(link.textContent ?? '?')).toBe(true);
    expect(link.getAttribute('title')).toBe(CER);
    expect(link.getAttribute('href')).toBe(`/admin/v1/signing-ceremonies/${CER}`);
  }, 30_000);

  it('says when there is no device decision or signing attempt yet', async () => {
    routes('VIEWER', [{ ...transfer('PENDING_APPROVAL', null), timeline: [], approvals: [], signing: [] }]);
    open();
    expect(await screen.findByText('No device decisions yet.')).toBeTruthy();
    expect(screen.getByText('No signing attempt yet.')).toBeTruthy();
    expect(screen.queryByRole('table', { name: 'Signing attempts' })).toBeNull();
  }, 30_000);

  it('cancel sends the POST only after the confirmation', async () => {
    const seen = routes(
      'ADMIN',
      [transfer('PENDING_APPROVAL', null)],
      [
        [
          `POST /admin/v1/profiles/${P}/transfers/${T1}/cancel`,
          () => ({ body: transfer('REJECTED', 'CANCELLED_BY_USER') }),
        ],
      ],
    );
    open();
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: 'Cancel transfer' }));
    const dialog = await screen.findByRole('dialog', { name: 'Cancel this transfer?' });
    expect(dialog.textContent).toContain('cannot be undone');
    const posts = () => seen.filter((r) => r.method === 'POST');
    expect(posts()).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Keep transfer' }));
    expect(posts()).toHaveLength(0);
    await user.click(screen.getByRole('button', { name: 'Cancel transfer' }));
    await user.click(
      within(await screen.findByRole('dialog', { name: 'Cancel this transfer?' })).getByRole('button', {
        name: 'Confirm cancellation',
      }),
    );
    await waitFor(() => expect(posts()).toHaveLength(1));
    expect(new URL(posts()[0]!.url).pathname).toBe(`/admin/v1/profiles/${P}/transfers/${T1}/cancel`);
    expect((await screen.findAllByText('CANCELLED_BY_USER')).length).toBeGreaterThan(0);
  });

  it('shows the title and detail of a refused cancel', async () => {
    routes(
      'ADMIN',
      [transfer('PENDING_SIGNATURE', null)],
      [
        [
          `POST /admin/v1/profiles/${P}/transfers/${T1}/cancel`,
          () => ({
            status: 409,
            body: {
              title: 'The transfer is not in a state that allows this action',
              status: 409,
              code: 'TRANSFER_STATE_CONFLICT',
              detail: 'a PENDING_SIGNATURE transfer cannot be cancelled',
            },
          }),
        ],
      ],
    );
    open();
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: 'Cancel transfer' }));
    const dialog = await screen.findByRole('dialog', { name: 'Cancel this transfer?' });
    await user.click(within(dialog).getByRole('button', { name: 'Confirm cancellation' }));
    const alert = await within(dialog).findByRole('alert');
    expect(alert.textContent).toContain('The transfer is not in a state that allows this action');
    expect(alert.textContent).toContain('a PENDING_SIGNATURE transfer cannot be cancelled');
  });

  it('links an Ethereum transaction hash to etherscan, and a local chain hash to nothing', async () => {
    const sent = {
      ...transfer('SENT', null),
      tx_hash: HASH,
      sent_at: '2026-11-20T10:05:00.000Z',
      delivered_at: '2026-11-20T10:07:00.000Z',
    };
    routes('VIEWER', [sent]);
    open();
    const link = await screen.findByRole('link', { name: 'View transaction in block explorer' });
    expect(link.getAttribute('href')).toBe(`https://etherscan.io/tx/${HASH}`);
    expect(link.getAttribute('rel')).toContain('noopener');
    cleanup();
    routes('VIEWER', [{ ...sent, blockchain_id: LOCAL }]);
    open();
    expect(await screen.findByRole('button', { name: 'Copy transaction hash' })).toBeTruthy();
    await screen.findByText('Ethereum local');
    expect(screen.queryByRole('link', { name: 'View transaction in block explorer' })).toBeNull();
  });

  it('fee bump sends the chosen priority for a SENT, unconfirmed transfer', async () => {
    let body: unknown;
    const sent = { ...transfer('SENT', null), tx_hash: HASH, sent_at: '2026-11-20T10:05:00.000Z' };
    routes(
      'ADMIN',
      [sent],
      [
        [
          `POST /admin/v1/profiles/${P}/transfers/${T1}/fee-bump`,
          async (req) => {
            body = await req.json();
            return { body: sent };
          },
        ],
      ],
    );
    open();
    const user = userEvent.setup();
    expect(screen.queryByRole('button', { name: 'Cancel transfer' })).toBeNull();
    await user.click(await screen.findByRole('button', { name: 'Bump fee' }));
    const dialog = await screen.findByRole('dialog', { name: 'Bump the fee' });
    await user.click(within(dialog).getAllByLabelText('Priority')[0]!);
    await user.click(await screen.findByRole('option', { name: 'STANDARD', hidden: true }));
    await user.click(within(dialog).getByRole('button', { name: 'Request fee bump' }));
    await waitFor(() => expect(body).toEqual({ priority: 'STANDARD' }));
  });
});
