/**
 * Rate-limit buckets of the coordinator's requests (server.ts `resolveCredential`): the verified
 * credential's bucket, else the client address's.
 */
import type { FastifyRequest } from 'fastify';
import { cookieSessionToken } from './admin/cookies.js';
import type { ApiKeyStore } from './api-keys/store.js';
import type { SessionService } from './users/sessions.js';

/**
 * Rate-limit bucket of a request's credential, only once it verifies: `key:<api_key_id>` for a
 * valid `X-API-Key` on the REST API used from an address its `allowed_cidrs` admit, `user:<user_id>` for a live admin session on the admin API.
 * A missing or invalid credential gives `undefined` (the client address's bucket), so inventing
 * header values buys an attacker nothing.
 */
export function credentialBucket(apiKeys: ApiKeyStore, sessions: SessionService) {
  return async (req: FastifyRequest): Promise<string | undefined> => {
    const path = req.url;
    if (path.startsWith('/api/v1/')) {
      const raw = req.headers['x-api-key'];
      const secret = Array.isArray(raw) ? raw[0] : raw;
      if (secret === undefined || secret === '' || secret.length > 256) return undefined;
      // A key used from outside its allowed ranges counts against the address, not the key: a leaked
      // key must not let its holder spend the owner's bucket.
      const key = await apiKeys.authenticate(secret, req.ip);
      return key === null || !key.address_allowed ? undefined : `key:${key.api_key_id}`;
    }
    if (path.startsWith('/admin/v1/')) {
      const m = /^Bearer ([A-Za-z0-9_-]{1,200})$/.exec(req.headers.authorization ?? '');
      const cookie = m === null ? cookieSessionToken(req) : undefined;
      const token = m?.[1] ?? cookie;
      if (token === undefined) return undefined;
      const user = await sessions.sessionUser(token, cookie === undefined ? 'bearer' : 'cookie');
      return user === null ? undefined : `user:${user.user_id}`;
    }
    return undefined;
  };
}
