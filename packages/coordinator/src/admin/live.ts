/**
 * Live views of the admin API as Server-Sent Events (consumed by the dashboard's
 * `api/live.ts`): a stream opens with the resource's current JSON (the same body as its GET
 * route), then sends one event whenever that JSON changes, found by polling the store (so it sees
 * changes made by any process sharing the database), a `: keep-alive` comment every 15 s, and
 * ends when the resource is final, after 10 minutes, when the client goes, or when the
 * coordinator shuts down.
 *
 * Authorisation is not only checked when the stream opens: every poll and every keep-alive
 * re-resolves the session of the request (the same bearer token or session cookie, through
 * {@link authenticateSession}, without counting as user activity), re-checks the route's roles
 * and hands the fresh user to `load`, which applies the route's wallet-group scope. The stream
 * ends as soon as one of these fails — logout, revocation, idle or absolute expiry, a blocked or
 * deleted user, a role the route does not allow, a resource out of scope or gone. A new value is
 * written only after a second session check made after it was read. Logout on this replica ends
 * the session's streams at once ({@link LiveSessions.onLogout}); other revocations (and a logout
 * on another replica) end them at the next poll (`pollMs`).
 *
 * Limits (429 `RATE_LIMITED` with `Retry-After`, counted before any await so concurrent opens
 * cannot race past them): at most `perUser` open streams per user across all their sessions,
 * `max` open streams in the process, and a token bucket per user for opening streams
 * (`opens.burst` at once, refilled at `opens.perMinute`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import type { SessionUser } from '../users/store.js';
import { authenticateSession, type SessionLookup, type SessionTransport } from './cookies.js';
import type { Role } from './options.js';

/** Timings and limits of {@link LiveStreams} (defaults in brackets). */
export interface LiveOptions {
  /** Store poll interval (and session re-check), ms [500]. */
  pollMs: number;
  /** Keep-alive comment interval, ms [15 000]. */
  keepAliveMs: number;
  /** Longest stream, ms [600 000]. */
  maxMs: number;
  /** Open streams per user, all their sessions together [8]. */
  perUser: number;
  /** Open streams in this process, all users together [256]. */
  max: number;
  /** Stream opens per user: a token bucket of `burst` opens [16], refilled at `perMinute` [60]. */
  opens: { burst: number; perMinute: number };
}

const DEFAULTS: LiveOptions = {
  pollMs: 500,
  keepAliveMs: 15_000,
  maxMs: 600_000,
  perUser: 8,
  max: 256,
  opens: { burst: 16, perMinute: 60 },
};

/** What {@link LiveStreams} needs of the session service (users room, `SessionService`). */
export interface LiveSessions {
  /**
   * The live session of a token opened for `transport`, or null; `touch: false` does not record
   * the use as activity (users/sessions.ts `sessionFor`).
   */
  sessionFor(token: string, transport: SessionTransport, options?: { touch?: boolean }): Promise<SessionLookup | null>;
  /** Call `listener` with the session id whenever a session is logged out on this process. */
  onLogout(listener: (sessionId: string) => void): void;
}

/** What one stream sends and who may keep receiving it. */
export interface StreamSpec<T> {
  /** The route's roles: re-checked on every poll (a user whose role changed out of them is cut off). */
  roles: readonly Role[];
  /**
   * The resource as its GET route returns it, for `user` (freshly resolved at each poll): must
   * apply the route's scope checks and throw (e.g. 404) when the user may not see it.
   */
  load: (user: SessionUser) => Promise<T>;
  /** Whether the JSON is final (the stream ends after sending it). */
  final: (v: T) => boolean;
}

/** OpenAPI response of a stream route (200, `text/event-stream`). */
export function eventStreamResponse(what: string) {
  return {
    description: `Server-Sent Events: each event's \`data\` is ${what} as JSON (the GET route's body), sent at once and whenever it changes; \`: keep-alive\` comments every 15 s; the stream ends when it is final, after 10 minutes, or when the client closes it.`,
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  };
}

/** The open streams of one fastify context; all end when the app closes. */
export class LiveStreams {
  /** Open streams per user id. */
  readonly #perUser = new Map<string, number>();
  /** The `end` of every open stream, per session id (logout ends them). */
  readonly #bySession = new Map<string, Set<() => void>>();
  /** Open-rate token buckets per user id. */
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  #open = 0;
  readonly #o: LiveOptions;
  readonly #sessions: LiveSessions;

  constructor(app: FastifyInstance, sessions: LiveSessions, options: Partial<LiveOptions> = {}) {
    this.#o = { ...DEFAULTS, ...options, opens: { ...DEFAULTS.opens, ...options.opens } };
    this.#sessions = sessions;
    sessions.onLogout((id) => this.endSession(id));
    app.addHook('preClose', async () => {
      for (const ends of [...this.#bySession.values()]) for (const end of [...ends]) end();
    });
  }

  /** End every open stream of session `sessionId` now (logout). */
  endSession(sessionId: string): void {
    for (const end of [...(this.#bySession.get(sessionId) ?? [])]) end();
  }

  /**
   * Take a place for a new stream of `userId`, synchronously (no await between check and count).
   * @returns the release function (call once)
   * @throws ApiError RATE_LIMITED (429, Retry-After) over `max`, `perUser` or the open rate
   */
  #admit(userId: string): () => void {
    if (this.#open >= this.#o.max) {
      throw new ApiError('RATE_LIMITED', 'too many live streams are open; try again shortly', undefined, {
        'retry-after': '5',
      });
    }
    const mine = this.#perUser.get(userId) ?? 0;
    if (mine >= this.#o.perUser) {
      throw new ApiError('RATE_LIMITED', `at most ${this.#o.perUser} live streams per user`, undefined, {
        'retry-after': '5',
      });
    }
    const { burst, perMinute } = this.#o.opens;
    const perMs = perMinute / 60_000;
    const now = Date.now();
    const b = this.#buckets.get(userId) ?? { tokens: burst, at: now };
    b.tokens = Math.min(burst, b.tokens + (now - b.at) * perMs);
    b.at = now;
    if (b.tokens < 1) {
      this.#buckets.set(userId, b);
      const seconds = Math.max(1, Math.ceil((1 - b.tokens) / perMs / 1000));
      throw new ApiError('RATE_LIMITED', 'live streams are opened too fast; wait before opening another', undefined, {
        'retry-after': String(seconds),
      });
    }
    b.tokens -= 1;
    this.#buckets.set(userId, b);
    this.#sweepBuckets(now);
    this.#open += 1;
    this.#perUser.set(userId, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#open -= 1;
      const left = (this.#perUser.get(userId) ?? 1) - 1;
      if (left <= 0) this.#perUser.delete(userId);
      else this.#perUser.set(userId, left);
    };
  }

  /** Forget buckets that are full again (bounded memory: at most the users who opened streams lately). */
  #sweepBuckets(now: number): void {
    if (this.#buckets.size <= 1024) return;
    const { burst, perMinute } = this.#o.opens;
    for (const [id, b] of this.#buckets) {
      if (b.tokens + (now - b.at) * (perMinute / 60_000) >= burst) this.#buckets.delete(id);
    }
  }

  /**
   * Stream `spec.load(user)` to the client of `req` (whose `adminUser` the session hook set, with
   * a role of `spec.roles`). The first `load()` runs before the stream opens, so its errors (404)
   * are problem+json answers; later, a failed session, role or `load` check ends the stream.
   * @throws ApiError RATE_LIMITED (429, Retry-After) over the global, per-user or open-rate limit
   */
  async stream<T>(req: FastifyRequest, reply: FastifyReply, spec: StreamSpec<T>): Promise<FastifyReply> {
    const opener = req.adminUser!;
    const session = opener.session_id;
    const release = this.#admit(opener.user_id);
    let value: T;
    try {
      value = await spec.load(opener);
    } catch (e) {
      release();
      throw e;
    }
    // The session of this request, resolved again for its own transport (bearer or cookie; a GET,
    // so no CSRF check), without refreshing its idle timer; null when it or the role no longer holds.
    const peek = {
      sessionFor: (token: string, transport: SessionTransport) =>
        this.#sessions.sessionFor(token, transport, { touch: false }),
    };
    const authorise = async (): Promise<SessionUser | null> => {
      const user = await authenticateSession(req, peek).catch(() => null);
      if (user === null || user.session_id !== session || !spec.roles.includes(user.role)) return null;
      return user;
    };

    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    let last = JSON.stringify(value);
    let done = false;
    let pollTimer: NodeJS.Timeout | undefined;
    let maxTimer: NodeJS.Timeout | undefined;
    let keepAlive: NodeJS.Timeout | undefined;
    const end = () => {
      if (done) return;
      done = true;
      clearTimeout(maxTimer);
      clearInterval(keepAlive);
      clearTimeout(pollTimer);
      const mine = this.#bySession.get(session);
      mine?.delete(end);
      if (mine?.size === 0) this.#bySession.delete(session);
      release();
      res.end();
    };
    const ends = this.#bySession.get(session) ?? new Set();
    ends.add(end);
    this.#bySession.set(session, ends);
    res.on('close', end);
    res.write(`data: ${last}\n\n`);
    if (spec.final(value)) {
      end();
      return reply;
    }
    maxTimer = setTimeout(end, this.#o.maxMs);
    keepAlive = setInterval(() => {
      void authorise().then((user) => {
        if (done) return;
        if (user === null) return end();
        res.write(': keep-alive\n\n');
      });
    }, this.#o.keepAliveMs);
    const poll = async () => {
      if (done) return;
      try {
        const user = await authorise();
        if (user === null || done) return end();
        value = await spec.load(user);
        const text = JSON.stringify(value);
        if (text !== last && !done) {
          // the new value was read under a live session: check it still is before sending it
          if ((await authorise()) === null || done) return end();
          last = text;
          res.write(`data: ${text}\n\n`);
        }
        if (spec.final(value)) return end();
      } catch (err) {
        // gone (deleted, out of scope) or the store failed: end; the client falls back to polling
        if (err instanceof ApiError) req.log.info({ code: err.code }, 'live stream ended: resource not visible');
        else req.log.warn({ err }, 'live stream ended by an error');
        return end();
      }
      if (!done) pollTimer = setTimeout(poll, this.#o.pollMs);
    };
    pollTimer = setTimeout(poll, this.#o.pollMs);
    return reply;
  }
}
