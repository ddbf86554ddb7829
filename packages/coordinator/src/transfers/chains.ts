/**
 * The coordinator's chain integration (DESIGN §8): one `@custodian/chains` adapter per blockchain
 * of the directory that has a node configured (`CoordinatorOptions.chains`: blockchain key → RPC
 * URL), destination validation without a node, transaction lookup for the restart-safe broadcast
 * and the confirmation follow-up, and the deposit watchers over {@link PgWatcherStore}.
 *
 * Supported here: the Ethereum family (EIP-1559, ETH and ERC-20), the Bitcoin family (Bitcoin,
 * Litecoin; P2WPKH and P2TR spends of every address of the wallet, UTXOs from the watcher's
 * confirmed set and the unconfirmed change of the coordinator's own transfers, {@link PgUtxoSource})
 * and TRON (TRX and TRC-20 over a full node's HTTP API: `rpcUrl` is its base URL, e.g.
 * `https://nile.trongrid.io`). A transfer on a blockchain without a configured node waits in
 * PENDING_SIGNATURE with sub_status CHAIN_UNAVAILABLE (pipeline.ts).
 */
import {
  BitcoinAdapter,
  BitcoinRpc,
  type ChainAdapter,
  decodeTronAddress,
  decodeUtxoAddress,
  EthereumAdapter,
  EthereumWatcher,
  NodeRpcError,
  type PriceSource,
  TronAdapter,
  TronHttpClient,
  TronWatcher,
  type Utxo,
  type UtxoNetwork,
  type UtxoSource,
  UtxoWatcher,
  validateEthereumAddress,
  type Watcher,
  type WatcherEvent,
} from '@custodian/chains';
import type { Hex } from 'viem';
import { utxoNetworkOf } from '../addresses.js';
import type { Db, Queryable } from '../db/db.js';
import { type BlockchainDef, blockchainByKey } from '../directory.js';
import type { Startable } from '../lifecycle.js';
import type { Clock } from '../util.js';
import { PgWatcherStore } from './watcher-store.js';

/** Node settings of one blockchain. */
export interface ChainNodeConfig {
  /**
   * JSON-RPC URL of the node (Ethereum: any EIP-1474 node, e.g. anvil, geth, reth; Bitcoin family:
   * bitcoind / litecoind); TRON: the base URL of a full node's HTTP API (`/wallet/*` below it).
   */
  rpcUrl: string;
  /** TRON: extra HTTP headers of every request (e.g. `TRON-PRO-API-KEY` for TronGrid). */
  httpHeaders?: Record<string, string>;
  /** Bitcoin family: RPC user and password (`-rpcuser` / `-rpcpassword`). */
  rpcUsername?: string;
  rpcPassword?: string;
  /**
   * Confirmations before a transfer is delivered and a deposit counts (default 1; on TRON mainnet
   * 19 = solidified).
   */
  confirmations?: number;
  /** Watcher poll interval, ms (default 2000). */
  pollIntervalMs?: number;
  /**
   * Bitcoin family: how deep a new transaction may be in unconfirmed transactions when it spends
   * the unconfirmed change of this coordinator's own sent transfers (default 2: it may spend the
   * change of an unconfirmed transaction whose own inputs are confirmed; 0: confirmed outputs only).
   */
  maxUnconfirmedDepth?: number;
}

/** Where a broadcast transaction stands on the node. */
export type TxLookup =
  | { state: 'unknown' }
  | { state: 'pending' }
  | { state: 'mined'; confirmations: number; success: boolean; blockNumber: number };

/**
 * Adapters and watchers of the configured chains.
 */
/** Default of {@link ChainNodeConfig.maxUnconfirmedDepth}. */
export const DEFAULT_MAX_UNCONFIRMED_DEPTH = 2;

/**
 * UTXOs a Bitcoin-family transfer may spend (docs/transfers.md "UTXO wallets"):
 * - the watcher's confirmed outputs (`watcher_utxos`) of the given addresses, and
 * - the change output (vout 1: the destination is output 0) of this coordinator's own SENT
 *   transfers — unconfirmed, or delivered in the last day but not yet in the watcher's set (the
 *   pipeline sees confirmations before the watcher) — paying one of the given addresses, with no fee bump
 *   in progress (a replacement changes the txid) and never of a replacement the node refused, when the transaction's unconfirmed ancestry
 *   (itself plus the chain of such parents) is shorter than `maxDepth` — so a new transaction is at
 *   most `maxDepth` deep in unconfirmed transactions (0: confirmed outputs only);
 * minus the outpoints that an active transfer, or one delivered in the last day (its block may not
 * be processed by the watcher yet), already spends, and those that live self-spends
 * (consolidations, CPFP children, self-spend.ts) hold from their creation on.
 * `storeChain` is the watcher's chain id (`@custodian/chains` network id), `directoryKey` the
 * blockchain key.
 */
export class PgUtxoSource implements UtxoSource {
  constructor(
    private readonly db: Db,
    private readonly storeChain: string,
    private readonly directoryKey: string,
    private readonly maxDepth: number = DEFAULT_MAX_UNCONFIRMED_DEPTH,
  ) {}

  async listUnspent(addresses: readonly string[]): Promise<Utxo[]> {
    const rows = await this.db.query<{ outpoint: string; address: string; value: string }>(
      `WITH RECURSIVE sent AS (
         SELECT t.tx_hash, t.unsigned->'context' AS ctx, t.delivered_at IS NOT NULL AS delivered
         FROM transfers t JOIN blockchains b ON b.blockchain_id = t.blockchain_id
         WHERE b.key = $3 AND t.status = 'SENT' AND t.tx_hash IS NOT NULL AND t.unsigned IS NOT NULL
           AND (t.delivered_at IS NULL OR t.delivered_at > now() - interval '1 day')
           AND (t.fee_bump IS NULL OR t.fee_bump->>'status' IN ('DONE', 'REJECTED', 'FAILED'))
           -- only a transaction that was broadcast: a refused replacement is restored to the one
           -- broadcast (sent-step.ts, refused_tx_hash); a row refused before that restore existed
           -- still points at the refused replacement, whose outputs never existed
           AND NOT COALESCE(t.fee_bump->>'sub_status' = 'BROADCAST_FAILED' AND NOT t.fee_bump ? 'refused_tx_hash', false)),
       -- unconfirmed depth of each own transaction: 0 delivered (confirmed), else 1 + its deepest
       -- unconfirmed own parent
       depth (tx_hash, d) AS (
         SELECT s.tx_hash, CASE WHEN s.delivered THEN 0 ELSE 1 END FROM sent s
         UNION ALL
         SELECT c.tx_hash, p.d + 1 FROM depth p JOIN sent c
           ON NOT c.delivered AND EXISTS (SELECT 1 FROM jsonb_array_elements(COALESCE(c.ctx->'inputs', '[]'::jsonb)) i
                      WHERE i->>'txid' = p.tx_hash)
         WHERE p.d >= 1 AND p.d < $4 + 1),
       own AS (
         SELECT s.tx_hash || ':1' AS outpoint, s.ctx->'change'->>'address' AS address,
                s.ctx->'change'->>'value' AS value
         FROM sent s JOIN (SELECT tx_hash, max(d) AS d FROM depth GROUP BY tx_hash) dd USING (tx_hash)
         WHERE jsonb_typeof(s.ctx->'change') = 'object' AND (dd.d = 0 OR dd.d < $4)),
       candidates AS (
         SELECT u.outpoint, u.address, u.value::text AS value FROM watcher_utxos u
         WHERE u.chain = $1 AND u.address = ANY($2::text[])
         UNION
         SELECT c.outpoint, c.address, c.value FROM own c
         WHERE c.address = ANY($2::text[])
           AND NOT EXISTS (SELECT 1 FROM watcher_utxos w WHERE w.chain = $1 AND w.outpoint = c.outpoint))
       -- minus what an active transfer spends, and what a transfer delivered lately spent (the
       -- watcher may not have processed its block yet)
       SELECT c.outpoint, c.address, c.value FROM candidates c
       WHERE NOT EXISTS (
         SELECT 1 FROM transfers t JOIN blockchains b ON b.blockchain_id = t.blockchain_id,
           jsonb_array_elements(COALESCE(t.unsigned->'context'->'inputs', '[]'::jsonb)) i
         WHERE b.key = $3 AND t.status IN ('PENDING_SIGNATURE', 'READY_TO_SEND', 'SENT')
           AND (t.delivered_at IS NULL OR t.delivered_at > now() - interval '1 day')
           AND (i->>'txid') || ':' || (i->>'vout') = c.outpoint)
         -- self-spends (self-spend.ts) hold their fixed inputs from creation on
         AND NOT EXISTS (
           SELECT 1 FROM transfers t JOIN blockchains b ON b.blockchain_id = t.blockchain_id,
             jsonb_array_elements(t.self_spend->'inputs') i
           WHERE b.key = $3 AND t.self_spend IS NOT NULL AND t.delivered_at IS NULL
             AND t.status IN ('PENDING', 'PENDING_APPROVAL', 'PENDING_SIGNATURE', 'READY_TO_SEND', 'SENT')
             AND (i->>'txid') || ':' || (i->>'vout') = c.outpoint)`,
      [this.storeChain, [...addresses], this.directoryKey, this.maxDepth],
    );
    return rows.map((r) => {
      const [txid, vout] = r.outpoint.split(':');
      return { txid: txid as string, vout: Number(vout), value: BigInt(r.value), address: r.address };
    });
  }
}

/**
 * Where a TRON transaction stands: `gettransactioninfobyid` (mined: block number, and the receipt
 * result of a contract call — `SUCCESS` or e.g. `REVERT`; a TRX transfer has none and succeeded
 * once mined), else the pending pool (`gettransactionfrompending`, java-tron ≥ 4.7; a node without
 * it counts as "not pending"), else `gettransactionbyid` (in a block whose info is not served yet).
 */
export async function tronLookup(client: TronHttpClient, txid: string): Promise<TxLookup> {
  const info = await client.post<{
    id?: unknown;
    blockNumber?: unknown;
    result?: unknown;
    receipt?: { result?: unknown };
  }>('/wallet/gettransactioninfobyid', { value: txid });
  if (typeof info.id === 'string' && typeof info.blockNumber === 'number') {
    const tip = await client.nowBlock();
    const receipt = info.receipt?.result;
    return {
      state: 'mined',
      confirmations: Math.max(0, tip.number - info.blockNumber) + 1,
      success: info.result !== 'FAILED' && (receipt === undefined || receipt === 'SUCCESS'),
      blockNumber: info.blockNumber,
    };
  }
  const pending = await client.pendingTransaction(txid).catch((e: unknown) => {
    if (e instanceof NodeRpcError) return null;
    throw e;
  });
  if (pending !== null) return { state: 'pending' };
  const tx = await client.post<{ txID?: unknown }>('/wallet/gettransactionbyid', { value: txid });
  return typeof tx.txID === 'string' ? { state: 'pending' } : { state: 'unknown' };
}

/** What a chain's deposit watcher reads and reports ({@link ChainRegistry.watcher}). */
export interface WatcherDeps {
  readonly db: Db;
  readonly clock: Clock;
  /** The addresses to watch on a chain (re-read on every poll). */
  readonly addresses: (chain: string) => Promise<string[]>;
  /** The token contracts to watch on a chain (read once, when the watcher is built). */
  readonly tokens: (chain: string) => Promise<string[]>;
  /** A failed poll (logged; the next poll retries). */
  readonly onError: (chain: string, e: unknown) => void;
  /** Called inside each commit's transaction: throws when this replica may no longer commit (the singleton lease's fence). */
  readonly fence?: (q: Queryable) => Promise<void>;
}

/** A chain's watcher running in this process: its poller, timer and the poll in flight. */
interface RunningWatcher {
  readonly poller: Watcher;
  timer: NodeJS.Timeout | undefined;
  inFlight: Promise<void>;
}

export class ChainRegistry {
  readonly #adapters = new Map<string, EthereumAdapter | BitcoinAdapter | TronAdapter>();
  readonly #utxo = new Map<string, { network: UtxoNetwork; rpc: BitcoinRpc }>();
  readonly #watchers = new Map<string, RunningWatcher>();
  readonly #configs: Record<string, ChainNodeConfig>;

  /**
   * @param configs blockchain key (directory, e.g. `ethereum-local`) → node settings
   * @throws RangeError for an unknown blockchain key
   */
  constructor(configs: Record<string, ChainNodeConfig> = {}, prices?: PriceSource, db?: Db) {
    this.#configs = configs;
    for (const [key, cfg] of Object.entries(configs)) {
      const def = blockchainByKey(key);
      if (def === undefined) throw new RangeError(`chains.${key}: not a blockchain of the directory`);
      if (def.family === 'ethereum') {
        this.#adapters.set(
          key,
          new EthereumAdapter({
            id: key,
            chainId: Number(def.chainId),
            rpcUrl: cfg.rpcUrl,
            ...(prices ? { prices } : {}),
          }),
        );
      } else if ((def.family === 'bitcoin' || def.family === 'litecoin') && db !== undefined) {
        const network = utxoNetworkOf(def);
        const rpc = new BitcoinRpc({
          url: cfg.rpcUrl,
          username: cfg.rpcUsername ?? '',
          password: cfg.rpcPassword ?? '',
        });
        this.#utxo.set(key, { network, rpc });
        this.#adapters.set(
          key,
          new BitcoinAdapter({
            network,
            rpc,
            utxos: new PgUtxoSource(db, network.id, key, cfg.maxUnconfirmedDepth ?? DEFAULT_MAX_UNCONFIRMED_DEPTH),
            ...(prices ? { prices } : {}),
          }),
        );
      } else if (def.family === 'tron') {
        this.#adapters.set(
          key,
          new TronAdapter({
            id: key,
            client: new TronHttpClient(cfg.rpcUrl.replace(/\/+$/, ''), cfg.httpHeaders ?? {}),
            ...(prices ? { prices } : {}),
          }),
        );
      }
    }
  }

  /** Blockchain keys with an adapter (the pipeline only claims transfers of these). */
  keys(): string[] {
    return [...this.#adapters.keys()];
  }

  /** The adapter of a blockchain, or undefined when none is configured (or the family is not wired). */
  adapter(key: string): ChainAdapter | undefined {
    return this.#adapters.get(key) as ChainAdapter | undefined;
  }

  /** Confirmations required on a chain. */
  confirmations(key: string): number {
    return Math.max(1, this.#configs[key]?.confirmations ?? 1);
  }

  /**
   * Validate a destination address for a blockchain, without a node; returns the canonical form
   * (EIP-55 for Ethereum). @throws InvalidAddressError (422) naming `field`
   */
  validateDestination(def: BlockchainDef, address: string, field: string): string {
    switch (def.family) {
      case 'ethereum':
        return validateEthereumAddress(address, field);
      case 'bitcoin':
      case 'litecoin': {
        decodeUtxoAddress(utxoNetworkOf(def), address, field);
        return address;
      }
      case 'tron':
        decodeTronAddress(address, field);
        return address;
    }
  }

  /** Where a transaction stands (Ethereum: receipt, else pending transaction, else unknown). */
  async lookup(key: string, txid: string): Promise<TxLookup> {
    const u = this.#utxo.get(key);
    if (u !== undefined) {
      // Bitcoin family: mempool, or a block with the node's -txindex
      try {
        const tx = await u.rpc.call<{ confirmations?: number; blockhash?: string }>('getrawtransaction', [txid, true]);
        if (!tx.confirmations || !tx.blockhash) return { state: 'pending' };
        const h = await u.rpc.call<{ height: number }>('getblockheader', [tx.blockhash]);
        return { state: 'mined', confirmations: tx.confirmations, success: true, blockNumber: h.height };
      } catch (e) {
        if ((e as { rpcCode?: number }).rpcCode === -5) return { state: 'unknown' };
        throw e;
      }
    }
    const a = this.#adapters.get(key);
    if (a instanceof TronAdapter) return tronLookup(a.client, txid);
    if (!(a instanceof EthereumAdapter)) throw new Error(`no node configured for ${key}`);
    const hash = txid as Hex;
    const receipt = await a.client.getTransactionReceipt({ hash }).catch(() => null);
    if (receipt !== null) {
      const tip = await a.client.getBlockNumber();
      return {
        state: 'mined',
        confirmations: Number(tip - receipt.blockNumber) + 1,
        success: receipt.status === 'success',
        blockNumber: Number(receipt.blockNumber),
      };
    }
    const tx = await a.client.getTransaction({ hash }).catch(() => null);
    return tx !== null ? { state: 'pending' } : { state: 'unknown' };
  }

  /**
   * TRON: can a transaction expiring at `expiration` (ms since the epoch, `raw_data.expiration`)
   * never be mined any more, with the chain's confirmations? java-tron refuses a transaction whose
   * expiration is ≤ the head block's timestamp when it validates it, also inside a block (a block
   * holds it only if its parent's timestamp is below the expiration). So once a block with
   * timestamp ≥ `expiration` has {@link confirmations} (the tip counts as one), no later block can
   * hold the transaction; it is expired when it is also in no block and not in the pending pool
   * ({@link tronLookup} `unknown`, read after that block). The tip is read first, so a block mined
   * meanwhile is seen by the lookup. A reorganisation deeper than the confirmations could undo it,
   * the same assurance as a delivery.
   * @returns true when expired for good; false otherwise (mined, pending, or not yet deep enough)
   * @throws Error when no TRON node is configured for `key`; the node's error when it does not answer
   */
  async tronExpired(key: string, txid: string, expiration: number): Promise<boolean> {
    const a = this.#adapters.get(key);
    if (!(a instanceof TronAdapter)) throw new Error(`no TRON node configured for ${key}`);
    const tip = await a.client.nowBlock();
    const height = tip.number - (this.confirmations(key) - 1);
    if (height < 0) return false;
    const deep = height === tip.number ? tip : await a.client.blockByNum(height);
    if (deep.timestamp < expiration) return false;
    return (await tronLookup(a.client, txid)).state === 'unknown';
  }

  /**
   * Head block height the node of `key` reports now (Ethereum `eth_blockNumber`, Bitcoin family
   * `getblockcount`, TRON `getnowblock`): the readiness probe and the watcher lag metric.
   * @throws the node's error (unreachable, timeout); Error when no node is configured for `key`
   */
  async headHeight(key: string): Promise<number> {
    const u = this.#utxo.get(key);
    if (u !== undefined) return u.rpc.call<number>('getblockcount');
    const a = this.#adapters.get(key);
    if (a instanceof TronAdapter) return (await a.client.nowBlock()).number;
    if (a instanceof EthereumAdapter) return Number(await a.client.getBlockNumber({ cacheTime: 0 }));
    throw new Error(`no node configured for ${key}`);
  }

  /** The chain name the deposit watcher of `key` keeps its cursor under (`watcher_cursors.chain`). */
  watcherChain(key: string): string {
    return this.#utxo.get(key)?.network.id ?? key;
  }

  /**
   * The deposit watcher of one chain (`key`: a blockchain key of {@link keys}) as a component:
   * `start()` builds the watcher (its cursor, seen keys and balances are read from the database,
   * so a watcher started on another replica continues where the last one committed) and polls
   * every `pollIntervalMs`; `stop()` ends the polling, WAITS for the poll in flight (its commit is
   * one transaction: done or not done, never half) and drops the watcher, so the next start
   * builds a fresh one. Both idempotent. Replicas run it under the singleton lease
   * `watcher:<key>` (coordinator.ts): one poller per chain among all replicas, so no two commits
   * of the same blocks race (they would both emit the blocks' events).
   * @throws RangeError (on start) when `key` has no adapter
   */
  watcher(key: string, deps: WatcherDeps): Startable {
    return {
      start: async () => this.#startWatcher(key, deps),
      stop: () => this.#stopWatcher(key),
    };
  }

  #startWatcher(key: string, { db, clock, addresses, tokens, onError, fence }: WatcherDeps): void {
    const cfg = this.#configs[key];
    const adapter = this.#adapters.get(key);
    if (cfg === undefined || adapter === undefined) throw new RangeError(`no node configured for ${key}`);
    if (this.#watchers.has(key)) return;
    const store = new PgWatcherStore(db, clock, fence);
    const watched = new Set<string>();
    const u = this.#utxo.get(key);
    const ready: Promise<Watcher> =
      adapter instanceof TronAdapter
        ? tokens(key).then(
            (t) =>
              new TronWatcher({
                chain: key,
                client: adapter.client,
                store,
                confirmations: this.confirmations(key),
                tokens: t,
              }),
          )
        : u !== undefined
          ? Promise.resolve(
              new UtxoWatcher({ network: u.network, rpc: u.rpc, store, confirmations: this.confirmations(key) }),
            )
          : tokens(key).then(
              (t) =>
                new EthereumWatcher({
                  chain: key,
                  rpcUrl: cfg.rpcUrl,
                  store,
                  confirmations: this.confirmations(key),
                  tokens: t,
                }),
            );
    // a failed construction (the token list unreadable) surfaces at the first poll, not as an unhandled rejection
    ready.catch(() => undefined);
    const poller: Watcher = {
      watch: (address) => {
        void ready.then((x) => x.watch(address)).catch(() => undefined);
      },
      poll: async () => {
        const x = await ready;
        for (const a of await addresses(key)) {
          if (!watched.has(a)) {
            watched.add(a);
            x.watch(a);
          }
        }
        return x.poll();
      },
      on: (l) => {
        void ready.then((x) => x.on(l)).catch(() => undefined);
      },
      start: () => {},
      stop: async () => {
        await (await ready).stop();
      },
    };
    const entry: RunningWatcher = { poller, timer: undefined, inFlight: Promise.resolve() };
    this.#watchers.set(key, entry);
    let running = false;
    entry.timer = setInterval(() => {
      if (running) return;
      running = true;
      entry.inFlight = poller
        .poll()
        .then(
          () => undefined,
          (e: unknown) => onError(key, e),
        )
        .finally(() => {
          running = false;
        });
    }, cfg.pollIntervalMs ?? 2000);
    entry.timer.unref();
  }

  async #stopWatcher(key: string): Promise<void> {
    const w = this.#watchers.get(key);
    if (w === undefined) return;
    this.#watchers.delete(key);
    clearInterval(w.timer);
    await w.inFlight.catch(() => undefined);
    await w.poller.stop().catch(() => undefined);
  }

  /** Blockchain keys whose deposit watcher runs in this process now. */
  watching(): string[] {
    return [...this.#watchers.keys()];
  }

  /** One poll of a chain's watcher (tests, CLI); returns the events committed. */
  async pollWatcher(key: string): Promise<WatcherEvent[]> {
    const w = this.#watchers.get(key);
    if (w === undefined) throw new Error(`no watcher for ${key}`);
    return w.poller.poll();
  }

  /** Stop the watchers (each as its {@link watcher}'s stop). */
  async stop(): Promise<void> {
    await Promise.all([...this.#watchers.keys()].map((k) => this.#stopWatcher(k)));
  }
}
