import {
  type Address,
  createPublicClient,
  decodeFunctionResult,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  http,
  type PublicClient,
  parseEventLogs,
} from 'viem';
import { NodeRpcError } from '../errors.js';
import { settleAccountPoll } from '../watcher/account-poll.js';
import {
  type Cursor,
  PollingWatcher,
  type TransactionDetectedEvent,
  type WatcherEvent,
  type WatcherStore,
} from '../watcher/types.js';
import { validateEthereumAddress } from './adapter.js';

export interface EthereumWatcherOptions {
  /** Chain id string, as in the adapter (store key and `chain` of events). */
  chain: string;
  rpcUrl: string;
  store: WatcherStore;
  /** ERC-20 contracts whose Transfer logs and balances are followed. */
  tokens?: readonly string[];
  /** Confirmations before a balance counts (≥ 1; 1 = in a block). */
  confirmations: number;
  /** Height to start from when the store has no cursor (default: the confirmed tip at first poll). */
  startHeight?: number;
  /** Read the mempool with `txpool_content` (geth, anvil, reth); ignored when the node lacks it. Default true. */
  mempool?: boolean;
}

interface RpcTx {
  hash: string;
  from: string;
  to: string | null;
  value: string;
  input: string;
}
interface RpcBlock {
  number: string;
  hash: string;
  parentHash: string;
  transactions: RpcTx[];
}

/**
 * Watches Ethereum addresses for ETH and ERC-20 movements.
 *
 * Each poll scans blocks above the cursor up to the tip, Transfer logs of the tokens, and the
 * mempool, emitting `transaction_detected` once per (txid, address, asset); then the shared
 * account-model steps ({@link settleAccountPoll}: cursor with parent-link checks, balances, one
 * atomic commit) run, with each balance read at the confirmed block's hash (EIP-1898). Reading
 * balances at the confirmed block (rather than summing transfers) counts internal transfers and
 * fees too. Cost: one balance call per address and asset per poll that advances the cursor.
 */
export class EthereumWatcher extends PollingWatcher {
  readonly client: PublicClient;
  readonly #o: EthereumWatcherOptions;
  readonly #addresses = new Set<string>();
  readonly #tokens: string[];
  #mempool: boolean;

  constructor(options: EthereumWatcherOptions) {
    super();
    if (!Number.isInteger(options.confirmations) || options.confirmations < 1)
      throw new RangeError('confirmations: integer ≥ 1');
    this.#o = options;
    this.#tokens = (options.tokens ?? []).map((t) => validateEthereumAddress(t, 'tokens'));
    this.#mempool = options.mempool ?? true;
    this.client = createPublicClient({ transport: http(options.rpcUrl, { retryCount: 0 }) }) as PublicClient;
  }

  watch(address: string): void {
    this.#addresses.add(validateEthereumAddress(address, 'address'));
  }

  async #req<T>(method: string, params: unknown[]): Promise<T> {
    try {
      return (await this.client.request({ method, params } as never)) as T;
    } catch (e) {
      throw new NodeRpcError(method, (e as Error).message.split('\n')[0] ?? 'failed', (e as { code?: number }).code, {
        cause: e,
      });
    }
  }

  #block(height: number): Promise<RpcBlock> {
    return this.#req<RpcBlock>('eth_getBlockByNumber', [`0x${height.toString(16)}`, true]);
  }

  #match(tx: RpcTx, height: number | null, out: TransactionDetectedEvent[]): void {
    const from = getAddress(tx.from);
    const to = tx.to === null ? null : getAddress(tx.to);
    const value = BigInt(tx.value).toString();
    const chain = this.#o.chain;
    // A zero-value call to a followed token is reported as the token movement (from its log), not as ETH.
    const tokenCall = to !== null && this.#tokens.includes(to) && value === '0';
    if (to !== null && this.#addresses.has(to) && !tokenCall)
      out.push({
        type: 'transaction_detected',
        chain,
        txid: tx.hash,
        address: to,
        asset: 'native',
        direction: 'incoming',
        amount: value,
        block_height: height,
      });
    if (this.#addresses.has(from) && !tokenCall)
      out.push({
        type: 'transaction_detected',
        chain,
        txid: tx.hash,
        address: from,
        asset: 'native',
        direction: 'outgoing',
        amount: value,
        block_height: height,
      });
    // Pending ERC-20 transfers (mempool only; mined ones come from logs).
    if (
      height === null &&
      to !== null &&
      this.#tokens.includes(to) &&
      tx.input.startsWith('0xa9059cbb') &&
      tx.input.length === 138
    ) {
      const dest = getAddress(`0x${tx.input.slice(34, 74)}`);
      const amount = BigInt(`0x${tx.input.slice(74)}`).toString();
      if (this.#addresses.has(dest))
        out.push({
          type: 'transaction_detected',
          chain,
          txid: tx.hash,
          address: dest,
          asset: to,
          direction: 'incoming',
          amount,
          block_height: null,
        });
      if (this.#addresses.has(from))
        out.push({
          type: 'transaction_detected',
          chain,
          txid: tx.hash,
          address: from,
          asset: to,
          direction: 'outgoing',
          amount,
          block_height: null,
        });
    }
  }

  async #balance(address: string, asset: string, blockHash: string): Promise<bigint> {
    const at = { blockHash };
    if (asset === 'native') return BigInt(await this.#req<string>('eth_getBalance', [address, at]));
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [address as Address] });
    const result = await this.#req<Hex>('eth_call', [{ to: asset, data }, at]);
    // no code at the token's address on this chain (e.g. a local chain before the token is
    // deployed): nobody holds any of it — a configured token never stops the native balances
    if (result === '0x') return 0n;
    return decodeFunctionResult({ abi: erc20Abi, functionName: 'balanceOf', data: result });
  }

  protected async pollOnce(): Promise<WatcherEvent[]> {
    const chain = this.#o.chain;
    const store = this.#o.store;
    const tip = Number(BigInt(await this.#req<string>('eth_blockNumber', [])));
    const confirmedTarget = tip - this.#o.confirmations + 1;
    let cursor: Cursor | null = await store.getCursor(chain);
    if (cursor === null) {
      const h = Math.max(0, (this.#o.startHeight ?? confirmedTarget + 1) - 1);
      const b = await this.#block(h);
      cursor = { height: h, hash: b.hash };
    }
    // (1) detection over blocks above the cursor.
    const detected: TransactionDetectedEvent[] = [];
    const blocks = new Map<number, RpcBlock>();
    for (let h = cursor.height + 1; h <= tip; h++) {
      const b = await this.#block(h);
      blocks.set(h, b);
      for (const tx of b.transactions) this.#match(tx, h, detected);
    }
    if (this.#tokens.length > 0 && tip > cursor.height) {
      const logs = await this.#req<Parameters<typeof parseEventLogs>[0]['logs']>('eth_getLogs', [
        { fromBlock: `0x${(cursor.height + 1).toString(16)}`, toBlock: `0x${tip.toString(16)}`, address: this.#tokens },
      ]);
      for (const log of parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs, strict: false })) {
        const { from, to, value } = log.args;
        if (from === undefined || to === undefined || value === undefined || log.transactionHash === null) continue;
        const asset = getAddress(log.address);
        const height = Number(log.blockNumber);
        const base = {
          type: 'transaction_detected' as const,
          chain,
          txid: log.transactionHash,
          asset,
          amount: value.toString(),
          block_height: height,
        };
        if (this.#addresses.has(getAddress(to)))
          detected.push({ ...base, address: getAddress(to), direction: 'incoming' });
        if (this.#addresses.has(getAddress(from)))
          detected.push({ ...base, address: getAddress(from), direction: 'outgoing' });
      }
    }
    if (this.#mempool) {
      try {
        const pool = (await this.client.request({ method: 'txpool_content', params: [] } as never)) as {
          pending?: Record<string, Record<string, RpcTx>>;
        };
        for (const byNonce of Object.values(pool.pending ?? {}))
          for (const tx of Object.values(byNonce)) this.#match(tx, null, detected);
      } catch {
        this.#mempool = false; // node has no txpool namespace
      }
    }
    const events = await settleAccountPoll({
      chain,
      store,
      confirmations: this.#o.confirmations,
      cursor,
      confirmedTarget,
      blocks,
      detected,
      addresses: this.#addresses,
      assets: ['native', ...this.#tokens],
      balanceAt: (address, asset, at) => this.#balance(address, asset, at.hash),
    });
    return events ?? []; // null: a reorganisation happened while this poll read blocks
  }
}
