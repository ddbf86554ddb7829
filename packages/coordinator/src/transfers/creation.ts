/**
 * Creating a transfer (seed §4 "create transfer"; DESIGN §7): validation against the wallet, asset
 * and chain (422 naming the field), the balance check, the policy step with the daily limit under
 * the (wallet, asset, UTC day) row lock, the insert (TRANSFER_CREATED) and the first move out of
 * PENDING (machine.ts) — all in one transaction; plus the dry run and the fee estimate, which
 * validate the same way and create nothing. `TransferService` (service.ts) exposes them.
 */
import { randomUUID } from 'node:crypto';
import { type FeeLevel, InvalidAddressError, InvalidTransferError, parseUnits } from '@custodian/chains';
import {
  evaluatePolicy,
  type PolicyDocument,
  policyCovers,
  type TransferIntent,
  transferIntentDigest,
} from '@custodian/wire';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { Queryable } from '../db/db.js';
import { type BlockchainDef, blockchainByKey } from '../directory.js';
import { ApiError } from '../errors.js';
import { transferKeyId } from '../store.js';
import { refuseArchived } from '../wallets/archive.js';
import { emitEvent } from '../webhooks/outbox.js';
import { notify } from './approvals.js';
import { COUNTED_STATUSES, RESERVED_STATUSES, type TransferStatus, transition } from './machine.js';
import { field, type RequestContext } from './request-context.js';
import type { SelfSpend } from './self-spend.js';
import { nextChangeAddress, walletKeys, walletSources } from './utxo-sources.js';
import {
  approverDeviceIds,
  fieldsOf,
  loadTransfer,
  parsePath,
  type TransferInput,
  type TransferView,
  transferEventData,
  transferView,
  utcDay,
} from './view.js';

/** A validated transfer body: what creation, the dry run and the fee estimate build on. */
export interface Prepared {
  def: BlockchainDef;
  intentBase: Omit<TransferIntent, 'transfer_id' | 'created_at'>;
  amount: bigint;
  masterKeyId: string;
  blockchainId: string;
  approverDevices: string[];
}

/** Validate a transfer body against the wallet, asset and chain. @throws ApiError 422 naming the field */
export async function prepare(
  s: RequestContext,
  q: Queryable,
  profileId: string,
  input: TransferInput,
): Promise<Prepared> {
  const walletId = input.wallet_id.toLowerCase();
  const assetId = input.asset_id.toLowerCase();
  const w = (
    await q.query<{ master_key_id: string; ceremony_id: string | null; parties: unknown; archived_at: Date | null }>(
      `SELECT w.master_key_id, m.ceremony_id, m.parties, w.archived_at FROM wallets w JOIN master_keys m USING (master_key_id)
       WHERE w.profile_id = $1 AND w.wallet_id = $2 AND w.deleted_at IS NULL FOR SHARE OF w`,
      [profileId, walletId],
    )
  )[0];
  if (w === undefined) throw field('body.wallet_id', 'no such wallet in this profile');
  // FOR SHARE: a concurrent archive or delete (wallets/archive.ts, FOR UPDATE) waits for this
  // transaction, or this one sees its result; an archived wallet takes no transfer.
  refuseArchived({ wallet_id: walletId, archived_at: w.archived_at });
  const a = (
    await q.query<{
      symbol: string;
      decimals: number;
      contract_address: string | null;
      blockchain_id: string;
      key: string;
      enabled: boolean;
    }>(
      `SELECT a.symbol, a.decimals, a.contract_address, a.blockchain_id, b.key,
         COALESCE((SELECT pb.enabled FROM profile_blockchains pb WHERE pb.profile_id = $1 AND pb.blockchain_id = b.blockchain_id), b.default_enabled)
         AND COALESCE((SELECT pa.enabled FROM profile_assets pa WHERE pa.profile_id = $1 AND pa.asset_id = a.asset_id), true) AS enabled
       FROM assets a JOIN blockchains b ON b.blockchain_id = a.blockchain_id
       JOIN wallet_blockchains wb ON wb.blockchain_id = a.blockchain_id AND wb.wallet_id = $2
       WHERE a.asset_id = $3`,
      [profileId, walletId, assetId],
    )
  )[0];
  if (a === undefined || !a.enabled) {
    throw field('body.asset_id', 'not an asset enabled for this profile on one of the wallet blockchains');
  }
  const def = blockchainByKey(a.key);
  if (def === undefined) throw new Error(`blockchain ${a.key} is not in the directory`);
  let amount: bigint;
  try {
    amount = parseUnits(input.amount, a.decimals, 'body.amount');
  } catch (e) {
    if (e instanceof InvalidTransferError) {
      throw field(
        'body.amount',
        /decimals/.test(e.message)
          ? `more than ${a.decimals} decimals (never rounded)`
          : 'a positive decimal string in asset units, e.g. "1.5"',
      );
    }
    throw e;
  }
  if (amount <= 0n) throw field('body.amount', 'must be greater than zero');
  let destination: string;
  try {
    destination = s.chains.validateDestination(def, input.destination_address, 'body.destination_address');
  } catch (e) {
    if (e instanceof InvalidAddressError) throw field('body.destination_address', `invalid address (${e.reason})`);
    throw e;
  }
  const src = (
    await q.query<{ address: string; derivation_path: string; address_type: string }>(
      // the wallet's first live deposit address (an archived one only when all are archived): the
      // address self-spends pay (self-spend.ts)
      `SELECT address, derivation_path, address_type FROM addresses WHERE wallet_id = $1 AND blockchain_id = $2
       ORDER BY branch, archived_at IS NOT NULL, address_index LIMIT 1`,
      [walletId, a.blockchain_id],
    )
  )[0];
  if (src === undefined) throw field('body.wallet_id', 'the wallet has no address on this blockchain');
  return {
    def,
    amount,
    masterKeyId: w.master_key_id,
    blockchainId: a.blockchain_id,
    approverDevices: approverDeviceIds(w.parties),
    intentBase: {
      profile_id: profileId,
      wallet_id: walletId,
      blockchain: def.key,
      asset_id: assetId,
      asset_symbol: a.symbol,
      asset_decimals: a.decimals,
      asset_contract: a.contract_address,
      source_address: src.address,
      destination_address: destination,
      amount: amount.toString(),
      derivation_path: parsePath(src.derivation_path),
      key_algorithm: src.address_type === 'p2tr' ? 'SECP256K1_TAPROOT' : 'SECP256K1_ECDSA',
      key_id: transferKeyId({ ceremony_id: w.ceremony_id, master_key_id: w.master_key_id }),
      max_fee: (s.opts.feeCaps?.get(def.key) ?? BigInt(def.defaultMaxFee)).toString(),
    },
  };
}

/** Confirmed balance minus the amounts of transfers not yet sent (base units). */
async function availableBalance(q: Queryable, walletId: string, assetId: string): Promise<bigint> {
  const r = await q.query<{ bal: string; reserved: string }>(
    `SELECT COALESCE((SELECT amount FROM balances WHERE wallet_id = $1 AND asset_id = $2), 0)::text AS bal,
            COALESCE((SELECT sum(amount) FROM transfers WHERE wallet_id = $1 AND asset_id = $2
              AND status = ANY($3::text[])), 0)::text AS reserved`,
    [walletId, assetId, RESERVED_STATUSES],
  );
  return BigInt(r[0]?.bal ?? '0') - BigInt(r[0]?.reserved ?? '0');
}

async function spentToday(q: Queryable, walletId: string, assetId: string, day: string): Promise<bigint> {
  const r = await q.query<{ s: string }>(
    `SELECT COALESCE(sum(amount), 0)::text AS s FROM transfers WHERE wallet_id = $1 AND asset_id = $2 AND day = $3
       AND status = ANY($4::text[])`,
    [walletId, assetId, day, COUNTED_STATUSES],
  );
  return BigInt(r[0]?.s ?? '0');
}

/**
 * {@link create} inside the caller's open transaction `q` (e.g. the one completing the request's
 * idempotency record). The caller runs `afterCommit` once `q` has committed: it pushes the
 * approval requests to the approvers' devices — never for a transfer that may still roll back.
 */
export async function createIn(
  s: RequestContext,
  q: Queryable,
  profileId: string,
  input: TransferInput,
  selfSpend?: { spend: SelfSpend; maxFee: bigint },
): Promise<{ view: TransferView; afterCommit: () => void }> {
  const prepared = await prepare(s, q, profileId, input);
  if (selfSpend !== undefined && prepared.intentBase.destination_address !== prepared.intentBase.source_address)
    throw new Error('a self-spend pays the wallet source address');
  // self-spend.ts: over fixed outpoints, its cap is exactly its fee
  const p: Prepared =
    selfSpend === undefined
      ? prepared
      : { ...prepared, intentBase: { ...prepared.intentBase, max_fee: selfSpend.maxFee.toString() } };
  const now = s.clock();
  const day = utcDay(now);
  // serialise limit checks per wallet, asset and UTC day (a row lock: PGlite and PostgreSQL alike)
  await q.query('INSERT INTO transfer_day_locks (wallet_id, asset_id, day) VALUES ($1,$2,$3) ON CONFLICT DO NOTHING', [
    p.intentBase.wallet_id,
    p.intentBase.asset_id,
    day,
  ]);
  await q.query('SELECT 1 FROM transfer_day_locks WHERE wallet_id = $1 AND asset_id = $2 AND day = $3 FOR UPDATE', [
    p.intentBase.wallet_id,
    p.intentBase.asset_id,
    day,
  ]);
  // a self-spend keeps its value in the wallet and spends only the outpoints it names (which may be
  // an unconfirmed change output): no balance reservation
  if (
    selfSpend === undefined &&
    p.amount > (await availableBalance(q, p.intentBase.wallet_id, p.intentBase.asset_id))
  ) {
    throw field('body.amount', "exceeds the wallet's available balance");
  }
  const intent: TransferIntent = { ...p.intentBase, transfer_id: randomUUID(), created_at: now.toISOString() };
  const spent = await spentToday(q, intent.wallet_id, intent.asset_id, day);
  const policy = await s.policies.match(q, intent);
  let status: TransferStatus;
  let sub: string | null = null;
  let required = 0;
  if (policy === null) {
    status = 'NO_POLICY_FOUND';
    sub = 'NO_POLICY_FOUND';
  } else {
    const v = evaluatePolicy(policy.document, intent, spent);
    if (v.ok) {
      status = 'PENDING_APPROVAL';
      required = v.approvalsRequired;
    } else {
      status = 'REJECTED_BY_POLICY';
      sub = v.refusal;
    }
  }
  const digest = bytesToHex(transferIntentDigest(intent));
  await q.query(
    `INSERT INTO transfers (transfer_id, profile_id, wallet_id, asset_id, blockchain_id, master_key_id, source_address,
       destination_address, amount, external_id, status, sub_status, day, intent, intent_digest, policy_id, policy_version,
       approvals_required, approval_deadline, created_at, updated_at)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9::numeric,$10,'PENDING',NULL,$11,$12::jsonb,$13,$14,$15,$16,$17,$18,$18)`,
    [
      intent.transfer_id,
      profileId,
      intent.wallet_id,
      intent.asset_id,
      p.blockchainId,
      p.masterKeyId,
      intent.source_address,
      intent.destination_address,
      intent.amount,
      input.external_id ?? null,
      day,
      JSON.stringify(intent),
      digest,
      policy?.document.policy_id ?? null,
      policy?.document.version ?? null,
      required,
      status === 'PENDING_APPROVAL' ? new Date(now.getTime() + s.opts.approvalWindowMs) : null,
      now,
    ],
  );
  if (selfSpend !== undefined)
    await q.query('UPDATE transfers SET self_spend = $2::jsonb WHERE transfer_id = $1', [
      intent.transfer_id,
      JSON.stringify(selfSpend.spend),
    ]);
  const created = await loadTransfer(q, intent.transfer_id);
  await emitEvent(q, s.clock, {
    profileId,
    type: 'TRANSFER_CREATED',
    data: transferEventData(transferView(created!)),
  });
  const view = await transition(q, s, intent.transfer_id, 'PENDING', status, sub);
  return {
    view,
    afterCommit: () => {
      if (view.status === 'PENDING_APPROVAL') notify(s, p.approverDevices, view, intent, 0);
    },
  };
}

/**
 * Evaluate a would-be transfer without creating anything (our extension): the matching policy,
 * the decision and the approvals needed. Validation as for creation (422 naming the field). With
 * `against` (a policy version's document, draft or active: the admin dry-run of a version), that
 * document is evaluated instead of the matching ACTIVE policy — by the same `evaluatePolicy` the
 * pipeline runs, with today's spent sum — and `in_scope` says whether its scope covers the
 * transfer at all. Reads only: no transfer, no day lock, no event. Amounts in the answer are
 * base-unit integer strings.
 */
export async function dryRun(s: RequestContext, profileId: string, input: TransferInput, against?: PolicyDocument) {
  const p = await prepare(s, s.db, profileId, input);
  const now = s.clock();
  const intent: TransferIntent = { ...p.intentBase, transfer_id: randomUUID(), created_at: now.toISOString() };
  const spent = await spentToday(s.db, intent.wallet_id, intent.asset_id, utcDay(now));
  const available = await availableBalance(s.db, intent.wallet_id, intent.asset_id);
  const document = against ?? (await s.policies.match(s.db, intent))?.document ?? null;
  const base = {
    amount_base_units: intent.amount,
    spent_today_base_units: spent.toString(),
    available_base_units: available.toString(),
    sufficient_balance: p.amount <= available,
    ...(against === undefined ? {} : { in_scope: policyCovers(against, intent) }),
  };
  if (document === null) {
    return {
      ...base,
      policy: null,
      decision: 'NO_POLICY_FOUND',
      status: 'NO_POLICY_FOUND',
      sub_status: 'NO_POLICY_FOUND',
      approvals_required: 0,
    };
  }
  const v = evaluatePolicy(document, intent, spent);
  return {
    ...base,
    policy: { policy_id: document.policy_id, version: document.version, scope: document.scope },
    decision: v.ok ? 'ALLOW' : 'DENY',
    status: v.ok ? 'PENDING_APPROVAL' : 'REJECTED_BY_POLICY',
    sub_status: v.ok ? null : v.refusal,
    approvals_required: v.ok ? v.approvalsRequired : 0,
  };
}

/** Fee estimate (seed §4) through the chain adapter. @throws ApiError CHAIN_UNAVAILABLE (503), 422 as creation */
export async function feeEstimate(s: RequestContext, profileId: string, input: TransferInput, priority: FeeLevel) {
  const p = await prepare(s, s.db, profileId, input);
  const adapter = s.chains.adapter(p.def.key);
  if (adapter === undefined) throw new ApiError('CHAIN_UNAVAILABLE', `no node is configured for ${p.def.key}`);
  // UTXO chains: over every address of the wallet with a change output, as the build spends
  // (utxo-sources.ts); account chains: the source address
  const utxo = p.def.accountModel === 'utxo';
  const sources = utxo
    ? await walletSources(s.db, p.intentBase.wallet_id, p.blockchainId)
    : (
        await s.db.query<{ public_key: string }>(
          'SELECT public_key FROM addresses WHERE wallet_id = $1 AND blockchain_id = $2 AND address = $3',
          [p.intentBase.wallet_id, p.blockchainId, p.intentBase.source_address],
        )
      ).map((r) => ({
        address: p.intentBase.source_address,
        publicKey: Uint8Array.from(Buffer.from(r.public_key, 'hex')),
        path: p.intentBase.derivation_path,
      }));
  const change = utxo
    ? await nextChangeAddress(s.db, await walletKeys(s.db, p.intentBase.wallet_id), p.blockchainId, p.def)
    : undefined;
  try {
    const est = await adapter.estimateFee(
      { fields: fieldsOf(p.intentBase), sources, ...(change ? { change } : {}) },
      priority,
    );
    return { ...est, priority, blockchain: p.def.key };
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'NODE_RPC_ERROR') throw new ApiError('CHAIN_UNAVAILABLE', 'the blockchain node did not answer');
    if (code === 'INSUFFICIENT_FUNDS') throw field('body.amount', "exceeds the wallet's balance on chain");
    throw e;
  }
}
