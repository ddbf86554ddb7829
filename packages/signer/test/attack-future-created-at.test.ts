/**
 * Review of issue #20, finding 5 (MEDIUM), as a compromised coordinator: after a detected restore
 * of a signer's store (generation.ts), `rollbackRefusal` refuses intents created BEFORE the
 * detection — but `created_at` is the coordinator's to choose. A transfer created "in the future"
 * and signed before the restore is, after the restore, a transfer "created after the detection":
 * the rolled-back ledger has forgotten it, so it is signed again as another transaction.
 *
 * Must hold: the signer refuses (`INTENT_TIME_INVALID`) an intent whose `created_at` is not an ISO
 * 8601 time or is later than its own clock + 5 minutes (`CREATED_AT_SKEW_MS`); after a detected
 * restore it refuses intents created before the detection + that skew, and, for the rest of the
 * detection's UTC day on its own clock, transfers under a daily limit. Real path: real encrypted
 * stores, a real backup copy of the data folder, `startGeneration` detecting the restore, then
 * `enforceTransferEvidence` followed by `rollbackRefusal` as the ceremony (ceremonies.ts `enforce`)
 * calls them, on a fixed signer clock.
 */
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { EvidenceRefused, enforceTransferEvidence, type RollbackRecord, rollbackRefusal } from '@custodian/ceremony';
import { SecureStore } from '@custodian/ceremony/level-store';
import { signApproval, type TransferIntent } from '@custodian/wire';
import { afterAll, describe, expect, it } from 'vitest';
import {
  dev1,
  ethContext,
  intent,
  request,
  signAndCommit,
  trustOf,
  verdict,
} from '../../ceremony/test/attack-fixtures.js';
import { startGeneration, stopGeneration } from '../src/index.js';
import { tempDir } from './cluster.js';

const SCRYPT = { N: 1 << 10, r: 8, p: 1 };
const dirs: string[] = [];
const open: SecureStore[] = [];
afterAll(async () => {
  for (const s of open) await s.close().catch(() => undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const W0 = [44, 60, 0, 0, 0];
const T0 = Date.parse('2026-03-04T12:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms);
const MIN = 60_000;

/** What the ceremony does with a sign request after a restore: enforce, then the rollback rule. */
async function signerVerdict(
  store: SecureStore,
  i: TransferIntent,
  nonce: number,
  rollback: RollbackRecord,
  now: Date,
) {
  const a = [signApproval(i, 'APPROVE', 'dev-1', dev1, '2026-03-04T10:00:01.000Z')];
  let v: Awaited<ReturnType<typeof enforceTransferEvidence>>;
  try {
    v = await enforceTransferEvidence(store, request(i, ethContext(W0, { nonce }), a), trustOf(), now);
  } catch (e) {
    if (e instanceof EvidenceRefused) return e.code;
    throw e;
  }
  v.release();
  return rollbackRefusal(rollback, i, null, now)?.split(':')[0] ?? 'ACCEPTED';
}

describe('attack: a future created_at', () => {
  it('an intent created later than the signer clock + 5 minutes, or at no valid time, is refused (INTENT_TIME_INVALID)', async () => {
    const dir = tempDir('attack-future-created');
    dirs.push(dir);
    const store = await SecureStore.open(join(dir, 'db'), 'pass', SCRYPT);
    open.push(store);
    const check = (created_at: string) =>
      verdict(store, request(intent({ created_at }), ethContext(W0)), trustOf(), at(0));
    expect(await check(at(36 * 60 * MIN).toISOString())).toBe('INTENT_TIME_INVALID');
    expect(await check(at(5 * MIN + 1).toISOString())).toBe('INTENT_TIME_INVALID');
    expect(await check('not a time')).toBe('INTENT_TIME_INVALID');
    expect(await check('2026-03-04')).toBe('INTENT_TIME_INVALID');
    expect(await check(at(5 * MIN).toISOString())).toBe('ACCEPTED');
    expect(await check(at(-30 * 24 * 60 * MIN).toISOString())).toBe('ACCEPTED');
  });

  it('a transfer created "in the future" and signed before a restore is not signed again as another transaction after it', async () => {
    const dir = tempDir('attack-future-restore');
    dirs.push(dir);
    const db = join(dir, 'db');
    const file = join(dir, 'db.generation.json');
    // a backup of a stopped signer
    let store = await SecureStore.open(db, 'pass', SCRYPT);
    await startGeneration(store, file, { now: at(-60 * MIN) });
    await stopGeneration(store, file);
    await store.close();
    cpSync(db, join(dir, 'backup'), { recursive: true });
    // after the copy: transfers created 4 minutes and 1 day ahead of the signer clock
    store = await SecureStore.open(db, 'pass', SCRYPT);
    await startGeneration(store, file, { now: at(-MIN) });
    const soon = intent({ created_at: at(4 * MIN).toISOString() });
    const tomorrow = intent({ created_at: at(24 * 60 * MIN).toISOString() });
    const approve = (i: TransferIntent) => [signApproval(i, 'APPROVE', 'dev-1', dev1, '2026-03-04T10:00:01.000Z')];
    await signAndCommit(store, request(soon, ethContext(W0, { nonce: 1 }), approve(soon)), trustOf(), at(0));
    await signAndCommit(
      store,
      request(tomorrow, ethContext(W0, { nonce: 2 }), approve(tomorrow)),
      trustOf(),
      at(0),
    ).catch(
      () => undefined, // refused outright once the clock check exists
    );
    await stopGeneration(store, file);
    await store.close();
    // the restore, detected at the next start (one minute later)
    rmSync(db, { recursive: true, force: true });
    cpSync(join(dir, 'backup'), db, { recursive: true });
    store = await SecureStore.open(db, 'pass', SCRYPT);
    open.push(store);
    const start = await startGeneration(store, file, { now: at(MIN) });
    expect(start.detectedNow).toBe(true);
    const rollback = start.rollback as RollbackRecord;
    // each one again, as another transaction (another nonce)
    expect(await signerVerdict(store, soon, 11, rollback, at(2 * MIN))).toBe('STORE_ROLLED_BACK');
    expect(await signerVerdict(store, tomorrow, 12, rollback, at(2 * MIN))).toBe('INTENT_TIME_INVALID');
    // a day later, by the signer clock, "tomorrow" has come: it was refused before the restore, never
    // signed, so this is its first signature
    expect(await signerVerdict(store, tomorrow, 13, rollback, at(24 * 60 * MIN))).toBe('ACCEPTED');
    // a transfer created after detection + skew, under no daily limit, is signed
    const later = intent({ created_at: at(7 * MIN).toISOString() });
    expect(await signerVerdict(store, later, 14, rollback, at(8 * MIN))).toBe('ACCEPTED');
  });
});
