/**
 * Attack (issue #26 item 12): an API key that leaks (a CI log, a laptop, a config repository) works
 * from anywhere on the internet. Custody integrators expect to pin a key to their servers' address
 * ranges, so that the leaked secret alone is not enough.
 *
 * Must hold: an API key may carry `allowed_cidrs` (IPv4 and IPv6 ranges, validated, normalised,
 * IPv4-mapped IPv6 counted as IPv4); a request with that key from an address outside every range —
 * `req.ip`: the socket peer, or the forwarded client behind a trusted proxy, never a header the
 * client picks — gets 403 `API_KEY_ADDRESS_NOT_ALLOWED` as problem+json, is audited, and does not
 * spend the key's rate-limit bucket. A key without `allowed_cidrs` works from anywhere.
 *
 * Every test starts its own coordinator (real fastify, real PGlite store) on 127.0.0.1.
 */
import { describe, expect, it } from 'vitest';
import type { CoordinatorOptions } from '../src/coordinator.js';
import { type Harness, type Json, startHarness } from './helpers.js';

async function withHarness(fn: (h: Harness) => Promise<void>, coordinator: Partial<CoordinatorOptions> = {}) {
  const h = await startHarness({ masterKey: false, coordinator });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

/** Create a key through the admin API (the harness Admin's session is step-up fresh). */
async function createKey(h: Harness, allowed_cidrs?: unknown) {
  return h.req('POST', '/admin/v1/api-keys', {
    token: h.adminToken,
    body: { profile_id: h.profileId, name: 'pinned', ...(allowed_cidrs === undefined ? {} : { allowed_cidrs }) },
  });
}

const wallets = (h: Harness, key: string, headers: Record<string, string> = {}) =>
  h.req('GET', `/api/v1/profiles/${h.profileId}/wallets`, { key, headers });

/** The problem detail of a refusal (never a 2xx body: it holds the key's secret). */
const r422 = (r: { status: number; body: Json }) => (r.status >= 400 ? String(r.body?.detail) : `status ${r.status}`);

function expectRefused(r: { status: number; headers: Headers; body: Json }) {
  expect(r.status, r.body?.code).toBe(403);
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.body.code).toBe('API_KEY_ADDRESS_NOT_ALLOWED');
}

describe('attack: a leaked API key used from outside its allowed ranges', () => {
  it('a key restricted to 10.0.0.0/8 is refused from 127.0.0.1 (403 problem+json, audited)', async () => {
    await withHarness(async (h) => {
      const k = await createKey(h, ['10.0.0.0/8']);
      expect(k.status, r422(k)).toBe(201);
      expect(k.body.allowed_cidrs).toEqual(['10.0.0.0/8']);
      const r = await wallets(h, k.body.api_key);
      expectRefused(r);
      expect(r.body.detail).not.toContain(k.body.api_key);
      // a spoofed X-Forwarded-For does not help: no proxy is trusted
      expectRefused(await wallets(h, k.body.api_key, { 'x-forwarded-for': '10.1.2.3' }));
      const audit = await h.c.db.query<{ details: { address: string } }>(
        `SELECT details FROM audit_log WHERE action = 'api_key.address_refused' AND target_id = $1`,
        [k.body.api_key_id],
      );
      expect(audit.length).toBeGreaterThanOrEqual(1);
      expect(audit[0]!.details.address).toBe('127.0.0.1');
      // the key's view shows the ranges
      const list = await h.req('GET', `/admin/v1/api-keys?profile_id=${h.profileId}`, { token: h.adminToken });
      const view = list.body.data.find((x: Json) => x.api_key_id === k.body.api_key_id);
      expect(view.allowed_cidrs).toEqual(['10.0.0.0/8']);
      // an unrestricted key and one that covers loopback still work from here
      expect((await wallets(h, h.apiKey)).status).toBe(200);
      const local = await createKey(h, ['127.0.0.0/8', '::1/128']);
      expect(local.status).toBe(201);
      expect((await wallets(h, local.body.api_key)).status).toBe(200);
    });
  });

  it('behind a trusted proxy the forwarded client address decides; IPv6 and IPv4-mapped IPv6 work', async () => {
    await withHarness(
      async (h) => {
        const v4 = await createKey(h, ['10.0.0.0/8']);
        const v6 = await createKey(h, ['2001:db8::/32']);
        expect(v4.status).toBe(201);
        expect(v6.status).toBe(201);
        const xff = (a: string) => ({ 'x-forwarded-for': a });
        expect((await wallets(h, v4.body.api_key, xff('10.200.0.7'))).status).toBe(200);
        expect((await wallets(h, v4.body.api_key, xff('::ffff:10.200.0.7'))).status).toBe(200);
        expectRefused(await wallets(h, v4.body.api_key, xff('11.0.0.1')));
        expectRefused(await wallets(h, v4.body.api_key, xff('2001:db8::1')));
        expect((await wallets(h, v6.body.api_key, xff('2001:db8:1234::9'))).status).toBe(200);
        expectRefused(await wallets(h, v6.body.api_key, xff('2001:db9::1')));
        expectRefused(await wallets(h, v6.body.api_key, xff('10.200.0.7')));
        // the proxy's own address is not the client: a request without X-Forwarded-For is from 127.0.0.1
        expectRefused(await wallets(h, v4.body.api_key));
      },
      { trustProxy: ['127.0.0.1'] },
    );
  });

  it('refused requests do not spend the key owner’s rate-limit bucket', async () => {
    await withHarness(
      async (h) => {
        const k = await createKey(h, ['10.0.0.0/8']);
        expect(k.status).toBe(201);
        // The attacker (127.0.0.1, not a trusted proxy hop) burns requests with the leaked key …
        for (let i = 0; i < 8; i++) await wallets(h, k.body.api_key, { 'x-forwarded-for': '11.0.0.1' });
        // … the owner behind the proxy still has the key's whole bucket.
        const owner = await wallets(h, k.body.api_key, { 'x-forwarded-for': '10.0.0.9' });
        expect(owner.status).toBe(200);
      },
      { trustProxy: ['127.0.0.1'], rateLimit: { max: 5 } },
    );
  });

  it('ranges are validated and normalised', async () => {
    await withHarness(async (h) => {
      for (const [bad, why] of [
        [['10.0.0.0/33'], 'prefix too long'],
        [['not-an-address'], 'not an address'],
        [['10.1.2.3/8'], 'host bits set'],
        [[], 'empty list'],
        [['300.1.1.1/32'], 'bad octet'],
      ] as const) {
        const r = await createKey(h, bad);
        expect(r.status, why).toBe(422);
        expect(r.body.code).toBe('VALIDATION_FAILED');
        expect(JSON.stringify(r.body.errors)).toContain('body.allowed_cidrs');
      }
      const ok = await createKey(h, ['192.168.1.7', '2001:DB8:0:0::/64', '::ffff:10.0.0.0/104', 'fe80::1']);
      expect(ok.status, r422(ok)).toBe(201);
      expect(ok.body.allowed_cidrs).toEqual(['192.168.1.7/32', '2001:db8::/64', '10.0.0.0/8', 'fe80::1/128']);
    });
  });
});
