/**
 * The API keys room: the admin functions over API keys (list, create with optional client address
 * ranges, revoke) and the audit of requests refused for their client address. The key records
 * are {@link ApiKeyStore} (`store.ts`), exposed as {@link ApiKeyService.store} for the REST API's
 * authentication hook.
 */
import { normaliseAllowedCidrs } from '../api/cidrs.js';
import type { AuditLog } from '../audit/service.js';
import type { Db, Queryable } from '../db/db.js';
import { notFound, type PageRequest, pageOffset } from '../store.js';
import { type Clock, iso } from '../util.js';
import { ApiKeyStore } from './store.js';

/** Dependencies of {@link ApiKeyService}. */
export interface ApiKeyComponents {
  readonly db: Db;
  readonly clock: Clock;
  readonly audit: AuditLog;
  /** The wallets room's profiles: a key is created for an existing profile. */
  readonly profiles: { requireProfile(q: Queryable, profileId: string): Promise<void> };
}

/** API keys: admin functions and the key records. */
export class ApiKeyService {
  /** The key records (creation without audit, authentication). */
  readonly store: ApiKeyStore;
  private readonly refusedAudited = new Map<string, number>();

  constructor(private readonly c: ApiKeyComponents) {
    this.store = new ApiKeyStore(c);
  }

  /** API keys (never the secret), of one profile or all, oldest first. */
  async list(profileId: string | undefined, p: PageRequest) {
    const where = profileId === undefined ? '' : 'WHERE profile_id = $3';
    const params: unknown[] = [p.page_size, pageOffset(p)];
    if (profileId !== undefined) params.push(profileId);
    const rows = await this.c.db.query<Record<string, unknown>>(
      `SELECT api_key_id, profile_id, name, key_prefix, allowed_cidrs, created_by, created_at, revoked_at, last_used_at
       FROM api_keys ${where} ORDER BY created_at, api_key_id LIMIT $1 OFFSET $2`,
      params,
    );
    const total =
      (
        await this.c.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM api_keys ${profileId === undefined ? '' : 'WHERE profile_id = $1'}`,
          profileId === undefined ? [] : [profileId],
        )
      )[0]?.n ?? 0;
    const data = rows.map((r) => ({
      ...r,
      created_at: iso(r.created_at as Date),
      revoked_at: iso(r.revoked_at as Date | null),
      last_used_at: iso(r.last_used_at as Date | null),
    }));
    return { data, page: p.page, page_size: p.page_size, total };
  }

  /**
   * Create an API key; the secret is in the result only (shown once). `allowedCidrs`: IPv4/IPv6
   * ranges or addresses the key may be used from (validated and normalised by
   * `normaliseAllowedCidrs`, e.g. `['10.0.0.0/8']`); omitted or null: any address.
   * @throws ApiError RESOURCE_NOT_FOUND (profile); VALIDATION_FAILED naming `body.allowed_cidrs[i]`
   */
  async create(actor: string, profileId: string, name: string, allowedCidrs?: readonly string[] | null) {
    const cidrs =
      allowedCidrs === undefined || allowedCidrs === null
        ? null
        : normaliseAllowedCidrs(allowedCidrs, 'body.allowed_cidrs');
    return this.c.db.tx(async (q) => {
      await this.c.profiles.requireProfile(q, profileId);
      const k = await this.store.create(profileId, name, actor, q, cidrs);
      await this.c.audit.record(q, actor, 'api_key.created', 'api_key', k.api_key_id, {
        profile_id: profileId,
        name,
        allowed_cidrs: cidrs,
      });
      return k;
    });
  }

  /** Revoke an API key (idempotent; audited once). @throws ApiError RESOURCE_NOT_FOUND */
  async revoke(actor: string, id: string): Promise<void> {
    await this.c.db.tx(async (q) => {
      const r = await q.query<{ revoked_at: Date | null }>(
        'SELECT revoked_at FROM api_keys WHERE api_key_id = $1 FOR UPDATE',
        [id],
      );
      if (r[0] === undefined) throw notFound('API key');
      if (r[0].revoked_at !== null) return;
      await q.query('UPDATE api_keys SET revoked_at = $2 WHERE api_key_id = $1', [id, this.c.clock()]);
      await this.c.audit.record(q, actor, 'api_key.revoked', 'api_key', id);
    });
  }

  /**
   * Audit a request refused because its API key's `allowed_cidrs` do not admit the client address
   * (`api_key.address_refused`, details `{ address }`), at most once a minute per key and address
   * so a flood of refused requests does not flood the log. Never throws.
   */
  async auditAddressRefused(apiKeyId: string, address: string): Promise<void> {
    const now = this.c.clock().getTime();
    const k = `${apiKeyId} ${address}`;
    if ((this.refusedAudited.get(k) ?? -Infinity) + 60_000 > now) return;
    this.refusedAudited.set(k, now);
    if (this.refusedAudited.size > 10_000) {
      for (const [key, at] of this.refusedAudited) if (at + 60_000 <= now) this.refusedAudited.delete(key);
    }
    await this.c.audit
      .record(this.c.db, null, 'api_key.address_refused', 'api_key', apiKeyId, { address })
      .catch(() => {});
  }
}
