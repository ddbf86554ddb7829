/**
 * The PENDING_SIGNATURE step: build the transaction and bring it within the intent's fee cap
 * (stored before any signer sees it), put Ethereum transactions in nonce order, sign
 * (→ READY_TO_SEND with the raw transaction stored before the broadcast), or wait for missing
 * signers (sub_status WAITING_FOR_SIGNERS, retried) until the signing window is over (FAILED /
 * SIGNING_WINDOW_EXPIRED); a refusal → REJECTED, an abort naming culprits → FAILED /
 * SIGNING_FAILED. Every status change is a machine.ts move; pipeline.ts has the rules in full.
 */
import {
  type EthereumContext,
  recomputeEthereumDigests,
  type SignedTransfer,
  type UnsignedTransfer,
} from '@custodian/chains';
import type { Queryable } from '../db/db.js';
import { blockchainByKey } from '../directory.js';
import type { GatewaySignResult } from '../signing/gateway.js';
import { emitEvent } from '../webhooks/outbox.js';
import { ethereumNonce, type NonceNode } from './eth-nonce.js';
import { capFee, FEE_CAP_EXCEEDED, nativeAmount } from './fee-cap.js';
import { type TransferStatus, transition } from './machine.js';
import {
  adapterOf,
  hex,
  SIGNING_WINDOW_EXPIRED,
  type StepContext,
  type StepResult,
  unhex,
  WAITING_FOR_SIGNERS,
} from './pipeline-context.js';
import { bitcoinAdapterOf, fixedInputsOf } from './self-spend.js';
import { attemptSignature, chainSignatures, retryDelay } from './signing-attempt.js';
import { loadUnsigned, type StoredUnsigned, storeUnsigned } from './unsigned.js';
import {
  BuildLockLostError,
  ChangeAddressTakenError,
  claimOutpoints,
  inputsOf,
  nextChangeAddress,
  OutpointsTakenError,
  recordChangeAddress,
  walletKeys,
  walletSources,
  withUtxoBuildLock,
} from './utxo-sources.js';
import { fieldsOf, intentCap, loadTransfer, type TransferRow } from './view.js';

/** PENDING_SIGNATURE: build and store the transaction (once), then sign it (→ READY_TO_SEND), or wait and retry. */
export async function signStep(x: StepContext, claimed: TransferRow, signal: AbortSignal): Promise<StepResult> {
  let t = claimed;
  const adapter = adapterOf(x, t);
  if (t.sub_status === 'CHAIN_UNAVAILABLE') {
    // the window counts the wait for signers, not for a chain node: it starts now that one is here
    const row = await x.owned(t.transfer_id, async (q, cur) => {
      if (cur.status !== 'PENDING_SIGNATURE' || cur.sub_status !== 'CHAIN_UNAVAILABLE') return cur;
      await transition(q, x, t.transfer_id, 'PENDING_SIGNATURE', 'PENDING_SIGNATURE', null, { error: null });
      await q.query('UPDATE transfers SET signing_since = $2 WHERE transfer_id = $1', [t.transfer_id, x.clock()]);
      return loadTransfer(q, t.transfer_id);
    });
    if (row === undefined || row.status !== 'PENDING_SIGNATURE') return { row };
    t = row;
  }
  const windowEnd = (t.signing_since ?? t.updated_at).getTime() + x.opts.signingWindowMs;
  if (x.clock().getTime() >= windowEnd) return windowExpired(x, t);
  let stored = t.unsigned as StoredUnsigned | null;
  if (stored === null) {
    // UTXO: the builds of one wallet are serialised across every process on the database (the
    // wallet's build lock, held until the transaction is stored): selection excludes the outputs
    // of transfers already built, which must be stored before the next selection. Account chains
    // select nothing: the one thing two builds could share, an Ethereum nonce, is decided under a
    // per-sender advisory lock in the transaction that stores it (eth-nonce.ts)
    const utxo = blockchainByKey(t.intent.blockchain)?.accountModel === 'utxo';
    try {
      stored = utxo
        ? await withUtxoBuildLock(x.db, t.intent.blockchain, t.wallet_id, (lock) => buildStored(x, t, lock))
        : await buildStored(x, t);
    } catch (e) {
      if (!(e instanceof BuildLockLostError)) throw e;
      // the build lock's session ended while this build ran: nothing stored; build again soon
      x.opts.log('warn', 'transfer build dropped: the wallet build lock was lost', { transfer_id: t.transfer_id });
      return { release: Math.max(x.opts.pollMs, x.opts.retryInitialMs) };
    }
    if (stored === null) return { release: null }; // failed (terminal), or no longer ours (release does nothing)
  }
  if (blockchainByKey(t.intent.blockchain)?.family === 'ethereum') {
    const ordered = await nonceOrder(x, t);
    if (ordered === 'wait') return { release: Math.max(x.opts.pollMs, x.opts.retryInitialMs) };
    if (ordered === undefined) return { row: undefined };
    stored = ordered;
  }
  const unsigned = loadUnsigned(stored, fieldsOf(t.intent));
  const out = await attemptSignature(x, t, unsigned, 0, t.intent, signal);
  if (out.kind === 'abandoned') return { release: null };
  if (out.kind === 'retry') return waitForSigners(x, t, out.missing, windowEnd);
  const row = await x.owned(t.transfer_id, async (q, cur) => {
    if (cur.status !== 'PENDING_SIGNATURE') return cur; // cancelled meanwhile
    if (out.kind === 'failed') {
      await signingFailed(x, q, t, out.res);
      return loadTransfer(q, t.transfer_id);
    }
    let signed: SignedTransfer;
    try {
      signed = adapter.attachSignatures(unsigned, chainSignatures(unsigned, out.res));
    } catch (e) {
      await transition(q, x, t.transfer_id, 'PENDING_SIGNATURE', 'FAILED', 'SIGNING_FAILED', {
        error: (e as Error).message,
      });
      return loadTransfer(q, t.transfer_id);
    }
    // the raw transaction and its hash are stored BEFORE the broadcast
    await transition(q, x, t.transfer_id, 'PENDING_SIGNATURE', 'READY_TO_SEND', null, {
      error: null,
      signed_tx: hex(signed.rawTx),
      tx_hash: signed.txid,
      tx_hashes: JSON.stringify([...cur.tx_hashes, signed.txid]),
    });
    return loadTransfer(q, t.transfer_id);
  });
  x.backoffs.delete(t.transfer_id);
  return { row };
}

/**
 * Signers missing: PENDING_SIGNATURE / WAITING_FOR_SIGNERS with `error` naming them (one
 * TRANSFER_UPDATED on entering the state; later retries only refresh `error`), retried after a
 * backoff — or FAILED / SIGNING_WINDOW_EXPIRED once the window is over.
 */
export async function waitForSigners(
  x: StepContext,
  t: TransferRow,
  missing: string,
  windowEnd: number,
): Promise<StepResult> {
  if (x.clock().getTime() >= windowEnd) return windowExpired(x, t, missing);
  const error = `${WAITING_FOR_SIGNERS}: ${missing}`;
  const row = await x.owned(t.transfer_id, async (q, cur) => {
    if (cur.status !== 'PENDING_SIGNATURE') return cur;
    if (cur.sub_status !== WAITING_FOR_SIGNERS) {
      await transition(q, x, t.transfer_id, 'PENDING_SIGNATURE', 'PENDING_SIGNATURE', WAITING_FOR_SIGNERS, {
        error,
      });
      x.opts.log('warn', 'transfer waits for its signers', { transfer_id: t.transfer_id, err: error });
    } else if (cur.error !== error) {
      await q.query('UPDATE transfers SET error = $2 WHERE transfer_id = $1', [t.transfer_id, error]);
    }
    return cur;
  });
  if (row === undefined) return { row: undefined };
  return { release: retryDelay(x, t.transfer_id, windowEnd) };
}

/** The signing window is over: FAILED / SIGNING_WINDOW_EXPIRED, saying what was missing. */
export async function windowExpired(x: StepContext, t: TransferRow, missing?: string): Promise<StepResult> {
  x.backoffs.delete(t.transfer_id);
  const row = await x.owned(t.transfer_id, async (q, cur) => {
    if (cur.status !== 'PENDING_SIGNATURE') return cur;
    const last =
      missing ??
      (cur.sub_status === WAITING_FOR_SIGNERS && cur.error
        ? cur.error.slice(WAITING_FOR_SIGNERS.length + 2)
        : undefined);
    const error = `${SIGNING_WINDOW_EXPIRED}: no signature within ${Math.round(x.opts.signingWindowMs / 1000)} s${last ? `; ${last}` : ''}`;
    await transition(q, x, t.transfer_id, 'PENDING_SIGNATURE', 'FAILED', SIGNING_WINDOW_EXPIRED, { error });
    x.opts.log('warn', 'transfer failed: signing window over', { transfer_id: t.transfer_id, err: error });
    return loadTransfer(q, t.transfer_id);
  });
  return { row };
}

/** Refusal (→ REJECTED, refusal code) or identifiable abort (→ FAILED / SIGNING_FAILED) as a terminal transition. */
export async function signingFailed(
  x: StepContext,
  q: Queryable,
  t: TransferRow,
  res: Extract<GatewaySignResult, { reason: 'REFUSED' | 'ABORTED' }>,
) {
  if (res.reason === 'REFUSED') {
    const v = await transition(q, x, t.transfer_id, 'PENDING_SIGNATURE', 'REJECTED', res.refusal, {
      error: `refused by ${res.by.kind} ${res.by.id}: ${res.refusal}`,
    });
    if (res.refusal === 'POLICY_SIGNATURE_VERIFICATION_FAILED') {
      await emitEvent(q, x.clock, {
        profileId: t.profile_id,
        type: 'POLICY_SIGNATURE_VERIFICATION_FAILED',
        data: {
          transfer_id: t.transfer_id,
          policy_id: t.policy_id,
          policy_version: t.policy_version,
          refused_by: { kind: res.by.kind, id: res.by.id },
        },
      });
    }
    return v;
  }
  const blamed = res.culprits.map((p) => `${p.kind} ${p.id}`).join(', ');
  return transition(q, x, t.transfer_id, 'PENDING_SIGNATURE', 'FAILED', 'SIGNING_FAILED', {
    error: `aborted, blaming ${blamed}: ${res.message}`,
  });
}

export async function sourceKey(x: StepContext, t: TransferRow): Promise<Uint8Array> {
  const r = await x.db.query<{ public_key: string }>(
    'SELECT public_key FROM addresses WHERE wallet_id = $1 AND blockchain_id = $2 AND address = $3',
    [t.wallet_id, t.blockchain_id, t.source_address],
  );
  if (r[0] === undefined) throw new Error('source address not found');
  return unhex(r[0].public_key);
}

/**
 * Build the unsigned transaction, bring it within the intent's fee cap ({@link capFee}: the one
 * place the cap is checked, after the build and before anything is stored), and store it.
 * Null when the transfer failed: FAILED / SIGNING_FAILED (the chain refused the build) or FAILED /
 * FEE_CAP_EXCEEDED (no transaction within the cap) — in both cases no signer is asked — or when
 * this process no longer holds the transfer's lease (nothing stored). UTXO chains: call it holding
 * the wallet's build lock (utxo-sources.ts `withUtxoBuildLock`), as signStep does, passing that
 * lock's `signal`: the store claims the chosen outpoints (`claimOutpoints`) in its transaction.
 * @throws BuildLockLostError when `signal` aborted before the store (nothing stored)
 */
export async function buildStored(
  x: StepContext,
  t: TransferRow,
  signal?: AbortSignal,
): Promise<StoredUnsigned | null> {
  // UTXO: builds of a wallet run under its build lock (signStep), so no two pick one change
  // index nor one outpoint; should one still have been taken (the lock's session ended while this
  // build ran, or a coordinator without the lock), the store fails with ChangeAddressTakenError or
  // OutpointsTakenError, nothing is stored, and the transfer is rebuilt (the taken outpoints are
  // no longer offered, the next index is used)
  for (let attempt = 0; ; attempt++) {
    try {
      return await buildStoredOnce(x, t, signal);
    } catch (e) {
      if (!(e instanceof ChangeAddressTakenError || e instanceof OutpointsTakenError) || attempt >= 4) throw e;
      if (e instanceof OutpointsTakenError)
        x.opts.log('warn', 'transfer rebuilt: an outpoint it chose was taken by another build', {
          transfer_id: t.transfer_id,
          err: e.message,
        });
    }
  }
}

async function buildStoredOnce(x: StepContext, t: TransferRow, signal?: AbortSignal): Promise<StoredUnsigned | null> {
  const adapter = adapterOf(x, t);
  const def = blockchainByKey(t.intent.blockchain);
  if (def === undefined) throw new Error(`blockchain ${t.intent.blockchain} is not in the directory`);
  const utxo = def.accountModel === 'utxo';
  // UTXO chains: every address of the wallet on the chain is a source, change goes to a fresh
  // internal address (utxo-sources.ts); account chains: the intent's source address only
  const sources =
    t.self_spend !== null
      ? []
      : utxo
        ? await walletSources(x.db, t.wallet_id, t.blockchain_id)
        : [{ address: t.source_address, publicKey: await sourceKey(x, t), path: t.intent.derivation_path }];
  const change =
    utxo && t.self_spend === null
      ? await nextChangeAddress(x.db, await walletKeys(x.db, t.wallet_id), t.blockchain_id, def)
      : undefined;
  let built: UnsignedTransfer;
  try {
    built =
      t.self_spend !== null
        ? // self-spend.ts: exactly the outpoints fixed at creation, no change
          bitcoinAdapterOf(x, t.intent.blockchain).buildFixedInputs(
            fieldsOf(t.intent),
            await fixedInputsOf(x.db, t.wallet_id, t.blockchain_id, t.self_spend),
          )
        : await adapter.buildTransfer({
            fields: fieldsOf(t.intent),
            sources,
            ...(change ? { change } : {}),
            feeLevel: 'STANDARD',
          });
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'INSUFFICIENT_FUNDS' || code === 'INVALID_TRANSFER' || code === 'INVALID_ADDRESS') {
      await x.owned(t.transfer_id, (q) =>
        transition(q, x, t.transfer_id, 'PENDING_SIGNATURE', 'FAILED', 'SIGNING_FAILED', {
          error: (e as Error).message,
        }),
      );
      return null;
    }
    throw e;
  }
  const cap = intentCap(t.intent);
  const capped = await capFee(def, adapter, built, cap);
  if (!capped.ok) {
    await x.owned(t.transfer_id, (q) =>
      transition(q, x, t.transfer_id, 'PENDING_SIGNATURE', 'FAILED', FEE_CAP_EXCEEDED, { error: capped.message }),
    );
    x.opts.log('warn', 'transfer failed: no transaction within its fee cap', {
      transfer_id: t.transfer_id,
      err: capped.message,
    });
    return null;
  }
  if (capped.lowered)
    x.opts.log('info', 'transfer fee lowered to its approved cap', {
      transfer_id: t.transfer_id,
      max_fee: nativeAmount(def, capped.unsigned.maxFee),
    });
  built = capped.unsigned;
  // persisted before any signer sees it: a restart or a takeover signs this same transaction.
  // Stored only by the lease holder and only once (a transaction already stored stays the one signed).
  const r = await x.owned(t.transfer_id, async (q, cur) => {
    if (cur.status !== 'PENDING_SIGNATURE') return null;
    if (cur.unsigned !== null) return cur.unsigned as StoredUnsigned;
    const final = def.family === 'ethereum' ? await ethereumNonceOf(x, q, t, built) : built;
    // UTXO: none of the chosen outpoints may be held by another live transfer (checked under the
    // wallet's transaction-scoped store lock: a lost build lock cannot make two transfers hold one)
    if (utxo)
      await claimOutpoints(q, t.intent.blockchain, t.wallet_id, inputsOf(final.context), {
        except: t.transfer_id,
        ...(signal ? { signal } : {}),
      });
    // the change address is stored with the transaction paying to it (rolled back together)
    const paysChange = (final.context as { change?: { address?: string } | null }).change?.address;
    if (change !== undefined && paysChange === change.address)
      await recordChangeAddress(q, t.wallet_id, t.blockchain_id, change, x.clock());
    if (final.maxFee > cap) throw new Error('the nonce step raised the fee above the cap'); // never: it only sets the nonce
    // Ethereum: marked until its first signing request (nonceOrder may still move its nonce)
    const st = {
      ...storeUnsigned(final, cap.toString()),
      ...(def.family === 'ethereum' ? { neverSentToSigners: true } : {}),
    };
    await q.query('UPDATE transfers SET unsigned = $2::jsonb, updated_at = $3 WHERE transfer_id = $1', [
      t.transfer_id,
      JSON.stringify(st),
      x.clock(),
    ]);
    return st;
  });
  return r ?? null;
}

/**
 * The nonce of a new Ethereum transaction ({@link ethereumNonce}: the lowest ≥ the node's pending
 * count not held by a live transaction of the sender), replacing the adapter's (its in-process
 * reservations are lost on restart and keep the nonces of failed transfers as gaps). Rebuilds the
 * digests for that nonce. Runs in the transaction that stores the unsigned transaction.
 */
export async function ethereumNonceOf(
  x: StepContext,
  q: Queryable,
  t: TransferRow,
  built: UnsignedTransfer,
): Promise<UnsignedTransfer> {
  const adapter = adapterOf(x, t) as unknown as { client: NonceNode };
  const nonce = await ethereumNonce(q, adapter.client, {
    transferId: t.transfer_id,
    sourceAddress: t.source_address,
    blockchainId: t.blockchain_id,
  });
  const context = { ...(built.context as EthereumContext), nonce };
  // `unsignedTx` of the built one has the old nonce: attachSignatures rebuilds from fields + context
  return {
    ...built,
    context,
    unsignedTx: new Uint8Array(0),
    digests: recomputeEthereumDigests(built.fields, context),
  };
}

/**
 * Ethereum: the transactions of one address go to the signers in nonce order, and one never sent
 * to a signer takes the lowest nonce nobody holds. A transaction whose nonce a transfer that ended
 * unsigned left behind (its signing window over, a refusal) would never be mined: the transfer
 * would stay SENT, undelivered, and block every later transaction of the address.
 * - `'wait'`: another transfer of the address holds a lower nonce and is not signed yet (its
 *   signers may never come: this one must not be signed past it).
 * - Else, the first time only (the stored transaction carries `neverSentToSigners`, set when its
 *   nonce was chosen), the nonce moves to the lowest free one ({@link ethereumNonce}), and the
 *   mark is removed — both stored before any signer sees
 *   it. Never after: a transaction that a signer may have signed keeps its nonce (its signers'
 *   ledgers refuse another for the transfer anyway).
 * @returns the stored transaction to sign; undefined when this process no longer holds the lease
 *   or the transfer left PENDING_SIGNATURE
 */
export async function nonceOrder(x: StepContext, t: TransferRow): Promise<StoredUnsigned | 'wait' | undefined> {
  const r = await x.owned(t.transfer_id, async (q, cur) => {
    if (cur.status !== 'PENDING_SIGNATURE' || cur.unsigned === null) return undefined;
    await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
      `custodian.eth-nonce:${t.source_address.toLowerCase()}`,
    ]);
    const s = cur.unsigned as StoredUnsigned & { neverSentToSigners?: boolean };
    const mine = Number((s.context as unknown as EthereumContext).nonce);
    const others = await q.query<{ n: number; status: TransferStatus }>(
      `SELECT (unsigned->'context'->>'nonce')::int AS n, status FROM transfers
       WHERE source_address = $1 AND blockchain_id = $2 AND status IN ('PENDING_SIGNATURE', 'READY_TO_SEND')
         AND unsigned IS NOT NULL AND transfer_id <> $3`,
      [t.source_address, t.blockchain_id, t.transfer_id],
    );
    if (others.some((o) => o.n < mine && o.status === 'PENDING_SIGNATURE')) return 'wait' as const;
    if (s.neverSentToSigners !== true) return s;
    // the lowest free nonce, SENT-but-unmined transactions counted as held (eth-nonce.ts)
    const adapter = adapterOf(x, t) as unknown as { client: NonceNode };
    const free = await ethereumNonce(q, adapter.client, {
      transferId: t.transfer_id,
      sourceAddress: t.source_address,
      blockchainId: t.blockchain_id,
    });
    const { neverSentToSigners: _n, ...base } = s;
    let next: StoredUnsigned = base;
    if (free !== mine) {
      const u = loadUnsigned(base, fieldsOf(t.intent));
      const context = { ...(u.context as EthereumContext), nonce: free };
      next = storeUnsigned(
        { ...u, context, unsignedTx: new Uint8Array(0), digests: recomputeEthereumDigests(u.fields, context) },
        base.approvedMaxFee,
      );
      x.opts.log('info', 'transfer moved to a nonce left free before its first signing request', {
        transfer_id: t.transfer_id,
        from: mine,
        to: free,
      });
    }
    await q.query('UPDATE transfers SET unsigned = $2::jsonb WHERE transfer_id = $1', [
      t.transfer_id,
      JSON.stringify(next),
    ]);
    return next;
  });
  return r;
}
