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
 *    input's key is derived from its path (a path of the same wallet, branch 0 or 1), by the master
 *    key of its own kind (P2WPKH: ECDSA, P2TR: Taproot; `INPUT_KEY_MISMATCH`), and the change is a
 *    change address (branch 1) of that wallet or the source address itself (`CHANGE_MISMATCH`);
 *    the key each digest is signed with (`SignRequest.digestKeys`, issue #28) is the one
 *    recomputed for its input (`DIGEST_MISMATCH`, {@link checkDigestKeys}); the transaction's maximum fee is at most the
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
 *    (the rollback rule of rollback.ts compares it with the detection time);
 * 2. `verifyTransferEvidence` (packages/wire/src/evidence.ts) with the Admin device keys pinned in
 *    the signer's configuration, the key's approver devices (stored with the key at the master key
 *    ceremony) and the amount already spent today taken from the signer's OWN ledger (never from
 *    the coordinator), see "Daily limit" in ledger.ts;
 * 3. the ledger rules of re-signing one transfer (see {@link LedgerEntry}), and policy versions
 *    only moving forward: a version older than the newest this signer signed under OR learned
 *    (`POLICY_VERSION_SUPERSEDED`), and any version of a policy whose signed tombstone it learned
 *    (`POLICY_DELETED`), are refused — see policies.ts.
 *
 * The ledger (sublevel `ledger`: what was signed, the daily sums, the newest policy versions) is
 * described in ledger.ts, the learned policy versions in policies.ts. Files: refusals.ts (the
 * refusal codes), intent.ts (the intent's fields, time and digests), chain-context.ts (item 1b),
 * ledger.ts, policies.ts; this file holds the check itself ({@link enforceTransferEvidence}).
 */
import type { Json } from '@custodian/chains';
import { bytesToHex } from '@custodian/crypto';
import {
  type Approval,
  KeyAlgorithm,
  policyDigest,
  type SignedPolicy,
  type SignRequest,
  type TransferIntent,
  transferIntentDigest,
  verifyTransferEvidence,
  walletIdOf,
} from '@custodian/wire';
import type { ChainsConfig } from '../chains-config.js';
import type { CeremonyStore, StoreOp } from '../storage.js';
import { checkChainContext } from './chain-context.js';
import { familyOfKey, intentTime, recomputeIntentDigests } from './intent.js';
import {
  assetIdentity,
  type LedgerEntry,
  ledgerEntry,
  ledgerSpent,
  reserved,
  type SpendIdentity,
  serialised,
  sumPrefix,
  transferKey,
  utcDay,
} from './ledger.js';
import { learnedPolicy } from './policies.js';
import { EvidenceRefused } from './refusals.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A master public key of the signer's key record (KeyRecord.keys): hex public key and chain code. */
export interface MasterPublicKey {
  readonly suite: string;
  /** Hex public key: secp256k1 keys (`cggmp`, `secp256k1-tr`) SEC1-compressed, 33 bytes with their Y parity; Ed25519 32 bytes. */
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

/** Digest (hex) of an intent without its `max_fee`: what stays the same across a raised fee cap. */
function transferDigest(intent: TransferIntent): string {
  const { max_fee: _cap, ...rest } = intent;
  return bytesToHex(transferIntentDigest(rest as TransferIntent));
}

function samePath(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** The key algorithm a recomputed digest's scheme is signed with (Bitcoin family: P2WPKH / P2TR). */
const ALGORITHM_OF_SCHEME: Record<string, number> = {
  ecdsa: KeyAlgorithm.SECP256K1_ECDSA,
  schnorr: KeyAlgorithm.SECP256K1_TAPROOT,
};

/**
 * Issue #28: the key each digest is signed with is the one the signer recomputed for it. Bitcoin
 * family: each digest's scheme (ecdsa ↔ SECP256K1_ECDSA, schnorr ↔ SECP256K1_TAPROOT) and its
 * input's path; other chains: the intent's algorithm and path. Without `req.digestKeys` every digest
 * is signed with the request's algorithm at the intent's path, so every recomputed key must be that
 * one; with them, exactly one per digest, each equal to its recomputed key.
 * @throws EvidenceRefused DIGEST_MISMATCH otherwise
 */
function checkDigestKeys(
  req: SignRequest,
  intent: TransferIntent,
  digests: readonly { scheme: string; key: { path: readonly number[] } }[],
  family: string,
): void {
  if (family !== 'bitcoin' && digests.some((d) => !samePath(d.key.path, intent.derivation_path)))
    throw new EvidenceRefused('DIGEST_MISMATCH', 'a digest is for another key path than the intent');
  const expected = digests.map((d) => ({
    algorithm: family === 'bitcoin' ? ALGORITHM_OF_SCHEME[d.scheme] : req.algorithm,
    path: d.key.path,
  }));
  const named = req.digestKeys ?? [];
  const asked =
    named.length === 0
      ? digests.map(() => ({ algorithm: req.algorithm, path: intent.derivation_path }))
      : named.map((k) => ({ algorithm: k?.algorithm, path: Array.isArray(k?.derivationPath) ? k.derivationPath : [] }));
  if (asked.length !== expected.length)
    throw new EvidenceRefused('DIGEST_MISMATCH', `digestKeys: ${asked.length} keys for ${expected.length} digests`);
  for (const [i, e] of expected.entries()) {
    const a = asked[i] as (typeof asked)[number];
    if (e.algorithm === undefined || a.algorithm !== e.algorithm || !samePath(a.path, e.path))
      throw new EvidenceRefused(
        'DIGEST_MISMATCH',
        named.length === 0
          ? `digests[${i}]: signed with another key than the intent's (per-digest keys needed)`
          : `digestKeys[${i}]: not the key the chain context gives for this digest`,
      );
  }
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
  store: CeremonyStore,
  req: SignRequest,
  trust: EnforcementTrust,
  now: Date = new Date(),
): Promise<EnforcementVerdict> {
  return serialised(store, () => enforceLocked(store, req, trust, now));
}

async function enforceLocked(
  store: CeremonyStore,
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
  checkDigestKeys(req, intent, digests, chain.family);
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
