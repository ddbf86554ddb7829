/**
 * The daily limit under real concurrency: 50 parallel transfers at the limit on a PostgreSQL
 * server (a pool of 20 connections, so the checks truly race; the row lock per wallet, asset and
 * UTC day serialises them). Skipped when no server answers at TEST_DATABASE_URL.
 */
import { signPolicy } from '@custodian/wire';
import { p256 } from '@noble/curves/nist.js';
import { afterAll, describe, expect, it } from 'vitest';
import { enrollmentBody, phoneKeys, userIdOf } from './device-fixtures.js';
import { ADMIN_EMAIL, type Harness, type Json, postgresReachable, startHarness } from './helpers.js';

const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const ETH = 10n ** 18n;
let h: Harness | undefined;

afterAll(async () => {
  await h?.close();
});

describe('daily limit on PostgreSQL', () => {
  it('50 parallel transfers at the limit never exceed it', async (ctx) => {
    if (!(await postgresReachable())) ctx.skip();
    h = await startHarness({ db: 'postgres', coordinator: { transfers: { runPipeline: false } } });
    const A = `/api/v1/profiles/${h.profileId}`;
    const sk = p256.utils.randomSecretKey();
    const e = await h.req('POST', '/devices/v1/enrollments', {
      body: enrollmentBody(await phoneKeys(sk), 'admin phone'),
    });
    await h.req('POST', `/admin/v1/devices/${e.body.device_id}/approve`, {
      token: h.adminToken,
      body: { fingerprint: e.body.fingerprint, user_id: await userIdOf(h, ADMIN_EMAIL) },
    });
    const chains = await h.req('GET', `${A}/blockchains?page_size=200`, { key: h.apiKey });
    const chainId = chains.body.data.find((b: Json) => b.key === 'ethereum-local').blockchain_id;
    const assets = await h.req('GET', `${A}/assets?page_size=200`, { key: h.apiKey });
    const assetId = assets.body.data.find((a: Json) => a.blockchain === 'ethereum-local').asset_id;
    const w = await h.req('POST', `${A}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: { blockchain_ids: [chainId] },
    });
    const walletId = w.body.wallet_id;
    await h.c.wallets.balances.setBalance(walletId, assetId, (100n * ETH).toString());
    const p = await h.req('POST', `/admin/v1/profiles/${h.profileId}/policies`, {
      token: h.adminToken,
      body: {
        name: 'limit',
        scope: { asset_id: assetId },
        whitelist: [DEST],
        daily_limit: (5n * ETH).toString(),
      },
    });
    const sig = signPolicy(p.body.versions[0].document, e.body.device_id, sk).signature;
    const s = await h.req(
      'POST',
      `/admin/v1/profiles/${h.profileId}/policies/${p.body.policy_id}/versions/1/signature`,
      {
        token: h.adminToken,
        body: { device_id: e.body.device_id, signature: sig },
      },
    );
    expect(s.status).toBe(200);
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        h!.req('POST', `${A}/transfers`, {
          key: h!.apiKey,
          headers: { 'idempotency-key': crypto.randomUUID() },
          body: { wallet_id: walletId, asset_id: assetId, destination_address: DEST, amount: '0.2' },
        }),
      ),
    );
    expect(results.every((r) => r.status === 201)).toBe(true);
    expect(results.filter((r) => r.body.status === 'PENDING_APPROVAL').length).toBe(25);
    expect(results.filter((r) => r.body.sub_status === 'DAILY_LIMIT_EXCEEDED').length).toBe(25);
  }, 60_000);
});
