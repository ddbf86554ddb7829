/**
 * The asynchronous half of the transfer state machine (service.ts has the diagram): approval
 * expiry, building and signing (PENDING_SIGNATURE → READY_TO_SEND), broadcast (→ SENT), the
 * confirmation follow-up (TRANSFER_DELIVERED) and fee bumps.
 *
 * Restart safety ("persisted before its side effects"): the unsigned transaction (with its nonce)
 * is stored before the signers are asked, so a resumed transfer signs the same transaction (the
 * signers accept the identical digests again, see packages/signer enforce.ts); the signed raw
 * transaction and its hash are stored with READY_TO_SEND before broadcasting, and on resume the
 * node is asked for that hash first — a transaction the node knows is never broadcast again.
 *
 * Work is claimed with a lease (`lease_until`, `FOR UPDATE SKIP LOCKED`), so several coordinator
 * replicas share the work and a crashed worker's transfers are taken over once the lease expires.
 */
import {
  BroadcastError,
  type ChainSignature,
  type EthereumContext,
  type FeeLevel,
  recomputeEthereumDigests,
  type SignedTransfer,
  type UnsignedTransfer,
} from '@custodian/chains';
import type { TransferIntent } from '@custodian/wire';
import type { Db, Queryable } from '../db/db.js';
import { blockchainByKey } from '../directory.js';
import type { GatewaySignResult, SignerGateway, SignParty } from '../signing/gateway.js';
import type { Clock } from '../util.js';
import { emitEvent } from '../webhooks/outbox.js';
import type { ChainRegistry } from './chains.js';
import { capFee, FEE_CAP_EXCEEDED, nativeAmount } from './fee-cap.js';
import {
  type FeeBump,
  fieldsOf,
  intentCap,
  loadTransfer,
  type TransferRow,
  type TransferService,
  transferEventData,
  transferView,
  transition,
} from './service.js';
import { loadUnsigned, type StoredUnsigned, storeUnsigned } from './unsigned.js';

/** Pipeline settings. */
export interface PipelineOptions {
  /** Deadline of one signing ceremony (ms). Default 120 s. */
  signDeadlineMs: number;
  /** Lease of a claimed transfer (ms). Default 5 min (longer than a signing ceremony). */
  leaseMs: number;
  /** Timer interval (ms). Default 1000. */
  pollMs: number;
  /** Delay before a SENT transfer's confirmations are checked again (ms). Default 2000. */
  confirmationRecheckMs: number;
  log: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

export const DEFAULT_PIPELINE_OPTIONS: Omit<PipelineOptions, 'log'> = {
  signDeadlineMs: 120_000,
  leaseMs: 5 * 60_000,
  pollMs: 1000,
  confirmationRecheckMs: 2000,
};

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, 'hex'));

/** Parties of a signing set: the first `threshold` server signers of the key, then devices, in key order. */
export function signingParties(parties: unknown, threshold: number): SignParty[] {
  const all = (Array.isArray(parties) ? parties : []) as { kind: 'server' | 'device'; id: string }[];
  const servers = all.filter((p) => p.kind === 'server');
  const chosen = new Set(servers.slice(0, threshold).map((p) => `server:${p.id}`));
  if (chosen.size < threshold) {
    for (const d of all.filter((p) => p.kind === 'device').slice(0, threshold - chosen.size))
      chosen.add(`device:${d.id}`);
  }
  return all.filter((p) => chosen.has(`${p.kind}:${p.id}`)).map((p) => ({ kind: p.kind, id: p.id }));
}

/** Drives transfers through signing, broadcast and confirmation. */
export class TransferPipeline {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly chains: ChainRegistry,
    private readonly service: TransferService,
    private readonly gateway: SignerGateway | undefined,
    private readonly opts: PipelineOptions,
  ) {}

  /** Start the timer; resumes every non-terminal transfer (expired leases are reclaimed). */
  start(): void {
    if (this.#timer) return;
    this.#stopped = false;
    this.#timer = setInterval(() => this.kick(), this.opts.pollMs);
    this.#timer.unref();
    this.kick();
  }

  /** Run a tick soon (after new work); ticks never overlap. */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.tick()
      .catch((e: unknown) => this.opts.log('error', 'transfer pipeline tick failed', { err: String(e) }))
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.kick();
        }
      });
  }

  /** Stop the timer and wait for the running tick. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** One pass: expire, mark transfers of chains without a node, then process every claimable transfer (tests call it directly). */
  async tick(): Promise<void> {
    await this.expire();
    await this.markChainUnavailable();
    for (let i = 0; i < 200; i++) {
      const batch: TransferRow[] = [];
      for (let k = 0; k < 4; k++) {
        const t = await this.claim();
        if (t === undefined) break;
        batch.push(t);
      }
      if (batch.length === 0) return;
      await Promise.all(batch.map((t) => this.process(t)));
    }
  }

  /** Approval windows that elapsed: PENDING_APPROVAL → EXPIRED (APPROVAL_EXPIRED); a bump's → bump FAILED. */
  async expire(): Promise<number> {
    const now = this.clock();
    const ids = await this.db.query<{ transfer_id: string }>(
      `SELECT transfer_id FROM transfers WHERE status = 'PENDING_APPROVAL' AND approval_deadline <= $1`,
      [now],
    );
    for (const { transfer_id } of ids) {
      await this.db.tx(async (q) => {
        const t = await loadTransfer(q, transfer_id, true);
        if (t?.status === 'PENDING_APPROVAL' && t.approval_deadline && t.approval_deadline <= now) {
          await transition(q, this.clock, transfer_id, 'EXPIRED', 'APPROVAL_EXPIRED');
        }
      });
      await this.service.withdrawRequests(transfer_id);
    }
    const bumps = await this.db.query<{ transfer_id: string }>(
      `SELECT transfer_id FROM transfers WHERE status = 'SENT' AND fee_bump->>'status' = 'PENDING_APPROVAL'
         AND (fee_bump->>'deadline')::timestamptz <= $1`,
      [now],
    );
    for (const { transfer_id } of bumps) {
      await this.db.tx(async (q) => {
        const t = await loadTransfer(q, transfer_id, true);
        if (t?.fee_bump?.status !== 'PENDING_APPROVAL') return;
        const next: FeeBump = { ...t.fee_bump, status: 'FAILED', sub_status: 'APPROVAL_EXPIRED' };
        await transition(q, this.clock, transfer_id, 'SENT', t.sub_status, { fee_bump: JSON.stringify(next) });
      });
      await this.service.withdrawRequests(transfer_id);
    }
    return ids.length + bumps.length;
  }

  /**
   * Transfers waiting for a chain that has no node configured here (no adapter): PENDING_SIGNATURE
   * or READY_TO_SEND get sub_status CHAIN_UNAVAILABLE and an `error` saying so (one
   * TRANSFER_UPDATED event and one warning per transfer). They keep their status — the pipeline
   * does not claim them, so they stay cancellable — and go on once a coordinator with a node for
   * the chain runs (signing and broadcast clear the sub_status). Returns how many were marked.
   */
  async markChainUnavailable(): Promise<number> {
    const ids = await this.db.query<{ transfer_id: string; blockchain: string }>(
      `SELECT transfer_id, intent->>'blockchain' AS blockchain FROM transfers
       WHERE status IN ('PENDING_SIGNATURE', 'READY_TO_SEND') AND sub_status IS NULL
         AND NOT (intent->>'blockchain' = ANY($1::text[]))`,
      [this.chains.keys()],
    );
    for (const { transfer_id, blockchain } of ids) {
      const error = `CHAIN_UNAVAILABLE: no node is configured for ${blockchain}`;
      const marked = await this.db.tx(async (q) => {
        const t = await loadTransfer(q, transfer_id, true);
        if (t === undefined || t.sub_status !== null || !['PENDING_SIGNATURE', 'READY_TO_SEND'].includes(t.status))
          return false;
        if (this.chains.adapter(t.intent.blockchain) !== undefined) return false;
        await transition(q, this.clock, transfer_id, t.status, 'CHAIN_UNAVAILABLE', { error });
        return true;
      });
      if (marked) this.opts.log('warn', 'transfer waits for a chain node', { transfer_id, blockchain, err: error });
    }
    return ids.length;
  }

  private async claim(): Promise<TransferRow | undefined> {
    const now = this.clock();
    const r = await this.db.tx(async (q) => {
      // transfers of chains without an adapter are left alone (markChainUnavailable says why)
      const c = await q.query<{ transfer_id: string }>(
        `SELECT transfer_id FROM transfers
         WHERE (status IN ('PENDING_SIGNATURE', 'READY_TO_SEND') OR (status = 'SENT' AND delivered_at IS NULL))
           AND (lease_until IS NULL OR lease_until <= $1)
           AND intent->>'blockchain' = ANY($2::text[])
         ORDER BY updated_at, transfer_id LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [now, this.chains.keys()],
      );
      const id = c[0]?.transfer_id;
      if (id === undefined) return undefined;
      await q.query('UPDATE transfers SET lease_until = $2 WHERE transfer_id = $1', [
        id,
        new Date(now.getTime() + this.opts.leaseMs),
      ]);
      return loadTransfer(q, id);
    });
    return r;
  }

  private async release(transferId: string, retryInMs: number | null): Promise<void> {
    await this.db.query('UPDATE transfers SET lease_until = $2 WHERE transfer_id = $1', [
      transferId,
      retryInMs === null ? null : new Date(this.clock().getTime() + retryInMs),
    ]);
  }

  private async process(t: TransferRow): Promise<void> {
    try {
      let row: TransferRow | undefined = t;
      if (row.status === 'PENDING_SIGNATURE') row = await this.signStep(row);
      if (row?.status === 'READY_TO_SEND') row = await this.broadcastStep(row);
      if (row?.status === 'SENT') {
        if (row.fee_bump?.status === 'PENDING_SIGNATURE') row = await this.bumpSignStep(row);
        if (row?.fee_bump?.status === 'SIGNED') row = await this.bumpBroadcastStep(row);
        if (row && row.delivered_at === null) {
          const delivered = await this.confirmStep(row);
          if (!delivered) return this.release(t.transfer_id, this.opts.confirmationRecheckMs);
        }
      }
      await this.release(t.transfer_id, null);
    } catch (e) {
      // node or signer transport trouble: retry later, keep the state
      this.opts.log('warn', 'transfer step failed; will retry', { transfer_id: t.transfer_id, err: String(e) });
      await this.release(t.transfer_id, Math.max(this.opts.pollMs, 5000)).catch(() => {});
    }
  }

  private adapterOf(t: TransferRow) {
    const a = this.chains.adapter(t.intent.blockchain);
    if (a === undefined) throw new Error(`CHAIN_UNAVAILABLE: no node configured for ${t.intent.blockchain}`);
    return a;
  }

  private async sourceKey(t: TransferRow): Promise<Uint8Array> {
    const r = await this.db.query<{ public_key: string }>(
      'SELECT public_key FROM addresses WHERE wallet_id = $1 AND blockchain_id = $2 AND address = $3',
      [t.wallet_id, t.blockchain_id, t.source_address],
    );
    if (r[0] === undefined) throw new Error('source address not found');
    return unhex(r[0].public_key);
  }

  /**
   * Ask the signers for the signatures of `unsigned`, with the evidence of approval round `round`:
   * `intent` is the intent that round's approvals are over (the transfer's, or a fee bump round's
   * raised-cap intent).
   */
  private async sign(
    t: TransferRow,
    unsigned: UnsignedTransfer,
    round: number,
    intent: TransferIntent,
  ): Promise<GatewaySignResult> {
    if (!this.gateway) throw new Error('SIGNERS_UNAVAILABLE: no signer gateway configured');
    const mk = (
      await this.db.query<{
        parties: unknown;
        threshold: number;
        secp256k1_public_key: string;
        secp256k1_chain_code: string;
      }>(
        'SELECT parties, threshold, secp256k1_public_key, secp256k1_chain_code FROM master_keys WHERE master_key_id = $1',
        [t.master_key_id],
      )
    )[0];
    if (mk === undefined) throw new Error('master key not found');
    const [policy, approvals] = await Promise.all([
      this.service.policyOf(this.db, t),
      this.service.approvalsOf(this.db, t.transfer_id, round),
    ]);
    const paths = new Set(unsigned.digests.map((d) => d.key.path.join('/')));
    if (paths.size !== 1) throw new Error('transactions spending from several keys are not supported yet');
    return this.gateway.sign({
      keyId: t.intent.key_id,
      algorithm: t.intent.key_algorithm,
      parties: signingParties(mk.parties, mk.threshold),
      derivationPath: [...t.intent.derivation_path],
      digests: unsigned.digests.map((d) => d.digest),
      evidence: { intent, policy, approvals, chainContext: JSON.stringify(unsigned.context) },
      deadline: new Date(Date.now() + this.opts.signDeadlineMs),
      // ECDSA: the gateway combines the signers' shares itself and checks them under this key
      ...(t.intent.key_algorithm === 'SECP256K1_ECDSA' &&
      /^[0-9a-f]{66}$/i.test(mk.secp256k1_public_key) &&
      /^[0-9a-f]{64}$/i.test(mk.secp256k1_chain_code)
        ? { ecdsaKey: { publicKey: unhex(mk.secp256k1_public_key), chainCode: unhex(mk.secp256k1_chain_code) } }
        : {}),
    });
  }

  private signatures(unsigned: UnsignedTransfer, res: Extract<GatewaySignResult, { ok: true }>): ChainSignature[] {
    return res.signatures.map((s, i): ChainSignature => {
      if (unsigned.digests[i]?.scheme === 'schnorr') return { scheme: 'schnorr', signature: s.signature };
      return {
        scheme: 'ecdsa',
        r: BigInt(`0x${hex(s.signature.subarray(0, 32))}`),
        s: BigInt(`0x${hex(s.signature.subarray(32, 64))}`),
        recovery: s.recovery ?? 0,
      };
    });
  }

  /** Refusal / failure of a signing ceremony as a terminal transition. */
  private async signingFailed(q: Queryable, t: TransferRow, res: Exclude<GatewaySignResult, { ok: true }>) {
    if (res.reason === 'REFUSED') {
      const v = await transition(q, this.clock, t.transfer_id, 'REJECTED', res.refusal, {
        error: `refused by ${res.by.kind} ${res.by.id}: ${res.refusal}`,
      });
      if (res.refusal === 'POLICY_SIGNATURE_VERIFICATION_FAILED') {
        await emitEvent(q, this.clock, {
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
    const msg = res.reason === 'ABORTED' ? `aborted: ${res.message}` : 'signing deadline exceeded';
    return transition(q, this.clock, t.transfer_id, 'FAILED', 'SIGNING_FAILED', { error: msg });
  }

  readonly #buildLocks = new Map<string, Promise<unknown>>();

  /**
   * Build the unsigned transaction, bring it within the intent's fee cap ({@link capFee}: the one
   * place the cap is checked, after the build and before anything is stored), and store it.
   * Null when the transfer failed: FAILED / SIGNING_FAILED (the chain refused the build) or FAILED /
   * FEE_CAP_EXCEEDED (no transaction within the cap) — in both cases no signer is asked.
   */
  private async build(t: TransferRow): Promise<StoredUnsigned | null> {
    const adapter = this.adapterOf(t);
    const def = blockchainByKey(t.intent.blockchain);
    if (def === undefined) throw new Error(`blockchain ${t.intent.blockchain} is not in the directory`);
    const source = { address: t.source_address, publicKey: await this.sourceKey(t), path: t.intent.derivation_path };
    const utxo = def.accountModel === 'utxo';
    let built: UnsignedTransfer;
    try {
      built = await adapter.buildTransfer({
        fields: fieldsOf(t.intent),
        sources: [source],
        // UTXO chains: change goes back to the source address (one key per signing request)
        ...(utxo ? { change: source } : {}),
        feeLevel: 'STANDARD',
      });
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === 'INSUFFICIENT_FUNDS' || code === 'INVALID_TRANSFER' || code === 'INVALID_ADDRESS') {
        await this.db.tx((q) =>
          transition(q, this.clock, t.transfer_id, 'FAILED', 'SIGNING_FAILED', { error: (e as Error).message }),
        );
        return null;
      }
      throw e;
    }
    const cap = intentCap(t.intent);
    const capped = await capFee(def, adapter, built, cap);
    if (!capped.ok) {
      await this.db.tx((q) =>
        transition(q, this.clock, t.transfer_id, 'FAILED', FEE_CAP_EXCEEDED, { error: capped.message }),
      );
      this.opts.log('warn', 'transfer failed: no transaction within its fee cap', {
        transfer_id: t.transfer_id,
        err: capped.message,
      });
      return null;
    }
    if (capped.lowered)
      this.opts.log('info', 'transfer fee lowered to its approved cap', {
        transfer_id: t.transfer_id,
        max_fee: nativeAmount(def, capped.unsigned.maxFee),
      });
    built = capped.unsigned;
    // persisted before any signer sees it: a restart signs this same transaction
    return this.db.tx(async (q) => {
      const final = def.family === 'ethereum' ? await this.ethereumNonce(q, t, built) : built;
      if (final.maxFee > cap) throw new Error('the nonce step raised the fee above the cap'); // never: it only sets the nonce
      const st = storeUnsigned(final, cap.toString());
      await q.query('UPDATE transfers SET unsigned = $2::jsonb, updated_at = $3 WHERE transfer_id = $1', [
        t.transfer_id,
        JSON.stringify(st),
        this.clock(),
      ]);
      return st;
    });
  }

  private async signStep(t: TransferRow): Promise<TransferRow | undefined> {
    const adapter = this.adapterOf(t);
    let stored = t.unsigned as StoredUnsigned | null;
    if (stored === null) {
      // builds of one chain are serialised in this process: UTXO selection excludes the outputs of
      // transfers already built, which must be stored before the next selection
      const prev = this.#buildLocks.get(t.intent.blockchain) ?? Promise.resolve();
      const build = prev.then(() => this.build(t));
      this.#buildLocks.set(
        t.intent.blockchain,
        build.catch(() => {}),
      );
      stored = await build;
      if (stored === null) return undefined;
    }
    const unsigned = loadUnsigned(stored, fieldsOf(t.intent));
    const res = await this.sign(t, unsigned, 0, t.intent);
    if (res.ok)
      this.opts.log('info', 'transfer signed', {
        transfer_id: t.transfer_id,
        // the ECDSA fast path (the gateway combined the signers' shares) or the signers' own results
        combined_by: res.combinedByCoordinator ? 'coordinator' : 'signers',
        pooled_presignature: res.presignatureId !== undefined,
      });
    return this.db.tx(async (q) => {
      const cur = await loadTransfer(q, t.transfer_id, true);
      if (cur?.status !== 'PENDING_SIGNATURE') return cur; // cancelled meanwhile
      if (!res.ok) {
        await this.signingFailed(q, t, res);
        return loadTransfer(q, t.transfer_id);
      }
      let signed: SignedTransfer;
      try {
        signed = adapter.attachSignatures(unsigned, this.signatures(unsigned, res));
      } catch (e) {
        await transition(q, this.clock, t.transfer_id, 'FAILED', 'SIGNING_FAILED', { error: (e as Error).message });
        return loadTransfer(q, t.transfer_id);
      }
      // the raw transaction and its hash are stored BEFORE the broadcast
      await transition(q, this.clock, t.transfer_id, 'READY_TO_SEND', null, {
        error: null,
        signed_tx: hex(signed.rawTx),
        tx_hash: signed.txid,
        tx_hashes: JSON.stringify([...cur.tx_hashes, signed.txid]),
      });
      return loadTransfer(q, t.transfer_id);
    });
  }

  /**
   * The nonce of a new Ethereum transaction, decided under a per-sender lock from the node's
   * pending count and the transactions this coordinator built but has not broadcast yet — not from
   * the adapter's in-process reservations, which a refused or failed transfer would leave as a gap
   * that blocks every later transaction of the address. Rebuilds the digests for that nonce.
   */
  private async ethereumNonce(q: Queryable, t: TransferRow, built: UnsignedTransfer): Promise<UnsignedTransfer> {
    await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
      `custodian.eth-nonce:${t.source_address.toLowerCase()}`,
    ]);
    const adapter = this.adapterOf(t) as unknown as { client: { getTransactionCount(a: object): Promise<number> } };
    const pending = await adapter.client.getTransactionCount({ address: t.source_address, blockTag: 'pending' });
    const r = await q.query<{ n: number | null }>(
      `SELECT max((unsigned->'context'->>'nonce')::int) AS n FROM transfers
       WHERE source_address = $1 AND blockchain_id = $2 AND status IN ('PENDING_SIGNATURE', 'READY_TO_SEND')
         AND unsigned IS NOT NULL AND transfer_id <> $3`,
      [t.source_address, t.blockchain_id, t.transfer_id],
    );
    const nonce = Math.max(pending, (r[0]?.n ?? -1) + 1);
    const context = { ...(built.context as EthereumContext), nonce };
    // `unsignedTx` of the built one has the old nonce: attachSignatures rebuilds from fields + context
    return {
      ...built,
      context,
      unsignedTx: new Uint8Array(0),
      digests: recomputeEthereumDigests(built.fields, context),
    };
  }

  private async send(
    t: TransferRow,
    rawHex: string,
    txid: string,
  ): Promise<{ ok: true } | { ok: false; error: string }> {
    const adapter = this.adapterOf(t);
    const known = await this.chains.lookup(t.intent.blockchain, txid);
    if (known.state !== 'unknown') return { ok: true }; // broadcast before a restart: never again
    try {
      await adapter.broadcast({ chain: t.intent.blockchain, rawTx: unhex(rawHex), txid });
      return { ok: true };
    } catch (e) {
      if (!(e instanceof BroadcastError)) throw e;
      const again = await this.chains.lookup(t.intent.blockchain, txid);
      if (again.state !== 'unknown') return { ok: true };
      return { ok: false, error: e.message };
    }
  }

  private async broadcastStep(t: TransferRow): Promise<TransferRow | undefined> {
    if (t.signed_tx === null || t.tx_hash === null) throw new Error('READY_TO_SEND without a signed transaction');
    const r = await this.send(t, t.signed_tx, t.tx_hash);
    return this.db.tx(async (q) => {
      if (r.ok) await transition(q, this.clock, t.transfer_id, 'SENT', null, { sent_at: this.clock(), error: null });
      else await transition(q, this.clock, t.transfer_id, 'FAILED', 'BROADCAST_FAILED', { error: r.error });
      return loadTransfer(q, t.transfer_id);
    });
  }

  private async bumpSignStep(t: TransferRow): Promise<TransferRow | undefined> {
    const adapter = this.adapterOf(t);
    const bump = t.fee_bump as FeeBump;
    // the intent this round's approvals are over (a bump requested before fee caps has none: the transfer's)
    const intent = bump.intent ?? t.intent;
    let stored = bump.unsigned ?? null;
    if (stored === null) {
      // a bump requested before replacements were built at request time
      const previous = loadUnsigned(t.unsigned as StoredUnsigned, fieldsOf(t.intent));
      const replacement = await adapter.buildReplacement(previous, bump.priority as FeeLevel);
      stored = storeUnsigned(replacement, intent.max_fee);
      await this.db.query('UPDATE transfers SET fee_bump = $2::jsonb WHERE transfer_id = $1', [
        t.transfer_id,
        JSON.stringify({ ...bump, unsigned: stored }),
      ]);
    }
    if (BigInt(stored.maxFee) > intentCap(intent)) {
      // approved under a lower cap than the replacement pays: never sent to the signers
      const def = blockchainByKey(t.intent.blockchain);
      const error = `${FEE_CAP_EXCEEDED}: the replacement can pay up to ${def ? nativeAmount(def, BigInt(stored.maxFee)) : stored.maxFee}, above the fee cap this round approved`;
      return this.db.tx(async (q) => {
        const cur = await loadTransfer(q, t.transfer_id, true);
        if (cur?.fee_bump?.status !== 'PENDING_SIGNATURE') return cur;
        await transition(q, this.clock, t.transfer_id, 'SENT', cur.sub_status, {
          fee_bump: JSON.stringify({ ...cur.fee_bump, status: 'FAILED', sub_status: FEE_CAP_EXCEEDED, error }),
        });
        return loadTransfer(q, t.transfer_id);
      });
    }
    const unsigned = loadUnsigned(stored, fieldsOf(t.intent));
    const res = await this.sign(t, unsigned, bump.round, intent);
    return this.db.tx(async (q) => {
      const cur = await loadTransfer(q, t.transfer_id, true);
      if (cur?.fee_bump?.status !== 'PENDING_SIGNATURE') return cur;
      const base = { ...(cur.fee_bump as FeeBump) };
      if (!res.ok) {
        const sub = res.reason === 'REFUSED' ? res.refusal : 'SIGNING_FAILED';
        await transition(q, this.clock, t.transfer_id, 'SENT', cur.sub_status, {
          fee_bump: JSON.stringify({
            ...base,
            status: res.reason === 'REFUSED' ? 'REJECTED' : 'FAILED',
            sub_status: sub,
          }),
        });
        return loadTransfer(q, t.transfer_id);
      }
      const signed = adapter.attachSignatures(unsigned, this.signatures(unsigned, res));
      // the replacement becomes the transfer's transaction; the previous hashes stay watched
      await transition(q, this.clock, t.transfer_id, 'SENT', cur.sub_status, {
        fee_bump: JSON.stringify({ ...base, status: 'SIGNED' }),
        // the cap it was approved under goes with it: the next bump starts from that intent
        unsigned: JSON.stringify({ ...stored, approvedMaxFee: intent.max_fee }),
        signed_tx: hex(signed.rawTx),
        tx_hash: signed.txid,
        tx_hashes: JSON.stringify([...cur.tx_hashes, signed.txid]),
      });
      return loadTransfer(q, t.transfer_id);
    });
  }

  private async bumpBroadcastStep(t: TransferRow): Promise<TransferRow | undefined> {
    if (t.signed_tx === null || t.tx_hash === null) throw new Error('fee bump SIGNED without a transaction');
    const r = await this.send(t, t.signed_tx, t.tx_hash);
    return this.db.tx(async (q) => {
      const cur = await loadTransfer(q, t.transfer_id, true);
      const base = cur?.fee_bump as FeeBump;
      await transition(q, this.clock, t.transfer_id, 'SENT', cur?.sub_status ?? null, {
        fee_bump: JSON.stringify(
          r.ok
            ? { ...base, status: 'DONE' }
            : { ...base, status: 'FAILED', sub_status: 'BROADCAST_FAILED', error: r.error },
        ),
      });
      return loadTransfer(q, t.transfer_id);
    });
  }

  /** Mined with the chain's confirmations (any of the transfer's transactions)? Then TRANSFER_DELIVERED. */
  private async confirmStep(t: TransferRow): Promise<boolean> {
    const need = this.chains.confirmations(t.intent.blockchain);
    for (const h of [...t.tx_hashes].reverse()) {
      const l = await this.chains.lookup(t.intent.blockchain, h);
      if (l.state === 'mined' && l.confirmations >= need) {
        await this.db.tx(async (q) => {
          const now = this.clock();
          await q.query(
            'UPDATE transfers SET delivered_at = $2, tx_hash = $3, updated_at = $2 WHERE transfer_id = $1 AND delivered_at IS NULL',
            [t.transfer_id, now, h],
          );
          const row = await loadTransfer(q, t.transfer_id);
          const v = transferView(row!);
          await emitEvent(q, this.clock, {
            profileId: t.profile_id,
            type: 'TRANSFER_DELIVERED',
            data: { ...transferEventData(v), block_number: l.blockNumber, execution_success: l.success },
          });
        });
        return true;
      }
    }
    return false;
  }
}
