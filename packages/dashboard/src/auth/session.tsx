/**
 * The signed-in user and the current profile, for every screen.
 *
 * - `useSession()`: the user of `GET /admin/v1/me` (null when logged out), `can(operationId)` for
 *   the role checks of {@link can}, `logout()`.
 * - `useProfile()`: the profile the screens work in (`GET /admin/v1/profiles`; the choice is kept
 *   in localStorage under `custodian.profile`).
 * - A 401 `SESSION_REQUIRED` from any call (the session expired, idle or absolute, or was revoked)
 *   drops the user and sends the page to `/login?expired=1`.
 */
import type { Me, Profile } from '@custodian/coordinator/admin-api-types';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from 'react';
import { Navigate, useLocation, useNavigate } from 'react-router';
import { api, call, onSessionExpired } from '../api/client';
import { isProblem } from '../api/problem';
import { can as roleCan } from '../api/roles';

export interface SessionState {
  /** undefined while loading, null when logged out. */
  readonly me: Me | null | undefined;
  /** Whether the user's role may call `operationId` (false while loading or logged out). */
  can(operationId: string): boolean;
  /** End the session on the server, drop cookies and cached data, go to /login. */
  logout(): Promise<void>;
  /** Re-read `GET /admin/v1/me` (after login, step-up, TOTP changes). */
  refresh(): Promise<void>;
}

const SessionContext = createContext<SessionState | null>(null);

export const ME_KEY = ['me'] as const;

async function fetchMe(): Promise<Me | null> {
  try {
    return await call<Me>(api.GET('/admin/v1/me'));
  } catch (e) {
    if (isProblem(e, 'SESSION_REQUIRED')) return null;
    throw e;
  }
}

/** Provides {@link useSession}. */
export function SessionProvider({ children }: { children: ReactNode }) {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const me = useQuery({ queryKey: ME_KEY, queryFn: fetchMe, staleTime: 30_000, retry: false });
  useEffect(
    () =>
      onSessionExpired(() => {
        if (qc.getQueryData(ME_KEY)) {
          qc.clear();
          qc.setQueryData(ME_KEY, null);
          navigate('/login?expired=1');
        }
      }),
    [qc, navigate],
  );
  const value = useMemo<SessionState>(
    () => ({
      me: me.data,
      can: (op) => roleCan(me.data?.role, op),
      logout: async () => {
        try {
          await call(api.POST('/admin/v1/logout'));
        } finally {
          qc.clear();
          qc.setQueryData(ME_KEY, null);
          navigate('/login');
        }
      },
      refresh: async () => {
        await qc.invalidateQueries({ queryKey: ME_KEY });
      },
    }),
    [me.data, qc, navigate],
  );
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

/** The session (inside {@link SessionProvider}). */
export function useSession(): SessionState {
  const s = useContext(SessionContext);
  if (s === null) throw new Error('useSession outside SessionProvider');
  return s;
}

/** Renders `children` for a logged-in user; sends others to /login (remembering where they were going). */
export function RequireSession({ children }: { children: ReactNode }) {
  const { me } = useSession();
  const loc = useLocation();
  if (me === undefined) return null;
  if (me === null) return <Navigate to={`/login?next=${encodeURIComponent(loc.pathname + loc.search)}`} replace />;
  return <>{children}</>;
}

export interface ProfileState {
  readonly profiles: readonly Profile[];
  /** The current profile id (undefined until profiles are loaded, or when there are none). */
  readonly profileId: string | undefined;
  select(profileId: string): void;
}

const ProfileContext = createContext<ProfileState | null>(null);
const PROFILE_KEY = 'custodian.profile';

/** Provides {@link useProfile} (inside a logged-in session). */
export function ProfileProvider({ children }: { children: ReactNode }) {
  const list = useQuery({
    queryKey: ['profiles'],
    queryFn: () => call<Profile[]>(api.GET('/admin/v1/profiles')),
  });
  const [chosen, setChosen] = useState<string | null>(() => localStorage.getItem(PROFILE_KEY));
  const profiles = list.data ?? [];
  const profileId = profiles.some((p) => p.profile_id === chosen) ? (chosen ?? undefined) : profiles[0]?.profile_id;
  const select = useCallback((id: string) => {
    localStorage.setItem(PROFILE_KEY, id);
    setChosen(id);
  }, []);
  const value = useMemo(() => ({ profiles, profileId, select }), [profiles, profileId, select]);
  return <ProfileContext.Provider value={value}>{children}</ProfileContext.Provider>;
}

/** The current profile (inside {@link ProfileProvider}). */
export function useProfile(): ProfileState {
  const p = useContext(ProfileContext);
  if (p === null) throw new Error('useProfile outside ProfileProvider');
  return p;
}
