/**
 * Component-test helpers (the one copy every test file imports): render inside the dashboard's
 * providers (Mantine, a fresh TanStack Query client) and a memory router, answer `fetch` from a
 * table of routes so a screen's admin API calls can be driven by the test, run axe-core, pick an
 * option of a Mantine Select, the signed-in user fixture (`me`) and the session harnesses
 * (`RoleHarness`, `ProfileHarness`). Data fixtures live in fixtures.ts.
 */
import { type RenderResult, render, screen, within } from '@testing-library/react';
import type userEvent from '@testing-library/user-event';
import axe from 'axe-core';
import type { ReactElement, ReactNode } from 'react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { createQueryClient, Providers } from '../src/app';
import { ProfileProvider, SessionProvider, useSession } from '../src/auth/session';
import { StepUpProvider } from '../src/auth/step-up';

/** jsdom lacks these; Mantine reads them. */
export function polyfillDom(): void {
  window.matchMedia ??= ((query: string) => ({
    matches: false,
    media: query,
    onchange: null,
    addListener: () => {},
    removeListener: () => {},
    addEventListener: () => {},
    removeEventListener: () => {},
    dispatchEvent: () => false,
  })) as unknown as typeof window.matchMedia;
  globalThis.ResizeObserver ??= class {
    observe() {}
    unobserve() {}
    disconnect() {}
  } as unknown as typeof ResizeObserver;
  // Mantine's combobox scrolls the selected option into view
  Element.prototype.scrollIntoView ??= () => {};
}

/**
 * axe-core's serious and critical violations in `root` (default: the whole document), as
 * "rule-id: selector, selector" strings, so `expect(await axeViolations()).toEqual([])` names the
 * offending nodes when it fails. Colour contrast is off: it needs the layout jsdom does not compute
 * (the Playwright test checks it in Chromium).
 */
export async function axeViolations(root: Element = document.body): Promise<string[]> {
  const r = await axe.run(root, { rules: { 'color-contrast': { enabled: false } } });
  return r.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/**
 * Choose `option` in the Mantine Select labelled `label` (its listbox carries the same accessible
 * name). The dropdown's transition leaves it styled hidden in jsdom, so the queries look past
 * visibility.
 */
export async function pick(ue: ReturnType<typeof userEvent.setup>, label: string | RegExp, option: string) {
  await ue.click(await screen.findByRole('combobox', { name: label }));
  const list = await screen.findByRole('listbox', { name: label, hidden: true });
  await ue.click(within(list).getByRole('option', { name: option, hidden: true }));
}

/**
 * The signed-in user as `GET /admin/v1/me` answers it (Alice, no TOTP, no step-up), with `role`
 * and any field overridden by `over`. Wrap it as `{ body: me('ADMIN') }` for {@link mockFetch}.
 */
export function me(role: string, over: Record<string, unknown> = {}) {
  return {
    user_id: '00000000-0000-4000-8000-0000000000aa',
    email: 'a@example.com',
    name: 'Alice',
    role,
    totp_enabled: false,
    blocked: false,
    created_at: '2026-01-01T00:00:00Z',
    step_up_expires_at: null,
    ...over,
  };
}

/** Render `ui` at `path` (a memory router with that one route, plus any `extra` routes). */
export function renderAt(
  ui: ReactElement,
  path = '/',
  extra: { path: string; element: ReactElement }[] = [],
): RenderResult {
  polyfillDom();
  const router = createMemoryRouter([{ path: path.split('?')[0] ?? '/', element: ui }, ...extra], {
    initialEntries: [path],
  });
  return render(
    <Providers client={createQueryClient()}>
      <RouterProvider router={router} />
    </Providers>,
  );
}

/** One answer of {@link mockFetch}: status and JSON body. */
export interface Reply {
  status?: number;
  body?: unknown;
}

/**
 * Replace `fetch` with a router over `"<METHOD> <pathname>"` keys (exact, or a RegExp tested on
 * the key); an unmatched request fails the test loudly. Returns the list of requests seen.
 */
export function mockFetch(routes: [string | RegExp, (req: Request) => Reply | Promise<Reply>][]) {
  const seen: Request[] = [];
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = input instanceof Request ? input : new Request(input, init);
    seen.push(req.clone());
    const key = `${req.method} ${new URL(req.url).pathname}`;
    const hit = routes.find(([k]) => (typeof k === 'string' ? k === key : k.test(key)));
    if (hit === undefined) throw new Error(`unexpected request ${key}`);
    const r = await hit[1](req);
    const status = r.status ?? 200;
    const problem = status >= 400;
    return new Response(r.body === undefined ? null : JSON.stringify(r.body), {
      status,
      headers: { 'content-type': problem ? 'application/problem+json' : 'application/json' },
    });
  }) as typeof fetch;
  return seen;
}

/** Shows the loaded role, so a test can wait for the session before looking for what it hides. */
function RoleProbe() {
  const { me } = useSession();
  return <span>{me ? `signed in as ${me.role}` : 'no session yet'}</span>;
}

/**
 * Session + step-up providers for the global (not profile-scoped) screens, with a line of text
 * "signed in as <ROLE>" (or "no session yet") a test can wait for.
 */
export function RoleHarness({ children }: { children: ReactNode }) {
  return (
    <SessionProvider>
      <StepUpProvider>
        <RoleProbe />
        {children}
      </StepUpProvider>
    </SessionProvider>
  );
}

/** Session, profile and step-up providers for the profile-scoped screens. */
export function ProfileHarness({ children }: { children: ReactNode }) {
  return (
    <SessionProvider>
      <ProfileProvider>
        <StepUpProvider>{children}</StepUpProvider>
      </ProfileProvider>
    </SessionProvider>
  );
}
