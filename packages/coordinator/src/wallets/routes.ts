/**
 * Admin API of the wallets room: profiles and their directory settings (`Admin: profiles`),
 * wallets and their balances (`Admin: wallets`). A Finance Manager or Viewer assigned to wallet
 * groups sees only their wallets (admin/scope.ts).
 */
import { type AdminRouter, actor, B, P } from '../admin/route.js';
import { ADMIN, ALL, anyObject, listOf, name, obj, pageEnvelope, pageQuery } from '../admin/schemas.js';
import { scopeFilter } from '../admin/scope.js';
import { UUID } from '../api/schemas.js';
import { notFound, type PageRequest } from '../store.js';
import type { WalletService } from './service.js';

/** Register the profile, directory and wallet routes. */
export function walletAdminRoutes(r: AdminRouter, wallets: WalletService): void {
  const profileParams = obj({ profile_id: UUID }, ['profile_id']);
  const directoryQuery = {
    ...pageQuery,
    properties: {
      ...pageQuery.properties,
      all: {
        type: 'boolean',
        default: false,
        description: 'Every blockchain of the directory (enabled or not), each with `enabled` and `development`',
      },
    },
  };
  r.route(
    'GET',
    '/admin/v1/profiles',
    { roles: ALL, tags: ['Admin: profiles'], summary: 'List profiles', status: 200, response: listOf('Profiles') },
    async () => wallets.profiles.listProfiles(),
  );
  r.route(
    'POST',
    '/admin/v1/profiles',
    {
      roles: ADMIN,
      tags: ['Admin: profiles'],
      summary: 'Create a profile',
      body: obj({ name }, ['name']),
      status: 201,
      response: anyObject('Profile'),
    },
    async (req) => wallets.createProfile(actor(req), B<{ name: string }>(req).name),
  );
  for (const kind of ['blockchain', 'asset'] as const) {
    const idName = `${kind}_id`;
    r.route(
      'GET',
      `/admin/v1/profiles/:profile_id/${kind}s`,
      {
        roles: ALL,
        tags: ['Admin: profiles'],
        summary:
          kind === 'blockchain'
            ? 'Blockchains enabled for a profile; with `all=true` every blockchain of the directory, each with `enabled` and `development`'
            : 'Assets enabled for a profile',
        params: profileParams,
        querystring: kind === 'blockchain' ? directoryQuery : pageQuery,
        status: 200,
        response: pageEnvelope(`${kind}s`),
        ...(kind === 'blockchain' ? { errors: ['RESOURCE_NOT_FOUND' as const] } : {}),
      },
      async (req) => {
        const id = P<{ profile_id: string }>(req).profile_id;
        const q = req.query as PageRequest & { all?: boolean };
        if (kind === 'asset') return wallets.profiles.listAssets(id, q);
        if (!q.all) return wallets.profiles.listBlockchains(id, q);
        if (!(await wallets.profiles.profileExists(id))) throw notFound('profile');
        return wallets.profiles.listDirectory(id, q);
      },
    );
    r.route(
      'PUT',
      `/admin/v1/profiles/:profile_id/${kind}s/:${idName}`,
      {
        roles: ADMIN,
        tags: ['Admin: profiles'],
        summary: `Enable or disable a ${kind} for a profile`,
        params: obj({ profile_id: UUID, [idName]: UUID }, ['profile_id', idName]),
        body: obj({ enabled: { type: 'boolean' } }, ['enabled']),
        status: 204,
        response: { description: 'Saved', type: 'null' },
        errors: ['RESOURCE_NOT_FOUND'],
      },
      async (req) => {
        const p = req.params as Record<string, string>;
        await wallets.setDirectoryEntry(
          actor(req),
          p.profile_id!,
          kind,
          p[idName]!,
          B<{ enabled: boolean }>(req).enabled,
        );
      },
    );
  }
  const walletParams = obj({ profile_id: UUID, wallet_id: UUID }, ['profile_id', 'wallet_id']);
  r.route(
    'GET',
    '/admin/v1/profiles/:profile_id/wallets',
    {
      roles: ALL,
      tags: ['Admin: wallets'],
      summary: 'List wallets of a profile',
      params: profileParams,
      querystring: pageQuery,
      status: 200,
      response: pageEnvelope('Wallet ids'),
    },
    async (req) =>
      wallets.store.listWallets(
        P<{ profile_id: string }>(req).profile_id,
        req.query as PageRequest,
        scopeFilter(req.walletScope),
      ),
  );
  r.route(
    'POST',
    '/admin/v1/profiles/:profile_id/wallets',
    {
      roles: ADMIN,
      tags: ['Admin: wallets'],
      summary: 'Create a wallet (dashboard): a name and one or more blockchains; addresses are available immediately',
      params: profileParams,
      body: obj({ name, blockchain_ids: { type: 'array', minItems: 1, maxItems: 64, items: UUID } }, [
        'blockchain_ids',
      ]),
      status: 201,
      response: { description: 'The wallet', $ref: 'Wallet#' },
      errors: ['RESOURCE_NOT_FOUND', 'UNKNOWN_BLOCKCHAIN', 'NO_MASTER_KEY'],
    },
    async (req) => wallets.createWallet(actor(req), P<{ profile_id: string }>(req).profile_id, B(req)),
  );
  r.route(
    'GET',
    '/admin/v1/profiles/:profile_id/wallets/:wallet_id',
    {
      roles: ALL,
      tags: ['Admin: wallets'],
      summary: 'One wallet with its addresses, and `archived_at` (ISO 8601 UTC; null while the wallet is active)',
      params: walletParams,
      status: 200,
      response: {
        description: 'The wallet and its archive state',
        allOf: [
          { $ref: 'Wallet#' },
          {
            type: 'object',
            required: ['archived_at'],
            properties: { archived_at: { type: ['string', 'null'], format: 'date-time' } },
          },
        ],
      },
      errors: ['WALLET_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; wallet_id: string }>(req);
      return wallets.getAdminWallet(p.profile_id, p.wallet_id);
    },
  );
  r.route(
    'GET',
    '/admin/v1/profiles/:profile_id/wallets/:wallet_id/deposits',
    {
      roles: ALL,
      tags: ['Admin: wallets'],
      summary:
        'Deposit history of a wallet: the incoming transactions the chain watchers detected on its addresses, newest first',
      description:
        'Each item: `tx_hash`, `blockchain_id`, `address`, `asset_id`, `asset_symbol`, `amount` (decimal string in asset ' +
        'units), `amount_base_units` (integer string), `block_height` (null while unconfirmed), `confirmations`, ' +
        '`status` (UNCONFIRMED or CONFIRMED) and `detected_at` (ISO 8601 UTC).',
      params: walletParams,
      querystring: pageQuery,
      status: 200,
      response: pageEnvelope('Deposits'),
      errors: ['WALLET_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; wallet_id: string }>(req);
      return wallets.listDeposits(p.profile_id, p.wallet_id, req.query as PageRequest);
    },
  );
  r.route(
    'GET',
    '/admin/v1/profiles/:profile_id/wallets/:wallet_id/balances',
    {
      roles: ALL,
      tags: ['Admin: wallets'],
      summary: 'Balances of a wallet',
      params: walletParams,
      querystring: pageQuery,
      status: 200,
      response: pageEnvelope('Balances'),
      errors: ['WALLET_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; wallet_id: string }>(req);
      return wallets.balances.listBalances(p.profile_id, p.wallet_id, {}, req.query as PageRequest);
    },
  );

  // ---- wallets (dashboard edit) ----
  r.route(
    'PATCH',
    '/admin/v1/profiles/:profile_id/wallets/:wallet_id',
    {
      roles: ADMIN,
      tags: ['Admin: wallets'],
      summary: 'Rename a wallet (emits WALLET_UPDATED)',
      params: obj({ profile_id: UUID, wallet_id: UUID }, ['profile_id', 'wallet_id']),
      body: obj({ name: { type: ['string', 'null'], minLength: 1, maxLength: 200 } }, ['name']),
      status: 200,
      response: anyObject('Wallet'),
      errors: ['WALLET_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; wallet_id: string }>(req);
      return wallets.updateWallet(actor(req), p.profile_id, p.wallet_id, B(req));
    },
  );
  walletArchiveRoutes(r, wallets);
}

/**
 * Wallet archive / unarchive / delete and address label / archival (wallets/archive.ts). Admin API
 * only: the seed's REST API has no wallet deletion or address archival endpoint, and API-key
 * holders get none here. Destructive actions (archive, delete, archiving an address) need a fresh
 * step-up.
 */
function walletArchiveRoutes(r: AdminRouter, wallets: WalletService): void {
  const walletParams = obj({ profile_id: UUID, wallet_id: UUID }, ['profile_id', 'wallet_id']);
  for (const archived of [true, false]) {
    r.route(
      'POST',
      `/admin/v1/profiles/:profile_id/wallets/:wallet_id/${archived ? 'archive' : 'unarchive'}`,
      {
        roles: ADMIN,
        tags: ['Admin: wallets'],
        summary: archived
          ? 'Archive a wallet: it takes no new transfers or addresses (409 WALLET_ARCHIVED); deposits are still watched and credited (emits WALLET_UPDATED)'
          : 'Unarchive a wallet (emits WALLET_UPDATED)',
        ...(archived ? { stepUp: true as const } : {}),
        params: walletParams,
        status: 200,
        response: anyObject('wallet_id, name, archived_at (ISO 8601 UTC or null)'),
        errors: ['WALLET_NOT_FOUND'],
      },
      async (req) => {
        const p = P<{ profile_id: string; wallet_id: string }>(req);
        return wallets.archive.setArchived(actor(req), p.profile_id, p.wallet_id, archived);
      },
    );
  }
  r.route(
    'DELETE',
    '/admin/v1/profiles/:profile_id/wallets/:wallet_id',
    {
      roles: ADMIN,
      tags: ['Admin: wallets'],
      summary: 'Delete an empty wallet (emits WALLET_DELETED)',
      description:
        'Refused while any balance of the wallet is above zero (409 WALLET_NOT_EMPTY) or a transfer of it is not ' +
        'finished (409 WALLET_TRANSFERS_PENDING). Soft delete: the wallet is gone from lists and GETs (404), its ' +
        'addresses stay reserved (no index is reused) and watched.',
      stepUp: true,
      params: walletParams,
      status: 204,
      response: { description: 'Deleted', type: 'null' },
      errors: ['WALLET_NOT_FOUND', 'WALLET_NOT_EMPTY', 'WALLET_TRANSFERS_PENDING'],
    },
    async (req) => {
      const p = P<{ profile_id: string; wallet_id: string }>(req);
      await wallets.archive.deleteWallet(actor(req), p.profile_id, p.wallet_id);
    },
  );
  r.route(
    'GET',
    '/admin/v1/profiles/:profile_id/wallets/:wallet_id/addresses',
    {
      roles: ALL,
      tags: ['Admin: wallets'],
      summary: 'Every address of a wallet, archived ones included, with label and archived_at',
      params: walletParams,
      querystring: pageQuery,
      status: 200,
      response: pageEnvelope('Addresses'),
      errors: ['WALLET_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; wallet_id: string }>(req);
      return wallets.archive.listAddresses(p.profile_id, p.wallet_id, req.query as PageRequest);
    },
  );
  r.route(
    'PATCH',
    '/admin/v1/profiles/:profile_id/wallets/:wallet_id/addresses/:address_id',
    {
      roles: ADMIN,
      tags: ['Admin: wallets'],
      summary: 'Set or clear an address label (ADDRESS_UPDATED), archive (ADDRESS_DELETED) or unarchive it',
      description:
        'An archived address is no longer listed as a deposit address but stays watched and its coins stay ' +
        "spendable (a payer may still use it). An account-based blockchain's only address cannot be archived (409 " +
        'ADDRESS_NOT_ARCHIVABLE). Archiving is sensitive.',
      stepUp: (req) => (req.body as { archived?: unknown }).archived === true,
      params: obj({ profile_id: UUID, wallet_id: UUID, address_id: UUID }, ['profile_id', 'wallet_id', 'address_id']),
      body: {
        ...obj({ label: { type: ['string', 'null'], minLength: 1, maxLength: 200 }, archived: { type: 'boolean' } }),
        minProperties: 1,
      },
      status: 200,
      response: anyObject('The address with label and archived_at'),
      errors: ['WALLET_NOT_FOUND', 'RESOURCE_NOT_FOUND', 'ADDRESS_NOT_ARCHIVABLE'],
    },
    async (req) => {
      const p = P<{ profile_id: string; wallet_id: string; address_id: string }>(req);
      return wallets.archive.updateAddress(actor(req), p.profile_id, p.wallet_id, p.address_id, B(req));
    },
  );
}
