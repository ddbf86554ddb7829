/**
 * The notifications of one webhook (part of the webhooks screen): paginated server-side
 * (`?npage=`, page_size 20), filtered by status (`?status=` PENDING, DELIVERED or FAILED), with
 * event type, status, attempts, last and next attempt, and "Redeliver" per notification
 * (`adminRedeliverNotification`, no step-up).
 */
import type { Notification, Page, Webhook } from '@custodian/coordinator/admin-api-types';
import { Badge, Button, Paper, SegmentedControl, Stack, Table, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useSearchParams } from 'react-router';
import { api, call } from '../../api/client';
import { PAGE_SIZE, Pager, usePageParam } from '../../components/pager';
import { ProblemAlert, QueryState } from '../../components/states';

const STATUS_COLOR: Record<Notification['status'], string> = { PENDING: 'blue', DELIVERED: 'green', FAILED: 'red' };
const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** When the last attempt of `n` ran (its newest attempt's end or start), or null before the first. */
export function lastAttemptAt(n: Notification): string | null {
  const last = [...(n.attempts ?? [])].sort((a, b) => b.attempt - a.attempt)[0];
  return last === undefined ? null : (last.finished_at ?? last.started_at);
}

type StatusFilter = 'ALL' | Notification['status'];

/** The notifications of one webhook: paginated (`?npage=`), filtered by status (`?status=`), with "Redeliver". */
export function NotificationsPanel({ profileId, webhook }: { profileId: string; webhook: Webhook }) {
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
