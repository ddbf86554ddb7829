/**
 * Key changes of a master key (Admin): {@link KeyChangeModal} prepares one
 * (`POST /admin/v1/master-keys/{id}/key-changes`, step-up: `replace-signer` {old, new} or `reshare`
 * {threshold, signers}); nothing runs until an Admin's enrolled device signs its digest (status
 * AWAITING_SIGNATURE). {@link KeyChanges} lists them (`GET …/key-changes`, paged by the server) with
 * their status.
 */
import type { KeyChange, KeyChangeInput, MasterKey, Page, PartyRef } from '@custodian/coordinator/admin-api-types';
import {
  Alert,
  Badge,
  Button,
  Group,
  Modal,
  NumberInput,
  Radio,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call } from '../../api/client';
import { useStepUp } from '../../auth/step-up';
import { CopyValue } from '../../components/copy';
import { PagedTable } from '../../components/paged-table';
import { PAGE_SIZE, usePageParam } from '../../components/pager';
import { ProblemAlert } from '../../components/states';
import {
  PartyChecklist,
  type PartyChoice,
  partyKey,
  partyName,
  partyProblem,
  recordedParties,
  refsOf,
} from './parties';

const CHANGE_COLOR: Readonly<Record<KeyChange['status'], string>> = {
  AWAITING_SIGNATURE: 'yellow',
  RUNNING: 'blue',
  COMMITTING: 'blue',
  SUCCEEDED: 'green',
  FAILED: 'red',
};

/** "Replace a signer or reshare" dialog: prepares a key change for an Admin device to sign. */
export function KeyChangeModal({
  mk,
  choices,
  onClose,
}: {
  mk: MasterKey;
  choices: readonly PartyChoice[];
  onClose: () => void;
}) {
  const stepUp = useStepUp();
  const qc = useQueryClient();
  const current = recordedParties(mk.parties);
  const currentKeys = current.map(partyKey);
  const [reason, setReason] = useState<KeyChangeInput['reason']>('replace-signer');
  const [oldKey, setOldKey] = useState<string | null>(null);
  const [newKey, setNewKey] = useState<string | null>(null);
  const [selected, setSelected] = useState<string[]>(currentKeys);
  const [threshold, setThreshold] = useState<number | string>(mk.threshold);
  const [checked, setChecked] = useState(false);
  const problem =
    reason === 'replace-signer'
      ? oldKey === null || newKey === null
        ? 'Choose the signer to replace and the new signer.'
        : null
      : partyProblem(refsOf(selected), threshold);
  const create = useMutation({
    mutationFn: () => {
      const body: KeyChangeInput =
        reason === 'replace-signer'
          ? { reason, old: refsOf([oldKey ?? ''])[0] as PartyRef, new: refsOf([newKey ?? ''])[0] as PartyRef }
          : { reason, threshold: Number(threshold), signers: refsOf(selected) };
      return stepUp.run(() =>
        call<KeyChange>(
          api.POST('/admin/v1/master-keys/{master_key_id}/key-changes', {
            params: { path: { master_key_id: mk.master_key_id } },
            body,
          }),
        ),
      );
    },
    onSuccess: async () => {
      notifications.show({
        color: 'green',
        message: 'Key change prepared: an Admin’s enrolled phone must now sign it',
      });
      await qc.invalidateQueries({ queryKey: ['key-changes', mk.master_key_id] });
      onClose();
    },
  });
  const option = (c: PartyRef) => ({ value: partyKey(c), label: partyName(choices, c) });
  return (
    <Modal opened onClose={onClose} title="Replace a signer or reshare" size="xl">
      <form
        onSubmit={(ev) => {
          ev.preventDefault();
          setChecked(true);
          if (problem === null) create.mutate();
        }}
      >
        <Stack>
          <Radio.Group label="Kind of change" value={reason} onChange={(v) => setReason(v as KeyChangeInput['reason'])}>
            <Group mt="xs">
              <Radio value="replace-signer" label="Replace a signer (same threshold)" />
              <Radio value="reshare" label="Reshare (new parties and threshold)" />
            </Group>
          </Radio.Group>
          {reason === 'replace-signer' ? (
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <Select
                label="Signer to replace"
                data={current.map(option)}
                value={oldKey}
                onChange={setOldKey}
                required
              />
              <Select
                label="New signer"
                data={choices.filter((c) => !currentKeys.includes(partyKey(c))).map(option)}
                value={newKey}
                onChange={setNewKey}
                required
              />
            </SimpleGrid>
          ) : (
            <>
              <PartyChecklist legend="New parties" choices={choices} value={selected} onChange={setSelected} />
              <NumberInput
                label="New threshold (k′)"
                min={2}
                max={Math.max(2, selected.length)}
                allowDecimal={false}
                value={threshold}
                onChange={setThreshold}
                required
              />
            </>
          )}
          <Text size="sm" c="dimmed">
            Nothing runs yet: the coordinator prepares the change document, and an Admin’s enrolled phone must sign its
            digest. Then the reshare ceremony runs; the old parties keep signing until every party confirmed.
          </Text>
          {checked && problem !== null && (
            <Alert color="red" role="alert" title="Check the change">
              {problem}
            </Alert>
          )}
          <ProblemAlert error={create.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={create.isPending}>
              Prepare key change
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** The key changes of a master key, newest first (Admin), paged by the server (`?kcpage=`, 20 a page). */
export function KeyChanges({ keyId, onShowCeremony }: { keyId: string; onShowCeremony: (id: string) => void }) {
  const [page, setPage] = usePageParam('kcpage');
  const changes = useQuery({
    queryKey: ['key-changes', keyId, { page }],
    placeholderData: keepPreviousData,
    queryFn: () =>
      call<Page<KeyChange>>(
        api.GET('/admin/v1/master-keys/{master_key_id}/key-changes', {
          params: { path: { master_key_id: keyId }, query: { page, page_size: PAGE_SIZE } },
        }),
      ),
    refetchInterval: (q) =>
      q.state.data?.data.some((c) => c.status !== 'SUCCEEDED' && c.status !== 'FAILED') ? 5000 : false,
  });
  return (
    <PagedTable
      title="Key changes"
      order={4}
      query={changes}
      empty="No key change yet."
      minWidth={720}
      columns={['Change', 'Status', 'Digest', 'Created', 'Next step']}
      row={(c) => (
        <Table.Tr key={c.change_id}>
          <Table.Td>{c.reason === 'replace-signer' ? 'Replace a signer' : 'Reshare'}</Table.Td>
          <Table.Td>
            <Badge color={CHANGE_COLOR[c.status]} variant="light">
              {c.status}
            </Badge>
          </Table.Td>
          <Table.Td>
            <CopyValue value={c.digest} label="digest" />
          </Table.Td>
          <Table.Td>{new Date(c.created_at).toLocaleString()}</Table.Td>
          <Table.Td>
            {c.status === 'AWAITING_SIGNATURE' && (
              <Text size="sm">
                An Admin’s enrolled phone must sign this change; compare the digest it shows with this one.
              </Text>
            )}
            {c.status === 'FAILED' && (
              <Text size="sm" c="red">
                {c.error ?? 'Failed'}
                {c.blamed && c.blamed.length > 0 ? ` — blamed: ${c.blamed.join(', ')}` : ''}
              </Text>
            )}
            {c.uncommitted && c.uncommitted.length > 0 && (
              <Text size="sm">Waiting for: {c.uncommitted.join(', ')}</Text>
            )}
            {c.ceremony_id && (
              <Button size="xs" variant="subtle" onClick={() => c.ceremony_id && onShowCeremony(c.ceremony_id)}>
                Show ceremony
              </Button>
            )}
          </Table.Td>
        </Table.Tr>
      )}
      page={page}
      onPage={setPage}
      pagerLabel="Key change pages"
    />
  );
}
