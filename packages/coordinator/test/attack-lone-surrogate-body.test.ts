/**
 * Attack (issue #20 item 9, coordinator side): `"\ud800"` is valid JSON, but a lone UTF-16 surrogate
 * has no UTF-8 form; the canonical encoding behind every digest (intents, policies, approvals)
 * refuses it. The REST and admin APIs therefore refuse such strings up front with a 422 naming the
 * field, instead of storing them (where they would later fail, or collide, in a digest).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockchainId } from '../src/directory.js';
import { loneSurrogateAt } from '../src/server.js';
import { type Harness, startHarness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('lone surrogates in request bodies', () => {
  it('a wallet name with a lone surrogate is a 422 naming the field, and no wallet is created', async () => {
    const base = `/api/v1/profiles/${h.profileId}`;
    const before = await h.req('GET', `${base}/wallets`, { key: h.apiKey });
    const r = await h.req('POST', `${base}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': randomUUID() },
      body: { blockchain_ids: [blockchainId('ethereum-mainnet')], name: 'treasury\ud800' },
    });
    expect(r.status).toBe(422);
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(r.body).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ field: 'body.name' }] });
    const after = await h.req('GET', `${base}/wallets`, { key: h.apiKey });
    expect(after.body.total).toBe(before.body.total);
    // the same name, well-formed, is accepted
    const ok = await h.req('POST', `${base}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': randomUUID() },
      body: { blockchain_ids: [blockchainId('ethereum-mainnet')], name: 'treasury\ufffd' },
    });
    expect(ok.status).toBe(201);
  });

  it('finds lone surrogates in nested values and keys, and nothing in well-formed ones', () => {
    expect(loneSurrogateAt({ a: [{ b: 'x\udc00' }] }, 'body')).toBe('body.a[0].b');
    expect(loneSurrogateAt({ 'k\ud800': 1 }, 'body')).toBe('body');
    expect(loneSurrogateAt({ a: ['🔑', 'plain', 1, null, true] }, 'body')).toBeUndefined();
  });
});
