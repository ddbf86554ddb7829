/**
 * The consolidation admin route (transfers/self-spend.ts) against a Viewer: a role that may only
 * look cannot move a wallet's coins, even to the wallet's own address — 403 ROLE_FORBIDDEN and no
 * transfer row; an Admin reaching the same route gets the route's own answer (here 422 or 503:
 * no UTXO to consolidate / no node), never a role refusal.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { blockchainId } from '../src/directory.js';
import { type Harness, startHarness } from './helpers.js';

const LTC = blockchainId('litecoin-regtest');
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('consolidation route roles', () => {
  it('attack: a Viewer cannot create a consolidation (403, nothing written); an Admin is not refused by role', async () => {
    h = await startHarness({ coordinator: { transfers: { runPipeline: false } } });
    const w = await h.req('POST', `/api/v1/profiles/${h.profileId}/wallets`, {
      key: h.apiKey,
      headers: { 'Idempotency-Key': randomUUID() },
      body: { blockchain_ids: [LTC] },
    });
    expect(w.status, JSON.stringify(w.body)).toBe(201);
    const email = `viewer-${randomUUID().slice(0, 8)}@example.com`;
    const password = 'a long enough password 123';
    const u = await h.req('POST', '/admin/v1/users', {
      token: h.adminToken,
      body: { email, name: 'viewer', role: 'VIEWER', password },
    });
    expect(u.status).toBe(201);
    const viewer = await h.stepUp(await h.login(email, password), password);
    const path = `/admin/v1/profiles/${h.profileId}/wallets/${w.body.wallet_id}/consolidations`;
    const body = { blockchain_id: LTC, max_inputs: 10 };
    const refused = await h.req('POST', path, { token: viewer, body });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('ROLE_FORBIDDEN');
    const rows = await h.c.db.query('SELECT 1 FROM transfers WHERE wallet_id = $1', [w.body.wallet_id]);
    expect(rows).toHaveLength(0);
    const admin = await h.req('POST', path, { token: h.adminToken, body });
    expect([422, 503]).toContain(admin.status);
  });
});
