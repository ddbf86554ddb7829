/**
 * Admin API of the users room: instance initialisation, login (two steps), the session (logout,
 * `me`, step-up), the user's own TOTP and password (`Admin: session`), and users and roles
 * (`Admin: users`).
 */

import { clearSessionCookies, setSessionCookies } from '../admin/cookies.js';
import { type AdminRouter, actor, B, P } from '../admin/route.js';
import {
  ADMIN,
  ALL,
  anyObject,
  code,
  email,
  listOf,
  name,
  obj,
  pageEnvelope,
  pageQuery,
  password,
  role,
} from '../admin/schemas.js';
import { UUID } from '../api/schemas.js';
import { ApiError } from '../errors.js';
import { MailSendError } from '../mailer.js';
import type { PageRequest } from '../store.js';
import type { UserService } from './service.js';

/** Register the session routes (`Admin: session`). */
export function sessionRoutes(r: AdminRouter, users: UserService): void {
  r.route(
    'POST',
    '/admin/v1/init',
    {
      roles: null,
      tags: ['Admin: session'],
      summary: 'Initialise the instance: first account (Admin) and first profile',
      description:
        'Needs `bootstrap_token`: the one-time token the coordinator wrote to `<data-dir>/bootstrap-token` (mode 0600) ' +
        'at its first start while the instance had no Admin; consumed (and the file deleted) by a successful init. ' +
        'Missing or wrong → 401 `BOOTSTRAP_TOKEN_INVALID` (rate limited like login).',
      body: obj(
        {
          email,
          name,
          password,
          profile_name: name,
          bootstrap_token: { type: 'string', minLength: 1, maxLength: 256 },
        },
        ['email', 'name', 'password'],
      ),
      status: 201,
      response: anyObject('The first user and profile'),
      errors: ['ALREADY_INITIALISED', 'BOOTSTRAP_TOKEN_INVALID'],
      rateLimit: r.loginLimit,
    },
    async (req) => {
      const b = B<{ email: string; name: string; password: string; profile_name?: string; bootstrap_token?: string }>(
        req,
      );
      return users.init({ ...b, profile_name: b.profile_name ?? 'default' });
    },
  );
  r.route(
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
      errors: ['INVALID_CREDENTIALS', 'MAIL_UNAVAILABLE'],
      rateLimit: r.loginLimit,
    },
    async (req) => {
      try {
        return await users.sessions.login(B<{ email: string }>(req).email, B<{ password: string }>(req).password);
      } catch (e) {
        if (!(e instanceof MailSendError)) throw e;
        // the summary names the transport failure only (never the code, the address or credentials)
        req.log.error(
          { code: 'MAIL_UNAVAILABLE', transport: e.summary },
          'login code not sent: the mail transport failed (check the `mail` settings)',
        );
        throw new ApiError(
          'MAIL_UNAVAILABLE',
          'the login code could not be sent; try again later, or ask the operator to check the mail settings',
        );
      }
    },
  );
  r.route(
    'POST',
    '/admin/v1/login/verify',
    {
      roles: null,
      tags: ['Admin: session'],
      summary:
        'Login step 2: the second-factor code (a TOTP code is accepted once, RFC 6238 §5.2); returns a session token (shown once)',
      description:
        '`transport` (default `bearer`): `bearer` returns the session token in the body (CLI, SDK: send it as `Authorization: Bearer`); `cookie` (the dashboard) returns no token but sets `__Host-custodian_session` (HttpOnly, Secure, SameSite=Strict, Path=/) and `__Host-custodian_csrf` (readable, Secure, SameSite=Strict, Path=/) — on plain http to a loopback host (development) `custodian_session` (Path=/admin) and `custodian_csrf` without `Secure`; then every POST/PUT/PATCH/DELETE must send the value of the CSRF cookie (a random token per session) in `X-CSRF-Token` and no foreign `Origin`, else 403 `CSRF_TOKEN_INVALID`. A session answers only on the transport it was opened with; two session cookies in one request → 401.',
      body: obj(
        { challenge_id: UUID, code, transport: { type: 'string', enum: ['bearer', 'cookie'], default: 'bearer' } },
        ['challenge_id', 'code'],
      ),
      status: 200,
      response: anyObject('token (bearer transport only), expires_at, user'),
      errors: ['INVALID_SECOND_FACTOR'],
      rateLimit: r.loginLimit,
    },
    async (req, reply) => {
      const b = B<{ challenge_id: string; code: string; transport?: 'bearer' | 'cookie' }>(req);
      const transport = b.transport === 'cookie' ? 'cookie' : 'bearer';
      const out = await users.sessions.verifyLogin(b.challenge_id, b.code, req.ip, transport);
      if (transport === 'bearer') return out;
      // the page never sees the session token: it rides in the HttpOnly cookie only; the CSRF
      // token rides in the readable cookie (admin/cookies.ts: names by the request's mode)
      setSessionCookies(req, reply, out.token, out.csrf_token!, users.sessions.sessionTtlSeconds);
      return { expires_at: out.expires_at, user: out.user };
    },
  );
  r.route(
    'POST',
    '/admin/v1/logout',
    {
      roles: ALL,
      tags: ['Admin: session'],
      summary: 'Revoke the current session',
      description: 'Also clears the session cookies (`Max-Age=0`).',
      status: 204,
      response: { description: 'Logged out', type: 'null' },
    },
    async (req, reply) => {
      await users.sessions.logout(req.adminUser!.session_id);
      clearSessionCookies(req, reply);
    },
  );
  r.route(
    'GET',
    '/admin/v1/me',
    { roles: ALL, tags: ['Admin: session'], summary: 'The logged-in user', status: 200, response: anyObject('User') },
    async (req) => {
      const { session_id: _s, step_up_until, ...u } = req.adminUser!;
      return { ...u, step_up_expires_at: r.stepUpFresh(req) ? step_up_until!.toISOString() : null };
    },
  );
  r.route(
    'POST',
    '/admin/v1/session/step-up',
    {
      roles: ALL,
      tags: ['Admin: session'],
      summary: 'Step-up re-authentication: makes this session fresh for sensitive actions for a few minutes',
      description:
        `Send the current TOTP code (\`code\`) when the account has TOTP enabled (a code is accepted once), otherwise the ` +
        `account password (\`password\`). On success this session — not the user's other sessions — may perform the ` +
        `actions marked "Needs a fresh step-up" for ${r.stepUpMinutes} min (\`step_up_expires_at\`, also shown by GET /me). ` +
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
      return users.sessions.stepUp(u.session_id, u.user_id, B<{ password?: string; code?: string }>(req));
    },
  );
  r.route(
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
    async (req) => users.totp.enroll(actor(req)),
  );
  r.route(
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
    async (req) => users.totp.confirm(actor(req), B<{ code: string }>(req).code, req.adminUser!.session_id),
  );
  r.route(
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
    async (req) => users.totp.disable(actor(req), B<{ code: string }>(req).code, req.adminUser!.session_id),
  );

  r.route(
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
      await users.changePassword(actor(req), req.adminUser!.session_id, b.current_password, b.new_password);
    },
  );
}

/** Register the user routes (`Admin: users`). */
export function userRoutes(r: AdminRouter, users: UserService): void {
  const userParams = obj({ user_id: UUID }, ['user_id']);
  r.route(
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
    async (req) => users.listUsers(req.query as PageRequest),
  );
  r.route(
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
    async (req) => users.createUser(actor(req), B(req)),
  );
  r.route(
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
    async (req) => users.getUser(P<{ user_id: string }>(req).user_id),
  );
  r.route(
    'GET',
    '/admin/v1/users/:user_id/login-networks',
    {
      roles: ADMIN,
      tags: ['Admin: users'],
      summary: 'Networks (IPv4 /24, IPv6 /48) the user has logged in from, oldest first',
      description:
        'A successful login from a network not in this list, by a user who has logged in before, emits ' +
        'GEO_ANOMALY_DETECTED to the instance-level webhooks.',
      params: userParams,
      status: 200,
      response: listOf('Login networks: network, first_seen_at, last_seen_at'),
      errors: ['RESOURCE_NOT_FOUND'],
    },
    async (req) => users.loginNetworks(P<{ user_id: string }>(req).user_id),
  );
  r.route(
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
    async (req) => users.updateUser(actor(req), P<{ user_id: string }>(req).user_id, B(req)),
  );
  r.route(
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
    async (req) => users.deleteUser(actor(req), P<{ user_id: string }>(req).user_id),
  );
}
