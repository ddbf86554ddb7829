// A minimal Custodian webhook receiver (Node ≥ 20, no framework).
//
//   npx tsc -b packages/sdk                      # build @custodian/sdk once (from the repo root)
//   CUSTODIAN_URL=https://custody.example.com PORT=8443 node packages/sdk/examples/receiver.mjs
//
// It verifies every delivery over the RAW body bytes (never re-serialised JSON), answers 2xx fast
// (the coordinator allows 30 s), de-duplicates on X-Webhook-Event-ID (delivery is at-least-once),
// and logs and ignores event types it does not know (seed §6 rule 5). Put it behind TLS in
// production (the coordinator only delivers to https:// URLs outside development mode).
import { createServer } from 'node:http';
import { JwksCache, verifyWebhook, WebhookVerificationError } from '@custodian/sdk';

const base = process.env.CUSTODIAN_URL ?? 'http://127.0.0.1:8080';
const port = Number(process.env.PORT ?? 9000);
// One cache per process: honours the JWKS Cache-Control and refetches once on an unknown kid.
const jwks = new JwksCache({ url: new URL('/.well-known/jwks.json', base) });
// Use a durable store (a database unique key) in production; a Set is enough for the example.
const seen = new Set();

const handlers = {
  WALLET_CREATED: (e) => console.log('wallet created', e.data.wallet_id),
  TRANSFER_UPDATED: (e) => console.log('transfer', e.data.transfer_id, '→', e.data.status, e.data.external_id ?? ''),
};

const server = createServer((req, res) => {
  if (req.method !== 'POST') return res.writeHead(405).end();
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size > 1 << 20)
      req.destroy(); // bodies are small; refuse anything huge
    else chunks.push(c);
  });
  req.on('end', async () => {
    const raw = Buffer.concat(chunks);
    try {
      const { eventId, eventType, event } = await verifyWebhook(raw, req.headers, { jwks, toleranceSeconds: 300 });
      if (seen.has(eventId)) return res.writeHead(200).end('duplicate');
      seen.add(eventId);
      const handle = handlers[eventType];
      if (handle === undefined) console.log('ignoring unknown event type', eventType, eventId);
      else handle(event);
      res.writeHead(204).end();
    } catch (e) {
      if (e instanceof WebhookVerificationError) {
        console.warn('rejected delivery:', e.code);
        return res.writeHead(400).end(e.code);
      }
      console.error(e);
      res.writeHead(500).end();
    }
  });
});
server.listen(port, () => console.log(`webhook receiver on :${port}, keys from ${base}/.well-known/jwks.json`));
