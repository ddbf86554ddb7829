/**
 * Settings (`/settings`, every role): the signed-in account (name, email, role), the
 * authenticator app (TOTP: enrol with `POST /admin/v1/me/totp` → QR code and secret → confirm
 * with a code, `/me/totp/confirm`, both behind a fresh step-up; disable with a current code,
 * `/me/totp/disable`, which is its own step-up), and a change of the own password
 * (`POST /admin/v1/me/password`; the password rule's failures come back as 422 problems).
 */
import type { TotpEnrollment } from '@custodian/coordinator/admin-api-types';
import {
  Badge,
  Button,
  Group,
  Modal,
  Paper,
  PasswordInput,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useState } from 'react';
import { api, call } from '../api/client';
import { ROLE_LABELS } from '../api/roles';
import { useSession } from '../auth/session';
import { useStepUp } from '../auth/step-up';
import { CopyValue, QrCode } from '../components/copy';
import { Loading, ProblemAlert } from '../components/states';

/** The settings screen of the signed-in user. */
export function SettingsPage() {
  const { me } = useSession();
  if (!me) return <Loading />;
  return (
    <Stack maw={720}>
      <Title order={2}>Settings</Title>
      <Paper withBorder p="md">
        <Title order={3} size="h4" mb="sm">
          Your account
        </Title>
        <SimpleGrid cols={{ base: 1, xs: 3 }}>
          <Field label="Name" value={me.name} />
          <Field label="Email" value={me.email} />
          <Field label="Role" value={ROLE_LABELS[me.role]} />
        </SimpleGrid>
      </Paper>
      <Authenticator enabled={me.totp_enabled} />
      <ChangePassword />
    </Stack>
  );
}

function Field({ label, value }: { label: string; value: string }) {
  return (
    <div>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text style={{ overflowWrap: 'anywhere' }}>{value}</Text>
    </div>
  );
}

/** One asynchronous action's busy flag and problem. */
function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (f: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, clear: () => setError(null) };
}

/** The authenticator app (TOTP) card: enrol (or replace), confirm, disable. */
function Authenticator({ enabled }: { enabled: boolean }) {
  const { refresh } = useSession();
  const stepUp = useStepUp();
  const [enrollment, setEnrollment] = useState<TotpEnrollment | null>(null);
  const [code, setCode] = useState('');
  const [disabling, setDisabling] = useState(false);
  const [disableCode, setDisableCode] = useState('');
  const action = useAction();
  const disable = useAction();

  const start = () =>
    action.run(async () => {
      const e = await stepUp.run(() => call<TotpEnrollment>(api.POST('/admin/v1/me/totp')));
      setCode('');
      setEnrollment(e);
    });
  const confirm = () =>
    action.run(async () => {
      await stepUp.run(() => call(api.POST('/admin/v1/me/totp/confirm', { body: { code } })));
      setEnrollment(null);
      setCode('');
      await refresh();
      notifications.show({
        color: 'green',
        title: 'Authenticator enabled',
        message: 'Log in and confirm sensitive actions with its codes. Your other sessions were ended.',
      });
    });
  const turnOff = () =>
    disable.run(async () => {
      await call(api.POST('/admin/v1/me/totp/disable', { body: { code: disableCode } }));
      setDisabling(false);
      setDisableCode('');
      await refresh();
      notifications.show({
        color: 'green',
        title: 'Authenticator disabled',
        message: 'Login codes now come by email. Your other sessions were ended.',
      });
    });

  return (
    <Paper withBorder p="md">
      <Stack>
        <Group justify="space-between">
          <Title order={3} size="h4">
            Authenticator app
          </Title>
          {enabled ? (
            <Badge color="green">Enabled</Badge>
          ) : (
            <Badge color="gray" variant="light">
              Not set up
            </Badge>
          )}
        </Group>
        <Text size="sm" c="dimmed">
          {enabled
            ? 'Login and sensitive actions ask for a code of your authenticator app.'
            : 'Without an authenticator, login codes come by email. An authenticator app (TOTP, 6 digits, 30 s) is safer.'}
        </Text>
        {enrollment === null ? (
          <Group>
            <Button onClick={() => void start()} loading={action.busy}>
              {enabled ? 'Replace authenticator' : 'Set up authenticator'}
            </Button>
            {enabled && (
              <Button
                color="red"
                variant="light"
                onClick={() => {
                  disable.clear();
                  setDisableCode('');
                  setDisabling(true);
                }}
              >
                Disable authenticator
              </Button>
            )}
          </Group>
        ) : (
          <form
            onSubmit={(ev) => {
              ev.preventDefault();
              void confirm();
            }}
          >
            <Stack>
              <Text size="sm">
                Scan the QR code with your authenticator app (or enter the secret by hand), then enter the code it
                shows.
              </Text>
              <QrCode value={enrollment.otpauth_uri} alt="Authenticator QR code" />
              <CopyValue value={enrollment.secret} label="secret" />
              <TextInput
                label="Authenticator code"
                inputMode="numeric"
                autoComplete="one-time-code"
                maxLength={6}
                required
                value={code}
                onChange={(e) => setCode(e.currentTarget.value.trim())}
                maw={240}
              />
              <Group>
                <Button type="submit" loading={action.busy} disabled={code.length !== 6}>
                  Confirm authenticator
                </Button>
                <Button variant="default" onClick={() => setEnrollment(null)}>
                  Cancel
                </Button>
              </Group>
            </Stack>
          </form>
        )}
        <ProblemAlert error={action.error} />
      </Stack>
      <Modal opened={disabling} onClose={() => setDisabling(false)} title="Disable the authenticator?">
        <form
          onSubmit={(ev) => {
            ev.preventDefault();
            void turnOff();
          }}
        >
          <Stack>
            <Text size="sm">
              Login codes will come by email instead, and your other sessions end. Enter a current code of your
              authenticator app to confirm.
            </Text>
            <TextInput
              label="Authenticator code"
              inputMode="numeric"
              autoComplete="one-time-code"
              maxLength={6}
              required
              value={disableCode}
              onChange={(e) => setDisableCode(e.currentTarget.value.trim())}
              data-autofocus
            />
            <ProblemAlert error={disable.error} />
            <Group justify="flex-end">
              <Button variant="default" onClick={() => setDisabling(false)}>
                Cancel
              </Button>
              <Button type="submit" color="red" loading={disable.busy} disabled={disableCode.length !== 6}>
                Disable authenticator
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>
    </Paper>
  );
}

/** Change the own password: current, new, repeated (`POST /admin/v1/me/password`, 204). */
function ChangePassword() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [repeat, setRepeat] = useState('');
  const action = useAction();
  const mismatch = repeat !== '' && repeat !== next;
  const submit = () =>
    action.run(async () => {
      await call(api.POST('/admin/v1/me/password', { body: { current_password: current, new_password: next } }));
      setCurrent('');
      setNext('');
      setRepeat('');
      notifications.show({ color: 'green', title: 'Password changed', message: 'Your other sessions were ended.' });
    });
  return (
    <Paper withBorder p="md">
      <form
        onSubmit={(ev) => {
          ev.preventDefault();
          void submit();
        }}
      >
        <Stack maw={400}>
          <Title order={3} size="h4">
            Change password
          </Title>
          <PasswordInput
            label="Current password"
            autoComplete="current-password"
            required
            value={current}
            onChange={(e) => setCurrent(e.currentTarget.value)}
          />
          <PasswordInput
            label="New password"
            description="Long and hard to guess; a weak password is refused."
            autoComplete="new-password"
            required
            value={next}
            onChange={(e) => setNext(e.currentTarget.value)}
          />
          <PasswordInput
            label="Repeat new password"
            autoComplete="new-password"
            required
            value={repeat}
            error={mismatch ? 'The passwords differ' : undefined}
            onChange={(e) => setRepeat(e.currentTarget.value)}
          />
          <ProblemAlert error={action.error} />
          <Group>
            <Button type="submit" loading={action.busy} disabled={current === '' || next === '' || repeat !== next}>
              Change password
            </Button>
          </Group>
        </Stack>
      </form>
    </Paper>
  );
}
