/**
 * The READY_TO_SEND step: broadcast the stored signed transaction — unless the node already knows
 * its hash (a broadcast before a restart is never repeated) — → SENT, or FAILED / BROADCAST_FAILED
 * with the node's own words in `error`. {@link send} is also the fee bump's broadcast (sent-step.ts).
 */
import { BroadcastError } from '@custodian/chains';
import { transition } from './machine.js';
import { adapterOf, type StepContext, type StepResult, unhex } from './pipeline-context.js';
import type { StoredUnsigned } from './unsigned.js';
import { loadTransfer, type TransferRow } from './view.js';

/** READY_TO_SEND: broadcast the stored transaction (unless the node knows it) → SENT, or FAILED / BROADCAST_FAILED. */
export async function broadcastStep(x: StepContext, t: TransferRow, _signal: AbortSignal): Promise<StepResult> {
  if (t.signed_tx === null || t.tx_hash === null) throw new Error('READY_TO_SEND without a signed transaction');
  const r = await send(x, t, t.signed_tx, t.tx_hash);
  const row = await x.owned(t.transfer_id, async (q, cur) => {
    if (cur.status !== 'READY_TO_SEND') return cur;
    if (r.ok) await transition(q, x, t.transfer_id, 'READY_TO_SEND', 'SENT', null, { sent_at: x.clock(), error: null });
    else await transition(q, x, t.transfer_id, 'READY_TO_SEND', 'FAILED', 'BROADCAST_FAILED', { error: r.error });
    return loadTransfer(q, t.transfer_id);
  });
  return { row };
}

export async function send(
  x: StepContext,
  t: TransferRow,
  rawHex: string,
  txid: string,
): Promise<{ ok: true } | { ok: false; error: string }> {
  const adapter = adapterOf(x, t);
  const known = await x.chains.lookup(t.intent.blockchain, txid);
  if (known.state !== 'unknown') return { ok: true }; // broadcast before a restart: never again
  try {
    await adapter.broadcast({ chain: t.intent.blockchain, rawTx: unhex(rawHex), txid });
    return { ok: true };
  } catch (e) {
    if (!(e instanceof BroadcastError)) throw e;
    const again = await x.chains.lookup(t.intent.blockchain, txid);
    if (again.state !== 'unknown') return { ok: true };
    // the node's own words (e.g. "nonce too low"), logged and stored in the transfer's `error`
    const ctx = (t.unsigned as StoredUnsigned | null)?.context as { nonce?: unknown } | null | undefined;
    x.opts.log('warn', 'broadcast refused by the node', {
      transfer_id: t.transfer_id,
      tx_hash: txid,
      ...(typeof ctx?.nonce === 'number' ? { nonce: ctx.nonce } : {}),
      err: e.message,
    });
    return { ok: false, error: e.message };
  }
}
