/**
 * The dashboard application: providers (Mantine theme and notifications, TanStack Query, the
 * router, the session, the profile, step-up) and the route tree — `/login` outside the frame,
 * every screen of {@link SCREENS} inside it behind {@link RequireSession}, with a route-level
 * check of the role (`can(screen.requires)`).
 */
import { createTheme, Drawer, MantineProvider, Modal } from '@mantine/core';
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

const theme = createTheme({
  primaryColor: 'indigo',
  defaultRadius: 'sm',
  // Mantine's close buttons carry no text: give every dialog's and drawer's one an accessible name
  components: {
    Modal: Modal.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close' } } }),
    Drawer: Drawer.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close' } } }),
  },
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
    <MantineProvider theme={theme}>
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
