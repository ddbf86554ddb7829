/**
 * Wallets screen (`/wallets`): the profile's wallets, paginated on the server (the list answers
 * ids only, so each row reads its wallet: name, networks, creation time), and — for roles that
 * may (`adminCreateWallet`, Admin) — "Create wallet": a name and one or more enabled networks;
 * the wallet's deposit addresses exist at once, so the screen goes to its detail page.
 */
import type { Page, Wallet } from '@custodian/coordinator/admin-api-types';
import { Anchor, Badge, Button, Group, Modal, MultiSelect, Stack, Table, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, call } from '../api/client';
import { useProfile, useSession } from '../auth/session';
import { PAGE_SIZE, Pager, usePageParam } from '../components/pager';
import { ProblemAlert, QueryState } from '../components/states';
import { byId, useBlockchains, useWalletsById, walletKey, walletName } from './wallets/data';

/** The wallets list with the create dialog. */
export function WalletsPage() {
  const { profileId } = useProfile();
  const { can } = useSession();
  const [page, setPage] = usePageParam();
  const [creating, setCreating] = useState(false);
  const list = useQuery({
    queryKey: ['wallets', profileId, page],
    queryFn: () =>
      call<Page<{ wallet_id: string }>>(
        api.GET('/admin/v1/profiles/{profile_id}/wallets', {
          params: { path: { profile_id: profileId ?? '' }, query: { page, page_size: PAGE_SIZE } },
        }),
      ),
    enabled: profileId !== undefined,
  });
  const ids = list.data?.data.map((w) => w.wallet_id) ?? [];
  const wallets = useWalletsById(profileId, ids);
  const chains = byId(useBlockchains(profileId).data?.data, (b) => b.blockchain_id);
  return (
    <Stack>
      <Group justify="space-between" wrap="wrap">
        <Title order={2}>Wallets</Title>
        {can('adminCreateWallet') && <Button onClick={() => setCreating(true)}>Create wallet</Button>}
      </Group>
      <QueryState query={list} isEmpty={(d) => d.total === 0} empty="No wallets yet.">
        {(d) => (
          <>
            <Table.ScrollContainer minWidth={640}>
              <Table striped highlightOnHover aria-label="Wallets">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Networks</Table.Th>
                    <Table.Th>Created</Table.Th>
                    <Table.Th>State</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {d.data.map(({ wallet_id }) => {
                    const w = wallets.get(wallet_id) as (Wallet & { archived_at?: string | null }) | undefined;
                    return (
                      <Table.Tr key={wallet_id}>
                        <Table.Td>
                          <Anchor component={Link} to={`/wallets/${wallet_id}`}>
                            {w ? walletName(w) : wallet_id}
                          </Anchor>
                        </Table.Td>
                        <Table.Td>
                          <Group gap={4}>
                            {w?.blockchain_ids.map((b) => (
                              <Badge key={b} variant="light" size="sm">
                                {chains.get(b)?.name ?? b}
                              </Badge>
                            ))}
                          </Group>
                        </Table.Td>
                        <Table.Td>{w ? new Date(w.created_at).toLocaleString() : '…'}</Table.Td>
                        <Table.Td>
                          {w?.archived_at ? (
                            <Badge color="gray">Archived</Badge>
                          ) : (
                            <Badge color="green" variant="light">
                              Active
                            </Badge>
                          )}
                        </Table.Td>
                      </Table.Tr>
                    );
                  })}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager page={page} total={d.total} onChange={setPage} label="Wallet pages" />
          </>
        )}
      </QueryState>
      {profileId !== undefined && (
        <CreateWalletModal profileId={profileId} opened={creating} onClose={() => setCreating(false)} />
      )}
    </Stack>
  );
}

/** "Create wallet" dialog: `POST …/wallets` with `{ name?, blockchain_ids }`, then the wallet's page. */
function CreateWalletModal({
  profileId,
  opened,
  onClose,
}: {
  profileId: string;
  opened: boolean;
  onClose: () => void;
}) {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const chains = useBlockchains(profileId);
  const form = useForm({
    initialValues: { name: '', networks: [] as string[] },
    validate: {
      name: (v) => (v.trim().length > 200 ? 'At most 200 characters' : null),
      networks: (v) => (v.length === 0 ? 'Choose at least one network' : null),
    },
  });
  const create = useMutation({
    mutationFn: (v: { name: string; networks: string[] }) =>
      call<Wallet>(
        api.POST('/admin/v1/profiles/{profile_id}/wallets', {
          params: { path: { profile_id: profileId } },
          body: { ...(v.name.trim() ? { name: v.name.trim() } : {}), blockchain_ids: v.networks },
        }),
      ),
    onSuccess: (w) => {
      qc.setQueryData(walletKey(profileId, w.wallet_id), w);
      void qc.invalidateQueries({ queryKey: ['wallets', profileId] });
      notifications.show({ color: 'green', message: `Wallet ${walletName(w)} created` });
      form.reset();
      onClose();
      navigate(`/wallets/${w.wallet_id}`);
    },
  });
  const options = (chains.data?.data ?? [])
    .filter((b) => b.enabled !== false)
    .map((b) => ({ value: b.blockchain_id, label: b.name }));
  return (
    <Modal opened={opened} onClose={onClose} title="Create wallet">
      <form onSubmit={form.onSubmit((v) => create.mutate(v))}>
        <Stack>
          <TextInput label="Name" data-autofocus {...form.getInputProps('name')} />
          <MultiSelect
            label="Networks"
            description="Each network gets a deposit address at once."
            data={options}
            searchable
            nothingFoundMessage={chains.isPending ? 'Loading…' : 'No enabled network'}
            {...form.getInputProps('networks')}
          />
          <ProblemAlert error={chains.error} />
          <ProblemAlert error={create.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Close
            </Button>
            <Button type="submit" loading={create.isPending}>
              Create
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
