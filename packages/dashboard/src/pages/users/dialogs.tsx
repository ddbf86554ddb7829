/**
 * Dialogs of the users screen: invite a user (`POST /admin/v1/users`), confirm a block, reset a
 * password (`PATCH /admin/v1/users/{user_id}` with `password`: revokes the user's sessions and
 * fires USER_PASSWORD_RESET_INITIATED), confirm a delete (`DELETE …`), and the drawer of a user's
 * login networks (`GET …/login-networks`). Every dialog shows the problem of its request.
 */
import type { CreateUserInput, Role, User } from '@custodian/coordinator/admin-api-types';
import { Button, Drawer, Group, Modal, PasswordInput, Select, Stack, Table, Text, TextInput } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call } from '../../api/client';
import { ROLE_LABELS } from '../../api/roles';
import { ProblemAlert, QueryState } from '../../components/states';

/** The role choices of a Select, in the seed's order. */
export const ROLE_OPTIONS = (Object.keys(ROLE_LABELS) as Role[]).map((r) => ({ value: r, label: ROLE_LABELS[r] }));

/** A dialog's submit: busy flag, problem, and a runner that closes on success. */
function useSubmit(onDone: () => void) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const submit = async (f: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
      onDone();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, submit, reset: () => setError(null) };
}

/**
 * "Invite user": email, name, role and an initial password (the API requires one; share it with
 * the user out of band). `create(input)` performs the request (with step-up).
 */
export function InviteUserModal({
  opened,
  onClose,
  create,
}: {
  opened: boolean;
  onClose: () => void;
  create: (input: CreateUserInput) => Promise<unknown>;
}) {
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('VIEWER');
  const [password, setPassword] = useState('');
  const close = () => {
    setEmail('');
    setName('');
    setRole('VIEWER');
    setPassword('');
    s.reset();
    onClose();
  };
  const s = useSubmit(close);
  return (
    <Modal opened={opened} onClose={close} title="Invite user">
      <form
        onSubmit={(ev) => {
          ev.preventDefault();
          void s.submit(() => create({ email, name, role, password }));
        }}
      >
        <Stack>
          <TextInput
            label="Email"
            type="email"
            required
            value={email}
            onChange={(e) => setEmail(e.currentTarget.value)}
            data-autofocus
          />
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} />
          <Select
            label="Role"
            data={ROLE_OPTIONS}
            value={role}
            onChange={(v) => v && setRole(v as Role)}
            allowDeselect={false}
          />
          <PasswordInput
            label="Initial password"
            description="Give it to the user through another channel; they can change it in Settings."
            autoComplete="new-password"
            required
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
          />
          <ProblemAlert error={s.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button type="submit" loading={s.busy} disabled={email === '' || name === '' || password === ''}>
              Invite
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** A confirmation of a destructive action on `user`: what happens, and the button `confirmLabel`. */
export function ConfirmUserModal({
  user,
  title,
  explanation,
  confirmLabel,
  onClose,
  confirm,
}: {
  user: User | null;
  title: string;
  explanation: string;
  confirmLabel: string;
  onClose: () => void;
  confirm: (user: User) => Promise<unknown>;
}) {
  const s = useSubmit(onClose);
  const close = () => {
    s.reset();
    onClose();
  };
  return (
    <Modal opened={user !== null} onClose={close} title={title}>
      <Stack>
        <Text size="sm">
          <strong>{user?.email}</strong>: {explanation}
        </Text>
        <ProblemAlert error={s.error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={close}>
            Cancel
          </Button>
          <Button color="red" loading={s.busy} onClick={() => user && void s.submit(() => confirm(user))}>
            {confirmLabel}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** "Reset password" of `user`: a new password set by the Admin (the user's sessions end). */
export function ResetPasswordModal({
  user,
  onClose,
  reset,
}: {
  user: User | null;
  onClose: () => void;
  reset: (user: User, password: string) => Promise<unknown>;
}) {
  const [password, setPassword] = useState('');
  const close = () => {
    setPassword('');
    s.reset();
    onClose();
  };
  const s = useSubmit(close);
  return (
    <Modal opened={user !== null} onClose={close} title="Reset password">
      <form
        onSubmit={(ev) => {
          ev.preventDefault();
          if (user) void s.submit(() => reset(user, password));
        }}
      >
        <Stack>
          <Text size="sm">
            Set a new password for <strong>{user?.email}</strong>. Their sessions end at once; give them the new
            password through another channel.
          </Text>
          <PasswordInput
            label="New password"
            autoComplete="new-password"
            required
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
            data-autofocus
          />
          <ProblemAlert error={s.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button type="submit" color="red" loading={s.busy} disabled={password === ''}>
              Reset password
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** One network a user logged in from (IPv4 /24 or IPv6 /48). */
interface LoginNetwork {
  network: string;
  first_seen_at: string;
  last_seen_at: string;
}

/** The drawer of `user`'s login networks, oldest first. */
export function LoginNetworksDrawer({ user, onClose }: { user: User | null; onClose: () => void }) {
  const query = useQuery({
    queryKey: ['users', user?.user_id, 'login-networks'],
    enabled: user !== null,
    queryFn: () =>
      call<LoginNetwork[]>(
        api.GET('/admin/v1/users/{user_id}/login-networks', { params: { path: { user_id: user?.user_id ?? '' } } }),
      ),
  });
  return (
    <Drawer opened={user !== null} onClose={onClose} position="right" title={`Login networks of ${user?.email ?? ''}`}>
      <QueryState query={query} isEmpty={(d) => d.length === 0} empty="This user has not logged in yet.">
        {(rows) => (
          <Table.ScrollContainer minWidth={360}>
            <Table aria-label="Login networks">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Network</Table.Th>
                  <Table.Th>First seen</Table.Th>
                  <Table.Th>Last seen</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {rows.map((n) => (
                  <Table.Tr key={n.network}>
                    <Table.Td>{n.network}</Table.Td>
                    <Table.Td>{new Date(n.first_seen_at).toLocaleString()}</Table.Td>
                    <Table.Td>{new Date(n.last_seen_at).toLocaleString()}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryState>
    </Drawer>
  );
}
