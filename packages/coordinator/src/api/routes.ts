/**
 * The custody REST API of seed §4 under `/api/v1/profiles/{profile_id}/…` (this module: wallets,
 * addresses, balances, assets, blockchains). Every route is authenticated by `X-API-Key` and
 * scoped to the key's profile. Transfers, fee estimates and webhooks plug into the same
 * {@link ProfileRoutesContext} as further plugins.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AddressType } from '../addresses.js';
import type { ApiKeyStore } from '../api-keys/store.js';
import { ApiError, type ErrorCode } from '../errors.js';
import type { PageRequest } from '../store.js';
import { UUID_RE } from '../util.js';
import type { WalletService } from '../wallets/service.js';
import { type IdempotencyOptions, idempotencyKeyOf, runIdempotent } from './idempotency.js';
import type { IdempotencyStore } from './idempotency-store.js';
import {
  API_COMMON_ERRORS,
  BODY_ERRORS,
  errorResponses,
  IDEMPOTENCY_ERRORS,
  IDEMPOTENCY_HEADERS,
  PAGE_QUERY,
  pageOf,
  UUID,
} from './schemas.js';

/** What a profile-scoped route plugin receives. */
export interface ProfileRoutesContext {
  /** Idempotency records of the create routes (api/idempotency-store.ts). */
  store: IdempotencyStore;
  /** The wallets room: wallets, addresses, balances, the profile's directory. */
  wallets: WalletService;
  idempotency: IdempotencyOptions;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the API-key hook: the authenticated key and its profile. */
    apiKey?: { api_key_id: string; profile_id: string };
  }
}

const PROFILE_PARAMS = {
  type: 'object',
  required: ['profile_id'],
  properties: { profile_id: UUID },
} as const;

const WALLET_PARAMS = {
  type: 'object',
  required: ['profile_id', 'wallet_id'],
  properties: { profile_id: UUID, wallet_id: UUID },
} as const;

const security = [{ ApiKey: [] }];

function errors(...extra: ErrorCode[]) {
  return errorResponses([...API_COMMON_ERRORS, ...extra]);
}

/**
 * The API-key authentication hook (preParsing: after the per-key rate limit, before body parsing
 * and validation, so an unauthenticated
 * caller learns nothing): 401 API_KEY_MISSING / API_KEY_INVALID (unknown or revoked — not
 * distinguished), 403 API_KEY_ADDRESS_NOT_ALLOWED when the key has `allowed_cidrs` and the client
 * address (`req.ip`: the socket peer, or the forwarded client behind a trusted proxy) is in none of
 * them — `onAddressRefused` is told (key id, address) before the refusal, for the audit log —
 * then 403 PROFILE_FORBIDDEN when the path's profile is not the key's (whether or not that profile
 * exists).
 */
export function apiKeyHook(apiKeys: ApiKeyStore, onAddressRefused?: (apiKeyId: string, ip: string) => Promise<void>) {
  return async <P>(req: FastifyRequest, _reply: unknown, payload: P): Promise<P> => {
    const raw = req.headers['x-api-key'];
    const secret = Array.isArray(raw) ? raw[0] : raw;
    if (secret === undefined || secret === '') throw new ApiError('API_KEY_MISSING', 'send your API key in X-API-Key');
    const key = secret.length <= 256 ? await apiKeys.authenticate(secret, req.ip) : null;
    if (key === null) throw new ApiError('API_KEY_INVALID', 'the X-API-Key is not valid');
    if (!key.address_allowed) {
      await onAddressRefused?.(key.api_key_id, req.ip);
      throw new ApiError(
        'API_KEY_ADDRESS_NOT_ALLOWED',
        `this API key may not be used from ${req.ip}; its allowed address ranges are set when it is created`,
      );
    }
    const profileId = (req.params as { profile_id?: string }).profile_id;
    if (profileId === undefined || profileId.toLowerCase() !== key.profile_id) {
      throw new ApiError('PROFILE_FORBIDDEN', 'this API key is not authorised for the profile in the path');
    }
    req.apiKey = { api_key_id: key.api_key_id, profile_id: key.profile_id };
    return payload;
  };
}

/** preValidation hook of idempotent routes: a missing or malformed key is a 400 before body validation. */
export async function requireIdempotencyKey(req: FastifyRequest) {
  idempotencyKeyOf(req);
}

/**
 * Register the wallet, address, balance and directory routes. Mount under
 * `/api/v1/profiles/:profile_id` with {@link apiKeyHook} installed.
 */
export async function walletRoutes(app: FastifyInstance, ctx: ProfileRoutesContext) {
  const { store, wallets } = ctx;

  app.get(
    '/wallets',
    {
      schema: {
        tags: ['Wallets'],
        summary: 'List wallet identifiers of the profile',
        description:
          'Returns wallet identifiers only (seed §2), oldest first, in the paginated envelope. ' +
          'Pagination is not marked for this endpoint in the seed; it is accepted here for uniformity.',
        security,
        params: PROFILE_PARAMS,
        querystring: { type: 'object', additionalProperties: false, properties: PAGE_QUERY },
        response: { 200: pageOf('WalletRef', 'Wallet identifiers'), ...errors() },
      },
    },
    async (req) => {
      const { profile_id } = req.params as { profile_id: string };
      return wallets.store.listWallets(profile_id.toLowerCase(), req.query as PageRequest);
    },
  );

  app.post(
    '/wallets',
    {
      preValidation: requireIdempotencyKey,
      schema: {
        tags: ['Wallets'],
        summary: 'Create a wallet (idempotent)',
        description:
          'Creates a wallet on one or more blockchains (each known and enabled for the profile). Completes immediately: ' +
          'no MPC ceremony; the first deposit address of every blockchain is derived at once from the master public key ' +
          'and chain code at m/44/{coin_type}/{wallet_index}/0/0 (non-hardened BIP32). Requires the master key ' +
          'ceremony to have run (409 NO_MASTER_KEY otherwise). Duplicate blockchain ids are merged.',
        security,
        params: PROFILE_PARAMS,
        headers: IDEMPOTENCY_HEADERS,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['blockchain_ids'],
          properties: {
            blockchain_ids: { type: 'array', minItems: 1, maxItems: 64, items: UUID },
            name: { type: 'string', minLength: 1, maxLength: 200 },
          },
        },
        response: {
          201: { description: 'The created wallet', $ref: 'Wallet#' },
          ...errors(...BODY_ERRORS, ...IDEMPOTENCY_ERRORS, 'UNKNOWN_BLOCKCHAIN', 'NO_MASTER_KEY'),
        },
      },
    },
    async (req, reply) => {
      const profileId = (req.params as { profile_id: string }).profile_id.toLowerCase();
      const body = req.body as { blockchain_ids: string[]; name?: string };
      return runIdempotent(store, ctx.idempotency, req, reply, profileId, 201, async (q) => ({
        body: await wallets.store.createWallet(profileId, body, undefined, q),
      }));
    },
  );

  app.get(
    '/wallets/:wallet_id/addresses',
    {
      schema: {
        tags: ['Addresses'],
        summary: 'List deposit addresses of a wallet',
        security,
        params: WALLET_PARAMS,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { blockchain_id: { ...UUID, description: 'Only addresses on this blockchain' }, ...PAGE_QUERY },
        },
        response: { 200: pageOf('Address', 'Deposit addresses'), ...errors('WALLET_NOT_FOUND') },
      },
    },
    async (req) => {
      const { profile_id, wallet_id } = req.params as { profile_id: string; wallet_id: string };
      const q = req.query as PageRequest & { blockchain_id?: string };
      return wallets.store.listAddresses(profile_id.toLowerCase(), wallet_id, q.blockchain_id, q);
    },
  );

  app.post(
    '/wallets/:wallet_id/addresses',
    {
      preValidation: requireIdempotencyKey,
      schema: {
        tags: ['Addresses'],
        summary: 'Create an additional deposit address (idempotent)',
        description:
          "Body: `blockchain_id` (one of the wallet's blockchains) and optional `address_type` " +
          '(Bitcoin family: `p2wpkh` default, or `p2tr`). Success: 201 with the address at the next address index. ' +
          'Only UTXO blockchains allow several addresses; on an account-based blockchain (Ethereum, TRON) the wallet ' +
          'already has its one address, so this returns 422 ADDRESS_LIMIT_REACHED.',
        security,
        params: WALLET_PARAMS,
        headers: IDEMPOTENCY_HEADERS,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['blockchain_id'],
          properties: {
            blockchain_id: UUID,
            address_type: { type: 'string', enum: ['p2wpkh', 'p2tr', 'eoa', 'tron'] },
          },
        },
        response: {
          201: { description: 'The created address', $ref: 'Address#' },
          ...errors(
            ...BODY_ERRORS,
            ...IDEMPOTENCY_ERRORS,
            'WALLET_NOT_FOUND',
            'WALLET_ARCHIVED',
            'BLOCKCHAIN_NOT_IN_WALLET',
            'ADDRESS_LIMIT_REACHED',
          ),
        },
      },
    },
    async (req, reply) => {
      const { profile_id, wallet_id } = req.params as { profile_id: string; wallet_id: string };
      const profileId = profile_id.toLowerCase();
      const body = req.body as { blockchain_id: string; address_type?: AddressType };
      return runIdempotent(store, ctx.idempotency, req, reply, profileId, 201, async (q) => ({
        body: await wallets.store.createAddress(profileId, wallet_id, body, q),
      }));
    },
  );

  app.get(
    '/wallets/:wallet_id/balances',
    {
      schema: {
        tags: ['Balances'],
        summary: 'Balances of a wallet',
        description:
          'One entry per blockchain of the wallet × asset enabled for the profile on it (zero when never observed), ' +
          'filtered by `blockchain_id` and/or `asset_id`.',
        security,
        params: WALLET_PARAMS,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { blockchain_id: UUID, asset_id: UUID, ...PAGE_QUERY },
        },
        response: { 200: pageOf('Balance', 'Balances'), ...errors('WALLET_NOT_FOUND') },
      },
    },
    async (req) => {
      const { profile_id, wallet_id } = req.params as { profile_id: string; wallet_id: string };
      const q = req.query as PageRequest & { blockchain_id?: string; asset_id?: string };
      const filter: { blockchain_id?: string; asset_id?: string } = {};
      if (q.blockchain_id !== undefined) filter.blockchain_id = q.blockchain_id.toLowerCase();
      if (q.asset_id !== undefined) filter.asset_id = q.asset_id.toLowerCase();
      return wallets.balances.listBalances(profile_id.toLowerCase(), wallet_id, filter, q);
    },
  );

  app.get(
    '/wallets/:wallet_id/balances/:asset_id',
    {
      schema: {
        tags: ['Balances'],
        summary: 'Balance of one asset',
        security,
        params: {
          type: 'object',
          required: ['profile_id', 'wallet_id', 'asset_id'],
          properties: { profile_id: UUID, wallet_id: UUID, asset_id: UUID },
        },
        response: {
          200: { description: 'The balance', $ref: 'Balance#' },
          ...errors('WALLET_NOT_FOUND', 'ASSET_NOT_FOUND'),
        },
      },
    },
    async (req) => {
      const { profile_id, wallet_id, asset_id } = req.params as {
        profile_id: string;
        wallet_id: string;
        asset_id: string;
      };
      return wallets.balances.getBalance(profile_id.toLowerCase(), wallet_id, asset_id.toLowerCase());
    },
  );

  app.get(
    '/assets',
    {
      schema: {
        tags: ['Directory'],
        summary: 'Assets enabled for the profile',
        security,
        params: PROFILE_PARAMS,
        querystring: { type: 'object', additionalProperties: false, properties: PAGE_QUERY },
        response: { 200: pageOf('Asset', 'Assets'), ...errors() },
      },
    },
    async (req) => {
      const { profile_id } = req.params as { profile_id: string };
      return wallets.profiles.listAssets(profile_id.toLowerCase(), req.query as PageRequest);
    },
  );

  app.get(
    '/blockchains',
    {
      schema: {
        tags: ['Directory'],
        summary: 'Blockchains supported and enabled for the profile',
        security,
        params: PROFILE_PARAMS,
        querystring: { type: 'object', additionalProperties: false, properties: PAGE_QUERY },
        response: { 200: pageOf('Blockchain', 'Blockchains'), ...errors() },
      },
    },
    async (req) => {
      const { profile_id } = req.params as { profile_id: string };
      return wallets.profiles.listBlockchains(profile_id.toLowerCase(), req.query as PageRequest);
    },
  );
}

/** True when `s` is a UUID (for callers that validate outside schemas). */
export function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}
