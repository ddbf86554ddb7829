/**
 * Admin API of policies and transfer operations (`/admin/v1/profiles/{profile_id}/…`, bearer
 * session as the rest of the admin API):
 *
 * | route | roles |
 * |---|---|
 * | GET policies, GET policies/{id} | ADMIN, FINANCE_MANAGER, VIEWER |
 * | POST policies, PUT policies/{id}, DELETE policies/{id} (a tombstone version: deletion once signed) | ADMIN, FINANCE_MANAGER |
 * | POST policies/{id}/versions/{v}/signature (the Admin device's signature) | ADMIN |
 * | POST policies/{id}/versions/{v}/dry-run (evaluate a would-be transfer against that version; writes nothing) | ADMIN, FINANCE_MANAGER |
 * | GET transfers, GET transfers/{id} | ADMIN, FINANCE_MANAGER, VIEWER |
 * | POST transfers/{id}/cancel | ADMIN, FINANCE_MANAGER |
 * | POST transfers/{id}/fee-bump (then needs the policy's device approvals) | ADMIN, FINANCE_MANAGER |
 * | POST wallets/{id}/consolidations (a self-spend transfer: policy and device approvals) | ADMIN, FINANCE_MANAGER |
 *
 * None of these is reachable with an API key (seed §4 rules 3, 4). A Finance Manager or Viewer
 * assigned to wallet groups sees and acts on only the transfers of those groups' wallets (any other
 * transfer answers 404 TRANSFER_NOT_FOUND) and the policies naming only those wallets (admin/scope.ts).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authenticateSession } from '../admin/cookies.js';
import { eventStreamResponse, type LiveStreams } from '../admin/live.js';
import { ROLES, type Role } from '../admin/options.js';
import { inScope, scopeFilter, visiblePolicyIds, walletScope, walletScopeHook } from '../admin/scope.js';
import { errorResponses, PAGE_QUERY, UUID } from '../api/schemas.js';
import type { Db } from '../db/db.js';
import { ApiError, type ErrorCode } from '../errors.js';
import type { PageRequest } from '../store.js';
import type { SessionService } from '../users/sessions.js';
import { FAILURE_STATUSES } from './machine.js';
import type { PolicyInput, PolicyService } from './policies.js';
import { policyVersionDocument } from './policy-documents.js';
import { TRANSFER_BODY_PROPS } from './routes.js';
import type { ConsolidationInput } from './self-spend.js';
import { TRANSFER_STATUSES, type TransferInput, type TransferService, type TransferStatus } from './service.js';

const ALL: readonly Role[] = ROLES;
const MANAGE: readonly Role[] = ['ADMIN', 'FINANCE_MANAGER'];
const ADMIN: readonly Role[] = ['ADMIN'];
const COMMON: ErrorCode[] = [
  'SESSION_REQUIRED',
  'ROLE_FORBIDDEN',
  'VALIDATION_FAILED',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
];
const any = (description: string) => ({ description, type: 'object', additionalProperties: true });
const intStr = { type: ['string', 'null'], pattern: '^(0|[1-9][0-9]{0,77})$' };

const POLICY_BODY = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'whitelist'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    scope: {
      type: 'object',
      additionalProperties: false,
      description:
        'What the policy governs; a null member matches any. Most specific scope wins (wallets > asset > blockchain).',
      properties: {
        wallet_ids: { type: ['array', 'null'], items: UUID, maxItems: 1000 },
        blockchain: { type: ['string', 'null'], description: 'blockchain key, e.g. ethereum-mainnet' },
        asset_id: { ...UUID, type: ['string', 'null'] },
      },
    },
    whitelist: {
      type: 'array',
      maxItems: 10000,
      items: { type: 'string', minLength: 1, maxLength: 200 },
      description:
        "Permitted destination addresses, in the chain adapter's canonical form (EIP-55 on Ethereum). Empty: none.",
    },
    per_transaction_limit: { ...intStr, description: 'Base units of the scoped asset; null: none' },
    daily_limit: { ...intStr, description: 'Per wallet and asset per UTC day, base units; null: none' },
    approvals: {
      type: 'object',
      additionalProperties: false,
      required: ['quorum', 'above_amount'],
      properties: {
        quorum: { type: 'integer', minimum: 1, maximum: 16 },
        above_amount: { type: 'string', pattern: '^(0|[1-9][0-9]{0,77})$' },
      },
      description:
        '`quorum` distinct device approvals when amount > `above_amount` (base units), else 1. Default 1 above 0.',
    },
  },
} as const;

/** Register the routes (mount at the root; paths are absolute). */
export async function transferAdminRoutes(
  app: FastifyInstance,
  sessions: SessionService,
  db: Db,
  policies: PolicyService,
  transfers: TransferService,
  live: LiveStreams,
) {
  const auth =
    (roles: readonly Role[]) =>
    async <P>(req: FastifyRequest, _reply: unknown, payload: P): Promise<P> => {
      const user = await authenticateSession(req, sessions);
      req.adminUser = user;
      if (!roles.includes(user.role))
        throw new ApiError('ROLE_FORBIDDEN', `this action needs role ${roles.join(' or ')}`);
      return payload;
    };
  const base = '/admin/v1/profiles/:profile_id';
  const params = (extra: Record<string, unknown> = {}) => ({
    type: 'object',
    required: ['profile_id', ...Object.keys(extra)],
    properties: { profile_id: UUID, ...extra },
  });
  const schema = (
    roles: readonly Role[],
    summary: string,
    status: number,
    extra: Record<string, unknown>,
    errors: ErrorCode[] = [],
  ) => ({
    tags: ['Admin: policies and transfers'],
    summary,
    description: `Roles: ${roles.join(', ')}.`,
    security: [{ AdminSession: [] }],
    // machine-readable roles, as the admin router writes them (admin/route.ts)
    'x-roles': [...roles],
    ...extra,
    response: { [status]: any(summary), ...errorResponses([...new Set([...COMMON, ...errors])]) },
  });
  const pid = (req: FastifyRequest) => (req.params as { profile_id: string }).profile_id.toLowerCase();
  // Wallet-group scoping: a transfer of a wallet outside the user's groups is 404 (admin/scope.ts).
  app.addHook('preHandler', walletScopeHook(db));
  const actor = (req: FastifyRequest) => req.adminUser!.user_id;

  app.get(
    `${base}/policies`,
    {
      preParsing: auth(ALL),
      schema: schema(ALL, 'List policies with their versions', 200, {
        params: params(),
        querystring: { type: 'object', additionalProperties: false, properties: PAGE_QUERY },
      }),
    },
    async (req) => {
      const page = req.query as PageRequest;
      const scope = req.walletScope;
      if (scope === undefined || scope.all) return policies.list(pid(req), page);
      // wallet-group scoping: only the policies naming no wallet outside the user's groups
      const { ids, total } = await visiblePolicyIds(db, pid(req), scope, page);
      const data = [];
      for (const id of ids) data.push(await policies.get(pid(req), id));
      return { data, page: page.page, page_size: page.page_size, total };
    },
  );
  app.get(
    `${base}/policies/:policy_id`,
    {
      preParsing: auth(ALL),
      schema: schema(ALL, 'One policy with its versions', 200, { params: params({ policy_id: UUID }) }, [
        'POLICY_NOT_FOUND',
      ]),
    },
    async (req) => policies.get(pid(req), (req.params as { policy_id: string }).policy_id.toLowerCase()),
  );
  app.post(
    `${base}/policies`,
    {
      preParsing: auth(MANAGE),
      schema: schema(
        MANAGE,
        'Create a policy (version 1, in force once an Admin device signs it)',
        201,
        { params: params(), body: POLICY_BODY },
        ['RESOURCE_NOT_FOUND'],
      ),
    },
    async (req, reply) => {
      reply.code(201);
      return policies.create(actor(req), pid(req), req.body as PolicyInput);
    },
  );
  app.put(
    `${base}/policies/:policy_id`,
    {
      preParsing: auth(MANAGE),
      schema: schema(
        MANAGE,
        'New version of a policy (the active one stays in force until the new one is signed)',
        200,
        { params: params({ policy_id: UUID }), body: POLICY_BODY },
        ['POLICY_NOT_FOUND'],
      ),
    },
    async (req) =>
      policies.update(
        actor(req),
        pid(req),
        (req.params as { policy_id: string }).policy_id.toLowerCase(),
        req.body as PolicyInput,
      ),
  );
  app.delete(
    `${base}/policies/:policy_id`,
    {
      preParsing: auth(MANAGE),
      schema: schema(
        MANAGE,
        'Request the deletion of a policy: a tombstone version (`document.deleted: true`) awaiting an Admin ' +
          'device signature, like any change. The active version keeps governing until the tombstone is ' +
          'signed (POST …/versions/{version}/signature); then the policy is deleted and the signers refuse ' +
          'every version of it (POLICY_DELETED). 202 with the policy and its pending tombstone.',
        202,
        { params: params({ policy_id: UUID }) },
        ['POLICY_NOT_FOUND'],
      ),
    },
    async (req, reply) => {
      reply.code(202);
      return policies.delete(actor(req), pid(req), (req.params as { policy_id: string }).policy_id.toLowerCase());
    },
  );
  app.post(
    `${base}/policies/:policy_id/versions/:version/signature`,
    {
      preParsing: auth(ADMIN),
      schema: schema(
        ADMIN,
        "Attach the signature of the session Admin's own approved device to a policy version: it becomes ACTIVE — a " +
          'tombstone (`document.deleted: true`) becomes DELETED and the policy is deleted. The signers learn the version at once (pushed).',
        200,
        {
          params: params({ policy_id: UUID, version: { type: 'integer', minimum: 1 } }),
          body: {
            type: 'object',
            additionalProperties: false,
            required: ['device_id', 'signature'],
            properties: {
              device_id: UUID,
              signature: {
                type: 'string',
                pattern: '^[0-9a-fA-F]{128}$',
                description:
                  "P-256 r‖s (64 bytes hex) over the version's `digest` (policyDigest), made by the device key",
              },
            },
          },
        },
        ['POLICY_NOT_FOUND', 'CONFLICT'],
      ),
    },
    async (req) => {
      const p = req.params as { policy_id: string; version: number };
      return policies.sign(
        actor(req),
        pid(req),
        p.policy_id.toLowerCase(),
        p.version,
        req.body as { device_id: string; signature: string },
        actor(req),
      );
    },
  );

  app.post(
    `${base}/policies/:policy_id/versions/:version/dry-run`,
    {
      preParsing: auth(MANAGE),
      schema: schema(
        MANAGE,
        'Dry-run a transfer against one version of a policy (a draft awaiting signature or the active one): the ' +
          'evaluation the transfer pipeline runs (whitelist, per-transaction limit, daily limit with the amount already ' +
          'counted today, approval quorum above an amount), by the same function, against THAT version whether or not ' +
          'it is in force. Same body and validation as the custody dry run (422 naming the field). Writes nothing (no ' +
          'transfer, no day lock, no event, no audit entry). Answers `decision` (ALLOW, DENY), `status` and `sub_status` ' +
          '(DESTINATION_NOT_WHITELISTED, TRANSACTION_LIMIT_EXCEEDED, DAILY_LIMIT_EXCEEDED) the transfer would get under ' +
          'that version, `approvals_required`, `in_scope` (whether the version scope covers the transfer at all; when ' +
          "false another policy would govern it), and the day's spent and available amounts (base-unit integer strings).",
        200,
        {
          params: params({ policy_id: UUID, version: { type: 'integer', minimum: 1 } }),
          body: {
            type: 'object',
            additionalProperties: false,
            required: ['wallet_id', 'destination_address', 'asset_id', 'amount'],
            properties: {
              wallet_id: TRANSFER_BODY_PROPS.wallet_id,
              destination_address: TRANSFER_BODY_PROPS.destination_address,
              asset_id: TRANSFER_BODY_PROPS.asset_id,
              amount: TRANSFER_BODY_PROPS.amount,
            },
          },
        },
        ['POLICY_NOT_FOUND', 'WALLET_NOT_FOUND', 'WALLET_ARCHIVED', 'CONFLICT'],
      ),
    },
    async (req) => {
      const p = req.params as { policy_id: string; version: number };
      const body = req.body as TransferInput;
      // wallet-group scoping: a wallet outside the user's groups does not exist for them
      if (!inScope(req.walletScope, body.wallet_id.toLowerCase()))
        throw new ApiError('WALLET_NOT_FOUND', `no wallet ${body.wallet_id} in this profile`);
      const doc = await policyVersionDocument(db, pid(req), p.policy_id.toLowerCase(), p.version);
      return transfers.dryRun(pid(req), body, doc);
    },
  );

  app.get(
    `${base}/transfers`,
    {
      preParsing: auth(ALL),
      schema: schema(ALL, 'List transfers', 200, {
        params: params(),
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { wallet_id: UUID, status: { type: 'string', enum: TRANSFER_STATUSES }, ...PAGE_QUERY },
        },
      }),
    },
    async (req) => {
      const q = req.query as PageRequest & { wallet_id?: string; status?: TransferStatus };
      const only = scopeFilter(req.walletScope);
      return transfers.list(
        pid(req),
        {
          ...(q.wallet_id ? { wallet_id: q.wallet_id } : {}),
          ...(q.status ? { status: q.status } : {}),
          ...(only ? { wallet_ids: only } : {}),
        },
        q,
      );
    },
  );
  app.get(
    `${base}/transfers/:transfer_id`,
    {
      preParsing: auth(ALL),
      schema: schema(
        ALL,
        'One transfer, with its `timeline` (every status transition: status, sub_status, at; oldest first), `approvals` (device decisions: device, owner, decision, time) and `signing` (SIGN ceremonies: signers, outcome, ceremony_id)',
        200,
        { params: params({ transfer_id: UUID }) },
        ['TRANSFER_NOT_FOUND'],
      ),
    },
    async (req) => transfers.adminGet(pid(req), (req.params as { transfer_id: string }).transfer_id.toLowerCase()),
  );
  app.get(
    `${base}/transfers/:transfer_id/events`,
    {
      preParsing: auth(ALL),
      schema: {
        ...schema(
          ALL,
          'Live view of one transfer (Server-Sent Events)',
          200,
          { params: params({ transfer_id: UUID }) },
          ['TRANSFER_NOT_FOUND'],
        ),
        description: `Roles: ${ALL.join(', ')}. The transfer as GET …/transfers/{transfer_id} returns it, at once and on every change, until it is final (a failure status, or SENT with \`delivered_at\`); at most 8 open streams per user and 60 opens per minute (else 429 with Retry-After); the session, role and scope are checked again on every poll and the stream ends when they no longer hold.`,
        response: {
          200: eventStreamResponse('the transfer'),
          ...errorResponses([...new Set([...COMMON, 'TRANSFER_NOT_FOUND' as ErrorCode])]),
        },
      },
    },
    async (req, reply) => {
      const id = (req.params as { transfer_id: string }).transfer_id.toLowerCase();
      const profile = pid(req);
      // Every poll re-resolves the session and role (admin/live.ts) and re-applies the GET route's
      // wallet-group scope with the fresh user: a transfer that left the user's groups ends the stream.
      return live.stream(req, reply, {
        roles: ALL,
        load: async (user) => {
          const scope = await walletScope(db, user, profile);
          const t = await transfers.adminGet(profile, id);
          if (!inScope(scope, t.wallet_id))
            throw new ApiError('TRANSFER_NOT_FOUND', `no transfer ${id} in this profile`);
          return t;
        },
        final: (t) => FAILURE_STATUSES.includes(t.status) || (t.status === 'SENT' && t.delivered_at != null),
      });
    },
  );
  app.post(
    `${base}/transfers/:transfer_id/cancel`,
    {
      preParsing: auth(MANAGE),
      schema: schema(
        MANAGE,
        'Cancel a pending transfer (→ REJECTED / CANCELLED_BY_USER)',
        200,
        { params: params({ transfer_id: UUID }) },
        ['TRANSFER_NOT_FOUND', 'TRANSFER_STATE_CONFLICT'],
      ),
    },
    async (req) =>
      transfers.cancel(actor(req), pid(req), (req.params as { transfer_id: string }).transfer_id.toLowerCase()),
  );
  app.post(
    `${base}/transfers/:transfer_id/fee-bump`,
    {
      preParsing: auth(MANAGE),
      schema: schema(
        MANAGE,
        'Fee bump of a SENT, unconfirmed transfer: the replacement transaction is built now and signed after a new ' +
          "round of device approvals. When its maximum fee is above the fee cap the current transaction was approved under, the round's " +
          'approvers sign the same intent with `max_fee` raised to exactly that fee (`fee_bump.cap_raised`, `fee_bump.max_fee`). ' +
          '409 when the chain cannot replace the transaction (TRON) or the change cannot pay more; 503 when its node does not answer.',
        200,
        {
          params: params({ transfer_id: UUID }),
          body: {
            type: 'object',
            additionalProperties: false,
            properties: {
              priority: { type: 'string', enum: ['SLOW', 'STANDARD', 'FAST'] },
              method: {
                type: 'string',
                enum: ['RBF', 'CPFP'],
                description:
                  'Bitcoin family: RBF (a replacement) or CPFP (a child self-spend of the change output, a transfer of its ' +
                  "own with its own approvals: `fee_bump.child_transfer_id`; the transaction must be in the node's mempool). Default: RBF.",
              },
            },
          },
        },
        ['TRANSFER_NOT_FOUND', 'TRANSFER_STATE_CONFLICT', 'CHAIN_UNAVAILABLE'],
      ),
    },
    async (req) => {
      const b = req.body as { priority?: 'SLOW' | 'STANDARD' | 'FAST'; method?: 'RBF' | 'CPFP' } | undefined;
      return transfers.requestFeeBump(
        actor(req),
        pid(req),
        (req.params as { transfer_id: string }).transfer_id.toLowerCase(),
        b?.priority ?? 'FAST',
        b?.method,
      );
    },
  );
  app.post(
    `${base}/wallets/:wallet_id/consolidations`,
    {
      preParsing: auth(MANAGE),
      schema: schema(
        MANAGE,
        "UTXO consolidation (Bitcoin family): the wallet's smallest UTXOs (below `below`, at most `max_inputs`) spent to its own " +
          "source address in one output, no change; fee at `priority`, which is also the intent's `max_fee`. The result is a transfer " +
          '(201, its view) under the same policy and device approvals as any transfer to that address. 422 when fewer than 2 UTXOs ' +
          'qualify or the result is below dust.',
        201,
        {
          params: params({ wallet_id: UUID }),
          body: {
            type: 'object',
            additionalProperties: false,
            required: ['blockchain_id'],
            properties: {
              blockchain_id: { type: 'string', minLength: 1, maxLength: 100, description: 'blockchain id or key' },
              max_inputs: { type: 'integer', minimum: 2, maximum: 200 },
              below: { ...intStr, type: 'string', description: 'only UTXOs below this value, base units' },
              priority: { type: 'string', enum: ['SLOW', 'STANDARD', 'FAST'] },
            },
          },
        },
        ['WALLET_NOT_FOUND', 'TRANSFER_STATE_CONFLICT', 'CHAIN_UNAVAILABLE'],
      ),
    },
    async (req, reply) => {
      const view = await transfers.consolidate(
        actor(req),
        pid(req),
        (req.params as { wallet_id: string }).wallet_id.toLowerCase(),
        req.body as ConsolidationInput,
      );
      return reply.code(201).send(view);
    },
  );
}
