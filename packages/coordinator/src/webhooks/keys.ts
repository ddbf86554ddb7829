/**
 * Webhook signing keys: P-256 (ES256) key pairs in `webhook_signing_keys`, the private scalar
 * encrypted at rest with AES-256-GCM (node:crypto/OpenSSL; 12-byte random nonce, 16-byte tag, the
 * `kid` as additional authenticated data), the public half published as a JWKS (RFC 7517 §5).
 *
 * Key encryption key (KEK, 32 bytes), first found of:
 * 1. `CoordinatorOptions.webhooks.keyEncryptionKey` (bytes);
 * 2. environment variable `CUSTODIAN_WEBHOOK_KEK` (64 hex digits or base64/base64url of 32 bytes);
 * 3. the key file `<dataDir>/webhook-kek.key` (32 raw bytes, created mode 0600 on first start);
 * 4. otherwise a random in-memory KEK (embedded/test use; a warning is logged): keys it encrypted
 *    are unusable after a restart, so a new signing key is then created at once.
 * The KEK and private keys are never logged nor returned by any API.
 *
 * Several replicas (issue #25) must share ONE KEK. A process whose KEK cannot open the database's
 * active signing key (another replica's KEK, or a lost `webhook-kek.key`) refuses to start with
 * CoordinatorError WEBHOOK_KEK_MISMATCH and retires nothing (before, replicas with different KEKs
 * each retired the other's key and made their own, over and over); `unreadable: 'replace'`
 * (option `webhooks.replaceUnreadableKeys`, or an in-memory KEK) retires it and makes a new one.
 *
 * Rotation (seed §6 rule 5, "rotated automatically; old and new keys overlap"): a new key is
 * PUBLISHED in the JWKS at creation and only SIGNS from `activates_at` = creation + `publishLeadMs`
 * (default 1 h, ≥ the JWKS `max-age`, so cached JWKS already hold it); the old key stops signing at
 * that instant and stays published for `overlapMs` more (default 24 h). Rotations happen on a
 * schedule (`rotationIntervalMs`, default 90 days, checked by the worker) and on demand (admin
 * API / CLI `custodian admin webhooks rotate-key`).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { p256 } from '@noble/curves/nist.js';
import type { Db, Queryable } from '../db/db.js';
import { ApiError, CoordinatorError } from '../errors.js';
import { type Clock, iso } from '../util.js';
import { p256PublicJwk, p256Thumbprint } from './signature.js';

/** Settings of {@link WebhookSigningKeys}. */
export interface SigningKeyOptions {
  /** A new key is published this long before it signs (ms). Default 1 h. */
  publishLeadMs: number;
  /** A retired key stays in the JWKS this long after it stopped signing (ms). Default 24 h. */
  overlapMs: number;
  /** Scheduled rotation period (ms); 0 disables. Default 90 days. */
  rotationIntervalMs: number;
  /** `Cache-Control: public, max-age=…` of the JWKS (seconds). Default 300. */
  jwksMaxAgeSeconds: number;
}

export const DEFAULT_SIGNING_KEY_OPTIONS: SigningKeyOptions = {
  publishLeadMs: 3600_000,
  overlapMs: 24 * 3600_000,
  rotationIntervalMs: 90 * 24 * 3600_000,
  jwksMaxAgeSeconds: 300,
};

/** A public JWK of the JWKS. */
export interface WebhookJwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  kid: string;
  alg: 'ES256';
  use: 'sig';
}

/** Admin view of a key (no private material). */
export interface SigningKeyView {
  kid: string;
  created_at: string;
  activates_at: string;
  retires_at: string | null;
  expires_at: string | null;
  state: 'PUBLISHED' | 'ACTIVE' | 'RETIRED' | 'EXPIRED';
}

interface KeyRow {
  kid: string;
  public_jwk: WebhookJwk;
  private_key_enc: string;
  created_at: Date;
  activates_at: Date;
  retires_at: Date | null;
  expires_at: Date | null;
}

const KEK_FILE = 'webhook-kek.key';

/**
 * Resolve the key encryption key (see the module comment for the order).
 * @throws RangeError when the option, variable or file does not hold exactly 32 bytes
 */
export async function resolveKeyEncryptionKey(opts: {
  keyEncryptionKey?: Uint8Array;
  dataDir?: string;
  env?: NodeJS.ProcessEnv;
}): Promise<{ kek: Uint8Array; source: 'option' | 'env' | 'file' | 'ephemeral' }> {
  if (opts.keyEncryptionKey !== undefined) {
    if (opts.keyEncryptionKey.length !== 32) throw new RangeError('webhooks.keyEncryptionKey must be 32 bytes');
    return { kek: opts.keyEncryptionKey, source: 'option' };
  }
  const env = (opts.env ?? process.env).CUSTODIAN_WEBHOOK_KEK;
  if (env !== undefined && env !== '') {
    const b = /^[0-9a-fA-F]{64}$/.test(env) ? Buffer.from(env, 'hex') : Buffer.from(env, 'base64url');
    if (b.length !== 32) throw new RangeError('CUSTODIAN_WEBHOOK_KEK must encode 32 bytes (64 hex digits or base64)');
    return { kek: new Uint8Array(b), source: 'env' };
  }
  if (opts.dataDir !== undefined) {
    const file = join(opts.dataDir, KEK_FILE);
    try {
      const b = await readFile(file);
      if (b.length !== 32) throw new RangeError(`${file} must hold exactly 32 bytes`);
      return { kek: new Uint8Array(b), source: 'file' };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      const kek = randomBytes(32);
      // 'wx': never overwrite a key file another process created meanwhile.
      await writeFile(file, kek, { mode: 0o600, flag: 'wx' }).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      return { kek: new Uint8Array(await readFile(file)), source: 'file' };
    }
  }
  return { kek: new Uint8Array(randomBytes(32)), source: 'ephemeral' };
}

function seal(kek: Uint8Array, kid: string, secret: Uint8Array): string {
  const nonce = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', kek, nonce);
  c.setAAD(Buffer.from(kid, 'utf8'));
  const ct = Buffer.concat([c.update(secret), c.final()]);
  return Buffer.concat([nonce, ct, c.getAuthTag()]).toString('base64');
}

function open(kek: Uint8Array, kid: string, sealed: string): Uint8Array | null {
  try {
    const b = Buffer.from(sealed, 'base64');
    const d = createDecipheriv('aes-256-gcm', kek, b.subarray(0, 12));
    d.setAAD(Buffer.from(kid, 'utf8'));
    d.setAuthTag(b.subarray(b.length - 16));
    const out = Buffer.concat([d.update(b.subarray(12, b.length - 16)), d.final()]);
    return out.length === 32 ? new Uint8Array(out) : null;
  } catch {
    return null;
  }
}

/** The signing key store. */
export class WebhookSigningKeys {
  private readonly cache = new Map<string, Uint8Array>();

  constructor(
    private readonly db: Db,
    private readonly kek: Uint8Array,
    readonly clock: Clock,
    readonly opts: SigningKeyOptions = DEFAULT_SIGNING_KEY_OPTIONS,
    /** An active key this KEK cannot open: refuse (WEBHOOK_KEK_MISMATCH) or retire and replace it. */
    private readonly unreadable: 'refuse' | 'replace' = 'refuse',
  ) {}

  private async lock(q: Queryable) {
    await q.query('SELECT pg_advisory_xact_lock(7261864210)');
  }

  private async insertKey(q: Queryable, now: Date, activatesAt: Date): Promise<string> {
    const secret = p256.utils.randomSecretKey();
    const pub = p256PublicJwk(secret);
    const kid = p256Thumbprint(pub);
    const jwk: WebhookJwk = { ...pub, kid, alg: 'ES256', use: 'sig' };
    await q.query(
      `INSERT INTO webhook_signing_keys (kid, public_jwk, private_key_enc, created_at, activates_at)
       VALUES ($1,$2::jsonb,$3,$4,$5)`,
      [kid, JSON.stringify(jwk), seal(this.kek, kid, secret), now, activatesAt],
    );
    this.cache.set(kid, secret);
    return kid;
  }

  private async row(q: Queryable, kid: string): Promise<KeyRow> {
    return (await q.query<KeyRow>('SELECT * FROM webhook_signing_keys WHERE kid = $1', [kid]))[0]!;
  }

  /**
   * Make sure a key this process can use is signing: when none is active (first start), create one
   * that signs at once (no receiver can hold an older JWKS of a key that never signed). An active
   * key this KEK cannot decrypt is retired (usual overlap) and replaced only with `unreadable:
   * 'replace'`; otherwise nothing is changed and the call throws.
   * @throws CoordinatorError WEBHOOK_KEK_MISMATCH when an active key exists that this KEK cannot open
   */
  async ensureKey(): Promise<void> {
    const now = this.clock();
    if ((await this.activeRow(this.db, now)) !== null) return;
    await this.db.tx(async (q) => {
      await this.lock(q);
      if ((await this.activeRow(q, now)) !== null) return;
      const unreadable = await q.query<{ kid: string }>(
        `SELECT kid FROM webhook_signing_keys WHERE activates_at <= $1 AND (retires_at IS NULL OR retires_at > $1)`,
        [now],
      );
      if (unreadable.length > 0 && this.unreadable === 'refuse') {
        throw new CoordinatorError(
          'WEBHOOK_KEK_MISMATCH',
          `WEBHOOK_KEK_MISMATCH: the active webhook signing key ${unreadable[0]!.kid} was encrypted with another ` +
            "key-encryption key than this replica's: every replica must use the same KEK (copy webhook-kek.key from an " +
            'existing replica into this data dir, mode 0600, or set the same CUSTODIAN_WEBHOOK_KEK everywhere; restore ' +
            'it from the backup if it was lost; docs/operator-guide.md "Several coordinator replicas"). Only when the ' +
            'KEK is gone for good: start once with webhooks.replaceUnreadableKeys to retire the key and make a new one',
        );
      }
      await q.query(
        `UPDATE webhook_signing_keys SET retires_at = $1, expires_at = $2
         WHERE activates_at <= $1 AND (retires_at IS NULL OR retires_at > $1)`,
        [now, new Date(now.getTime() + this.opts.overlapMs)],
      );
      await this.insertKey(q, now, now);
    });
  }

  /** The newest key signing at `now` that this process can decrypt, or null. */
  private async activeRow(q: Queryable, now: Date): Promise<{ kid: string; secret: Uint8Array } | null> {
    const rows = await q.query<KeyRow>(
      `SELECT * FROM webhook_signing_keys WHERE activates_at <= $1 AND (retires_at IS NULL OR retires_at > $1)
       ORDER BY activates_at DESC, created_at DESC`,
      [now],
    );
    for (const r of rows) {
      let s = this.cache.get(r.kid);
      if (s === undefined) {
        const o = open(this.kek, r.kid, r.private_key_enc);
        if (o === null) continue;
        this.cache.set(r.kid, o);
        s = o;
      }
      return { kid: r.kid, secret: s };
    }
    return null;
  }

  /**
   * The key that signs a delivery at `now`: `{ kid, secretKey }` (32-byte scalar, do not log).
   * Creates one when none exists.
   */
  async signingKey(now = this.clock()): Promise<{ kid: string; secretKey: Uint8Array }> {
    let a = await this.activeRow(this.db, now);
    if (a === null) {
      await this.ensureKey();
      a = await this.activeRow(this.db, now);
    }
    if (a === null) throw new Error('no usable webhook signing key');
    return { kid: a.kid, secretKey: a.secret };
  }

  /**
   * Rotate: create a key published now and signing from now + `leadMs`; the current key stops
   * signing then and leaves the JWKS `overlapMs` later.
   * @param leadMs default `publishLeadMs`
   * @throws ApiError CONFLICT when a published key is already waiting to activate
   */
  async rotate(leadMs = this.opts.publishLeadMs): Promise<SigningKeyView> {
    if (!Number.isInteger(leadMs) || leadMs < 0) throw new RangeError('leadMs must be a non-negative integer');
    return this.db.tx(async (q) => {
      await this.lock(q);
      const now = this.clock();
      const pending = await q.query('SELECT 1 FROM webhook_signing_keys WHERE activates_at > $1', [now]);
      if (pending.length > 0)
        throw new ApiError('CONFLICT', 'a new webhook signing key is already waiting to activate');
      const activates = new Date(now.getTime() + leadMs);
      await q.query(
        `UPDATE webhook_signing_keys SET retires_at = $1, expires_at = $2
         WHERE retires_at IS NULL OR retires_at > $1`,
        [activates, new Date(activates.getTime() + this.opts.overlapMs)],
      );
      const kid = await this.insertKey(q, now, activates);
      return this.view(await this.row(q, kid), now);
    });
  }

  /** Scheduled rotation: rotate when the newest key is older than `rotationIntervalMs`. */
  async rotateIfDue(): Promise<boolean> {
    if (this.opts.rotationIntervalMs <= 0) return false;
    const now = this.clock();
    const newest = (
      await this.db.query<{ activates_at: Date }>(
        'SELECT activates_at FROM webhook_signing_keys ORDER BY activates_at DESC LIMIT 1',
      )
    )[0];
    if (newest === undefined || newest.activates_at.getTime() + this.opts.rotationIntervalMs > now.getTime())
      return false;
    try {
      await this.rotate();
      return true;
    } catch (e) {
      if (e instanceof ApiError && e.code === 'CONFLICT') return false;
      throw e;
    }
  }

  /** The JWKS (RFC 7517 §5): every key created and not yet expired at `now`, newest first. */
  async jwks(now = this.clock()): Promise<{ keys: WebhookJwk[] }> {
    const rows = await this.db.query<{ public_jwk: WebhookJwk }>(
      `SELECT public_jwk FROM webhook_signing_keys WHERE created_at <= $1 AND (expires_at IS NULL OR expires_at > $1)
       ORDER BY activates_at DESC, created_at DESC`,
      [now],
    );
    return { keys: rows.map((r) => r.public_jwk) };
  }

  /** Every key with its state (no private material). */
  async list(): Promise<SigningKeyView[]> {
    const now = this.clock();
    const rows = await this.db.query<KeyRow>(
      'SELECT * FROM webhook_signing_keys ORDER BY activates_at DESC, created_at DESC',
    );
    return rows.map((r) => this.view(r, now));
  }

  private view(r: KeyRow, now: Date): SigningKeyView {
    const t = now.getTime();
    const state =
      r.expires_at !== null && r.expires_at.getTime() <= t
        ? 'EXPIRED'
        : r.retires_at !== null && r.retires_at.getTime() <= t
          ? 'RETIRED'
          : r.activates_at.getTime() <= t
            ? 'ACTIVE'
            : 'PUBLISHED';
    return {
      kid: r.kid,
      created_at: iso(r.created_at)!,
      activates_at: iso(r.activates_at)!,
      retires_at: iso(r.retires_at),
      expires_at: iso(r.expires_at),
      state,
    };
  }
}
