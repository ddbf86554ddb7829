/**
 * Master key screen (`/master-keys`): the master keys (`GET /admin/v1/master-keys`; one card each,
 * with the Admin's lifecycle actions — pages/master-keys/key.tsx), "Create master key" (Admin;
 * pages/master-keys/create.tsx), the live "Ceremony progress" panel of the ceremony in `?ceremony=`
 * (pages/master-keys/ceremony.tsx), and the recent ceremonies (`GET /admin/v1/ceremonies`, newest
 * first; the route answers the whole list, so the table pages it in the page, 20 rows, `?cpage=`).
 */
import type { Ceremony, MasterKey } from '@custodian/coordinator/admin-api-types';
import { Badge, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { api, call } from '../api/client';
import { useSession } from '../auth/session';
import { PAGE_SIZE, Pager, usePageParam } from '../components/pager';
import { QueryState } from '../components/states';
import { CEREMONY_COLOR, CeremonyPanel } from './master-keys/ceremony';
import { CreateMasterKeyModal } from './master-keys/create';
import { MasterKeyCard, short } from './master-keys/key';
import { recordedParties } from './master-keys/parties';

/** Recent ceremonies, paged in the page. */
function Ceremonies({ onShow }: { onShow: (id: string) => void }) {
  const ceremonies = useQuery({
    queryKey: ['ceremonies'],
    queryFn: () => call<Ceremony[]>(api.GET('/admin/v1/ceremonies')),
  });
  const [page, setPage] = usePageParam('cpage');
  return (
    <Stack gap="xs">
      <Title order={3}>Recent ceremonies</Title>
      <QueryState query={ceremonies} isEmpty={(d) => d.length === 0} empty="No ceremony has run yet.">
        {(list) => (
          <>
            <Table.ScrollContainer minWidth={760}>
              <Table aria-label="Recent ceremonies" striped>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Kind</Table.Th>
                    <Table.Th>Status</Table.Th>
                    <Table.Th>k of n</Table.Th>
                    <Table.Th>Started</Table.Th>
                    <Table.Th>Outcome</Table.Th>
                    <Table.Th>Details</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {list.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE).map((c) => (
                    <Table.Tr key={c.ceremony_id}>
                      <Table.Td>{c.kind}</Table.Td>
                      <Table.Td>
                        <Badge color={CEREMONY_COLOR[c.status] ?? 'gray'} variant="light">
                          {c.status}
                        </Badge>
                      </Table.Td>
                      <Table.Td>
                        {c.threshold} of {recordedParties(c.parties).length}
                      </Table.Td>
                      <Table.Td>{c.started_at ? new Date(c.started_at).toLocaleString() : '—'}</Table.Td>
                      <Table.Td>{c.outcome ?? '—'}</Table.Td>
                      <Table.Td>
                        <Button
                          size="xs"
                          variant="subtle"
                          onClick={() => onShow(c.ceremony_id)}
                          aria-label={`Show ceremony ${short(c.ceremony_id)}`}
                        >
                          Show
                        </Button>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager page={page} total={list.length} onChange={setPage} label="Ceremonies" />
          </>
        )}
      </QueryState>
    </Stack>
  );
}

/** The Master key screen (every role reads it; only an Admin sees the actions). */
export function MasterKeysPage() {
  const { can } = useSession();
  const keys = useQuery({
    queryKey: ['master-keys'],
    queryFn: () => call<MasterKey[]>(api.GET('/admin/v1/master-keys')),
  });
  const [params, setParams] = useSearchParams();
  const ceremonyId = params.get('ceremony');
  const [creating, setCreating] = useState(false);
  const show = (id: string) =>
    setParams((prev) => {
      const next = new URLSearchParams(prev);
      next.set('ceremony', id);
      return next;
    });
  return (
    <Stack>
      <Group justify="space-between" wrap="wrap">
        <Title order={2}>Master key</Title>
        {can('adminStartMasterKeyCeremony') && <Button onClick={() => setCreating(true)}>Create master key</Button>}
      </Group>
      {ceremonyId !== null && <CeremonyPanel key={ceremonyId} ceremonyId={ceremonyId} />}
      <QueryState
        query={keys}
        isEmpty={(d) => d.length === 0}
        empty={
          <Text span c="dimmed">
            No master key yet. An Admin creates it with at least two approved phones and the server signers.
          </Text>
        }
      >
        {(list) => (
          <Stack>
            {list.map((mk) => (
              <MasterKeyCard key={mk.master_key_id} mk={mk} onShowCeremony={show} />
            ))}
          </Stack>
        )}
      </QueryState>
      <Ceremonies onShow={show} />
      {creating && <CreateMasterKeyModal onClose={() => setCreating(false)} onStarted={show} />}
    </Stack>
  );
}
