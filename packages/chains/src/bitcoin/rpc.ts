import { NodeRpcError } from '../errors.js';

export interface BitcoinRpcOptions {
  url: string;
  username: string;
  password: string;
  /** Per-call timeout, ms (default 30 000). */
  timeoutMs?: number;
}

/**
 * JSON-RPC client of Bitcoin Core and its forks (litecoind): POST JSON-RPC 1.0 with HTTP basic
 * auth. Errors become {@link NodeRpcError} carrying the node's error code; the password is never
 * put into an error.
 */
export class BitcoinRpc {
  readonly #auth: string;
  constructor(private readonly options: BitcoinRpcOptions) {
    this.#auth = `Basic ${Buffer.from(`${options.username}:${options.password}`).toString('base64')}`;
  }

  async call<T>(method: string, params: unknown[] = [], wallet?: string): Promise<T> {
    const url = wallet === undefined ? this.options.url : `${this.options.url}/wallet/${encodeURIComponent(wallet)}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: this.#auth },
        body: JSON.stringify({ jsonrpc: '1.0', id: 1, method, params }),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000),
      });
    } catch (e) {
      throw new NodeRpcError(method, `node unreachable: ${(e as Error).message}`, undefined, { cause: e });
    }
    const text = await res.text();
    let body: { result?: T; error?: { code: number; message: string } | null };
    try {
      body = JSON.parse(text);
    } catch {
      throw new NodeRpcError(method, `HTTP ${res.status}, not JSON`);
    }
    if (body.error) throw new NodeRpcError(method, body.error.message, body.error.code);
    if (!res.ok) throw new NodeRpcError(method, `HTTP ${res.status}`);
    return body.result as T;
  }
}
