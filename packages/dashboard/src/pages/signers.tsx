/**
 * Servers screen (`/signers`, "Server signers"): the registered server signers (name, libp2p peer
 * id, dial address, identity fingerprint, registration time — all `GET /admin/v1/signers` returns;
 * it reports no reachability), "Register signer" (`POST /admin/v1/signers`, step-up) and Remove
 * (`DELETE /admin/v1/signers/{id}`, step-up, after a confirmation). The list is not paged by the
 * server; the table pages it in the page (20 rows).
 */
import type { AddSignerInput, ServerSigner } from '@custodian/coordinator/admin-api-types';
import { Button, Group, Modal, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call } from '../api/client';
import { useSession } from '../auth/session';
import { useStepUp } from '../auth/step-up';
import { CopyValue } from '../components/copy';
import { PAGE_SIZE, Pager, usePageParam } from '../components/pager';
import { ProblemAlert, QueryState } from '../components/states';

/** Query key of the server signer list (shared with the master key screen's party choice). */
export const SIGNERS_KEY = ['signers'] as const;

/** The registered server signers (not removed), in registration order. */
export function useSigners(enabled = true) {
  return useQuery({
    queryKey: SIGNERS_KEY,
    queryFn: () => call<ServerSigner[]>(api.GET('/admin/v1/signers')),
    enabled,
  });
}

/** Register dialog: the values `custodian signer init` prints on the signer host. */
function RegisterModal({ onClose }: { onClose: () => void }) {
  const qc = useQueryClient();
  const stepUp = useStepUp();
  const form = useForm<AddSignerInput>({
    initialValues: { name: '', peer_id: '', address: '', fingerprint: '' },
    validate: {
      name: (v) => (v.trim() === '' ? 'Give the signer a name' : null),
      peer_id: (v) =>
        /^[1-9A-HJ-NP-Za-km-z]{40,80}$/.test(v.trim()) ? null : 'A libp2p peer id (base58, 40–80 characters)',
      address: (v) => (v.trim().startsWith('/') ? null : 'A multiaddr, e.g. /ip4/10.0.0.5/tcp/7400'),
      fingerprint: (v) => (v.trim().length >= 8 ? null : 'The fingerprint the signer printed'),
    },
  });
  const register = useMutation({
    mutationFn: (v: AddSignerInput) =>
      stepUp.run(() =>
        call<ServerSigner>(
          api.POST('/admin/v1/signers', {
            body: {
              name: v.name.trim(),
              peer_id: v.peer_id.trim(),
              address: v.address.trim(),
              fingerprint: v.fingerprint.trim(),
            },
          }),
        ),
      ),
    onSuccess: async (s) => {
      notifications.show({ color: 'green', message: `Server signer “${s.name}” registered` });
      await qc.invalidateQueries({ queryKey: SIGNERS_KEY });
      onClose();
    },
  });
  return (
    <Modal opened onClose={onClose} title="Register a server signer" size="lg">
      <form onSubmit={form.onSubmit((v) => register.mutate(v))}>
        <Stack>
          <Text size="sm">
            Copy the values printed by <code>custodian signer init</code> on the signer host. Compare the fingerprint
            out of band: the coordinator checks that it belongs to the peer id.
          </Text>
          <TextInput label="Name" required {...form.getInputProps('name')} data-autofocus />
          <TextInput label="Peer id" required ff="monospace" {...form.getInputProps('peer_id')} />
          <TextInput
            label="Address"
            description="libp2p multiaddr, e.g. /ip4/10.0.0.5/tcp/7400"
            required
            {...form.getInputProps('address')}
          />
          <TextInput label="Fingerprint" required {...form.getInputProps('fingerprint')} />
          <ProblemAlert error={register.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={register.isPending}>
              Register signer
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** Remove confirmation, with what removal means for the master key. */
function RemoveModal({ signer, onClose }: { signer: ServerSigner; onClose: () => void }) {
  const qc = useQueryClient();
  const stepUp = useStepUp();
  const remove = useMutation({
    mutationFn: () =>
      stepUp.run(() =>
        call(api.DELETE('/admin/v1/signers/{signer_id}', { params: { path: { signer_id: signer.signer_id } } })),
      ),
    onSuccess: async () => {
      notifications.show({ color: 'green', message: `Server signer “${signer.name}” removed` });
      await qc.invalidateQueries({ queryKey: SIGNERS_KEY });
      onClose();
    },
  });
  return (
    <Modal opened onClose={onClose} title={`Remove server signer “${signer.name}”?`}>
      <Stack>
        <Text size="sm">
          The coordinator stops using this signer for new ceremonies. It does not delete the signer's key share: if it
          is a party of a master key, replace it (or reshare) on the Master key screen.
        </Text>
        <ProblemAlert error={remove.error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button color="red" loading={remove.isPending} onClick={() => remove.mutate()}>
            Remove signer
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** The Servers screen (Admin only; the route checks `adminListSigners`). */
export function SignersPage() {
  const { can } = useSession();
  const signers = useSigners();
  const [page, setPage] = usePageParam();
  const [registering, setRegistering] = useState(false);
  const [removing, setRemoving] = useState<ServerSigner | null>(null);
  const canRemove = can('adminRemoveSigner');
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Server signers</Title>
        {can('adminRegisterSigner') && <Button onClick={() => setRegistering(true)}>Register signer</Button>}
      </Group>
      <QueryState
        query={signers}
        isEmpty={(d) => d.length === 0}
        empty="No server signer is registered. Set one up with custodian signer init, then register it here."
      >
        {(list) => (
          <>
            <Table.ScrollContainer minWidth={900}>
              <Table aria-label="Server signers" striped>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Peer id</Table.Th>
                    <Table.Th>Address</Table.Th>
                    <Table.Th>Fingerprint</Table.Th>
                    <Table.Th>Registered</Table.Th>
                    {canRemove && <Table.Th>Actions</Table.Th>}
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {list.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE).map((s) => (
                    <Table.Tr key={s.signer_id}>
                      <Table.Td>{s.name}</Table.Td>
                      <Table.Td>
                        <CopyValue value={s.peer_id} label={`peer id of ${s.name}`} />
                      </Table.Td>
                      <Table.Td>
                        <Text ff="monospace" size="sm" style={{ overflowWrap: 'anywhere' }}>
                          {s.address}
                        </Text>
                      </Table.Td>
                      <Table.Td>
                        <Text ff="monospace" size="xs" style={{ overflowWrap: 'anywhere' }}>
                          {s.fingerprint}
                        </Text>
                      </Table.Td>
                      <Table.Td>{new Date(s.created_at).toLocaleString()}</Table.Td>
                      {canRemove && (
                        <Table.Td>
                          <Button
                            size="xs"
                            variant="light"
                            color="red"
                            onClick={() => setRemoving(s)}
                            aria-label={`Remove ${s.name}`}
                          >
                            Remove
                          </Button>
                        </Table.Td>
                      )}
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager page={page} total={list.length} onChange={setPage} label="Server signers" />
          </>
        )}
      </QueryState>
      {registering && <RegisterModal onClose={() => setRegistering(false)} />}
      {removing !== null && <RemoveModal signer={removing} onClose={() => setRemoving(null)} />}
    </Stack>
  );
}
