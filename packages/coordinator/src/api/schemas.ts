/**
 * JSON Schemas of the HTTP API. Request schemas are inline (validated by Ajv); response schemas
 * are shared by `$id` and become `components.schemas` of the OpenAPI 3.1 document.
 */
import { ERROR_CATALOGUE, type ErrorCode } from '../errors.js';

const uuid = { type: 'string', format: 'uuid' } as const;
const dateTime = { type: 'string', format: 'date-time' } as const;

/** Schemas registered with `app.addSchema` (response shapes). */
export const SHARED_SCHEMAS = [
  {
    $id: 'Problem',
    type: 'object',
    description:
      'RFC 9457 problem details. `code` is a stable machine-readable code from the error catalogue; ' +
      '`title` is fixed per code; `detail` is human-readable; `errors` lists failing fields for validation errors.',
    required: ['type', 'title', 'status', 'code'],
    properties: {
      type: { type: 'string', format: 'uri' },
      title: { type: 'string' },
      status: { type: 'integer' },
      code: { type: 'string', enum: Object.keys(ERROR_CATALOGUE) },
      detail: { type: 'string' },
      instance: { type: 'string' },
      errors: {
        type: 'array',
        items: {
          type: 'object',
          required: ['field', 'message'],
          properties: {
            field: { type: 'string', description: '`body.x`, `query.x`, `params.x` or `header.x`' },
            message: { type: 'string' },
          },
        },
      },
    },
  },
  {
    $id: 'WalletRef',
    type: 'object',
    description: 'Wallet identifier (the wallet listing returns identifiers only, seed §2).',
    required: ['wallet_id'],
    properties: { wallet_id: uuid },
  },
  {
    $id: 'Address',
    type: 'object',
    description:
      'A deposit address. `public_key` is the 33-byte SEC1-compressed secp256k1 key (hex) at ' +
      '`derivation_path` = m/44/{coin_type}/{wallet_index}/0/{address_index} (all levels non-hardened, ' +
      'BIP32 CKDpub from the master public key and chain code).',
    required: [
      'address_id',
      'wallet_id',
      'blockchain_id',
      'address',
      'address_type',
      'address_index',
      'derivation_path',
      'public_key',
      'created_at',
    ],
    properties: {
      address_id: uuid,
      wallet_id: uuid,
      blockchain_id: uuid,
      address: { type: 'string' },
      address_type: { type: 'string', enum: ['eoa', 'tron', 'p2wpkh', 'p2tr'] },
      address_index: { type: 'integer', minimum: 0 },
      derivation_path: { type: 'string' },
      public_key: { type: 'string', pattern: '^[0-9a-f]{66}$' },
      created_at: dateTime,
    },
  },
  {
    $id: 'Wallet',
    type: 'object',
    description: 'A wallet with its blockchains and the deposit addresses derived at creation.',
    required: ['wallet_id', 'profile_id', 'name', 'blockchain_ids', 'created_at', 'addresses'],
    properties: {
      wallet_id: uuid,
      profile_id: uuid,
      name: { type: ['string', 'null'] },
      blockchain_ids: { type: 'array', items: uuid, minItems: 1 },
      created_at: dateTime,
      addresses: { type: 'array', items: { $ref: 'Address#' } },
    },
  },
  {
    $id: 'Balance',
    type: 'object',
    description:
      'Balance of one asset in one wallet. `amount` is a decimal string in asset units; ' +
      '`amount_base_units` the exact integer in base units (amount × 10^decimals). ' +
      '`updated_at` is null when no balance was ever observed (amount 0).',
    required: [
      'wallet_id',
      'blockchain_id',
      'asset_id',
      'symbol',
      'decimals',
      'amount',
      'amount_base_units',
      'updated_at',
    ],
    properties: {
      wallet_id: uuid,
      blockchain_id: uuid,
      asset_id: uuid,
      symbol: { type: 'string' },
      decimals: { type: 'integer' },
      amount: { type: 'string', pattern: '^[0-9]+(\\.[0-9]+)?$' },
      amount_base_units: { type: 'string', pattern: '^[0-9]+$' },
      updated_at: { type: ['string', 'null'], format: 'date-time' },
    },
  },
  {
    $id: 'Asset',
    type: 'object',
    description:
      'Asset directory entry. `symbol` is a string (ticker), `decimals` an integer (base units per unit = 10^decimals), ' +
      '`blockchain` the string key of its blockchain (e.g. "ethereum-mainnet"). Identifiers are UUIDv5 and stable across instances.',
    required: ['asset_id', 'symbol', 'name', 'decimals', 'blockchain', 'blockchain_id', 'kind', 'contract_address'],
    properties: {
      asset_id: uuid,
      symbol: { type: 'string' },
      name: { type: 'string' },
      decimals: { type: 'integer', minimum: 0 },
      blockchain: { type: 'string' },
      blockchain_id: uuid,
      kind: { type: 'string', enum: ['native', 'erc20', 'trc20'] },
      contract_address: { type: ['string', 'null'] },
    },
  },
  {
    $id: 'Blockchain',
    type: 'object',
    description:
      'Blockchain directory entry. `account_model` = "utxo" allows several addresses per wallet; ' +
      '"account" exactly one. `chain_id` is the EIP-155 chain id (Ethereum) or network id (TRON), null for Bitcoin-family.',
    required: [
      'blockchain_id',
      'key',
      'name',
      'family',
      'network',
      'chain_id',
      'account_model',
      'testnet',
      'address_types',
      'native_asset_id',
    ],
    properties: {
      blockchain_id: uuid,
      key: { type: 'string' },
      name: { type: 'string' },
      family: { type: 'string', enum: ['ethereum', 'bitcoin', 'litecoin', 'tron'] },
      network: { type: 'string' },
      chain_id: { type: ['string', 'null'] },
      account_model: { type: 'string', enum: ['account', 'utxo'] },
      testnet: { type: 'boolean' },
      address_types: { type: 'array', items: { type: 'string' } },
      native_asset_id: { type: ['string', 'null'], format: 'uuid' },
    },
  },
] as const;

/** Paginated envelope `{ data, page, page_size, total }` around a shared item schema. */
export function pageOf(ref: string, description: string) {
  return {
    description,
    type: 'object',
    required: ['data', 'page', 'page_size', 'total'],
    properties: {
      data: { type: 'array', items: { $ref: `${ref}#` } },
      page: { type: 'integer', minimum: 1 },
      page_size: { type: 'integer', minimum: 1, maximum: 200 },
      total: { type: 'integer', minimum: 0 },
    },
  };
}

/** Query parameters `page` (≥ 1, default 1) and `page_size` (1..200, default 50). */
export const PAGE_QUERY = {
  page: {
    type: 'integer',
    minimum: 1,
    maximum: 1_000_000,
    default: 1,
    description: 'Page number, from 1. Out of range → 422. A page past the end returns an empty `data`.',
  },
  page_size: {
    type: 'integer',
    minimum: 1,
    maximum: 200,
    default: 50,
    description: 'Items per page, default 50, maximum 200. Out of range → 422.',
  },
} as const;

/** UUID schema for params and bodies. */
export const UUID = uuid;

/**
 * OpenAPI response entries for a set of error codes, grouped by HTTP status, each with media type
 * `application/problem+json` and a description listing the codes (checked against the catalogue).
 */
export function errorResponses(codes: readonly ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of codes) {
    const s = ERROR_CATALOGUE[c].status;
    byStatus.set(s, [...(byStatus.get(s) ?? []), c]);
  }
  const out: Record<string, unknown> = {};
  for (const [status, cs] of byStatus) {
    out[String(status)] = {
      description: cs.map((c) => `\`${c}\`: ${ERROR_CATALOGUE[c].title}`).join('; '),
      content: { 'application/problem+json': { schema: { $ref: 'Problem#' } } },
    };
  }
  return out;
}

/** Errors every authenticated REST route can return. */
export const API_COMMON_ERRORS: readonly ErrorCode[] = [
  'API_KEY_MISSING',
  'API_KEY_INVALID',
  'API_KEY_ADDRESS_NOT_ALLOWED',
  'PROFILE_FORBIDDEN',
  'VALIDATION_FAILED',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
];

/** Extra errors of routes with a JSON body. */
export const BODY_ERRORS: readonly ErrorCode[] = ['MALFORMED_JSON', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE'];

/** Extra errors of idempotent routes. */
export const IDEMPOTENCY_ERRORS: readonly ErrorCode[] = [
  'IDEMPOTENCY_KEY_MISSING',
  'IDEMPOTENCY_KEY_INVALID',
  'IDEMPOTENCY_REQUEST_IN_PROGRESS',
  'IDEMPOTENCY_KEY_REUSED',
];

/** Header parameters of idempotent routes (documented; checked in a preValidation hook). */
export const IDEMPOTENCY_HEADERS = {
  type: 'object',
  properties: {
    'idempotency-key': {
      type: 'string',
      description:
        "UUID. Required (or its alias `Idempotency_key`, the seed's spelling, which proxies such as nginx drop by default). " +
        'Same key + same body → the first response is replayed (same status and body, header `Idempotent-Replayed: true`); ' +
        'same key + different body or path → 422 IDEMPOTENCY_KEY_REUSED; same key while the first request is in flight → ' +
        '409 IDEMPOTENCY_REQUEST_IN_PROGRESS; missing → 400. Only successful (2xx) responses are stored: after an error ' +
        'the key is released and may be retried. Keys are scoped to the profile and retained 24 h by default.',
    },
    idempotency_key: {
      type: 'string',
      description:
        'Alias of `Idempotency-Key` (the seed spells it `Idempotency_key`); a request that sends it may omit `Idempotency-Key`.',
    },
  },
} as const;
