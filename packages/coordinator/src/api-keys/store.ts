/**
 * The API keys room's data (`api_keys`): key creation (the secret shown once, only its SHA-256
 * stored) and the authentication of a presented key.
 */
import { randomUUID } from 'node:crypto';
import { addressAllowed } from '../api/cidrs.js';
import type { Db, Queryable } from '../db/db.js';
import { type Clock, iso, randomToken, sha256Hex } from '../util.js';

/** Dependencies of {@link ApiKeyStore}. */
export interface ApiKeyStoreComponents {
  readonly db: Db;
  readonly clock: Clock;
}

/** API key records. */
export class ApiKeyStore {
  private readonly keyTouched = new Map<string, number>();

  constructor(private readonly c: ApiKeyStoreComponents) {}

  /**
   * Create an API key for a profile. The secret `cst_<43 base64url chars>` (256 random bits) is
   * returned once; only its SHA-256 is stored (a fast hash suffices for a high-entropy token).
   * `allowedCidrs`: canonical ranges from `normaliseAllowedCidrs` (api/cidrs.ts) the key may be used
   * from, or null for any address.
   */
  async create(
    profileId: string,
    name: string,
    createdBy: string | null,
    q: Queryable = this.c.db,
    allowedCidrs: readonly string[] | null = null,
  ): Promise<{
    api_key_id: string;
    profile_id: string;
    name: string;
    key_prefix: string;
    allowed_cidrs: string[] | null;
    created_at: string;
    api_key: string;
  }> {
    const secret = `cst_${randomToken(32)}`;
    const id = randomUUID();
    const now = this.c.clock();
    const prefix = secret.slice(0, 10);
    const cidrs = allowedCidrs === null ? null : [...allowedCidrs];
    await q.query(
      `INSERT INTO api_keys (api_key_id, profile_id, name, key_hash, key_prefix, created_by, created_at, allowed_cidrs)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8::jsonb)`,
      [id, profileId, name, sha256Hex(secret), prefix, createdBy, now, cidrs === null ? null : JSON.stringify(cidrs)],
    );
    return {
      api_key_id: id,
      profile_id: profileId,
      name,
      key_prefix: prefix,
      allowed_cidrs: cidrs,
      created_at: iso(now)!,
      api_key: secret,
    };
  }

  /**
   * Resolve a presented API key to its profile; `null` when unknown or revoked. With `clientIp`
   * (`req.ip`), `address_allowed` tells whether the key's `allowed_cidrs` (null: any address)
   * admit it; without, it is true only for a key without ranges. Records `last_used_at` at most
   * once a minute per key (best effort, not awaited), and only for an admitted address.
   */
  async authenticate(
    secret: string,
    clientIp?: string,
  ): Promise<{
    api_key_id: string;
    profile_id: string;
    allowed_cidrs: string[] | null;
    address_allowed: boolean;
  } | null> {
    const rows = await this.c.db.query<{ api_key_id: string; profile_id: string; allowed_cidrs: string[] | null }>(
      'SELECT api_key_id, profile_id, allowed_cidrs FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
      [sha256Hex(secret)],
    );
    const row = rows[0];
    if (row === undefined) return null;
    const allowed =
      row.allowed_cidrs === null || (clientIp !== undefined && addressAllowed(row.allowed_cidrs, clientIp));
    const key = { ...row, address_allowed: allowed };
    if (!allowed) return key;
    const now = this.c.clock();
    if ((this.keyTouched.get(key.api_key_id) ?? 0) + 60_000 <= now.getTime()) {
      this.keyTouched.set(key.api_key_id, now.getTime());
      this.c.db
        .query('UPDATE api_keys SET last_used_at = $2 WHERE api_key_id = $1', [key.api_key_id, now])
        .catch(() => this.keyTouched.delete(key.api_key_id));
    }
    return key;
  }
}
