/**
 * REST routes of transfers (seed §4) under `/api/v1/profiles/{profile_id}`: create (idem), list
 * (filters `wallet_id`, `status`), get one (our addition), dry run (our extension), fee estimate
 * (idem). There is deliberately NO route here to approve, cancel, fee-bump or change a policy
 * (seed §4 rules 3, 4): those are admin API / device functions.
 */
import { REFUSALS } from '@custodian/wire';
import type { FastifyInstance } from 'fastify';
import { runIdempotent, runIdempotentAnswer } from '../api/idempotency.js';
import { type ProfileRoutesContext, requireIdempotencyKey } from '../api/routes.js';
import {
  API_COMMON_ERRORS,
  BODY_ERRORS,
  errorResponses,
  IDEMPOTENCY_ERRORS,
  IDEMPOTENCY_HEADERS,
  PAGE_QUERY,
  pageOf,
  UUID,
} from '../api/schemas.js';
import type { ErrorCode } from '../errors.js';
import type { PageRequest } from '../store.js';
import { TRANSFER_STATUSES, type TransferInput, type TransferService, type TransferStatus } from './service.js';

const security = [{ ApiKey: [] }];
const errors = (...extra: ErrorCode[]) => errorResponses([...API_COMMON_ERRORS, ...extra]);
const PROFILE_PARAMS = { type: 'object', required: ['profile_id'], properties: { profile_id: UUID } } as const;

export const TRANSFER_BODY_PROPS = {
  wallet_id: { ...UUID, description: 'Source wallet' },
  destination_address: {
    type: 'string',
    minLength: 1,
    maxLength: 200,
    description: "Validated by the blockchain's adapter (format, checksum, network); must pass the whitelist policy",
  },
  asset_id: { ...UUID, description: 'Asset to send (enabled for the profile, on one of the wallet blockchains)' },
  amount: {
    type: 'string',
    minLength: 1,
    maxLength: 100,
    description:
      'Decimal string in asset units ("1.5"). More decimals than the asset has, zero, negative, or more than the ' +
      "wallet's available balance (confirmed balance minus its transfers not yet sent) → 422 naming `body.amount`; never rounded.",
  },
  external_id: {
    type: 'string',
    minLength: 1,
    maxLength: 200,
    description: "Caller's reference, returned in responses and webhooks",
  },
} as const;

const TRANSFER_BODY = {
  type: 'object',
  additionalProperties: false,
  required: ['wallet_id', 'destination_address', 'asset_id', 'amount'],
  properties: TRANSFER_BODY_PROPS,
} as const;

/** The refusal codes that end a transfer REJECTED (the catalogue's non-transient ones, `@custodian/wire` refusals.ts). */
const DEFINITIVE_REFUSALS = Object.entries(REFUSALS)
  .filter(([, info]) => !info.transient)
  .map(([code]) => code);

/** Response schemas registered with `app.addSchema` (OpenAPI components). */
export const TRANSFER_SCHEMAS = [
  {
    $id: 'Transfer',
    type: 'object',
    description:
      'A transfer. `status` is one of the seed §3 statuses; `sub_status` gives the reason on terminal ones: ' +
      'REJECTED_BY_POLICY: DESTINATION_NOT_WHITELISTED | TRANSACTION_LIMIT_EXCEEDED | DAILY_LIMIT_EXCEEDED; ' +
      'NO_POLICY_FOUND: NO_POLICY_FOUND; REJECTED: REJECTED_BY_APPROVER | CANCELLED_BY_USER | a signer refusal code ' +
      `(the definitive codes of the refusal catalogue, control.proto RefusalCode: ${DEFINITIVE_REFUSALS.join(', ')}; ` +
      'UNKNOWN for a signer that sends no code or one this coordinator does not know); EXPIRED: APPROVAL_EXPIRED; ' +
      'FAILED: SIGNING_FAILED (the build failed, or an MPC abort blamed a party) | SIGNING_WINDOW_EXPIRED (no signature within the signing window, ' +
      'default 1 h after the transfer entered PENDING_SIGNATURE, while signers stayed unavailable) | BROADCAST_FAILED | ' +
      'FEE_CAP_EXCEEDED (no transaction could be built within `max_fee`: nothing was sent to the signers) | ' +
      "EXPIRED_ON_CHAIN (TRON, after SENT: a block past the transaction's expiration has the chain's confirmations and the " +
      'transaction was neither mined nor pending, so it can never be mined; the funds never left; create a new transfer). ' +
      'A PENDING_SIGNATURE transfer has `sub_status` WAITING_FOR_SIGNERS while a server signer or phone of its signing set is unreachable, ' +
      'offline or timed out: it is retried with backoff (another signing set of the key is picked when one is available) and signed as soon as ' +
      'the parties are back; only a refusal, a blamed party or the end of the window ends it. ' +
      '`max_fee` is the fee cap the approvers signed (part of the transfer intent): the most the transaction may pay in fees, a decimal string in ' +
      "units of the blockchain's native asset `fee_currency` (ETH, BTC, LTC, TRX; `max_fee_base_units` the integer in its base units). " +
      "It is the operator's cap for the blockchain when the transfer was created. The coordinator never builds a transaction above it " +
      '(Ethereum: gas × maxFeePerGas, lowered to floor(max_fee / gas) when that still covers the base and priority fee; TRON: fee_limit; ' +
      'Bitcoin family: inputs − outputs), and the signers refuse one (FEE_ABOVE_CAP). ' +
      'A PENDING_SIGNATURE or READY_TO_SEND transfer has `sub_status` CHAIN_UNAVAILABLE while no node is configured for its blockchain (it waits, and can still be cancelled before signing). ' +
      'SENT is terminal success; `delivered_at` is set (and TRANSFER_DELIVERED sent) once the transaction has the ' +
      "chain's confirmations. `fee_bump` shows the latest fee bump requested in the admin API, with the fee cap its approval round " +
      'signs (`max_fee`, `max_fee_base_units`, `fee_currency`; `cap_raised` when it is above the cap of the transaction it replaces); ' +
      'its `sub_status` is WAITING_FOR_SIGNERS or SIGNING_WINDOW_EXPIRED under the same rules, or ALREADY_CONFIRMED (FAILED) when the ' +
      "transfer's transaction was confirmed before the replacement was signed.",
    required: [
      'transfer_id',
      'wallet_id',
      'asset_id',
      'destination_address',
      'amount',
      'amount_base_units',
      'max_fee',
      'max_fee_base_units',
      'fee_currency',
      'external_id',
      'status',
      'sub_status',
      'created_at',
      'updated_at',
    ],
    properties: {
      transfer_id: UUID,
      profile_id: UUID,
      wallet_id: UUID,
      asset_id: UUID,
      blockchain_id: UUID,
      source_address: { type: 'string' },
      destination_address: { type: 'string' },
      amount: { type: 'string', description: 'decimal string in asset units' },
      amount_base_units: { type: 'string', pattern: '^[0-9]+$' },
      max_fee: {
        type: 'string',
        description:
          "fee cap the approvers signed: decimal string in units of the blockchain's native asset (`fee_currency`)",
      },
      max_fee_base_units: {
        type: 'string',
        pattern: '^[0-9]+$',
        description: 'the fee cap in base units of the native asset',
      },
      fee_currency: { type: 'string', description: 'symbol of the native asset fees are paid in (ETH, BTC, LTC, TRX)' },
      external_id: { type: ['string', 'null'] },
      status: { type: 'string', enum: TRANSFER_STATUSES },
      sub_status: { type: ['string', 'null'] },
      policy_id: { type: ['string', 'null'] },
      policy_version: { type: ['integer', 'null'] },
      approvals_required: { type: 'integer' },
      approvals_received: { type: 'integer' },
      approval_deadline: { type: ['string', 'null'], format: 'date-time' },
      tx_hash: { type: ['string', 'null'] },
      fee_bump: {
        type: ['object', 'null'],
        description:
          "the latest fee bump (admin API). `max_fee` / `max_fee_base_units` / `fee_currency`: the fee cap its round's approvers sign; `cap_raised`: above the cap of the transaction it replaces (the round's intent is the transfer's with that higher `max_fee`)",
        properties: {
          status: {
            type: 'string',
            enum: ['PENDING_APPROVAL', 'PENDING_SIGNATURE', 'SIGNED', 'DONE', 'REJECTED', 'FAILED'],
          },
          round: { type: 'integer' },
          priority: { type: 'string', enum: ['SLOW', 'STANDARD', 'FAST'] },
          requested_by: { type: ['string', 'null'] },
          requested_at: { type: 'string', format: 'date-time' },
          deadline: { type: 'string', format: 'date-time' },
          sub_status: { type: 'string' },
          error: { type: 'string' },
          max_fee: { type: 'string' },
          max_fee_base_units: { type: 'string', pattern: '^[0-9]+$' },
          fee_currency: { type: 'string' },
          cap_raised: { type: 'boolean' },
        },
        additionalProperties: false,
      },
      created_at: { type: 'string', format: 'date-time' },
      updated_at: { type: 'string', format: 'date-time' },
      sent_at: { type: ['string', 'null'], format: 'date-time' },
      delivered_at: { type: ['string', 'null'], format: 'date-time' },
    },
  },
] as const;

/**
 * Register the transfer routes (mount under `/api/v1/profiles/:profile_id` with the API-key hook).
 * {@link TRANSFER_SCHEMAS} must be added on the ROOT instance first (a schema added inside an
 * encapsulated context makes fastify rebuild that context's validator without the server's Ajv
 * settings).
 */
export async function transferRoutes(app: FastifyInstance, ctx: ProfileRoutesContext, svc: TransferService) {
  const { store } = ctx;

  app.post(
    '/transfers',
    {
      preValidation: requireIdempotencyKey,
      schema: {
        tags: ['Transfers'],
        summary: 'Create a transfer (idempotent)',
        description:
          'Creates a transfer and evaluates the policy at once (seed §1: default deny). 201 with the transfer: ' +
          "PENDING_APPROVAL (approval requests are pushed to the key's mobile signer devices), or a terminal " +
          'REJECTED_BY_POLICY / NO_POLICY_FOUND with `sub_status`. Daily limits count every transfer of the wallet and ' +
          'asset on the UTC day that is not failed, rejected or expired, checked atomically per wallet, asset and day. ' +
          'An archived wallet (admin API) takes no transfer: 409 WALLET_ARCHIVED.',
        security,
        params: PROFILE_PARAMS,
        headers: IDEMPOTENCY_HEADERS,
        body: TRANSFER_BODY,
        response: {
          201: { description: 'The created transfer', $ref: 'Transfer#' },
          ...errors(...BODY_ERRORS, ...IDEMPOTENCY_ERRORS, 'WALLET_ARCHIVED'),
        },
      },
    },
    async (req, reply) => {
      const profileId = (req.params as { profile_id: string }).profile_id.toLowerCase();
      return runIdempotent(store, ctx.idempotency, req, reply, profileId, 201, async (q) => {
        const c = await svc.createIn(q, profileId, req.body as TransferInput);
        return { body: c.view, afterCommit: c.afterCommit };
      });
    },
  );

  app.get(
    '/transfers',
    {
      schema: {
        tags: ['Transfers'],
        summary: 'List transfers',
        description: 'Newest first, paginated. Filters: `wallet_id` (UUID) and `status` (one of the ten statuses).',
        security,
        params: PROFILE_PARAMS,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            wallet_id: { ...UUID, description: 'Only transfers from this wallet' },
            status: { type: 'string', enum: TRANSFER_STATUSES, description: 'Only transfers in this status' },
            ...PAGE_QUERY,
          },
        },
        response: { 200: pageOf('Transfer', 'Transfers'), ...errors() },
      },
    },
    async (req) => {
      const profileId = (req.params as { profile_id: string }).profile_id.toLowerCase();
      const q = req.query as PageRequest & { wallet_id?: string; status?: TransferStatus };
      return svc.list(
        profileId,
        { ...(q.wallet_id ? { wallet_id: q.wallet_id } : {}), ...(q.status ? { status: q.status } : {}) },
        q,
      );
    },
  );

  app.get(
    '/transfers/:transfer_id',
    {
      schema: {
        tags: ['Transfers'],
        summary: 'One transfer (our addition to the seed)',
        security,
        params: {
          type: 'object',
          required: ['profile_id', 'transfer_id'],
          properties: { profile_id: UUID, transfer_id: UUID },
        },
        response: { 200: { description: 'The transfer', $ref: 'Transfer#' }, ...errors('TRANSFER_NOT_FOUND') },
      },
    },
    async (req) => {
      const { profile_id, transfer_id } = req.params as { profile_id: string; transfer_id: string };
      return svc.get(profile_id.toLowerCase(), transfer_id.toLowerCase());
    },
  );

  app.post(
    '/transfers/dry-run',
    {
      schema: {
        tags: ['Transfers'],
        summary: 'Dry run of a transfer (our extension)',
        description:
          'Evaluates a would-be transfer (same body and validation as creation) and returns the matching policy, the ' +
          'decision (ALLOW, DENY, NO_POLICY_FOUND), the status and sub_status creation would give, the approvals ' +
          "needed, and the day's spent and available amounts (base units). Creates nothing and needs no idempotency key.",
        security,
        params: PROFILE_PARAMS,
        body: TRANSFER_BODY,
        response: {
          200: {
            description: 'The evaluation',
            type: 'object',
            additionalProperties: true,
            required: ['decision', 'status', 'approvals_required', 'policy'],
            properties: {
              decision: { type: 'string', enum: ['ALLOW', 'DENY', 'NO_POLICY_FOUND'] },
              status: { type: 'string' },
              sub_status: { type: ['string', 'null'] },
              approvals_required: { type: 'integer' },
              policy: { type: ['object', 'null'], additionalProperties: true },
            },
          },
          ...errors(...BODY_ERRORS, 'WALLET_ARCHIVED'),
        },
      },
    },
    async (req) => {
      const profileId = (req.params as { profile_id: string }).profile_id.toLowerCase();
      return svc.dryRun(profileId, req.body as TransferInput);
    },
  );

  app.post(
    '/fee-estimate',
    {
      preValidation: requireIdempotencyKey,
      schema: {
        tags: ['Transfers'],
        summary: 'Estimate the fee of a transfer (idempotent)',
        description:
          'Same body as transfer creation plus `priority` (SLOW, STANDARD default, FAST). `fee_value` in the native ' +
          'coin (decimal string), `fee_value_usd` (null without a configured price), `fee_currency`, chain-specific ' +
          '`metadata` (Ethereum: gas_limit, base_fee_per_gas, max_priority_fee_per_gas, max_fee_per_gas, max_fee_value). ' +
          'The idempotency key is a UUID as for creation. 503 CHAIN_UNAVAILABLE without a node for the blockchain.',
        security,
        params: PROFILE_PARAMS,
        headers: IDEMPOTENCY_HEADERS,
        body: {
          ...TRANSFER_BODY,
          properties: { ...TRANSFER_BODY_PROPS, priority: { type: 'string', enum: ['SLOW', 'STANDARD', 'FAST'] } },
        },
        response: {
          200: {
            description: 'The estimate',
            type: 'object',
            additionalProperties: true,
            required: ['fee_value', 'fee_value_usd', 'fee_currency', 'metadata'],
            properties: {
              fee_value: { type: 'string' },
              fee_value_usd: {
                type: ['string', 'null'],
                description:
                  'The fee in USD, 2 decimals (rounded half up), computed exactly from the fee in base units and the ' +
                  "operator's price of the fee currency (coordinator setting `prices`: static table and/or HTTP price " +
                  'endpoint, cached). null when no price source is configured, or the price lookup failed or timed out ' +
                  '(the estimate itself never fails on price).',
              },
              fee_currency: { type: 'string' },
              metadata: { type: 'object', additionalProperties: true },
              priority: { type: 'string' },
            },
          },
          ...errors(...BODY_ERRORS, ...IDEMPOTENCY_ERRORS, 'CHAIN_UNAVAILABLE', 'WALLET_ARCHIVED'),
        },
      },
    },
    async (req, reply) => {
      const profileId = (req.params as { profile_id: string }).profile_id.toLowerCase();
      const { priority, ...body } = req.body as TransferInput & { priority?: 'SLOW' | 'STANDARD' | 'FAST' };
      return runIdempotentAnswer(store, ctx.idempotency, req, reply, profileId, 200, () =>
        svc.feeEstimate(profileId, body, priority ?? 'STANDARD'),
      );
    },
  );
}
