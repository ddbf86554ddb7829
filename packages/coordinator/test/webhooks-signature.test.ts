/**
 * Webhook signatures (seed §6 "Signature"): our committed sign/verify vectors
 * (test-vectors/webhooks/vectors.json), the RFC 7515 appendix A.3 ES256 example through jose,
 * independent verification with jose's compact JWS verification (payload re-attached), the SDK's
 * rejections (tampered body, timestamp, header, kid; expired timestamps), and its JWKS cache
 * (Cache-Control, one refresh on an unknown kid) against a real local HTTP server.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { JwksCache, maxAgeMs, verifyWebhook, WebhookVerificationError } from '@custodian/sdk';
import { compactVerify, importJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { p256Thumbprint, signWebhook } from '../src/webhooks/signature.js';

interface Vectors {
  key: { d: string; jwk: { kty: 'EC'; crv: 'P-256'; x: string; y: string; kid: string } };
  jwks: { keys: object[] };
  valid: { timestamp: string; body: string; headers: Record<string, string>; signing_input_b64: string }[];
  invalid: { reason: string; code: string; timestamp: string; body: string; signature: string }[];
}
const V: Vectors = JSON.parse(
  readFileSync(new URL('../../../test-vectors/webhooks/vectors.json', import.meta.url), 'utf8'),
);
const enc = new TextEncoder();

/** A real HTTP server publishing a JWKS, whose content and Cache-Control the test changes. */
let server: Server;
let jwksUrl = '';
const served = { jwks: V.jwks as { keys: object[] }, cacheControl: 'public, max-age=300', hits: 0 };
beforeAll(async () => {
  server = createServer((_req, res) => {
    served.hits++;
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': served.cacheControl });
    res.end(JSON.stringify(served.jwks));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const at = (ts: string) => () => Number(ts) * 1000;

describe('committed vectors (test-vectors/webhooks)', () => {
  it('kid is the RFC 7638 thumbprint of the vector key', () => {
    expect(p256Thumbprint(V.key.jwk)).toBe(V.key.jwk.kid);
  });

  it('our signer reproduces every valid vector byte for byte (RFC 6979 deterministic ES256)', () => {
    const d = new Uint8Array(Buffer.from(V.key.d, 'base64url'));
    for (const v of V.valid) {
      expect(signWebhook(d, V.key.jwk.kid, v.timestamp, enc.encode(v.body))).toBe(v.headers['X-Webhook-Signature']);
      const [h, empty, s] = v.headers['X-Webhook-Signature']!.split('.');
      expect(empty).toBe('');
      expect(JSON.parse(Buffer.from(h!, 'base64url').toString())).toEqual({ alg: 'ES256', kid: V.key.jwk.kid });
      expect(Buffer.from(s!, 'base64url')).toHaveLength(64);
      expect(`${h}.${Buffer.from(`${v.timestamp}.${v.body}`).toString('base64url')}`).toBe(
        Buffer.from(v.signing_input_b64, 'base64url').toString(),
      );
    }
  });

  it('jose verifies every valid vector as a compact JWS with the payload re-attached', async () => {
    const key = await importJWK(V.key.jwk, 'ES256');
    for (const v of V.valid) {
      const [h, , s] = v.headers['X-Webhook-Signature']!.split('.');
      const jws = `${h}.${Buffer.from(`${v.timestamp}.${v.body}`, 'utf8').toString('base64url')}.${s}`;
      const r = await compactVerify(jws, key, { algorithms: ['ES256'] });
      expect(new TextDecoder().decode(r.payload)).toBe(`${v.timestamp}.${v.body}`);
      expect(r.protectedHeader).toEqual({ alg: 'ES256', kid: V.key.jwk.kid });
    }
  });

  it('the SDK accepts every valid vector and exposes the event id', async () => {
    for (const v of V.valid) {
      const r = await verifyWebhook(enc.encode(v.body), v.headers, { jwks: jwksUrl, now: at(v.timestamp) });
      expect(r.eventId).toBe(v.headers['X-Webhook-Event-ID']);
      expect(r.event.event_id).toBe(r.eventId);
      expect(r.eventType).toBe(v.headers['X-Webhook-Event-Type']);
      expect(r.kid).toBe(V.key.jwk.kid);
    }
  });

  it('the SDK rejects every invalid vector with its code', async () => {
    const v0 = V.valid[0]!;
    for (const bad of V.invalid) {
      const headers = {
        ...v0.headers,
        'X-Webhook-Timestamp': bad.timestamp,
        'X-Webhook-Signature': bad.signature,
      };
      const p = verifyWebhook(enc.encode(bad.body), headers, {
        jwks: new JwksCache({ url: jwksUrl, now: at(bad.timestamp) }),
        now: at(bad.timestamp),
      });
      await expect(p, bad.reason).rejects.toMatchObject({ name: 'WebhookVerificationError', code: bad.code });
    }
  });

  it('rejects expired and future timestamps (default tolerance 5 min) and missing headers', async () => {
    const v = V.valid[0]!;
    const t = Number(v.timestamp) * 1000;
    const opts = (ms: number) => ({ jwks: jwksUrl, now: () => ms });
    await expect(verifyWebhook(v.body, v.headers, opts(t + 300_000))).resolves.toBeDefined();
    await expect(verifyWebhook(v.body, v.headers, opts(t + 301_000))).rejects.toMatchObject({
      code: 'TIMESTAMP_OUT_OF_TOLERANCE',
    });
    await expect(verifyWebhook(v.body, v.headers, opts(t - 301_000))).rejects.toMatchObject({
      code: 'TIMESTAMP_OUT_OF_TOLERANCE',
    });
    await expect(
      verifyWebhook(v.body, v.headers, { ...opts(t + 61_000), toleranceSeconds: 60 }),
    ).rejects.toBeInstanceOf(WebhookVerificationError);
    for (const h of ['X-Webhook-Signature', 'X-Webhook-Timestamp', 'X-Webhook-Event-ID', 'X-Webhook-Event-Type']) {
      const headers: Record<string, string> = { ...v.headers };
      delete headers[h];
      await expect(verifyWebhook(v.body, headers, opts(t))).rejects.toMatchObject({ code: 'MISSING_HEADER' });
    }
    const mismatch = { ...v.headers, 'X-Webhook-Event-ID': '00000000-0000-4000-8000-000000000000' };
    await expect(verifyWebhook(v.body, mismatch, opts(t))).rejects.toMatchObject({ code: 'HEADER_MISMATCH' });
  });
});

describe('RFC 7515 appendix A.3 (ES256)', () => {
  it('the specification example verifies with jose, and a flipped signature does not', async () => {
    const key = await importJWK(
      {
        kty: 'EC',
        crv: 'P-256',
        x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
        y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
      },
      'ES256',
    );
    const jws =
      'eyJhbGciOiJFUzI1NiJ9.' +
      'eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.' +
      'DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q';
    const r = await compactVerify(jws, key, { algorithms: ['ES256'] });
    expect(new TextDecoder().decode(r.payload)).toContain('"iss":"joe"');
    await expect(compactVerify(`${jws.slice(0, -1)}A`, key, { algorithms: ['ES256'] })).rejects.toThrow();
  });
});

describe('SDK JWKS cache', () => {
  it('honours Cache-Control max-age / no-store and refreshes once on an unknown kid', async () => {
    expect(maxAgeMs('public, max-age=300', 1, 1e9)).toBe(300_000);
    expect(maxAgeMs('max-age=60, s-maxage=10', 1, 1e9)).toBe(10_000);
    expect(maxAgeMs('no-store', 5, 1e9)).toBe(0);
    expect(maxAgeMs(null, 5, 1e9)).toBe(5);
    let now = 1_000_000;
    const cache = new JwksCache({ url: jwksUrl, now: () => now });
    served.cacheControl = 'public, max-age=300';
    await cache.get();
    await cache.get();
    expect(cache.fetches).toBe(1);
    now += 299_000;
    await cache.get();
    expect(cache.fetches).toBe(1);
    now += 2_000;
    await cache.get();
    expect(cache.fetches).toBe(2);
    // Unknown kid: exactly one refresh, then UNKNOWN_KID; within the cooldown no further fetch.
    const v = V.valid[0]!;
    const [, , s] = v.headers['X-Webhook-Signature']!.split('.');
    const h = Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'rotated-away' })).toString('base64url');
    const headers = { ...v.headers, 'X-Webhook-Signature': `${h}..${s}` };
    const vnow = () => Number(v.timestamp) * 1000;
    const c2 = new JwksCache({ url: jwksUrl, now: vnow });
    await expect(verifyWebhook(v.body, headers, { jwks: c2, now: vnow })).rejects.toMatchObject({
      code: 'UNKNOWN_KID',
    });
    expect(c2.fetches).toBe(2);
    await expect(verifyWebhook(v.body, headers, { jwks: c2, now: vnow })).rejects.toMatchObject({
      code: 'UNKNOWN_KID',
    });
    expect(c2.fetches).toBe(2);
    served.cacheControl = 'no-store';
    const c3 = new JwksCache({ url: jwksUrl, now: vnow });
    await c3.get();
    await c3.get();
    expect(c3.fetches).toBe(2);
    served.cacheControl = 'public, max-age=300';
  });
});
