/**
 * Step-up re-authentication for sensitive actions (operations marked `x-step-up`: API key
 * creation, role changes, webhook changes…). {@link useStepUp}`().run(action)` performs the action;
 * when the server answers 403 `STEP_UP_REQUIRED`, a dialog asks for the current TOTP code (accounts
 * with TOTP) or the password, calls `POST /admin/v1/session/step-up`, and retries the action once.
 * Cancelling the dialog rejects with the original problem.
 */
import { Button, Group, Modal, PasswordInput, Stack, Text, TextInput } from '@mantine/core';
import { createContext, type ReactNode, useCallback, useContext, useMemo, useRef, useState } from 'react';
import { api, call } from '../api/client';
import { isProblem } from '../api/problem';
import { ProblemAlert } from '../components/states';
import { useSession } from './session';

interface Pending {
  resolve: () => void;
  reject: () => void;
}

interface StepUpState {
  /** Run `action`; on `STEP_UP_REQUIRED` ask for the second factor, step up, run it once more. */
  run<T>(action: () => Promise<T>): Promise<T>;
}

const StepUpContext = createContext<StepUpState | null>(null);

/** Provides {@link useStepUp} and renders its dialog. */
export function StepUpProvider({ children }: { children: ReactNode }) {
  const { me, refresh } = useSession();
  const [open, setOpen] = useState(false);
  const [secret, setSecret] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const pending = useRef<Pending | null>(null);
  const totp = me?.totp_enabled === true;

  const ask = useCallback(
    () =>
      new Promise<void>((resolve, reject) => {
        pending.current = { resolve, reject };
        setSecret('');
        setError(null);
        setOpen(true);
      }),
    [],
  );

  const run = useCallback(
    async <T,>(action: () => Promise<T>): Promise<T> => {
      try {
        return await action();
      } catch (e) {
        if (!isProblem(e, 'STEP_UP_REQUIRED')) throw e;
        try {
          await ask();
        } catch {
          throw e;
        }
        return action();
      }
    },
    [ask],
  );

  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      await call(api.POST('/admin/v1/session/step-up', { body: totp ? { code: secret } : { password: secret } }));
      await refresh();
      setOpen(false);
      pending.current?.resolve();
      pending.current = null;
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const cancel = () => {
    setOpen(false);
    pending.current?.reject();
    pending.current = null;
  };

  const value = useMemo(() => ({ run }), [run]);
  return (
    <StepUpContext.Provider value={value}>
      {children}
      <Modal opened={open} onClose={cancel} title="Confirm it is you">
        <form
          onSubmit={(ev) => {
            ev.preventDefault();
            void submit();
          }}
        >
          <Stack>
            <Text size="sm">
              This action needs a fresh confirmation.{' '}
              {totp ? 'Enter the current code of your authenticator app.' : 'Enter your password.'}
            </Text>
            {totp ? (
              <TextInput
                label="Authenticator code"
                inputMode="numeric"
                autoComplete="one-time-code"
                value={secret}
                onChange={(e) => setSecret(e.currentTarget.value)}
                data-autofocus
              />
            ) : (
              <PasswordInput
                label="Password"
                autoComplete="current-password"
                value={secret}
                onChange={(e) => setSecret(e.currentTarget.value)}
                data-autofocus
              />
            )}
            <ProblemAlert error={error} />
            <Group justify="flex-end">
              <Button variant="default" onClick={cancel}>
                Cancel
              </Button>
              <Button type="submit" loading={busy} disabled={secret === ''}>
                Confirm
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>
    </StepUpContext.Provider>
  );
}

/** The step-up runner (inside {@link StepUpProvider}). */
export function useStepUp(): StepUpState {
  const s = useContext(StepUpContext);
  if (s === null) throw new Error('useStepUp outside StepUpProvider');
  return s;
}
