/**
 * Self-spends (docs/transfers.md "Consolidation", "Cancel and fee bump"): Bitcoin-family transfers
 * to the wallet's OWN first live deposit address (also its transfers' source address) that spend
 * exactly the outpoints fixed at creation, with no change output — amount = Σ inputs − fee, and
 * the intent's `max_fee` is exactly that fee. They are ordinary transfers otherwise: policy, device approvals and signing as for any transfer (no
 * bypass); the signers check the intent's destination and amount and the context's inputs as
 * always. Two uses: UTXO consolidation (admin operation, {@link consolidate}) and the CPFP child
 * of a fee bump ({@link createSelfSpend} from fee-bump-request.ts). The pipeline builds them with
 * {@link fixedInputsOf} (signing-step.ts `buildStored`).
 */
import { randomUUID } from 'node:crypto';
import {
  BitcoinAdapter,
  dustThreshold,
  estimateVsize,
  type FeeLevel,
  type FixedInput,
  formatUnits,
  type Utxo,
  type UtxoAddressKind,
} from '@custodian/chains';
import type { Queryable } from '../db/db.js';
import { blockchainByKey } from '../directory.js';
import { ApiError } from '../errors.js';
import { createIn } from './creation.js';
import { unhex } from './pipeline-context.js';
import { field, type RequestContext } from './request-context.js';
import { claimOutpoints, OutpointsTakenError, withUtxoBuildLock } from './utxo-sources.js';
import { parsePath, type TransferView } from './view.js';

/** What a self-spend spends (stored in `transfers.self_spend`, migration 14). */
export interface SelfSpend {
  kind: 'CONSOLIDATION' | 'CPFP';
  /** The outpoints spent, in order; `value` in base units (decimal string). */
  inputs: { txid: string; vout: number; value: string; address: string }[];
  /** Fee in base units (decimal string) = Σ inputs − amount. */
  fee: string;
  /** CPFP: the stuck transfer whose change output the child spends. */
  parent_transfer_id?: string;
}

/** The Bitcoin-family adapter of a chain, or 409/503. */
export function bitcoinAdapterOf(s: Pick<RequestContext, 'chains'>, blockchain: string): BitcoinAdapter {
  const a = s.chains.adapter(blockchain);
  if (a === undefined) throw new ApiError('CHAIN_UNAVAILABLE', `no node is configured for ${blockchain}`);
  if (!(a instanceof BitcoinAdapter))
    throw new ApiError('TRANSFER_STATE_CONFLICT', `${blockchain} is not a UTXO chain: no self-spend`);
  return a;
}

/**
 * Create a self-spend transfer (in its own database transaction; approvals pushed after commit):
 * `inputs` to the wallet's first live deposit address (branch 0, not archived), amount
 * Σ inputs − `fee`. Same validation, policy and daily-limit step as {@link createIn}; no balance reservation (it spends only these outpoints).
 * @throws ApiError 422 (VALIDATION_FAILED) when the result is below dust, or as creation
 */
export async function createSelfSpend(
  s: RequestContext,
  q: Queryable,
  profileId: string,
  walletId: string,
  blockchainId: string,
  spend: SelfSpend,
): Promise<{ view: TransferView; afterCommit: () => void }> {
  const a = (
    await q.query<{ asset_id: string; decimals: number; key: string; address: string }>(
      `SELECT a.asset_id, a.decimals, b.key,
         (SELECT address FROM addresses WHERE wallet_id = $1 AND blockchain_id = b.blockchain_id
            AND branch = 0 AND archived_at IS NULL ORDER BY address_index LIMIT 1) AS address
       FROM assets a JOIN blockchains b ON b.blockchain_id = a.blockchain_id
       WHERE b.blockchain_id = $2 AND a.contract_address IS NULL`,
      [walletId, blockchainId],
    )
  )[0];
  if (a === undefined || a.address === null)
    throw field('body.blockchain_id', 'the wallet has no live (not archived) deposit address on it');
  const adapter = bitcoinAdapterOf(s, a.key);
  const total = spend.inputs.reduce((x, i) => x + BigInt(i.value), 0n);
  const amount = total - BigInt(spend.fee);
  if (amount < dustThreshold(adapter.network, a.address))
    throw field('body', `the inputs (${total}) minus the fee (${spend.fee}) are below dust (base units)`);
  return createIn(
    s,
    q,
    profileId,
    {
      wallet_id: walletId,
      asset_id: a.asset_id,
      destination_address: a.address,
      amount: formatUnits(amount, a.decimals),
    },
    { spend, maxFee: BigInt(spend.fee) },
  );
}

/** Body of `POST …/wallets/{wallet_id}/consolidations`. */
export interface ConsolidationInput {
  /** Blockchain id (UUID) or key, e.g. `litecoin-regtest`. */
  blockchain_id: string;
  /** At most this many UTXOs (2…200), smallest first. */
  max_inputs?: number;
  /** Only UTXOs strictly below this value (base units, decimal string); default any. */
  below?: string;
  priority?: FeeLevel;
}

/**
 * UTXO consolidation (admin): the smallest spendable outputs of every address of the wallet on
 * the chain (deposit and change, archived included) (below `below`, at most
 * `max_inputs`, none already spent by a live transfer) → one output to its first live deposit
 * address (branch 0, not archived, lowest index),
 * fee at `priority` × estimated vsize. A transfer like any other from there (policy, approvals).
 * @throws ApiError 422 when fewer than 2 UTXOs qualify or the result is dust; 404 no such wallet;
 *   503 CHAIN_UNAVAILABLE
 */
export async function consolidate(
  s: RequestContext,
  actor: string,
  profileId: string,
  walletId: string,
  input: ConsolidationInput,
): Promise<TransferView> {
  const chain = (
    await s.db.query<{ blockchain_id: string; key: string; address: string | null }>(
      `SELECT b.blockchain_id, b.key,
         (SELECT address FROM addresses WHERE wallet_id = w.wallet_id AND blockchain_id = b.blockchain_id
            AND branch = 0 AND archived_at IS NULL ORDER BY address_index LIMIT 1) AS address
       FROM wallets w JOIN wallet_blockchains wb ON wb.wallet_id = w.wallet_id JOIN blockchains b ON b.blockchain_id = wb.blockchain_id
       WHERE w.profile_id = $1 AND w.wallet_id = $2 AND (b.blockchain_id::text = $3 OR b.key = $3)`,
      [profileId, walletId, input.blockchain_id],
    )
  )[0];
  if (chain === undefined) throw new ApiError('WALLET_NOT_FOUND', `no wallet ${walletId} on ${input.blockchain_id}`);
  if (chain.address === null)
    throw field('body.blockchain_id', 'the wallet has no live (not archived) deposit address on it');
  const adapter = bitcoinAdapterOf(s, chain.key);
  const below = input.below === undefined ? undefined : BigInt(input.below);
  const max = input.max_inputs ?? 50;
  // every address of the wallet on the chain: deposit and change, archived ones included (they
  // may still hold coins; utxo-sources.ts `walletSources`), each input sized by its kind
  const owned = await s.db.query<{ address: string; address_type: string }>(
    'SELECT address, address_type FROM addresses WHERE wallet_id = $1 AND blockchain_id = $2 ORDER BY branch, address_index',
    [walletId, chain.blockchain_id],
  );
  const kinds = new Map(owned.map((r) => [r.address, r.address_type]));
  const address = chain.address;
  // one selection and its store (the self-spend holding the outpoints)
  const consolidateOnce = async (signal: AbortSignal) => {
    let utxos: Utxo[];
    try {
      utxos = await adapter.unspent(owned.map((r) => r.address));
    } catch (e) {
      if ((e as { code?: string }).code === 'NODE_RPC_ERROR')
        throw new ApiError('CHAIN_UNAVAILABLE', 'the blockchain node did not answer');
      throw e;
    }
    const reserved = await reservedOutpoints(s.db, chain.blockchain_id);
    const { rate } = await adapter.feeRate(input.priority ?? 'STANDARD');
    const { chosen, fee } = planConsolidation(utxos, {
      ...(below !== undefined ? { below } : {}),
      maxInputs: max,
      reserved,
      rate,
      kindOf: (u) => utxoKind(kinds.get(u.address), u.address),
      vsizeOf: (k) => estimateVsize(adapter.network, k, address),
      dust: dustThreshold(adapter.network, address),
    });
    const spend: SelfSpend = {
      kind: 'CONSOLIDATION',
      inputs: chosen.map((u) => ({ txid: u.txid, vout: u.vout, value: u.value.toString(), address: u.address })),
      fee: fee.toString(),
    };
    return s.db.tx(async (q) => {
      await claimOutpoints(
        q,
        chain.key,
        walletId,
        spend.inputs.map((i) => `${i.txid}:${i.vout}`),
        { signal },
      );
      const r = await createSelfSpend(s, q, profileId, walletId, chain.blockchain_id, spend);
      await q.query(
        `INSERT INTO audit_log (audit_id, at, actor_user_id, action, target_type, target_id, details)
       VALUES ($1,$2,$3,'transfer.consolidation_requested','transfer',$4,$5::jsonb)`,
        [
          randomUUID(),
          s.clock(),
          actor,
          r.view.transfer_id,
          JSON.stringify({ inputs: spend.inputs.length, fee: spend.fee, priority: input.priority ?? 'STANDARD' }),
        ],
      );
      return r;
    });
  };
  // the outpoints are chosen and the self-spend holding them is stored under the wallet's build
  // lock: a build of another process never selects them meanwhile, nor they one it selected;
  // the store claims the chosen outpoints (claimOutpoints): one another process stored meanwhile
  // (the build lock lost) makes this selection start over, at most 3 times
  const out = await withUtxoBuildLock(s.db, chain.key, walletId, async (signal) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await consolidateOnce(signal);
      } catch (e) {
        if (!(e instanceof OutpointsTakenError)) throw e;
        if (attempt >= 3)
          throw new ApiError('TRANSFER_STATE_CONFLICT', `no consolidation: ${e.message} (chosen concurrently)`);
      }
    }
  });
  out.afterCommit();
  return out.view;
}

/** The spend kind of a wallet address from its stored `address_type`. @throws Error for any other type (never: wallets hold P2WPKH and P2TR only) */
function utxoKind(type: string | undefined, address: string): UtxoAddressKind {
  if (type === 'p2wpkh' || type === 'p2tr') return type;
  throw new Error(`address ${address} has no spendable kind (${type ?? 'not a wallet address'})`);
}

/**
 * Which UTXOs a consolidation spends and its fee (pure): those strictly below `below` and not in
 * `reserved` (`txid:vout`), smallest first, at most `maxInputs`; fee = ceil(`rate` × vsize)
 * (base units, `rate` in base units per vbyte), each input sized by its address kind (`kindOf`:
 * a P2TR input is smaller than a P2WPKH one).
 * @throws ApiError 422 VALIDATION_FAILED when fewer than 2 qualify, or Σ − fee is below `dust`
 */
export function planConsolidation(
  utxos: readonly Utxo[],
  o: {
    below?: bigint;
    maxInputs: number;
    reserved: ReadonlySet<string>;
    rate: number;
    kindOf: (u: Utxo) => UtxoAddressKind;
    vsizeOf: (kinds: readonly UtxoAddressKind[]) => number;
    dust: bigint;
  },
): { chosen: Utxo[]; fee: bigint; amount: bigint } {
  const chosen = utxos
    .filter((u) => (o.below === undefined || u.value < o.below) && !o.reserved.has(`${u.txid}:${u.vout}`))
    .sort((x, y) => (x.value < y.value ? -1 : x.value > y.value ? 1 : 0))
    .slice(0, o.maxInputs);
  if (chosen.length < 2) throw field('body', `${chosen.length} UTXO(s) qualify: a consolidation needs at least 2`);
  const fee = BigInt(Math.ceil(o.rate * o.vsizeOf(chosen.map(o.kindOf))));
  const amount = chosen.reduce((a, u) => a + u.value, 0n) - fee;
  if (amount < o.dust)
    throw field('body', `the ${chosen.length} UTXOs minus the fee ${fee} are below dust (${o.dust} base units)`);
  return { chosen, fee, amount };
}

/** Outpoints (`txid:vout`) named by self-spends of live transfers of a chain: not to be chosen again. */
async function reservedOutpoints(q: Queryable, blockchainId: string): Promise<Set<string>> {
  const r = await q.query<{ o: string }>(
    `SELECT (i->>'txid') || ':' || (i->>'vout') AS o FROM transfers t, jsonb_array_elements(t.self_spend->'inputs') i
     WHERE t.blockchain_id = $1 AND t.self_spend IS NOT NULL AND t.delivered_at IS NULL
       AND t.status IN ('PENDING', 'PENDING_APPROVAL', 'PENDING_SIGNATURE', 'READY_TO_SEND', 'SENT')`,
    [blockchainId],
  );
  return new Set(r.map((x) => x.o));
}

/**
 * The fixed inputs of a self-spend with the keys of their addresses (the wallet's `addresses`
 * rows), for `BitcoinAdapter.buildFixedInputs`.
 * @throws Error when an input's address is not one of the wallet's (never: chosen from them)
 */
export async function fixedInputsOf(
  q: Queryable,
  walletId: string,
  blockchainId: string,
  spend: SelfSpend,
): Promise<FixedInput[]> {
  const addrs = [...new Set(spend.inputs.map((i) => i.address))];
  const rows = await q.query<{ address: string; public_key: string; derivation_path: string }>(
    'SELECT address, public_key, derivation_path FROM addresses WHERE wallet_id = $1 AND blockchain_id = $2 AND address = ANY($3::text[])',
    [walletId, blockchainId, addrs],
  );
  const byAddress = new Map(rows.map((r) => [r.address, r]));
  return spend.inputs.map((i) => {
    const r = byAddress.get(i.address);
    if (r === undefined) throw new Error(`self-spend input ${i.txid}:${i.vout} pays no address of the wallet`);
    return {
      txid: i.txid,
      vout: i.vout,
      value: BigInt(i.value),
      address: i.address,
      publicKey: unhex(r.public_key),
      path: parsePath(r.derivation_path),
    };
  });
}

/** Whether a chain is of the Bitcoin family (self-spends and CPFP apply). */
export const isUtxoChain = (blockchain: string) => blockchainByKey(blockchain)?.accountModel === 'utxo';
