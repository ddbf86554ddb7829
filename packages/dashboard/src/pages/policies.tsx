/**
 * Policies of the current profile (`/policies`; Admin and Finance Manager edit, Viewer reads):
 * the list (paginated server-side) with each policy's active version and whether a newer draft
 * awaits signature; the editor (pages/policies/editor.tsx) whose "Save draft" creates a version
 * that is NOT in force until an Admin's enrolled phone signs it — the screen then waits, polling
 * the policy, until that version is ACTIVE ("Active v<N>" and a notification). "Dry-run a transfer"
 * (pages/policies/dry-run.tsx, Admin and Finance Manager): a form evaluating a would-be transfer
 * against one version — the draft being edited, or the chosen version — through the admin dry-run.
 */
import type { Page, Policy, PolicyVersion } from '@custodian/coordinator/admin-api-types';
import { Alert, Badge, Button, Code, Group, Loader, Paper, Stack, Table, Text, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { api, call } from '../api/client';
import { useProfile, useSession } from '../auth/session';
import { PAGE_SIZE, Pager, usePageParam } from '../components/pager';
import { ProblemAlert, QueryState } from '../components/states';
import { DryRunPanel } from './policies/dry-run';
import { PolicyEditor } from './policies/editor';

/** How often the screen re-reads a policy while waiting for the phone's signature (ms). */
export const SIGNATURE_POLL_MS = 2000;

/** The roles the coordinator accepts for policy changes (transfers/admin-routes.ts), used when the document has no `x-roles` for them. */
const EDITOR_ROLES = ['ADMIN', 'FINANCE_MANAGER'];

/** The newest version awaiting a signature, if it is newer than the active one. */
export function pendingDraft(p: Policy): PolicyVersion | undefined {
  return p.versions.find((v) => v.status === 'PENDING_SIGNATURE' && v.version > (p.active_version ?? 0));
}

function scopeText(p: Policy): string {
  const s = (p.versions.find((v) => v.version === p.active_version) ?? p.versions[0])?.document.scope;
  if (s === undefined) return '—';
  const parts = [
    s.wallet_ids === null ? 'all wallets' : `${s.wallet_ids.length} wallet(s)`,
    s.blockchain ?? 'any blockchain',
    s.asset_id === null ? 'any asset' : 'one asset',
  ];
  return parts.join(', ');
}

/** Whether the signed-in user may create or change policies (`adminCreatePolicy`). */
function useMayEdit(): boolean {
  const { can, me } = useSession();
  try {
    return can('adminCreatePolicy');
  } catch {
    // the document lists no x-roles for the policy routes: fall back to the coordinator's rule
    return me !== null && me !== undefined && EDITOR_ROLES.includes(me.role);
  }
}

/** The policies screen. */
export function PoliciesPage() {
  const { profileId } = useProfile();
  const mayEdit = useMayEdit();
  const { can } = useSession();
  const mayDryRun = (() => {
    try {
      return can('adminDryRunPolicyVersion');
    } catch {
      return mayEdit; // same roles (transfers/admin-routes.ts) when the document lacks its x-roles
    }
  })();
  const [page, setPage] = usePageParam();
  // undefined: no editor; null: a new policy; a policy: editing it
  const [editing, setEditing] = useState<Policy | null | undefined>(undefined);
  const [waiting, setWaiting] = useState<{ policyId: string; version: number; name: string } | null>(null);

  const list = useQuery({
    queryKey: ['policies', profileId, page],
    enabled: profileId !== undefined,
    queryFn: () =>
      call<Page<Policy>>(
        api.GET('/admin/v1/profiles/{profile_id}/policies', {
          params: { path: { profile_id: profileId as string }, query: { page, page_size: PAGE_SIZE } },
        }),
      ),
  });

  return (
    <Stack>
      <Group justify="space-between" wrap="wrap">
        <Title order={2}>Policies</Title>
        {mayEdit && editing === undefined && <Button onClick={() => setEditing(null)}>New policy</Button>}
      </Group>
      <Text size="sm" c="dimmed">
        Transfers are denied unless a policy allows them. A saved change is a draft: it takes effect only once an Admin
        signs it on their enrolled phone.
      </Text>

      {editing !== undefined && profileId !== undefined && (
        <Paper withBorder p="md">
          <Stack>
            <Title order={3}>{editing === null ? 'New policy' : `Edit ${editing.name}`}</Title>
            <PolicyEditor
              profileId={profileId}
              policy={editing}
              onCancel={() => setEditing(undefined)}
              onSaved={(p) => {
                setEditing(undefined);
                const draft = p.versions.reduce(
                  (a, b) => (b.version > a.version ? b : a),
                  p.versions[0] as PolicyVersion,
                );
                setWaiting({ policyId: p.policy_id, version: draft.version, name: p.name });
              }}
            />
          </Stack>
        </Paper>
      )}

      {waiting !== null && profileId !== undefined && (
        <WaitForSignature profileId={profileId} {...waiting} onDismiss={() => setWaiting(null)} />
      )}

      <QueryState
        query={list}
        isEmpty={(d) => d.total === 0}
        empty="No policies: every transfer is refused (default deny)."
      >
        {(d) => (
          <>
            <Table.ScrollContainer minWidth={720}>
              <Table striped aria-label="Policies">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Scope</Table.Th>
                    <Table.Th>In force</Table.Th>
                    <Table.Th>Draft</Table.Th>
                    <Table.Th>Actions</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {d.data.map((p) => {
                    const draft = pendingDraft(p);
                    return (
                      <Table.Tr key={p.policy_id}>
                        <Table.Td>{p.name}</Table.Td>
                        <Table.Td>{scopeText(p)}</Table.Td>
                        <Table.Td>
                          {p.active_version === null ? (
                            <Badge color="gray">Not in force</Badge>
                          ) : (
                            <Badge color="green">Active v{p.active_version}</Badge>
                          )}
                        </Table.Td>
                        <Table.Td>
                          {draft ? <Badge color="yellow">v{draft.version} awaits signature</Badge> : '—'}
                        </Table.Td>
                        <Table.Td>
                          {mayEdit && (
                            <Button
                              size="xs"
                              variant="default"
                              aria-label={`Edit ${p.name}`}
                              onClick={() => setEditing(p)}
                            >
                              Edit
                            </Button>
                          )}
                        </Table.Td>
                      </Table.Tr>
                    );
                  })}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager page={page} total={d.total} onChange={setPage} label="Policies" />
          </>
        )}
      </QueryState>

      {mayDryRun && profileId !== undefined && list.data !== undefined && list.data.data.length > 0 && (
        <DryRunPanel
          key={editing?.policy_id ?? ''}
          profileId={profileId}
          policies={list.data.data}
          initialPolicyId={editing?.policy_id}
        />
      )}
    </Stack>
  );
}

/**
 * Waits for an Admin's phone to sign `version` of a policy: re-reads the policy every
 * {@link SIGNATURE_POLL_MS} until that version is ACTIVE (then "Active v<N>" and a notification),
 * or is replaced by a newer draft (DELETED without signature).
 */
function WaitForSignature({
  profileId,
  policyId,
  version,
  name,
  onDismiss,
}: {
  profileId: string;
  policyId: string;
  version: number;
  name: string;
  onDismiss: () => void;
}) {
  const qc = useQueryClient();
  const statusOf = (p: Policy | undefined) => p?.versions.find((v) => v.version === version)?.status;
  const policy = useQuery({
    queryKey: ['policy', profileId, policyId],
    queryFn: () =>
      call<Policy>(
        api.GET('/admin/v1/profiles/{profile_id}/policies/{policy_id}', {
          params: { path: { profile_id: profileId, policy_id: policyId } },
        }),
      ),
    refetchInterval: (q) =>
      statusOf(q.state.data) === 'PENDING_SIGNATURE' || q.state.data === undefined ? SIGNATURE_POLL_MS : false,
  });
  const status = statusOf(policy.data);
  const told = useRef(false);
  useEffect(() => {
    if (status === 'ACTIVE' && !told.current) {
      told.current = true;
      notifications.show({ color: 'green', message: `Policy "${name}" v${version} is now in force` });
      void qc.invalidateQueries({ queryKey: ['policies'] });
    }
  }, [status, name, version, qc]);

  return (
    <Paper withBorder p="md" aria-live="polite">
      <Stack gap="xs">
        <Group justify="space-between" wrap="wrap">
          <Title order={3}>
            {name} v{version}
          </Title>
          <Button size="xs" variant="subtle" onClick={onDismiss}>
            Dismiss
          </Button>
        </Group>
        {status === 'ACTIVE' ? (
          <Group gap="xs">
            <Badge color="green" size="lg">
              Active v{version}
            </Badge>
            <Text size="sm">Signed on an Admin's phone and in force.</Text>
          </Group>
        ) : status === 'PENDING_SIGNATURE' || status === undefined ? (
          <>
            <Group gap="sm">
              <Loader size="sm" role="status" aria-label="Waiting for signature" />
              <Text fw={600}>Waiting for signature on an Admin's phone</Text>
            </Group>
            <Text size="sm">
              An Admin opens the Custodian phone app, reviews the policy and signs it. In development, sign with the
              simulator:{' '}
              <Code>
                custodian mobile sign-policy --data &lt;phone dir&gt; --profile {profileId} --policy {policyId}
              </Code>{' '}
              (the Admin session token in <Code>CUSTODIAN_ADMIN_TOKEN</Code>).
            </Text>
          </>
        ) : (
          <Alert color="gray">
            Version {version} is {status.toLowerCase().replace('_', ' ')}: it was not signed and a newer version
            replaced it.
          </Alert>
        )}
        <ProblemAlert error={policy.error} />
      </Stack>
    </Paper>
  );
}
