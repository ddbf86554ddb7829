// @vitest-environment jsdom
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { SessionProvider } from '../src/auth/session';
import { StepUpProvider } from '../src/auth/step-up';
import { SettingsPage } from '../src/pages/settings';
import { axeViolations, me, mockFetch, renderAt } from './render';

const ME = me('FINANCE_MANAGER', { email: 'fin@example.com', name: 'Fin Manager' });
const ENROLLMENT = {
  secret: 'JBSWY3DPEHPK3PXP',
  otpauth_uri: 'otpauth://totp/Custodian:fin%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=Custodian',
};
const STEP_UP = { status: 403, body: { title: 'Step-up required', status: 403, code: 'STEP_UP_REQUIRED' } };
const path = (r: Request) => `${r.method} ${new URL(r.url).pathname}`;

function renderSettings() {
  return renderAt(
    <SessionProvider>
      <StepUpProvider>
        <SettingsPage />
      </StepUpProvider>
    </SessionProvider>,
    '/settings',
  );
}

afterEach(cleanup);

describe('settings', () => {
  it('shows the account and enrols an authenticator after a step-up: QR, secret, confirm', async () => {
    let totp = false;
    let fresh = false;
    const seen = mockFetch([
      ['GET /admin/v1/me', () => ({ body: { ...ME, totp_enabled: totp } })],
      [
        'POST /admin/v1/session/step-up',
        () => {
          fresh = true;
          return { body: { method: 'password', step_up_expires_at: '2026-01-01T00:05:00.000Z' } };
        },
      ],
      ['POST /admin/v1/me/totp', () => (fresh ? { body: ENROLLMENT } : STEP_UP)],
      [
        'POST /admin/v1/me/totp/confirm',
        () => {
          totp = true;
          return { body: { ...ME, totp_enabled: true } };
        },
      ],
    ]);
    const user = userEvent.setup();
    renderSettings();
    expect(await screen.findByText('fin@example.com')).toBeTruthy();
    expect(screen.getByText('Finance Manager')).toBeTruthy();

    await user.click(screen.getByRole('button', { name: 'Set up authenticator' }));
    const dialog = await screen.findByRole('dialog', { name: 'Confirm it is you' });
    await user.type(within(dialog).getByLabelText(/^Password/, { selector: 'input' }), 'my password');
    await user.click(within(dialog).getByRole('button', { name: 'Confirm' }));

    expect(await screen.findByRole('img', { name: 'Authenticator QR code' })).toBeTruthy();
    expect(screen.getByText(ENROLLMENT.secret)).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Copy secret' })).toBeTruthy();
    expect(await axeViolations()).toEqual([]);
    await user.type(screen.getByRole('textbox', { name: /^Authenticator code/ }), '654321');
    await user.click(screen.getByRole('button', { name: 'Confirm authenticator' }));

    expect(await screen.findByText('Enabled')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Disable authenticator' })).toBeTruthy();
    const confirm = seen.find((r) => path(r) === 'POST /admin/v1/me/totp/confirm');
    expect(await confirm?.json()).toEqual({ code: '654321' });
    const stepUp = seen.find((r) => path(r) === 'POST /admin/v1/session/step-up');
    expect(await stepUp?.json()).toEqual({ password: 'my password' });
  });

  it('disables the authenticator with a current code, after a confirmation', async () => {
    let totp = true;
    const seen = mockFetch([
      ['GET /admin/v1/me', () => ({ body: { ...ME, totp_enabled: totp } })],
      [
        'POST /admin/v1/me/totp/disable',
        () => {
          totp = false;
          return { body: { ...ME, totp_enabled: false } };
        },
      ],
    ]);
    const user = userEvent.setup();
    renderSettings();
    await user.click(await screen.findByRole('button', { name: 'Disable authenticator' }));
    const dialog = await screen.findByRole('dialog', { name: 'Disable the authenticator?' });
    await user.type(within(dialog).getByRole('textbox', { name: /^Authenticator code/ }), '111222');
    await user.click(within(dialog).getByRole('button', { name: 'Disable authenticator' }));
    expect(await screen.findByText('Not set up')).toBeTruthy();
    const req = seen.find((r) => path(r) === 'POST /admin/v1/me/totp/disable');
    expect(await req?.json()).toEqual({ code: '111222' });
  });

  it('changes the password and shows a 422 problem of the password rule', async () => {
    let weak = true;
    const seen = mockFetch([
      ['GET /admin/v1/me', () => ({ body: ME })],
      [
        'POST /admin/v1/me/password',
        () =>
          weak
            ? {
                status: 422,
                body: {
                  title: 'Request validation failed',
                  status: 422,
                  code: 'VALIDATION_FAILED',
                  detail: 'the password is too easy to guess',
                  errors: [{ field: 'new_password', message: 'add another word or two' }],
                },
              }
            : { status: 204 },
      ],
    ]);
    const user = userEvent.setup();
    renderSettings();
    await user.type(await screen.findByLabelText(/^Current password/, { selector: 'input' }), 'old one');
    await user.type(screen.getByLabelText(/^New password/, { selector: 'input' }), 'password1');
    await user.type(screen.getByLabelText(/^Repeat new password/, { selector: 'input' }), 'password1');
    await user.click(screen.getByRole('button', { name: 'Change password' }));
    const alert = await screen.findByRole('alert', { name: 'Request validation failed' });
    expect(alert.textContent).toContain('new_password: add another word or two');

    weak = false;
    await user.click(screen.getByRole('button', { name: 'Change password' }));
    await waitFor(() => expect(screen.queryByRole('alert', { name: 'Request validation failed' })).toBeNull());
    expect(await screen.findByText('Password changed')).toBeTruthy();
    const last = seen.filter((r) => path(r) === 'POST /admin/v1/me/password').at(-1);
    expect(await last?.json()).toEqual({ current_password: 'old one', new_password: 'password1' });
  });
});
