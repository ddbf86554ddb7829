/**
 * Users and roles (`/users`, Admin only): the paginated list (`GET /admin/v1/users`, 20 a page),
 * "Invite user" (`POST /admin/v1/users`, step-up; fires USER_CREATED), the role of each user
 * (`PATCH …/{user_id}` `{ role }`, step-up; USER_ROLE_UPDATED), block/unblock (`{ blocked }`;
 * USER_BLOCKED/UNBLOCKED), reset password (`{ password }`; USER_PASSWORD_RESET_INITIATED), delete
 * (`DELETE`, step-up) and a drawer of the user's login networks. Sensitive requests go through
 * `useStepUp().run`; the server decides whether a fresh step-up is needed.
 */
import type { CreateUserInput, Page, Role, UpdateUserInput, User } from '@custodian/coordinator/admin-api-types';
import { Badge, Button, Group, Select, Stack, Table, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call } from '../api/client';
import { ROLE_LABELS } from '../api/roles';
import { useSession } from '../auth/session';
import { useStepUp } from '../auth/step-up';
import { PAGE_SIZE, Pager, usePageParam } from '../components/pager';
import { Empty, Loading, ProblemAlert, QueryState } from '../components/states';
import {
  ConfirmUserModal,
  InviteUserModal,
  LoginNetworksDrawer,
  ResetPasswordModal,
  ROLE_OPTIONS,
} from './users/dialogs';

/** The users screen. */
export function UsersPage() {
  const { me, can } = useSession();
  const stepUp = useStepUp();
  const qc = useQueryClient();
  const [page, setPage] = usePageParam();
  const [inviting, setInviting] = useState(false);
  const [blocking, setBlocking] = useState<User | null>(null);
  const [resetting, setResetting] = useState<User | null>(null);
  const [deleting, setDeleting] = useState<User | null>(null);
  const [networksOf, setNetworksOf] = useState<User | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  const allowed = can('adminListUsers');
  const canEdit = can('adminUpdateUser');
  const query = useQuery({
    queryKey: ['users', { page }],
    enabled: allowed,
    placeholderData: keepPreviousData,
    queryFn: () => call<Page<User>>(api.GET('/admin/v1/users', { params: { query: { page, page_size: PAGE_SIZE } } })),
  });

  if (me === undefined) return <Loading />;
  if (!allowed) return <Empty>Your role does not give access to this screen.</Empty>;

  const done = async (title: string, message: string) => {
    await qc.invalidateQueries({ queryKey: ['users'] });
    notifications.show({ color: 'green', title, message });
  };
  const update = (u: User, body: UpdateUserInput) =>
    stepUp.run(() =>
      call<User>(api.PATCH('/admin/v1/users/{user_id}', { params: { path: { user_id: u.user_id } }, body })),
    );
  const create = async (input: CreateUserInput) => {
    const u = await stepUp.run(() => call<User>(api.POST('/admin/v1/users', { body: input })));
    await done('User invited', `${u.email} can log in as ${ROLE_LABELS[u.role]} with the initial password.`);
  };
  const changeRole = async (u: User, role: Role) => {
    setActionError(null);
    try {
      await update(u, { role });
      await done('Role changed', `${u.email} is now ${ROLE_LABELS[role]}.`);
    } catch (e) {
      setActionError(e);
    }
  };
  const unblock = async (u: User) => {
    setActionError(null);
    try {
      await update(u, { blocked: false });
      await done('User unblocked', `${u.email} can log in again.`);
    } catch (e) {
      setActionError(e);
    }
  };

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Users</Title>
        {can('adminCreateUser') && <Button onClick={() => setInviting(true)}>Invite user</Button>}
      </Group>
      <ProblemAlert error={actionError} />
      <QueryState query={query} isEmpty={(d) => d.total === 0} empty="No users yet. Invite one.">
        {(data) => (
          <>
            <Table.ScrollContainer minWidth={960}>
              <Table aria-label="Users" striped highlightOnHover verticalSpacing="xs">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Email</Table.Th>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Role</Table.Th>
                    <Table.Th>TOTP</Table.Th>
                    <Table.Th>Blocked</Table.Th>
                    <Table.Th>Created</Table.Th>
                    <Table.Th>Actions</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {data.data.map((u) => {
                    const self = u.user_id === me?.user_id;
                    return (
                      <Table.Tr key={u.user_id}>
                        <Table.Td style={{ overflowWrap: 'anywhere' }}>{u.email}</Table.Td>
                        <Table.Td>{u.name}</Table.Td>
                        <Table.Td miw={170}>
                          {canEdit ? (
                            <Select
                              aria-label={`Role of ${u.email}`}
                              size="xs"
                              data={ROLE_OPTIONS}
                              value={u.role}
                              allowDeselect={false}
                              onChange={(v) => v && v !== u.role && void changeRole(u, v as Role)}
                            />
                          ) : (
                            ROLE_LABELS[u.role]
                          )}
                        </Table.Td>
                        <Table.Td>
                          {u.totp_enabled ? (
                            <Badge color="green">On</Badge>
                          ) : (
                            // the label's overflow: hidden gives it no minimum width: the table cut it ("O…")
                            <Badge color="gray" variant="light" styles={{ label: { overflow: 'visible' } }}>
                              Off
                            </Badge>
                          )}
                        </Table.Td>
                        <Table.Td>{u.blocked ? <Badge color="red">Blocked</Badge> : 'No'}</Table.Td>
                        <Table.Td>{new Date(u.created_at).toLocaleString()}</Table.Td>
                        <Table.Td>
                          <Group gap={4} wrap="nowrap">
                            {canEdit &&
                              (u.blocked ? (
                                <Button
                                  size="xs"
                                  variant="default"
                                  aria-label={`Unblock ${u.email}`}
                                  onClick={() => void unblock(u)}
                                >
                                  Unblock
                                </Button>
                              ) : (
                                <Button
                                  size="xs"
                                  variant="default"
                                  color="red"
                                  aria-label={`Block ${u.email}`}
                                  disabled={self}
                                  onClick={() => setBlocking(u)}
                                >
                                  Block
                                </Button>
                              ))}
                            {canEdit && (
                              <Button
                                size="xs"
                                variant="default"
                                aria-label={`Reset password of ${u.email}`}
                                onClick={() => setResetting(u)}
                              >
                                Reset password
                              </Button>
                            )}
                            {can('adminListUserLoginNetworks') && (
                              <Button
                                size="xs"
                                variant="subtle"
                                aria-label={`Login networks of ${u.email}`}
                                onClick={() => setNetworksOf(u)}
                              >
                                Networks
                              </Button>
                            )}
                            {can('adminDeleteUser') && (
                              <Button
                                size="xs"
                                variant="subtle"
                                color="red"
                                aria-label={`Delete ${u.email}`}
                                disabled={self}
                                onClick={() => setDeleting(u)}
                              >
                                Delete
                              </Button>
                            )}
                          </Group>
                        </Table.Td>
                      </Table.Tr>
                    );
                  })}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager page={page} total={data.total} onChange={setPage} label="Users" />
          </>
        )}
      </QueryState>
      <InviteUserModal opened={inviting} onClose={() => setInviting(false)} create={create} />
      <ConfirmUserModal
        user={blocking}
        title="Block user?"
        explanation="all their sessions end at once and they cannot log in until unblocked. Their account and history stay."
        confirmLabel="Block user"
        onClose={() => setBlocking(null)}
        confirm={async (u) => {
          await update(u, { blocked: true });
          await done('User blocked', `${u.email} can no longer log in.`);
        }}
      />
      <ResetPasswordModal
        user={resetting}
        onClose={() => setResetting(null)}
        reset={async (u, password) => {
          await update(u, { password });
          await done('Password reset', `${u.email} must log in with the new password.`);
        }}
      />
      <ConfirmUserModal
        user={deleting}
        title="Delete user?"
        explanation="the account is removed and its sessions end. This cannot be undone; the audit log keeps its history."
        confirmLabel="Delete user"
        onClose={() => setDeleting(null)}
        confirm={async (u) => {
          await stepUp.run(() =>
            call(api.DELETE('/admin/v1/users/{user_id}', { params: { path: { user_id: u.user_id } } })),
          );
          await done('User deleted', `${u.email} was removed.`);
        }}
      />
      <LoginNetworksDrawer user={networksOf} onClose={() => setNetworksOf(null)} />
    </Stack>
  );
}
