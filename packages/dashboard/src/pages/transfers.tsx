/**
 * Transfers screen (`/transfers`): the profile's transfers, newest first, paginated on the
 * server, filtered by wallet and status (kept in the URL: `?wallet=<id>&status=<STATUS>`, sent as
 * `wallet_id` / `status`). Amounts are decimal strings in asset units, shown as given.
 */
import type { Page, Transfer, TransferStatus } from '@custodian/coordinator/admin-api-types';
import { Anchor, Badge, Group, Select, SimpleGrid, Stack, Table, Text, Title, Tooltip } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, call } from '../api/client';
import { useProfile } from '../auth/session';
import { PAGE_SIZE, Pager, usePageParam } from '../components/pager';
import { QueryState } from '../components/states';
import { shorten, statusColor, TRANSFER_STATUSES } from './transfers/status';
import { byId, useAssets, useWalletsById, walletName } from './wallets/data';

/** The transfers list with its filters. */
export function TransfersPage() {
  const { profileId } = useProfile();
  const [params, setParams] = useSearchParams();
  const [page, setPage] = usePageParam();
  const walletId = params.get('wallet') ?? undefined;
  const statusParam = params.get('status');
  const status = TRANSFER_STATUSES.find((s) => s === statusParam);
  const setFilter = (name: 'wallet' | 'status', value: string | null) =>
    setParams((prev) => {
      const next = new URLSearchParams(prev);
      if (value) next.set(name, value);
      else next.delete(name);
      next.delete('page');
      return next;
    });
  const list = useQuery({
    queryKey: ['transfers', profileId, walletId, status, page],
    queryFn: () =>
      call<Page<Transfer>>(
        api.GET('/admin/v1/profiles/{profile_id}/transfers', {
          params: {
            path: { profile_id: profileId ?? '' },
            query: {
              ...(walletId ? { wallet_id: walletId } : {}),
              ...(status ? { status } : {}),
              page,
              page_size: PAGE_SIZE,
            },
          },
        }),
      ),
    enabled: profileId !== undefined,
  });
  const walletList = useQuery({
    queryKey: ['wallets', profileId, 'all'],
    queryFn: () =>
      call<Page<{ wallet_id: string }>>(
        api.GET('/admin/v1/profiles/{profile_id}/wallets', {
          params: { path: { profile_id: profileId ?? '' }, query: { page_size: 200 } },
        }),
      ),
    enabled: profileId !== undefined,
  });
  const rowWallets = [...new Set(list.data?.data.map((t) => t.wallet_id) ?? [])];
  const filterWallets = walletList.data?.data.map((w) => w.wallet_id) ?? [];
  const wallets = useWalletsById(profileId, [...new Set([...filterWallets, ...rowWallets])]);
  const assets = byId(useAssets(profileId).data?.data, (a) => a.asset_id);
  const walletOptions = filterWallets.map((id) => ({
    value: id,
    label: wallets.has(id) ? walletName(wallets.get(id)) : id,
  }));
  if (walletId && !filterWallets.includes(walletId)) walletOptions.push({ value: walletId, label: walletId });
  return (
    <Stack>
      <Title order={2}>Transfers</Title>
      <SimpleGrid cols={{ base: 1, sm: 2 }} maw={640}>
        <Select
          label="Wallet"
          placeholder="All wallets"
          data={walletOptions}
          value={walletId ?? null}
          onChange={(v) => setFilter('wallet', v)}
          clearable
          searchable
        />
        <Select
          label="Status"
          placeholder="Any status"
          data={TRANSFER_STATUSES.map((s) => ({ value: s, label: s }))}
          value={status ?? null}
          onChange={(v) => setFilter('status', v as TransferStatus | null)}
          clearable
        />
      </SimpleGrid>
      <QueryState query={list} isEmpty={(d) => d.total === 0} empty="No transfers match.">
        {(d) => (
          <>
            <Table.ScrollContainer minWidth={820}>
              <Table striped highlightOnHover aria-label="Transfers">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Created</Table.Th>
                    <Table.Th>Wallet</Table.Th>
                    <Table.Th ta="right">Amount</Table.Th>
                    <Table.Th>Destination</Table.Th>
                    <Table.Th>Status</Table.Th>
                    <Table.Th>Details</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {d.data.map((t) => (
                    <Table.Tr key={t.transfer_id}>
                      <Table.Td>{new Date(t.created_at).toLocaleString()}</Table.Td>
                      <Table.Td>
                        <Anchor component={Link} to={`/wallets/${t.wallet_id}`}>
                          {wallets.has(t.wallet_id) ? walletName(wallets.get(t.wallet_id)) : shorten(t.wallet_id)}
                        </Anchor>
                      </Table.Td>
                      <Table.Td ta="right" ff="monospace">
                        {t.amount} {assets.get(t.asset_id)?.symbol ?? ''}
                      </Table.Td>
                      <Table.Td>
                        <Tooltip label={t.destination_address}>
                          <Text ff="monospace" size="sm">
                            {shorten(t.destination_address)}
                          </Text>
                        </Tooltip>
                      </Table.Td>
                      <Table.Td>
                        <Group gap={4}>
                          <Badge color={statusColor(t)}>{t.status}</Badge>
                          {t.sub_status && (
                            <Text size="xs" c="dimmed">
                              {t.sub_status}
                            </Text>
                          )}
                        </Group>
                      </Table.Td>
                      <Table.Td>
                        <Anchor
                          component={Link}
                          to={`/transfers/${t.transfer_id}`}
                          aria-label={`Open transfer ${t.transfer_id}`}
                        >
                          Open
                        </Anchor>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager page={page} total={d.total} onChange={setPage} label="Transfer pages" />
          </>
        )}
      </QueryState>
    </Stack>
  );
}
