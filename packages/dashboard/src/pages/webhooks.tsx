/**
 * Webhooks of the current profile (`/webhooks`, Admin; `adminListWebhooks` …): the registrations
 * (the route answers the whole list, it takes no page parameters), "Register webhook" (URL, event
 * types, description; step-up), "Edit" (URL, event types, description; step-up — the API has
 * no enable/disable field, so stopping a webhook means deleting it), "Delete" (confirmation,
 * step-up), and the notifications of the selected webhook (`?webhook=<id>`; paginated server-side,
 * filtered by status) with "Redeliver" per notification.
 */
import type { Page, Webhook } from '@custodian/coordinator/admin-api-types';
import type { paths } from '@custodian/sdk/api';
import { Button, Group, Modal, MultiSelect, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { api, call } from '../api/client';
import { useProfile, useSession } from '../auth/session';
import { useStepUp } from '../auth/step-up';
import { ProblemAlert, QueryState } from '../components/states';
import { NotificationsPanel } from './webhooks/notifications';

type CreateBody = NonNullable<
  paths['/admin/v1/profiles/{profile_id}/webhooks']['post']['requestBody']
>['content']['application/json'];
/** One event type a webhook may subscribe to (the `adminCreateWebhook` body's enum). */
export type EventType = CreateBody['event_types'][number];

/**
 * The event types of docs/api/openapi.json (`adminCreateWebhook` body), in the document's order.
 * Keyed by type so the compiler checks the list is exactly the document's enum: a type added to
 * or removed from the API fails `tsc` here.
 */
const EVENT_TYPE_SET = {
  TRANSFER_CREATED: true,
  TRANSFER_UPDATED: true,
  TRANSFER_DELIVERED: true,
  TRANSFER_FAILED: true,
  BALANCE_UPDATED: true,
  TRANSACTION_DETECTED: true,
  WALLET_CREATED: true,
  WALLET_UPDATED: true,
  WALLET_DELETED: true,
  POLICY_CREATED: true,
  POLICY_UPDATED: true,
  POLICY_DELETED: true,
  ADDRESS_CREATED: true,
  ADDRESS_UPDATED: true,
  ADDRESS_DELETED: true,
  WALLET_GROUP_CREATED: true,
  WALLET_GROUP_UPDATED: true,
  WALLET_GROUP_DELETED: true,
  WALLET_GROUP_USER_ASSIGNED: true,
  ADDRESS_GROUP_CREATED: true,
  ADDRESS_GROUP_UPDATED: true,
  ADDRESS_GROUP_DELETED: true,
} as const satisfies Record<EventType, true>;
export const EVENT_TYPES = Object.keys(EVENT_TYPE_SET) as EventType[];

const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

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
    queryFn: async () =>
      (
        await call<Page<Webhook>>(
          api.GET('/admin/v1/profiles/{profile_id}/webhooks', {
            params: { path: { profile_id: pid }, query: { page: 1, page_size: 200 } },
          }),
        )
      ).data,
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

      <Modal opened={deleting !== null} onClose={() => setDeleting(null)} title="Delete webhook?">
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
