/**
 * TEST-ONLY in-memory TRON chain model behind a local `node:http` server. No TRON node runs
 * offline here (java-tron needs a network of super representatives), so the watcher is tested
 * against this model, which answers the `/wallet/*` calls the watcher makes with the shapes of
 * TRON's documented HTTP API (developers.tron.network, "HTTP API": getnowblock, getblockbynum,
 * gettransactioninfobyblocknum, getaccountbalance, gettransactionlistfrompending,
 * gettransactionfrompending; `visible: false` hex addresses in blocks, int64 amounts as JSON
 * numbers even above 2^53). It models what the watcher depends on: a chain of blocks linked by
 * parentHash with ids whose first 8 bytes are the height, TRX transfers with a burnt fee, TRC-20
 * transfers with their `Transfer` logs, per-block TRX balances (history lookup), a pending pool,
 * forks (replacing the last blocks), and for the coordinator's transfer pipeline `broadcasthex`
 * (signature checked against the owner), `gettransactioninfobyid` and `gettransactionbyid`. It is
 * not a TRON node: no bandwidth or energy rules. Expiration as java-tron: a broadcast transaction
 * whose `raw_data.expiration` is ≤ the head block's timestamp is refused
 * (TRANSACTION_EXPIRATION_ERROR), and a block holds a transaction only if its parent's timestamp is
 * below the expiration; tests move block time ahead ({@link TronChainModel.skipTime}) and drop a
 * pending transaction ({@link TronChainModel.drop}, a node that lost it).
 */
import { createServer, type Server } from 'node:http';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { encodeTronAddress, TRC20_TRANSFER_TOPIC, tronAddress, tronAddressHex } from '../../src/index.js';
import {
  CONTRACT_TYPE,
  TransactionRawType,
  TransactionType,
  TransferContractType,
  TriggerSmartContractType,
} from '../../src/tron/proto.js';
import { freePort } from './anvil.js';

export interface ModelTx {
  readonly txID: string;
  readonly kind: 'trx' | 'trc20';
  readonly from: string;
  readonly to: string;
  readonly amount: bigint;
  /** TRC-20 contract (base58). */
  readonly token?: string;
}

interface ModelBlock {
  readonly number: number;
  readonly blockID: string;
  readonly parentHash: string;
  readonly timestamp: number;
  readonly txs: readonly ModelTx[];
  /** TRX balances after this block (sun). */
  readonly trx: ReadonlyMap<string, bigint>;
  /** TRC-20 balances after this block, key `token|address`. */
  readonly tokens: ReadonlyMap<string, bigint>;
}

/** Sun burnt per transaction by the model (bandwidth). */
export const MODEL_FEE = 100_000n;

let txCounter = 0;

export class TronChainModel {
  readonly blocks: ModelBlock[] = [];
  pending: ModelTx[] = [];
  /** `raw_data.expiration` (ms) of transactions received by {@link broadcast}, by txID. */
  readonly expirations = new Map<string, number>();
  #salt = 0;
  /** Added to the timestamps of blocks mined from now on ({@link skipTime}). */
  #timeOffset = 0;

  /** `trx`: TRX balances at genesis by address; `tokens`: TRC-20 balances by `token|address`. */
  constructor(trx: Record<string, bigint>, tokens: Record<string, bigint> = {}) {
    this.blocks.push(this.#block(0, '0'.repeat(64), [], new Map(Object.entries(trx)), new Map(Object.entries(tokens))));
  }

  get tip(): ModelBlock {
    return this.blocks.at(-1) as ModelBlock;
  }

  #block(
    number: number,
    parentHash: string,
    txs: ModelTx[],
    trx: Map<string, bigint>,
    tokens: Map<string, bigint>,
  ): ModelBlock {
    const digest = bytesToHex(
      sha256(new TextEncoder().encode(`${parentHash}|${txs.map((t) => t.txID).join()}|${this.#salt++}`)),
    );
    const blockID = number.toString(16).padStart(16, '0') + digest.slice(16);
    return {
      number,
      blockID,
      parentHash,
      timestamp: 1_700_000_000_000 + number * 3000 + this.#timeOffset,
      txs,
      trx,
      tokens,
    };
  }

  tx(kind: 'trx' | 'trc20', from: string, to: string, amount: bigint, token?: string): ModelTx {
    const txID = bytesToHex(sha256(new TextEncoder().encode(`tx-${txCounter++}`)));
    return { txID, kind, from, to, amount, ...(token !== undefined ? { token } : {}) };
  }

  /**
   * Blocks mined from now on are `ms` later than they would have been (block time jumps ahead, as
   * after a long stall); `ms` ≥ 0.
   */
  skipTime(ms: number): void {
    if (ms < 0) throw new Error('model: time goes forward only');
    this.#timeOffset += ms;
  }

  /** Drops a transaction from the pending pool (the node lost it; it is never mined). */
  drop(txID: string): void {
    this.pending = this.pending.filter((p) => p.txID !== txID);
  }

  /**
   * Mines one block with `txs` (and nothing from the pending pool unless passed).
   * @throws Error for a transaction whose expiration is ≤ the parent block's timestamp (java-tron
   *   refuses it in a block: TransactionExpirationException)
   */
  mine(txs: ModelTx[] = []): ModelBlock {
    const parent = this.tip;
    for (const t of txs) {
      const exp = this.expirations.get(t.txID);
      if (exp !== undefined && exp <= parent.timestamp) throw new Error(`model: ${t.txID} expired at ${exp}`);
    }
    const trx = new Map(parent.trx);
    const tokens = new Map(parent.tokens);
    const add = (m: Map<string, bigint>, k: string, v: bigint) => {
      const next = (m.get(k) ?? 0n) + v;
      if (next < 0n) throw new Error(`model: ${k} would go negative`);
      m.set(k, next);
    };
    for (const t of txs) {
      add(trx, t.from, -MODEL_FEE);
      if (t.kind === 'trx') {
        add(trx, t.from, -t.amount);
        add(trx, t.to, t.amount);
      } else {
        add(tokens, `${t.token}|${t.from}`, -t.amount);
        add(tokens, `${t.token}|${t.to}`, t.amount);
      }
    }
    const ids = new Set(txs.map((t) => t.txID));
    this.pending = this.pending.filter((p) => !ids.has(p.txID));
    const b = this.#block(parent.number + 1, parent.blockID, txs, trx, tokens);
    this.blocks.push(b);
    return b;
  }

  /** Drops the last `depth` blocks (a fork); their transactions are gone. */
  rollback(depth: number): void {
    if (depth >= this.blocks.length) throw new Error('model: cannot drop genesis');
    this.blocks.splice(this.blocks.length - depth, depth);
  }

  /** The block holding a transaction, if mined. */
  blockOf(txID: string): ModelBlock | undefined {
    return this.blocks.find((b) => b.txs.some((t) => t.txID === txID));
  }

  /**
   * A signed transaction as `/wallet/broadcasthex` receives it (protobuf `Transaction`, hex): a
   * single TransferContract or TriggerSmartContract `transfer(address,uint256)`, txID =
   * SHA-256(raw_data), one signature r ‖ s ‖ v that must recover the owner's address. Accepted
   * into the pending pool; answers like java-tron (`result`, `txid`, or `code` + hex `message`).
   */
  broadcast(transactionHex: string): { result: boolean; txid?: string; code?: string; message?: string } {
    const refuse = (code: string, message: string) => ({
      result: false,
      code,
      message: bytesToHex(new TextEncoder().encode(message)),
    });
    let tx: { raw_data?: Record<string, unknown>; signature?: Uint8Array[] };
    try {
      tx = TransactionType.toObject(TransactionType.decode(hexToBytes(transactionHex)), { longs: String }) as typeof tx;
    } catch {
      return refuse('OTHER_ERROR', 'cannot decode transaction');
    }
    const raw = TransactionRawType.encode(TransactionRawType.fromObject(tx.raw_data ?? {})).finish();
    const txID = bytesToHex(sha256(raw));
    if (this.pending.some((p) => p.txID === txID) || this.blockOf(txID) !== undefined)
      return refuse('DUP_TRANSACTION_ERROR', 'dup transaction');
    const expiration = Number(tx.raw_data?.expiration ?? 0);
    if (expiration <= this.tip.timestamp)
      return refuse('TRANSACTION_EXPIRATION_ERROR', `transaction expired: ${expiration} <= ${this.tip.timestamp}`);
    const contracts = (tx.raw_data?.contract ?? []) as { type?: number; parameter?: { value?: Uint8Array } }[];
    const c = contracts[0];
    if (contracts.length !== 1 || c?.parameter?.value === undefined)
      return refuse('CONTRACT_VALIDATE_ERROR', 'one contract');
    let model: ModelTx;
    if (c.type === CONTRACT_TYPE.TransferContract) {
      const v = TransferContractType.toObject(TransferContractType.decode(c.parameter.value), { longs: String });
      model = {
        txID,
        kind: 'trx',
        from: encodeTronAddress(v.owner_address),
        to: encodeTronAddress(v.to_address),
        amount: BigInt(v.amount),
      };
    } else if (c.type === CONTRACT_TYPE.TriggerSmartContract) {
      const v = TriggerSmartContractType.toObject(TriggerSmartContractType.decode(c.parameter.value), {
        longs: String,
      });
      const data = bytesToHex(v.data);
      if (data.length !== 8 + 128 || !data.startsWith('a9059cbb'))
        return refuse('CONTRACT_VALIDATE_ERROR', 'not a transfer(address,uint256) call');
      model = {
        txID,
        kind: 'trc20',
        from: encodeTronAddress(v.owner_address),
        to: encodeTronAddress(hexToBytes(`41${data.slice(8 + 24, 8 + 64)}`)),
        amount: BigInt(`0x${data.slice(8 + 64)}`),
        token: encodeTronAddress(v.contract_address),
      };
    } else return refuse('CONTRACT_VALIDATE_ERROR', `contract type ${c.type} not modelled`);
    const sig = tx.signature?.[0];
    if (tx.signature?.length !== 1 || sig === undefined || sig.length !== 65)
      return refuse('SIGERROR', 'one 65-byte signature expected');
    let signer: string;
    try {
      const recovered = secp256k1.Signature.fromBytes(sig.subarray(0, 64), 'compact')
        .addRecoveryBit((sig[64] as number) - 27)
        .recoverPublicKey(hexToBytes(txID));
      signer = tronAddress(recovered.toBytes(true));
    } catch {
      return refuse('SIGERROR', 'validate signature error: not recoverable');
    }
    if (signer !== model.from) return refuse('SIGERROR', `validate signature error: signed by ${signer}`);
    this.pending.push(model);
    this.expirations.set(txID, expiration);
    return { result: true, txid: txID };
  }

  trxAt(address: string, height = this.tip.number): bigint {
    return this.blocks[height]?.trx.get(address) ?? 0n;
  }

  tokenAt(token: string, address: string, height = this.tip.number): bigint {
    return this.blocks[height]?.tokens.get(`${token}|${address}`) ?? 0n;
  }
}

function txJson(t: ModelTx): Record<string, unknown> {
  const owner = tronAddressHex(t.from);
  const value =
    t.kind === 'trx'
      ? { amount: t.amount, owner_address: owner, to_address: tronAddressHex(t.to) }
      : {
          data: `a9059cbb${tronAddressHex(t.to).slice(2).padStart(64, '0')}${t.amount.toString(16).padStart(64, '0')}`,
          owner_address: owner,
          contract_address: tronAddressHex(t.token as string),
        };
  const type = t.kind === 'trx' ? 'TransferContract' : 'TriggerSmartContract';
  return {
    ret: [{ contractRet: 'SUCCESS' }],
    signature: ['00'.repeat(65)],
    txID: t.txID,
    raw_data: {
      contract: [{ parameter: { value, type_url: `type.googleapis.com/protocol.${type}` }, type }],
      ref_block_bytes: '0000',
      ref_block_hash: '0000000000000000',
      expiration: 1_700_000_060_000,
      timestamp: 1_700_000_000_000,
      ...(t.kind === 'trc20' ? { fee_limit: 30_000_000 } : {}),
    },
    raw_data_hex: '00',
  };
}

function blockJson(b: ModelBlock): Record<string, unknown> {
  return {
    blockID: b.blockID,
    block_header: {
      raw_data: {
        ...(b.number > 0 ? { number: b.number } : {}),
        txTrieRoot: '0'.repeat(64),
        witness_address: '41'.padEnd(42, '0'),
        parentHash: b.parentHash,
        version: 30,
        timestamp: b.timestamp,
      },
      witness_signature: '00'.repeat(65),
    },
    ...(b.txs.length > 0 ? { transactions: b.txs.map(txJson) } : {}),
  };
}

function infoJson(b: ModelBlock, t: ModelTx): Record<string, unknown> {
  const topic = (a: string) => tronAddressHex(a).slice(2).padStart(64, '0');
  return {
    id: t.txID,
    fee: MODEL_FEE,
    blockNumber: b.number,
    blockTimeStamp: b.timestamp,
    contractResult: [''],
    receipt:
      t.kind === 'trx' ? { net_fee: MODEL_FEE } : { net_fee: MODEL_FEE, energy_usage_total: 13_000, result: 'SUCCESS' },
    ...(t.kind === 'trc20'
      ? {
          contract_address: tronAddressHex(t.token as string),
          log: [
            {
              address: tronAddressHex(t.token as string).slice(2),
              topics: [TRC20_TRANSFER_TOPIC, topic(t.from), topic(t.to)],
              data: t.amount.toString(16).padStart(64, '0'),
            },
          ],
        }
      : {}),
  };
}

/** JSON with bigints as bare integer literals (as java-tron prints int64). */
function stringify(o: unknown): string {
  return JSON.stringify(o, (_k, v) => (typeof v === 'bigint' ? `__int64__${v}` : v)).replace(
    /"__int64__(-?\d+)"/g,
    '$1',
  );
}

export interface TronModelServer {
  readonly url: string;
  readonly calls: string[];
  /** Runs before each request is answered (tests change the chain between two calls of one poll). */
  beforeAnswer: ((path: string, body: Record<string, unknown>) => void) | undefined;
  close(): Promise<void>;
}

/** Serves `model` on a free 127.0.0.1 port. */
export async function serveTronModel(model: TronChainModel): Promise<TronModelServer> {
  const handle: { beforeAnswer: TronModelServer['beforeAnswer'] } = { beforeAnswer: undefined };
  const calls: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += String(c);
    });
    req.on('end', () => {
      const json = body ? JSON.parse(body) : {};
      const send = (o: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(stringify(o));
      };
      calls.push(req.url ?? '');
      handle.beforeAnswer?.(req.url ?? '', json);
      switch (req.url) {
        case '/wallet/getnowblock':
          return send(blockJson(model.tip));
        case '/wallet/getblockbynum': {
          const b = model.blocks[json.num];
          return send(b === undefined ? {} : blockJson(b));
        }
        case '/wallet/gettransactioninfobyblocknum': {
          const b = model.blocks[json.num];
          return send(b === undefined ? [] : b.txs.map((t) => infoJson(b, t)));
        }
        case '/wallet/getaccountbalance': {
          const { hash, number } = json.block_identifier ?? {};
          const b = model.blocks[number];
          if (b === undefined || b.blockID !== hash)
            return send({ Error: 'class org.tron.core.exception.BadItemException : block not found' });
          const balance = b.trx.get(json.account_identifier?.address);
          return send({ ...(balance ? { balance } : {}), block_identifier: { hash: b.blockID, number: b.number } });
        }
        case '/wallet/gettransactionlistfrompending':
          return send({ txId: model.pending.map((t) => t.txID) });
        case '/wallet/broadcasthex':
          return send(model.broadcast(String(json.transaction ?? '')));
        case '/wallet/gettransactioninfobyid': {
          const b = model.blockOf(json.value);
          const t = b?.txs.find((x) => x.txID === json.value);
          return send(b === undefined || t === undefined ? {} : infoJson(b, t));
        }
        case '/wallet/gettransactionbyid': {
          const t = model.blockOf(json.value)?.txs.find((x) => x.txID === json.value);
          return send(t === undefined ? {} : txJson(t));
        }
        case '/wallet/gettransactionfrompending': {
          const t = model.pending.find((p) => p.txID === json.value);
          return send(t === undefined ? {} : txJson(t));
        }
        default:
          res.writeHead(404);
          res.end();
      }
    });
  });
  // Clients may block their event loop for seconds (threshold signing in the same process): keep
  // idle sockets long enough that a reused keep-alive socket is not closed under a request.
  server.keepAliveTimeout = 60_000;
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    get beforeAnswer() {
      return handle.beforeAnswer;
    },
    set beforeAnswer(f) {
      handle.beforeAnswer = f;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
