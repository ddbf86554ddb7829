// @vitest-environment jsdom
import { cleanup, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { SessionProvider } from '../src/auth/session';
import { LoginPage, safeNext } from '../src/pages/login';
import { axeViolations, me, mockFetch, renderAt } from './render';

const ME = me('ADMIN');
const CHALLENGE = { challenge_id: '00000000-0000-4000-8000-0000000000c1', expires_at: '2026-01-01T00:10:00.000Z' };
const NO_SESSION = { status: 401, body: { title: 'Login required', status: 401, code: 'SESSION_REQUIRED' } };

function renderLogin(path: string) {
  return renderAt(
    <SessionProvider>
      <LoginPage />
    </SessionProvider>,
    path,
    [
      { path: '/transfers', element: <p>Transfers landing</p> },
      { path: '/wallets', element: <p>Wallets landing</p> },
    ],
  );
}

afterEach(cleanup);

describe('login', () => {
  it('logs in in two steps with a cookie session and lands on ?next=', async () => {
    let loggedIn = false;
    const seen = mockFetch([
      ['GET /admin/v1/me', () => (loggedIn ? { body: ME } : NO_SESSION)],
      ['POST /admin/v1/login', () => ({ body: { ...CHALLENGE, method: 'email' } })],
      [
        'POST /admin/v1/login/verify',
        () => {
          loggedIn = true;
          return { body: { expires_at: '2026-01-02T00:00:00.000Z', user: ME } };
        },
      ],
    ]);
    const user = userEvent.setup();
    renderLogin('/login?next=%2Ftransfers%3Fpage%3D2');
    await user.type(await screen.findByLabelText(/^Email/, { selector: 'input' }), 'ada@example.com');
    await user.type(screen.getByLabelText(/^Password/, { selector: 'input' }), 'correct horse battery');
    await user.click(screen.getByRole('button', { name: 'Log in' }));

    const code = await screen.findByRole('textbox', { name: /^Code/ });
    expect(await axeViolations()).toEqual([]);
    expect(screen.getByText(/The code is printed in its terminal/)).toBeTruthy();
    await user.type(code, '123456');
    await user.click(screen.getByRole('button', { name: 'Verify' }));
    await screen.findByText('Transfers landing');

    const login = seen.find((r) => r.method === 'POST' && new URL(r.url).pathname === '/admin/v1/login');
    expect(await login?.json()).toEqual({ email: 'ada@example.com', password: 'correct horse battery' });
    const verify = seen.find((r) => new URL(r.url).pathname === '/admin/v1/login/verify');
    expect(await verify?.json()).toEqual({ challenge_id: CHALLENGE.challenge_id, code: '123456', transport: 'cookie' });
  });

  it('asks for the authenticator code and shows a wrong code problem', async () => {
    mockFetch([
      ['GET /admin/v1/me', () => NO_SESSION],
      ['POST /admin/v1/login', () => ({ body: { ...CHALLENGE, method: 'totp' } })],
      [
        'POST /admin/v1/login/verify',
        () => ({
          status: 401,
          body: {
            title: 'Invalid second factor',
            status: 401,
            code: 'INVALID_SECOND_FACTOR',
            detail: 'the code is wrong or was used',
          },
        }),
      ],
    ]);
    const user = userEvent.setup();
    renderLogin('/login');
    await user.type(await screen.findByLabelText(/^Email/, { selector: 'input' }), 'ada@example.com');
    await user.type(screen.getByLabelText(/^Password/, { selector: 'input' }), 'pw');
    await user.click(screen.getByRole('button', { name: 'Log in' }));
    expect(await screen.findByText(/authenticator app/)).toBeTruthy();
    await user.type(screen.getByRole('textbox', { name: /^Code/ }), '000000');
    await user.click(screen.getByRole('button', { name: 'Verify' }));
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('Invalid second factor');
    expect(alert.textContent).toContain('the code is wrong or was used');
    expect(screen.queryByText('Wallets landing')).toBeNull();
  });

  it('shows RATE_LIMITED with its Retry-After and the expired notice', async () => {
    mockFetch([
      ['GET /admin/v1/me', () => NO_SESSION],
      [
        'POST /admin/v1/login',
        () => ({ status: 429, body: { title: 'Too many attempts', status: 429, code: 'RATE_LIMITED' } }),
      ],
    ]);
    const realFetch = globalThis.fetch;
    globalThis.fetch = (async (i: RequestInfo | URL, init?: RequestInit) => {
      const r = await realFetch(i, init);
      if (r.status !== 429) return r;
      const h = new Headers(r.headers);
      h.set('Retry-After', '42');
      return new Response(await r.text(), { status: 429, headers: h });
    }) as typeof fetch;
    const user = userEvent.setup();
    renderLogin('/login?expired=1');
    expect(await screen.findByText('Your session expired; log in again.')).toBeTruthy();
    await user.type(screen.getByLabelText(/^Email/, { selector: 'input' }), 'ada@example.com');
    await user.type(screen.getByLabelText(/^Password/, { selector: 'input' }), 'pw');
    await user.click(screen.getByRole('button', { name: 'Log in' }));
    expect((await screen.findByRole('alert', { name: /Too many attempts/ })).textContent).toContain('RATE_LIMITED');
    expect(screen.getByText('Try again in 42 seconds.')).toBeTruthy();
  });
});

describe('safeNext', () => {
  it('keeps same-origin paths only', () => {
    expect(safeNext('/transfers?page=2')).toBe('/transfers?page=2');
    expect(safeNext('//evil.example/x')).toBe('/wallets');
    expect(safeNext('/\\evil.example')).toBe('/wallets');
    expect(safeNext('https://evil.example/')).toBe('/wallets');
    expect(safeNext(null)).toBe('/wallets');
  });

  it('refuses what URL parsing turns into another origin (tab, newline, backslash, //, absolute)', () => {
    // '/\t/evil.example': the URL parser drops the tab, leaving '//evil.example'
    expect(new URL('/\t/evil.example', window.location.origin).origin).not.toBe(window.location.origin);
    expect(safeNext('/\t/evil.example')).toBe('/wallets');
    expect(safeNext('/\n/evil.example')).toBe('/wallets');
    expect(safeNext('/\u0000/evil')).toBe('/wallets');
    expect(safeNext('/x\u007f')).toBe('/wallets');
    expect(safeNext('/\\evil')).toBe('/wallets');
    expect(safeNext('//evil')).toBe('/wallets');
    expect(safeNext('https://evil')).toBe('/wallets');
    expect(safeNext('evil/path')).toBe('/wallets');
    expect(safeNext('/wallets/abc?tab=1#x')).toBe('/wallets/abc?tab=1#x');
  });
});
