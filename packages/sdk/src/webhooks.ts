/**
 * Receiver-side verification of Custodian webhook deliveries (seed §6 "Signature"), built on the
 * independent `jose` implementation of RFC 7515.
 *
 * A delivery carries `X-Webhook-Signature: <headerB64>..<signatureB64>` — a detached JWS
 * (RFC 7515 appendix F) whose protected header is `{"alg":"ES256","kid":…}` and whose payload is
 * the string `<X-Webhook-Timestamp>.<raw body>`. Verification re-attaches the payload
 * (`headerB64.base64url(timestamp + "." + rawBody).signatureB64`) and runs jose's compact JWS
 * verification with ES256 only, over the RAW body bytes (never re-serialised JSON).
 */
import { compactVerify, createLocalJWKSet, type JSONWebKeySet, errors as joseErrors } from 'jose';
import { SdkError } from './errors.js';

/** Stable reasons a delivery is rejected. */
export type WebhookVerificationCode =
  | 'MISSING_HEADER'
  | 'MALFORMED_SIGNATURE'
  | 'MALFORMED_TIMESTAMP'
  | 'TIMESTAMP_OUT_OF_TOLERANCE'
  | 'UNKNOWN_KID'
  | 'BAD_SIGNATURE'
  | 'JWKS_UNAVAILABLE'
  | 'MALFORMED_BODY'
  | 'HEADER_MISMATCH';

/** Thrown by {@link verifyWebhook} for every rejected delivery; answer it with a 4xx. */
export class WebhookVerificationError extends SdkError {
  declare readonly code: WebhookVerificationCode;
  constructor(code: WebhookVerificationCode, message: string) {
    super(code, `${code}: ${message}`);
  }
}

/** A verified delivery. */
export interface VerifiedWebhook<T = unknown> {
  /** X-Webhook-Event-ID (= body.event_id): deduplicate on it — delivery is at-least-once. */
  eventId: string;
  /** X-Webhook-Event-Type (= body.event_type). Log and ignore types you do not know (seed §6 rule 5). */
  eventType: string;
  /** X-Webhook-Timestamp, Unix seconds. */
  timestamp: number;
  /** Key id that signed it. */
  kid: string;
  /** The parsed body `{ event_id, event_type, profile_id, timestamp, data }`. */
  event: { event_id: string; event_type: string; profile_id: string; timestamp: string; data: T };
}

/** Fetch function (the global `fetch` by default). */
export type FetchLike = (
  url: string,
  init?: { signal?: AbortSignal },
) => Promise<{
  ok: boolean;
  status: number;
  headers: { get(name: string): string | null };
  json(): Promise<unknown>;
}>;

/** Options of {@link JwksCache}. */
export interface JwksCacheOptions {
  /** `{base_url}/.well-known/jwks.json`. */
  url: string | URL;
  fetch?: FetchLike;
  /** Current time in ms (injectable). Default `Date.now`. */
  now?: () => number;
  /** Cache lifetime when the response has no usable `Cache-Control: max-age` (ms). Default 5 min. */
  defaultMaxAgeMs?: number;
  /** Upper bound of any cache lifetime (ms). Default 24 h. */
  maxMaxAgeMs?: number;
  /** Minimum time between two refreshes forced by an unknown kid (ms). Default 10 s. */
  unknownKidCooldownMs?: number;
  /** Fetch deadline (ms). Default 10 s. */
  timeoutMs?: number;
}

/**
 * A cached JWKS that honours the response's `Cache-Control` (`max-age`, `s-maxage`; `no-store` /
 * `no-cache` → refetch every time) and refreshes at most once per unknown `kid` (rate limited).
 */
export class JwksCache {
  private keys: JSONWebKeySet | undefined;
  private expiresAt = 0;
  private lastForced = Number.NEGATIVE_INFINITY;
  private inflight: Promise<JSONWebKeySet> | undefined;
  private readonly o: Required<Omit<JwksCacheOptions, 'url' | 'fetch'>> & { url: string; fetch: FetchLike };
  /** Number of JWKS fetches made (observability, tests). */
  fetches = 0;

  constructor(opts: JwksCacheOptions) {
    this.o = {
      url: String(opts.url),
      fetch: opts.fetch ?? (globalThis.fetch as unknown as FetchLike),
      now: opts.now ?? Date.now,
      defaultMaxAgeMs: opts.defaultMaxAgeMs ?? 300_000,
      maxMaxAgeMs: opts.maxMaxAgeMs ?? 86_400_000,
      unknownKidCooldownMs: opts.unknownKidCooldownMs ?? 10_000,
      timeoutMs: opts.timeoutMs ?? 10_000,
    };
  }

  /** The cached key set, fetched when missing or expired. */
  async get(): Promise<JSONWebKeySet> {
    if (this.keys !== undefined && this.o.now() < this.expiresAt) return this.keys;
    return this.refresh();
  }

  /**
   * The key set after one forced refresh — called when a signature names a kid the cache lacks
   * (seed §6 rule 5). Returns the cached set unchanged inside the cooldown.
   */
  async refreshForUnknownKid(): Promise<JSONWebKeySet> {
    const now = this.o.now();
    if (this.keys !== undefined && now - this.lastForced < this.o.unknownKidCooldownMs) return this.keys;
    this.lastForced = now;
    return this.refresh();
  }

  private refresh(): Promise<JSONWebKeySet> {
    this.inflight ??= this.load().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async load(): Promise<JSONWebKeySet> {
    this.fetches++;
    let res: Awaited<ReturnType<FetchLike>>;
    let body: unknown;
    try {
      res = await this.o.fetch(this.o.url, { signal: AbortSignal.timeout(this.o.timeoutMs) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      body = await res.json();
    } catch (e) {
      if (this.keys !== undefined) return this.keys; // keep serving the last good set
      throw new WebhookVerificationError('JWKS_UNAVAILABLE', `cannot fetch ${this.o.url}: ${(e as Error).message}`);
    }
    const keys = (body as { keys?: unknown }).keys;
    if (!Array.isArray(keys)) throw new WebhookVerificationError('JWKS_UNAVAILABLE', 'the JWKS has no "keys" array');
    this.keys = { keys: keys as JSONWebKeySet['keys'] };
    this.expiresAt =
      this.o.now() + maxAgeMs(res.headers.get('cache-control'), this.o.defaultMaxAgeMs, this.o.maxMaxAgeMs);
    return this.keys;
  }
}

/** Cache lifetime from a Cache-Control header (RFC 9111 §5.2.2). */
export function maxAgeMs(header: string | null, fallbackMs: number, capMs: number): number {
  if (header === null) return fallbackMs;
  const d = header.toLowerCase();
  if (/(^|[,\s])(no-store|no-cache)([,\s=]|$)/.test(d)) return 0;
  const m = /(?:^|[,\s])s-maxage\s*=\s*"?(\d+)/.exec(d) ?? /(?:^|[,\s])max-age\s*=\s*"?(\d+)/.exec(d);
  if (m?.[1] === undefined) return fallbackMs;
  return Math.min(Number(m[1]) * 1000, capMs);
}

/** Options of {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /** A shared {@link JwksCache} (recommended: one per process), or the JWKS URL (a cache per URL is kept). */
  jwks: JwksCache | string | URL;
  /** Accepted |now − X-Webhook-Timestamp| in seconds. Default 300 (seed §6 rule 7 / §8: at most 5 minutes). */
  toleranceSeconds?: number;
  /** Current time in ms (injectable). Default `Date.now`. */
  now?: () => number;
}

/** Header bag: Node's `IncomingHttpHeaders`, a fetch `Headers`, or a plain record (names case-insensitive). */
export type HeaderBag = Headers | Record<string, string | string[] | undefined>;

const caches = new Map<string, JwksCache>();
const enc = new TextEncoder();

function header(h: HeaderBag, name: string): string | undefined {
  if (typeof (h as Headers).get === 'function') {
    const v = (h as Headers).get(name);
    return v ?? undefined;
  }
  const want = name.toLowerCase();
  for (const [k, v] of Object.entries(h as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() === want) return Array.isArray(v) ? (v.length === 1 ? v[0] : undefined) : v;
  }
  return undefined;
}

function required(h: HeaderBag, name: string): string {
  const v = header(h, name);
  if (v === undefined || v === '') throw new WebhookVerificationError('MISSING_HEADER', `${name} is missing`);
  return v;
}

/**
 * Verify one delivery.
 *
 * Steps: read the five headers; check `X-Webhook-Timestamp` is within `toleranceSeconds` of now;
 * split `X-Webhook-Signature` into `headerB64..signatureB64` (the middle part must be empty) and
 * decode the protected header (`alg` must be ES256, `kid` present); pick the key by `kid` from the
 * cached JWKS, refreshing it once when the kid is unknown; re-attach the payload
 * base64url(timestamp + "." + rawBody) and verify with jose (`algorithms: ['ES256']`); finally
 * parse the body and check `event_id` / `event_type` equal their headers.
 * @param rawBody the exact request body bytes (a string is taken as its UTF-8 bytes; prefer bytes)
 * @throws WebhookVerificationError with a stable `code` for every rejection
 */
export async function verifyWebhook<T = unknown>(
  rawBody: Uint8Array | string,
  headers: HeaderBag,
  options: VerifyWebhookOptions,
): Promise<VerifiedWebhook<T>> {
  const raw = typeof rawBody === 'string' ? enc.encode(rawBody) : rawBody;
  const now = options.now ?? Date.now;
  const tolerance = options.toleranceSeconds ?? 300;
  const sigHeader = required(headers, 'X-Webhook-Signature');
  const ts = required(headers, 'X-Webhook-Timestamp');
  const eventId = required(headers, 'X-Webhook-Event-ID');
  const eventType = required(headers, 'X-Webhook-Event-Type');

  if (!/^[0-9]{1,15}$/.test(ts))
    throw new WebhookVerificationError('MALFORMED_TIMESTAMP', 'X-Webhook-Timestamp must be Unix seconds');
  const timestamp = Number(ts);
  if (Math.abs(now() / 1000 - timestamp) > tolerance) {
    throw new WebhookVerificationError('TIMESTAMP_OUT_OF_TOLERANCE', `timestamp is more than ${tolerance} s from now`);
  }

  const parts = sigHeader.split('.');
  if (
    parts.length !== 3 ||
    parts[1] !== '' ||
    !/^[A-Za-z0-9_-]+$/.test(parts[0]!) ||
    !/^[A-Za-z0-9_-]+$/.test(parts[2]!)
  ) {
    throw new WebhookVerificationError(
      'MALFORMED_SIGNATURE',
      'X-Webhook-Signature must be <headerB64>..<signatureB64>',
    );
  }
  const [headerB64, , signatureB64] = parts as [string, string, string];
  let protectedHeader: { alg?: unknown; kid?: unknown; b64?: unknown };
  try {
    protectedHeader = JSON.parse(Buffer.from(headerB64, 'base64url').toString('utf8'));
  } catch {
    throw new WebhookVerificationError('MALFORMED_SIGNATURE', 'the JWS header is not base64url JSON');
  }
  if (protectedHeader === null || typeof protectedHeader !== 'object' || protectedHeader.alg !== 'ES256') {
    throw new WebhookVerificationError('MALFORMED_SIGNATURE', 'the JWS header alg must be ES256');
  }
  if (typeof protectedHeader.kid !== 'string' || protectedHeader.kid === '') {
    throw new WebhookVerificationError('MALFORMED_SIGNATURE', 'the JWS header has no kid');
  }
  if (protectedHeader.b64 !== undefined)
    throw new WebhookVerificationError('MALFORMED_SIGNATURE', 'b64 is not allowed');
  const kid = protectedHeader.kid;

  const cache = jwksCacheOf(options.jwks, now);
  let set = await cache.get();
  if (!set.keys.some((k) => k.kid === kid)) set = await cache.refreshForUnknownKid();
  if (!set.keys.some((k) => k.kid === kid))
    throw new WebhookVerificationError('UNKNOWN_KID', `no key ${kid} in the JWKS`);

  const payload = new Uint8Array(ts.length + 1 + raw.length);
  payload.set(enc.encode(`${ts}.`), 0);
  payload.set(raw, ts.length + 1);
  const jws = `${headerB64}.${Buffer.from(payload).toString('base64url')}.${signatureB64}`;
  try {
    await compactVerify(jws, createLocalJWKSet(set), { algorithms: ['ES256'] });
  } catch (e) {
    if (e instanceof joseErrors.JWKSNoMatchingKey)
      throw new WebhookVerificationError('UNKNOWN_KID', `no ES256 key ${kid}`);
    throw new WebhookVerificationError('BAD_SIGNATURE', 'the signature does not verify');
  }

  let event: VerifiedWebhook<T>['event'];
  try {
    event = JSON.parse(Buffer.from(raw).toString('utf8'));
  } catch {
    throw new WebhookVerificationError('MALFORMED_BODY', 'the body is not JSON');
  }
  if (event === null || typeof event !== 'object')
    throw new WebhookVerificationError('MALFORMED_BODY', 'the body is not an object');
  if (event.event_id !== eventId || event.event_type !== eventType) {
    throw new WebhookVerificationError('HEADER_MISMATCH', 'X-Webhook-Event-ID / -Type differ from the body');
  }
  return { eventId, eventType, timestamp, kid, event };
}

function jwksCacheOf(j: VerifyWebhookOptions['jwks'], now: () => number): JwksCache {
  if (j instanceof JwksCache) return j;
  const url = String(j);
  let c = caches.get(url);
  if (c === undefined) {
    c = new JwksCache({ url, now });
    caches.set(url, c);
  }
  return c;
}
