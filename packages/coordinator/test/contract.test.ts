/**
 * The published contract: the OpenAPI 3.1 document validates, lists every route and every error
 * of the catalogue (STYLE.md item 10), documents the "not shown" decisions; and fast-check fuzzing
 * of bodies, headers and paths never produces a 5xx or an unhandled rejection.
 */
import { randomUUID } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockchainId } from '../src/directory.js';
import { ERROR_CATALOGUE, ROUTELESS_ERRORS } from '../src/errors.js';
import { type Harness, type Json, startHarness } from './helpers.js';

let h: Harness;
let doc: Json;
const unhandled: unknown[] = [];
const onUnhandled = (e: unknown) => unhandled.push(e);

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  h = await startHarness({
    coordinator: {
      rateLimit: { max: 100_000 },
      admin: { scrypt: { N: 1 << 10, r: 8, p: 1 }, loginRateLimit: { max: 5, windowMs: 60_000 } },
    },
  });
  doc = (await h.req('GET', '/api/openapi.json')).body;
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await h?.close();
});

describe('OpenAPI 3.1 document', () => {
  it('is served at /api/openapi.json and validates against the OpenAPI 3.1 schema', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const v = new Validator();
    const res = await v.validate(doc);
    expect(res.errors ?? []).toEqual([]);
    expect(res.valid).toBe(true);
  });

  it('lists every route of the coordinator with its method', () => {
    const visible = h.c.routes.filter((r) => !r.hidden);
    expect(visible.length).toBeGreaterThan(40);
    for (const r of visible) {
      const path = r.url.replace(/:([a-z_]+)/g, '{$1}');
      expect(doc.paths[path]?.[r.method.toLowerCase()], `${r.method} ${path}`).toBeDefined();
    }
    for (const p of [
      '/api/v1/profiles/{profile_id}/wallets',
      '/api/v1/profiles/{profile_id}/wallets/{wallet_id}/addresses',
      '/api/v1/profiles/{profile_id}/wallets/{wallet_id}/balances',
      '/api/v1/profiles/{profile_id}/wallets/{wallet_id}/balances/{asset_id}',
      '/api/v1/profiles/{profile_id}/assets',
      '/api/v1/profiles/{profile_id}/blockchains',
    ]) {
      expect(doc.paths[p]).toBeDefined();
    }
  });

  it('publishes every catalogue error under its status, as problem+json, and the Problem schema lists every code', () => {
    const described = new Map<string, Set<string>>();
    for (const item of Object.values<Json>(doc.paths)) {
      for (const op of Object.values<Json>(item)) {
        for (const [status, resp] of Object.entries<Json>(op.responses ?? {})) {
          if (Number(status) < 400) continue;
          expect(Object.keys(resp.content ?? {})).toEqual(['application/problem+json']);
          for (const m of (resp.description as string).matchAll(/`([A-Z_]+)`/g)) {
            described.set(m[1]!, (described.get(m[1]!) ?? new Set()).add(status));
          }
        }
      }
    }
    for (const [code, spec] of Object.entries(ERROR_CATALOGUE)) {
      if ((ROUTELESS_ERRORS as readonly string[]).includes(code)) {
        // Not tied to a route (parser, router, shutdown): published once under components.responses.
        const published = doc.components.responses[code];
        expect(published?.description, code).toContain(`${spec.status} \`${code}\``);
        expect(Object.keys(published.content)).toEqual(['application/problem+json']);
        continue;
      }
      expect(described.get(code)?.has(String(spec.status)), code).toBe(true);
    }
    expect([...described.keys()].every((c) => c in ERROR_CATALOGUE)).toBe(true);
    expect(doc.components.schemas.Problem.properties.code.enum.sort()).toEqual(Object.keys(ERROR_CATALOGUE).sort());
    for (const code of Object.keys(ERROR_CATALOGUE)) expect(doc.info.description).toContain(`\`${code}\``);
  });

  it('documents the decisions the seed leaves open and the idempotency headers', () => {
    const d: string = doc.info.description;
    for (const needle of [
      'Idempotency_key',
      'page_size',
      'maximum 200',
      '24 hours',
      'Retry-After',
      'problem+json',
      'non-hardened',
    ]) {
      expect(d).toContain(needle);
    }
    const post = doc.paths['/api/v1/profiles/{profile_id}/wallets'].post;
    expect(post.responses['201']).toBeDefined();
    const headers = post.parameters.filter((p: Json) => p.in === 'header').map((p: Json) => p.name.toLowerCase());
    expect(headers).toEqual(expect.arrayContaining(['idempotency-key', 'idempotency_key']));
    expect(post.security).toEqual([{ ApiKey: [] }]);
  });
});

describe('fuzzing (never a 5xx)', () => {
  const ETH = blockchainId('ethereum-mainnet');
  const json = fc.oneof(
    fc.jsonValue(),
    fc.record(
      {
        blockchain_ids: fc.array(fc.oneof(fc.uuid(), fc.string(), fc.constant(ETH), fc.integer())),
        name: fc.jsonValue(),
      },
      { requiredKeys: [] },
    ),
    fc.record(
      { blockchain_id: fc.oneof(fc.uuid(), fc.string(), fc.constant(ETH)), address_type: fc.string() },
      { requiredKeys: [] },
    ),
  );
  const segment = fc.oneof(
    fc.uuid(),
    fc.string(),
    fc.constantFrom('..', '%', '%00', '%ZZ', 'wallets', 'addresses', 'balances'),
  );

  it('request bodies (JSON and raw bytes) on the create routes', async () => {
    let wallet = '';
    const w = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': randomUUID() },
      body: { blockchain_ids: [ETH, blockchainId('bitcoin-mainnet')] },
    });
    wallet = w.body.wallet_id;
    await fc.assert(
      fc.asyncProperty(json, fc.string(), fc.boolean(), fc.boolean(), async (body, raw, useRaw, addresses) => {
        const path = addresses
          ? `/api/v1/profiles/${h.profileId}/wallets/${wallet}/addresses`
          : `/api/v1/profiles/${h.profileId}/wallets`;
        const r = await h.req('POST', path, {
          key: h.apiKey,
          headers: { 'idempotency-key': randomUUID(), ...(useRaw ? { 'content-type': 'application/json' } : {}) },
          ...(useRaw ? { raw } : { body }),
        });
        expect(r.status).toBeLessThan(500);
        if (r.status >= 400) expect(r.body.code).toBeTypeOf('string');
      }),
      { numRuns: 150 },
    );
  });

  it('headers (API key, idempotency key, content type)', async () => {
    const hdr = fc.string({ maxLength: 300 }).map((s) => s.replace(/[^\x21-\x7e]/g, 'a'));
    await fc.assert(
      fc.asyncProperty(hdr, hdr, hdr, fc.boolean(), async (key, idem, ct, realKey) => {
        const r = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
          key: realKey ? h.apiKey : key,
          headers: { 'idempotency-key': idem, 'content-type': ct || 'x/y' },
          raw: '{"blockchain_ids":[]}',
        });
        expect(r.status).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
  });

  it('paths and query strings under /api and /admin', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/api/v1/profiles/', '/admin/v1/', '/devices/v1/enrollments/', '/api/'),
        fc.array(segment, { maxLength: 5 }),
        fc.string(),
        fc.constantFrom('GET', 'POST', 'DELETE', 'PATCH', 'PUT'),
        fc.boolean(),
        async (prefix, segs, query, method, own) => {
          const parts = own && prefix === '/api/v1/profiles/' ? [h.profileId, ...segs] : segs;
          const path =
            prefix +
            parts.map((s) => encodeURIComponent(s)).join('/') +
            (query ? `?${encodeURIComponent(query)}=1&page=${encodeURIComponent(query)}` : '');
          const r = await h.req(method, path, { key: h.apiKey, token: h.adminToken });
          expect(r.status).toBeLessThan(500);
        },
      ),
      { numRuns: 200 },
    );
    expect(unhandled).toEqual([]);
  });
});

describe('login rate limit', () => {
  it('limits password guessing per client IP with 429 and Retry-After', async () => {
    const statuses: number[] = [];
    let last: Awaited<ReturnType<Harness['req']>> | undefined;
    for (let i = 0; i < 8; i++) {
      last = await h.req('POST', '/admin/v1/login', { body: { email: 'nobody@example.com', password: 'guess' } });
      statuses.push(last.status);
    }
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
    expect(last!.status).toBe(429);
    expect(last!.body.code).toBe('RATE_LIMITED');
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
