/**
 * Review of issue #20, finding 2 (HIGH), as a compromised coordinator: the signer's daily sums were
 * kept under strings the coordinator chooses (`wallet_id/asset_id/<UTC day of created_at>`), so a
 * fresh `asset_id`, `wallet_id` or `created_at` opened a fresh, empty bucket and the daily limit
 * could be spent again and again from the same source key.
 *
 * Must hold: the daily sums are keyed by what the signer derives itself — key id, blockchain,
 * wallet index of the path, asset identity (`native` or the token contract, bound by the digests)
 * — and by the UTC day of the signer's OWN clock when it first signs the transfer. Real path:
 * `enforceTransferEvidence` with a fixed signer clock on a real encrypted store; the accepted
 * transfer's ledger writes are committed as the ceremony commits them.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ethereumAddress } from '@custodian/chains';
import { afterAll, describe, expect, it } from 'vitest';
import { SecureStore } from '../src/level-store/index.js';
import {
  child,
  ethContext,
  intent,
  mk,
  request,
  signAndCommit,
  trustOf,
  verdict,
  withPolicy,
} from './attack-fixtures.js';
import { tempDir } from './helpers.js';

const dirs: string[] = [];
const stores: SecureStore[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
async function freshStore(label: string): Promise<SecureStore> {
  const dir = tempDir(label);
  dirs.push(dir);
  const s = await SecureStore.open(join(dir, 'db'), 'pass', { N: 1 << 10, r: 8, p: 1 });
  stores.push(s);
  return s;
}

const W0 = [44, 60, 0, 0, 0];
const NOW = new Date('2026-03-04T12:00:00.000Z');
const limited = { daily_limit: '1000', approvals: { quorum: 2, above_amount: '1000' } };
const req = (over: Parameters<typeof intent>[0]) =>
  withPolicy(request(intent({ amount: '1000', ...over }), ethContext(W0)), limited);

describe('attack: a fresh daily-limit bucket from coordinator-chosen strings', () => {
  it('a second full-limit transfer of the same source key is refused under another asset_id, wallet_id or created_at', async () => {
    const store = await freshStore('attack-daily-buckets');
    await signAndCommit(store, req({}), trustOf(), NOW);
    // control: the same labels → refused
    expect(await verdict(store, req({}), trustOf(), NOW)).toBe('DAILY_LIMIT_EXCEEDED');
    // the same key, chain and native asset, only a fresh asset_id string
    // (refused twice over: the asset id is bound to (blockchain, symbol), and the sums ignore it)
    expect(await verdict(store, req({ asset_id: 'fresh-asset-id-1' }), trustOf(), NOW)).toMatch(
      /^(ASSET_MISMATCH|DAILY_LIMIT_EXCEEDED)$/,
    );
    // created "yesterday": the signer counts it on the day it signs it
    expect(await verdict(store, req({ created_at: '2026-03-03T23:59:59.000Z' }), trustOf(), NOW)).toBe(
      'DAILY_LIMIT_EXCEEDED',
    );
    // created on a far-future day
    expect(await verdict(store, req({ created_at: '2099-12-31T00:00:00.000Z' }), trustOf(), NOW)).toBe(
      'INTENT_TIME_INVALID',
    );
    // only a fresh wallet_id string (path and source address still wallet 0's)
    expect(await verdict(store, req({ wallet_id: 'fresh-wallet-id-1' }), trustOf(), NOW)).toBe('WALLET_MISMATCH');
  });

  it("another wallet of the key (its own path and derived id) has its own sum; the next UTC day of the signer's clock starts afresh", async () => {
    const store = await freshStore('attack-daily-buckets-own');
    await signAndCommit(store, req({}), trustOf(), NOW);
    const W1 = [44, 60, 1, 0, 0];
    const other = intent({ amount: '1000', derivation_path: W1, source_address: ethereumAddress(child(mk.ecdsa, W1)) });
    expect(await verdict(store, withPolicy(request(other, ethContext(W1)), limited), trustOf(), NOW)).toBe('ACCEPTED');
    expect(await verdict(store, req({}), trustOf(), new Date('2026-03-05T00:00:00.000Z'))).toBe('ACCEPTED');
  });
});
