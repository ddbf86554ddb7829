/**
 * Admin API (`/admin/v1`): the seed's dashboard-only functions, for the CLI and a later web
 * dashboard. Authenticated by a bearer session token (login = password + second factor);
 * roles enforced per route exactly as seed §1:
 *
 * | Role | Routes |
 * |---|---|
 * | ADMIN | everything |
 * | FINANCE_MANAGER | own session, password and TOTP; read profiles, directory, wallets, addresses, balances, master keys, ceremonies (policy management comes with the transfer pipeline) |
 * | VIEWER | the same reads (read-only) |
 *
 * Sensitive routes also need a fresh step-up of the session (`POST /admin/v1/session/step-up`,
 * default 5 min) and answer 403 `STEP_UP_REQUIRED` without one: TOTP enrollment start and confirm,
 * API key create and revoke, profile and instance webhook create, update and delete, webhook
 * signing key rotation, user creation, deletion and blocking, a user change of role or password,
 * wallet-group membership changes, group deletion, device approval, and server signer
 * registration and removal. TOTP disable carries its own proof (the current code).
 * A Finance Manager or Viewer assigned to wallet groups is limited to those groups' wallets, their
 * balances and transfers, and those groups (`scope.ts`; others answer 404 as if absent). Instance
 * and security events go to instance-level webhooks (`/admin/v1/webhooks`) only.
 *
 * The mobile app's enrollment request is under `/devices/v1` (unauthenticated; the app only
 * knows the instance URL).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import { MAX_ALLOWED_CIDRS } from '../api/cidrs.js';
import { errorResponses, PAGE_QUERY, UUID } from '../api/schemas.js';
import { DEVICE_NAME_MAX_CHARS } from '../devices/binding.js';
import { ApiError, type ErrorCode } from '../errors.js';
import { clientAddressKey } from '../server.js';
import type { PageRequest } from '../store.js';
import { INSTANCE_EVENT_TYPES, PROFILE_EVENT_TYPES } from '../webhooks/events.js';
import { scopeFilter, walletScopeHook } from './scope.js';
import { type AdminService, ROLES, type Role, type SessionUser, WEBHOOK_EVENT_TYPES } from './service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the session hook. */
    adminUser?: SessionUser;
  }
}

const ALL: readonly Role[] = ROLES;
const ADMIN: readonly Role[] = ['ADMIN'];

const obj = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  additionalProperties: false,
  required,
  properties,
});
const anyObject = (description: string) => ({ description, type: 'object', additionalProperties: true });
const listOf = (description: string) => ({
  description,
  type: 'array',
  items: { type: 'object', additionalProperties: true },
});
const pageEnvelope = (description: string) => ({
  description,
  type: 'object',
  required: ['data', 'page', 'page_size', 'total'],
  properties: {
    data: { type: 'array', items: { type: 'object', additionalProperties: true } },
    page: { type: 'integer' },
    page_size: { type: 'integer' },
    total: { type: 'integer' },
  },
});
const email = { type: 'string', format: 'email', maxLength: 254 };
const password = {
  type: 'string',
  minLength: 12,
  maxLength: 1024,
  description:
    'At least 12 characters and hard to guess: a zxcvbn-ts strength score of at least 3 of 4 (configurable), with ' +
    "the user's e-mail address and name counted as known words; otherwise 422 naming the field, with advice.",
};
const name = { type: 'string', minLength: 1, maxLength: 200 };
const role = { type: 'string', enum: ROLES };
const code = { type: 'string', pattern: '^[0-9]{6}$' };
const pageQuery = { type: 'object', additionalProperties: false, properties: PAGE_QUERY };

const COMMON: ErrorCode[] = [
  'SESSION_REQUIRED',
  'ROLE_FORBIDDEN',
  'VALIDATION_FAILED',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
];
const BODY: ErrorCode[] = ['MALFORMED_JSON', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE'];

interface RouteSpec {
  /** null = no session required. */
  roles: readonly Role[] | null;
  summary: string;
  description?: string;
  tags: string[];
  params?: object;
  querystring?: object;
  body?: object;
  status: number;
  response: object;
  errors?: ErrorCode[];
  rateLimit?: { max: number; timeWindow: number; keyGenerator: (req: FastifyRequest) => string };
  /**
   * Needs a fresh step-up: `true` always (checked before the body is parsed), or a predicate on
   * the validated request (checked before the handler), e.g. only when the body changes a role.
   */
  stepUp?: true | ((req: FastifyRequest) => boolean);
}

/** Register the admin API routes (mount at `/admin/v1`) and the device enrollment routes. */
export async function adminRoutes(app: FastifyInstance, svc: AdminService) {
  // Both run as preParsing hooks: after the rate limit (onRequest), before body parsing and validation.
  const sessionHook = async <P>(req: FastifyRequest, _reply: unknown, payload: P): Promise<P> => {
    const h = req.headers.authorization;
    const m = typeof h === 'string' ? /^Bearer ([A-Za-z0-9_-]{1,200})$/.exec(h) : null;
    const user = m?.[1] !== undefined ? await svc.sessionUser(m[1]) : null;
    if (user === null) throw new ApiError('SESSION_REQUIRED', 'log in and send Authorization: Bearer <token>');
    req.adminUser = user;
    return payload;
  };
  const roleHook =
    (roles: readonly Role[]) =>
    async <P>(req: FastifyRequest, _reply: unknown, payload: P): Promise<P> => {
      if (!roles.includes(req.adminUser!.role)) {
        throw new ApiError('ROLE_FORBIDDEN', `this action needs role ${roles.join(' or ')}`);
      }
      return payload;
    };

  const stepUpFresh = (req: FastifyRequest) => {
    const until = req.adminUser!.step_up_until;
    if (until === null || until.getTime() <= svc.clock().getTime()) {
      throw new ApiError(
        'STEP_UP_REQUIRED',
        'this action needs a fresh step-up: POST /admin/v1/session/step-up with your TOTP code (or password without TOTP)',
      );
    }
  };
  const stepUpHook = async <P>(req: FastifyRequest, _reply: unknown, payload: P): Promise<P> => {
    stepUpFresh(req);
    return payload;
  };
  const stepUpMinutes = Math.round(svc.opts.stepUpTtlMs / 60_000);

  const route = (
    method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
    url: string,
    spec: RouteSpec,
    handler: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
  ) => {
    const errors = [
      ...(spec.roles === null ? ['VALIDATION_FAILED', 'RATE_LIMITED', 'INTERNAL_ERROR'] : COMMON),
      ...(spec.body ? BODY : []),
      ...(spec.stepUp ? (['STEP_UP_REQUIRED'] as ErrorCode[]) : []),
      ...(spec.errors ?? []),
    ] as ErrorCode[];
    const stepUp = spec.stepUp;
    const roleText =
      (spec.roles === null ? 'No session required.' : `Roles: ${spec.roles.join(', ')}.`) +
      (stepUp === true
        ? ` Needs a fresh step-up (POST /admin/v1/session/step-up, valid ${stepUpMinutes} min), else 403 \`STEP_UP_REQUIRED\`.`
        : stepUp
          ? ` The sensitive changes named above need a fresh step-up (POST /admin/v1/session/step-up, valid ${stepUpMinutes} min), else 403 \`STEP_UP_REQUIRED\`.`
          : '');
    const opts: RouteShorthandOptions = {
      preParsing:
        spec.roles === null ? [] : [sessionHook, roleHook(spec.roles), ...(stepUp === true ? [stepUpHook] : [])],
      ...(typeof stepUp === 'function'
        ? {
            preHandler: async (req: FastifyRequest) => {
              if (stepUp(req)) stepUpFresh(req);
            },
          }
        : {}),
      ...(spec.rateLimit ? { config: { rateLimit: spec.rateLimit } } : {}),
      schema: {
        tags: spec.tags,
        summary: spec.summary,
        description: `${spec.description ? `${spec.description} ` : ''}${roleText}`,
        ...(spec.roles === null ? {} : { security: [{ AdminSession: [] }] }),
        ...(spec.params ? { params: spec.params } : {}),
        ...(spec.querystring ? { querystring: spec.querystring } : {}),
        ...(spec.body ? { body: spec.body } : {}),
        response: { [spec.status]: spec.response, ...errorResponses([...new Set(errors)]) },
      },
    };
    app.route({
      method,
      url,
      ...opts,
      handler: async (req, reply) => {
        const out = await handler(req, reply);
        reply.code(spec.status);
        return spec.status === 204 ? reply.send() : out;
      },
    });
  };
  const actor = (req: FastifyRequest) => req.adminUser!.user_id;
  const P = <T>(req: FastifyRequest) => req.params as T;
  // Wallet-group scoping (#26 item 9): a wallet or wallet group outside the user's groups is 404.
  app.addHook('preHandler', walletScopeHook(svc.store.db));
  const B = <T>(req: FastifyRequest) => req.body as T;
  // Unauthenticated routes: per client address only — never keyed by a header the client picks
  // (#26 item 1); the per-account counts are in AdminService.login / verifyLogin.
  const loginLimit = {
    max: svc.opts.loginRateLimit.max,
    timeWindow: svc.opts.loginRateLimit.windowMs,
    keyGenerator: clientAddressKey,
  };

  // ---- instance, login, session ----
  route(
    'POST',
    '/admin/v1/init',
    {
      roles: null,
      tags: ['Admin: session'],
      summary: 'Initialise the instance: first account (Admin) and first profile',
      body: obj({ email, name, password, profile_name: name }, ['email', 'name', 'password']),
      status: 201,
      response: anyObject('The first user and profile'),
      errors: ['ALREADY_INITIALISED'],
      rateLimit: loginLimit,
    },
    async (req) => {
      const b = B<{ email: string; name: string; password: string; profile_name?: string }>(req);
      return svc.init({ ...b, profile_name: b.profile_name ?? 'default' });
    },
  );
  route(
    'POST',
    '/admin/v1/login',
    {
      roles: null,
      tags: ['Admin: session'],
      summary: 'Login step 1: password; opens a second-factor challenge',
      description: 'Sends a one-time email code unless the user enrolled TOTP (then `method` is `totp`).',
      body: obj({ email, password: { type: 'string', minLength: 1, maxLength: 1024 } }, ['email', 'password']),
      status: 200,
      response: anyObject('challenge_id, method (email|totp), expires_at'),
      errors: ['INVALID_CREDENTIALS'],
      rateLimit: loginLimit,
    },
    async (req) => svc.login(B<{ email: string }>(req).email, B<{ password: string }>(req).password),
  );
  route(
    'POST',
    '/admin/v1/login/verify',
    {
      roles: null,
      tags: ['Admin: session'],
      summary:
        'Login step 2: the second-factor code (a TOTP code is accepted once, RFC 6238 §5.2); returns a session token (shown once)',
      body: obj({ challenge_id: UUID, code }, ['challenge_id', 'code']),
      status: 200,
      response: anyObject('token, expires_at, user'),
      errors: ['INVALID_SECOND_FACTOR'],
      rateLimit: loginLimit,
    },
    async (req) =>
      svc.verifyLogin(B<{ challenge_id: string }>(req).challenge_id, B<{ code: string }>(req).code, req.ip),
  );
  route(
    'POST',
    '/admin/v1/logout',
    {
      roles: ALL,
      tags: ['Admin: session'],
      summary: 'Revoke the current session',
      status: 204,
      response: { description: 'Logged out', type: 'null' },
    },
    async (req) => svc.logout(req.adminUser!.session_id),
  );
  route(
    'GET',
    '/admin/v1/me',
    { roles: ALL, tags: ['Admin: session'], summary: 'The logged-in user', status: 200, response: anyObject('User') },
    async (req) => {
      const { session_id: _s, step_up_until, ...u } = req.adminUser!;
      const fresh = step_up_until !== null && step_up_until.getTime() > svc.clock().getTime();
      return { ...u, step_up_expires_at: fresh ? step_up_until.toISOString() : null };
    },
  );
  route(
    'POST',
    '/admin/v1/session/step-up',
    {
      roles: ALL,
      tags: ['Admin: session'],
      summary: 'Step-up re-authentication: makes this session fresh for sensitive actions for a few minutes',
      description:
        `Send the current TOTP code (\`code\`) when the account has TOTP enabled (a code is accepted once), otherwise the ` +
        `account password (\`password\`). On success this session — not the user's other sessions — may perform the ` +
        `actions marked "Needs a fresh step-up" for ${stepUpMinutes} min (\`step_up_expires_at\`, also shown by GET /me). ` +
        'The other proof kind → 422 naming the field. Wrong password → 401 `INVALID_CREDENTIALS`; wrong or replayed ' +
        'code → 401 `INVALID_SECOND_FACTOR` (the session stays valid); failures count towards the per-account ' +
        'login lockout (429 `RATE_LIMITED`).',
      body: {
        ...obj({ password: { type: 'string', minLength: 1, maxLength: 1024 }, code }),
        minProperties: 1,
        maxProperties: 1,
      },
      status: 200,
      response: anyObject('method (password|totp), step_up_expires_at'),
      errors: ['INVALID_CREDENTIALS', 'INVALID_SECOND_FACTOR'],
    },
    async (req) => {
      const u = req.adminUser!;
      return svc.stepUp(u.session_id, u.user_id, B<{ password?: string; code?: string }>(req));
    },
  );
  route(
    'POST',
    '/admin/v1/me/totp',
    {
      roles: ALL,
      tags: ['Admin: session'],
      summary: 'Start TOTP enrollment (RFC 6238, SHA-1, 6 digits, 30 s)',
      stepUp: true,
      status: 200,
      response: anyObject('secret (base32) and otpauth_uri; confirm with a code'),
    },
    async (req) => svc.totpEnroll(actor(req)),
  );
  route(
    'POST',
    '/admin/v1/me/totp/confirm',
    {
      roles: ALL,
      tags: ['Admin: session'],
      summary: 'Confirm TOTP enrollment with a current code (consumed: it cannot also log in)',
      description:
        "Replaces an enabled authenticator. A factor change: the user's other sessions are revoked, and the user is " +
        'told by e-mail.',
      stepUp: true,
      body: obj({ code }, ['code']),
      status: 200,
      response: anyObject('User'),
      errors: ['INVALID_SECOND_FACTOR', 'CONFLICT'],
    },
    async (req) => svc.totpConfirm(actor(req), B<{ code: string }>(req).code, req.adminUser!.session_id),
  );
  route(
    'POST',
    '/admin/v1/me/totp/disable',
    {
      roles: ALL,
      tags: ['Admin: session'],
      summary: 'Disable TOTP (requires a current code not used before); login falls back to email codes',
      description:
        "The code is this action's step-up: a wrong one counts towards the per-account lockout. The user's other " +
        'sessions are revoked, and the user is told by e-mail.',
      body: obj({ code }, ['code']),
      status: 200,
      response: anyObject('User'),
      errors: ['INVALID_SECOND_FACTOR', 'CONFLICT'],
    },
    async (req) => svc.totpDisable(actor(req), B<{ code: string }>(req).code, req.adminUser!.session_id),
  );

  route(
    'POST',
    '/admin/v1/me/password',
    {
      roles: ALL,
      tags: ['Admin: session'],
      summary: 'Change your own password (re-authenticated by the current password)',
      description:
        'On success every other session of the user is revoked (this one stays), the change is audited ' +
        '(`user.password_changed`) and the user is e-mailed a notice. A wrong `current_password` is 401 ' +
        '`INVALID_CREDENTIALS` and counts toward the per-account lockout (then 429 `RATE_LIMITED` with Retry-After, ' +
        'here and on login). `new_password` follows the password rule and must differ from the current one (422).',
      body: obj({ current_password: { type: 'string', minLength: 1, maxLength: 1024 }, new_password: password }, [
        'current_password',
        'new_password',
      ]),
      status: 204,
      response: { description: 'Changed', type: 'null' },
      errors: ['INVALID_CREDENTIALS', 'CONFLICT'],
    },
    async (req) => {
      const b = B<{ current_password: string; new_password: string }>(req);
      await svc.changePassword(actor(req), req.adminUser!.session_id, b.current_password, b.new_password);
    },
  );

  // ---- users ----
  const userParams = obj({ user_id: UUID }, ['user_id']);
  route(
    'GET',
    '/admin/v1/users',
    {
      roles: ADMIN,
      tags: ['Admin: users'],
      summary: 'List users',
      querystring: pageQuery,
      status: 200,
      response: pageEnvelope('Users'),
    },
    async (req) => svc.listUsers(req.query as PageRequest),
  );
  route(
    'POST',
    '/admin/v1/users',
    {
      roles: ADMIN,
      tags: ['Admin: users'],
      summary: 'Create a user with a role and an initial password',
      stepUp: true,
      body: obj({ email, name, role, password }, ['email', 'name', 'role', 'password']),
      status: 201,
      response: anyObject('User'),
      errors: ['CONFLICT'],
    },
    async (req) => svc.createUser(actor(req), B(req)),
  );
  route(
    'GET',
    '/admin/v1/users/:user_id',
    {
      roles: ADMIN,
      tags: ['Admin: users'],
      summary: 'One user',
      params: userParams,
      status: 200,
      response: anyObject('User'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => svc.getUser(P<{ user_id: string }>(req).user_id),
  );
  route(
    'PATCH',
    '/admin/v1/users/:user_id',
    {
      roles: ADMIN,
      tags: ['Admin: users'],
      summary: 'Change role, name, blocked state or password (blocking or a new password revokes sessions)',
      description: 'A change of `role` or `password`, and blocking a user, are sensitive.',
      stepUp: (req) => {
        const b = req.body as { role?: unknown; password?: unknown; blocked?: unknown };
        return b.role !== undefined || b.password !== undefined || b.blocked === true;
      },
      params: userParams,
      body: { ...obj({ role, name, blocked: { type: 'boolean' }, password }), minProperties: 1 },
      status: 200,
      response: anyObject('User'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
    },
    async (req) => svc.updateUser(actor(req), P<{ user_id: string }>(req).user_id, B(req)),
  );
  route(
    'DELETE',
    '/admin/v1/users/:user_id',
    {
      roles: ADMIN,
      tags: ['Admin: users'],
      summary: 'Delete a user (the last active Admin cannot be removed)',
      params: userParams,
      stepUp: true,
      status: 204,
      response: { description: 'Deleted', type: 'null' },
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
    },
    async (req) => svc.deleteUser(actor(req), P<{ user_id: string }>(req).user_id),
  );

  // ---- profiles, directory, wallets ----
  const profileParams = obj({ profile_id: UUID }, ['profile_id']);
  route(
    'GET',
    '/admin/v1/profiles',
    { roles: ALL, tags: ['Admin: profiles'], summary: 'List profiles', status: 200, response: listOf('Profiles') },
    async () => svc.store.listProfiles(),
  );
  route(
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
    async (req) => svc.createProfile(actor(req), B<{ name: string }>(req).name),
  );
  for (const kind of ['blockchain', 'asset'] as const) {
    const idName = `${kind}_id`;
    route(
      'GET',
      `/admin/v1/profiles/:profile_id/${kind}s`,
      {
        roles: ALL,
        tags: ['Admin: profiles'],
        summary: `${kind === 'blockchain' ? 'Blockchains' : 'Assets'} enabled for a profile`,
        params: profileParams,
        querystring: pageQuery,
        status: 200,
        response: pageEnvelope(`${kind}s`),
      },
      async (req) => {
        const id = P<{ profile_id: string }>(req).profile_id;
        const q = req.query as PageRequest;
        return kind === 'blockchain' ? svc.store.listBlockchains(id, q) : svc.store.listAssets(id, q);
      },
    );
    route(
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
        await svc.setDirectoryEntry(actor(req), p.profile_id!, kind, p[idName]!, B<{ enabled: boolean }>(req).enabled);
      },
    );
  }
  const walletParams = obj({ profile_id: UUID, wallet_id: UUID }, ['profile_id', 'wallet_id']);
  route(
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
      svc.store.listWallets(
        P<{ profile_id: string }>(req).profile_id,
        req.query as PageRequest,
        scopeFilter(req.walletScope),
      ),
  );
  route(
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
    async (req) => svc.createWallet(actor(req), P<{ profile_id: string }>(req).profile_id, B(req)),
  );
  route(
    'GET',
    '/admin/v1/profiles/:profile_id/wallets/:wallet_id',
    {
      roles: ALL,
      tags: ['Admin: wallets'],
      summary: 'One wallet with its addresses',
      params: walletParams,
      status: 200,
      response: { description: 'The wallet', $ref: 'Wallet#' },
      errors: ['WALLET_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; wallet_id: string }>(req);
      return svc.store.getWallet(p.profile_id, p.wallet_id);
    },
  );
  route(
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
      return svc.store.listBalances(p.profile_id, p.wallet_id, {}, req.query as PageRequest);
    },
  );

  // ---- API keys ----
  route(
    'GET',
    '/admin/v1/api-keys',
    {
      roles: ADMIN,
      tags: ['Admin: API keys'],
      summary: 'List API keys (never the secret)',
      querystring: { type: 'object', additionalProperties: false, properties: { profile_id: UUID, ...PAGE_QUERY } },
      status: 200,
      response: pageEnvelope('API keys'),
    },
    async (req) => {
      const q = req.query as PageRequest & { profile_id?: string };
      return svc.listApiKeys(q.profile_id, q);
    },
  );
  route(
    'POST',
    '/admin/v1/api-keys',
    {
      roles: ADMIN,
      tags: ['Admin: API keys'],
      summary: 'Create a named API key for a profile; `api_key` is shown only in this response',
      description:
        '`allowed_cidrs` (optional): IPv4/IPv6 CIDR ranges or single addresses the key may be used from, e.g. ' +
        '`["10.0.0.0/8", "2001:db8::/32"]`; host bits must be zero; stored normalised (`192.0.2.7` → `192.0.2.7/32`, ' +
        'IPv4-mapped IPv6 ranges as IPv4). A request from another client address (the socket peer, or the forwarded ' +
        'client behind a trusted proxy) → 403 `API_KEY_ADDRESS_NOT_ALLOWED`. Omitted: any address.',
      stepUp: true,
      body: obj(
        {
          profile_id: UUID,
          name,
          allowed_cidrs: {
            type: 'array',
            minItems: 1,
            maxItems: MAX_ALLOWED_CIDRS,
            items: { type: 'string', minLength: 1, maxLength: 64 },
          },
        },
        ['profile_id', 'name'],
      ),
      status: 201,
      response: anyObject('The key record (with `allowed_cidrs`, null when unrestricted) and its secret `api_key`'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const b = B<{ profile_id: string; name: string; allowed_cidrs?: string[] }>(req);
      return svc.createApiKey(actor(req), b.profile_id, b.name, b.allowed_cidrs);
    },
  );
  route(
    'DELETE',
    '/admin/v1/api-keys/:api_key_id',
    {
      roles: ADMIN,
      tags: ['Admin: API keys'],
      summary: 'Revoke an API key (effective immediately; idempotent)',
      stepUp: true,
      params: obj({ api_key_id: UUID }, ['api_key_id']),
      status: 204,
      response: { description: 'Revoked', type: 'null' },
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => svc.revokeApiKey(actor(req), P<{ api_key_id: string }>(req).api_key_id),
  );

  // ---- server signers ----
  route(
    'GET',
    '/admin/v1/signers',
    {
      roles: ADMIN,
      tags: ['Admin: signers'],
      summary: 'Registered server signers',
      status: 200,
      response: listOf('Server signers'),
    },
    async () => svc.listServerSigners(),
  );
  route(
    'POST',
    '/admin/v1/signers',
    {
      roles: ADMIN,
      tags: ['Admin: signers'],
      summary: 'Register a server signer: libp2p peer id, dial address (multiaddr) and identity fingerprint',
      body: obj(
        {
          name,
          peer_id: {
            type: 'string',
            pattern: '^[1-9A-HJ-NP-Za-km-z]{40,80}$',
            description: 'libp2p peer id (base58btc)',
          },
          address: {
            type: 'string',
            minLength: 1,
            maxLength: 500,
            pattern: '^/',
            description: 'multiaddr, e.g. /ip4/10.0.0.5/tcp/7400',
          },
          fingerprint: { type: 'string', minLength: 8, maxLength: 200 },
        },
        ['name', 'peer_id', 'address', 'fingerprint'],
      ),
      stepUp: true,
      status: 201,
      response: anyObject('Server signer'),
      errors: ['CONFLICT'],
    },
    async (req) => svc.addServerSigner(actor(req), B(req)),
  );
  route(
    'DELETE',
    '/admin/v1/signers/:signer_id',
    {
      roles: ADMIN,
      tags: ['Admin: signers'],
      summary: 'Remove a server signer',
      params: obj({ signer_id: UUID }, ['signer_id']),
      stepUp: true,
      status: 204,
      response: { description: 'Removed', type: 'null' },
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => svc.removeServerSigner(actor(req), P<{ signer_id: string }>(req).signer_id),
  );

  // ---- devices ----
  const deviceParams = obj({ device_id: UUID }, ['device_id']);
  route(
    'GET',
    '/admin/v1/devices',
    {
      roles: ADMIN,
      tags: ['Admin: devices'],
      summary: 'Mobile signer devices and enrollment requests',
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: { status: { type: 'string', enum: ['PENDING', 'APPROVED', 'REJECTED', 'REMOVED'] } },
      },
      status: 200,
      response: listOf('Devices'),
    },
    async (req) => svc.listDevices((req.query as { status?: string }).status),
  );
  route(
    'GET',
    '/admin/v1/devices/:device_id',
    {
      roles: ADMIN,
      tags: ['Admin: devices'],
      summary: 'One device',
      params: deviceParams,
      status: 200,
      response: anyObject('Device'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => svc.getDevice(P<{ device_id: string }>(req).device_id),
  );
  route(
    'POST',
    '/admin/v1/devices/:device_id/approve',
    {
      roles: ADMIN,
      tags: ['Admin: devices'],
      summary: 'Approve a PENDING device after checking its fingerprint out of band, binding it to its user',
      description:
        'The fingerprint read from the phone must match (spaces and colons ignored), else 422. `user_id` is the ' +
        'dashboard user who holds the phone (existing, not blocked, else 422): only devices bound to an Admin sign ' +
        "that Admin's policy versions. A device enrolled before MPC peer ids were bound cannot be approved (409): " +
        'it must enrol again.',
      params: deviceParams,
      body: obj({ fingerprint: { type: 'string', minLength: 1, maxLength: 200 }, user_id: UUID }, [
        'fingerprint',
        'user_id',
      ]),
      stepUp: true,
      status: 200,
      response: anyObject('device_id, status, user_id'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
    },
    async (req) => {
      const b = B<{ fingerprint: string; user_id: string }>(req);
      return svc.decideDevice(
        actor(req),
        P<{ device_id: string }>(req).device_id,
        'approve',
        b.fingerprint,
        b.user_id.toLowerCase(),
      );
    },
  );
  route(
    'POST',
    '/admin/v1/devices/:device_id/reject',
    {
      roles: ADMIN,
      tags: ['Admin: devices'],
      summary: 'Reject a PENDING device',
      params: deviceParams,
      status: 200,
      response: anyObject('device_id, status'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
    },
    async (req) => svc.decideDevice(actor(req), P<{ device_id: string }>(req).device_id, 'reject'),
  );
  route(
    'DELETE',
    '/admin/v1/devices/:device_id',
    {
      roles: ADMIN,
      tags: ['Admin: devices'],
      summary: 'Remove a device',
      params: deviceParams,
      status: 200,
      response: anyObject('device_id, status'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
    },
    async (req) => svc.decideDevice(actor(req), P<{ device_id: string }>(req).device_id, 'remove'),
  );

  // ---- master keys and ceremonies ----
  route(
    'GET',
    '/admin/v1/master-keys',
    {
      roles: ALL,
      tags: ['Admin: master keys'],
      summary: 'Master key records (public keys and chain codes only)',
      status: 200,
      response: listOf('Master keys'),
    },
    async () => svc.store.listMasterKeys(),
  );
  route(
    'POST',
    '/admin/v1/master-keys',
    {
      roles: ADMIN,
      tags: ['Admin: master keys'],
      summary: 'Start the master key ceremony (k of n) among exactly the selected signers',
      description:
        'All selected signers must be online; they take part automatically. The ceremony times out after 5 minutes. ' +
        'Returns 202 with the ceremony record; poll GET /admin/v1/ceremonies/{ceremony_id} for progress and outcome. ' +
        'Without a signer control channel the coordinator answers 503 SIGNERS_UNAVAILABLE.',
      body: obj(
        {
          threshold: { type: 'integer', minimum: 2, maximum: 64, description: 'k: signers needed to sign' },
          signers: {
            type: 'array',
            minItems: 2,
            maxItems: 64,
            items: obj({ kind: { type: 'string', enum: ['server', 'device'] }, id: UUID }, ['kind', 'id']),
          },
        },
        ['threshold', 'signers'],
      ),
      status: 202,
      response: anyObject('The ceremony'),
      errors: ['CONFLICT', 'SIGNERS_UNAVAILABLE'],
    },
    async (req) => svc.startDkg(actor(req), B(req)),
  );
  route(
    'GET',
    '/admin/v1/ceremonies',
    {
      roles: ALL,
      tags: ['Admin: master keys'],
      summary: 'Ceremonies, newest first',
      status: 200,
      response: listOf('Ceremonies'),
    },
    async () => svc.listCeremonies(),
  );
  route(
    'GET',
    '/admin/v1/ceremonies/:ceremony_id',
    {
      roles: ALL,
      tags: ['Admin: master keys'],
      summary: 'Ceremony progress and outcome',
      description:
        'status RUNNING | SUCCEEDED | FAILED | TIMED_OUT; progress {phase, parties_ready, parties_total}; blamed parties on identifiable abort.',
      params: obj({ ceremony_id: UUID }, ['ceremony_id']),
      status: 200,
      response: anyObject('Ceremony'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => svc.getCeremony(P<{ ceremony_id: string }>(req).ceremony_id),
  );

  // ---- webhooks ----
  const webhookParams = obj({ profile_id: UUID, webhook_id: UUID }, ['profile_id', 'webhook_id']);
  // A profile webhook takes only profile events; instance/security events go to /admin/v1/webhooks.
  const eventTypes = {
    type: 'array',
    minItems: 1,
    maxItems: WEBHOOK_EVENT_TYPES.length,
    items: { type: 'string', enum: PROFILE_EVENT_TYPES },
  };
  const url = {
    type: 'string',
    minLength: 1,
    maxLength: 2000,
    description: 'HTTPS URL (plain http only to loopback in development mode)',
  };
  const description = { type: ['string', 'null'], maxLength: 500 };
  route(
    'GET',
    '/admin/v1/profiles/:profile_id/webhooks',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Webhook registrations of a profile',
      params: profileParams,
      status: 200,
      response: listOf('Webhooks'),
    },
    async (req) => svc.listWebhooks(P<{ profile_id: string }>(req).profile_id),
  );
  route(
    'POST',
    '/admin/v1/profiles/:profile_id/webhooks',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Register a webhook: URL, event types, optional description (several per profile allowed)',
      stepUp: true,
      params: profileParams,
      body: obj({ url, event_types: eventTypes, description }, ['url', 'event_types']),
      status: 201,
      response: anyObject('Webhook'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => svc.createWebhook(actor(req), P<{ profile_id: string }>(req).profile_id, B(req)),
  );
  route(
    'GET',
    '/admin/v1/profiles/:profile_id/webhooks/:webhook_id',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'One webhook registration',
      params: webhookParams,
      status: 200,
      response: anyObject('Webhook'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; webhook_id: string }>(req);
      return svc.getWebhook(p.profile_id, p.webhook_id);
    },
  );
  route(
    'PATCH',
    '/admin/v1/profiles/:profile_id/webhooks/:webhook_id',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Update a webhook registration',
      stepUp: true,
      params: webhookParams,
      body: { ...obj({ url, event_types: eventTypes, description }), minProperties: 1 },
      status: 200,
      response: anyObject('Webhook'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; webhook_id: string }>(req);
      return svc.updateWebhook(actor(req), p.profile_id, p.webhook_id, B(req));
    },
  );
  route(
    'DELETE',
    '/admin/v1/profiles/:profile_id/webhooks/:webhook_id',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Delete a webhook registration',
      stepUp: true,
      params: webhookParams,
      status: 204,
      response: { description: 'Deleted', type: 'null' },
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; webhook_id: string }>(req);
      await svc.deleteWebhook(actor(req), p.profile_id, p.webhook_id);
    },
  );

  // ---- webhook notifications and signing keys ----
  const notificationParams = obj({ profile_id: UUID, webhook_id: UUID, notification_id: UUID }, [
    'profile_id',
    'webhook_id',
    'notification_id',
  ]);
  route(
    'GET',
    '/admin/v1/profiles/:profile_id/webhooks/:webhook_id/notifications',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Delivery notifications of a webhook, newest first, with attempts (optional status filter)',
      params: webhookParams,
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: { ...PAGE_QUERY, status: { type: 'string', enum: ['PENDING', 'DELIVERED', 'FAILED'] } },
      },
      status: 200,
      response: pageEnvelope('Notifications'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const p = P<{ profile_id: string; webhook_id: string }>(req);
      const q = req.query as PageRequest & { status?: 'PENDING' | 'DELIVERED' | 'FAILED' };
      return svc.webhooks.listNotifications(
        p.profile_id,
        p.webhook_id,
        { page: q.page, page_size: q.page_size },
        q.status,
      );
    },
  );
  route(
    'POST',
    '/admin/v1/profiles/:profile_id/webhooks/:webhook_id/notifications/:notification_id/redeliver',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Redeliver a FAILED notification',
      description:
        'The notification becomes PENDING with a fresh series of up to 5 attempts on the seed schedule (the first at ' +
        'once), for the same event (same event_id and body). 409 CONFLICT unless it is FAILED.',
      params: notificationParams,
      status: 200,
      response: anyObject('The notification, now PENDING'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
    },
    async (req) => {
      const p = P<{ profile_id: string; webhook_id: string; notification_id: string }>(req);
      return svc.redeliverNotification(actor(req), p.profile_id, p.webhook_id, p.notification_id);
    },
  );
  // ---- instance-level webhooks (#26 item 8): instance and security events only ----
  const instanceEventTypes = { ...eventTypes, items: { type: 'string', enum: INSTANCE_EVENT_TYPES } };
  const instanceHook = obj({ webhook_id: UUID }, ['webhook_id']);
  const instanceText =
    'Instance-level webhooks (no profile; `profile_id` null) receive the instance and security events — servers ' +
    'and keys, devices, users, security (ROLE_SCOPE_LOGIN, …) — and only those; profile webhooks never do. ' +
    'The delivery body names the nil UUID as `profile_id` unless the event concerns one profile.';
  route(
    'GET',
    '/admin/v1/webhooks',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Instance-level webhook registrations',
      description: instanceText,
      status: 200,
      response: listOf('Webhooks'),
    },
    async () => svc.listWebhooks(null),
  );
  route(
    'POST',
    '/admin/v1/webhooks',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Register an instance-level webhook (instance and security event types only)',
      description: instanceText,
      body: obj({ url, event_types: instanceEventTypes, description }, ['url', 'event_types']),
      stepUp: true,
      status: 201,
      response: anyObject('Webhook'),
    },
    async (req) => svc.createWebhook(actor(req), null, B(req)),
  );
  route(
    'GET',
    '/admin/v1/webhooks/:webhook_id',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'One instance-level webhook',
      params: instanceHook,
      status: 200,
      response: anyObject('Webhook'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => svc.getWebhook(null, P<{ webhook_id: string }>(req).webhook_id),
  );
  route(
    'PATCH',
    '/admin/v1/webhooks/:webhook_id',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Update an instance-level webhook',
      params: instanceHook,
      body: { ...obj({ url, event_types: instanceEventTypes, description }), minProperties: 1 },
      stepUp: true,
      status: 200,
      response: anyObject('Webhook'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => svc.updateWebhook(actor(req), null, P<{ webhook_id: string }>(req).webhook_id, B(req)),
  );
  route(
    'DELETE',
    '/admin/v1/webhooks/:webhook_id',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Delete an instance-level webhook',
      params: instanceHook,
      stepUp: true,
      status: 204,
      response: { description: 'Deleted', type: 'null' },
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => svc.deleteWebhook(actor(req), null, P<{ webhook_id: string }>(req).webhook_id),
  );
  route(
    'GET',
    '/admin/v1/webhooks/:webhook_id/notifications',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Delivery notifications of an instance-level webhook, newest first, with attempts',
      params: instanceHook,
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: { ...PAGE_QUERY, status: { type: 'string', enum: ['PENDING', 'DELIVERED', 'FAILED'] } },
      },
      status: 200,
      response: pageEnvelope('Notifications'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const q = req.query as PageRequest & { status?: 'PENDING' | 'DELIVERED' | 'FAILED' };
      return svc.webhooks.listNotifications(
        null,
        P<{ webhook_id: string }>(req).webhook_id,
        { page: q.page, page_size: q.page_size },
        q.status,
      );
    },
  );
  route(
    'POST',
    '/admin/v1/webhooks/:webhook_id/notifications/:notification_id/redeliver',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Redeliver a FAILED notification of an instance-level webhook',
      params: obj({ webhook_id: UUID, notification_id: UUID }, ['webhook_id', 'notification_id']),
      status: 200,
      response: anyObject('The notification, now PENDING'),
      errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
    },
    async (req) => {
      const p = P<{ webhook_id: string; notification_id: string }>(req);
      return svc.redeliverNotification(actor(req), null, p.webhook_id, p.notification_id);
    },
  );
  route(
    'GET',
    '/admin/v1/webhook-signing-keys',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Webhook signing keys (public metadata only): PUBLISHED, ACTIVE, RETIRED, EXPIRED',
      status: 200,
      response: listOf('Keys'),
    },
    async () => svc.signingKeys.list(),
  );
  route(
    'POST',
    '/admin/v1/webhook-signing-keys/rotate',
    {
      roles: ADMIN,
      tags: ['Admin: webhooks'],
      summary: 'Rotate the webhook signing key',
      description:
        'Creates a P-256 key published in the JWKS at once that signs from now + lead_seconds (default: the configured ' +
        'publish lead, 1 h); the current key stops signing then and stays published for the overlap (24 h). 409 when ' +
        'a new key is already waiting.',
      body: obj({ lead_seconds: { type: 'integer', minimum: 0, maximum: 30 * 86400 } }),
      stepUp: true,
      status: 201,
      response: anyObject('The new key (kid, created_at, activates_at, state)'),
      errors: ['CONFLICT'],
    },
    async (req) => {
      const b = (req.body ?? {}) as { lead_seconds?: number };
      return svc.rotateSigningKey(actor(req), b.lead_seconds === undefined ? undefined : b.lead_seconds * 1000);
    },
  );

  // ---- wallets (dashboard edit) ----
  route(
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
      return svc.updateWallet(actor(req), p.profile_id, p.wallet_id, B(req));
    },
  );

  // ---- wallet groups and address groups ----
  const groupName = { type: 'string', minLength: 1, maxLength: 200 };
  const groupDescription = { type: ['string', 'null'], maxLength: 500 };
  const walletIds = { type: 'array', maxItems: 10_000, items: UUID };
  const entries = {
    type: 'array',
    maxItems: 10_000,
    items: obj(
      {
        blockchain_id: UUID,
        address: { type: 'string', minLength: 1, maxLength: 200 },
        label: { type: ['string', 'null'], maxLength: 200 },
      },
      ['blockchain_id', 'address'],
    ),
  };
  for (const kind of ['wallet', 'address'] as const) {
    const base = `/admin/v1/profiles/:profile_id/${kind}-groups`;
    const idName = `${kind}_group_id`;
    const itemParams = obj({ profile_id: UUID, [idName]: UUID }, ['profile_id', idName]);
    const tag = kind === 'wallet' ? 'Admin: wallet groups' : 'Admin: address groups';
    const what =
      kind === 'wallet'
        ? 'Wallet group: a named set of wallets; assigned users are scoped to them'
        : 'Address group: a named address-book set that whitelist policies reference';
    const members = kind === 'wallet' ? { wallet_ids: walletIds } : { entries };
    const up = kind.toUpperCase();
    const id = (req: FastifyRequest) => (req.params as Record<string, string>)[idName]!;
    const pid = (req: FastifyRequest) => P<{ profile_id: string }>(req).profile_id;
    route(
      'GET',
      base,
      {
        roles: ALL,
        tags: [tag],
        summary: `List ${kind} groups`,
        description: what,
        params: profileParams,
        status: 200,
        response: listOf('Groups'),
      },
      async (req) => {
        if (kind === 'address') return svc.groups.listAddressGroups(pid(req));
        const scope = req.walletScope;
        const groups = await svc.groups.listWalletGroups(pid(req));
        return scope === undefined || scope.all
          ? groups
          : groups.filter((g) => scope.groupIds.includes(g.wallet_group_id));
      },
    );
    route(
      'POST',
      base,
      {
        roles: ADMIN,
        tags: [tag],
        summary: `Create a ${kind} group (emits ${up}_GROUP_CREATED)`,
        description: what,
        params: profileParams,
        body: obj({ name: groupName, description: groupDescription, ...members }, ['name']),
        status: 201,
        response: anyObject('Group'),
        errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
      },
      async (req) =>
        kind === 'wallet'
          ? svc.groups.createWalletGroup(actor(req), pid(req), B(req))
          : svc.groups.createAddressGroup(actor(req), pid(req), B(req)),
    );
    route(
      'GET',
      `${base}/:${idName}`,
      {
        roles: ALL,
        tags: [tag],
        summary: `One ${kind} group`,
        params: itemParams,
        status: 200,
        response: anyObject('Group'),
        errors: ['RESOURCE_NOT_FOUND'],
      },
      async (req) =>
        kind === 'wallet'
          ? svc.groups.getWalletGroup(pid(req), id(req))
          : svc.groups.getAddressGroup(pid(req), id(req)),
    );
    route(
      'PATCH',
      `${base}/:${idName}`,
      {
        roles: ADMIN,
        tags: [tag],
        summary: `Update a ${kind} group (emits ${up}_GROUP_UPDATED)`,
        description: kind === 'wallet' ? '`wallet_ids` replaces the set.' : '`entries` replaces the set.',
        params: itemParams,
        body: { ...obj({ name: groupName, description: groupDescription, ...members }), minProperties: 1 },
        status: 200,
        response: anyObject('Group'),
        errors: ['RESOURCE_NOT_FOUND', 'CONFLICT'],
      },
      async (req) =>
        kind === 'wallet'
          ? svc.groups.updateWalletGroup(actor(req), pid(req), id(req), B(req))
          : svc.groups.updateAddressGroup(actor(req), pid(req), id(req), B(req)),
    );
    route(
      'DELETE',
      `${base}/:${idName}`,
      {
        roles: ADMIN,
        tags: [tag],
        summary: `Delete a ${kind} group (emits ${up}_GROUP_DELETED)`,
        // deleting a wallet group lifts its users' scoping: as sensitive as a role change
        stepUp: true,
        params: itemParams,
        status: 204,
        response: { description: 'Deleted', type: 'null' },
        errors: ['RESOURCE_NOT_FOUND'],
      },
      async (req) => {
        if (kind === 'wallet') await svc.groups.deleteWalletGroup(actor(req), pid(req), id(req));
        else await svc.groups.deleteAddressGroup(actor(req), pid(req), id(req));
      },
    );
  }
  for (const [method, assigned] of [
    ['PUT', true],
    ['DELETE', false],
  ] as const) {
    route(
      method,
      '/admin/v1/profiles/:profile_id/wallet-groups/:wallet_group_id/users/:user_id',
      {
        roles: ADMIN,
        tags: ['Admin: wallet groups'],
        summary: `${assigned ? 'Assign a user to' : 'Remove a user from'} a wallet group (emits WALLET_GROUP_USER_ASSIGNED)`,
        stepUp: true,
        params: obj({ profile_id: UUID, wallet_group_id: UUID, user_id: UUID }, [
          'profile_id',
          'wallet_group_id',
          'user_id',
        ]),
        status: 200,
        response: anyObject('Group'),
        errors: ['RESOURCE_NOT_FOUND'],
      },
      async (req) => {
        const p = P<{ profile_id: string; wallet_group_id: string; user_id: string }>(req);
        return svc.groups.assignUser(actor(req), p.profile_id, p.wallet_group_id, p.user_id, assigned);
      },
    );
  }

  // ---- audit ----
  route(
    'GET',
    '/admin/v1/audit',
    {
      roles: ADMIN,
      tags: ['Admin: audit'],
      summary: 'Append-only audit log of admin actions, newest first',
      querystring: pageQuery,
      status: 200,
      response: pageEnvelope('Audit entries'),
    },
    async (req) => svc.listAudit(req.query as PageRequest),
  );

  // ---- mobile enrollment (device side) ----
  route(
    'POST',
    '/devices/v1/enrollments',
    {
      roles: null,
      tags: ['Devices'],
      summary: 'Mobile app: submit an enrollment request with the device identity public key and MPC peer id',
      description:
        'public_key: SEC1 P-256 point (hex, 33 or 65 bytes). Requires iOS 15.5+ or Android 10+ (API 29) with hardware-backed ' +
        'key storage. mpc_peer_id: the Ed25519 libp2p peer id the device uses in ceremonies, with mpc_peer_proof, the ' +
        "peer key's Ed25519 signature (64 bytes hex) over deviceEnrollmentDigest(public_key, mpc_peer_id) of " +
        '@custodian/wire; it is pinned (hellos naming another id are refused) and may not be a server signer’s (409) or ' +
        'another live device’s (409). name: printable text, no control, format or bidi override characters, 1–' +
        `${DEVICE_NAME_MAX_CHARS} characters. Returns the fingerprint (SHA-256 of the compressed key, 16 groups of 4 hex ` +
        'digits) that the administrator compares out of band before approving.',
      body: obj(
        {
          name: { type: 'string', minLength: 1, maxLength: DEVICE_NAME_MAX_CHARS },
          platform: { type: 'string', enum: ['ios', 'android'] },
          os_version: { type: 'string', pattern: '^[0-9]{1,3}(\\.[0-9]{1,3}){0,2}$' },
          hardware_backed_keystore: { type: 'boolean' },
          public_key: { type: 'string', pattern: '^[0-9a-fA-F]{66}$|^[0-9a-fA-F]{130}$' },
          mpc_peer_id: {
            type: 'string',
            pattern: '^[1-9A-HJ-NP-Za-km-z]{40,80}$',
            description: 'Ed25519 libp2p peer id (base58btc)',
          },
          mpc_peer_proof: {
            type: 'string',
            pattern: '^[0-9a-fA-F]{128}$',
            description:
              'Ed25519 signature by the mpc_peer_id key over deviceEnrollmentDigest(public_key, mpc_peer_id)',
          },
        },
        ['name', 'platform', 'os_version', 'hardware_backed_keystore', 'public_key', 'mpc_peer_id', 'mpc_peer_proof'],
      ),
      status: 201,
      response: anyObject('device_id, status PENDING, fingerprint, mpc_peer_id'),
      errors: ['CONFLICT'],
      rateLimit: loginLimit,
    },
    async (req) => svc.requestEnrollment(B(req)),
  );
  route(
    'GET',
    '/devices/v1/enrollments/:device_id',
    {
      roles: null,
      tags: ['Devices'],
      summary: 'Mobile app: poll the status of its enrollment request',
      params: deviceParams,
      status: 200,
      response: anyObject('device_id, status, fingerprint'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => {
      const d = await svc.getDevice(P<{ device_id: string }>(req).device_id);
      return { device_id: d.device_id, status: d.status, fingerprint: d.fingerprint };
    },
  );
}
