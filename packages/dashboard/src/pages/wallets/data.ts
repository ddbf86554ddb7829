/**
 * Reads shared by the wallet and transfer screens: one wallet (`GET …/wallets/{wallet_id}`, cached
 * per id so lists can show names), the blockchain directory of the profile (ids → key and name)
 * and its assets (ids → symbol). All under the current profile.
 */
import type { Asset, Blockchain, Page, Wallet } from '@custodian/coordinator/admin-api-types';
import { useQueries, useQuery } from '@tanstack/react-query';
import { api, call } from '../../api/client';

/** A blockchain of the directory (`?all=true` adds whether the profile enabled it). */
export type DirectoryBlockchain = Blockchain & { enabled?: boolean; development?: boolean };

/** Query key of one wallet. */
export const walletKey = (profileId: string | undefined, walletId: string) => ['wallet', profileId, walletId];

/** `GET …/wallets/{wallet_id}`: the wallet with its listed addresses. */
export function fetchWallet(profileId: string, walletId: string): Promise<Wallet> {
  return call<Wallet>(
    api.GET('/admin/v1/profiles/{profile_id}/wallets/{wallet_id}', {
      params: { path: { profile_id: profileId, wallet_id: walletId } },
    }),
  );
}

/** The wallets of `ids` (one cached GET each; a list page holds at most 20), by id. */
export function useWalletsById(profileId: string | undefined, ids: readonly string[]): Map<string, Wallet> {
  const results = useQueries({
    queries: ids.map((id) => ({
      queryKey: walletKey(profileId, id),
      queryFn: () => fetchWallet(profileId ?? '', id),
      enabled: profileId !== undefined,
      staleTime: 30_000,
    })),
  });
  const out = new Map<string, Wallet>();
  results.forEach((r, i) => {
    const id = ids[i];
    if (r.data !== undefined && id !== undefined) out.set(id, r.data);
  });
  return out;
}

/** Display name of a wallet (its name, else "Unnamed wallet"). */
export const walletName = (w: Pick<Wallet, 'name'> | undefined): string => w?.name ?? 'Unnamed wallet';

/**
 * Every blockchain of the profile's directory (`?all=true`, each with `enabled`), for names,
 * explorer keys and the networks a new wallet may use.
 */
export function useBlockchains(profileId: string | undefined) {
  return useQuery({
    queryKey: ['blockchains', profileId, 'all'],
    queryFn: () =>
      call<Page<DirectoryBlockchain>>(
        api.GET('/admin/v1/profiles/{profile_id}/blockchains', {
          params: { path: { profile_id: profileId ?? '' }, query: { all: true, page_size: 200 } },
        }),
      ),
    enabled: profileId !== undefined,
    staleTime: 60_000,
  });
}

/** The assets enabled for the profile (ids → symbol and decimals). */
export function useAssets(profileId: string | undefined) {
  return useQuery({
    queryKey: ['assets', profileId],
    queryFn: () =>
      call<Page<Asset>>(
        api.GET('/admin/v1/profiles/{profile_id}/assets', {
          params: { path: { profile_id: profileId ?? '' }, query: { page_size: 200 } },
        }),
      ),
    enabled: profileId !== undefined,
    staleTime: 60_000,
  });
}

/** A lookup by id of a list answer's items (empty while loading). */
export function byId<T>(items: readonly T[] | undefined, id: (t: T) => string): Map<string, T> {
  return new Map((items ?? []).map((t) => [id(t), t]));
}
