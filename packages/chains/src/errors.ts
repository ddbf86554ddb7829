/**
 * Errors of `@custodian/chains`: the `chains` family of {@link CustodianError} (STYLE.md item 10),
 * codes `INVALID_ADDRESS`, `INVALID_TRANSFER`, `INSUFFICIENT_FUNDS`, `INVALID_SIGNATURE`,
 * `NODE_RPC_ERROR`, `BROADCAST_FAILED`, `REORG_TOO_DEEP`. `httpStatus` is the status a REST API
 * answers with when the error reaches it. Messages never contain secrets (adapters never see
 * private keys anyway).
 */
import { CustodianError } from '@custodian/crypto';

/** Base of the chains family. */
export class ChainError extends CustodianError {
  readonly family = 'chains' as const;
  /** HTTP status the REST API should answer with when this error reaches it. */
  readonly httpStatus: number;
  constructor(code: string, message: string, httpStatus = 500, options?: { cause?: unknown }) {
    super(code, message, options);
    this.httpStatus = httpStatus;
  }
}

/** A destination (or source) address is malformed, has a bad checksum, or belongs to another network. HTTP 422. */
export class InvalidAddressError extends ChainError {
  readonly field: string;
  readonly reason: 'format' | 'checksum' | 'wrong-network' | 'unsupported-type';
  constructor(field: string, reason: InvalidAddressError['reason'], detail: string) {
    super('INVALID_ADDRESS', `${field}: ${detail}`, 422);
    this.field = field;
    this.reason = reason;
  }
}

/** The transfer cannot be built: amount not positive, below dust, unknown asset… HTTP 422. */
export class InvalidTransferError extends ChainError {
  readonly field: string;
  constructor(field: string, detail: string) {
    super('INVALID_TRANSFER', `${field}: ${detail}`, 422);
    this.field = field;
  }
}

/** The source addresses do not hold enough to pay amount + fee. HTTP 422. */
export class InsufficientFundsError extends ChainError {
  readonly required: bigint;
  readonly available: bigint;
  constructor(asset: string, required: bigint, available: bigint) {
    super('INSUFFICIENT_FUNDS', `insufficient ${asset}: need ${required}, have ${available} (base units)`, 422);
    this.required = required;
    this.available = available;
  }
}

/** A signature handed to `attachSignatures` does not verify against the digest and the signer's key. HTTP 400. */
export class InvalidSignatureError extends ChainError {
  readonly index: number;
  constructor(index: number, detail: string) {
    super('INVALID_SIGNATURE', `signature ${index}: ${detail}`, 400);
    this.index = index;
  }
}

/** The node answered with an error or an unexpected shape, or could not be reached. HTTP 502. */
export class NodeRpcError extends ChainError {
  readonly method: string;
  readonly rpcCode: number | undefined;
  constructor(method: string, detail: string, rpcCode?: number, options?: { cause?: unknown }) {
    super('NODE_RPC_ERROR', `${method}: ${detail}`, 502, options);
    this.method = method;
    this.rpcCode = rpcCode;
  }
}

/**
 * The node rejected a transaction at broadcast. HTTP 502 (the pipeline maps it to BROADCAST_FAILED).
 * `message` is `<rpc method>: <the node's reason>…`; `reason` is the node's own refusal text (e.g.
 * `nonce too low`, `transaction already imported`, `replacement transaction underpriced`), or the
 * message when the node gave none (unreachable, no answer).
 */
export class BroadcastError extends ChainError {
  /** The node's own words for the refusal (never contains the RPC URL). */
  readonly reason: string;
  constructor(detail: string, options?: { cause?: unknown; reason?: string }) {
    super('BROADCAST_FAILED', detail, 502, options);
    this.reason = options?.reason ?? detail;
  }
}

/** A reorganisation deeper than the watcher's confirmation depth replaced a block it had already counted. */
export class ReorgTooDeepError extends ChainError {
  readonly height: number;
  constructor(height: number, depth: number) {
    super(
      'REORG_TOO_DEEP',
      `block ${height} was counted with ${depth} confirmation(s) and then replaced by a reorganisation; operator action needed`,
      500,
    );
    this.height = height;
  }
}
