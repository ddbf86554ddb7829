/**
 * Login (`/login`, outside the frame), two steps: Email + Password → `POST /admin/v1/login`
 * opens a second-factor challenge; then the code (an email code, or the authenticator code when
 * the challenge's `method` is `totp`) → `POST /admin/v1/login/verify` with `transport: 'cookie'`
 * (the session rides in the HttpOnly cookie; the token is never seen by the page). On success the
 * session is re-read and the page goes to `?next=` (same-origin paths only) or `/wallets`.
 * `?expired=1` says the session expired.
 */
import type { LoginChallenge } from '@custodian/coordinator/admin-api-types';
import { Alert, Anchor, Button, Center, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { Navigate, useNavigate, useSearchParams } from 'react-router';
import { api, call } from '../api/client';
import { isProblem } from '../api/problem';
import { useSession } from '../auth/session';
import { ProblemAlert } from '../components/states';

/**
 * Where to go after login: `next` when it is a same-origin path (starts with a single '/', no
 * backslash, no control character, and still same-origin once parsed as a URL), else `/wallets`.
 */
export function safeNext(next: string | null): string {
  const fallback = '/wallets';
  if (next === null || !next.startsWith('/') || next.startsWith('//')) return fallback;
  // a backslash or a control character (U+0000–U+001F, U+007F) is dropped or turned into '/' by
  // URL parsing ('/\t/evil.example' → '//evil.example'): refuse them outright
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  if (/[\\\u0000-\u001f\u007f]/.test(next)) return fallback;
  try {
    if (new URL(next, window.location.origin).origin !== window.location.origin) return fallback;
  } catch {
    return fallback;
  }
  return next;
}

/** A call's promise that also records the answer's `Retry-After` header (seconds) for a 429. */
function withRetryAfter<R extends { response: Response }>(p: Promise<R>, set: (s: string | null) => void): Promise<R> {
  return p.then((r) => {
    set(r.response.status === 429 ? r.response.headers.get('Retry-After') : null);
    return r;
  });
}

/** The login screen (both steps). */
export function LoginPage() {
  const { me, refresh } = useSession();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const next = safeNext(params.get('next'));
  const expired = params.get('expired') === '1';
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [challenge, setChallenge] = useState<LoginChallenge | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [retryAfter, setRetryAfter] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  if (me) return <Navigate to={next} replace />;

  const attempt = async (f: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    setRetryAfter(null);
    try {
      await f();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  const login = () =>
    attempt(async () => {
      const c = await call<LoginChallenge>(
        withRetryAfter(api.POST('/admin/v1/login', { body: { email, password } }), setRetryAfter),
      );
      setPassword('');
      setCode('');
      setChallenge(c);
    });

  const verify = (c: LoginChallenge) =>
    attempt(async () => {
      // `transport` is not in the generated document yet (the coordinator accepts it): the one cast.
      const body = { challenge_id: c.challenge_id, code, transport: 'cookie' } as {
        challenge_id: string;
        code: string;
      };
      await call(withRetryAfter(api.POST('/admin/v1/login/verify', { body }), setRetryAfter));
      await refresh();
      navigate(next, { replace: true });
    });

  const restart = () => {
    setChallenge(null);
    setCode('');
    setError(null);
    setRetryAfter(null);
  };

  return (
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="lg" w="100%" maw={420}>
        <Stack>
          <Title order={1} size="h3">
            Log in to Custodian
          </Title>
          {expired && challenge === null && (
            <Alert color="yellow" title="Session ended">
              Your session expired; log in again.
            </Alert>
          )}
          {challenge === null ? (
            <form
              onSubmit={(ev) => {
                ev.preventDefault();
                void login();
              }}
            >
              <Stack>
                <TextInput
                  label="Email"
                  type="email"
                  autoComplete="username"
                  required
                  value={email}
                  onChange={(e) => setEmail(e.currentTarget.value)}
                  data-autofocus
                />
                <PasswordInput
                  label="Password"
                  autoComplete="current-password"
                  required
                  value={password}
                  onChange={(e) => setPassword(e.currentTarget.value)}
                />
                <LoginProblem error={error} retryAfter={retryAfter} />
                <Button type="submit" loading={busy} disabled={email === '' || password === ''}>
                  Log in
                </Button>
              </Stack>
            </form>
          ) : (
            <form
              onSubmit={(ev) => {
                ev.preventDefault();
                void verify(challenge);
              }}
            >
              <Stack>
                <Text size="sm">
                  {challenge.method === 'totp'
                    ? 'Enter the current 6-digit code of your authenticator app.'
                    : `We sent a 6-digit code to ${email}.`}
                </Text>
                <TextInput
                  label="Code"
                  description={
                    challenge.method === 'totp'
                      ? 'Authenticator code'
                      : 'Check your email. Running `pnpm start`? The code is printed in its terminal.'
                  }
                  inputMode="numeric"
                  autoComplete="one-time-code"
                  maxLength={6}
                  required
                  value={code}
                  onChange={(e) => setCode(e.currentTarget.value.trim())}
                  autoFocus
                />
                <LoginProblem error={error} retryAfter={retryAfter} />
                <Button type="submit" loading={busy} disabled={code.length !== 6}>
                  Verify
                </Button>
                <Anchor component="button" type="button" size="sm" onClick={restart}>
                  Start over
                </Anchor>
              </Stack>
            </form>
          )}
        </Stack>
      </Paper>
    </Center>
  );
}

/** The problem of a login step, with the wait of a 429 `RATE_LIMITED` (`Retry-After`, seconds). */
function LoginProblem({ error, retryAfter }: { error: unknown; retryAfter: string | null }) {
  if (error === null) return null;
  return (
    <Stack gap={4}>
      <ProblemAlert error={error} />
      {isProblem(error, 'RATE_LIMITED') && retryAfter !== null && (
        <Text size="sm" c="red">
          Try again in {retryAfter} seconds.
        </Text>
      )}
    </Stack>
  );
}
