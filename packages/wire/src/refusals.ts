/**
 * The refusal catalogue (issue #21): every reason a signer — server signer, or phone through the
 * same `runCeremony` — gives for not taking part in a ceremony, in ONE place that the signers and
 * the coordinator both import. For each code: whether it is transient (`true`: "not now", the
 * coordinator's gateway maps it to UNAVAILABLE and the pipeline retries; `false`: definitive, the
 * transfer is REJECTED with the code as its `sub_status`) and a one-line meaning.
 *
 * Wire (control.proto): a refusal travels as `CeremonyResult { outcome: OUTCOME_REFUSED, refusal:
 * RefusalCode, error }` — `refusal` is the enum value `REFUSAL_CODE_<code>` (its number read from
 * the loaded schema, so numbers live in the proto only), `error` the human-readable text, which
 * nothing parses. packages/wire/test/refusals.test.ts checks that this catalogue and the proto enum
 * list the same codes. A value the receiver does not know (a newer signer), or none (UNSPECIFIED: a
 * signer that predates the field), reads as {@link UNKNOWN_REFUSAL}.
 */
import { schemaRoot } from './schema.js';

/** One entry of {@link REFUSALS}. */
export interface RefusalInfo {
  /** `true`: "not now" — the same request may succeed once the cause has passed. */
  readonly transient: boolean;
  /** What the signer found (one line). */
  readonly meaning: string;
}

/** The catalogue: code → transient, meaning. Grouped as the proto numbers them. */
export const REFUSALS = {
  // 1..19 — the transfer evidence (evidence.ts verifyTransferEvidence)
  POLICY_SIGNATURE_VERIFICATION_FAILED: {
    transient: false,
    meaning: 'the policy is not signed by an Admin device this signer trusts, or was altered after signing',
  },
  POLICY_DELETED: {
    transient: false,
    meaning: 'the policy is deleted: the evidence carries its signed tombstone, or this signer holds that tombstone',
  },
  NO_POLICY_FOUND: { transient: false, meaning: 'the request carries no policy (default deny)' },
  POLICY_OUT_OF_SCOPE: {
    transient: false,
    meaning: "the policy's scope (profile, wallets, blockchain, asset) does not cover the transfer",
  },
  DESTINATION_NOT_WHITELISTED: { transient: false, meaning: "the destination is not in the policy's whitelist" },
  TRANSACTION_LIMIT_EXCEEDED: { transient: false, meaning: "the amount exceeds the policy's per-transaction limit" },
  DAILY_LIMIT_EXCEEDED: {
    transient: false,
    meaning: "the amount plus this signer's own ledger of the UTC day exceeds the policy's daily limit",
  },
  INSUFFICIENT_APPROVALS: {
    transient: false,
    meaning: 'fewer distinct enrolled approver devices approved this exact intent than the policy requires',
  },
  REJECTED_BY_APPROVER: { transient: false, meaning: 'an enrolled approver device rejected the transfer' },
  APPROVAL_SIGNATURE_INVALID: {
    transient: false,
    meaning: 'an approval is not from an enrolled device, not for this intent, or its signature does not verify',
  },
  DIGEST_MISMATCH: {
    transient: false,
    meaning: 'the digests asked for are not the ones this signer recomputes from the transfer fields and context',
  },
  // 20..49 — the signer's own enforcement and ledger (signer enforce.ts, generation.ts)
  EVIDENCE_MISSING: {
    transient: false,
    meaning: 'the sign request carries no transfer evidence (every signature is for a transfer)',
  },
  ENFORCEMENT_NOT_CONFIGURED: {
    transient: false,
    meaning: 'the signer trusts no Admin device and does not allow unenforced signing: it signs nothing',
  },
  TRANSFER_ALREADY_SIGNED: {
    transient: false,
    meaning: 'the transfer was already signed as another transaction that is not a fee replacement of it',
  },
  SIGNING_IN_PROGRESS: {
    transient: true,
    meaning:
      'another ceremony of this signer is signing the transfer now; the request may be sent again once it ends (result, abort, its stream closing, or its deadline)',
  },
  POLICY_VERSION_SUPERSEDED: {
    transient: false,
    meaning: 'the policy version is older than (or another document than) the one this signer already holds',
  },
  CHAIN_NOT_CONFIGURED: { transient: false, meaning: "the intent's blockchain is not in this signer's configuration" },
  CHAIN_MISMATCH: {
    transient: false,
    meaning: "the context's chain id / network, or the configured family, is not the one configured for the blockchain",
  },
  FEE_ABOVE_CAP: {
    transient: false,
    meaning: "the transaction's maximum fee exceeds the intent's max_fee (the cap the approvers signed)",
  },
  FEE_ABOVE_CEILING: {
    transient: false,
    meaning: "the transaction's maximum fee exceeds this signer's own ceiling for the blockchain",
  },
  SENDER_MISMATCH: {
    transient: false,
    meaning:
      'the sender is not the key this signer derives for (key_id, derivation_path), or the path is no wallet path',
  },
  INPUT_KEY_MISMATCH: {
    transient: false,
    meaning: "a Bitcoin-family input is not of the intent's wallet, or its key/address is not the derived one",
  },
  CHANGE_MISMATCH: {
    transient: false,
    meaning: "the change output is not of the intent's wallet, or its key/address is not the derived one",
  },
  ASSET_MISMATCH: {
    transient: false,
    meaning: 'the asset is not one this signer knows for the blockchain (symbol, decimals, contract or asset id)',
  },
  WALLET_MISMATCH: {
    transient: false,
    meaning: "the intent's wallet_id is not the wallet its key_id and derivation path give",
  },
  INTENT_TIME_INVALID: {
    transient: false,
    meaning: "the intent's created_at is not an ISO 8601 time, or is later than the signer's clock allows",
  },
  STORE_ROLLED_BACK: {
    transient: false,
    meaning: "this signer's store was restored from an earlier copy, and its ledger cannot vouch for this transfer",
  },
  // 50..69 — the ceremony request itself (signer ceremonies.ts, daemon.ts; coordinator device hub)
  REQUEST_INVALID: {
    transient: false,
    meaning:
      'the ceremony request is malformed or does not fit this signer (a field out of range, a party that is not a party of the key, a reused id); the text names the field',
  },
  KEY_UNKNOWN: { transient: false, meaning: 'this signer holds no key, or no share of the algorithm, under that id' },
  PRESIGNATURE_UNAVAILABLE: {
    transient: false,
    meaning:
      'the pooled presignature asked for is unknown to this signer or already used (the gateway signs cold instead)',
  },
  PRIME_POOL_NOT_CONFIGURED: {
    transient: false,
    meaning: 'the ceremony needs safe primes (CGGMP21 key or refresh) and this signer has no prime pool',
  },
  PRIME_POOL_EMPTY: {
    transient: true,
    meaning:
      "the signer's pool of safe primes is empty until it has refilled (raised by key ceremonies only — master key, refresh — whose requester reports it and may start the ceremony again later)",
  },
  CONTROL_REQUEST_REJECTED: {
    transient: false,
    meaning:
      'the control request does not open: not signed by the configured coordinator, malformed, another version, stale or replayed',
  },
  DEVICE_NOT_APPROVED: {
    transient: false,
    meaning: "the coordinator's device hub starts no ceremony on a device that is not APPROVED",
  },
  KEY_CHANGE_NOT_AUTHORIZED: {
    transient: false,
    meaning:
      "the reshare's key change is not signed by an Admin device this signer trusts (or is unsigned where the signer does not allow unenforced signing)",
  },
  RESHARE_NOT_PENDING: {
    transient: false,
    meaning:
      'this signer holds no pending shares of that RESHARE ceremony for the key (never finished here, or replaced)',
  },
} as const satisfies Record<string, RefusalInfo>;

/** A refusal code of the catalogue. */
export type RefusalCode = keyof typeof REFUSALS;

/** What a receiver reads for a REFUSED result whose `refusal` it does not know, or that has none. */
export const UNKNOWN_REFUSAL = 'UNKNOWN';

/** A received refusal: a catalogue code, or {@link UNKNOWN_REFUSAL}. */
export type ReceivedRefusal = RefusalCode | typeof UNKNOWN_REFUSAL;

const PREFIX = 'REFUSAL_CODE_';
const enumValues: Readonly<Record<string, number>> = schemaRoot.lookupEnum('custodian.v1.RefusalCode').values;
const byNumber = new Map<number, RefusalCode>();
for (const [name, n] of Object.entries(enumValues)) {
  const code = name.slice(PREFIX.length);
  if (Object.hasOwn(REFUSALS, code)) byNumber.set(n, code as RefusalCode);
}

/** Whether a string is a catalogue code. */
export function isRefusalCode(s: unknown): s is RefusalCode {
  return typeof s === 'string' && Object.hasOwn(REFUSALS, s);
}

/**
 * The wire value (control.proto `RefusalCode`) of a catalogue code.
 * @throws RangeError when the proto enum has no `REFUSAL_CODE_<code>` (the catalogue and the proto disagree: a bug)
 */
export function refusalValue(code: RefusalCode): number {
  const n = enumValues[`${PREFIX}${code}`];
  if (n === undefined) throw new RangeError(`refusal ${code}: control.proto RefusalCode has no ${PREFIX}${code}`);
  return n;
}

/**
 * The refusal a `CeremonyResult.refusal` carries. Never throws: UNSPECIFIED (0), a missing field, or
 * a value this build does not know read as {@link UNKNOWN_REFUSAL}.
 */
export function refusalOf(value: unknown): ReceivedRefusal {
  return (typeof value === 'number' && byNumber.get(value)) || UNKNOWN_REFUSAL;
}

/** Whether a received refusal is transient (catalogue `transient`; UNKNOWN is not). */
export function isTransientRefusal(refusal: ReceivedRefusal): boolean {
  return refusal !== UNKNOWN_REFUSAL && REFUSALS[refusal].transient;
}

/** The names of the proto enum's values without the prefix, UNSPECIFIED excluded (for the catalogue test). */
export function protoRefusalCodes(): string[] {
  return Object.keys(enumValues)
    .map((k) => k.slice(PREFIX.length))
    .filter((k) => k !== 'UNSPECIFIED');
}
