/**
 * Live views of the admin API as Server-Sent Events (consumed by the dashboard's
 * `api/live.ts`): a stream opens with the resource's current JSON (the same body as its GET
 * route), then sends one event whenever that JSON changes, found by polling the store (so it sees
 * changes made by any process sharing the database), a `: keep-alive` comment every 15 s, and
 * ends when the resource is final, after 10 minutes, when the client goes, or when the
 * coordinator shuts down. At most 8 streams are open per session (else 429 `RATE_LIMITED`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';

/** Timings and limits of {@link LiveStreams} (defaults in brackets). */
export interface LiveOptions {
  /** Store poll interval, ms [500]. */
  pollMs: number;
  /** Keep-alive comment interval, ms [15 000]. */
  keepAliveMs: number;
  /** Longest stream, ms [600 000]. */
  maxMs: number;
  /** Open streams per session [8]. */
  perSession: number;
}

const DEFAULTS: LiveOptions = { pollMs: 500, keepAliveMs: 15_000, maxMs: 600_000, perSession: 8 };

/** OpenAPI response of a stream route (200, `text/event-stream`). */
export function eventStreamResponse(what: string) {
  return {
    description: `Server-Sent Events: each event's \`data\` is ${what} as JSON (the GET route's body), sent at once and whenever it changes; \`: keep-alive\` comments every 15 s; the stream ends when it is final, after 10 minutes, or when the client closes it.`,
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  };
}

/** The open streams of one fastify context; all end when the app closes. */
export class LiveStreams {
  readonly #open = new Map<string, number>();
  readonly #enders = new Set<() => void>();
  readonly #o: LiveOptions;

  constructor(app: FastifyInstance, options: Partial<LiveOptions> = {}) {
    this.#o = { ...DEFAULTS, ...options };
    app.addHook('preClose', async () => {
      for (const end of [...this.#enders]) end();
    });
  }

  /**
   * Stream `load()` to the client of `req` (whose `adminUser` the session hook set). The first
   * `load()` runs before the stream opens, so its errors (404) are problem+json answers.
   * @param final whether the JSON is final (the stream ends after sending it)
   * @throws ApiError RATE_LIMITED (429) with `perSession` streams of this session open already
   */
  async stream(
    req: FastifyRequest,
    reply: FastifyReply,
    load: () => Promise<unknown>,
    final: (v: unknown) => boolean,
  ): Promise<FastifyReply> {
    const session = req.adminUser!.session_id;
    const n = this.#open.get(session) ?? 0;
    if (n >= this.#o.perSession) {
      throw new ApiError('RATE_LIMITED', `at most ${this.#o.perSession} live streams per session`, undefined, {
        'retry-after': '5',
      });
    }
    let value = await load();
    this.#open.set(session, n + 1);
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
    const timers: NodeJS.Timeout[] = [];
    let pollTimer: NodeJS.Timeout | undefined;
    const end = () => {
      if (done) return;
      done = true;
      for (const t of timers) clearTimeout(t);
      clearTimeout(pollTimer);
      this.#enders.delete(end);
      const left = (this.#open.get(session) ?? 1) - 1;
      if (left <= 0) this.#open.delete(session);
      else this.#open.set(session, left);
      res.end();
    };
    this.#enders.add(end);
    res.on('close', end);
    res.write(`data: ${last}\n\n`);
    if (final(value)) {
      end();
      return reply;
    }
    timers.push(setTimeout(end, this.#o.maxMs));
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), this.#o.keepAliveMs);
    timers.push(keepAlive);
    const poll = async () => {
      if (done) return;
      try {
        value = await load();
        const text = JSON.stringify(value);
        if (text !== last && !done) {
          last = text;
          res.write(`data: ${text}\n\n`);
        }
        if (final(value)) return end();
      } catch (err) {
        // gone (deleted, scope changed) or the store failed: end; the client falls back to polling
        req.log.warn({ err }, 'live stream ended by an error');
        return end();
      }
      if (!done) pollTimer = setTimeout(poll, this.#o.pollMs);
    };
    pollTimer = setTimeout(poll, this.#o.pollMs);
    return reply;
  }
}
