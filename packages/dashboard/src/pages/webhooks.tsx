/**
 * Webhooks of the current profile (`/webhooks`, Admin; `adminListWebhooks` …): the registrations
 * (the route answers the whole list, it takes no page parameters), "Register webhook" (URL, event
 * types, description; step-up), "Edit" (URL, event types, description; step-up — the API has
 * no enable/disable field, so stopping a webhook means deleting it), "Delete" (confirmation,
 * step-up), and the notifications of the selected webhook (`?webhook=<id>`; paginated server-side,
 * filtered by status) with "Redeliver" per notification.
 */
import type { Notification, Page, Webhook } from '@custodian/coordinator/admin-api-types';
import type { paths } from '@custodian/sdk/api';
import {
  Badge,
  Button,
  Group,
  Modal,
  MultiSelect,
  Paper,
  SegmentedControl,
  Stack,
  Table,
  Text,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { api, call } from '../api/client';
import { useProfile, useSession } from '../auth/session';
import { useStepUp } from '../auth/step-up';
import { PAGE_SIZE, Pager, usePageParam } from '../components/pager';
import { ProblemAlert, QueryState } from '../components/states';

type CreateBody = NonNullable<
  paths['/admin/v1/profiles/{profile_id}/webhooks']['post']['requestBody']
>['content']['application/json'];
/** One event type a webhook may subscribe to (the `adminCreateWebhook` body's enum). */
export type EventType = CreateBody['event_types'][number];

/** The event types of docs/api/openapi.json (`adminCreateWebhook` body), in the document's order. */
export const EVENT_TYPES: readonly EventType[] = [
  'TRANSFER_CREATED',
  'TRANSFER_UPDATED',
  'TRANSFER_DELIVERED',
  'TRANSFER_FAILED',
  'BALANCE_UPDATED',
  'TRANSACTION_DETECTED',
  'WALLET_CREATED',
  'WALLET_UPDATED',
  'WALLET_DELETED',
  'POLICY_CREATED',
  'POLICY_UPDATED',
  'POLICY_DELETED',
  'ADDRESS_CREATED',
  'ADDRESS_UPDATED',
  'ADDRESS_DELETED',
  'WALLET_GROUP_CREATED',
  'WALLET_GROUP_UPDATED',
  'WALLET_GROUP_DELETED',
  'WALLET_GROUP_USER_ASSIGNED',
  'ADDRESS_GROUP_CREATED',
  'ADDRESS_GROUP_UPDATED',
  'ADDRESS_GROUP_DELETED',
];

const STATUS_COLOR: Record<Notification['status'], string> = { PENDING: 'blue', DELIVERED: 'green', FAILED: 'red' };
const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** When the last attempt of `n` ran (its newest attempt's end or start), or null before the first. */
export function lastAttemptAt(n: Notification): string | null {
  const last = [...(n.attempts ?? [])].sort((a, b) => b.attempt - a.attempt)[0];
  return last === undefined ? null : (last.finished_at ?? last.started_at);
}

interface Draft {
  url: string;
  event_types: string[];
  description: string;
}
const EMPTY: Draft = { url: '', event_types: [], description: '' };

/** The webhooks screen. */
export function WebhooksPage() {
  const { profileId } = useProfile();
  const { can } = useSession();
  const stepUp = useStepUp();
  const qc = useQueryClient();
  const [params, setParams] = useSearchParams();
  const selected = params.get('webhook');
  // editing: undefined = closed, null = registering a new one, a webhook = editing it
  const [editing, setEditing] = useState<Webhook | null | undefined>(undefined);
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const [deleting, setDeleting] = useState<Webhook | null>(null);
  const pid = profileId as string;

  const list = useQuery({
    queryKey: ['webhooks', profileId],
    enabled: profileId !== undefined,
    queryFn: () =>
      call<Webhook[]>(api.GET('/admin/v1/profiles/{profile_id}/webhooks', { params: { path: { profile_id: pid } } })),
  });

  const open = (w: Webhook | null) => {
    save.reset();
    setDraft(w === null ? EMPTY : { url: w.url, event_types: w.event_types, description: w.description ?? '' });
    setEditing(w);
  };

  const save = useMutation({
    mutationFn: () => {
      const body = {
        url: draft.url.trim(),
        event_types: draft.event_types as EventType[],
        description: draft.description.trim() === '' ? null : draft.description.trim(),
      };
      return stepUp.run(() =>
        editing
          ? call<Webhook>(
              api.PATCH('/admin/v1/profiles/{profile_id}/webhooks/{webhook_id}', {
                params: { path: { profile_id: pid, webhook_id: editing.webhook_id } },
                body,
              }),
            )
          : call<Webhook>(
              api.POST('/admin/v1/profiles/{profile_id}/webhooks', { params: { path: { profile_id: pid } }, body }),
            ),
      );
    },
    onSuccess: (w) => {
      notifications.show({
        color: 'green',
        message: editing ? `Webhook ${w.url} updated` : `Webhook ${w.url} registered`,
      });
      setEditing(undefined);
      void qc.invalidateQueries({ queryKey: ['webhooks'] });
    },
  });

  const remove = useMutation({
    mutationFn: (w: Webhook) =>
      stepUp.run(() =>
        call(
          api.DELETE('/admin/v1/profiles/{profile_id}/webhooks/{webhook_id}', {
            params: { path: { profile_id: pid, webhook_id: w.webhook_id } },
          }),
        ),
      ),
    onSuccess: (_r, w) => {
      notifications.show({ color: 'green', message: `Webhook ${w.url} deleted` });
      setDeleting(null);
      if (selected === w.webhook_id) select(null);
      void qc.invalidateQueries({ queryKey: ['webhooks'] });
    },
  });

  const select = (id: string | null) =>
    setParams((prev) => {
      const next = new URLSearchParams(prev);
      if (id === null) next.delete('webhook');
      else next.set('webhook', id);
      next.delete('npage');
      next.delete('status');
      return next;
    });

  const current = list.data?.find((w) => w.webhook_id === selected);

  return (
    <Stack>
      <Group justify="space-between" wrap="wrap">
        <Title order={2}>Webhooks</Title>
        {can('adminCreateWebhook') && <Button onClick={() => open(null)}>Register webhook</Button>}
      </Group>
      <QueryState query={list} isEmpty={(d) => d.length === 0} empty="No webhooks registered for this profile.">
        {(d) => (
          <Table.ScrollContainer minWidth={760}>
            <Table striped aria-label="Webhooks">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>URL</Table.Th>
                  <Table.Th>Event types</Table.Th>
                  <Table.Th>Description</Table.Th>
                  <Table.Th>Updated</Table.Th>
                  <Table.Th>Actions</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {d.map((w) => (
                  <Table.Tr
                    key={w.webhook_id}
                    bg={w.webhook_id === selected ? 'var(--mantine-color-blue-light)' : undefined}
                  >
                    <Table.Td style={{ overflowWrap: 'anywhere' }}>{w.url}</Table.Td>
                    <Table.Td>
                      <Text size="sm">{w.event_types.join(', ')}</Text>
                    </Table.Td>
                    <Table.Td>{w.description ?? '—'}</Table.Td>
                    <Table.Td>{when(w.updated_at)}</Table.Td>
                    <Table.Td>
                      <Group gap="xs" wrap="nowrap">
                        <Button
                          size="xs"
                          variant="light"
                          aria-label={`Notifications of ${w.url}`}
                          onClick={() => select(w.webhook_id)}
                        >
                          Notifications
                        </Button>
                        {can('adminUpdateWebhook') && (
                          <Button size="xs" variant="default" aria-label={`Edit ${w.url}`} onClick={() => open(w)}>
                            Edit
                          </Button>
                        )}
                        {can('adminDeleteWebhook') && (
                          <Button
                            size="xs"
                            color="red"
                            variant="light"
                            aria-label={`Delete ${w.url}`}
                            onClick={() => {
                              remove.reset();
                              setDeleting(w);
                            }}
                          >
                            Delete
                          </Button>
                        )}
                      </Group>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryState>

      {current !== undefined && profileId !== undefined && (
        <NotificationsPanel profileId={profileId} webhook={current} />
      )}

      <Modal
        closeButtonProps={{ 'aria-label': 'Close' }}
        opened={editing !== undefined}
        onClose={() => setEditing(undefined)}
        title={editing ? 'Edit webhook' : 'Register webhook'}
      >
        <form
          onSubmit={(e) => {
            e.preventDefault();
            save.mutate();
          }}
        >
          <Stack>
            <TextInput
              label="URL"
              description="HTTPS; the coordinator checks it (plain http only to loopback in development mode)."
              type="url"
              required
              maxLength={2000}
              value={draft.url}
              onChange={(e) => {
                const url = e.currentTarget.value;
                setDraft((d) => ({ ...d, url }));
              }}
              data-autofocus
            />
            <MultiSelect
              label="Event types"
              required
              searchable
              data={[...EVENT_TYPES]}
              value={draft.event_types}
              onChange={(v) => setDraft((d) => ({ ...d, event_types: v }))}
              comboboxProps={{ withinPortal: true }}
            />
            <Textarea
              label="Description"
              maxLength={500}
              value={draft.description}
              onChange={(e) => {
                const description = e.currentTarget.value;
                setDraft((d) => ({ ...d, description }));
              }}
            />
            <ProblemAlert error={save.error} />
            <Group justify="flex-end">
              <Button variant="default" onClick={() => setEditing(undefined)}>
                Cancel
              </Button>
              <Button
                type="submit"
                loading={save.isPending}
                disabled={draft.url.trim() === '' || draft.event_types.length === 0}
              >
                {editing ? 'Save' : 'Register'}
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>

      <Modal
        closeButtonProps={{ 'aria-label': 'Close' }}
        opened={deleting !== null}
        onClose={() => setDeleting(null)}
        title="Delete webhook?"
      >
        {deleting !== null && (
          <Stack>
            <Text size="sm">
              {deleting.url} will receive no more events, and its pending notifications are not delivered. Register it
              again to resume.
            </Text>
            <ProblemAlert error={remove.error} />
            <Group justify="flex-end">
              <Button variant="default" onClick={() => setDeleting(null)}>
                Cancel
              </Button>
              <Button color="red" loading={remove.isPending} onClick={() => remove.mutate(deleting)}>
                Delete webhook
              </Button>
            </Group>
          </Stack>
        )}
      </Modal>
    </Stack>
  );
}

type StatusFilter = 'ALL' | Notification['status'];

/** The notifications of one webhook: paginated (`?npage=`), filtered by status (`?status=`), with "Redeliver". */
function NotificationsPanel({ profileId, webhook }: { profileId: string; webhook: Webhook }) {
  const [params, setParams] = useSearchParams();
  const [page, setPage] = usePageParam('npage');
  const qc = useQueryClient();
  const raw = params.get('status');
  const status: StatusFilter = raw === 'PENDING' || raw === 'DELIVERED' || raw === 'FAILED' ? raw : 'ALL';
  const path = { profile_id: profileId, webhook_id: webhook.webhook_id };

  const list = useQuery({
    queryKey: ['webhook-notifications', profileId, webhook.webhook_id, status, page],
    queryFn: () =>
      call<Page<Notification>>(
        api.GET('/admin/v1/profiles/{profile_id}/webhooks/{webhook_id}/notifications', {
          params: { path, query: { page, page_size: PAGE_SIZE, ...(status === 'ALL' ? {} : { status }) } },
        }),
      ),
  });

  const redeliver = useMutation({
    mutationFn: (n: Notification) =>
      call(
        api.POST('/admin/v1/profiles/{profile_id}/webhooks/{webhook_id}/notifications/{notification_id}/redeliver', {
          params: { path: { ...path, notification_id: n.notification_id } },
        }),
      ),
    onSuccess: (_r, n) => {
      notifications.show({ color: 'green', message: `${n.event_type} queued for redelivery` });
      void qc.invalidateQueries({ queryKey: ['webhook-notifications'] });
    },
  });

  const setStatus = (v: string) =>
    setParams((prev) => {
      const next = new URLSearchParams(prev);
      if (v === 'ALL') next.delete('status');
      else next.set('status', v);
      next.delete('npage');
      return next;
    });

  return (
    <Paper withBorder p="md">
      <Stack>
        <Title order={3} style={{ overflowWrap: 'anywhere' }}>
          Notifications of {webhook.url}
        </Title>
        <SegmentedControl
          aria-label="Notification status"
          value={status}
          onChange={setStatus}
          data={[
            { value: 'ALL', label: 'All' },
            { value: 'PENDING', label: 'Pending' },
            { value: 'DELIVERED', label: 'Delivered' },
            { value: 'FAILED', label: 'Failed' },
          ]}
        />
        <ProblemAlert error={redeliver.error} title="Redelivery failed" />
        <QueryState query={list} isEmpty={(d) => d.total === 0} empty="No notifications match.">
          {(d) => (
            <>
              <Table.ScrollContainer minWidth={760}>
                <Table striped aria-label={`Notifications of ${webhook.url}`}>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Event type</Table.Th>
                      <Table.Th>Status</Table.Th>
                      <Table.Th>Attempts</Table.Th>
                      <Table.Th>Last attempt</Table.Th>
                      <Table.Th>Next attempt</Table.Th>
                      <Table.Th>Last error</Table.Th>
                      <Table.Th>Actions</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {d.data.map((n) => (
                      <Table.Tr key={n.notification_id}>
                        <Table.Td>{n.event_type}</Table.Td>
                        <Table.Td>
                          <Badge color={STATUS_COLOR[n.status]}>{n.status}</Badge>
                        </Table.Td>
                        <Table.Td>{n.attempt_count}</Table.Td>
                        <Table.Td>{when(lastAttemptAt(n))}</Table.Td>
                        <Table.Td>{when(n.next_attempt_at)}</Table.Td>
                        <Table.Td>
                          {n.last_response_code !== null ? `HTTP ${n.last_response_code}` : (n.last_error ?? '—')}
                        </Table.Td>
                        <Table.Td>
                          <Button
                            size="xs"
                            variant="light"
                            aria-label={`Redeliver ${n.event_type} ${n.event_id}`}
                            loading={redeliver.isPending && redeliver.variables?.notification_id === n.notification_id}
                            onClick={() => redeliver.mutate(n)}
                          >
                            Redeliver
                          </Button>
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
              <Pager page={page} total={d.total} onChange={setPage} label="Notifications" />
            </>
          )}
        </QueryState>
      </Stack>
    </Paper>
  );
}
