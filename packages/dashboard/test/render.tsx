/**
 * Component-test helpers: render inside the dashboard's providers (Mantine, a fresh TanStack
 * Query client) and a memory router, and answer `fetch` from a table of routes so a screen's
 * admin API calls can be driven by the test.
 */
import { type RenderResult, render } from '@testing-library/react';
import axe from 'axe-core';
import type { ReactElement } from 'react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { createQueryClient, Providers } from '../src/app';

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
 * axe-core's serious and critical violations in the document, as rule ids (colour contrast is
 * off: it needs the layout jsdom does not compute; the Playwright test checks it in Chromium).
 */
export async function axeViolations(): Promise<string[]> {
  const r = await axe.run(document.body, { rules: { 'color-contrast': { enabled: false } } });
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id);
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
