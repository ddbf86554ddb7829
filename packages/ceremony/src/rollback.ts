/**
 * The rule a signer applies after it detected that its store was restored from an earlier copy
 * (the server signer's generation.ts detects it and records a {@link RollbackRecord}; issue #20,
 * item 8): what its rolled-back ledger can no longer vouch for is not signed
 * (`STORE_ROLLED_BACK`). Applied by the signing ceremony (ceremonies/run.ts `enforce`).
 */
import { CREATED_AT_SKEW_MS } from './enforce/intent.js';

/** Refusal code of a sign request this signer may not sign any more after a detected rollback. */
export const STORE_ROLLED_BACK = 'STORE_ROLLED_BACK';

/** A detected rollback (JSON in the store, `state/rollback`). */
export interface RollbackRecord {
  /** When this signer detected it (ISO 8601, UTC): the start after the restore. */
  readonly detectedAt: string;
  /** Generation found in the restored store. */
  readonly storeGeneration: number;
  /** Generation in the state file then (absent: the file was missing). */
  readonly fileGeneration?: number;
  readonly reason: 'older-generation' | 'state-file-missing' | 'other-store';
}

const DAY_MS = 86_400_000;

/**
 * Whether a transfer may be signed by a signer that detected a rollback (none: undefined).
 * Refused, with a message starting `STORE_ROLLED_BACK:`, when
 * (a) the intent was created before the detection plus `CREATED_AT_SKEW_MS` (5 minutes): it may
 *     have been signed after the copy (a signer signs intents created up to that skew ahead of its
 *     clock, enforce/intent.ts `intentTime`), and the ledger that would say so was rolled back; or
 * (b) the policy has a daily limit and `now` (the signer's clock: the day this signature would be
 *     counted on) is on the detection's UTC day: that day's sums may miss transfers signed after
 *     the copy. From 00:00 UTC the next day the limits count from the signer's ledger again.
 * @param rollback the signer's latest detected rollback
 * @param intent the approved intent (`created_at`, ISO 8601)
 * @param dailyLimit the policy's `daily_limit` (null/undefined: no daily limit)
 * @param now the signer's clock (default: now)
 */
export function rollbackRefusal(
  rollback: RollbackRecord | undefined,
  intent: { readonly created_at: string },
  dailyLimit: string | null | undefined,
  now: Date = new Date(),
): string | undefined {
  if (!rollback) return undefined;
  const created = Date.parse(intent.created_at);
  const detected = Date.parse(rollback.detectedAt);
  if (!Number.isFinite(created)) return `${STORE_ROLLED_BACK}: intent.created_at is not a date`;
  if (created < detected + CREATED_AT_SKEW_MS) {
    return `${STORE_ROLLED_BACK}: this signer's store was restored from an earlier copy (detected ${rollback.detectedAt}); a transfer created before then (or within the clock skew after it) may have been signed after the copy and is not signed by this signer`;
  }
  const day = Math.floor(detected / DAY_MS);
  if (dailyLimit !== null && dailyLimit !== undefined && Math.floor(now.getTime() / DAY_MS) === day) {
    const next = new Date((day + 1) * DAY_MS).toISOString();
    return `${STORE_ROLLED_BACK}: this signer's store was restored from an earlier copy (detected ${rollback.detectedAt}); its daily sums of that UTC day are not known, transfers under a daily limit are signed again from ${next}`;
  }
  return undefined;
}
