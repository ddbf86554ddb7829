/**
 * Webhook delivery end to end (seed §6 "Delivery and retries", §8, §4 webhook endpoints): a real
 * coordinator, a real local HTTPS receiver with a test certificate made by the openssl CLI at test
 * time (trusted through the worker's `ca` option, tests only), the injectable clock driving the
 * schedule, the SDK and jose verifying every received signature, key rotation with overlap,
 * redelivery, the outbox's transactional guarantees, and a restart between commit and delivery.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JwksCache, verifyWebhook } from '@custodian/sdk';
import { compactVerify, createLocalJWKSet } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCoordinator } from '../src/coordinator.js';
import { blockchainId } from '../src/directory.js';
import { emitEvent } from '../src/webhooks/outbox.js';
import { checkWebhookTarget, isNonPublicAddress } from '../src/webhooks/targets.js';
import { WebhookWorker } from '../src/webhooks/worker.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Harness, type Json, startHarness, testMasterKey } from './helpers.js';

interface Received {
  raw: Buffer;
  headers: Record<string, string | string[] | undefined>;
  /** Coordinator clock (ms) when the request arrived. */
  at: number;
}

/** A real HTTPS receiver whose answers the test scripts. */
class Receiver {
  server!: Server;
  url = '';
  received: Received[] = [];
  /** Answer of each next request: a status, or a function run before answering. */
  script: (number | (() => Promise<number>))[] = [];
  fallback = 200;
  constructor(private readonly now: () => number) {}

  async start(key: Buffer, cert: Buffer) {
    this.server = createServer({ key, cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        this.received.push({ raw: Buffer.concat(chunks), headers: req.headers, at: this.now() });
        const step = this.script.shift() ?? this.fallback;
        const status = typeof step === 'number' ? step : await step();
        if (status === 0) return; // never answer
        res.writeHead(status).end('ok');
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  close() {
    this.server.closeAllConnections();
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

let certDir = '';
let tls: { key: Buffer; cert: Buffer };

beforeAll(async () => {
  certDir = await mkdtemp(join(tmpdir(), 'custodian-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      join(certDir, 'key.pem'),
      '-out',
      join(certDir, 'cert.pem'),
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  tls = { key: await readFile(join(certDir, 'key.pem')), cert: await readFile(join(certDir, 'cert.pem')) };
});
afterAll(async () => {
  await rm(certDir, { recursive: true, force: true });
});

const ETH = blockchainId('ethereum-sepolia');
const BTC = blockchainId('bitcoin-testnet');

async function harness(extra: { timeoutMs?: number } = {}) {
  const h = await startHarness({
    coordinator: {
      webhooks: {
        runWorker: false,
        worker: { ca: tls.cert, ...(extra.timeoutMs !== undefined ? { timeoutMs: extra.timeoutMs } : {}) },
      },
    },
  });
  const now = () => Date.now() + h.clockOffset.ms;
  return { h, now };
}

async function register(h: Harness, url: string, event_types: string[]) {
  const r = await h.req('POST', `/admin/v1/profiles/${h.profileId}/webhooks`, {
    token: h.adminToken,
    body: { url, event_types },
  });
  expect(r.status).toBe(201);
  return r.body.webhook_id as string;
}

async function createWallet(h: Harness, blockchain_ids = [ETH]) {
  const r = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
    key: h.apiKey,
    headers: { 'Idempotency-Key': randomUUID() },
    body: { blockchain_ids, name: 'w' },
  });
  expect(r.status).toBe(201);
  return r.body.wallet_id as string;
}

/** Verify a received delivery with the SDK (fresh cache) and independently with jose. */
async function verifyBoth(h: Harness, r: Received, nowMs: number) {
  const jwksUrl = `${h.url}/.well-known/jwks.json`;
  const sdk = await verifyWebhook(r.raw, r.headers, {
    jwks: new JwksCache({ url: jwksUrl, now: () => nowMs }),
    now: () => nowMs,
  });
  const jwks = (await h.req('GET', '/.well-known/jwks.json')).body;
  const sig = r.headers['x-webhook-signature'] as string;
  const [hdr, empty, s] = sig.split('.');
  expect(empty).toBe('');
  const payload = Buffer.concat([Buffer.from(`${r.headers['x-webhook-timestamp']}.`), r.raw]).toString('base64url');
  const j = await compactVerify(`${hdr}.${payload}.${s}`, createLocalJWKSet(jwks), { algorithms: ['ES256'] });
  expect(j.protectedHeader.alg).toBe('ES256');
  expect(j.protectedHeader.kid).toBe(sdk.kid);
  return sdk;
}

const notifications = async (h: Harness, webhookId: string, q = '') =>
  (await h.req('GET', `/api/v1/profiles/${h.profileId}/webhooks/${webhookId}/notifications${q}`, { key: h.apiKey }))
    .body as Json;

describe('delivery schedule (injectable clock, real HTTPS receiver)', () => {
  let h: Harness;
  let now: () => number;
  let rx: Receiver;
  beforeEach(async () => {
    ({ h, now } = await harness());
    rx = new Receiver(now);
    await rx.start(tls.key, tls.cert);
    return async () => {
      await rx.close();
      await h.close();
    };
  });

  it('attempts at 0 / 30 s / 2 min / 10 min / 30 min after the previous, FAILED after five, then redeliver works', async () => {
    const wh = await register(h, rx.url, ['WALLET_CREATED']);
    await createWallet(h);
    const worker = h.c.webhooks.worker;
    rx.fallback = 503;
    const t0 = now();
    expect(await worker.runOnce()).toBe(1);
    const steps = [30_000, 120_000, 600_000, 1_800_000];
    for (const d of steps) {
      h.clockOffset.ms += d - 1000;
      expect(await worker.runOnce()).toBe(0); // not yet due one second early
      h.clockOffset.ms += 1000;
      expect(await worker.runOnce()).toBe(1);
    }
    // Each gap is the schedule's step plus the real time the previous attempt took (well under
    // 5 s even on a loaded machine); the "not yet due one second early" checks above bound it below.
    const at = rx.received.map((r) => r.at);
    expect(at).toHaveLength(5);
    expect(at[0]! - t0).toBeLessThan(5000);
    for (const [i, d] of steps.entries()) {
      const gap = at[i + 1]! - at[i]!;
      expect(gap).toBeGreaterThanOrEqual(d);
      expect(gap).toBeLessThan(d + 5000);
    }
    h.clockOffset.ms += 24 * 3600_000;
    expect(await worker.runOnce()).toBe(0); // FAILED: no automatic retry
    const list = await notifications(h, wh);
    expect(list.total).toBe(1);
    const n = list.data[0];
    expect(n).toMatchObject({ status: 'FAILED', attempt_count: 5, last_response_code: 503, next_attempt_at: null });
    expect(n.attempts.map((a: Json) => a.response_code)).toEqual([503, 503, 503, 503, 503]);
    expect((await notifications(h, wh, '?status=FAILED')).total).toBe(1);
    expect((await notifications(h, wh, '?status=DELIVERED')).total).toBe(0);
    // The same event every time: one event_id, identical body bytes, a fresh timestamp each attempt.
    const ids = new Set(rx.received.map((r) => r.headers['x-webhook-event-id']));
    expect(ids.size).toBe(1);
    expect(new Set(rx.received.map((r) => r.raw.toString('hex'))).size).toBe(1);
    expect(new Set(rx.received.map((r) => r.headers['x-webhook-timestamp'])).size).toBe(5);
    // Redeliver (admin) — only a FAILED notification.
    rx.fallback = 200;
    const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD); // the 24 h jump expired the session
    const red = await h.req(
      'POST',
      `/admin/v1/profiles/${h.profileId}/webhooks/${wh}/notifications/${n.notification_id}/redeliver`,
      { token },
    );
    expect(red.status).toBe(200);
    expect(red.body).toMatchObject({ status: 'PENDING', redeliveries: 1 });
    expect(await worker.runOnce()).toBe(1);
    const one = (
      await h.req('GET', `/api/v1/profiles/${h.profileId}/webhooks/${wh}/notifications/${n.notification_id}`, {
        key: h.apiKey,
      })
    ).body;
    expect(one).toMatchObject({ status: 'DELIVERED', attempt_count: 6, last_response_code: 200 });
    expect(one.attempts.at(-1)).toMatchObject({ attempt: 6, response_code: 200, error: null });
    expect(rx.received.at(-1)!.headers['x-webhook-event-id']).toBe(n.event_id);
    const again = await h.req(
      'POST',
      `/admin/v1/profiles/${h.profileId}/webhooks/${wh}/notifications/${n.notification_id}/redeliver`,
      { token },
    );
    expect(again.status).toBe(409);
    // Every delivery carried the five headers and a signature both verifiers accept.
    for (const r of rx.received) {
      expect(r.headers['content-type']).toBe('application/json');
      const v = await verifyBoth(h, r, Number(r.headers['x-webhook-timestamp']) * 1000);
      expect(v.eventId).toBe(n.event_id);
      expect(v.event).toMatchObject({ event_type: 'WALLET_CREATED', profile_id: h.profileId });
      expect(v.event.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });

  it('a late success is DELIVERED; a 31-second answer fails and a 29-second one succeeds (clock-measured)', async () => {
    const wh = await register(h, rx.url, ['WALLET_CREATED']);
    await createWallet(h);
    const worker = h.c.webhooks.worker;
    rx.script = [
      500,
      async () => {
        h.clockOffset.ms += 31_000; // the receiver "takes" 31 s
        return 200;
      },
      async () => {
        h.clockOffset.ms += 29_000;
        return 204;
      },
    ];
    expect(await worker.runOnce()).toBe(1);
    h.clockOffset.ms += 30_000;
    expect(await worker.runOnce()).toBe(1);
    let n = (await notifications(h, wh)).data[0];
    expect(n.status).toBe('PENDING');
    expect(n.attempts[1]).toMatchObject({ response_code: 200 });
    expect(n.attempts[1].error).toMatch(/answered after 31\d{3} ms \(limit 30000 ms\)/);
    h.clockOffset.ms += 120_000 - 31_000;
    expect(await worker.runOnce()).toBe(1);
    n = (await notifications(h, wh)).data[0];
    expect(n).toMatchObject({ status: 'DELIVERED', attempt_count: 3, last_response_code: 204 });
    expect(n.delivered_at).not.toBeNull();
  });

  it('one notification per subscribed webhook; unsubscribed webhooks get none', async () => {
    const a = await register(h, rx.url, ['WALLET_CREATED', 'ADDRESS_CREATED']);
    const b = await register(h, `${rx.url}?b`, ['ADDRESS_CREATED']);
    const c = await register(h, `${rx.url}?c`, ['TRANSFER_CREATED']);
    await createWallet(h, [ETH, BTC]); // WALLET_CREATED + 2 × ADDRESS_CREATED
    expect((await notifications(h, a)).total).toBe(3);
    expect((await notifications(h, b)).total).toBe(2);
    expect((await notifications(h, c)).total).toBe(0);
    expect(await h.c.webhooks.worker.runOnce()).toBe(5);
    const events = new Set(rx.received.map((r) => r.headers['x-webhook-event-id']));
    expect(events.size).toBe(3);
  });
});

describe('real timeout (scaled: 300 ms instead of 30 s, configurable for tests)', () => {
  it('no answer within the timeout fails the attempt', async () => {
    const { h, now } = await harness({ timeoutMs: 300 });
    const rx = new Receiver(now);
    await rx.start(tls.key, tls.cert);
    try {
      rx.script = [0];
      const wh = await register(h, rx.url, ['WALLET_CREATED']);
      await createWallet(h);
      expect(await h.c.webhooks.worker.runOnce()).toBe(1);
      const n = (await notifications(h, wh)).data[0];
      expect(n).toMatchObject({ status: 'PENDING', attempt_count: 1, last_response_code: null });
      expect(n.last_error).toMatch(/no answer within 300 ms/);
    } finally {
      await rx.close();
      await h.close();
    }
  });
});

describe('webhook API (seed §4), JWKS, rotation', () => {
  let h: Harness;
  let now: () => number;
  let rx: Receiver;
  beforeAll(async () => {
    ({ h, now } = await harness());
    rx = new Receiver(now);
    await rx.start(tls.key, tls.cert);
  });
  afterAll(async () => {
    await rx.close();
    await h.close();
  });

  it('lists webhooks and notifications under the API key; 403 for another profile, 404 for unknown ids', async () => {
    const wh = await register(h, rx.url, ['WALLET_CREATED']);
    const list = await h.req('GET', `/api/v1/profiles/${h.profileId}/webhooks`, { key: h.apiKey });
    expect(list.status).toBe(200);
    expect(list.body.data.map((w: Json) => w.webhook_id)).toContain(wh);
    const one = await h.req('GET', `/api/v1/profiles/${h.profileId}/webhooks/${wh}`, { key: h.apiKey });
    expect(one.body).toMatchObject({ webhook_id: wh, url: rx.url, event_types: ['WALLET_CREATED'] });
    expect(
      (await h.req('GET', `/api/v1/profiles/${h.profileId}/webhooks/${randomUUID()}`, { key: h.apiKey })).status,
    ).toBe(404);
    expect(
      (
        await h.req('GET', `/api/v1/profiles/${h.profileId}/webhooks/${wh}/notifications/${randomUUID()}`, {
          key: h.apiKey,
        })
      ).status,
    ).toBe(404);
    expect((await h.req('GET', `/api/v1/profiles/${randomUUID()}/webhooks`, { key: h.apiKey })).status).toBe(403);
    expect((await h.req('GET', `/api/v1/profiles/${h.profileId}/webhooks`)).status).toBe(401);
    const jwks = await h.req('GET', '/.well-known/jwks.json');
    expect(jwks.status).toBe(200);
    expect(jwks.headers.get('cache-control')).toBe('public, max-age=300');
    expect(jwks.body.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(jwks.body.keys[0].d).toBeUndefined();
    const doc = (await h.req('GET', '/api/openapi.json')).body;
    expect(Object.keys(doc.webhooks)).toHaveLength(38);
    expect(doc.webhooks.WALLET_CREATED.post.description).toMatch(/Trigger:/);
  });

  it('rotation publishes the new key before it signs, and a cached JWKS keeps verifying across it', async () => {
    const wh = await register(h, rx.url, ['WALLET_UPDATED']);
    const worker = h.c.webhooks.worker;
    const before = (await h.req('GET', '/.well-known/jwks.json')).body.keys.map((k: Json) => k.kid);
    const rot = await h.req('POST', '/admin/v1/webhook-signing-keys/rotate', {
      token: h.adminToken,
      body: { lead_seconds: 120 },
    });
    expect(rot.status).toBe(201);
    expect(rot.body.state).toBe('PUBLISHED');
    const newKid = rot.body.kid as string;
    expect(
      (await h.req('POST', '/admin/v1/webhook-signing-keys/rotate', { token: h.adminToken, body: {} })).status,
    ).toBe(409);
    // A receiver caches the JWKS now (old + new key), max-age 300 s.
    const cache = new JwksCache({ url: `${h.url}/.well-known/jwks.json`, now });
    const cached = await cache.get();
    expect(cached.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([...before, newKid]));
    const walletId = await createWallet(h);
    const rename = async (name: string) =>
      expect(
        (
          await h.req('PATCH', `/admin/v1/profiles/${h.profileId}/wallets/${walletId}`, {
            token: h.adminToken,
            body: { name },
          })
        ).status,
      ).toBe(200);
    await rename('before activation');
    await worker.runOnce();
    h.clockOffset.ms += 121_000; // the new key now signs; still inside the receiver's max-age
    await rename('after activation');
    await worker.runOnce();
    const got = rx.received.filter((r) => r.headers['x-webhook-event-type'] === 'WALLET_UPDATED');
    expect(got).toHaveLength(2);
    const kids: string[] = [];
    for (const r of got) kids.push((await verifyWebhook(r.raw, r.headers, { jwks: cache, now })).kid);
    expect(kids[0]).toBe(before[0]);
    expect(kids[1]).toBe(newKid);
    expect(cache.fetches).toBe(1); // never needed a refetch
    // The old key stays published during the overlap (24 h), then leaves the JWKS.
    const keys = (await h.req('GET', '/admin/v1/webhook-signing-keys', { token: h.adminToken })).body;
    expect(keys.find((k: Json) => k.kid === before[0]).state).toBe('RETIRED');
    expect((await h.req('GET', '/.well-known/jwks.json')).body.keys.map((k: Json) => k.kid)).toContain(before[0]);
    h.clockOffset.ms += 24 * 3600_000;
    expect((await h.req('GET', '/.well-known/jwks.json')).body.keys.map((k: Json) => k.kid)).toEqual([newKid]);
    expect((await notifications(h, wh)).data.every((n: Json) => n.status === 'DELIVERED')).toBe(true);
  });
});

describe('outbox guarantees', () => {
  it('no event for a rolled-back change (application error and explicit rollback)', async () => {
    const { h } = await harness();
    try {
      await register(h, 'https://127.0.0.1:1/x', ['WALLET_CREATED', 'ADDRESS_CREATED', 'WALLET_GROUP_CREATED']);
      const count = async () =>
        (await h.c.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_events'))[0]!.n;
      const n0 = await count();
      const bad = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
        key: h.apiKey,
        headers: { 'Idempotency-Key': randomUUID() },
        body: { blockchain_ids: [ETH, randomUUID()] },
      });
      expect(bad.status).toBe(422);
      await expect(
        h.c.db.tx(async (q) => {
          await emitEvent(q, () => new Date(), {
            profileId: h.profileId,
            type: 'WALLET_UPDATED',
            data: { wallet_id: 'x' },
          });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await count()).toBe(n0);
      expect((await h.c.db.query('SELECT 1 FROM webhook_notifications')).length).toBe(0);
      await createWallet(h);
      expect(await count()).toBe(n0 + 2);
    } finally {
      await h.close();
    }
  });

  it('a coordinator stopped between commit and delivery delivers after restart (same data folder)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'custodian-restart-'));
    const offset = 0;
    const clock = () => new Date(Date.now() + offset);
    const rx = new Receiver(() => clock().getTime());
    await rx.start(tls.key, tls.cert);
    const opts = {
      dataDir: dir,
      mode: 'development' as const,
      listen: { port: 0 },
      logger: false,
      clock,
      admin: { scrypt: { N: 1 << 10, r: 8, p: 1 } },
      webhooks: { runWorker: false, worker: { ca: tls.cert } },
    };
    try {
      const c1 = await createCoordinator(opts);
      const profileId = (await c1.wallets.profiles.createProfile('p')).profile_id;
      await c1.db.query(
        `INSERT INTO webhooks (webhook_id, profile_id, url, event_types, created_at, updated_at)
         VALUES ($1,$2,$3,'["WALLET_CREATED"]'::jsonb,now(),now())`,
        [randomUUID(), profileId, rx.url],
      );
      await c1.signers.masterKeys.insertMasterKey(testMasterKey());
      const w = await c1.wallets.store.createWallet(profileId, { blockchain_ids: [ETH] }); // committed
      const kid1 = (await c1.webhooks.keys.jwks()).keys[0]!.kid;
      await c1.stop(); // the process goes away before any delivery
      expect(rx.received).toHaveLength(0);
      const c2 = await createCoordinator(opts);
      try {
        expect(await c2.webhooks.worker.runOnce()).toBe(1);
        expect(rx.received).toHaveLength(1);
        const body = JSON.parse(rx.received[0]!.raw.toString());
        expect(body.data.wallet_id).toBe(w.wallet_id);
        // The signing key survived the restart (KEK file in the data folder).
        expect((await c2.webhooks.keys.jwks()).keys[0]!.kid).toBe(kid1);
        expect((await readFile(join(dir, 'webhook-kek.key'))).length).toBe(32);
      } finally {
        await c2.stop();
      }
    } finally {
      await rx.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a worker that died mid-attempt: the lease expires, the attempt is recorded as interrupted, the next one runs', async () => {
    const { h, now } = await harness({ timeoutMs: 200 });
    const rx = new Receiver(now);
    await rx.start(tls.key, tls.cert);
    try {
      const wh = await register(h, rx.url, ['WALLET_CREATED']);
      await createWallet(h);
      // A worker whose process "dies": it claims, then its delivery never records (receiver hangs, we abandon it).
      rx.script = [0];
      const dying = new WebhookWorker({
        db: h.c.db,
        keys: h.c.webhooks.keys,
        options: { ...h.c.webhooks.worker.opts, timeoutMs: 60_000 },
      });
      const dyingRun = dying.runOnce();
      await new Promise((r) => setTimeout(r, 300));
      while (rx.received.length === 0) await new Promise((r) => setTimeout(r, 20));
      expect(await h.c.webhooks.worker.runOnce()).toBe(0); // leased: nobody else sends it
      h.clockOffset.ms += 60_000 + 30_000 + 1;
      expect(await h.c.webhooks.worker.runOnce()).toBe(1);
      const n = (await notifications(h, wh)).data[0];
      expect(n.status).toBe('DELIVERED');
      expect(n.attempts[0].error).toMatch(/interrupted/);
      expect(n.attempts[1]).toMatchObject({ attempt: 2, response_code: 200 });
      await rx.close();
      // The abandoned delivery ends now; its late result is discarded (the claim is no longer its own).
      await dyingRun;
      expect((await notifications(h, wh)).data[0]).toMatchObject({ status: 'DELIVERED', attempt_count: 2 });
    } finally {
      await rx.close();
      await h.close();
    }
  });
});

describe('registration targets (SSRF)', () => {
  it('https only; http to loopback in development only; production refuses non-public addresses', async () => {
    const pub = async () => ['93.184.215.14'];
    const priv = async () => ['93.184.215.14', '10.1.2.3'];
    await expect(checkWebhookTarget('https://hooks.example.com/x', 'production', pub)).resolves.toBe(
      'https://hooks.example.com/x',
    );
    await expect(checkWebhookTarget('https://hooks.example.com/x', 'production', priv)).rejects.toThrow(/non-public/);
    await expect(checkWebhookTarget('https://127.0.0.1/x', 'production', pub)).rejects.toThrow(/non-public/);
    await expect(checkWebhookTarget('https://[::1]/x', 'production', pub)).rejects.toThrow(/non-public/);
    await expect(checkWebhookTarget('http://127.0.0.1:9/x', 'production', pub)).rejects.toThrow(/https/);
    await expect(checkWebhookTarget('http://127.0.0.1:9/x', 'development', pub)).resolves.toBeDefined();
    await expect(checkWebhookTarget('http://example.com/x', 'development', pub)).rejects.toThrow(/https/);
    await expect(checkWebhookTarget('https://u:p@example.com/x', 'development', pub)).rejects.toThrow(/credentials/);
    await expect(
      checkWebhookTarget('https://nx.invalid/x', 'production', async () => {
        throw new Error('ENOTFOUND');
      }),
    ).rejects.toThrow(/resolve/);
    for (const ip of [
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::ffff:127.0.0.1',
      'fd00::1',
      'fe80::1',
    ]) {
      expect(isNonPublicAddress(ip), ip).toBe(true);
    }
    for (const ip of ['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111'])
      expect(isNonPublicAddress(ip), ip).toBe(false);
  });
});
