/**
 * docs/integrator-guide.md's client examples are real: each `<!-- example: path -->` block of the
 * guide is the file at that path verbatim, every file of packages/sdk/examples/*.ts is in the guide,
 * and each file runs against a live coordinator (PGlite, real socket) with the effect it promises.
 */
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { blockchainId } from '../../coordinator/src/directory.js';
import { type Harness, type Json, startHarness } from '../../coordinator/test/helpers.js';
import { CustodianApiError } from '../src/index.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const DEST = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const ENV = [
  'CUSTODIAN_URL',
  'CUSTODIAN_API_KEY',
  'CUSTODIAN_PROFILE_ID',
  'ORDER_ID',
  'ORDER_IDEMPOTENCY_KEY',
  'WALLET_ID',
  'DESTINATION',
  'AMOUNT',
];
const harnesses: Harness[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  for (const k of ENV) delete process.env[k];
  while (harnesses.length > 0) await harnesses.pop()!.close();
});

async function harness(): Promise<Harness> {
  const h = await startHarness({ coordinator: { transfers: { runPipeline: false } } });
  harnesses.push(h);
  Object.assign(process.env, { CUSTODIAN_URL: h.url, CUSTODIAN_API_KEY: h.apiKey, CUSTODIAN_PROFILE_ID: h.profileId });
  return h;
}

/** Run an example file as a fresh module (top-level code runs on every call); returns what it logged. */
async function runExample(name: string): Promise<string[]> {
  const lines: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void lines.push(a.join(' ')));
  vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void lines.push(a.join(' ')));
  vi.resetModules();
  try {
    await import(`../examples/${name}.ts`);
  } finally {
    vi.mocked(console.log).mockRestore();
    vi.mocked(console.error).mockRestore();
  }
  return lines;
}

describe('the guide includes the examples verbatim', () => {
  it('every <!-- example: path --> block equals its file, and every example is included', async () => {
    const guide = await readFile(`${root}docs/integrator-guide.md`, 'utf8');
    const blocks = [...guide.matchAll(/<!-- example: (\S+) -->\n```ts\n([\s\S]*?)```\n/g)];
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    for (const [, path, code] of blocks) {
      expect(code, `${path} differs from its copy in docs/integrator-guide.md`).toBe(
        await readFile(`${root}${path}`, 'utf8'),
      );
    }
    const files = (await readdir(`${root}packages/sdk/examples`)).filter((f) => f.endsWith('.ts'));
    expect(blocks.map((b) => b[1]).sort()).toEqual(files.map((f) => `packages/sdk/examples/${f}`).sort());
  });
});

describe('the examples run against a coordinator', () => {
  it('create-wallet.ts creates a wallet named treasury and prints its deposit address', async () => {
    const h = await harness();
    const out = await runExample('create-wallet');
    const wallets = await h.c.db.query<{ wallet_id: string; name: string }>(
      'SELECT wallet_id, name FROM wallets WHERE profile_id = $1',
      [h.profileId],
    );
    expect(wallets.map((w) => w.name)).toEqual(['treasury']);
    const address = await h.req('GET', `/api/v1/profiles/${h.profileId}/wallets/${wallets[0].wallet_id}/addresses`, {
      key: h.apiKey,
    });
    expect(out[0]).toBe(`wallet ${wallets[0].wallet_id} deposit address ${address.body.data[0].address}`);
  });

  it('create-transfer.ts creates the transfer once per order key, and reports validation errors', async () => {
    const h = await harness();
    const A = `/api/v1/profiles/${h.profileId}`;
    const w = await h.req('POST', `${A}/wallets`, {
      key: h.apiKey,
      headers: { 'idempotency-key': randomUUID() },
      body: { blockchain_ids: [blockchainId('ethereum-local')] },
    });
    const assets = await h.req('GET', `${A}/assets?page_size=200`, { key: h.apiKey });
    const eth = assets.body.data.find((a: Json) => a.blockchain === 'ethereum-local' && a.symbol === 'ETH');
    await h.c.wallets.balances.setBalance(w.body.wallet_id, eth.asset_id, (10n * 10n ** 18n).toString());
    Object.assign(process.env, {
      ORDER_ID: 'order-42',
      ORDER_IDEMPOTENCY_KEY: randomUUID(),
      WALLET_ID: w.body.wallet_id,
      DESTINATION: DEST,
      AMOUNT: '0.5',
    });

    const first = await runExample('create-transfer');
    const again = await runExample('create-transfer');
    const transfers = (await h.req('GET', `${A}/transfers`, { key: h.apiKey })).body.data as Json[];
    expect(transfers).toHaveLength(1);
    expect([transfers[0].external_id, transfers[0].amount]).toEqual(['order-42', '0.5']);
    expect(first[0]).toBe(`created ${transfers[0].transfer_id} ${transfers[0].status}`);
    expect(again[0]).toBe(`already created ${transfers[0].transfer_id} ${transfers[0].status}`);

    Object.assign(process.env, { ORDER_IDEMPOTENCY_KEY: randomUUID(), AMOUNT: '0.1234567890123456789' });
    const err = await runExample('create-transfer').catch((e) => e);
    // The example ran in a fresh module graph: its CustodianApiError is another copy of the class.
    expect(err).toMatchObject({ name: CustodianApiError.name, family: 'sdk', code: 'VALIDATION_FAILED', status: 422 });
    expect((await h.req('GET', `${A}/transfers`, { key: h.apiKey })).body.data).toHaveLength(1);
  });
});
