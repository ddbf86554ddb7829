/**
 * Transfer detail (`/transfers/:transferId`): amount (decimal string in asset units, as given),
 * asset, wallet, destination, fee cap and fee bump; the status with its sub-status; a status
 * timeline; the approvals count; the transaction hash with a block-explorer link (none on local
 * development chains). Kept live by the transfer's SSE stream (`…/transfers/{id}/events`), else
 * polling, until the status is final. Actions by role and status: "Cancel transfer" (confirmed
 * first; cannot be undone) and "Bump fee" (priority; RBF or CPFP on UTXO chains).
 *
 * The admin transfer view carries its history (coordinator transfers/admin-view.ts): `timeline`
 * (every status transition with time and sub-status, oldest first), `approvals` (device decisions:
 * device, owner, decision, time) and `signing` (SIGN ceremonies: signers, outcome, ceremony id,
 * linked to `GET /admin/v1/signing-ceremonies/{id}`). A view without a timeline (an older server, or
 * a cancel / fee-bump answer merged in) falls back to the view's own times.
 *
 * Over 400 lines because it is one screen whose parts (history tables, cancel and fee-bump
 * dialogs) share the transfer's query key and view type; each part is a small component here.
 */
import type { AdminTransfer, FeePriority, Transfer } from '@custodian/coordinator/admin-api-types';
import {
  Anchor,
  Badge,
  Button,
  Card,
  Group,
  Modal,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  Timeline,
  Title,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { Link, useParams } from 'react-router';
import { api, call } from '../api/client';
import { useLiveQuery } from '../api/live';
import { useProfile, useSession } from '../auth/session';
import { useStepUp } from '../auth/step-up';
import { CopyValue } from '../components/copy';
import { ProblemAlert, QueryState } from '../components/states';
import { canOrDocumented, explorerUrl, isFinal, mayBumpFee, mayCancel, shorten, statusColor } from './transfers/status';
import { byId, type DirectoryBlockchain, useAssets, useBlockchains, useWalletsById, walletName } from './wallets/data';

/** The admin transfer; history fields optional (absent from cancel / fee-bump answers). */
type TransferWithHistory = Transfer & Partial<Pick<AdminTransfer, 'timeline' | 'approvals' | 'signing'>>;

/** Keep the history of `old` when `v` (a cancel / fee-bump answer) has none. */
const merged = (old: TransferWithHistory | undefined, v: Transfer): TransferWithHistory => ({ ...old, ...v });

/** Local date and time of an ISO string, in a `<time>` element. */
function When({ at }: { at: string }) {
  return <time dateTime={at}>{new Date(at).toLocaleString()}</time>;
}

/** Roles of cancel and fee bump (coordinator transfers/admin-routes.ts). */
const MANAGE = ['ADMIN', 'FINANCE_MANAGER'] as const;

/** Query key of one transfer. */
const transferKey = (profileId: string | undefined, id: string) => ['transfer', profileId, id];

/** The transfer page. */
export function TransferDetailPage() {
  const { transferId = '' } = useParams();
  const { profileId } = useProfile();
  const transfer = useLiveQuery<TransferWithHistory>({
    queryKey: transferKey(profileId, transferId),
    queryFn: () =>
      call<TransferWithHistory>(
        api.GET('/admin/v1/profiles/{profile_id}/transfers/{transfer_id}', {
          params: { path: { profile_id: profileId ?? '', transfer_id: transferId } },
        }),
      ),
    streamUrl:
      profileId === undefined
        ? undefined
        : `/admin/v1/profiles/${encodeURIComponent(profileId)}/transfers/${encodeURIComponent(transferId)}/events`,
    final: isFinal,
  });
  return (
    <Stack>
      <Title order={2} style={{ overflowWrap: 'anywhere' }}>
        Transfer {transferId}
      </Title>
      <QueryState query={transfer}>
        {(t) => (profileId === undefined ? null : <TransferView profileId={profileId} transfer={t} />)}
      </QueryState>
    </Stack>
  );
}

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <Stack gap={2} style={{ minWidth: 0 }}>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <div>{children}</div>
    </Stack>
  );
}

function TransferView({ profileId, transfer: t }: { profileId: string; transfer: TransferWithHistory }) {
  const session = useSession();
  const manage = canOrDocumented.bind(null, session);
  const chain = byId(useBlockchains(profileId).data?.data, (b) => b.blockchain_id).get(t.blockchain_id);
  const asset = byId(useAssets(profileId).data?.data, (a) => a.asset_id).get(t.asset_id);
  const wallet = useWalletsById(profileId, [t.wallet_id]).get(t.wallet_id);
  const symbol = asset?.symbol ?? '';
  return (
    <Stack gap="lg">
      <Group gap="xs" wrap="wrap">
        <Badge size="lg" color={statusColor(t)}>
          {t.status}
        </Badge>
        {t.sub_status && <Text c="dimmed">{t.sub_status}</Text>}
        {t.status === 'SENT' && <Text c="dimmed">{t.delivered_at ? 'delivered' : 'awaiting confirmations'}</Text>}
      </Group>
      <Group gap="xs">
        {manage('adminCancelTransfer', MANAGE) && mayCancel(t) && <CancelButton profileId={profileId} transfer={t} />}
        {manage('adminBumpTransferFee', MANAGE) && mayBumpFee(t) && (
          <FeeBumpButton profileId={profileId} transfer={t} chain={chain} />
        )}
      </Group>
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
        <Field label="Amount">
          <Text ff="monospace">
            {t.amount} {symbol}
          </Text>
        </Field>
        <Field label="Asset">{asset ? `${asset.name} (${asset.symbol})` : t.asset_id}</Field>
        <Field label="Blockchain">{chain?.name ?? t.blockchain_id}</Field>
        <Field label="From wallet">
          <Anchor component={Link} to={`/wallets/${t.wallet_id}`}>
            {wallet ? walletName(wallet) : t.wallet_id}
          </Anchor>
        </Field>
        <Field label="Source address">
          <CopyValue value={t.source_address} label="source address" />
        </Field>
        <Field label="Destination">
          <CopyValue value={t.destination_address} label="destination address" />
        </Field>
        <Field label="Fee cap">
          <Text ff="monospace">
            {t.max_fee} {t.fee_currency}
          </Text>
        </Field>
        <Field label="Fee priority">{t.fee_bump ? `${t.fee_bump.priority} (fee bump)` : 'as created'}</Field>
        {t.external_id && <Field label="External id">{t.external_id}</Field>}
      </SimpleGrid>
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Card withBorder>
          <Title order={3} mb="sm">
            Status timeline
          </Title>
          <StatusTimeline transfer={t} />
        </Card>
        <Stack>
          <Card withBorder>
            <Title order={3} mb="sm">
              Approvals
            </Title>
            <Text>
              {t.approvals_received} of {t.approvals_required} device approvals received
            </Text>
            <ApprovalsTable approvals={t.approvals ?? []} />
            {t.approval_deadline && (
              <Text size="sm" c="dimmed">
                Approval deadline {new Date(t.approval_deadline).toLocaleString()}
              </Text>
            )}
            {t.policy_id && (
              <Text size="sm" c="dimmed">
                Policy {t.policy_id} version {t.policy_version}
              </Text>
            )}
          </Card>
          <Card withBorder>
            <Title order={3} mb="sm">
              Transaction
            </Title>
            <TxHash hash={t.tx_hash} chain={chain} />
            {t.fee_bump && (
              <Text size="sm" mt="sm">
                Fee bump round {t.fee_bump.round}: {t.fee_bump.status}
                {t.fee_bump.method ? ` (${t.fee_bump.method})` : ''}, priority {t.fee_bump.priority}
                {t.fee_bump.max_fee ? `, fee cap ${t.fee_bump.max_fee} ${t.fee_bump.fee_currency ?? ''}` : ''}
                {t.fee_bump.sub_status ? ` — ${t.fee_bump.sub_status}` : ''}
              </Text>
            )}
          </Card>
        </Stack>
      </SimpleGrid>
      <Card withBorder>
        <Title order={3} mb="sm">
          Signing attempts
        </Title>
        <SigningTable attempts={t.signing ?? []} />
      </Card>
    </Stack>
  );
}

/** Device decisions (`approvals`): device, owner, decision, time; every round (n > 0: fee bump n). */
function ApprovalsTable({ approvals }: { approvals: NonNullable<TransferWithHistory['approvals']> }) {
  if (approvals.length === 0)
    return (
      <Text size="sm" c="dimmed" mt="xs">
        No device decisions yet.
      </Text>
    );
  return (
    <Table.ScrollContainer
      minWidth={520}
      mt="xs"
      // the half-width card scrolls this table even at 1280 px: its viewport must take keyboard focus
      scrollAreaProps={{ viewportProps: { tabIndex: 0, role: 'region', 'aria-label': 'Device approvals, scrollable' } }}
    >
      <Table striped aria-label="Device approvals">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Device</Table.Th>
            <Table.Th>Owner</Table.Th>
            <Table.Th>Decision</Table.Th>
            <Table.Th>Time</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {approvals.map((a) => (
            <Table.Tr key={`${a.round}:${a.device_id}`}>
              <Table.Td>
                {a.device_name ?? a.device_id}
                {a.round > 0 && (
                  <Text size="xs" c="dimmed">
                    fee bump round {a.round}
                  </Text>
                )}
              </Table.Td>
              <Table.Td>{a.user_name ?? a.user_email ?? '—'}</Table.Td>
              <Table.Td>
                <Badge color={a.decision === 'APPROVE' ? 'green' : 'red'} variant="light">
                  {a.decision === 'APPROVE' ? 'Approved' : 'Rejected'}
                </Badge>
              </Table.Td>
              <Table.Td>
                <When at={a.at} />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

/** SIGN ceremonies (`signing`): attempt, signers by name, outcome, link to the ceremony's record. */
function SigningTable({ attempts }: { attempts: NonNullable<TransferWithHistory['signing']> }) {
  if (attempts.length === 0) return <Text c="dimmed">No signing attempt yet.</Text>;
  return (
    <Table.ScrollContainer
      minWidth={640}
      scrollAreaProps={{ viewportProps: { tabIndex: 0, role: 'region', 'aria-label': 'Signing attempts, scrollable' } }}
    >
      <Table striped aria-label="Signing attempts">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Attempt</Table.Th>
            <Table.Th>Signers</Table.Th>
            <Table.Th>Outcome</Table.Th>
            <Table.Th>Started</Table.Th>
            <Table.Th>Ceremony</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {attempts.map((a) => (
            <Table.Tr key={a.ceremony_id}>
              <Table.Td>{a.attempt}</Table.Td>
              <Table.Td>
                {a.signers
                  .map((p) => `${p.name ?? shorten(p.id)} (${p.kind === 'server' ? 'server' : p.kind})`)
                  .join(', ')}
              </Table.Td>
              <Table.Td>{a.outcome ?? 'running'}</Table.Td>
              <Table.Td>
                <When at={a.started_at} />
              </Table.Td>
              <Table.Td>
                <Anchor
                  href={`/admin/v1/signing-ceremonies/${encodeURIComponent(a.ceremony_id)}`}
                  target="_blank"
                  rel="noopener noreferrer"
                  aria-label={`${shorten(a.ceremony_id)}: signing ceremony of attempt ${a.attempt}`}
                  title={a.ceremony_id}
                  ff="monospace"
                >
                  {shorten(a.ceremony_id)}
                </Anchor>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

/** The timeline: the server's `timeline` (every transition), else the view's own times. */
function StatusTimeline({ transfer: t }: { transfer: TransferWithHistory }) {
  const entries: { title: string; detail?: string | null; at: string }[] = t.timeline?.length
    ? t.timeline.map((h) => ({ title: h.status, detail: h.sub_status, at: h.at }))
    : [
        { title: 'Created', at: t.created_at },
        ...(t.sent_at ? [{ title: 'SENT', detail: 'broadcast', at: t.sent_at }] : []),
        ...(t.delivered_at ? [{ title: 'Delivered', detail: 'confirmed on chain', at: t.delivered_at }] : []),
        ...(t.status !== 'SENT' || (!t.delivered_at && t.updated_at !== t.sent_at)
          ? [{ title: t.status, detail: t.sub_status, at: t.updated_at }]
          : []),
      ];
  return (
    <Timeline active={entries.length - 1} bulletSize={14} lineWidth={2} aria-label="Status timeline">
      {entries.map((e, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a timeline entry has no identity beyond its place
        <Timeline.Item key={i} title={e.title}>
          {e.detail && (
            <Text size="sm" c="dimmed">
              {e.detail}
            </Text>
          )}
          <Text size="xs" c="dimmed">
            <When at={e.at} />
          </Text>
        </Timeline.Item>
      ))}
    </Timeline>
  );
}

/** The transaction hash (copyable) and its block-explorer link (none on local/dev chains). */
function TxHash({ hash, chain }: { hash: string | null; chain: DirectoryBlockchain | undefined }) {
  if (hash === null) return <Text c="dimmed">Not broadcast yet.</Text>;
  const url = explorerUrl(chain?.key, hash);
  return (
    <Stack gap={4}>
      <CopyValue value={hash} label="transaction hash" />
      {url && (
        <Anchor href={url} target="_blank" rel="noopener noreferrer">
          View transaction in block explorer
        </Anchor>
      )}
    </Stack>
  );
}

/** "Cancel transfer" with its confirmation (`POST …/cancel` only after "Confirm cancellation"). */
function CancelButton({ profileId, transfer: t }: { profileId: string; transfer: Transfer }) {
  const qc = useQueryClient();
  const { run } = useStepUp();
  const [open, setOpen] = useState(false);
  const cancel = useMutation({
    mutationFn: () =>
      run(() =>
        call<Transfer>(
          api.POST('/admin/v1/profiles/{profile_id}/transfers/{transfer_id}/cancel', {
            params: { path: { profile_id: profileId, transfer_id: t.transfer_id } },
          }),
        ),
      ),
    onSuccess: (v) => {
      qc.setQueryData<TransferWithHistory>(transferKey(profileId, t.transfer_id), (old) => merged(old, v));
      void qc.invalidateQueries({ queryKey: ['transfers', profileId] });
      notifications.show({ color: 'green', message: 'Transfer cancelled' });
      setOpen(false);
    },
  });
  return (
    <>
      <Button color="red" variant="light" onClick={() => setOpen(true)}>
        Cancel transfer
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title="Cancel this transfer?">
        <Stack>
          <Text size="sm">
            The transfer of {t.amount} to {t.destination_address} will be rejected (CANCELLED_BY_USER) and never sent.
            This cannot be undone: to send the funds later, create a new transfer.
          </Text>
          <ProblemAlert error={cancel.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setOpen(false)}>
              Keep transfer
            </Button>
            <Button color="red" loading={cancel.isPending} onClick={() => cancel.mutate()}>
              Confirm cancellation
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}

/** "Bump fee": priority and, on UTXO chains, RBF or CPFP (`POST …/fee-bump`). */
function FeeBumpButton({
  profileId,
  transfer: t,
  chain,
}: {
  profileId: string;
  transfer: Transfer;
  chain: DirectoryBlockchain | undefined;
}) {
  const qc = useQueryClient();
  const { run } = useStepUp();
  const [open, setOpen] = useState(false);
  const [priority, setPriority] = useState<FeePriority>('FAST');
  const [method, setMethod] = useState<'RBF' | 'CPFP'>('RBF');
  const utxo = chain?.account_model === 'utxo';
  const bump = useMutation({
    mutationFn: () =>
      run(() =>
        call<Transfer>(
          api.POST('/admin/v1/profiles/{profile_id}/transfers/{transfer_id}/fee-bump', {
            params: { path: { profile_id: profileId, transfer_id: t.transfer_id } },
            body: { priority, ...(utxo ? { method } : {}) },
          }),
        ),
      ),
    onSuccess: (v) => {
      qc.setQueryData<TransferWithHistory>(transferKey(profileId, t.transfer_id), (old) => merged(old, v));
      notifications.show({ color: 'green', message: 'Fee bump requested: it now needs device approvals' });
      setOpen(false);
    },
  });
  return (
    <>
      <Button variant="default" onClick={() => setOpen(true)}>
        Bump fee
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title="Bump the fee">
        <Stack>
          <Text size="sm">
            A replacement paying a higher fee is built now and signed after a new round of device approvals.
          </Text>
          <Select
            label="Priority"
            data={['SLOW', 'STANDARD', 'FAST']}
            value={priority}
            onChange={(v) => v && setPriority(v as FeePriority)}
            allowDeselect={false}
          />
          {utxo && (
            <Select
              label="Method"
              data={[
                { value: 'RBF', label: 'RBF — replace the transaction' },
                { value: 'CPFP', label: 'CPFP — child spends the change' },
              ]}
              value={method}
              onChange={(v) => v && setMethod(v as 'RBF' | 'CPFP')}
              allowDeselect={false}
            />
          )}
          <ProblemAlert error={bump.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setOpen(false)}>
              Close
            </Button>
            <Button loading={bump.isPending} onClick={() => bump.mutate()}>
              Request fee bump
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}
