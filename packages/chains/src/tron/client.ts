import { NodeRpcError } from '../errors.js';

/** A contract call of a block transaction, as `/wallet/getblockbynum` prints it (`visible: false`: hex addresses). */
export interface TronContractCall {
  /** `TransferContract`, `TriggerSmartContract`, … */
  readonly type: string;
  /** `parameter.value` (TransferContract: `owner_address`, `to_address` 41… hex, `amount` sun). */
  readonly value: Record<string, unknown>;
}

/** A transaction inside a block. */
export interface TronBlockTransaction {
  /** 64 hex. */
  readonly txID: string;
  /** `ret[0].contractRet` (`SUCCESS`, `REVERT`, `OUT_OF_ENERGY`…); `SUCCESS` when the node omits it. */
  readonly contractRet: string;
  readonly contracts: readonly TronContractCall[];
}

/** A block header with its transactions. */
export interface TronBlock {
  /** 64 hex; bytes 0..8 are the height. */
  readonly blockID: string;
  readonly number: number;
  /** 64 hex (`block_header.raw_data.parentHash`). */
  readonly parentHash: string;
  /** Milliseconds since the epoch. */
  readonly timestamp: number;
  readonly transactions: readonly TronBlockTransaction[];
}

/** A contract event log (`TransactionInfo.log`): EVM-style 20-byte address, topics and data, hex without 0x. */
export interface TronLog {
  readonly address: string;
  readonly topics: readonly string[];
  readonly data: string;
}

/** `TransactionInfo` of a mined transaction (the fields the watcher uses). */
export interface TronTransactionInfo {
  readonly id: string;
  readonly blockNumber: number;
  /** Sun burnt for the transaction (bandwidth, energy, account creation); 0 when omitted. */
  readonly fee: bigint;
  /** `receipt.result` of a smart-contract call (`SUCCESS`, `REVERT`…), or undefined. */
  readonly result: string | undefined;
  readonly logs: readonly TronLog[];
}

const HEX64 = /^[0-9a-f]{64}$/i;

/**
 * TRON answers int64 values (sun amounts, balances) as JSON numbers, which `JSON.parse` rounds
 * above 2^53. This rewrites every integer literal of 16 digits or more outside strings as a JSON
 * string holding the same digits, so it survives parsing exactly (read it with {@link exactInt}).
 */
export function quoteLongIntegers(text: string): string {
  let out = '';
  let i = 0;
  let inString = false;
  while (i < text.length) {
    const c = text[i] as string;
    if (inString) {
      out += c;
      if (c === '\\') {
        out += text[i + 1] ?? '';
        i += 2;
        continue;
      }
      if (c === '"') inString = false;
      i++;
      continue;
    }
    if (c === '"') {
      inString = true;
      out += c;
      i++;
      continue;
    }
    if (c === '-' || (c >= '0' && c <= '9')) {
      let j = i + 1;
      while (j < text.length && /[0-9.eE+-]/.test(text[j] as string)) j++;
      const literal = text.slice(i, j);
      out += /^-?\d{16,}$/.test(literal) ? `"${literal}"` : literal;
      i = j;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

/** An exact integer from a TRON JSON field: a safe number, or the decimal string {@link quoteLongIntegers} made. */
export function exactInt(value: unknown): bigint | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^-?\d{16,}$/.test(value)) return BigInt(value);
  return undefined;
}

function parseBlock(path: string, b: unknown): TronBlock {
  const o = b as {
    blockID?: unknown;
    block_header?: { raw_data?: { number?: unknown; parentHash?: unknown; timestamp?: unknown } };
    transactions?: unknown;
  };
  const raw = o.block_header?.raw_data;
  // TRON's genesis block (0) has no number field: protobuf JSON omits zeros.
  const number = raw?.number ?? 0;
  const timestamp = raw?.timestamp ?? 0;
  if (
    typeof o.blockID !== 'string' ||
    !HEX64.test(o.blockID) ||
    typeof raw?.parentHash !== 'string' ||
    !HEX64.test(raw.parentHash) ||
    typeof number !== 'number' ||
    !Number.isSafeInteger(number) ||
    typeof timestamp !== 'number'
  )
    throw new NodeRpcError(path, 'unexpected block shape');
  if (o.transactions !== undefined && !Array.isArray(o.transactions))
    throw new NodeRpcError(path, 'transactions is not an array');
  const transactions = ((o.transactions ?? []) as unknown[]).map((t): TronBlockTransaction => {
    const tx = t as {
      txID?: unknown;
      ret?: { contractRet?: unknown }[];
      raw_data?: { contract?: { type?: unknown; parameter?: { value?: unknown } }[] };
    };
    if (typeof tx.txID !== 'string' || !HEX64.test(tx.txID)) throw new NodeRpcError(path, 'transaction without txID');
    const ret = tx.ret?.[0]?.contractRet;
    return {
      txID: tx.txID.toLowerCase(),
      contractRet: typeof ret === 'string' ? ret : 'SUCCESS',
      contracts: (tx.raw_data?.contract ?? []).map((c) => ({
        type: typeof c.type === 'string' ? c.type : '',
        value:
          typeof c.parameter?.value === 'object' && c.parameter.value !== null
            ? (c.parameter.value as Record<string, unknown>)
            : {},
      })),
    };
  });
  return {
    blockID: o.blockID.toLowerCase(),
    number,
    parentHash: raw.parentHash.toLowerCase(),
    timestamp,
    transactions,
  };
}

/**
 * Client of a TRON full node's HTTP API (`/wallet/*`, java-tron `FullNodeHttpApiService`), the
 * calls the adapter needs. Every response is checked for the fields used; an `Error` field in a
 * 200 answer (TRON's way of failing) becomes a {@link NodeRpcError}.
 */
export class TronHttpClient {
  constructor(
    readonly baseUrl: string,
    private readonly headers: Record<string, string> = {},
    private readonly timeoutMs = 15_000,
  ) {}

  async post<T>(path: string, body: unknown = {}): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...this.headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      throw new NodeRpcError(path, `node unreachable: ${(e as Error).message}`, undefined, { cause: e });
    }
    if (!res.ok) throw new NodeRpcError(path, `HTTP ${res.status}`);
    let json: unknown;
    try {
      json = JSON.parse(quoteLongIntegers(await res.text()));
    } catch {
      throw new NodeRpcError(path, 'answer is not JSON');
    }
    if (typeof json !== 'object' || json === null) throw new NodeRpcError(path, 'answer is not an object');
    const err = (json as { Error?: unknown }).Error;
    if (typeof err === 'string') throw new NodeRpcError(path, err);
    return json as T;
  }

  /** Latest block: number, id (32-byte hex: height in bytes 0..8), timestamp (ms). */
  async nowBlock(): Promise<{ number: number; blockID: string; timestamp: number }> {
    const b = await this.post<{
      blockID?: string;
      block_header?: { raw_data?: { number?: number; timestamp?: number } };
    }>('/wallet/getnowblock');
    const number = b.block_header?.raw_data?.number;
    const timestamp = b.block_header?.raw_data?.timestamp;
    if (
      typeof b.blockID !== 'string' ||
      !/^[0-9a-f]{64}$/i.test(b.blockID) ||
      typeof number !== 'number' ||
      typeof timestamp !== 'number'
    )
      throw new NodeRpcError('/wallet/getnowblock', 'unexpected block shape');
    return { number, blockID: b.blockID.toLowerCase(), timestamp };
  }

  /** Chain parameters as a map (`getTransactionFee` sun/byte, `getEnergyFee` sun/energy, `getCreateAccountFee`…). */
  async chainParameters(): Promise<Map<string, number>> {
    const r = await this.post<{ chainParameter?: { key: string; value?: number }[] }>('/wallet/getchainparameters');
    if (!Array.isArray(r.chainParameter))
      throw new NodeRpcError('/wallet/getchainparameters', 'missing chainParameter');
    return new Map(r.chainParameter.map((p) => [p.key, p.value ?? 0]));
  }

  /** Bandwidth and energy available to an account (base58 address). Missing fields are 0 (TRON omits zeros). */
  async accountResource(address: string): Promise<{ freeBandwidth: number; stakedBandwidth: number; energy: number }> {
    const r = await this.post<Record<string, number | undefined>>('/wallet/getaccountresource', {
      address,
      visible: true,
    });
    const n = (k: string) => r[k] ?? 0;
    return {
      freeBandwidth: Math.max(0, n('freeNetLimit') - n('freeNetUsed')),
      stakedBandwidth: Math.max(0, n('NetLimit') - n('NetUsed')),
      energy: Math.max(0, n('EnergyLimit') - n('EnergyUsed')),
    };
  }

  /** Whether an account exists on chain (sending TRX to a new account costs the account creation fee). */
  async accountExists(address: string): Promise<boolean> {
    const r = await this.post<{ address?: string }>('/wallet/getaccount', { address, visible: true });
    return typeof r.address === 'string';
  }

  /** Energy a contract call would use (`triggerconstantcontract`, dry run). */
  async estimateEnergy(owner: string, contract: string, data: string): Promise<number> {
    const r = await this.post<{ energy_used?: number; result?: { result?: boolean; message?: string } }>(
      '/wallet/triggerconstantcontract',
      {
        owner_address: owner,
        contract_address: contract,
        data,
        visible: true,
      },
    );
    if (r.result?.result !== true || typeof r.energy_used !== 'number')
      throw new NodeRpcError('/wallet/triggerconstantcontract', r.result?.message ?? 'call failed');
    return r.energy_used;
  }

  /** The latest block with its transactions (`/wallet/getnowblock`). */
  async nowBlockFull(): Promise<TronBlock> {
    return parseBlock('/wallet/getnowblock', await this.post('/wallet/getnowblock'));
  }

  /**
   * Block at `height` with its transactions (`/wallet/getblockbynum`, `visible: false`).
   * @throws NodeRpcError when the node has no such block (it answers `{}`) or the shape is wrong
   */
  async blockByNum(height: number): Promise<TronBlock> {
    const path = '/wallet/getblockbynum';
    const b = await this.post<Record<string, unknown>>(path, { num: height, visible: false });
    if (b.blockID === undefined) throw new NodeRpcError(path, `no block ${height}`);
    const block = parseBlock(path, b);
    if (block.number !== height) throw new NodeRpcError(path, `asked for block ${height}, got ${block.number}`);
    return block;
  }

  /**
   * `TransactionInfo` of every transaction of block `height` (`/wallet/gettransactioninfobyblocknum`):
   * fee, receipt result and event logs. An empty block answers `[]` (or `{}`).
   */
  async transactionInfoByBlockNum(height: number): Promise<TronTransactionInfo[]> {
    const path = '/wallet/gettransactioninfobyblocknum';
    const r = await this.post<unknown>(path, { num: height });
    if (!Array.isArray(r)) {
      if (Object.keys(r as object).length === 0) return [];
      throw new NodeRpcError(path, 'answer is not an array');
    }
    return r.map((x): TronTransactionInfo => {
      const i = x as {
        id?: unknown;
        blockNumber?: unknown;
        fee?: unknown;
        receipt?: { result?: unknown };
        log?: { address?: unknown; topics?: unknown; data?: unknown }[];
      };
      if (typeof i.id !== 'string' || !HEX64.test(i.id) || typeof i.blockNumber !== 'number')
        throw new NodeRpcError(path, 'transaction info without id or blockNumber');
      return {
        id: i.id.toLowerCase(),
        blockNumber: i.blockNumber,
        fee: exactInt(i.fee) ?? 0n,
        result: typeof i.receipt?.result === 'string' ? i.receipt.result : undefined,
        logs: (i.log ?? []).map((l) => {
          if (
            typeof l.address !== 'string' ||
            !Array.isArray(l.topics) ||
            !l.topics.every((t) => typeof t === 'string') ||
            (l.data !== undefined && typeof l.data !== 'string')
          )
            throw new NodeRpcError(path, 'malformed log');
          return {
            address: l.address.toLowerCase(),
            topics: l.topics.map((t: string) => t.toLowerCase()),
            data: ((l.data as string | undefined) ?? '').toLowerCase(),
          };
        }),
      };
    });
  }

  /**
   * TRX balance (sun) of `address` (base58) at a block (`/wallet/getaccountbalance`, java-tron ≥
   * 4.1.2; the node must run with `storage.balance.history.lookup = true`). An account that did
   * not exist at that block has balance 0 (the field is omitted).
   * @throws NodeRpcError when the node refuses (e.g. history lookup disabled) or the balance is
   *   not a non-negative integer
   */
  async accountBalanceAt(address: string, block: { hash: string; number: number }): Promise<bigint> {
    const path = '/wallet/getaccountbalance';
    const r = await this.post<{ balance?: unknown; block_identifier?: { hash?: unknown } }>(path, {
      account_identifier: { address },
      block_identifier: { hash: block.hash, number: block.number },
      visible: true,
    });
    if (typeof r.block_identifier?.hash === 'string' && r.block_identifier.hash.toLowerCase() !== block.hash)
      throw new NodeRpcError(path, 'balance answered for another block');
    const b = exactInt(r.balance ?? 0);
    if (b === undefined || b < 0n) throw new NodeRpcError(path, 'balance is not a non-negative integer');
    return b;
  }

  /** Ids of the node's pending transactions (`/wallet/gettransactionlistfrompending`, java-tron ≥ 4.7). */
  async pendingTransactionIds(): Promise<string[]> {
    const path = '/wallet/gettransactionlistfrompending';
    const r = await this.post<{ txId?: unknown }>(path);
    if (r.txId === undefined) return [];
    if (!Array.isArray(r.txId) || !r.txId.every((t) => typeof t === 'string' && HEX64.test(t)))
      throw new NodeRpcError(path, 'txId is not a list of ids');
    return (r.txId as string[]).map((t) => t.toLowerCase());
  }

  /** A pending transaction by id (`/wallet/gettransactionfrompending`); null when no longer pending. */
  async pendingTransaction(txid: string): Promise<TronBlockTransaction | null> {
    const path = '/wallet/gettransactionfrompending';
    const r = await this.post<Record<string, unknown>>(path, { value: txid });
    if (r.txID === undefined) return null;
    const fake = {
      blockID: '0'.repeat(64),
      block_header: { raw_data: { number: 0, parentHash: '0'.repeat(64), timestamp: 0 } },
      transactions: [r],
    };
    return parseBlock(path, fake).transactions[0] ?? null;
  }

  /** Broadcasts a serialised `Transaction` (hex). Returns the txid the node reports. */
  async broadcastHex(
    transactionHex: string,
  ): Promise<{ result: boolean; txid?: string; code?: string; message?: string }> {
    return this.post('/wallet/broadcasthex', { transaction: transactionHex });
  }
}
