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
 * 2. `verifyTransferEvidence` (packages/wire/src/evidence.ts) with the Admin device keys pinned in
 *    the signer's configuration, the key's approver devices (stored with the key at the master key
 *    ceremony) and the spent amount of the intent's wallet, asset and UTC day taken from the
 *    signer's OWN ledger (never from the coordinator);
 * 3. the ledger rules of re-signing one transfer (see {@link LedgerEntry}), and policy versions
 *    only moving forward (a version older than one already signed under is refused).
 *
 * The ledger lives in the signer's encrypted LevelDB store (sublevel `ledger`) and its entry is
 * written in the same batch as the ceremony's audit record, only when the signature was produced.
 */

import {
  type DigestToSign,
  type EthereumContext,
  type Json,
  recomputeBitcoinDigests,
  recomputeEthereumDigests,
  recomputeTronDigests,
  type TransferFields,
  UTXO_NETWORKS,
} from '@custodian/chains';
import { bytesToHex } from '@custodian/crypto';
import {
  type Approval,
  type EvidenceRefusal,
  KeyAlgorithm,
  type SignedPolicy,
  type SignRequest,
  type TransferIntent,
  transferIntentDigest,
  verifyTransferEvidence,
} from '@custodian/wire';
import type { SecureStore, StoreOp } from './store.js';

/** Why a signer refuses a transfer signature: the evidence codes plus the ledger's own. */
export type SignerRefusal =
  | EvidenceRefusal
  /** The request carries no transfer evidence (every signature is for a transfer). */
  | 'EVIDENCE_MISSING'
  /**
   * The signer has no trusted Admin device configured and does not opt out of enforcement
   * (`allowUnenforcedSigning`): it cannot check any evidence, so it signs nothing.
   */
  | 'ENFORCEMENT_NOT_CONFIGURED'
  /** The transfer was already signed as another transaction that is not a fee replacement of it. */
  | 'TRANSFER_ALREADY_SIGNED'
  /** The policy version is older than one this signer already signed under (a superseded version replayed). */
  | 'POLICY_VERSION_SUPERSEDED';

/** A refusal raised by {@link enforceTransferEvidence}; `code` travels back as the CeremonyResult's error. */
export class EvidenceRefused extends Error {
  override readonly name = 'EvidenceRefused';
  constructor(
    readonly code: SignerRefusal,
    detail: string,
  ) {
    super(`${code}: ${detail}`);
  }
}

/** What the signer trusts, from its configuration and key records. */
export interface EnforcementTrust {
  /** Compressed P-256 public keys (hex, 33 bytes) of the Admin devices whose policy signatures are accepted. */
  readonly trustedAdminKeys: readonly string[];
  /** The key's approver devices: device id → compressed P-256 public key (hex). */
  readonly approverKeys: ReadonlyMap<string, string>;
}

/**
 * One signed transfer in a signer's ledger (JSON in sublevel `ledger`, key
 * `<wallet_id>/<asset_id>/<YYYY-MM-DD>/<transfer_id>`).
 *
 * Re-signing the same `transfer_id` is allowed only (a) for the very same digests (a retry after
 * the coordinator lost the result: no second transaction can come out of it), or (b) for a fee
 * replacement — same `replacement_key` (Ethereum: sender and nonce; Bitcoin family: the spent
 * outpoints) — and then only with approvals not used for an earlier signature of the transfer.
 */
export interface LedgerEntry {
  readonly transfer_id: string;
  readonly wallet_id: string;
  readonly asset_id: string;
  /** UTC day of the intent's `created_at`. */
  readonly day: string;
  /** Base units, decimal string. */
  readonly amount: string;
  readonly intent_digest: string;
  /** Hex digests of every signature made for the transfer. */
  readonly digests: readonly string[];
  readonly replacement_key: string;
  /** Signatures (hex) of the approvals already used. */
  readonly approvals_used: readonly string[];
  readonly signed_at: string;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** UTC day (YYYY-MM-DD) of an ISO 8601 time. @throws EvidenceRefused DIGEST_MISMATCH when unparsable */
export function utcDay(iso: string): string {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) throw new EvidenceRefused('DIGEST_MISMATCH', 'intent.created_at is not a date');
  return new Date(t).toISOString().slice(0, 10);
}

function ledgerPrefix(walletId: string, assetId: string, day: string): string {
  return `${walletId}/${assetId}/${day}/`;
}

/**
 * In-flight reservations per store: a transfer accepted by {@link enforceTransferEvidence} counts
 * towards its day's limit from the check until its ceremony ends (then the ledger entry, written
 * only with a produced signature, takes over). Checks are serialised per store, so concurrent sign
 * requests cannot both pass a daily limit only one of them fits in.
 */
const reservations = new WeakMap<SecureStore, Map<string, bigint>>();
const checkLocks = new WeakMap<SecureStore, Promise<unknown>>();

function reserved(store: SecureStore): Map<string, bigint> {
  let m = reservations.get(store);
  if (!m) {
    m = new Map();
    reservations.set(store, m);
  }
  return m;
}

/** Sum (base units) of the ledger's transfers of a wallet and asset on a UTC day, except `exceptTransferId`. */
export async function ledgerSpent(
  store: SecureStore,
  walletId: string,
  assetId: string,
  day: string,
  exceptTransferId?: string,
): Promise<bigint> {
  let sum = 0n;
  const prefix = ledgerPrefix(walletId, assetId, day);
  for (const k of await store.keys('ledger', prefix)) {
    if (exceptTransferId !== undefined && k === `${prefix}${exceptTransferId}`) continue;
    const v = await store.get('ledger', k);
    if (v) sum += BigInt((JSON.parse(dec.decode(v)) as LedgerEntry).amount);
  }
  for (const [k, amount] of reserved(store)) {
    if (k.startsWith(prefix) && k !== `${prefix}${exceptTransferId}` && !(await store.get('ledger', k))) sum += amount;
  }
  return sum;
}

/** The ledger entry of a transfer, if it was signed before. */
export async function ledgerEntry(store: SecureStore, intent: TransferIntent): Promise<LedgerEntry | undefined> {
  const v = await store.get(
    'ledger',
    `${ledgerPrefix(intent.wallet_id, intent.asset_id, utcDay(intent.created_at))}${intent.transfer_id}`,
  );
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

/**
 * Recompute a transfer's digests from its intent and chain context, by the intent's blockchain
 * family (blockchain keys `ethereum*`, `bitcoin*` / `litecoin*`, `tron*`), and the replacement key
 * of the transaction (see {@link LedgerEntry}).
 * @throws EvidenceRefused DIGEST_MISMATCH when the context does not fit the fields or the chain is unknown
 */
export function recomputeIntentDigests(
  intent: TransferIntent,
  context: Json,
): { digests: DigestToSign[]; replacementKey: string } {
  const fields = intentFields(intent);
  const chain = intent.blockchain;
  try {
    if (chain.startsWith('ethereum')) {
      const ctx = context as EthereumContext;
      const digests = recomputeEthereumDigests(fields, ctx);
      if (ctx.from !== intent.source_address) throw new Error('context.from is not the intent source_address');
      return { digests, replacementKey: `eth:${ctx.chainId}:${ctx.from}:${ctx.nonce}` };
    }
    if (chain.startsWith('bitcoin') || chain.startsWith('litecoin')) {
      const ctx = context as Parameters<typeof recomputeBitcoinDigests>[2];
      const network = UTXO_NETWORKS.find((n) => n.id === ctx.network);
      // directory keys name mainnets `<coin>-mainnet`; chains' network ids are `<coin>`
      if (network === undefined || network.id !== chain.replace(/-mainnet$/, '')) {
        throw new Error('context.network is not the intent chain');
      }
      const digests = recomputeBitcoinDigests(network, fields, ctx);
      const outpoints = ctx.inputs.map((i) => `${i.txid}:${i.vout}`).sort();
      return { digests, replacementKey: `utxo:${chain}:${outpoints.join(',')}` };
    }
    if (chain.startsWith('tron')) {
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
  throw new EvidenceRefused('DIGEST_MISMATCH', `unsupported blockchain ${chain}`);
}

function samePath(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** What an accepted request leaves to persist: the ledger entry to put in the ceremony's batch. */
export interface EnforcementVerdict {
  readonly intent: TransferIntent;
  /** Ledger writes: the transfer's entry and the newest policy version seen (`policy/<policy_id>`). */
  readonly ledgerOps: StoreOp[];
  /** End the in-flight reservation (call once the ceremony's batch is written or the ceremony failed). */
  release(): void;
}

/**
 * Check a sign request's evidence as described in the module comment.
 * @param store the signer's store (ledger reads)
 * @param req the SignRequest as received
 * @param trust pinned admin device keys and the key's approver devices
 * @param now time of the check (ISO 8601 of the ledger entry)
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
  const { digests, replacementKey } = recomputeIntentDigests(intent, context);
  const asked = (req.digests ?? []).map((d) => bytesToHex(d));
  const expected = digests.map((d) => bytesToHex(d.digest));
  if (asked.length !== expected.length || asked.some((d, i) => d !== expected[i])) {
    throw new EvidenceRefused('DIGEST_MISMATCH', 'the digests asked for are not the ones the transfer fields give');
  }
  if (digests.some((d) => !samePath(d.key.path, intent.derivation_path))) {
    throw new EvidenceRefused('DIGEST_MISMATCH', 'a digest is for another key path than the intent');
  }
  // 3. ledger: a transfer is signed once, or re-signed identically, or replaced with fresh approvals
  const day = utcDay(intent.created_at);
  const key = `${ledgerPrefix(intent.wallet_id, intent.asset_id, day)}${intent.transfer_id}`;
  if (reserved(store).has(key)) {
    throw new EvidenceRefused('TRANSFER_ALREADY_SIGNED', 'a signature of this transfer is already in progress');
  }
  const previous = await ledgerEntry(store, intent);
  let fresh = approvals;
  if (previous) {
    if (previous.intent_digest !== intentDigest || previous.replacement_key !== replacementKey) {
      throw new EvidenceRefused('TRANSFER_ALREADY_SIGNED', 'this transfer was signed as another transaction');
    }
    const retry = asked.every((d) => previous.digests.includes(d));
    if (!retry) {
      const used = new Set(previous.approvals_used);
      fresh = approvals.filter((a) => !used.has(a.signature));
    }
  }
  // 2. policy, limits from the own ledger, approvals of the key's devices
  const spentToday = await ledgerSpent(store, intent.wallet_id, intent.asset_id, day, intent.transfer_id);
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
  if (signedPolicy.document.version < newest) {
    throw new EvidenceRefused(
      'POLICY_VERSION_SUPERSEDED',
      `policy version ${signedPolicy.document.version} is older than version ${newest} already in force`,
    );
  }
  const entry: LedgerEntry = {
    transfer_id: intent.transfer_id,
    wallet_id: intent.wallet_id,
    asset_id: intent.asset_id,
    day,
    amount: intent.amount,
    intent_digest: intentDigest,
    digests: [...new Set([...(previous?.digests ?? []), ...asked])],
    replacement_key: replacementKey,
    approvals_used: [...new Set([...(previous?.approvals_used ?? []), ...approvals.map((a) => a.signature)])],
    signed_at: now.toISOString(),
  };
  const held = reserved(store);
  held.set(key, BigInt(intent.amount));
  let released = false;
  return {
    intent,
    ledgerOps: [
      { type: 'put', sublevel: 'ledger', key, value: enc.encode(JSON.stringify(entry)) },
      {
        type: 'put',
        sublevel: 'ledger',
        key: policyKey,
        value: enc.encode(String(Math.max(newest, signedPolicy.document.version))),
      },
    ],
    release() {
      if (!released) held.delete(key);
      released = true;
    },
  };
}
