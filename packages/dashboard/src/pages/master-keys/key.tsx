/**
 * One master key on the Master key screen: its threshold k of n, parties, epoch, public keys
 * (shortened), and for an Admin its lifecycle: "Refresh shares"
 * (`POST …/refresh`), "Replace a signer or reshare" (`POST …/key-changes`, then an Admin's enrolled
 * device must sign the change's digest before anything runs: status AWAITING_SIGNATURE),
 * "Recovery drill" (`POST …/drill`) — each under step-up — and the key's changes
 * (`GET …/key-changes`) with their status.
 */
import type { Ceremony, MasterKey } from '@custodian/coordinator/admin-api-types';
import { Badge, Button, Card, Code, Group, Modal, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call } from '../../api/client';
import { useSession } from '../../auth/session';
import { useStepUp } from '../../auth/step-up';
import { ProblemAlert } from '../../components/states';
import { KeyChangeModal, KeyChanges } from './key-changes';
import { partyName, recordedParties, usePartyChoices } from './parties';

/** `abcdef…123456` of a long hex value. */
export const short = (hex: string) => (hex.length > 20 ? `${hex.slice(0, 10)}…${hex.slice(-8)}` : hex);

type Action = 'refresh' | 'drill';

const ACTION_TEXT: Readonly<Record<Action, { title: string; body: string; button: string }>> = {
  refresh: {
    title: 'Refresh the key shares?',
    body:
      'Every party of the key gets a new share of the same key: public keys and addresses stay the same, old shares ' +
      'become useless. All parties must be online; the ceremony is abandoned after 5 minutes. Pooled presignatures ' +
      'are discarded.',
    button: 'Start refresh',
  },
  drill: {
    title: 'Run a recovery drill?',
    body:
      'Enough reachable parties sign a fixed test digest under every key; no funds move and no key is revealed. The ' +
      'result shows whether each signature verified and each party’s backup state.',
    button: 'Start drill',
  },
};

/** Confirmation of a refresh or drill; `onStarted` gets the ceremony id. */
function ActionModal({
  action,
  keyId,
  onClose,
  onStarted,
}: {
  action: Action;
  keyId: string;
  onClose: () => void;
  onStarted: (id: string) => void;
}) {
  const stepUp = useStepUp();
  const qc = useQueryClient();
  const run = useMutation({
    mutationFn: () =>
      stepUp.run(() =>
        call<Ceremony>(
          action === 'refresh'
            ? api.POST('/admin/v1/master-keys/{master_key_id}/refresh', {
                params: { path: { master_key_id: keyId } },
                body: {},
              })
            : api.POST('/admin/v1/master-keys/{master_key_id}/drill', {
                params: { path: { master_key_id: keyId } },
                body: {},
              }),
        ),
      ),
    onSuccess: async (c) => {
      notifications.show({
        color: 'green',
        message: action === 'refresh' ? 'Refresh started' : 'Recovery drill started',
      });
      await qc.invalidateQueries({ queryKey: ['ceremonies'] });
      onStarted(c.ceremony_id);
      onClose();
    },
  });
  const t = ACTION_TEXT[action];
  return (
    <Modal opened onClose={onClose} title={t.title}>
      <Stack>
        <Text size="sm">{t.body}</Text>
        <ProblemAlert error={run.error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button loading={run.isPending} onClick={() => run.mutate()}>
            {t.button}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** One master key card; `onShowCeremony(id)` puts a ceremony in the live panel. */
export function MasterKeyCard({ mk, onShowCeremony }: { mk: MasterKey; onShowCeremony: (id: string) => void }) {
  const { can } = useSession();
  const admin = can('adminCreateKeyChange');
  const { choices } = usePartyChoices(can('adminListDevices') && can('adminListSigners'));
  const [action, setAction] = useState<Action | null>(null);
  const [changing, setChanging] = useState(false);
  const parties = recordedParties(mk.parties);
  return (
    <Card withBorder component="section" aria-labelledby={`mk-${mk.master_key_id}`}>
      <Stack gap="sm">
        <Group justify="space-between" wrap="wrap">
          <Title order={3} id={`mk-${mk.master_key_id}`}>
            Master key {short(mk.master_key_id)}
          </Title>
          <Badge size="lg" variant="light">
            {mk.threshold} of {parties.length}
          </Badge>
        </Group>
        <Text size="sm">
          Parties: {parties.length > 0 ? parties.map((p) => partyName(choices, p)).join(', ') : '—'}
        </Text>
        <Text size="sm" c="dimmed">
          Created {new Date(mk.created_at).toLocaleString()} · epoch {mk.epoch}
          {mk.refreshed_at ? ` · last refreshed ${new Date(mk.refreshed_at).toLocaleString()}` : ''}
        </Text>
        <SimpleGrid cols={{ base: 1, md: 3 }}>
          <Stack gap={2}>
            <Text size="xs" c="dimmed">
              secp256k1
            </Text>
            <Code>{short(mk.secp256k1_public_key)}</Code>
          </Stack>
          <Stack gap={2}>
            <Text size="xs" c="dimmed">
              Ed25519
            </Text>
            <Code>{short(mk.ed25519_public_key)}</Code>
          </Stack>
          {mk.taproot_public_key && (
            <Stack gap={2}>
              <Text size="xs" c="dimmed">
                Taproot
              </Text>
              <Code>{short(mk.taproot_public_key)}</Code>
            </Stack>
          )}
        </SimpleGrid>
        {admin && (
          <Group wrap="wrap">
            {can('adminRefreshMasterKey') && (
              <Button variant="light" onClick={() => setAction('refresh')}>
                Refresh shares
              </Button>
            )}
            <Button variant="light" onClick={() => setChanging(true)}>
              Replace a signer or reshare
            </Button>
            {can('adminStartRecoveryDrill') && (
              <Button variant="light" onClick={() => setAction('drill')}>
                Recovery drill
              </Button>
            )}
          </Group>
        )}
        {can('adminListKeyChanges') && <KeyChanges keyId={mk.master_key_id} onShowCeremony={onShowCeremony} />}
      </Stack>
      {action !== null && (
        <ActionModal
          action={action}
          keyId={mk.master_key_id}
          onClose={() => setAction(null)}
          onStarted={onShowCeremony}
        />
      )}
      {changing && <KeyChangeModal mk={mk} choices={choices} onClose={() => setChanging(false)} />}
    </Card>
  );
}
