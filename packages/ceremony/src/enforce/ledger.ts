/**
 * The signer's ledger (enforce.ts item 3, DESIGN §1: limits from the signer's OWN ledger).
 *
 * The ledger lives in the signer's encrypted store (sublevel `ledger`, storage.ts) and its entries are
 * written in the same batch as the ceremony's audit record, only when the signature was produced:
 * - `t/<transfer_id>` → {@link LedgerEntry} (JSON): what was signed for the transfer (re-signing rules);
 * - `d/<key_id>/<blockchain>/<wallet index>/<asset>/<YYYY-MM-DD>/<transfer_id>` → amount (base
 *   units, decimal string): the daily sums, see below;
 * - `policy/<policy_id>` → the newest policy version signed under (decimal string);
 * - `policy-known/<policy_id>` → {@link LearnedPolicy} (JSON): the highest Admin-signed version
 *   pushed by the coordinator, and whether it is the policy's tombstone (policies.ts).
 *
 * Daily limit. The sums are keyed only by what the signer derives or checks itself — the key id
 * (the key record the request signs with), the configured blockchain, the wallet index of the
 * derivation path, the asset identity ({@link assetIdentity}: `native`, or the token contract the
 * digests bind, lowercased on EVM chains) — and by the UTC day of the signer's OWN clock when it
 * FIRST signs the transfer: a transfer counts on that day, once; a retry or fee replacement of an
 * already signed transfer adds nothing, even on a later day. The coordinator's `wallet_id`,
 * `asset_id` and `created_at` choose no bucket. The coordinator counts a transfer on the UTC day it
 * was created, so near midnight a signer may refuse (`DAILY_LIMIT_EXCEEDED`) what the coordinator
 * allowed, never the reverse.
 */
import type { TransferIntent } from '@custodian/wire';
import type { ChainConfig } from '../chains-config.js';
import type { CeremonyStore } from '../storage.js';

/**
 * One signed transfer in a signer's ledger (JSON in sublevel `ledger`, key `t/<transfer_id>`).
 *
 * Re-signing the same `transfer_id` is allowed only (a) for the very same digests (a retry after
 * the coordinator lost the result: no second transaction can come out of it), or (b) for a fee
 * replacement — same `replacement_key` (Ethereum: sender and nonce; Bitcoin family: the spent
 * outpoints) — and then only with approvals not used for an earlier signature of the transfer.
 * The intent must be the one already signed, or differ from it ONLY in a higher `max_fee` (a
 * "raised cap" intent for a bump above the approved cap, whose approvals are necessarily fresh).
 * Neither adds to the daily sums: the transfer counts once, under {@link LedgerEntry.sum_key}.
 */
export interface LedgerEntry {
  readonly transfer_id: string;
  /** The intent's labels (informational: no ledger key is formed from them). */
  readonly wallet_id: string;
  readonly asset_id: string;
  /** UTC day (YYYY-MM-DD, signer clock) of the transfer's first signature: the day it counts on. */
  readonly day: string;
  /** Ledger key of the transfer's amount in the daily sums (`d/…/<day>/<transfer_id>`). */
  readonly sum_key: string;
  /** Base units, decimal string. */
  readonly amount: string;
  readonly intent_digest: string;
  /** Hex digests of every signature made for the transfer. */
  readonly digests: readonly string[];
  readonly replacement_key: string;
  /**
   * Hex digest of the intent without `max_fee`: a later intent differing only in a higher
   * `max_fee` (a fee bump above the approved cap, approved afresh) is the same transfer. Then
   * `intent_digest` and `max_fee` become the raised intent's.
   */
  readonly transfer_digest: string;
  /** The intent's fee cap, base units of the native asset. */
  readonly max_fee: string;
  /** Signatures (hex) of the approvals already used. */
  readonly approvals_used: readonly string[];
  /** Time of the first signature (ISO 8601, signer clock). */
  readonly signed_at: string;
}

/** Identity of a daily-limit bucket: everything but the day, each derived or checked by the signer. */
export interface SpendIdentity {
  /** The key id the request signs with (the signer's key record). */
  readonly keyId: string;
  /** The blockchain key, present in the signer's `chains` configuration. */
  readonly blockchain: string;
  /** The wallet index, element 2 of the wallet path `m/44/{coin}/{wallet}/{0|1}/{index}`. */
  readonly walletIndex: number;
  /** {@link assetIdentity}. */
  readonly asset: string;
}

const dec = new TextDecoder();

/** UTC day (YYYY-MM-DD) of a time (the signer's clock). @throws RangeError for an invalid date */
export function utcDay(t: Date): string {
  return t.toISOString().slice(0, 10);
}

/**
 * Asset identity of an intent in the daily sums: `native` for the chain's coin, else the token
 * contract as the digests bind it — lowercased on EVM chains (whose adapter takes a contract in
 * lower, upper or EIP-55 case: three spellings of one contract), verbatim elsewhere (TRON base58check
 * has one spelling per contract).
 */
export function assetIdentity(intent: TransferIntent, family: ChainConfig['family']): string {
  if (intent.asset_contract === null) return 'native';
  return family === 'ethereum' ? intent.asset_contract.toLowerCase() : intent.asset_contract;
}

/** Key prefix of a bucket of the daily sums (`d/<key_id>/<blockchain>/<wallet>/<asset>/<day>/`). */
export function sumPrefix(id: SpendIdentity, day: string): string {
  const e = encodeURIComponent;
  return `d/${e(id.keyId)}/${e(id.blockchain)}/${id.walletIndex}/${e(id.asset)}/${day}/`;
}

/** Ledger key of a transfer's {@link LedgerEntry}: `t/<transfer_id>`. */
export const transferKey = (transferId: string) => `t/${transferId}`;

/**
 * In-flight reservations per store: a transfer accepted by {@link enforceTransferEvidence} is held
 * (transfer id → its sum key and amount; no sum key for a re-signature, which adds nothing) from
 * the check until its ceremony ends, and its amount counts towards its day's sum meanwhile (then
 * the ledger entry, written only with a produced signature, takes over). Checks are serialised per
 * store, so concurrent sign requests cannot both pass a daily limit only one of them fits in. A
 * request for a transfer held here is refused `SIGNING_IN_PROGRESS` (transient: the coordinator
 * asks again once the holder has ended).
 */
const reservations = new WeakMap<CeremonyStore, Map<string, { sumKey?: string; amount: bigint }>>();
const checkLocks = new WeakMap<CeremonyStore, Promise<unknown>>();

/** The in-flight reservations of a store (created empty on first use). */
export function reserved(store: CeremonyStore): Map<string, { sumKey?: string; amount: bigint }> {
  let m = reservations.get(store);
  if (!m) {
    m = new Map();
    reservations.set(store, m);
  }
  return m;
}

/**
 * Run `check` after every check or policy push already queued on `store` ({@link reservations}:
 * checks are serialised per store), and queue the next one after it, whether it succeeds or not.
 */
export function serialised<T>(store: CeremonyStore, check: () => Promise<T>): Promise<T> {
  const prev = checkLocks.get(store) ?? Promise.resolve();
  const run = prev.then(check);
  checkLocks.set(
    store,
    run.catch(() => {}),
  );
  return run;
}

/**
 * Sum (base units) of a daily-limit bucket: the transfers first signed on `day` (signer clock)
 * under `id`, plus in-flight reservations of the same bucket, except `exceptTransferId`.
 */
export async function ledgerSpent(
  store: CeremonyStore,
  id: SpendIdentity,
  day: string,
  exceptTransferId?: string,
): Promise<bigint> {
  let sum = 0n;
  const prefix = sumPrefix(id, day);
  const except = exceptTransferId === undefined ? undefined : `${prefix}${exceptTransferId}`;
  for (const k of await store.keys('ledger', prefix)) {
    if (k === except) continue;
    const v = await store.get('ledger', k);
    if (v) sum += BigInt(dec.decode(v));
  }
  for (const { sumKey, amount } of reserved(store).values()) {
    if (sumKey?.startsWith(prefix) && sumKey !== except && !(await store.get('ledger', sumKey))) sum += amount;
  }
  return sum;
}

/** The ledger entry of a transfer (by its transfer id alone), if it was signed before. */
export async function ledgerEntry(
  store: CeremonyStore,
  transfer: { readonly transfer_id: string },
): Promise<LedgerEntry | undefined> {
  const v = await store.get('ledger', transferKey(transfer.transfer_id));
  return v ? (JSON.parse(dec.decode(v)) as LedgerEntry) : undefined;
}
