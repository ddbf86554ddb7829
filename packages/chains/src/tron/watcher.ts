import { hexToBytes } from '@noble/hashes/utils.js';
import { NodeRpcError } from '../errors.js';
import { settleAccountPoll } from '../watcher/account-poll.js';
import {
  type Cursor,
  PollingWatcher,
  type TransactionDetectedEvent,
  type WatcherEvent,
  type WatcherStore,
} from '../watcher/types.js';
import { decodeTronAddress, encodeTronAddress } from './address.js';
import {
  exactInt,
  type TronBlock,
  type TronBlockTransaction,
  type TronHttpClient,
  type TronTransactionInfo,
} from './client.js';

/** keccak256("Transfer(address,address,uint256)"), the ERC-20/TRC-20 Transfer event topic. */
export const TRC20_TRANSFER_TOPIC = 'ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

export interface TronWatcherOptions {
  /** Chain id string, as in the adapter (store key and `chain` of events), e.g. `tron`. */
  chain: string;
  client: TronHttpClient;
  store: WatcherStore;
  /** TRC-20 contracts (base58) whose Transfer events are followed. */
  tokens?: readonly string[];
  /**
   * Confirmations before a balance counts (≥ 1; 1 = in a block). TRON blocks are final once
   * solidified, 19 blocks deep (2/3 + 1 of the 27 super representatives): 19 is the safe value.
   */
  confirmations: number;
  /** Height to start from when the store has no cursor (default: the confirmed tip at first poll). */
  startHeight?: number;
  /** Read the pending pool (`gettransactionlistfrompending`, java-tron ≥ 4.7); off when the node lacks it. Default true. */
  mempool?: boolean;
}

/** base58 of a `41…` hex address as `visible: false` answers print it; undefined for anything else. */
function base58OfHex(value: unknown): string | undefined {
  if (typeof value !== 'string' || !/^41[0-9a-fA-F]{40}$/.test(value)) return undefined;
  return encodeTronAddress(hexToBytes(value));
}

/** base58 of a 32-byte topic holding an address in its last 20 bytes. */
function base58OfTopic(topic: string): string | undefined {
  if (!/^0{24}[0-9a-f]{40}$/.test(topic)) return undefined;
  return encodeTronAddress(hexToBytes(`41${topic.slice(24)}`));
}

/**
 * Watches TRON addresses for TRX and TRC-20 movements over a full node's HTTP API.
 *
 * Each poll: (1) reads blocks above the cursor up to the tip (`/wallet/getnowblock`,
 * `/wallet/getblockbynum`), the `TransactionInfo` of their transactions
 * (`/wallet/gettransactioninfobyblocknum`, for TRC-20 `Transfer` logs of the followed tokens and
 * the receipts of contract calls), and the pending pool, emitting `transaction_detected` once per
 * (txid, address, asset): TRX from successful `TransferContract`s, TRC-20 from `Transfer` logs
 * (in blocks) or `transfer(address,uint256)` calls (pending) — transaction infos that do not
 * belong to the block read commit nothing and the next poll retries; (2) the shared account-model
 * steps run ({@link settleAccountPoll}: the cursor moves to the confirmed block after every parent
 * hash is checked, confirmed balances are computed, one atomic commit), then listeners are notified.
 *
 * Balances: TRX is read at the confirmed block with `/wallet/getaccountbalance` (its hash and
 * number), which counts fees, internal transfers and every contract type; it requires a node with
 * `storage.balance.history.lookup = true`. TRON has no call for a contract state at a past block,
 * so a TRC-20 balance is the stored balance plus the confirmed `Transfer` events of the token
 * (exact for tokens that emit `Transfer` for every balance change, as TRC-20 requires), counted
 * from the moment the address is watched: watch an address before its first token deposit (the
 * platform's derived addresses always are).
 */
export class TronWatcher extends PollingWatcher {
  readonly #o: TronWatcherOptions;
  readonly #addresses = new Set<string>();
  /** Token contract base58 → the 20-byte hex a log's `address` carries. */
  readonly #tokens = new Map<string, string>();
  /** Pending txids already looked at (memory only). */
  readonly #pendingChecked = new Set<string>();
  #mempool: boolean;

  constructor(options: TronWatcherOptions) {
    super();
    if (!Number.isInteger(options.confirmations) || options.confirmations < 1)
      throw new RangeError('confirmations: integer ≥ 1');
    this.#o = options;
    for (const t of options.tokens ?? []) {
      const bytes = decodeTronAddress(t, 'tokens');
      this.#tokens.set(
        encodeTronAddress(bytes),
        Array.from(bytes.subarray(1), (b) => b.toString(16).padStart(2, '0')).join(''),
      );
    }
    this.#mempool = options.mempool ?? true;
  }

  watch(address: string): void {
    this.#addresses.add(encodeTronAddress(decodeTronAddress(address, 'address')));
    this.#pendingChecked.clear();
  }

  #event(
    tx: string,
    address: string,
    asset: string,
    direction: 'incoming' | 'outgoing',
    amount: bigint,
    height: number | null,
  ): TransactionDetectedEvent {
    return {
      type: 'transaction_detected',
      chain: this.#o.chain,
      txid: tx,
      address,
      asset,
      direction,
      amount: amount.toString(),
      block_height: height,
    };
  }

  /** TRX transfers, and (pending only) TRC-20 `transfer` calls, of one transaction. */
  #matchTx(tx: TronBlockTransaction, height: number | null, out: TransactionDetectedEvent[]): void {
    if (tx.contractRet !== 'SUCCESS') return;
    for (const c of tx.contracts) {
      const owner = base58OfHex(c.value.owner_address);
      if (c.type === 'TransferContract') {
        const to = base58OfHex(c.value.to_address);
        const amount = exactInt(c.value.amount);
        if (owner === undefined || to === undefined || amount === undefined) continue;
        if (this.#addresses.has(to)) out.push(this.#event(tx.txID, to, 'native', 'incoming', amount, height));
        if (this.#addresses.has(owner)) out.push(this.#event(tx.txID, owner, 'native', 'outgoing', amount, height));
      } else if (c.type === 'TriggerSmartContract' && height === null) {
        const token = base58OfHex(c.value.contract_address);
        const data = typeof c.value.data === 'string' ? c.value.data.toLowerCase() : '';
        if (owner === undefined || token === undefined || !this.#tokens.has(token)) continue;
        if (!data.startsWith('a9059cbb') || data.length !== 8 + 128) continue;
        const to = base58OfTopic(data.slice(8, 72));
        const amount = BigInt(`0x${data.slice(72)}`);
        if (to !== undefined && this.#addresses.has(to))
          out.push(this.#event(tx.txID, to, token, 'incoming', amount, null));
        if (this.#addresses.has(owner)) out.push(this.#event(tx.txID, owner, token, 'outgoing', amount, null));
      }
    }
  }

  /** TRC-20 Transfer logs of the followed tokens in successful transactions: [txid, token, from, to, amount]. */
  #transfers(infos: readonly TronTransactionInfo[]): [string, string, string, string, bigint][] {
    const byHex = new Map([...this.#tokens].map(([b58, hex]) => [hex, b58]));
    const out: [string, string, string, string, bigint][] = [];
    for (const info of infos) {
      if (info.result !== undefined && info.result !== 'SUCCESS') continue;
      for (const log of info.logs) {
        const token = byHex.get(log.address.replace(/^41(?=[0-9a-f]{40}$)/, ''));
        if (token === undefined || log.topics.length !== 3 || log.topics[0] !== TRC20_TRANSFER_TOPIC) continue;
        const from = base58OfTopic(log.topics[1] as string);
        const to = base58OfTopic(log.topics[2] as string);
        if (from === undefined || to === undefined || !/^[0-9a-f]{64}$/.test(log.data)) continue;
        out.push([info.id, token, from, to, BigInt(`0x${log.data}`)]);
      }
    }
    return out;
  }

  /** Matches pending transactions not looked at before; returns their ids (marked checked once the poll commits). */
  async #pending(out: TransactionDetectedEvent[]): Promise<string[]> {
    const client = this.#o.client;
    let ids: string[];
    try {
      ids = await client.pendingTransactionIds();
    } catch (e) {
      if (e instanceof NodeRpcError) {
        this.#mempool = false; // node without the pending-pool API
        return [];
      }
      throw e;
    }
    const checked: string[] = [];
    for (const id of ids) {
      if (this.#pendingChecked.has(id)) continue;
      const tx = await client.pendingTransaction(id);
      if (tx !== null) this.#matchTx(tx, null, out);
      checked.push(id);
    }
    return checked;
  }

  #markChecked(ids: readonly string[]): void {
    if (this.#pendingChecked.size > 100_000) this.#pendingChecked.clear();
    for (const id of ids) this.#pendingChecked.add(id);
  }

  protected async pollOnce(): Promise<WatcherEvent[]> {
    const { chain, store, client } = this.#o;
    const tipBlock = await client.nowBlockFull();
    const tip = tipBlock.number;
    const confirmedTarget = tip - this.#o.confirmations + 1;
    let cursor: Cursor | null = await store.getCursor(chain);
    if (cursor === null) {
      const h = Math.max(0, (this.#o.startHeight ?? confirmedTarget + 1) - 1);
      const b = h === tip ? tipBlock : await client.blockByNum(h);
      cursor = { height: h, hash: b.blockID };
    }
    // (1) detection over the blocks above the cursor.
    const detected: TransactionDetectedEvent[] = [];
    const blocks = new Map<number, TronBlock>();
    const transfers = new Map<number, [string, string, string, string, bigint][]>();
    for (let h = cursor.height + 1; h <= tip; h++) {
      const b = h === tip ? tipBlock : await client.blockByNum(h);
      blocks.set(h, b);
      for (const tx of b.transactions) this.#matchTx(tx, h, detected);
      if (this.#tokens.size > 0 && b.transactions.length > 0) {
        const infos = await client.transactionInfoByBlockNum(h);
        // Infos are fetched by number: they must be those of the block read, else a fork came in between.
        const ids = new Set(b.transactions.map((t) => t.txID));
        if (infos.some((i) => !ids.has(i.id) || i.blockNumber !== h)) return [];
        const ts = this.#transfers(infos);
        transfers.set(h, ts);
        for (const [txid, token, from, to, amount] of ts) {
          if (this.#addresses.has(to)) detected.push(this.#event(txid, to, token, 'incoming', amount, h));
          if (this.#addresses.has(from)) detected.push(this.#event(txid, from, token, 'outgoing', amount, h));
        }
      }
    }
    const pendingChecked = this.#mempool ? await this.#pending(detected) : [];
    // token balances follow from the Transfer logs of the blocks counted (no balance call per token)
    const tokenDelta = (key: string, upTo: number): bigint => {
      let d = 0n;
      for (let h = cursor.height + 1; h <= upTo; h++)
        for (const [, token, from, to, amount] of transfers.get(h) ?? []) {
          if (`${to}|${token}` === key) d += amount;
          if (`${from}|${token}` === key) d -= amount;
        }
      return d;
    };
    const events = await settleAccountPoll({
      chain,
      store,
      confirmations: this.#o.confirmations,
      cursor,
      confirmedTarget,
      blocks: new Map([...blocks].map(([h, b]) => [h, { hash: b.blockID, parentHash: b.parentHash }])),
      detected,
      addresses: this.#addresses,
      assets: ['native', ...this.#tokens.keys()],
      balanceAt: async (address, asset, at, previous) =>
        asset === 'native'
          ? client.accountBalanceAt(address, { hash: at.hash, number: at.height })
          : BigInt(previous) + tokenDelta(`${address}|${asset}`, at.height),
    });
    if (events === null) return []; // a fork met while reading blocks: the next poll retries
    this.#markChecked(pendingChecked);
    return events;
  }
}
