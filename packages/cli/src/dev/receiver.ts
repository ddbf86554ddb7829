/**
 * The development webhook receiver: a plain HTTP server that verifies every delivery with the SDK's
 * `verifyWebhook` (detached JWS ES256 over `<timestamp>.<raw body>`, keys from the coordinator's
 * JWKS), de-duplicates on the event id, prints each verified event as one JSON line on stdout, and
 * answers 400 with the error code for anything that does not verify.
 */
import { createServer, type Server } from 'node:http';
import { JwksCache, verifyWebhook, WebhookVerificationError } from '@custodian/sdk';

/** Start the receiver; resolves with the server once it listens. */
export async function startReceiver(opts: {
  coordinatorUrl: string;
  port: number;
  host?: string;
  /** Called with each verified, first-seen event (default: print one JSON line). */
  onEvent?: (e: { event_id: string; event_type: string; data: Record<string, unknown> }) => void;
  /** Called with the code of each rejected delivery. */
  onRejected?: (code: string) => void;
}): Promise<Server> {
  const jwks = new JwksCache({ url: new URL('/.well-known/jwks.json', opts.coordinatorUrl) });
  const seen = new Set<string>();
  const server = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > 1 << 20) req.destroy();
      else chunks.push(c);
    });
    req.on('end', async () => {
      const raw = Buffer.concat(chunks);
      try {
        const { eventId, eventType, event } = await verifyWebhook(raw, req.headers, { jwks, toleranceSeconds: 300 });
        const duplicate = seen.has(eventId);
        seen.add(eventId);
        const e = {
          event_id: eventId,
          event_type: eventType,
          data: (event as { data?: Record<string, unknown> }).data ?? {},
        };
        if (!duplicate) {
          if (opts.onEvent) opts.onEvent(e);
          else process.stdout.write(`${JSON.stringify({ verified: true, ...e })}\n`);
        }
        res.writeHead(204).end();
      } catch (e) {
        const code = e instanceof WebhookVerificationError ? e.code : 'INTERNAL';
        if (opts.onRejected) opts.onRejected(code);
        else process.stdout.write(`${JSON.stringify({ verified: false, code })}\n`);
        res.writeHead(e instanceof WebhookVerificationError ? 400 : 500).end(code);
      }
    });
  });
  // a port already taken is an error (EADDRINUSE), not a listen that never completes
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
