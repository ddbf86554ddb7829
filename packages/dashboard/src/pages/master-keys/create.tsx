/**
 * "Create master key" dialog: the parties (one checkbox per APPROVED device and server signer) and
 * the threshold k, checked in the form ({@link partyProblem}) and again by the server, then
 * `POST /admin/v1/master-keys` `{ threshold, signers: [{kind, id}] }` (202: the ceremony record,
 * whose id the screen shows live).
 */
import type { Ceremony } from '@custodian/coordinator/admin-api-types';
import { Alert, Button, Group, Modal, NumberInput, Stack, Text } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call } from '../../api/client';
import { Loading, ProblemAlert } from '../../components/states';
import { PartyChecklist, partyProblem, refsOf, usePartyChoices } from './parties';

/** The dialog; `onStarted(ceremonyId)` after the server accepted the ceremony. */
export function CreateMasterKeyModal({ onClose, onStarted }: { onClose: () => void; onStarted: (id: string) => void }) {
  const qc = useQueryClient();
  const parties = usePartyChoices(true);
  const [selected, setSelected] = useState<string[]>([]);
  const [threshold, setThreshold] = useState<number | string>(2);
  const [checked, setChecked] = useState(false);
  const refs = refsOf(selected);
  const problem = partyProblem(refs, threshold);
  const start = useMutation({
    mutationFn: () =>
      call<Ceremony>(api.POST('/admin/v1/master-keys', { body: { threshold: Number(threshold), signers: refs } })),
    onSuccess: async (c) => {
      notifications.show({ color: 'green', message: 'Master key ceremony started' });
      await qc.invalidateQueries({ queryKey: ['ceremonies'] });
      onStarted(c.ceremony_id);
      onClose();
    },
  });
  return (
    <Modal opened onClose={onClose} title="Create master key" size="xl">
      <form
        onSubmit={(ev) => {
          ev.preventDefault();
          setChecked(true);
          if (problem === null) start.mutate();
        }}
      >
        <Stack>
          <Text size="sm">
            Choose exactly the parties that will hold a share of the key, and how many of them must take part in every
            signature (k of n). All of them must be online now: the ceremony runs at once and is abandoned after 5
            minutes.
          </Text>
          {parties.isPending ? (
            <Loading label="Loading the devices and signers" />
          ) : (
            <PartyChecklist legend="Parties" choices={parties.choices} value={selected} onChange={setSelected} />
          )}
          <ProblemAlert error={parties.error} />
          <NumberInput
            label="Threshold (k)"
            description={`Parties needed to sign, from 2 to the number of parties (${selected.length} chosen)`}
            min={2}
            max={Math.max(2, selected.length)}
            allowDecimal={false}
            value={threshold}
            onChange={setThreshold}
            required
          />
          {checked && problem !== null && (
            <Alert color="red" role="alert" title="Check the parties">
              {problem}
            </Alert>
          )}
          <ProblemAlert error={start.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={start.isPending}>
              Start ceremony
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
