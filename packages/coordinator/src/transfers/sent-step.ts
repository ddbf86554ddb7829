/**
 * The SENT step: a fee bump's replacement to sign (same waiting rules as signing-step.ts, on the
 * bump's own status) or to broadcast, and the confirmation follow-up (TRANSFER_DELIVERED, once,
 * machine.ts {@link markDelivered}). A transfer confirmed while its bump waits for signers is
 * delivered, and the bump, moot, ends FAILED / ALREADY_CONFIRMED. A TRON transaction that can no
 * longer be mined (past its expiration, in no block, not pending) ends FAILED / EXPIRED_ON_CHAIN.
 */
import type { FeeLevel } from '@custodian/chains';
import { blockchainByKey } from '../directory.js';
import { send } from './broadcast-step.js';
import { FEE_CAP_EXCEEDED, nativeAmount } from './fee-cap.js';
import { markDelivered, transition } from './machine.js';
import {
  ALREADY_CONFIRMED,
  adapterOf,
  EXPIRED_ON_CHAIN,
  hex,
  SIGNING_WINDOW_EXPIRED,
  type StepContext,
  type StepResult,
  WAITING_FOR_SIGNERS,
} from './pipeline-context.js';
import { attemptSignature, chainSignatures, retryDelay } from './signing-attempt.js';
import { loadUnsigned, type StoredUnsigned, storeUnsigned } from './unsigned.js';
import { type FeeBump, fieldsOf, intentCap, loadTransfer, type TransferRow } from './view.js';

/**
 * SENT: a fee bump to sign or broadcast, then the confirmation follow-up. With a bump to sign
 * the confirmations are looked at first: a transfer already confirmed is delivered (a bump waiting
 * for its signers never holds that back) and its bump, moot, ends FAILED / ALREADY_CONFIRMED
 * without a replacement being signed.
 */
export async function sentStep(x: StepContext, t: TransferRow, signal: AbortSignal): Promise<StepResult> {
  let row: TransferRow | undefined = t;
  if (row.fee_bump?.status === 'PENDING_SIGNATURE' && row.delivered_at === null && (await confirmStep(x, row))) {
    const done = await x.owned(t.transfer_id, async (q, cur) => {
      if (cur.fee_bump?.status !== 'PENDING_SIGNATURE') return cur;
      x.backoffs.delete(`${t.transfer_id}/bump/${cur.fee_bump.round}`);
      const { sub_status: _s, error: _e, ...base } = cur.fee_bump;
      await transition(q, x, t.transfer_id, 'SENT', 'SENT', cur.sub_status, {
        fee_bump: JSON.stringify({
          ...base,
          status: 'FAILED',
          sub_status: ALREADY_CONFIRMED,
          error: `${ALREADY_CONFIRMED}: the transfer's transaction was confirmed before the replacement was signed`,
        }),
      });
      return loadTransfer(q, t.transfer_id);
    });
    return done === undefined ? { row: undefined } : { release: null };
  }
  if (row.fee_bump?.status === 'PENDING_SIGNATURE') {
    const r = await bumpSignStep(x, row, signal);
    if ('release' in r) return r;
    row = r.row;
  }
  if (row?.fee_bump?.status === 'SIGNED') row = await bumpBroadcastStep(x, row);
  if (row === undefined) return { row: undefined };
  if (row.status !== 'SENT' || row.delivered_at !== null) return { release: null };
  if (await confirmStep(x, row)) return { release: null };
  if (await expiredStep(x, row)) return { release: null };
  return { release: x.opts.confirmationRecheckMs };
}

/**
 * TRON only: the transfer's transaction can never be mined (ChainRegistry.tronExpired: a block with
 * timestamp ≥ `unsigned.context.expiration` has the chain's confirmations, and the transaction is in
 * no block and not pending) → FAILED / EXPIRED_ON_CHAIN with TRANSFER_FAILED. Decided from the node
 * alone, so a restart reaches the same outcome. TRON has no fee bump: the transaction is the only one.
 * @returns true when the transfer was failed (or someone else moved it), false when it may still be mined
 */
export async function expiredStep(x: StepContext, t: TransferRow): Promise<boolean> {
  if (blockchainByKey(t.intent.blockchain)?.family !== 'tron' || t.tx_hash === null) return false;
  const expiration = (t.unsigned as { context?: { expiration?: unknown } } | null)?.context?.expiration;
  if (typeof expiration !== 'number') return false;
  if (t.tx_hashes.some((h) => h !== t.tx_hash)) return false; // never on TRON (no replacement)
  if (!(await x.chains.tronExpired(t.intent.blockchain, t.tx_hash, expiration))) return false;
  const at = new Date(expiration).toISOString();
  await x.owned(t.transfer_id, async (q, cur) => {
    if (cur.status !== 'SENT' || cur.delivered_at !== null) return;
    await transition(q, x, t.transfer_id, 'SENT', 'FAILED', EXPIRED_ON_CHAIN, {
      error: `${EXPIRED_ON_CHAIN}: transaction ${t.tx_hash} expired at ${at} without being mined; the funds did not leave the wallet — create a new transfer`,
    });
  });
  return true;
}

/** A fee bump's replacement: build (once) and sign it, with the same waiting rules as {@link signStep}. */
export async function bumpSignStep(x: StepContext, t: TransferRow, signal: AbortSignal): Promise<StepResult> {
  const adapter = adapterOf(x, t);
  const bump = t.fee_bump as FeeBump;
  // the intent this round's approvals are over (a bump requested before fee caps has none: the transfer's)
  const intent = bump.intent ?? t.intent;
  const since = Date.parse(bump.signing_since ?? bump.requested_at);
  const windowEnd = (Number.isNaN(since) ? x.clock().getTime() : since) + x.opts.signingWindowMs;
  const bumpFailed = (sub: string, status: 'FAILED' | 'REJECTED', error: string) =>
    x.owned(t.transfer_id, async (q, cur) => {
      if (cur.fee_bump?.status !== 'PENDING_SIGNATURE') return cur;
      await transition(q, x, t.transfer_id, 'SENT', 'SENT', cur.sub_status, {
        fee_bump: JSON.stringify({ ...cur.fee_bump, status, sub_status: sub, error }),
      });
      return loadTransfer(q, t.transfer_id);
    });
  const expired = (missing?: string) =>
    bumpFailed(
      SIGNING_WINDOW_EXPIRED,
      'FAILED',
      `${SIGNING_WINDOW_EXPIRED}: no signature within ${Math.round(x.opts.signingWindowMs / 1000)} s${missing ? `; ${missing}` : ''}`,
    );
  if (x.clock().getTime() >= windowEnd) return { row: await expired() };
  let stored = bump.unsigned ?? null;
  if (stored === null) {
    // a bump requested before replacements were built at request time
    const previous = loadUnsigned(t.unsigned as StoredUnsigned, fieldsOf(t.intent));
    const replacement = await adapter.buildReplacement(previous, bump.priority as FeeLevel);
    const st = storeUnsigned(replacement, intent.max_fee);
    const kept = await x.owned(t.transfer_id, async (q, cur) => {
      if (cur.fee_bump?.status !== 'PENDING_SIGNATURE') return undefined;
      if (cur.fee_bump.unsigned) return cur.fee_bump.unsigned; // stored by an earlier holder: that one is signed
      await q.query('UPDATE transfers SET fee_bump = $2::jsonb WHERE transfer_id = $1', [
        t.transfer_id,
        JSON.stringify({ ...cur.fee_bump, unsigned: st }),
      ]);
      return st;
    });
    if (kept === undefined) return { row: undefined };
    stored = kept;
  }
  if (BigInt(stored.maxFee) > intentCap(intent)) {
    // approved under a lower cap than the replacement pays: never sent to the signers
    const def = blockchainByKey(t.intent.blockchain);
    const error = `${FEE_CAP_EXCEEDED}: the replacement can pay up to ${def ? nativeAmount(def, BigInt(stored.maxFee)) : stored.maxFee}, above the fee cap this round approved`;
    return { row: await bumpFailed(FEE_CAP_EXCEEDED, 'FAILED', error) };
  }
  const unsigned = loadUnsigned(stored, fieldsOf(t.intent));
  const out = await attemptSignature(x, t, unsigned, bump.round, intent, signal);
  if (out.kind === 'abandoned') return { release: null };
  const key = `${t.transfer_id}/bump/${bump.round}`;
  if (out.kind === 'retry') {
    if (x.clock().getTime() >= windowEnd) return { row: await expired(out.missing) };
    const error = `${WAITING_FOR_SIGNERS}: ${out.missing}`;
    const row = await x.owned(t.transfer_id, async (q, cur) => {
      if (cur.fee_bump?.status !== 'PENDING_SIGNATURE') return cur;
      const next = JSON.stringify({ ...cur.fee_bump, sub_status: WAITING_FOR_SIGNERS, error });
      if (cur.fee_bump.sub_status !== WAITING_FOR_SIGNERS)
        await transition(q, x, t.transfer_id, 'SENT', 'SENT', cur.sub_status, { fee_bump: next });
      else if (cur.fee_bump.error !== error)
        await q.query('UPDATE transfers SET fee_bump = $2::jsonb WHERE transfer_id = $1', [t.transfer_id, next]);
      return cur;
    });
    if (row === undefined) return { row: undefined };
    return { release: retryDelay(x, key, windowEnd) };
  }
  x.backoffs.delete(key);
  if (out.kind === 'failed') {
    const res = out.res;
    return {
      row: await bumpFailed(
        res.reason === 'REFUSED' ? res.refusal : 'SIGNING_FAILED',
        res.reason === 'REFUSED' ? 'REJECTED' : 'FAILED',
        res.reason === 'REFUSED'
          ? `refused by ${res.by.kind} ${res.by.id}: ${res.refusal}`
          : `aborted, blaming ${res.culprits.map((p) => `${p.kind} ${p.id}`).join(', ')}: ${res.message}`,
      ),
    };
  }
  const signed = adapter.attachSignatures(unsigned, chainSignatures(unsigned, out.res));
  const row = await x.owned(t.transfer_id, async (q, cur) => {
    if (cur.fee_bump?.status !== 'PENDING_SIGNATURE') return cur;
    const { sub_status: _s, error: _e, ...base } = cur.fee_bump;
    // the replacement becomes the transfer's transaction; the previous hashes stay watched. The
    // transaction it replaces is kept with the bump: a refused broadcast restores it
    // (bumpBroadcastStep), so nothing ever points at a transaction no node holds
    const previous = { tx_hash: cur.tx_hash, signed_tx: cur.signed_tx, unsigned: cur.unsigned };
    await transition(q, x, t.transfer_id, 'SENT', 'SENT', cur.sub_status, {
      fee_bump: JSON.stringify({ ...base, status: 'SIGNED', previous }),
      // the cap it was approved under goes with it: the next bump starts from that intent
      unsigned: JSON.stringify({ ...stored, approvedMaxFee: intent.max_fee }),
      signed_tx: hex(signed.rawTx),
      tx_hash: signed.txid,
      tx_hashes: JSON.stringify([...cur.tx_hashes, signed.txid]),
    });
    return loadTransfer(q, t.transfer_id);
  });
  return { row };
}

/**
 * Broadcast a SIGNED fee bump's replacement (the transfer's `tx_hash` / `signed_tx` since
 * {@link bumpSignStep}). Accepted (or already known to the node): the bump is DONE. Refused: the
 * bump ends FAILED / BROADCAST_FAILED and, in the same database transaction, the transfer's
 * `tx_hash`, `signed_tx`, `unsigned` and `tx_hashes` return to the transaction actually broadcast
 * (`fee_bump.previous`, stored at signing; `fee_bump.refused_tx_hash` names the refused one) — so
 * PgUtxoSource never offers the change of a transaction that does not exist, and CPFP / a new
 * bump start from the broadcast transaction. Restart-safe: both states are durable, and a
 * replacement already known to the node is never broadcast again (`send`).
 */
export async function bumpBroadcastStep(x: StepContext, t: TransferRow): Promise<TransferRow | undefined> {
  if (t.signed_tx === null || t.tx_hash === null) throw new Error('fee bump SIGNED without a transaction');
  const r = await send(x, t, t.signed_tx, t.tx_hash);
  return x.owned(t.transfer_id, async (q, cur) => {
    if (cur.fee_bump?.status !== 'SIGNED') return cur;
    const { previous, ...base } = cur.fee_bump;
    if (r.ok) {
      await transition(q, x, t.transfer_id, 'SENT', 'SENT', cur.sub_status, {
        fee_bump: JSON.stringify({ ...base, status: 'DONE' }),
      });
      return loadTransfer(q, t.transfer_id);
    }
    const failed = { ...base, status: 'FAILED', sub_status: 'BROADCAST_FAILED', error: r.error };
    const refused = cur.tx_hash;
    await transition(
      q,
      x,
      t.transfer_id,
      'SENT',
      'SENT',
      cur.sub_status,
      previous?.tx_hash
        ? {
            fee_bump: JSON.stringify({ ...failed, refused_tx_hash: refused }),
            tx_hash: previous.tx_hash,
            signed_tx: previous.signed_tx,
            unsigned: JSON.stringify(previous.unsigned),
            tx_hashes: JSON.stringify(cur.tx_hashes.filter((h) => h !== refused || h === previous.tx_hash)),
          }
        : { fee_bump: JSON.stringify(failed) },
    );
    return loadTransfer(q, t.transfer_id);
  });
}

/** Mined with the chain's confirmations (any of the transfer's transactions)? Then TRANSFER_DELIVERED (once). */
export async function confirmStep(x: StepContext, t: TransferRow): Promise<boolean> {
  const need = x.chains.confirmations(t.intent.blockchain);
  for (const h of [...t.tx_hashes].reverse()) {
    const l = await x.chains.lookup(t.intent.blockchain, h);
    if (l.state === 'mined' && l.confirmations >= need) {
      await x.owned(t.transfer_id, (q) =>
        markDelivered(q, x, t.transfer_id, h, { block_number: l.blockNumber, execution_success: l.success }),
      );
      return true;
    }
  }
  return false;
}
