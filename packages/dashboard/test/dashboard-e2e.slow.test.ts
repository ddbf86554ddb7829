/**
 * The dashboard end to end in real Chromium (issue #24): the operator onboarding of seed §1 on a
 * real stack (test/e2e/stack.ts: anvil, the coordinator serving the built dashboard, two server
 * signers, two phone simulators, each its own process group). Only the first Admin is created with
 * the CLI (`custodian admin init` and the bootstrap token); the rest the operator does in the
 * browser: login with the mailed code, TOTP enrolment, both phones approved by fingerprint, servers
 * registered, the 3-of-4 master key ceremony followed live, an API key, a webhook, a policy saved as
 * a draft and signed on the phone, a wallet, a deposit, a transfer followed live to SENT, a second
 * one cancelled, and a Viewer who sees no admin action.
 *
 * Every screen visited is checked with axe-core at 1280 px (no serious or critical violation) and
 * for horizontal overflow at 360 px, and screenshotted to `artifacts/dashboard/<nn>-<screen>.png`
 * (repository root, gitignored; CI keeps the folder as the run's artifacts). One phase per `it`,
 * sharing the stack; each phase asserts real outcomes (server state read back through the API).
 * Needs Chromium (scripts/install-chromium.sh) and the built CLI (`npx tsc -b`); the dashboard is
 * built in beforeAll (scripts/build-dashboard.mjs, skipped when fresh).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, launch, overflow, screenshot, totp } from './e2e/browser';
import { DESTINATION, ROOT, type Stack, startStack, waitFor } from './e2e/stack';

const ETH = 10n ** 18n;

let stack: Stack;
let browser: Browser;
let admin: BrowserContext;
let page: Page;
const t0 = Date.now();
/** What the phases learn and later phases use. */
const s = {
  totpSecret: '',
  profileId: '',
  adminDeviceKey: '',
  apiKey: '',
  ethAssetId: '',
  walletId: '',
  address: '',
  viewerPassword: `viewer ${Math.random().toString(36).slice(2)} password`,
};

/** A label pattern: exactly `name`, with or without the required-field asterisk. */
const field = (name: string) => new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}( \\*)?$`);

/** Check the current screen: axe-core at 1280 px, no horizontal overflow at 360 px, a screenshot. */
async function checkScreen(p: Page, name: string): Promise<void> {
  await p.setViewportSize({ width: 1280, height: 900 });
  await p.waitForLoadState('networkidle').catch(() => {});
  const v = await axeViolations(p);
  expect(v, `axe-core on ${name}:\n${v.join('\n')}`).toEqual([]);
  await screenshot(p, name);
  await p.setViewportSize({ width: 360, height: 800 });
  await p.waitForTimeout(150);
  expect(await overflow(p), `horizontal overflow at 360 px on ${name}`).toBeLessThanOrEqual(0);
  await p.setViewportSize({ width: 1280, height: 900 });
}

/** Open a screen through the main navigation and wait for its heading. */
async function nav(p: Page, label: string, heading: string | RegExp = label): Promise<void> {
  await p.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name: label, exact: true }).click();
  await p.getByRole('heading', { level: 2, name: heading }).waitFor();
}

let lastStep = -1;
/**
 * The Admin's next TOTP code: the coordinator accepts a code once (RFC 6238 §5.2), so a second use
 * within the same 30 s step waits for the next step.
 */
async function nextTotp(): Promise<string> {
  let step = Math.floor(Date.now() / 30_000);
  if (step <= lastStep) {
    await new Promise((r) => setTimeout(r, (lastStep + 1) * 30_000 - Date.now() + 250));
    step = lastStep + 1;
  }
  lastStep = step;
  return totp(s.totpSecret, step * 30_000);
}

/** Answer the step-up dialog ("Confirm it is you") with a fresh TOTP code, if it shows. */
async function stepUp(p: Page): Promise<void> {
  const dialog = p.getByRole('dialog', { name: 'Confirm it is you' });
  try {
    await dialog.waitFor({ timeout: 3_000 });
  } catch {
    return; // the session is still stepped up
  }
  const code = dialog.getByLabel(field('Authenticator code'));
  if (await code.count()) await code.fill(await nextTotp());
  else await dialog.getByLabel(field('Password')).fill(stack.adminPassword);
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await dialog.waitFor({ state: 'hidden' });
}

/** Admin API GET with the test's own bearer session (reads server state back; logs in again on a 401). */
async function get<T>(path: string): Promise<T> {
  const send = async (fresh: boolean) =>
    fetch(`${stack.url}${path}`, { headers: { authorization: `Bearer ${await stack.apiToken(fresh)}` } });
  let r = await send(false);
  if (r.status === 401) r = await send(true);
  if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

/** The rows of a list answer: `{ data: [...] }` or a bare array. */
const rows = <T>(v: { data: T[] } | T[]): T[] => (Array.isArray(v) ? v : v.data);

/** Log `email` in through the login screen with the mailed code. */
async function login(p: Page, email: string, password: string): Promise<void> {
  await p.goto(`${stack.url}/login`);
  await p.getByLabel(field('Email')).fill(email);
  await p.getByLabel(field('Password')).fill(password);
  const seen = await stack.mailSeen();
  await p.getByRole('button', { name: 'Log in' }).click();
  await p.getByLabel(field('Code')).fill(await stack.nextLoginCode(email, seen));
  await p.getByRole('button', { name: 'Verify' }).click();
  await p.getByRole('navigation', { name: 'Main navigation' }).waitFor();
}

beforeAll(async () => {
  mkdirSync(join(ROOT, 'docs/images'), { recursive: true });
  execFileSync(process.execPath, [join(ROOT, 'scripts/build-dashboard.mjs')], { stdio: 'inherit' });
  [stack, browser] = await Promise.all([startStack(), launch()]);
  admin = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
  page = await admin.newPage();
}, 300_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await stack?.close();
  console.log(`dashboard e2e: ${((Date.now() - t0) / 1000).toFixed(0)} s in all`);
}, 60_000);

/** On a failure, the processes' log tails help more than a selector timeout. */
function phase(name: string, f: () => Promise<void>, timeout = 120_000) {
  it(
    name,
    async () => {
      try {
        await f();
      } catch (e) {
        await screenshot(page, `failed-${name.replace(/\W+/g, '-').slice(0, 40)}`).catch(() => {});
        throw new Error(`${(e as Error).message}\n${stack.logs()}`);
      }
    },
    timeout,
  );
}

describe.sequential('dashboard end to end (Chromium)', () => {
  phase('first Admin logs in with the mailed code; the login screen passes axe', async () => {
    await page.goto(`${stack.url}/login`);
    await page.getByLabel(field('Email')).waitFor();
    await checkScreen(page, 'login');
    await login(page, stack.adminEmail, stack.adminPassword);
    expect(await page.getByRole('button', { name: 'Log out' }).isVisible()).toBe(true);
    const profiles = await get<{ data: { profile_id: string }[] } | { profile_id: string }[]>('/admin/v1/profiles');
    s.profileId = (Array.isArray(profiles) ? profiles : profiles.data)[0]?.profile_id as string;
    expect(s.profileId).toBeTruthy();
  });

  phase('TOTP enrolment in Settings', async () => {
    await nav(page, 'Settings');
    await page.getByRole('button', { name: 'Set up authenticator' }).click();
    await stepUp(page);
    const secret = page.locator('code').filter({ hasText: /^[A-Z2-7]{16,}=*$/ });
    await secret.first().waitFor();
    s.totpSecret = ((await secret.first().textContent()) ?? '').trim();
    await page.getByLabel(field('Authenticator code')).fill(await nextTotp());
    stack.totpCode = nextTotp;
    await checkScreen(page, 'settings-totp');
    await page.getByRole('button', { name: 'Confirm authenticator' }).click();
    await page.getByRole('button', { name: 'Replace authenticator' }).waitFor();
    const me = await get<{ totp_enabled?: boolean }>('/admin/v1/me');
    expect(me.totp_enabled).toBe(true);
  });

  phase('both phones approved by fingerprint on the Devices screen', async () => {
    await nav(page, 'Devices');
    for (const phone of stack.phones) {
      const card = page.getByRole('region', { name: `Enrollment request ${phone.name}` });
      await card.waitFor();
      // the screen shows the fingerprint the phone printed
      const shown = ((await card.textContent()) ?? '').replace(/\s/g, '');
      expect(shown).toContain(phone.fingerprint.replace(/\s/g, ''));
    }
    await checkScreen(page, 'devices-pending');
    for (const phone of stack.phones) {
      await page.getByRole('button', { name: `Approve ${phone.name}` }).click();
      const dialog = page.getByRole('dialog', { name: `Approve device “${phone.name}”` });
      expect(((await dialog.textContent()) ?? '').replace(/\s/g, '')).toContain(phone.fingerprint.replace(/\s/g, ''));
      await dialog.getByLabel(field('The fingerprint matches the one on the phone')).check();
      await dialog.getByLabel(field('Owner')).click();
      await page.getByRole('option', { name: new RegExp(stack.adminEmail) }).click();
      await dialog.getByRole('button', { name: /^Approve/ }).click();
      await stepUp(page);
      await dialog.waitFor({ state: 'hidden' });
    }
    for (const phone of stack.phones) {
      const d = await get<{ status: string; public_key: string }>(`/admin/v1/devices/${phone.deviceId}`);
      expect(d.status).toBe('APPROVED');
      if (phone === stack.phones[0]) s.adminDeviceKey = d.public_key;
    }
    await checkScreen(page, 'devices');
    // the phones' side: the signers trust the Admin's device; both phones run (auto-approve)
    await stack.trustAdminDevice(stack.phones[0]?.deviceId as string, s.adminDeviceKey);
    await Promise.all([stack.startPhone(0, s.adminDeviceKey), stack.startPhone(1, s.adminDeviceKey)]);
  });

  phase('both server signers registered on the Servers screen', async () => {
    await nav(page, 'Servers', 'Server signers');
    await checkScreen(page, 'servers-empty');
    for (const sg of stack.signers) {
      await page.getByRole('button', { name: 'Register signer' }).click();
      const dialog = page.getByRole('dialog', { name: 'Register a server signer' });
      await dialog.getByLabel(field('Name')).fill(sg.name);
      await dialog.getByLabel(field('Peer id')).fill(sg.peerId);
      await dialog.getByLabel(field('Address')).fill(sg.address);
      await dialog.getByLabel(field('Fingerprint')).fill(sg.fingerprint);
      await dialog.getByRole('button', { name: /^Register/ }).click();
      await stepUp(page);
      await dialog.waitFor({ state: 'hidden' });
      await page.getByRole('table', { name: 'Server signers' }).getByText(sg.name, { exact: true }).waitFor();
    }
    const list = await get<{ data: { peer_id: string }[] } | { peer_id: string }[]>('/admin/v1/signers');
    expect((Array.isArray(list) ? list : list.data).map((x) => x.peer_id).sort()).toEqual(
      stack.signers.map((x) => x.peerId).sort(),
    );
    await checkScreen(page, 'servers');
  });

  phase(
    '3-of-4 master key ceremony started on the Master key screen; its live progress reaches success',
    async () => {
      await nav(page, 'Master key');
      await checkScreen(page, 'master-key-empty');
      await page.getByRole('button', { name: 'Create master key' }).click();
      const dialog = page.getByRole('dialog');
      for (const name of [...stack.signers.map((x) => x.name), ...stack.phones.map((x) => x.name)]) {
        const box = dialog.getByRole('checkbox', { name: new RegExp(name.replace(/[()]/g, '.')) });
        if (!(await box.isChecked())) await box.check();
      }
      const threshold = dialog.getByLabel(/Threshold/i);
      if (await threshold.count()) await threshold.first().fill('3');
      await dialog
        .getByRole('button', { name: /Start|Create/ })
        .last()
        .click();
      await stepUp(page);
      // the progress card updates live (SSE) up to the success alert
      await page.getByRole('heading', { level: 3, name: /progress/i }).waitFor();
      await page.getByText('Ceremony succeeded').waitFor({ timeout: 330_000 });
      const keys = await get<{ data: unknown[] } | unknown[]>('/admin/v1/master-keys');
      expect((Array.isArray(keys) ? keys : keys.data).length).toBe(1);
      // without a reload, the key card replaces "No master key yet" and the ceremony row is final
      await page.getByRole('heading', { level: 3, name: /^Master key [0-9a-f]/ }).waitFor({ timeout: 15_000 });
      expect(await page.getByText(/^No master key yet/).count()).toBe(0);
      await page
        .getByRole('table', { name: 'Recent ceremonies' })
        .getByText(/^SUCCEEDED$/)
        .waitFor({ timeout: 15_000 });
      expect(
        await page
          .getByRole('table', { name: 'Recent ceremonies' })
          .getByText(/^RUNNING$/)
          .count(),
      ).toBe(0);
      await checkScreen(page, 'master-key');
    },
    400_000,
  );

  phase('an API key created (shown once)', async () => {
    await nav(page, 'API keys');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create API key' });
    await dialog.getByLabel(field('Name')).fill('e2e integrator');
    await dialog.getByRole('button', { name: /^Create/ }).click();
    await stepUp(page);
    const shown = page.getByRole('dialog', { name: 'Your new API key' });
    await shown.waitFor();
    s.apiKey = ((await shown.locator('code').first().textContent()) ?? '').trim();
    expect(s.apiKey.length).toBeGreaterThan(20);
    await shown.getByRole('button', { name: 'I have copied it' }).click();
    await shown.waitFor({ state: 'hidden' });
    // shown once: the list does not show the secret
    expect(await page.getByText(s.apiKey).count()).toBe(0);
    await page.getByRole('table', { name: 'API keys' }).getByText('e2e integrator').waitFor();
    // it works for the integrator API
    const r = await fetch(`${stack.url}/api/v1/profiles/${s.profileId}/assets?page_size=200`, {
      headers: { 'x-api-key': s.apiKey },
    });
    expect(r.status).toBe(200);
    const assets = (await r.json()) as { data: { asset_id: string; symbol: string; blockchain: string }[] };
    s.ethAssetId = assets.data.find((a) => a.symbol === 'ETH' && a.blockchain === 'ethereum-local')?.asset_id as string;
    expect(s.ethAssetId).toBeTruthy();
    await checkScreen(page, 'api-keys');
  });

  phase('a webhook registered', async () => {
    await nav(page, 'Webhooks');
    await page.getByRole('button', { name: 'Register webhook' }).click();
    const dialog = page.getByRole('dialog');
    // development mode accepts plain HTTP to loopback (production requires HTTPS)
    const hook = 'http://127.0.0.1:9/e2e-webhook';
    await dialog.getByLabel(field('URL')).fill(hook);
    const types = dialog.getByLabel(field('Event types'));
    await types.click();
    await page.getByRole('option', { name: 'TRANSFER_UPDATED' }).click();
    await page.keyboard.press('Escape');
    await dialog.getByLabel(field('Description')).fill('e2e receiver');
    await dialog
      .getByRole('button', { name: /Register|Save/ })
      .last()
      .click();
    await stepUp(page);
    await page.getByRole('table', { name: 'Webhooks' }).getByText(hook).waitFor();
    const hooks = await get<{ data: { url: string }[] }>(`/admin/v1/profiles/${s.profileId}/webhooks`);
    expect(rows(hooks).map((w) => w.url)).toContain(hook);
    await checkScreen(page, 'webhooks');
  });

  phase('a policy saved as a draft, signed on the phone, shown active', async () => {
    await nav(page, 'Policies');
    await page.getByRole('button', { name: 'New policy' }).click();
    await page.getByLabel(field('Name')).fill('ETH to the treasury account');
    await page.getByRole('combobox', { name: 'Blockchain' }).click();
    await page
      .getByRole('option', { name: /^Ethereum local development/ })
      .first()
      .click();
    await page.getByRole('combobox', { name: 'Asset' }).click();
    await page
      .getByRole('option', { name: /^ETH\b/ })
      .first()
      .click();
    await page.getByLabel(/^Whitelist/).fill(DESTINATION);
    await page.getByLabel(field('Per-transaction limit')).fill(String(2n * ETH)); // base units
    await page.getByLabel(field('Daily limit')).fill(String(10n * ETH));
    await page.getByLabel(field('Quorum')).fill('2');
    await page.getByLabel(field('Above amount')).fill('0');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await stepUp(page);
    const policies = await waitFor(
      'the draft policy',
      async () => {
        const l = await get<{ data: { policy_id: string; status?: string }[] }>(
          `/admin/v1/profiles/${s.profileId}/policies`,
        );
        return l.data[0];
      },
      15_000,
    );
    await page
      .getByText(/awaiting|draft|signature/i)
      .first()
      .waitFor();
    await checkScreen(page, 'policy-draft');
    // the Admin's phone signs it while the page waits
    await stack.signPolicy(s.profileId, policies.policy_id);
    // the watch card and the row both say "Active v1" once the phone's signature is in
    await page
      .getByText(/^Active v1$/)
      .first()
      .waitFor({ timeout: 30_000 });
    const active = await get<{ active_version: number | null }>(
      `/admin/v1/profiles/${s.profileId}/policies/${policies.policy_id}`,
    );
    expect(active.active_version).toBe(1);
    await checkScreen(page, 'policies');
  });

  phase('a wallet created in the browser (addresses at once); a deposit shows in its balance', async () => {
    await nav(page, 'Wallets');
    await page.getByRole('button', { name: 'Create wallet' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create wallet' });
    await dialog.getByLabel(field('Name')).fill('treasury');
    await dialog.getByLabel(field('Networks')).click();
    await page
      .getByRole('option', { name: /^Ethereum local development/ })
      .first()
      .click();
    await page.keyboard.press('Escape');
    await dialog.getByRole('button', { name: /^Create/ }).click();
    await stepUp(page);
    await page.getByRole('heading', { level: 2, name: /treasury/ }).waitFor();
    s.walletId = page.url().split('/wallets/')[1]?.split(/[?#]/)[0] as string;
    const addresses = page.getByRole('table', { name: 'Addresses' });
    const addr = addresses.getByText(/^0x[0-9a-fA-F]{40}$/).first();
    await addr.waitFor();
    s.address = ((await addr.textContent()) ?? '').trim();
    await checkScreen(page, 'wallet-new');
    await stack.deposit(s.address, (3n * ETH) / 2n);
    // the balance as the page shows it (reloaded until the coordinator saw the deposit)
    await waitFor(
      'the deposit in the balances table',
      async () => {
        if (
          await page
            .getByRole('table', { name: 'Balances' })
            .getByText(/^1\.5$/)
            .count()
        )
          return true;
        await page.reload();
        await page.getByRole('heading', { level: 2, name: /treasury/ }).waitFor();
        return undefined;
      },
      90_000,
      3_000,
    );
    await checkScreen(page, 'wallet');
  });

  const createTransfer = async (amount: string, external: string) => {
    const r = await fetch(`${stack.url}/api/v1/profiles/${s.profileId}/transfers`, {
      method: 'POST',
      headers: { 'x-api-key': s.apiKey, 'idempotency-key': crypto.randomUUID(), 'content-type': 'application/json' },
      body: JSON.stringify({
        wallet_id: s.walletId,
        destination_address: DESTINATION,
        asset_id: s.ethAssetId,
        amount,
        external_id: external,
      }),
    });
    expect(r.status, await r.clone().text()).toBe(201);
    return ((await r.json()) as { transfer_id: string }).transfer_id;
  };

  phase(
    'a transfer created through the REST API reaches SENT live on its page',
    async () => {
      await nav(page, 'Transfers');
      const id = await createTransfer('0.1', 'e2e-1');
      await page.goto(`${stack.url}/transfers/${id}`);
      await page.getByRole('heading', { level: 2 }).waitFor();
      // mark the document: a reload would drop the mark, so it proves the badge changed live
      await page.evaluate(() => {
        (window as unknown as { __noReload: boolean }).__noReload = true;
      });
      await page
        .getByText(/^SENT$/)
        .first()
        .waitFor({ timeout: 240_000 });
      expect(await page.evaluate(() => (window as unknown as { __noReload?: boolean }).__noReload)).toBe(true);
      const t = await get<{ status: string; tx_hash: string }>(
        `/admin/v1/profiles/${s.profileId}/transfers/${id}`,
      ).catch(
        async () =>
          (await (
            await fetch(`${stack.url}/api/v1/profiles/${s.profileId}/transfers/${id}`, {
              headers: { 'x-api-key': s.apiKey },
            })
          ).json()) as { status: string; tx_hash: string },
      );
      expect(t.status).toBe('SENT');
      await checkScreen(page, 'transfer-sent');
      copyFileSync(
        (await screenshot(page, 'transfer-detail')) as string,
        join(ROOT, 'docs/images/dashboard-transfer.png'),
      );
    },
    300_000,
  );

  phase('a second transfer waits for approval and is cancelled from its page', async () => {
    await stack.stopPhone(1); // one approval of the quorum of 2 never comes
    const id = await createTransfer('0.2', 'e2e-2');
    await page.goto(`${stack.url}/transfers/${id}`);
    await page
      .getByText(/^PENDING_APPROVAL$/)
      .first()
      .waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Cancel transfer' }).click();
    const dialog = page.getByRole('dialog', { name: 'Cancel this transfer?' });
    await dialog.getByRole('button', { name: 'Confirm cancellation' }).click();
    await stepUp(page);
    await page
      .getByText(/^REJECTED$/)
      .first()
      .waitFor({ timeout: 30_000 });
    const t = (await (
      await fetch(`${stack.url}/api/v1/profiles/${s.profileId}/transfers/${id}`, { headers: { 'x-api-key': s.apiKey } })
    ).json()) as { status: string };
    expect(t.status).toBe('REJECTED');
    await checkScreen(page, 'transfer-cancelled');
    await nav(page, 'Transfers');
    await checkScreen(page, 'transfers');
  });

  phase('a Viewer invited on the Users screen sees no admin action', async () => {
    await nav(page, 'Users');
    await page.getByRole('button', { name: 'Invite user' }).click();
    const dialog = page.getByRole('dialog', { name: 'Invite user' });
    await dialog.getByLabel(field('Email')).fill('viewer@example.com');
    await dialog.getByLabel(field('Name')).fill('Vera Viewer');
    await dialog.getByLabel(field('Role')).click();
    await page.getByRole('option', { name: 'Viewer' }).click();
    await dialog.getByLabel(field('Initial password')).fill(s.viewerPassword);
    await dialog.getByRole('button', { name: /^Invite/ }).click();
    await stepUp(page);
    await page.getByRole('table', { name: 'Users' }).getByText('viewer@example.com').waitFor();
    await checkScreen(page, 'users');
    for (const [label, screen] of [
      ['Audit log', 'audit'],
      ['Wallets', 'wallets'],
    ] as const) {
      await nav(page, label);
      await checkScreen(page, screen);
    }

    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
    try {
      const v = await ctx.newPage();
      await login(v, 'viewer@example.com', s.viewerPassword);
      const navLinks = v.getByRole('navigation', { name: 'Main navigation' });
      // the Admin-only lists (x-roles of their GET) have no link for a Viewer
      for (const hidden of ['Users', 'API keys', 'Devices', 'Servers', 'Webhooks', 'Audit log'])
        expect(await navLinks.getByRole('link', { name: hidden, exact: true }).count()).toBe(0);
      await nav(v, 'Wallets');
      expect(await v.getByRole('button', { name: 'Create wallet' }).count()).toBe(0);
      await v.getByRole('table', { name: 'Wallets' }).getByText('treasury').waitFor();
      await checkScreen(v, 'viewer-wallets');
      await nav(v, 'Transfers');
      await v.getByRole('table', { name: 'Transfers' }).getByRole('link').first().click();
      await v.getByRole('heading', { level: 2 }).waitFor();
      for (const name of [/Create/, /Approve/, /^Cancel/])
        expect(await v.getByRole('button', { name }).count()).toBe(0);
      await nav(v, 'Master key');
      await v.getByRole('heading', { level: 3, name: /^Master key [0-9a-f]/ }).waitFor();
      for (const name of ['Create master key', 'Refresh shares', 'Replace a signer or reshare', 'Recovery drill'])
        expect(await v.getByRole('button', { name }).count()).toBe(0);
      await checkScreen(v, 'viewer-master-key');
    } finally {
      await ctx.close();
    }
  });
});
