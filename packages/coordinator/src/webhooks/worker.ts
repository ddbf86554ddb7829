/**
 * The webhook delivery worker (seed §6 "Delivery and retries", §8): claims due notifications,
 * signs and POSTs them, and records every attempt.
 *
 * - Schedule: attempt 1 at once; attempt n+1 `retryDelaysMs[n-1]` after attempt n STARTED
 *   (30 s, 2 min, 10 min, 30 min, i.e. at 0, 0:30, 2:30, 12:30, 42:30); after the fifth failed
 *   attempt the notification is FAILED and never retried automatically (admin redeliver only).
 * - Success: a 2xx status within `timeoutMs` (30 s). Anything else fails the attempt: another
 *   status, a connection/TLS error, no answer within 30 s (the request is aborted), or an answer
 *   that the injectable clock measured as later than 30 s. Redirects are not followed.
 * - Exactly-one-sender per attempt: a claim runs `SELECT … FOR UPDATE SKIP LOCKED` and, in the same
 *   short transaction, stamps a `claim_id` and pushes `next_attempt_at` to a lease (`timeoutMs` +
 *   30 s), so several workers and several coordinator replicas on one PostgreSQL never send one
 *   attempt at once, and no transaction stays open during HTTP (PGlite has one connection).
 *   Results are written only while the claim is still ours. A process that dies mid-attempt
 *   leaves the lease to expire; the attempt is then recorded as interrupted (it counts: the
 *   receiver may have got it) and the next one runs — at-least-once, receivers deduplicate on
 *   X-Webhook-Event-ID.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Db } from '../db/db.js';
import type { Startable } from '../lifecycle.js';
import type { WebhookMetrics } from '../metrics/registry.js';
import type { Clock } from '../util.js';
import type { WebhookSigningKeys } from './keys.js';
import { signWebhook } from './signature.js';
import { WebhookTargetAllowlist } from './target-allowlist.js';
import { guardedLookupFor, refusedAddress } from './targets.js';

/** Seed §6: up to 5 attempts in total. */
export const MAX_ATTEMPTS = 5;
/** Seed §6/§8: delays before attempts 2–5 (ms). */
export const RETRY_DELAYS_MS: readonly number[] = [30_000, 120_000, 600_000, 1_800_000];
/** Seed §6/§8: the receiver must answer 2xx within 30 s. */
export const DELIVERY_TIMEOUT_MS = 30_000;

/** Settings of {@link WebhookWorker}. */
export interface WebhookWorkerOptions {
  mode: 'development' | 'production';
  clock: Clock;
  /** Poll period (ms). Default 1000. */
  pollIntervalMs: number;
  /** Notifications claimed per poll. Default 20. */
  batchSize: number;
  /** Response deadline (ms). Default 30 000 (seed §8); configurable for tests only. */
  timeoutMs: number;
  /** Extra trusted CA certificates (PEM) for HTTPS receivers — for tests with a local CA; default none (system trust). */
  ca?: string | Buffer | undefined;
  /** Production exceptions to the SSRF rule (`webhooks.allowedTargets`, target-allowlist.ts); default none. */
  allowedTargets?: WebhookTargetAllowlist | undefined;
  /** Where operational messages go (never secrets, never bodies). */
  log?: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

export const DEFAULT_WORKER_OPTIONS = {
  pollIntervalMs: 1000,
  batchSize: 20,
  timeoutMs: DELIVERY_TIMEOUT_MS,
} as const;

interface Claimed {
  notification_id: string;
  claim_id: string;
  attempt: number;
  attempt_base: number;
  started: Date;
  url: string;
  body: string;
  event_id: string;
  event_type: string;
}

/** Outcome of one HTTP attempt. */
interface AttemptResult {
  status: number | null;
  error: string | null;
  ok: boolean;
  durationMs: number;
}

/** Dependencies of {@link WebhookWorker}. */
export interface WebhookWorkerComponents {
  readonly db: Db;
  /** Signing keys (rotated when due at every poll) that sign each attempt. */
  readonly keys: WebhookSigningKeys;
  readonly options: WebhookWorkerOptions;
  /** Deliveries by outcome and attempt (metrics/registry.ts); absent: not counted. */
  readonly metrics?: WebhookMetrics | undefined;
}

/** The worker. */
export class WebhookWorker implements Startable {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private stopped = true;
  private readonly leaseMs: number;
  private readonly db: Db;
  private readonly keys: WebhookSigningKeys;
  private readonly metrics: WebhookMetrics | undefined;
  /** The settings it was built with. */
  readonly opts: WebhookWorkerOptions;

  constructor(c: WebhookWorkerComponents) {
    this.db = c.db;
    this.keys = c.keys;
    this.opts = c.options;
    this.leaseMs = c.options.timeoutMs + 30_000;
    this.metrics = c.metrics;
  }

  /** Start polling (every `pollIntervalMs`). Idempotent. */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  private schedule(ms: number) {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.runOnce()
        .catch((e: unknown) => this.opts.log?.('error', 'webhook worker poll failed', { err: String(e) }))
        .finally(() => this.schedule(this.opts.pollIntervalMs));
    }, ms);
    this.timer.unref();
  }

  /** Stop polling and wait for attempts in flight to be recorded. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => 0);
  }

  /**
   * One poll: rotate the signing key when due, claim every due notification (up to `batchSize`),
   * deliver them concurrently and record the outcomes. Serialised within this worker.
   * @returns the number of attempts made
   */
  async runOnce(): Promise<number> {
    while (this.running !== undefined) await this.running.catch(() => 0);
    const p = this.poll();
    this.running = p;
    try {
      return await p;
    } finally {
      this.running = undefined;
    }
  }

  private async poll(): Promise<number> {
    await this.keys.rotateIfDue();
    const claimed = await this.claim();
    await Promise.all(claimed.map((c) => this.deliver(c)));
    return claimed.length;
  }

  private async claim(): Promise<Claimed[]> {
    const now = this.opts.clock();
    return this.db.tx(async (q) => {
      const rows = await q.query<{
        notification_id: string;
        attempt_count: number;
        attempt_base: number;
        claim_id: string | null;
        next_attempt_at: Date;
        url: string;
        webhook_deleted: boolean;
        body: string;
        event_id: string;
        event_type: string;
      }>(
        `SELECT n.notification_id, n.attempt_count, n.attempt_base, n.claim_id, n.next_attempt_at, w.url,
                (w.deleted_at IS NOT NULL) AS webhook_deleted, e.body, e.event_id, e.event_type
         FROM webhook_notifications n
         JOIN webhooks w ON w.webhook_id = n.webhook_id
         JOIN webhook_events e ON e.event_id = n.event_id
         WHERE n.status = 'PENDING' AND n.next_attempt_at <= $1
         ORDER BY n.next_attempt_at, n.notification_id
         LIMIT $2
         FOR UPDATE OF n SKIP LOCKED`,
        [now, this.opts.batchSize],
      );
      const out: Claimed[] = [];
      for (const r of rows) {
        if (r.claim_id !== null) {
          // A previous claim's lease expired: its process stopped mid-attempt.
          await q.query(
            `UPDATE webhook_attempts SET finished_at = $3, error = 'interrupted: the coordinator stopped during the attempt'
             WHERE notification_id = $1 AND attempt = $2 AND finished_at IS NULL`,
            [r.notification_id, r.attempt_count, now],
          );
        }
        if (r.webhook_deleted || r.attempt_count - r.attempt_base >= MAX_ATTEMPTS) {
          await q.query(
            `UPDATE webhook_notifications SET status = 'FAILED', claim_id = NULL, next_attempt_at = NULL, updated_at = $2,
               last_error = COALESCE($3, last_error)
             WHERE notification_id = $1`,
            [r.notification_id, now, r.webhook_deleted ? 'the webhook was deleted' : null],
          );
          continue;
        }
        const attempt = r.attempt_count + 1;
        const claimId = randomUUID();
        await q.query(
          `UPDATE webhook_notifications SET attempt_count = $2, claim_id = $3, next_attempt_at = $4, updated_at = $5
           WHERE notification_id = $1`,
          [r.notification_id, attempt, claimId, new Date(now.getTime() + this.leaseMs), now],
        );
        await q.query(
          `INSERT INTO webhook_attempts (notification_id, attempt, scheduled_at, started_at) VALUES ($1,$2,$3,$4)`,
          [r.notification_id, attempt, r.next_attempt_at, now],
        );
        out.push({
          notification_id: r.notification_id,
          claim_id: claimId,
          attempt,
          attempt_base: r.attempt_base,
          started: now,
          url: r.url,
          body: r.body,
          event_id: r.event_id,
          event_type: r.event_type,
        });
      }
      return out;
    });
  }

  private async deliver(c: Claimed): Promise<void> {
    let result: AttemptResult;
    try {
      result = await this.send(c);
    } catch (e) {
      result = { ok: false, status: null, error: `internal: ${String(e).slice(0, 200)}`, durationMs: 0 };
    }
    const now = this.opts.clock();
    const inSeries = c.attempt - c.attempt_base;
    const status = result.ok ? 'DELIVERED' : inSeries >= MAX_ATTEMPTS ? 'FAILED' : 'PENDING';
    const next = status === 'PENDING' ? new Date(c.started.getTime() + (RETRY_DELAYS_MS[inSeries - 1] ?? 0)) : null;
    await this.db.tx(async (q) => {
      const upd = await q.query(
        `UPDATE webhook_notifications SET status = $3, next_attempt_at = $4, claim_id = NULL, updated_at = $5,
           last_response_code = $6, last_error = $7, delivered_at = CASE WHEN $3 = 'DELIVERED' THEN $5 ELSE delivered_at END
         WHERE notification_id = $1 AND claim_id = $2 RETURNING 1`,
        [c.notification_id, c.claim_id, status, next, now, result.status, result.error],
      );
      if (upd.length === 0) return; // the lease expired and another worker took over
      await q.query(
        `UPDATE webhook_attempts SET finished_at = $3, response_code = $4, error = $5, duration_ms = $6
         WHERE notification_id = $1 AND attempt = $2`,
        [c.notification_id, c.attempt, now, result.status, result.error, result.durationMs],
      );
    });
    const outcome = status === 'DELIVERED' ? 'delivered' : status === 'FAILED' ? 'failed' : 'retry';
    this.metrics?.deliveries.inc({ outcome, attempt: String(inSeries) });
    const host = safeHost(c.url);
    this.opts.log?.(result.ok ? 'info' : 'warn', `webhook attempt ${c.attempt} ${status}`, {
      notification_id: c.notification_id,
      event_id: c.event_id,
      host,
      response_code: result.status,
      error: result.error,
    });
  }

  /** Sign and POST one attempt. */
  private async send(c: Claimed): Promise<AttemptResult> {
    const t0 = this.opts.clock();
    const raw = Buffer.from(c.body, 'utf8');
    const timestamp = String(Math.floor(t0.getTime() / 1000));
    const { kid, secretKey } = await this.keys.signingKey(t0);
    const headers = {
      'Content-Type': 'application/json',
      'X-Webhook-Signature': signWebhook(secretKey, kid, timestamp, raw),
      'X-Webhook-Timestamp': timestamp,
      'X-Webhook-Event-Type': c.event_type,
      'X-Webhook-Event-ID': c.event_id,
      'Content-Length': String(raw.length),
      'User-Agent': 'Custodian-Webhooks/1',
    };
    const r = await postOnce(c.url, headers, raw, {
      timeoutMs: this.opts.timeoutMs,
      ca: this.opts.ca,
      guard: this.opts.mode === 'production',
      allow: this.opts.allowedTargets,
    });
    const durationMs = this.opts.clock().getTime() - t0.getTime();
    if (r.status !== null && durationMs > this.opts.timeoutMs) {
      return {
        ok: false,
        status: r.status,
        error: `answered after ${durationMs} ms (limit ${this.opts.timeoutMs} ms)`,
        durationMs,
      };
    }
    const ok = r.status !== null && r.status >= 200 && r.status < 300;
    return {
      ok,
      status: r.status,
      error: r.error ?? (ok ? null : `HTTP ${r.status}`),
      durationMs,
    };
  }
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '?';
  }
}

/**
 * One HTTP(S) POST with a hard deadline; resolves with the status once the response head arrives
 * (the body is drained and discarded), or with an error text. Never rejects.
 */
export function postOnce(
  url: string,
  headers: Record<string, string>,
  body: Uint8Array,
  o: {
    timeoutMs: number;
    ca?: string | Buffer | undefined;
    guard: boolean;
    /** Exceptions to the guard (`webhooks.allowedTargets`); default none. */
    allow?: WebhookTargetAllowlist | undefined;
  },
): Promise<{ status: number | null; error: string | null }> {
  return new Promise((resolve) => {
    let done = false;
    // Declared before finish: the early returns below settle before any timer exists.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (v: { status: number | null; error: string | null }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(v);
    };
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      finish({ status: null, error: 'invalid URL' });
      return;
    }
    // An IP-literal host is connected to without a DNS lookup, so guardedLookup never sees it: judge
    // the literal here (a URL registered before the current target rule, or stored by other means).
    const literal = u.hostname.replace(/^\[|\]$/g, '');
    const allow = o.allow ?? WebhookTargetAllowlist.EMPTY;
    if (o.guard && isIP(literal) !== 0 && refusedAddress(literal, literal, allow)) {
      finish({ status: null, error: 'ENONPUBLIC' });
      return;
    }
    const mod = u.protocol === 'https:' ? https : http;
    const req = mod.request(
      u,
      {
        method: 'POST',
        headers,
        agent: false,
        ...(o.ca !== undefined && u.protocol === 'https:' ? { ca: o.ca } : {}),
        ...(o.guard ? { lookup: guardedLookupFor(allow) as never } : {}),
      },
      (res) => {
        res.resume();
        res.on('error', () => {});
        finish({ status: res.statusCode ?? null, error: null });
      },
    );
    timer = setTimeout(() => {
      finish({ status: null, error: `no answer within ${o.timeoutMs} ms` });
      req.destroy(new Error('timeout'));
    }, o.timeoutMs);
    req.on('error', (e: NodeJS.ErrnoException) => finish({ status: null, error: (e.code ?? e.message).slice(0, 200) }));
    req.end(body);
  });
}
