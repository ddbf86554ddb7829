/**
 * The dashboard application: providers (Mantine theme and notifications, TanStack Query, the
 * router, the session, the profile, step-up) and the route tree — `/login` outside the frame,
 * every screen of {@link SCREENS} inside it behind {@link RequireSession}, with a route-level
 * check of the role (`can(screen.requires)`).
 */
import {
  type CSSVariablesResolver,
  createTheme,
  Drawer,
  darken,
  MantineProvider,
  Modal,
  Notification,
} from '@mantine/core';
import { Notifications } from '@mantine/notifications';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { createBrowserRouter, Navigate, Outlet, RouterProvider } from 'react-router';
import { isProblem } from './api/problem';
import { ProfileProvider, RequireSession, SessionProvider, useSession } from './auth/session';
import { StepUpProvider } from './auth/step-up';
import { Empty } from './components/states';
import { Shell } from './layout/shell';
import { LoginPage } from './pages/login';
import { SCREENS } from './routes';

// WCAG AA contrast (4.5:1; axe-core checks it in the end-to-end test). Mantine's defaults fall short
// on white: filled variants use shade 8 (white on indigo-8 5.7:1, on red-8 4.5:1; shade 6 gives 4.3
// and 3.3) and `autoContrast` writes dark text on a fill too light for white (luminance above 0.18);
// the light variants (badges, the active navigation link) write in shade 9 darkened by 40 % instead
// of shade 6; dimmed text is gray-7 (8.2:1) instead of gray-6 (3.3:1).
const theme = createTheme({
  primaryColor: 'indigo',
  primaryShade: 8,
  autoContrast: true,
  luminanceThreshold: 0.18,
  defaultRadius: 'sm',
  // Mantine's close buttons carry no text: give every dialog's, drawer's and notification's one an
  // accessible name
  components: {
    Modal: Modal.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close' } } }),
    Drawer: Drawer.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close' } } }),
    Notification: Notification.extend({
      defaultProps: { closeButtonProps: { 'aria-label': 'Close notification' } },
      // Mantine's gray-6 description under a title fails WCAG AA contrast (3.3:1); gray-7 is 7:1
      styles: { description: { color: 'var(--mantine-color-gray-7)' } },
    }),
  },
});
const cssVariables: CSSVariablesResolver = (t) => ({
  variables: {},
  light: {
    '--mantine-color-dimmed': 'var(--mantine-color-gray-7)',
    ...Object.fromEntries(
      Object.entries(t.colors).map(([name, shades]) => [`--mantine-color-${name}-light-color`, darken(shades[9], 0.4)]),
    ),
  },
  dark: {},
});

/** A fresh query client: no retries of 4xx answers (a problem is shown, not retried). */
export function createQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        retry: (n, e) => n < 2 && !(isProblem(e) && e.status >= 400 && e.status < 500),
        refetchOnWindowFocus: false,
      },
    },
  });
}

function Root() {
  return (
    <SessionProvider>
      <Outlet />
    </SessionProvider>
  );
}

function Frame() {
  return (
    <RequireSession>
      <ProfileProvider>
        <StepUpProvider>
          <Shell />
        </StepUpProvider>
      </ProfileProvider>
    </RequireSession>
  );
}

function Allowed({ op, children }: { op: string; children: ReactNode }) {
  const { can } = useSession();
  return can(op) ? children : <Empty>Your role does not give access to this screen.</Empty>;
}

/** The route tree (exported for tests with a memory router). */
export const routes = [
  {
    element: <Root />,
    children: [
      { path: '/login', element: <LoginPage /> },
      {
        element: <Frame />,
        children: [
          { path: '/', element: <Navigate to="/wallets" replace /> },
          ...SCREENS.map((s) => ({
            path: s.path,
            element: (
              <Allowed op={s.requires}>
                <s.component />
              </Allowed>
            ),
          })),
          { path: '*', element: <Empty>No such page.</Empty> },
        ],
      },
    ],
  },
];

/** Providers shared by the app and component tests. */
export function Providers({ client, children }: { client: QueryClient; children: ReactNode }) {
  return (
    <MantineProvider theme={theme} cssVariablesResolver={cssVariables}>
      <Notifications />
      <QueryClientProvider client={client}>{children}</QueryClientProvider>
    </MantineProvider>
  );
}

export function App() {
  return (
    <Providers client={createQueryClient()}>
      <RouterProvider router={createBrowserRouter(routes)} />
    </Providers>
  );
}
