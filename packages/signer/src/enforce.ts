/**
 * Signer-side enforcement (DESIGN §1: signers enforce, the coordinator orchestrates). Before a
 * signer contributes to a transfer signature it decides ON ITS OWN, from the evidence carried in
 * `SignRequest.evidence` (control.proto field 16):
 *
 * 1. the request is consistent with the transfer intent: key id, algorithm and derivation path
 *    are the intent's, and the digests asked for are exactly the digests `@custodian/chains`
 *    recomputes from the intent's fields (asset, destination, amount) and the chain context
 *    (`recomputeEthereumDigests` / `recomputeBitcoinDigests` / `recomputeTronDigests`); any
 *    difference → `DIGEST_MISMATCH`;
 * 1b. the chain context binds nothing the signer cannot check on its own (issue #20): the intent's
 *    asset is the chain's native asset or a token of the signer's `chains.<key>.assets`, with the
 *    directory's asset id (`ASSET_MISMATCH`, assets.ts); the blockchain is in the signer's own
 *    `chains` configuration (`CHAIN_NOT_CONFIGURED`) and the context's EIP-155
 *    chain id / TRON network / Bitcoin-family network is the configured one (`CHAIN_MISMATCH`); the
 *    intent's derivation path is a wallet path `m/44/{coin_type}/{wallet}/{0|1}/{index}` of the
 *    configured coin type (TRON: 195 on mainnet, 1 on test networks), and the signer derives the
 *    sender key for it from the master public key and chain code of ITS OWN key record — the
 *    context's sender (`from`, `fromPublicKey`) and the intent's `source_address` must be that
 *    key's (`SENDER_MISMATCH`); Bitcoin family: every
 *    input's and the change's key is derived from its path, a path of the same wallet in branch 0
 *    or 1 (`INPUT_KEY_MISMATCH`, `CHANGE_MISMATCH`); the transaction's maximum fee is at most the
 *    intent's `max_fee` that the approvers signed (`FEE_ABOVE_CAP`) and the configured ceiling
 *    (`FEE_ABOVE_CEILING`). A TRON transaction carries no chain id: it is bound to its network by
 *    its reference block, which the signer CANNOT verify offline — the signer only checks the
 *    network the context names. A coordinator can still pick a reference block of another network,
 *    but the key differs between mainnet (coin type 195) and the test networks (coin type 1): a
 *    test-network approval yields at most a mainnet transaction from the test-network key's
 *    address, never from a mainnet wallet (test networks share coin type 1 among themselves);
 * 1c. the intent's `wallet_id` is the wallet of its path: `walletIdOf(key_id, derivation_path[2])`
 *    (@custodian/wire), else `WALLET_MISMATCH` — so a policy scoped to one wallet, and its daily
 *    limit, cannot be applied to another wallet's funds; the intent's `created_at` is an ISO 8601
 *    time no later than the signer's clock + {@link CREATED_AT_SKEW_MS}, else `INTENT_TIME_INVALID`
 *    (the rollback rule of generation.ts compares it with the detection time);
 * 2. `verifyTransferEvidence` (packages/wire/src/evidence.ts) with the Admin device keys pinned in
 *    the signer's configuration, the key's approver devices (stored with the key at the master key
 *    ceremony) and the amount already spent today taken from the signer's OWN ledger (never from
 *    the coordinator), see "Daily limit" below;
 * 3. the ledger rules of re-signing one transfer (see {@link LedgerEntry}), and policy versions
 *    only moving forward: a version older than the newest this signer signed under OR learned
 *    (`POLICY_VERSION_SUPERSEDED`), and any version of a policy whose signed tombstone it learned
 *    (`POLICY_DELETED`), are refused — see "Learned policy versions" below.
 *
 * The ledger lives in the signer's encrypted LevelDB store (sublevel `ledger`) and its entries are
 * written in the same batch as the ceremony's audit record, only when the signature was produced:
 * - `t/<transfer_id>` → {@link LedgerEntry} (JSON): what was signed for the transfer (re-signing rules);
 * - `d/<key_id>/<blockchain>/<wallet index>/<asset>/<YYYY-MM-DD>/<transfer_id>` → amount (base
 *   units, decimal string): the daily sums, see below;
 * - `policy/<policy_id>` → the newest policy version signed under (decimal string);
 * - `policy-known/<policy_id>` → {@link LearnedPolicy} (JSON): the highest Admin-signed version
 *   pushed by the coordinator, and whether it is the policy's tombstone.
 *
 * Learned policy versions (issue #26 item 3). The coordinator pushes every policy version as it
 * becomes ACTIVE, every tombstone as the deletion takes effect, and all of them when a signer
 * (re)connects (control.proto `PolicySync`, {@link learnSignedPolicies}). The signer checks each
 * against its OWN pinned Admin device keys (a push that does not verify is refused, logged and
 * never stored), keeps the highest version per policy (never lowering it; a tombstone is final)
 * and checks it at each sign request. So a version that was activated but never used to sign, or
 * a deletion, still ends the older versions at this signer — as far as the push reached it: a
 * coordinator compromised BEFORE an activation can withhold that push (the signer then knows only
 * what it signed under).
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

import {
  type BitcoinContext,
  type DigestToSign,
  type EthereumContext,
  ethereumAddress,
  type Json,
  recomputeBitcoinDigests,
  recomputeEthereumDigests,
  recomputeTronDigests,
  type TransferFields,
  type TronContext,
  tronAddress,
  UTXO_NETWORKS,
  utxoAddress,
} from '@custodian/chains';
import { bytesToHex, deriveSecp256k1, hexToBytes } from '@custodian/crypto';
import {
  type Approval,
  isPolicyTombstone,
  KeyAlgorithm,
  type PolicyDocument,
  type PolicySyncItemWire,
  type PolicySyncOutcome,
  policyDigest,
  policySignedByTrustedAdmin,
  type RefusalCode,
  type SignedPolicy,
  type SignRequest,
  type TransferIntent,
  transferIntentDigest,
  verifyTransferEvidence,
  walletIdOf,
} from '@custodian/wire';
import { assetMismatch } from './assets.js';
import type { ChainConfig, ChainsConfig } from './config.js';
import { SignerError } from './errors.js';
import type { SecureStore, StoreOp } from './store.js';

/**
 * Why a signer refuses: a code of the refusal catalogue of `@custodian/wire` (refusals.ts: every
 * code with its meaning and whether it is transient — the evidence codes, the ledger's own, and
 * those of the ceremony request), the one list the coordinator reads them by.
 */
export type SignerRefusal = RefusalCode;

/**
 * A refusal raised by {@link enforceTransferEvidence}; `code` travels back as the CeremonyResult's
 * `refusal` (control.proto RefusalCode), the message (`<code>: <detail>`) as its `error` text.
 */
export class EvidenceRefused extends SignerError {
  declare readonly code: SignerRefusal;
  constructor(code: SignerRefusal, detail: string) {
    super(code, `${code}: ${detail}`);
  }
}

/** A master public key of the signer's key record (KeyRecord.keys): hex public key and chain code. */
export interface MasterPublicKey {
  readonly suite: string;
  /** SEC1-compressed (33 bytes) or x-only (32 bytes, even Y) secp256k1 key, hex. */
  readonly publicKey: string;
  /** 32 bytes, hex. */
  readonly chainCode: string;
}

/** What the signer trusts, from its configuration and key records. */
export interface EnforcementTrust {
  /** Compressed P-256 public keys (hex, 33 bytes) of the Admin devices whose policy signatures are accepted. */
  readonly trustedAdminKeys: readonly string[];
  /** The key's approver devices: device id → compressed P-256 public key (hex). */
  readonly approverKeys: ReadonlyMap<string, string>;
  /** The signer's own `chains` configuration (absent or empty: every transfer is `CHAIN_NOT_CONFIGURED`). */
  readonly chains?: ChainsConfig;
  /**
   * The key record's master public keys (KeyRecord.keys of the request's key id): suite `cggmp`
   * (ECDSA: EVM and TRON senders, P2WPKH) and `secp256k1-tr` (Taproot: P2TR). Absent: no sender
   * can be derived, every transfer is `SENDER_MISMATCH`.
   */
  readonly keys?: readonly MasterPublicKey[];
}

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

/**
 * How long an intent's `created_at` may lie ahead of the signer's clock (milliseconds): 5 minutes
 * of clock skew between the coordinator and the signer. Later: `INTENT_TIME_INVALID`. The rollback
 * rule (generation.ts `rollbackRefusal`) refuses intents created before a detected restore plus
 * this skew.
 */
export const CREATED_AT_SKEW_MS = 5 * 60_000;

/** ISO 8601 date-time with seconds and an explicit zone (what `Date.prototype.toISOString` writes). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/**
 * The time of an intent's `created_at`, checked against the signer's clock.
 * @param createdAt ISO 8601 date-time with seconds and zone, e.g. `2026-03-04T10:00:00.000Z`
 * @param now the signer's clock
 * @returns milliseconds since the epoch
 * @throws EvidenceRefused INTENT_TIME_INVALID when it is not such a time, or later than `now` + {@link CREATED_AT_SKEW_MS}
 */
export function intentTime(createdAt: unknown, now: Date): number {
  const t = typeof createdAt === 'string' && ISO_TIME.test(createdAt) ? Date.parse(createdAt) : Number.NaN;
  if (!Number.isFinite(t))
    throw new EvidenceRefused('INTENT_TIME_INVALID', 'intent.created_at is not an ISO 8601 time');
  if (t > now.getTime() + CREATED_AT_SKEW_MS)
    throw new EvidenceRefused('INTENT_TIME_INVALID', 'intent.created_at is later than the signer clock allows');
  return t;
}

const enc = new TextEncoder();
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
function sumPrefix(id: SpendIdentity, day: string): string {
  const e = encodeURIComponent;
  return `d/${e(id.keyId)}/${e(id.blockchain)}/${id.walletIndex}/${e(id.asset)}/${day}/`;
}

const transferKey = (transferId: string) => `t/${transferId}`;

/**
 * In-flight reservations per store: a transfer accepted by {@link enforceTransferEvidence} is held
 * (transfer id → its sum key and amount; no sum key for a re-signature, which adds nothing) from
 * the check until its ceremony ends, and its amount counts towards its day's sum meanwhile (then
 * the ledger entry, written only with a produced signature, takes over). Checks are serialised per
 * store, so concurrent sign requests cannot both pass a daily limit only one of them fits in. A
 * request for a transfer held here is refused `SIGNING_IN_PROGRESS` (transient: the coordinator
 * asks again once the holder has ended).
 */
const reservations = new WeakMap<SecureStore, Map<string, { sumKey?: string; amount: bigint }>>();
const checkLocks = new WeakMap<SecureStore, Promise<unknown>>();

function reserved(store: SecureStore): Map<string, { sumKey?: string; amount: bigint }> {
  let m = reservations.get(store);
  if (!m) {
    m = new Map();
    reservations.set(store, m);
  }
  return m;
}

/**
 * Sum (base units) of a daily-limit bucket: the transfers first signed on `day` (signer clock)
 * under `id`, plus in-flight reservations of the same bucket, except `exceptTransferId`.
 */
export async function ledgerSpent(
  store: SecureStore,
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
  store: SecureStore,
  transfer: { readonly transfer_id: string },
): Promise<LedgerEntry | undefined> {
  const v = await store.get('ledger', transferKey(transfer.transfer_id));
  return v ? (JSON.parse(dec.decode(v)) as LedgerEntry) : undefined;
}

function parseJson<T>(text: string | undefined, what: string): T {
  if (text === undefined || text === '') throw new EvidenceRefused('EVIDENCE_MISSING', `${what} missing`);
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new EvidenceRefused('DIGEST_MISMATCH', `${what} is not JSON`);
  }
}

const ALGORITHMS: Record<TransferIntent['key_algorithm'], number> = {
  SECP256K1_ECDSA: KeyAlgorithm.SECP256K1_ECDSA,
  SECP256K1_TAPROOT: KeyAlgorithm.SECP256K1_TAPROOT,
  ED25519: KeyAlgorithm.ED25519,
};

/** Chain fields of an intent, as the chain adapters take them. */
export function intentFields(intent: TransferIntent): TransferFields {
  if (!/^[1-9][0-9]{0,77}$/.test(intent.amount)) throw new EvidenceRefused('DIGEST_MISMATCH', 'intent.amount');
  return {
    asset:
      intent.asset_contract === null
        ? { kind: 'native' }
        : {
            kind: 'token',
            contract: intent.asset_contract,
            symbol: intent.asset_symbol,
            decimals: intent.asset_decimals,
          },
    destination: intent.destination_address,
    amount: BigInt(intent.amount),
  };
}

/** Chain family of a directory blockchain key (`ethereum*`, `bitcoin*` / `litecoin*`, `tron*`). */
function familyOfKey(chain: string): ChainConfig['family'] | undefined {
  if (chain.startsWith('ethereum')) return 'ethereum';
  if (chain.startsWith('bitcoin') || chain.startsWith('litecoin')) return 'bitcoin';
  if (chain.startsWith('tron')) return 'tron';
  return undefined;
}

/**
 * Recompute a transfer's digests from its intent and chain context, by the intent's blockchain
 * family (blockchain keys `ethereum*`, `bitcoin*` / `litecoin*`, `tron*`), and the replacement key
 * of the transaction (see {@link LedgerEntry}).
 * @param chain the signer's configuration of the intent's blockchain: the Bitcoin-family network
 *   is then the configured one (else it is inferred from the blockchain key)
 * @throws EvidenceRefused DIGEST_MISMATCH when the context does not fit the fields or the chain is unknown
 */
export function recomputeIntentDigests(
  intent: TransferIntent,
  context: Json,
  chain?: ChainConfig,
): { digests: DigestToSign[]; replacementKey: string } {
  const fields = intentFields(intent);
  const key = intent.blockchain;
  try {
    if (key.startsWith('ethereum')) {
      const ctx = context as EthereumContext;
      const digests = recomputeEthereumDigests(fields, ctx);
      if (ctx.from !== intent.source_address) throw new Error('context.from is not the intent source_address');
      return { digests, replacementKey: `eth:${ctx.chainId}:${ctx.from}:${ctx.nonce}` };
    }
    if (key.startsWith('bitcoin') || key.startsWith('litecoin')) {
      const ctx = context as Parameters<typeof recomputeBitcoinDigests>[2];
      const network = UTXO_NETWORKS.find((n) => n.id === ctx.network);
      // directory keys name mainnets `<coin>-mainnet`; chains' network ids are `<coin>`
      const expected = chain?.family === 'bitcoin' ? chain.network : key.replace(/-mainnet$/, '');
      if (network === undefined || network.id !== expected) {
        throw new Error('context.network is not the intent chain');
      }
      const digests = recomputeBitcoinDigests(network, fields, ctx);
      const outpoints = ctx.inputs.map((i) => `${i.txid}:${i.vout}`).sort();
      return { digests, replacementKey: `utxo:${key}:${outpoints.join(',')}` };
    }
    if (key.startsWith('tron')) {
      const ctx = context as Parameters<typeof recomputeTronDigests>[1];
      const digests = recomputeTronDigests(fields, ctx);
      if (ctx.from !== intent.source_address) throw new Error('context.from is not the intent source_address');
      // a TRON transaction cannot be replaced: every different tx is a different key
      return { digests, replacementKey: `tron:${bytesToHex(digests[0]?.digest ?? new Uint8Array(0))}` };
    }
  } catch (e) {
    if (e instanceof EvidenceRefused) throw e;
    throw new EvidenceRefused('DIGEST_MISMATCH', `chain context does not fit the intent: ${(e as Error).message}`);
  }
  throw new EvidenceRefused('DIGEST_MISMATCH', `unsupported blockchain ${key}`);
}

/**
 * Coin type of wallet paths on a configured chain (SLIP-0044): 60 on every EVM chain (EIP-155
 * chain ids separate them), 195 on TRON mainnet, 1 on every TRON and Bitcoin-family test network
 * (a TRON transaction has no chain id: a test-network approval must never sign with the mainnet key).
 */
function coinTypeOf(chain: ChainConfig): number {
  if (chain.family === 'ethereum') return 60;
  if (chain.family === 'tron') return chain.network === 'mainnet' ? 195 : 1;
  const n = UTXO_NETWORKS.find((x) => x.id === chain.network);
  if (!n) throw new EvidenceRefused('CHAIN_NOT_CONFIGURED', `unknown network ${chain.network}`);
  return n.coinType;
}

/** Whether `path` is `m/44/{coinType}/{wallet}/{0|1}/{index}` (non-hardened), and of `wallet` when given. */
function isWalletPath(path: unknown, coinType: number, wallet?: number): path is number[] {
  if (!Array.isArray(path) || path.length !== 5) return false;
  if (!path.every((x) => Number.isSafeInteger(x) && x >= 0 && x < 0x8000_0000)) return false;
  return (
    path[0] === 44 &&
    path[1] === coinType &&
    (wallet === undefined || path[2] === wallet) &&
    (path[3] === 0 || path[3] === 1)
  );
}

const DERIVED_LIMIT = 1024;
const derivedKeys = new Map<string, string>();

/**
 * The child public key (33 bytes, hex) of a master key at a non-hardened path (BIP32 CKDpub,
 * `deriveSecp256k1`), memoised (public data). An x-only master key (32 bytes) is taken with even Y,
 * as the coordinator does. @throws EvidenceRefused SENDER_MISMATCH when the key record has no such key
 */
function derivedKey(keys: readonly MasterPublicKey[] | undefined, suite: string, path: readonly number[]): string {
  const k = keys?.find((x) => x.suite === suite);
  if (!k) throw new EvidenceRefused('SENDER_MISMATCH', `the key record has no ${suite} key to derive from`);
  const id = `${k.publicKey}/${k.chainCode}/${path.join('/')}`;
  const hit = derivedKeys.get(id);
  if (hit !== undefined) return hit;
  const pub = hexToBytes(k.publicKey.length === 64 ? `02${k.publicKey}` : k.publicKey);
  const child = bytesToHex(deriveSecp256k1(pub, hexToBytes(k.chainCode), path).publicKey);
  if (derivedKeys.size >= DERIVED_LIMIT) derivedKeys.delete(derivedKeys.keys().next().value as string);
  derivedKeys.set(id, child);
  return child;
}

/** The master key that can spend a UTXO address kind: ECDSA (cggmp) for P2WPKH, Taproot (FROST) for P2TR. */
const SUITE_OF_KIND = { p2wpkh: 'cggmp', p2tr: 'secp256k1-tr' } as const;

function big(v: unknown, what: string): bigint {
  if (typeof v !== 'string' && typeof v !== 'number')
    throw new EvidenceRefused('DIGEST_MISMATCH', `${what}: not a number`);
  try {
    const b = BigInt(v);
    if (b < 0n) throw new Error('negative');
    return b;
  } catch {
    throw new EvidenceRefused('DIGEST_MISMATCH', `${what}: not a non-negative integer`);
  }
}

/**
 * Issue #20 items 1–4 on the signer side: the asset (review finding 3: {@link assetMismatch}), chain
 * id / network, wallet path and sender, Bitcoin-family inputs and change, and the fee bound, each
 * against the signer's own configuration and key record.
 * Called after the digests were recomputed from the same context (so the context's shapes are the
 * adapters' and every address matches its public key).
 * @throws EvidenceRefused ASSET_MISMATCH, CHAIN_MISMATCH, SENDER_MISMATCH, INPUT_KEY_MISMATCH,
 *   CHANGE_MISMATCH, FEE_ABOVE_CAP, FEE_ABOVE_CEILING
 */
function checkChainContext(intent: TransferIntent, context: Json, chain: ChainConfig, trust: EnforcementTrust): void {
  const asset = assetMismatch(intent, chain);
  if (asset !== undefined) throw new EvidenceRefused('ASSET_MISMATCH', asset);
  const coinType = coinTypeOf(chain);
  const path = intent.derivation_path;
  if (!isWalletPath(path, coinType)) {
    throw new EvidenceRefused('SENDER_MISMATCH', `derivation path is not a wallet path m/44/${coinType}/w/{0|1}/i`);
  }
  const wallet = path[2] as number;
  const cap = big(intent.max_fee, 'intent.max_fee');
  const ceiling = BigInt(chain.maxFee);
  let fee: bigint;
  if (chain.family === 'ethereum') {
    const ctx = context as EthereumContext;
    if (ctx.chainId !== chain.chainId)
      throw new EvidenceRefused('CHAIN_MISMATCH', `context chain id ${ctx.chainId} is not ${chain.chainId}`);
    if (intent.key_algorithm !== 'SECP256K1_ECDSA')
      throw new EvidenceRefused('SENDER_MISMATCH', 'EVM signs with ECDSA');
    const sender = derivedKey(trust.keys, 'cggmp', path);
    const address = ethereumAddress(hexToBytes(sender));
    if (ctx.fromPublicKey !== sender || ctx.from !== address || intent.source_address !== address)
      throw new EvidenceRefused('SENDER_MISMATCH', 'the sender is not the key derived for the intent path');
    fee = big(ctx.gas, 'context.gas') * big(ctx.maxFeePerGas, 'context.maxFeePerGas');
  } else if (chain.family === 'tron') {
    const ctx = context as TronContext & { network?: unknown };
    if (ctx.network !== chain.network)
      throw new EvidenceRefused('CHAIN_MISMATCH', `context network ${String(ctx.network)} is not ${chain.network}`);
    if (intent.key_algorithm !== 'SECP256K1_ECDSA')
      throw new EvidenceRefused('SENDER_MISMATCH', 'TRON signs with ECDSA');
    const sender = derivedKey(trust.keys, 'cggmp', path);
    const address = tronAddress(hexToBytes(sender));
    if (ctx.fromPublicKey !== sender || ctx.from !== address || intent.source_address !== address)
      throw new EvidenceRefused('SENDER_MISMATCH', 'the sender is not the key derived for the intent path');
    // TRC-20: fee_limit bounds the energy burnt; a TRX transfer has no fee field (bandwidth only)
    fee = intent.asset_contract === null ? 0n : big(ctx.feeLimit, 'context.feeLimit');
  } else {
    const ctx = context as BitcoinContext;
    const network = UTXO_NETWORKS.find((n) => n.id === chain.network);
    if (!network || ctx.network !== network.id)
      throw new EvidenceRefused('CHAIN_MISMATCH', `context network ${String(ctx.network)} is not ${chain.network}`);
    const kind = intent.key_algorithm === 'SECP256K1_TAPROOT' ? 'p2tr' : 'p2wpkh';
    if (intent.key_algorithm === 'ED25519') throw new EvidenceRefused('SENDER_MISMATCH', 'UTXO keys are secp256k1');
    const sender = derivedKey(trust.keys, SUITE_OF_KIND[kind], path);
    if (intent.source_address !== utxoAddress(network, hexToBytes(sender), kind))
      throw new EvidenceRefused('SENDER_MISMATCH', `source_address is not the ${kind} address of the derived key`);
    let total = 0n;
    for (const [i, input] of ctx.inputs.entries()) {
      // one sign request signs with one key kind: every input is of the algorithm's address kind
      if (input.kind !== kind || !isWalletPath(input.path, coinType, wallet))
        throw new EvidenceRefused('INPUT_KEY_MISMATCH', `inputs[${i}]: not a ${kind} address of the intent's wallet`);
      const pk = derivedKey(trust.keys, SUITE_OF_KIND[kind], input.path);
      if (input.publicKey !== pk || input.address !== utxoAddress(network, hexToBytes(pk), kind))
        throw new EvidenceRefused('INPUT_KEY_MISMATCH', `inputs[${i}]: key is not the one derived for its path`);
      total += big(input.value, `inputs[${i}].value`);
    }
    let out = big(intent.amount, 'intent.amount');
    if (ctx.change !== null) {
      const c = ctx.change;
      const ck = c.kind === 'p2tr' || c.kind === 'p2wpkh' ? c.kind : undefined;
      if (ck === undefined || !isWalletPath(c.path, coinType, wallet))
        throw new EvidenceRefused('CHANGE_MISMATCH', "change: not an address of the intent's wallet (branch 0 or 1)");
      const pk = derivedKey(trust.keys, SUITE_OF_KIND[ck], c.path);
      if (c.publicKey !== pk || c.address !== utxoAddress(network, hexToBytes(pk), ck))
        throw new EvidenceRefused('CHANGE_MISMATCH', 'change: key is not the one derived for its path');
      out += big(c.value, 'change.value');
    }
    if (total < out) throw new EvidenceRefused('DIGEST_MISMATCH', 'outputs exceed inputs');
    fee = total - out;
  }
  if (fee > cap) throw new EvidenceRefused('FEE_ABOVE_CAP', `maximum fee ${fee} exceeds the approved cap ${cap}`);
  if (fee > ceiling)
    throw new EvidenceRefused('FEE_ABOVE_CEILING', `maximum fee ${fee} exceeds this signer's ceiling ${ceiling}`);
}

/** Digest (hex) of an intent without its `max_fee`: what stays the same across a raised fee cap. */
function transferDigest(intent: TransferIntent): string {
  const { max_fee: _cap, ...rest } = intent;
  return bytesToHex(transferIntentDigest(rest as TransferIntent));
}

function samePath(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** What an accepted request leaves to persist: the ledger entries to put in the ceremony's batch. */
export interface EnforcementVerdict {
  readonly intent: TransferIntent;
  /**
   * Ledger writes: the transfer's entry (`t/<transfer_id>`), at its first signature its amount in
   * the daily sums (`d/…`), and the newest policy version seen (`policy/<policy_id>`).
   */
  readonly ledgerOps: StoreOp[];
  /** End the in-flight reservation (call once the ceremony's batch is written or the ceremony failed). */
  release(): void;
}

/**
 * Check a sign request's evidence as described in the module comment.
 * @param store the signer's store (ledger reads)
 * @param req the SignRequest as received
 * @param trust pinned admin device keys and the key's approver devices
 * @param now the signer's clock: the day a first signature counts on, the bound of `created_at`
 * @returns the ledger write to commit together with the produced signature
 * @throws EvidenceRefused with the refusal code; nothing is written
 */
export async function enforceTransferEvidence(
  store: SecureStore,
  req: SignRequest,
  trust: EnforcementTrust,
  now: Date = new Date(),
): Promise<EnforcementVerdict> {
  const prev = checkLocks.get(store) ?? Promise.resolve();
  const run = prev.then(() => enforceLocked(store, req, trust, now));
  checkLocks.set(
    store,
    run.catch(() => {}),
  );
  return run;
}

async function enforceLocked(
  store: SecureStore,
  req: SignRequest,
  trust: EnforcementTrust,
  now: Date,
): Promise<EnforcementVerdict> {
  const ev = req.evidence;
  if (!ev?.intentJson) throw new EvidenceRefused('EVIDENCE_MISSING', 'the sign request carries no transfer evidence');
  const intent = parseJson<TransferIntent>(ev.intentJson, 'evidence.intent');
  const policy = ev.policyJson ? parseJson<SignedPolicy>(ev.policyJson, 'evidence.policy') : null;
  const approvals = (ev.approvalsJson ?? []).map((a, i) => parseJson<Approval>(a, `evidence.approvals[${i}]`));
  const context = parseJson<Json>(ev.chainContextJson, 'evidence.chain_context');
  if (typeof intent !== 'object' || intent === null || typeof intent.transfer_id !== 'string') {
    throw new EvidenceRefused('DIGEST_MISMATCH', 'evidence.intent is not a transfer intent');
  }
  let intentDigest: string;
  try {
    intentDigest = bytesToHex(transferIntentDigest(intent));
  } catch {
    throw new EvidenceRefused('DIGEST_MISMATCH', 'evidence.intent has fields of the wrong type');
  }
  // 1. the request signs exactly what the intent's fields and the chain context give
  if (intent.key_id !== req.keyId) throw new EvidenceRefused('DIGEST_MISMATCH', 'key_id differs from the intent');
  if (ALGORITHMS[intent.key_algorithm] !== req.algorithm) {
    throw new EvidenceRefused('DIGEST_MISMATCH', 'algorithm differs from the intent');
  }
  if (!Array.isArray(intent.derivation_path) || !samePath(intent.derivation_path, req.derivationPath ?? [])) {
    throw new EvidenceRefused('DIGEST_MISMATCH', 'derivation path differs from the intent');
  }
  const chain =
    trust.chains && Object.hasOwn(trust.chains, intent.blockchain) ? trust.chains[intent.blockchain] : undefined;
  if (!chain) throw new EvidenceRefused('CHAIN_NOT_CONFIGURED', `blockchain ${intent.blockchain} is not configured`);
  if (familyOfKey(intent.blockchain) !== chain.family)
    throw new EvidenceRefused('CHAIN_MISMATCH', `blockchain ${intent.blockchain} is configured as ${chain.family}`);
  if (typeof intent.max_fee !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(intent.max_fee))
    throw new EvidenceRefused('DIGEST_MISMATCH', 'intent.max_fee: expected a decimal string of base units');
  // the network is compared before the digests are rebuilt for it
  if (chain.family === 'bitcoin' && (context as { network?: unknown }).network !== chain.network)
    throw new EvidenceRefused('CHAIN_MISMATCH', `context network is not ${chain.network}`);
  const { digests, replacementKey } = recomputeIntentDigests(intent, context, chain);
  checkChainContext(intent, context, chain, trust);
  // 1c. the wallet label is the path's wallet, the creation time is not in the future
  const walletIndex = intent.derivation_path[2] as number; // a wallet path: checkChainContext
  let walletId: string;
  try {
    walletId = walletIdOf(intent.key_id, walletIndex);
  } catch {
    throw new EvidenceRefused('WALLET_MISMATCH', 'no wallet id derives from intent.key_id and the path');
  }
  if (intent.wallet_id !== walletId)
    throw new EvidenceRefused('WALLET_MISMATCH', 'intent.wallet_id is not the wallet of the derivation path');
  intentTime(intent.created_at, now);
  const asked = (req.digests ?? []).map((d) => bytesToHex(d));
  const expected = digests.map((d) => bytesToHex(d.digest));
  if (asked.length !== expected.length || asked.some((d, i) => d !== expected[i])) {
    throw new EvidenceRefused('DIGEST_MISMATCH', 'the digests asked for are not the ones the transfer fields give');
  }
  if (digests.some((d) => !samePath(d.key.path, intent.derivation_path))) {
    throw new EvidenceRefused('DIGEST_MISMATCH', 'a digest is for another key path than the intent');
  }
  // 3. ledger: a transfer is signed once, or re-signed identically, or replaced with fresh approvals
  const key = transferKey(intent.transfer_id);
  if (reserved(store).has(intent.transfer_id)) {
    throw new EvidenceRefused('SIGNING_IN_PROGRESS', 'a signature of this transfer is already in progress');
  }
  const previous = await ledgerEntry(store, intent);
  const sansCap = transferDigest(intent);
  let fresh = approvals;
  if (previous) {
    // the same intent, or the same transfer with only a higher fee cap (approved afresh)
    const raisedCap =
      previous.transfer_digest === sansCap &&
      previous.max_fee !== undefined &&
      BigInt(intent.max_fee) > BigInt(previous.max_fee);
    if ((previous.intent_digest !== intentDigest && !raisedCap) || previous.replacement_key !== replacementKey) {
      throw new EvidenceRefused('TRANSFER_ALREADY_SIGNED', 'this transfer was signed as another transaction');
    }
    const retry = asked.every((d) => previous.digests.includes(d));
    if (!retry) {
      const used = new Set(previous.approvals_used);
      fresh = approvals.filter((a) => !used.has(a.signature));
    }
  }
  // 2. policy, limits from the own ledger, approvals of the key's devices
  // the bucket: signer-derived identity, UTC day of the FIRST signature on the signer's clock (a
  // re-signature is checked against the day it counts on, and adds nothing)
  const identity: SpendIdentity = {
    keyId: intent.key_id,
    blockchain: intent.blockchain,
    walletIndex,
    asset: assetIdentity(intent, chain.family),
  };
  const day = previous?.day ?? utcDay(now);
  const sumKey = previous?.sum_key ?? `${sumPrefix(identity, day)}${intent.transfer_id}`;
  const spentToday = await ledgerSpent(store, identity, day, intent.transfer_id);
  const verdict = verifyTransferEvidence({
    intent,
    policy,
    approvals: fresh,
    trustedAdminKeys: trust.trustedAdminKeys,
    approverKeys: trust.approverKeys,
    spentToday,
  });
  if (!verdict.ok) throw new EvidenceRefused(verdict.refusal, 'the transfer evidence does not allow this signature');
  // policy versions only move forward: once this signer signed under version n of a policy, an
  // older (superseded) version — validly signed as it is — is not accepted any more
  const signedPolicy = policy as SignedPolicy;
  const policyKey = `policy/${signedPolicy.document.policy_id}`;
  const seenVersion = await store.get('ledger', policyKey);
  const newest = seenVersion ? Number(dec.decode(seenVersion)) : 0;
  const learned = await learnedPolicy(store, signedPolicy.document.policy_id);
  // a tombstone is final: no version of a deleted policy signs again, a higher one included
  if (learned?.deleted) {
    throw new EvidenceRefused(
      'POLICY_DELETED',
      `policy ${signedPolicy.document.policy_id} was deleted (signed tombstone, version ${learned.version})`,
    );
  }
  const inForce = Math.max(newest, learned?.version ?? 0);
  if (signedPolicy.document.version < inForce) {
    throw new EvidenceRefused(
      'POLICY_VERSION_SUPERSEDED',
      `policy version ${signedPolicy.document.version} is older than version ${inForce} already in force`,
    );
  }
  // the learned version is one exact document: another one carrying its number (signed too, but
  // never activated) is not the version in force
  if (
    learned !== undefined &&
    signedPolicy.document.version === learned.version &&
    bytesToHex(policyDigest(signedPolicy.document)) !== learned.digest
  ) {
    throw new EvidenceRefused(
      'POLICY_VERSION_SUPERSEDED',
      `policy version ${learned.version} in force is another document (digest ${learned.digest})`,
    );
  }
  const entry: LedgerEntry = {
    transfer_id: intent.transfer_id,
    wallet_id: intent.wallet_id,
    asset_id: intent.asset_id,
    day,
    sum_key: sumKey,
    amount: intent.amount,
    intent_digest: intentDigest,
    digests: [...new Set([...(previous?.digests ?? []), ...asked])],
    replacement_key: replacementKey,
    transfer_digest: sansCap,
    max_fee: intent.max_fee,
    approvals_used: [...new Set([...(previous?.approvals_used ?? []), ...approvals.map((a) => a.signature)])],
    signed_at: previous?.signed_at ?? now.toISOString(),
  };
  const held = reserved(store);
  const amount = BigInt(intent.amount);
  held.set(intent.transfer_id, previous ? { amount } : { sumKey, amount });
  let released = false;
  return {
    intent,
    ledgerOps: [
      { type: 'put', sublevel: 'ledger', key, value: enc.encode(JSON.stringify(entry)) },
      // the amount counts once, on the day of the first signature
      ...(previous
        ? []
        : [{ type: 'put' as const, sublevel: 'ledger' as const, key: sumKey, value: enc.encode(intent.amount) }]),
      {
        type: 'put',
        sublevel: 'ledger',
        key: policyKey,
        value: enc.encode(String(Math.max(newest, signedPolicy.document.version))),
      },
    ],
    release() {
      if (!released) held.delete(intent.transfer_id);
      released = true;
    },
  };
}

/**
 * The highest Admin-signed version of a policy a signer learned from the coordinator's pushes
 * (JSON in sublevel `ledger`, key `policy-known/<policy_id>`).
 */
export interface LearnedPolicy {
  /** The version number (a positive safe integer). */
  readonly version: number;
  /** True when that version is the policy's signed tombstone (the policy is deleted). */
  readonly deleted: boolean;
  /** Hex `policyDigest` of that version's document (which exact version was learned). */
  readonly digest: string;
  /** When this signer stored it (ISO 8601, signer clock). */
  readonly learned_at: string;
}

const learnedKey = (policyId: string) => `policy-known/${policyId}`;

/** What this signer learned of a policy (see {@link LearnedPolicy}), if anything. */
export async function learnedPolicy(store: SecureStore, policyId: string): Promise<LearnedPolicy | undefined> {
  const v = await store.get('ledger', learnedKey(policyId));
  return v ? (JSON.parse(dec.decode(v)) as LearnedPolicy) : undefined;
}

const POLICY_ID = /^[0-9a-zA-Z-]{1,64}$/;

/**
 * Learn pushed policy versions (control.proto `PolicySync`, issue #26 item 3): each JSON
 * `SignedPolicy` must be signed by one of `trustedAdminKeys` over its `policyDigest`
 * (`policySignedByTrustedAdmin`, else `POLICY_SIGNATURE_VERIFICATION_FAILED`, nothing stored);
 * then, when its version is above the one held for its policy (or it is the tombstone of the held
 * version), it becomes the held one (`STORED`), else nothing changes (`KNOWN`). A held tombstone is
 * final: no later push replaces it. Every stored item is written in ONE batch, serialised with the
 * sign checks of {@link enforceTransferEvidence} on the same store (a check sees all of a push or
 * none of it).
 * @param store the signer's store (sublevel `ledger`, keys `policy-known/<policy_id>`)
 * @param signedJson JSON texts of `SignedPolicy` (evidence.ts), at most a few hundred per call
 * @param trustedAdminKeys the signer's pinned Admin device keys (compressed P-256 hex); empty: every
 *   item is `ENFORCEMENT_NOT_CONFIGURED`
 * @param now the signer's clock (`learned_at`)
 * @returns one item per input, in order (policy id and version as read; `heldVersion` 0 when none)
 */
export async function learnSignedPolicies(
  store: SecureStore,
  signedJson: readonly string[],
  trustedAdminKeys: readonly string[],
  now: Date = new Date(),
): Promise<PolicySyncItemWire[]> {
  const prev = checkLocks.get(store) ?? Promise.resolve();
  const run = prev.then(() => learnLocked(store, signedJson, trustedAdminKeys, now));
  checkLocks.set(
    store,
    run.catch(() => {}),
  );
  return run;
}

async function learnLocked(
  store: SecureStore,
  signedJson: readonly string[],
  trustedAdminKeys: readonly string[],
  now: Date,
): Promise<PolicySyncItemWire[]> {
  const held = new Map<string, LearnedPolicy | undefined>();
  const heldOf = async (id: string) => {
    if (!held.has(id)) held.set(id, await learnedPolicy(store, id));
    return held.get(id);
  };
  const items: PolicySyncItemWire[] = [];
  const changed = new Set<string>();
  for (const text of signedJson) {
    let signed: SignedPolicy | undefined;
    try {
      signed = JSON.parse(text) as SignedPolicy;
    } catch {
      signed = undefined;
    }
    const doc = signed?.document as Partial<PolicyDocument> | undefined;
    const policyId = typeof doc?.policy_id === 'string' && POLICY_ID.test(doc.policy_id) ? doc.policy_id : '';
    const version =
      typeof doc?.version === 'number' && Number.isSafeInteger(doc.version) && doc.version >= 1 && doc.version < 2 ** 32
        ? doc.version
        : 0;
    const item = (outcome: PolicySyncOutcome, h: LearnedPolicy | undefined): PolicySyncItemWire => ({
      policyId,
      version,
      outcome,
      heldVersion: h?.version ?? 0,
      heldDeleted: h?.deleted ?? false,
    });
    if (policyId === '' || version === 0 || typeof doc !== 'object') {
      items.push(item('MALFORMED', undefined));
      continue;
    }
    if (trustedAdminKeys.length === 0) {
      items.push(item('ENFORCEMENT_NOT_CONFIGURED', await heldOf(policyId)));
      continue;
    }
    if (!policySignedByTrustedAdmin(signed as SignedPolicy, trustedAdminKeys)) {
      items.push(item('POLICY_SIGNATURE_VERIFICATION_FAILED', await heldOf(policyId)));
      continue;
    }
    const sp = signed as SignedPolicy;
    const tombstone = isPolicyTombstone(sp.document);
    const h = await heldOf(policyId);
    // higher versions replace the held one; at the same version only a tombstone adds anything
    const newer = h === undefined || (!h.deleted && (version > h.version || (version === h.version && tombstone)));
    if (!newer) {
      items.push(item('KNOWN', h));
      continue;
    }
    const next: LearnedPolicy = {
      version,
      deleted: tombstone,
      digest: bytesToHex(policyDigest(sp.document)),
      learned_at: now.toISOString(),
    };
    held.set(policyId, next);
    changed.add(policyId);
    items.push(item('STORED', next));
  }
  if (changed.size > 0) {
    await store.batch(
      [...changed].map((id) => ({
        type: 'put' as const,
        sublevel: 'ledger' as const,
        key: learnedKey(id),
        value: enc.encode(JSON.stringify(held.get(id))),
      })),
    );
  }
  return items;
}
