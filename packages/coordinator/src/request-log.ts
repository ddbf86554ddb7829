/** The coordinator's request log: one line per HTTP request (#29), for fastify's `logController`. */
import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/**
 * Fastify's request log lines, made one per request (#29): no `incoming request` or `route not
 * found` line; at completion, one `request` line with method, route pattern (`url`; `(no route)`
 * when none matched — never the raw URL, so no id or query-string token), status and
 * `response_time_ms` (info; error with `err` when the reply failed). Never headers or bodies.
 */
export class OneLineRequestLog extends LogController {
  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    const fields = {
      method: request.method,
      url: request.routeOptions.url ?? '(no route)',
      status: reply.statusCode,
      response_time_ms: Math.round(reply.elapsedTime * 10) / 10,
    };
    if (error) reply.log.error({ ...fields, err: error }, 'request');
    else reply.log.info(fields, 'request');
  }
}
