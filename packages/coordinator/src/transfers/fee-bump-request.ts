/**
 * Requesting a fee bump of a SENT, unconfirmed transfer (admin API; docs/transfers.md "Cancel and
 * fee bump"): the replacement is built at once and stored with the bump, and a new approval round
 * opens (a SENT → SENT move of machine.ts). Signing and broadcasting the replacement is the
 * pipeline's (sent-step.ts). `TransferService.requestFeeBump` (service.ts) exposes it.
 */
import { randomUUID } from 'node:crypto';
import { type BitcoinContext, cpfpChildFee, estimateVsize, type FeeLevel } from '@custodian/chains';
import { type TransferIntent, transferIntentDigest } from '@custodian/wire';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { Queryable } from '../db/db.js';
import { ApiError } from '../errors.js';
import { notify } from './approvals.js';
import { transition } from './machine.js';
import type { RequestContext } from './request-context.js';
import { bitcoinAdapterOf, createSelfSpend, isUtxoChain, type SelfSpend } from './self-spend.js';
import { loadUnsigned, type StoredUnsigned, storeUnsigned } from './unsigned.js';
import { claimOutpoints, inputsOf, OutpointsTakenError, withUtxoBuildLock } from './utxo-sources.js';
import {
  approverDeviceIds,
  type FeeBump,
  fieldsOf,
  intentCap,
  loadTransfer,
  type TransferRow,
  type TransferView,
} from './view.js';

/**
 * Request a fee bump of a SENT, unconfirmed transfer (admin API): a replacement transaction with
 * higher fees (same nonce / RBF), signed anew — so it needs a new round of device approvals (the
 * policy's quorum), pushed like the first ones; signers accept only approvals not used before.
 *
 * The replacement is built now (fee estimate at `priority`) and stored with the bump, so the
 * approvers decide on the fee it pays. Its fee cap: when the replacement's maximum fee stays
 * within the cap the current transaction was approved under, the round approves that same
 * intent; above it, the round's intent is that intent with `max_fee` raised to exactly the
 * replacement's maximum fee (`fee_bump.cap_raised`) — approvers see and sign the raised cap, and
 * the signers get that intent with the round's approvals.
 * @throws ApiError TRANSFER_NOT_FOUND, TRANSFER_STATE_CONFLICT (not SENT, a bump under way, the
 *   chain cannot replace: e.g. TRON, or the change cannot pay the higher fee; Bitcoin family RBF: a
 *   live transfer or self-spend spends an output of one of the transfer's transactions — a
 *   replacement would evict it: bump that descendant instead), CHAIN_UNAVAILABLE (503)
 */
export async function requestFeeBump(
  s: RequestContext,
  actor: string,
  profileId: string,
  transferId: string,
  priority: FeeLevel,
  method?: 'RBF' | 'CPFP',
): Promise<TransferView> {
  const check = (t: TransferRow | undefined): TransferRow => {
    if (t === undefined) throw new ApiError('TRANSFER_NOT_FOUND', `no transfer ${transferId} in this profile`);
    if (t.status !== 'SENT' || t.delivered_at !== null || t.unsigned === null) {
      throw new ApiError('TRANSFER_STATE_CONFLICT', 'only a SENT transfer not yet confirmed can be fee-bumped');
    }
    if (t.fee_bump !== null && !['DONE', 'REJECTED', 'FAILED'].includes(t.fee_bump.status)) {
      throw new ApiError('TRANSFER_STATE_CONFLICT', `a fee bump is already ${t.fee_bump.status}`);
    }
    return t;
  };
  const before = check(await loadTransfer(s.db, transferId, false, profileId));
  const adapter = s.chains.adapter(before.intent.blockchain);
  if (adapter === undefined)
    throw new ApiError('CHAIN_UNAVAILABLE', `no node is configured for ${before.intent.blockchain}`);
  const current = before.unsigned as StoredUnsigned;
  const utxo = isUtxoChain(before.intent.blockchain);
  if (method === 'CPFP' && !utxo)
    throw new ApiError('TRANSFER_STATE_CONFLICT', 'CPFP applies to Bitcoin-family transactions only');
  if (method === 'CPFP') return requestCpfp(s, actor, profileId, before, priority, check);
  // checked again with the transfer locked, below; here so that the refusal names the cause
  if (utxo) await refuseDescendants(s.db, before);
  let replacement: Awaited<ReturnType<typeof adapter.buildReplacement>>;
  try {
    replacement = await adapter.buildReplacement(loadUnsigned(current, fieldsOf(before.intent)), priority);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'NODE_RPC_ERROR') throw new ApiError('CHAIN_UNAVAILABLE', 'the blockchain node did not answer');
    if (typeof code === 'string')
      throw new ApiError('TRANSFER_STATE_CONFLICT', `no replacement: ${(e as Error).message}`);
    throw e;
  }
  // the intent the current transaction was signed under (a previous bump may have raised its cap)
  const base: TransferIntent = {
    ...before.intent,
    max_fee: current.approvedMaxFee ?? intentCap(before.intent).toString(),
  };
  const capRaised = replacement.maxFee > BigInt(base.max_fee);
  const intent: TransferIntent = capRaised ? { ...base, max_fee: replacement.maxFee.toString() } : base;
  // UTXO: checked and stored under the wallet's build lock — a build of another process that
  // selected this transaction's change (offered until the bump is stored) is stored first and refused below
  const locked = <T>(fn: (signal?: AbortSignal) => Promise<T>) =>
    utxo ? withUtxoBuildLock(s.db, before.intent.blockchain, before.wallet_id, fn) : fn();
  const out = await locked((signal) =>
    s.db.tx(async (q) => {
      const t = check(await loadTransfer(q, transferId, true, profileId));
      if (t.tx_hash !== before.tx_hash)
        throw new ApiError('TRANSFER_STATE_CONFLICT', 'the transaction changed meanwhile');
      if (utxo) {
        // under the wallet's store lock (a lost build lock cannot let a build store a spend of
        // this transaction's change between the check and the commit); the replacement spends the
        // transfer's own inputs, which no other live transfer may hold
        await claimOutpointsOr409(q, t, inputsOf(replacement.context), signal);
        await refuseDescendants(q, t);
      }
      const round = t.approval_round + 1;
      const now = s.clock();
      const bump: FeeBump = {
        status: 'PENDING_APPROVAL',
        method: 'RBF',
        round,
        priority,
        requested_by: actor,
        requested_at: now.toISOString(),
        deadline: new Date(now.getTime() + s.opts.approvalWindowMs).toISOString(),
        intent,
        intent_digest: bytesToHex(transferIntentDigest(intent)),
        cap_raised: capRaised,
        unsigned: storeUnsigned(replacement, intent.max_fee),
      };
      const v = await transition(q, s, t.transfer_id, 'SENT', 'SENT', t.sub_status, {
        fee_bump: JSON.stringify(bump),
        approval_round: round,
      });
      const mk = (
        await q.query<{ parties: unknown }>('SELECT parties FROM master_keys WHERE master_key_id = $1', [
          t.master_key_id,
        ])
      )[0];
      await q.query(
        `INSERT INTO audit_log (audit_id, at, actor_user_id, action, target_type, target_id, details)
       VALUES ($1,$2,$3,'transfer.fee_bump_requested','transfer',$4,$5::jsonb)`,
        [
          randomUUID(),
          now,
          actor,
          t.transfer_id,
          JSON.stringify({ priority, round, max_fee: intent.max_fee, cap_raised: capRaised }),
        ],
      );
      return { v, approvers: approverDeviceIds(mk?.parties), bump };
    }),
  );
  notify(s, out.approvers, out.v, intent, out.bump.round, out.bump.deadline);
  return out.v;
}

/**
 * CPFP bump of a SENT Bitcoin-family transfer (on request, `method: 'CPFP'`: e.g. the node refused
 * a replacement, or the transaction must keep its txid; never automatic — change too small for an
 * RBF bump is too small for a child too, which adds its own size): a self-spend child (self-spend.ts) of the stuck
 * transaction's change output (its output 1: the destination is output 0) whose fee lifts the
 * package (parent + child) to the target rate max(`priority` rate, parent rate + incremental relay
 * fee) — `cpfpChildFee`. The child is a transfer of its own (policy, approvals, signing); this
 * bump is recorded DONE at once with `method: 'CPFP'` and `child_transfer_id` — DONE meaning only
 * that the child was created: it may still end REJECTED / EXPIRED / FAILED without the fee being
 * raised (follow the child transfer).
 * @throws ApiError TRANSFER_STATE_CONFLICT (no change output, the change output is already spent
 *   by a live transfer or self-spend ({@link liveSpenders}), the transaction is not in the node's
 *   mempool, or the change cannot pay the child's fee above dust), CHAIN_UNAVAILABLE
 */
async function requestCpfp(
  s: RequestContext,
  actor: string,
  profileId: string,
  before: TransferRow,
  priority: FeeLevel,
  check: (t: TransferRow | undefined) => TransferRow,
): Promise<TransferView> {
  const adapter = bitcoinAdapterOf(s, before.intent.blockchain);
  const parent = (before.unsigned as StoredUnsigned).context as unknown as BitcoinContext;
  if (parent.change === null || before.tx_hash === null)
    throw new ApiError('TRANSFER_STATE_CONFLICT', 'no CPFP: the transaction has no change output to spend');
  let fee: bigint;
  try {
    const [{ rate }, { relayFee, incrementalFee }] = await Promise.all([
      adapter.feeRate(priority),
      adapter.relayFees(),
    ]);
    fee = cpfpChildFee({
      parentVsize: estimateVsize(
        adapter.network,
        parent.inputs.map((i) => i.kind),
        before.intent.destination_address,
        parent.change.kind,
      ),
      parentFee: BigInt(parent.fee),
      childVsize: estimateVsize(adapter.network, [parent.change.kind], before.source_address),
      targetRate: Math.max(rate, Number(parent.feeRate) + incrementalFee),
      minRate: relayFee,
    });
  } catch (e) {
    if ((e as { code?: string }).code === 'NODE_RPC_ERROR')
      throw new ApiError('CHAIN_UNAVAILABLE', 'the blockchain node did not answer');
    throw e;
  }
  // the child spends an output of the transaction the node holds (not one it refused)
  let state: string;
  try {
    state = (await s.chains.lookup(before.intent.blockchain, before.tx_hash)).state;
  } catch {
    throw new ApiError('CHAIN_UNAVAILABLE', 'the blockchain node did not answer');
  }
  if (state !== 'pending')
    throw new ApiError(
      'TRANSFER_STATE_CONFLICT',
      `no CPFP: the transaction is ${state} on the node, not in its mempool`,
    );
  const change = parent.change;
  const spend: SelfSpend = {
    kind: 'CPFP',
    inputs: [{ txid: before.tx_hash, vout: 1, value: change.value, address: change.address }],
    fee: fee.toString(),
    parent_transfer_id: before.transfer_id,
  };
  // the check that nobody spends the change and the child holding it are stored under the wallet's
  // build lock: a build of another process never selects that output meanwhile
  const out = await withUtxoBuildLock(s.db, before.intent.blockchain, before.wallet_id, (signal) =>
    s.db.tx(async (q) => {
      const t = check(await loadTransfer(q, before.transfer_id, true, profileId));
      if (t.tx_hash !== before.tx_hash)
        throw new ApiError('TRANSFER_STATE_CONFLICT', 'the transaction changed meanwhile');
      // the wallet's store lock first (a lost build lock cannot let a build store a spend of the
      // change between the check below and the commit); liveSpenders is the check
      await claimOutpointsOr409(q, t, [], signal);
      // the change output may already be the input of a later transfer (PgUtxoSource offers
      // unconfirmed own change): a second spend of it is a double spend, one of the two never mined
      const spender = (await liveSpenders(q, t.blockchain_id, t.transfer_id, [t.tx_hash as string], 1))[0];
      if (spender !== undefined)
        throw new ApiError(
          'TRANSFER_STATE_CONFLICT',
          `no CPFP: the change output ${spender.outpoint} is already spent by live transfer ${spender.transfer_id} — that transfer is a child of this one: fee-bump it instead`,
        );
      let child: Awaited<ReturnType<typeof createSelfSpend>>;
      try {
        child = await createSelfSpend(s, q, profileId, t.wallet_id, t.blockchain_id, spend);
      } catch (e) {
        if (e instanceof ApiError && e.code === 'VALIDATION_FAILED')
          throw new ApiError('TRANSFER_STATE_CONFLICT', `no CPFP: ${e.message}`);
        throw e;
      }
      const now = s.clock();
      const bump: FeeBump = {
        status: 'DONE',
        method: 'CPFP',
        child_transfer_id: child.view.transfer_id,
        round: t.approval_round,
        priority,
        requested_by: actor,
        requested_at: now.toISOString(),
        deadline: now.toISOString(),
      };
      const v = await transition(q, s, t.transfer_id, 'SENT', 'SENT', t.sub_status, { fee_bump: JSON.stringify(bump) });
      await q.query(
        `INSERT INTO audit_log (audit_id, at, actor_user_id, action, target_type, target_id, details)
       VALUES ($1,$2,$3,'transfer.fee_bump_requested','transfer',$4,$5::jsonb)`,
        [
          randomUUID(),
          now,
          actor,
          t.transfer_id,
          JSON.stringify({ priority, method: 'CPFP', child_transfer_id: child.view.transfer_id, child_fee: spend.fee }),
        ],
      );
      return { v, afterCommit: child.afterCommit };
    }),
  );
  out.afterCommit();
  return out.v;
}

/**
 * {@link claimOutpoints} for a fee bump of `t` (its wallet's store lock; `outpoints` held by no
 * other live transfer), a taken outpoint as a 409.
 * @throws ApiError TRANSFER_STATE_CONFLICT when another live transfer holds one of `outpoints`;
 *   BuildLockLostError when `signal` aborted (withUtxoBuildLock runs the bump again)
 */
async function claimOutpointsOr409(
  q: Queryable,
  t: TransferRow,
  outpoints: readonly string[],
  signal: AbortSignal | undefined,
): Promise<void> {
  try {
    await claimOutpoints(q, t.intent.blockchain, t.wallet_id, outpoints, {
      except: t.transfer_id,
      ...(signal ? { signal } : {}),
    });
  } catch (e) {
    if (e instanceof OutpointsTakenError) throw new ApiError('TRANSFER_STATE_CONFLICT', `no fee bump: ${e.message}`);
    throw e;
  }
}

/**
 * RBF of a Bitcoin-family transfer: a replacement (new txid) evicts every descendant from the
 * mempools — their inputs never exist again and they would stay SENT forever.
 * @throws ApiError TRANSFER_STATE_CONFLICT when a live transfer or self-spend spends an output of
 *   one of `t.tx_hashes` ({@link liveSpenders})
 */
async function refuseDescendants(q: Queryable, t: TransferRow): Promise<void> {
  const spender = (await liveSpenders(q, t.blockchain_id, t.transfer_id, t.tx_hashes))[0];
  if (spender !== undefined)
    throw new ApiError(
      'TRANSFER_STATE_CONFLICT',
      `no replacement: output ${spender.outpoint} of this transfer's transaction is spent by live transfer ${spender.transfer_id}, which a replacement would evict — fee-bump that descendant instead (its fee lifts the whole package: CPFP in effect)`,
    );
}

/**
 * Live transfers of chain `blockchainId` other than `exceptId` that spend an output of one of
 * `txids` (only output `vout` when given): through their transaction's inputs (`unsigned`, and an
 * open fee bump's replacement) while PENDING…SENT and not delivered, or a self-spend's fixed
 * inputs (held from creation on). `outpoint` is `txid:vout`.
 */
export async function liveSpenders(
  q: Queryable,
  blockchainId: string,
  exceptId: string,
  txids: readonly string[],
  vout?: number,
): Promise<{ transfer_id: string; outpoint: string }[]> {
  return q.query<{ transfer_id: string; outpoint: string }>(
    `SELECT t.transfer_id, (i->>'txid') || ':' || (i->>'vout') AS outpoint
     FROM transfers t, jsonb_array_elements(
       COALESCE(t.unsigned->'context'->'inputs', '[]'::jsonb) || COALESCE(t.self_spend->'inputs', '[]'::jsonb)
       || CASE WHEN t.fee_bump->>'status' IN ('PENDING_APPROVAL', 'PENDING_SIGNATURE', 'SIGNED')
            THEN COALESCE(t.fee_bump->'unsigned'->'context'->'inputs', '[]'::jsonb) ELSE '[]'::jsonb END) i
     WHERE t.blockchain_id = $1 AND t.transfer_id <> $2 AND t.delivered_at IS NULL
       AND t.status IN ('PENDING', 'PENDING_APPROVAL', 'PENDING_SIGNATURE', 'READY_TO_SEND', 'SENT')
       AND i->>'txid' = ANY($3::text[]) AND ($4::int IS NULL OR (i->>'vout')::int = $4::int)
     ORDER BY t.created_at, t.transfer_id`,
    [blockchainId, exceptId, [...txids], vout ?? null],
  );
}
