/**
 * API keys of the current profile (`/api-keys`, Admin): the list (`GET /admin/v1/api-keys`,
 * paginated server-side: name, prefix, allowed CIDRs, created, last used, revoked), "Create API key"
 * (`POST /admin/v1/api-keys`, step-up) whose secret is shown ONCE in a modal and dropped from memory
 * when the modal closes (component state only: the POST is a plain async handler, NOT a useMutation,
 * so TanStack Query's MutationCache never holds the secret; never the query cache, history state,
 * logs or localStorage), and
 * "Revoke" (`DELETE /admin/v1/api-keys/{id}`, step-up) behind a confirmation.
 */
import type { ApiKey, CreatedApiKey, Page } from '@custodian/coordinator/admin-api-types';
import { Alert, Badge, Button, Group, Modal, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call } from '../api/client';
import { useProfile, useSession } from '../auth/session';
import { useStepUp } from '../auth/step-up';
import { CopyValue } from '../components/copy';
import { PAGE_SIZE, Pager, usePageParam } from '../components/pager';
import { ProblemAlert, QueryState } from '../components/states';

const when = (iso: string | null) => (iso === null ? '—' : new Date(iso).toLocaleString());

/** Split the "Allowed CIDRs" textarea (one range per line or comma-separated); empty → undefined (any address). */
export function parseCidrs(text: string): string[] | undefined {
  const list = text
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return list.length === 0 ? undefined : list;
}

/** The API keys screen. */
export function ApiKeysPage() {
  const { profileId } = useProfile();
  const { can } = useSession();
  const stepUp = useStepUp();
  const qc = useQueryClient();
  const [page, setPage] = usePageParam();
  const [createOpen, setCreateOpen] = useState(false);
  const [name, setName] = useState('');
  const [cidrs, setCidrs] = useState('');
  // the secret lives only here, and only while the "shown once" modal is open
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const [creating, setCreating] = useState(false);
  const [createError, setCreateError] = useState<unknown>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);

  /** Close the "shown once" modal and drop the secret (the only reference to it is `created`). */
  const forget = () => setCreated(null);

  const list = useQuery({
    queryKey: ['api-keys', profileId, page],
    enabled: profileId !== undefined,
    queryFn: () =>
      call<Page<ApiKey>>(
        api.GET('/admin/v1/api-keys', {
          params: { query: { profile_id: profileId as string, page, page_size: PAGE_SIZE } },
        }),
      ),
  });

  /**
   * Create the key (step-up). Deliberately not a `useMutation`: the MutationCache would keep the
   * answer (with the secret) for gcTime after the modal closed. The answer goes only to `created`.
   */
  const create = async () => {
    setCreating(true);
    setCreateError(null);
    try {
      const key = await stepUp.run(() =>
        call<CreatedApiKey>(
          api.POST('/admin/v1/api-keys', {
            body: { profile_id: profileId as string, name: name.trim(), allowed_cidrs: parseCidrs(cidrs) },
          }),
        ),
      );
      setCreateOpen(false);
      setName('');
      setCidrs('');
      setCreated(key);
      void qc.invalidateQueries({ queryKey: ['api-keys'] });
    } catch (e) {
      setCreateError(e);
    } finally {
      setCreating(false);
    }
  };

  const revoke = useMutation({
    mutationFn: (k: ApiKey) =>
      stepUp.run(() =>
        call(api.DELETE('/admin/v1/api-keys/{api_key_id}', { params: { path: { api_key_id: k.api_key_id } } })),
      ),
    onSuccess: (_r, k) => {
      setRevoking(null);
      notifications.show({ color: 'green', message: `API key "${k.name}" revoked` });
      void qc.invalidateQueries({ queryKey: ['api-keys'] });
    },
  });

  return (
    <Stack>
      <Group justify="space-between" wrap="wrap">
        <Title order={2}>API keys</Title>
        {can('adminCreateApiKey') && (
          <Button
            onClick={() => {
              setCreateError(null);
              setCreateOpen(true);
            }}
          >
            Create API key
          </Button>
        )}
      </Group>
      <QueryState query={list} isEmpty={(d) => d.total === 0} empty="No API keys yet. Create one for your back end.">
        {(d) => (
          <>
            <Table.ScrollContainer minWidth={760}>
              <Table striped aria-label="API keys">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Prefix</Table.Th>
                    <Table.Th>Allowed from</Table.Th>
                    <Table.Th>Created</Table.Th>
                    <Table.Th>Last used</Table.Th>
                    <Table.Th>Status</Table.Th>
                    <Table.Th>Actions</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {d.data.map((k) => (
                    <Table.Tr key={k.api_key_id}>
                      <Table.Td>{k.name}</Table.Td>
                      <Table.Td>
                        <Text ff="monospace" size="sm">
                          {k.key_prefix}…
                        </Text>
                      </Table.Td>
                      <Table.Td>{k.allowed_cidrs === null ? 'Any address' : k.allowed_cidrs.join(', ')}</Table.Td>
                      <Table.Td>{when(k.created_at)}</Table.Td>
                      <Table.Td>{k.last_used_at === null ? 'Never' : when(k.last_used_at)}</Table.Td>
                      <Table.Td>
                        {k.revoked_at === null ? (
                          <Badge color="green">Active</Badge>
                        ) : (
                          <Badge color="gray">Revoked {when(k.revoked_at)}</Badge>
                        )}
                      </Table.Td>
                      <Table.Td>
                        {k.revoked_at === null && can('adminRevokeApiKey') && (
                          <Button
                            size="xs"
                            color="red"
                            variant="light"
                            aria-label={`Revoke ${k.name}`}
                            onClick={() => {
                              revoke.reset();
                              setRevoking(k);
                            }}
                          >
                            Revoke
                          </Button>
                        )}
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager page={page} total={d.total} onChange={setPage} label="API keys" />
          </>
        )}
      </QueryState>

      <Modal opened={createOpen} onClose={() => setCreateOpen(false)} title="Create API key">
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void create();
          }}
        >
          <Stack>
            <TextInput
              label="Name"
              required
              maxLength={200}
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              data-autofocus
            />
            <Textarea
              label="Allowed CIDRs"
              description="Optional: one IPv4/IPv6 range or address per line (e.g. 10.0.0.0/8). Empty: usable from any address."
              minRows={2}
              value={cidrs}
              onChange={(e) => setCidrs(e.currentTarget.value)}
            />
            <ProblemAlert error={createError} />
            <Group justify="flex-end">
              <Button variant="default" onClick={() => setCreateOpen(false)}>
                Cancel
              </Button>
              <Button type="submit" loading={creating} disabled={name.trim() === ''}>
                Create
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>

      <Modal opened={created !== null} onClose={forget} title="Your new API key" closeOnClickOutside={false}>
        {created !== null && (
          <Stack>
            <Alert color="yellow" title="Copy it now: it is shown only once">
              Store it in your back end's secret store. Custodian keeps only a hash: if it is lost, revoke it and create
              another.
            </Alert>
            <Text size="sm">
              Key "{created.name}" ({created.key_prefix}…)
            </Text>
            <CopyValue value={created.api_key} label="API key" />
            <Group justify="flex-end">
              <Button onClick={forget}>I have copied it</Button>
            </Group>
          </Stack>
        )}
      </Modal>

      <Modal opened={revoking !== null} onClose={() => setRevoking(null)} title="Revoke API key?">
        {revoking !== null && (
          <Stack>
            <Text size="sm">
              Revoking "{revoking.name}" ({revoking.key_prefix}…) takes effect immediately: every request signed with it
              is refused from now on. This cannot be undone.
            </Text>
            <ProblemAlert error={revoke.error} />
            <Group justify="flex-end">
              <Button variant="default" onClick={() => setRevoking(null)}>
                Cancel
              </Button>
              <Button color="red" loading={revoke.isPending} onClick={() => revoke.mutate(revoking)}>
                Revoke key
              </Button>
            </Group>
          </Stack>
        )}
      </Modal>
    </Stack>
  );
}
