// @vitest-environment jsdom
import { notifications } from '@mantine/notifications';
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { ProfileProvider, SessionProvider } from '../src/auth/session';
import { StepUpProvider } from '../src/auth/step-up';
import { WebhooksPage } from '../src/pages/webhooks';
import { axeViolations, me, mockFetch, type Reply, renderAt } from './render';

/** A Page envelope of `data` (page 1 of 20 rows). */
const pg = <T,>(data: T[], total = data.length) => ({ data, page: 1, page_size: 20, total });

const PROFILE = '11111111-1111-4111-8111-111111111111';
const HOOK = '33333333-3333-4333-8333-333333333333';
const NOTE = '44444444-4444-4444-8444-444444444444';
const hook = {
  webhook_id: HOOK,
  profile_id: PROFILE,
  url: 'https://hooks.example.com/custodian',
  event_types: ['TRANSFER_CREATED'],
  description: null,
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z',
};
const note = (status: string) => ({
  notification_id: NOTE,
  webhook_id: HOOK,
  event_id: 'ev-1',
  event_type: 'TRANSFER_CREATED',
  status,
  attempt_count: 3,
  next_attempt_at: null,
  last_response_code: 500,
  last_error: null,
  delivered_at: null,
  redeliveries: 0,
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z',
  attempts: [],
});
const base: [string | RegExp, (r: Request) => Reply][] = [
  ['GET /admin/v1/me', () => ({ body: me('ADMIN') })],
  ['GET /admin/v1/profiles', () => ({ body: [{ profile_id: PROFILE, name: 'Main', created_at: '' }] })],
  [`GET /admin/v1/profiles/${PROFILE}/webhooks`, () => ({ body: pg([hook]) })],
];

function page() {
  return (
    <SessionProvider>
      <ProfileProvider>
        <StepUpProvider>
          <WebhooksPage />
        </StepUpProvider>
      </ProfileProvider>
    </SessionProvider>
  );
}

afterEach(() => {
  cleanup();
  notifications.clean();
  localStorage.clear();
});

describe('Webhooks', () => {
  it('registers a webhook with the URL, event types and description', async () => {
    const seen = mockFetch([
      ...base,
      [
        `POST /admin/v1/profiles/${PROFILE}/webhooks`,
        () => ({ status: 201, body: { ...hook, url: 'https://new.example.com/h' } }),
      ],
    ]);
    renderAt(page());
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: 'Register webhook' }));
    const dialog = await screen.findByRole('dialog', { name: 'Register webhook' });
    await user.type(within(dialog).getByRole('textbox', { name: /URL/ }), 'https://new.example.com/h');
    await user.click(within(dialog).getByRole('combobox', { name: /Event types/ }));
    await user.click(await screen.findByRole('option', { name: 'TRANSFER_FAILED', hidden: true }));
    await user.click(await screen.findByRole('option', { name: 'BALANCE_UPDATED', hidden: true }));
    await user.type(within(dialog).getByRole('textbox', { name: 'Description' }), 'ERP');
    await user.click(within(dialog).getByRole('button', { name: 'Register' }));
    await screen.findByText('Webhook https://new.example.com/h registered');
    const post = seen.find((r) => r.method === 'POST');
    expect(await post?.json()).toEqual({
      url: 'https://new.example.com/h',
      event_types: ['TRANSFER_FAILED', 'BALANCE_UPDATED'],
      description: 'ERP',
    });
  });

  it('lists the notifications of a webhook filtered by status, and redelivers one', async () => {
    const seen = mockFetch([
      ...base,
      [
        `GET /admin/v1/profiles/${PROFILE}/webhooks/${HOOK}/notifications`,
        (r) => {
          const s = new URL(r.url).searchParams.get('status');
          return { body: { data: [note(s ?? 'FAILED')], page: 1, page_size: 20, total: 1 } };
        },
      ],
      [
        `POST /admin/v1/profiles/${PROFILE}/webhooks/${HOOK}/notifications/${NOTE}/redeliver`,
        () => ({ status: 202, body: note('PENDING') }),
      ],
    ]);
    renderAt(page());
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: `Notifications of ${hook.url}` }));
    const table = await screen.findByRole('table', { name: `Notifications of ${hook.url}` });
    expect(within(table).getByText('FAILED')).toBeTruthy();
    expect(within(table).getByText('HTTP 500')).toBeTruthy();
    expect(await axeViolations()).toEqual([]);
    await user.click(screen.getByRole('radio', { name: 'Delivered' }));
    await waitFor(() => expect(seen.some((r) => new URL(r.url).searchParams.get('status') === 'DELIVERED')).toBe(true));
    const list = seen.find((r) => r.url.includes('/notifications?'));
    expect(new URL(list?.url ?? '').searchParams.get('page_size')).toBe('20');
    await user.click(await screen.findByRole('button', { name: 'Redeliver TRANSFER_CREATED ev-1' }));
    await screen.findByText('TRANSFER_CREATED queued for redelivery');
    expect(seen.filter((r) => r.method === 'POST').map((r) => new URL(r.url).pathname)).toEqual([
      `/admin/v1/profiles/${PROFILE}/webhooks/${HOOK}/notifications/${NOTE}/redeliver`,
    ]);
  });

  it('asks before deleting a webhook', async () => {
    const seen = mockFetch([
      ...base,
      [`DELETE /admin/v1/profiles/${PROFILE}/webhooks/${HOOK}`, () => ({ status: 204 })],
    ]);
    renderAt(page());
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: `Delete ${hook.url}` }));
    const dialog = await screen.findByRole('dialog', { name: 'Delete webhook?' });
    expect(seen.some((r) => r.method === 'DELETE')).toBe(false);
    await user.click(within(dialog).getByRole('button', { name: 'Delete webhook' }));
    await waitFor(() => expect(seen.some((r) => r.method === 'DELETE')).toBe(true));
  });
});
