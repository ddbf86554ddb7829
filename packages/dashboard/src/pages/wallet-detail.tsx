/**
 * Wallet detail (`/wallets/:walletId`): the wallet's name and networks; its addresses (all of
 * them, archived included, paginated on the server; each copyable and as a QR code); its balances
 * per asset (`amount` a decimal string in asset units, shown exactly as the server gave it — no
 * JS number in between); its deposits (`GET …/deposits`: the incoming transactions the chain
 * watchers detected, newest first, paginated on the server; amount a decimal string shown as
 * given); the Archived badge from `archived_at`; and for Admins rename, archive (step-up) or
 * unarchive — only the one that applies.
 *
 * Over 400 lines because it is one screen of four server-paginated sections (addresses, balances,
 * deposits) and the Admin actions, each a small component sharing the wallet's query key.
 */
import type {
  AdminWallet,
  Balance,
  Deposit,
  LabelledAddress,
  Page,
  Wallet,
  WalletArchive,
} from '@custodian/coordinator/admin-api-types';
import { Anchor, Badge, Button, Group, Modal, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { api, call } from '../api/client';
import { useProfile, useSession } from '../auth/session';
import { useStepUp } from '../auth/step-up';
import { CopyValue, QrCode } from '../components/copy';
import { PagedTable } from '../components/paged-table';
import { PAGE_SIZE, Pager, usePageParam } from '../components/pager';
import { ProblemAlert, QueryState } from '../components/states';
import { explorerUrl } from './transfers/status';
import { byId, type DirectoryBlockchain, fetchWallet, useBlockchains, walletKey, walletName } from './wallets/data';

type WalletWithState = AdminWallet;

/** The wallet page. */
export function WalletDetailPage() {
  const { walletId = '' } = useParams();
  const { profileId } = useProfile();
  const wallet = useQuery({
    queryKey: walletKey(profileId, walletId),
    queryFn: () => fetchWallet(profileId ?? '', walletId),
    enabled: profileId !== undefined,
  });
  return (
    <QueryState query={wallet}>
      {(w) => (profileId === undefined ? null : <WalletView profileId={profileId} wallet={w} />)}
    </QueryState>
  );
}

function WalletView({ profileId, wallet }: { profileId: string; wallet: WalletWithState }) {
  const { can } = useSession();
  const chains = byId(useBlockchains(profileId).data?.data, (b) => b.blockchain_id);
  return (
    <Stack gap="lg">
      <Stack gap={4}>
        <Group justify="space-between" wrap="wrap">
          <Title order={2} style={{ overflowWrap: 'anywhere' }}>
            {walletName(wallet)}
          </Title>
          {can('adminRenameWallet') && <WalletActions profileId={profileId} wallet={wallet} />}
        </Group>
        <Group gap={4}>
          {wallet.blockchain_ids.map((b) => (
            <Badge key={b} variant="light">
              {chains.get(b)?.name ?? b}
            </Badge>
          ))}
          {wallet.archived_at && <Badge color="gray">Archived</Badge>}
        </Group>
        <Text size="sm" c="dimmed">
          Created {new Date(wallet.created_at).toLocaleString()} ·{' '}
          <Anchor component={Link} to={`/transfers?wallet=${wallet.wallet_id}`} size="sm" underline="always">
            Transfers of this wallet
          </Anchor>
        </Text>
      </Stack>
      <Addresses profileId={profileId} walletId={wallet.wallet_id} chainName={(id) => chains.get(id)?.name ?? id} />
      <Balances profileId={profileId} walletId={wallet.wallet_id} chainName={(id) => chains.get(id)?.name ?? id} />
      <Deposits profileId={profileId} walletId={wallet.wallet_id} chain={(id) => chains.get(id)} />
    </Stack>
  );
}

/** Rename, archive and unarchive (Admin). Archive needs a fresh step-up. */
function WalletActions({ profileId, wallet }: { profileId: string; wallet: WalletWithState }) {
  const qc = useQueryClient();
  const { run } = useStepUp();
  const [renaming, setRenaming] = useState(false);
  const [archiving, setArchiving] = useState(false);
  const [name, setName] = useState(wallet.name ?? '');
  const archivedAt = wallet.archived_at;
  const key = walletKey(profileId, wallet.wallet_id);
  const path = { profile_id: profileId, wallet_id: wallet.wallet_id };
  const rename = useMutation({
    mutationFn: () =>
      run(() =>
        call<Wallet>(
          api.PATCH('/admin/v1/profiles/{profile_id}/wallets/{wallet_id}', {
            params: { path },
            body: { name: name.trim() === '' ? null : name.trim() },
          }),
        ),
      ),
    onSuccess: (w) => {
      qc.setQueryData<WalletWithState>(key, (old) => (old ? { ...old, name: w.name } : old));
      void qc.invalidateQueries({ queryKey: ['wallets', profileId] });
      notifications.show({ color: 'green', message: 'Wallet renamed' });
      setRenaming(false);
    },
  });
  const archive = useMutation({
    mutationFn: (archived: boolean) =>
      run(() =>
        call<WalletArchive>(
          archived
            ? api.POST('/admin/v1/profiles/{profile_id}/wallets/{wallet_id}/archive', { params: { path } })
            : api.POST('/admin/v1/profiles/{profile_id}/wallets/{wallet_id}/unarchive', { params: { path } }),
        ),
      ),
    onSuccess: (a) => {
      qc.setQueryData<WalletWithState>(key, (old) => (old ? { ...old, archived_at: a.archived_at } : old));
      notifications.show({ color: 'green', message: a.archived_at ? 'Wallet archived' : 'Wallet unarchived' });
      setArchiving(false);
    },
  });
  return (
    <Group gap="xs">
      <Button variant="default" onClick={() => setRenaming(true)}>
        Rename
      </Button>
      {archivedAt && (
        <Button variant="default" loading={archive.isPending && !archiving} onClick={() => archive.mutate(false)}>
          Unarchive wallet
        </Button>
      )}
      {!archivedAt && (
        <Button color="red" variant="light" onClick={() => setArchiving(true)}>
          Archive wallet
        </Button>
      )}
      {archive.error && !archiving && <ProblemAlert error={archive.error} />}
      <Modal opened={renaming} onClose={() => setRenaming(false)} title="Rename wallet">
        <form
          onSubmit={(e) => {
            e.preventDefault();
            rename.mutate();
          }}
        >
          <Stack>
            <TextInput
              label="Wallet name"
              description="Leave empty to remove the name."
              value={name}
              maxLength={200}
              onChange={(e) => setName(e.currentTarget.value)}
              data-autofocus
            />
            <ProblemAlert error={rename.error} />
            <Group justify="flex-end">
              <Button variant="default" onClick={() => setRenaming(false)}>
                Close
              </Button>
              <Button type="submit" loading={rename.isPending}>
                Save
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>
      <Modal opened={archiving} onClose={() => setArchiving(false)} title="Archive this wallet?">
        <Stack>
          <Text size="sm">
            An archived wallet takes no new transfers and no new addresses (409 WALLET_ARCHIVED). Deposits to its
            addresses are still watched and credited. You can unarchive it later.
          </Text>
          <ProblemAlert error={archive.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setArchiving(false)}>
              Keep active
            </Button>
            <Button color="red" loading={archive.isPending} onClick={() => archive.mutate(true)}>
              Archive
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Group>
  );
}

/** The wallet's addresses (`GET …/addresses`, archived ones included), page in `?addresses=`. */
function Addresses({
  profileId,
  walletId,
  chainName,
}: {
  profileId: string;
  walletId: string;
  chainName: (id: string) => string;
}) {
  const [page, setPage] = usePageParam('addresses');
  const [qr, setQr] = useState<LabelledAddress | null>(null);
  const list = useQuery({
    queryKey: ['addresses', profileId, walletId, page],
    queryFn: () =>
      call<Page<LabelledAddress>>(
        api.GET('/admin/v1/profiles/{profile_id}/wallets/{wallet_id}/addresses', {
          params: { path: { profile_id: profileId, wallet_id: walletId }, query: { page, page_size: PAGE_SIZE } },
        }),
      ),
  });
  return (
    <>
      <PagedTable
        title="Addresses"
        query={list}
        empty="This wallet has no addresses."
        minWidth={720}
        columns={['Address', 'Label', 'Blockchain', 'Type', 'QR code']}
        row={(a) => (
          <Table.Tr key={a.address_id}>
            <Table.Td>
              <CopyValue value={a.address} label="address" />
            </Table.Td>
            <Table.Td>{a.label ?? '—'}</Table.Td>
            <Table.Td>{chainName(a.blockchain_id)}</Table.Td>
            <Table.Td>
              <Group gap={4}>
                {a.address_type}
                {a.archived_at && (
                  <Badge color="gray" size="sm">
                    Archived
                  </Badge>
                )}
              </Group>
            </Table.Td>
            <Table.Td>
              <Button size="xs" variant="default" onClick={() => setQr(a)}>
                Show QR code
              </Button>
            </Table.Td>
          </Table.Tr>
        )}
        page={page}
        onPage={setPage}
        pagerLabel="Address pages"
      />
      <Modal opened={qr !== null} onClose={() => setQr(null)} title="Deposit address">
        {qr && (
          <Stack align="center">
            <QrCode value={qr.address} alt={`QR code of ${qr.address}`} />
            <CopyValue value={qr.address} label="address" />
            <Text size="sm" c="dimmed">
              {chainName(qr.blockchain_id)} · {qr.address_type}
            </Text>
          </Stack>
        )}
      </Modal>
    </>
  );
}

/** Balances per asset (`GET …/balances`), page in `?balances=`; amounts are decimal strings shown as given. */
function Balances({
  profileId,
  walletId,
  chainName,
}: {
  profileId: string;
  walletId: string;
  chainName: (id: string) => string;
}) {
  const [page, setPage] = usePageParam('balances');
  const list = useQuery({
    queryKey: ['balances', profileId, walletId, page],
    queryFn: () =>
      call<Page<Balance>>(
        api.GET('/admin/v1/profiles/{profile_id}/wallets/{wallet_id}/balances', {
          params: { path: { profile_id: profileId, wallet_id: walletId }, query: { page, page_size: PAGE_SIZE } },
        }),
      ),
  });
  return (
    <Stack gap="xs">
      <Title order={3}>Balances</Title>
      <QueryState query={list} isEmpty={(d) => d.total === 0} empty="No assets on this wallet's networks.">
        {(d) => (
          <>
            <Table.ScrollContainer minWidth={560}>
              <Table aria-label="Balances">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Asset</Table.Th>
                    <Table.Th>Blockchain</Table.Th>
                    <Table.Th ta="right">Amount</Table.Th>
                    <Table.Th>Updated</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {d.data.map((b) => (
                    <Table.Tr key={`${b.blockchain_id}/${b.asset_id}`}>
                      <Table.Td>{b.symbol}</Table.Td>
                      <Table.Td>{chainName(b.blockchain_id)}</Table.Td>
                      <Table.Td ta="right" ff="monospace">
                        {b.amount}
                      </Table.Td>
                      <Table.Td>{b.updated_at ? new Date(b.updated_at).toLocaleString() : 'never observed'}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager page={page} total={d.total} onChange={setPage} label="Balance pages" />
          </>
        )}
      </QueryState>
    </Stack>
  );
}

/**
 * Detected incoming transactions (`GET …/deposits`, newest first), page in `?deposits=`: tx hash
 * (copyable, explorer link where the chain has one), address, asset, amount (decimal string in asset
 * units, shown as given), status with confirmations, time first seen.
 */
function Deposits({
  profileId,
  walletId,
  chain,
}: {
  profileId: string;
  walletId: string;
  chain: (id: string) => DirectoryBlockchain | undefined;
}) {
  const [page, setPage] = usePageParam('deposits');
  const list = useQuery({
    queryKey: ['deposits', profileId, walletId, page],
    queryFn: () =>
      call<Page<Deposit>>(
        api.GET('/admin/v1/profiles/{profile_id}/wallets/{wallet_id}/deposits', {
          params: { path: { profile_id: profileId, wallet_id: walletId }, query: { page, page_size: PAGE_SIZE } },
        }),
      ),
  });
  return (
    <PagedTable
      title="Deposits"
      query={list}
      empty="No deposits detected on this wallet yet."
      minWidth={880}
      columns={['Transaction', 'Address', 'Asset', { label: 'Amount', right: true }, 'Status', 'Detected']}
      row={(x) => {
        const c = chain(x.blockchain_id);
        const url = explorerUrl(c?.key, x.tx_hash);
        return (
          <Table.Tr key={`${x.tx_hash}/${x.address}/${x.asset_id}`}>
            <Table.Td>
              <Stack gap={2}>
                <CopyValue value={x.tx_hash} label="transaction hash" />
                {url && (
                  <Anchor
                    href={url}
                    target="_blank"
                    rel="noopener noreferrer"
                    size="sm"
                    aria-label={`View deposit ${x.tx_hash} in block explorer`}
                  >
                    Block explorer
                  </Anchor>
                )}
              </Stack>
            </Table.Td>
            <Table.Td>
              <CopyValue value={x.address} label="deposit address" />
            </Table.Td>
            <Table.Td>
              {x.asset_symbol ?? x.asset_id}
              <Text size="xs" c="dimmed">
                {c?.name ?? x.blockchain_id}
              </Text>
            </Table.Td>
            <Table.Td ta="right" ff="monospace">
              {x.amount}
            </Table.Td>
            <Table.Td>
              <Badge color={x.status === 'CONFIRMED' ? 'green' : 'yellow'} variant="light">
                {x.status === 'CONFIRMED' ? 'Confirmed' : 'Unconfirmed'}
              </Badge>
              <Text size="xs" c="dimmed">
                {x.confirmations} confirmation{x.confirmations === 1 ? '' : 's'}
              </Text>
            </Table.Td>
            <Table.Td>
              <time dateTime={x.detected_at}>{new Date(x.detected_at).toLocaleString()}</time>
            </Table.Td>
          </Table.Tr>
        );
      }}
      page={page}
      onPage={setPage}
      pagerLabel="Deposit pages"
    />
  );
}
