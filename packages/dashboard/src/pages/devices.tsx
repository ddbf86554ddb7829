/**
 * Devices screen (`/devices`): the mobile signers. First the pending enrollment requests, each with
 * its fingerprint shown large for the out-of-band comparison with the phone, and Approve (the
 * match checkbox, the owner, then `POST /admin/v1/devices/{id}/approve` with `{ fingerprint,
 * user_id }` under step-up) or Reject; then every device with its status, platform, fingerprint
 * and owner, and Remove (explaining what removal does and does not do to the master key).
 * `GET /admin/v1/devices` answers the whole list, so the table pages it in the page (20 rows).
 */
import type { Device, DeviceStatus, Page, User } from '@custodian/coordinator/admin-api-types';
import {
  Badge,
  Button,
  Card,
  Checkbox,
  Group,
  List,
  Modal,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  Title,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call } from '../api/client';
import { useSession } from '../auth/session';
import { useStepUp } from '../auth/step-up';
import { PAGE_SIZE, Pager, usePageParam } from '../components/pager';
import { Empty, ProblemAlert, QueryState } from '../components/states';

/** Query key of the device list (shared with the master key screen's party choice). */
export const DEVICES_KEY = ['devices'] as const;

const STATUS_COLOR: Readonly<Record<DeviceStatus, string>> = {
  PENDING: 'yellow',
  APPROVED: 'green',
  REJECTED: 'red',
  REMOVED: 'gray',
};

/**
 * A fingerprint grouped for reading aloud: hex digits (spaces and colons dropped) in groups of 4
 * separated by spaces, e.g. `ab12 cd34 …`.
 */
export function groupFingerprint(fp: string): string {
  const hex = fp.replace(/[\s:]/g, '');
  return (hex.match(/.{1,4}/g) ?? []).join(' ');
}

/** A fingerprint in large monospace, for comparing with the phone's screen. */
function BigFingerprint({ value }: { value: string }) {
  return (
    <Text ff="monospace" fz="xl" fw={600} style={{ overflowWrap: 'anywhere', letterSpacing: '0.05em' }}>
      {groupFingerprint(value)}
    </Text>
  );
}

/** All devices (any status), in enrollment order. */
export function useDevices(enabled = true) {
  return useQuery({
    queryKey: DEVICES_KEY,
    queryFn: async () =>
      (await call<Page<Device>>(api.GET('/admin/v1/devices', { params: { query: { page: 1, page_size: 200 } } }))).data,
    enabled,
  });
}

/** The dashboard users (first 200), to choose a device's owner and name it in the table. */
function useUsers(enabled: boolean) {
  return useQuery({
    queryKey: ['users', 'all'],
    queryFn: () => call<Page<User>>(api.GET('/admin/v1/users', { params: { query: { page: 1, page_size: 200 } } })),
    enabled,
  });
}

/** Approve dialog: fingerprint again, the match checkbox, the owner; sends `{ fingerprint, user_id }`. */
function ApproveModal({ device, users, onClose }: { device: Device; users: User[]; onClose: () => void }) {
  const qc = useQueryClient();
  const stepUp = useStepUp();
  const [matches, setMatches] = useState(false);
  const [owner, setOwner] = useState<string | null>(null);
  const approve = useMutation({
    mutationFn: (userId: string) =>
      stepUp.run(() =>
        call(
          api.POST('/admin/v1/devices/{device_id}/approve', {
            params: { path: { device_id: device.device_id } },
            body: { fingerprint: device.fingerprint, user_id: userId },
          }),
        ),
      ),
    onSuccess: async () => {
      notifications.show({ color: 'green', message: `Device “${device.name}” approved` });
      await qc.invalidateQueries({ queryKey: DEVICES_KEY });
      onClose();
    },
  });
  return (
    <Modal opened onClose={onClose} title={`Approve device “${device.name}”`} size="lg">
      <Stack>
        <Text size="sm">
          Read the fingerprint shown on the phone aloud (or side by side) and compare every group with this one. Approve
          only if all of them match: a different fingerprint means another key is trying to enrol.
        </Text>
        <BigFingerprint value={device.fingerprint} />
        <Checkbox
          label="The fingerprint matches the one on the phone"
          checked={matches}
          onChange={(e) => setMatches(e.currentTarget.checked)}
        />
        <Select
          label="Owner"
          description="The dashboard user who holds the phone"
          placeholder="Choose a user"
          data={users.filter((u) => !u.blocked).map((u) => ({ value: u.user_id, label: `${u.name} (${u.email})` }))}
          value={owner}
          onChange={setOwner}
          searchable
          required
        />
        <ProblemAlert error={approve.error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button
            color="green"
            disabled={!matches || owner === null}
            loading={approve.isPending}
            onClick={() => owner !== null && approve.mutate(owner)}
          >
            Approve device
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

type Decision = { kind: 'reject' | 'remove'; device: Device };

/** Confirmation of a reject or a remove, with what it does. */
function DecisionModal({ decision, onClose }: { decision: Decision; onClose: () => void }) {
  const qc = useQueryClient();
  const { device, kind } = decision;
  const run = useMutation({
    mutationFn: () =>
      kind === 'reject'
        ? call(api.POST('/admin/v1/devices/{device_id}/reject', { params: { path: { device_id: device.device_id } } }))
        : call(api.DELETE('/admin/v1/devices/{device_id}', { params: { path: { device_id: device.device_id } } })),
    onSuccess: async () => {
      notifications.show({
        color: 'green',
        message: `Device “${device.name}” ${kind === 'reject' ? 'rejected' : 'removed'}`,
      });
      await qc.invalidateQueries({ queryKey: DEVICES_KEY });
      onClose();
    },
  });
  return (
    <Modal
      opened
      onClose={onClose}
      title={kind === 'reject' ? `Reject enrollment of “${device.name}”?` : `Remove device “${device.name}”?`}
    >
      <Stack>
        {kind === 'reject' ? (
          <Text size="sm">
            The enrollment request is refused; the phone is told so and stops asking. To use it later it must enrol
            again.
          </Text>
        ) : (
          <>
            <Text size="sm">Removing takes effect at once:</Text>
            <List size="sm" spacing={4}>
              <List.Item>the phone is disconnected and cannot reconnect;</List.Item>
              <List.Item>its pending approval requests are dropped and a ceremony it is in ends ABORTED;</List.Item>
              <List.Item>the server signers are told to refuse its approvals from now on.</List.Item>
            </List>
            <Text size="sm" fw={600}>
              What removal does not do: the phone still holds its key share, and the parties of a master key are fixed
              at its ceremony. If this device is a party of a master key, that key keeps needing it until you replace
              the signer (or reshare) on the Master key screen — with fewer parties left, the key is closer to being
              unusable.
            </Text>
          </>
        )}
        <ProblemAlert error={run.error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button color="red" loading={run.isPending} onClick={() => run.mutate()}>
            {kind === 'reject' ? 'Reject device' : 'Remove device'}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** The Devices screen (Admin only; the route checks `adminListDevices`). */
export function DevicesPage() {
  const { can } = useSession();
  const canApprove = can('adminApproveDevice');
  const canReject = can('adminRejectDevice');
  const canRemove = can('adminRemoveDevice');
  const devices = useDevices();
  const users = useUsers(can('adminListUsers'));
  const [page, setPage] = usePageParam();
  const [approving, setApproving] = useState<Device | null>(null);
  const [decision, setDecision] = useState<Decision | null>(null);
  const userName = (id: string | null) =>
    id === null ? '—' : (users.data?.data.find((u) => u.user_id === id)?.name ?? id);

  return (
    <Stack>
      <Title order={2}>Devices</Title>
      <Title order={3}>Pending enrollment requests</Title>
      <QueryState
        query={devices}
        isEmpty={(d) => !d.some((x) => x.status === 'PENDING')}
        empty="No enrollment request is waiting. Enrol a phone with the mobile app; its request appears here."
      >
        {(list) => (
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            {list
              .filter((d) => d.status === 'PENDING')
              .map((d) => (
                <Card key={d.device_id} withBorder component="section" aria-label={`Enrollment request ${d.name}`}>
                  <Stack gap="xs">
                    <Group justify="space-between">
                      <Text fw={600}>{d.name}</Text>
                      <Text size="sm" c="dimmed">
                        {d.platform} {d.os_version} · requested {new Date(d.created_at).toLocaleString()}
                      </Text>
                    </Group>
                    <Text size="sm" c="dimmed">
                      Fingerprint
                    </Text>
                    <BigFingerprint value={d.fingerprint} />
                    {(canApprove || canReject) && (
                      <Group>
                        {canApprove && (
                          <Button onClick={() => setApproving(d)} aria-label={`Approve ${d.name}`}>
                            Approve
                          </Button>
                        )}
                        {canReject && (
                          <Button
                            variant="light"
                            color="red"
                            onClick={() => setDecision({ kind: 'reject', device: d })}
                            aria-label={`Reject ${d.name}`}
                          >
                            Reject
                          </Button>
                        )}
                      </Group>
                    )}
                  </Stack>
                </Card>
              ))}
          </SimpleGrid>
        )}
      </QueryState>

      <Title order={3}>All devices</Title>
      <QueryState query={devices} isEmpty={(d) => d.length === 0} empty="No device has enrolled yet.">
        {(list) => (
          <>
            <Table.ScrollContainer minWidth={900}>
              <Table aria-label="All devices" striped>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Status</Table.Th>
                    <Table.Th>Platform</Table.Th>
                    <Table.Th>Fingerprint</Table.Th>
                    <Table.Th>Owner</Table.Th>
                    <Table.Th>Enrolled</Table.Th>
                    {canRemove && <Table.Th>Actions</Table.Th>}
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {list.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE).map((d) => (
                    <Table.Tr key={d.device_id}>
                      <Table.Td>{d.name}</Table.Td>
                      <Table.Td>
                        {/* the label's overflow: hidden gives it no minimum width, so the table cut it ("PENDI…") */}
                        <Badge
                          color={STATUS_COLOR[d.status]}
                          variant="light"
                          styles={{ label: { overflow: 'visible' } }}
                        >
                          {d.status}
                        </Badge>
                      </Table.Td>
                      <Table.Td>{d.platform ? `${d.platform} ${d.os_version ?? ''}`.trim() : '—'}</Table.Td>
                      <Table.Td>
                        <Text ff="monospace" size="xs" style={{ overflowWrap: 'anywhere' }}>
                          {groupFingerprint(d.fingerprint)}
                        </Text>
                      </Table.Td>
                      <Table.Td>{userName(d.user_id)}</Table.Td>
                      <Table.Td>{new Date(d.created_at).toLocaleDateString()}</Table.Td>
                      {canRemove && (
                        <Table.Td>
                          {d.status !== 'REMOVED' && (
                            <Button
                              size="xs"
                              variant="light"
                              color="red"
                              onClick={() => setDecision({ kind: 'remove', device: d })}
                              aria-label={`Remove ${d.name}`}
                            >
                              Remove
                            </Button>
                          )}
                        </Table.Td>
                      )}
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager page={page} total={list.length} onChange={setPage} label="Devices" />
          </>
        )}
      </QueryState>
      {users.isError && canApprove && <ProblemAlert error={users.error} title="The users could not be loaded" />}
      {approving !== null &&
        (users.data ? (
          <ApproveModal device={approving} users={users.data.data} onClose={() => setApproving(null)} />
        ) : (
          <Modal opened onClose={() => setApproving(null)} title="Approve device">
            <Empty>Loading the users…</Empty>
          </Modal>
        ))}
      {decision !== null && <DecisionModal decision={decision} onClose={() => setDecision(null)} />}
    </Stack>
  );
}
