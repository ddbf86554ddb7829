/**
 * The one catalogue of API errors (STYLE.md item 10). Every error the REST and admin APIs return
 * is an RFC 9457 `application/problem+json` body built from an entry here:
 *
 * ```json
 * { "type": "https://custodian.dev/problems/validation-failed", "title": "Request validation failed",
 *   "status": 422, "code": "VALIDATION_FAILED", "detail": "body/blockchain_ids must NOT have fewer than 1 items",
 *   "instance": "/api/v1/profiles/…/wallets", "errors": [{ "field": "body.blockchain_ids", "message": "…" }] }
 * ```
 *
 * `code` is stable and machine-readable; `title` is fixed per code; `detail` is free text meant for
 * humans and never contains secrets. A test checks this catalogue against the OpenAPI document.
 */
import { CustodianError } from '@custodian/crypto';

/** One catalogue entry: HTTP status and fixed human title. */
export interface ErrorSpec {
  readonly status: number;
  readonly title: string;
}

/** Every stable error code, with its HTTP status and title. */
export const ERROR_CATALOGUE = {
  // 400
  BAD_REQUEST: { status: 400, title: 'The request is not well-formed HTTP' },
  MALFORMED_JSON: { status: 400, title: 'Request body is not valid JSON' },
  IDEMPOTENCY_KEY_MISSING: { status: 400, title: 'Idempotency key header is required' },
  IDEMPOTENCY_KEY_INVALID: { status: 400, title: 'Idempotency key must be a UUID' },
  // 401
  API_KEY_MISSING: { status: 401, title: 'X-API-Key header is required' },
  API_KEY_INVALID: { status: 401, title: 'API key is unknown or revoked' },
  SESSION_REQUIRED: { status: 401, title: 'Admin session is missing, expired or revoked' },
  INVALID_CREDENTIALS: { status: 401, title: 'Invalid credentials' },
  INVALID_SECOND_FACTOR: { status: 401, title: 'Second-factor code is invalid or expired' },
  /**
   * `POST /admin/v1/init` without the one-time bootstrap token the coordinator wrote to
   * `<dataDir>/bootstrap-token` at its first start, or with a wrong one.
   */
  BOOTSTRAP_TOKEN_INVALID: { status: 401, title: 'The bootstrap token is missing or wrong' },
  // 403
  PROFILE_FORBIDDEN: { status: 403, title: 'The API key is not authorised for this profile' },
  ROLE_FORBIDDEN: { status: 403, title: 'Your role does not allow this action' },
  /** Admin session lacks a fresh step-up (`POST /admin/v1/session/step-up`): prompt for the password or TOTP code. */
  STEP_UP_REQUIRED: { status: 403, title: 'This action needs a fresh re-authentication (step-up)' },
  /**
   * A cookie-authenticated admin request that changes state without the session's CSRF token in
   * `X-CSRF-Token` (the value of the `custodian_csrf` cookie), or sent from another origin.
   */
  CSRF_TOKEN_INVALID: {
    status: 403,
    title: 'The CSRF token is missing or wrong, or the request came from another origin',
  },
  /** API key with `allowed_cidrs` used from a client address outside every range. */
  API_KEY_ADDRESS_NOT_ALLOWED: { status: 403, title: 'The API key may not be used from this address' },
  // 404
  ROUTE_NOT_FOUND: { status: 404, title: 'No such route' },
  WALLET_NOT_FOUND: { status: 404, title: 'Wallet not found' },
  ASSET_NOT_FOUND: { status: 404, title: 'Asset not found for this wallet' },
  RESOURCE_NOT_FOUND: { status: 404, title: 'Resource not found' },
  TRANSFER_NOT_FOUND: { status: 404, title: 'Transfer not found' },
  POLICY_NOT_FOUND: { status: 404, title: 'Policy not found' },
  // 408
  REQUEST_TIMEOUT: { status: 408, title: 'The request was not received in time' },
  // 409
  IDEMPOTENCY_REQUEST_IN_PROGRESS: {
    status: 409,
    title: 'A request with this idempotency key is still being processed',
  },
  ALREADY_INITIALISED: { status: 409, title: 'The instance already has an administrator' },
  CONFLICT: { status: 409, title: 'The request conflicts with the current state' },
  NO_MASTER_KEY: { status: 409, title: 'No master key exists yet; run the master key ceremony first' },
  TRANSFER_STATE_CONFLICT: { status: 409, title: 'The transfer is not in a state that allows this action' },
  /** The wallet is archived (admin API): it takes no new transfer or address until an Admin unarchives it. */
  WALLET_ARCHIVED: { status: 409, title: 'The wallet is archived: no new transfers or addresses' },
  /** Wallet deletion refused: some balance of the wallet is above zero. */
  WALLET_NOT_EMPTY: { status: 409, title: 'The wallet holds a balance and cannot be deleted' },
  /** Wallet deletion refused: a transfer of the wallet is not terminal (not yet delivered, failed or rejected). */
  WALLET_TRANSFERS_PENDING: { status: 409, title: 'The wallet has unfinished transfers and cannot be deleted' },
  /** Address archival refused: on an account-based blockchain the address is the wallet's only one there. */
  ADDRESS_NOT_ARCHIVABLE: {
    status: 409,
    title: "The wallet's only address on an account-based blockchain cannot be archived",
  },
  // 413, 414, 415
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Request body is too large' },
  URI_TOO_LONG: { status: 414, title: 'A path parameter of the request URL is too long' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Content-Type must be application/json' },
  // 422
  VALIDATION_FAILED: { status: 422, title: 'Request validation failed' },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    title: 'The idempotency key was already used with a different request',
  },
  UNKNOWN_BLOCKCHAIN: { status: 422, title: 'Blockchain is unknown or not enabled for this profile' },
  BLOCKCHAIN_NOT_IN_WALLET: { status: 422, title: 'The wallet does not hold this blockchain' },
  ADDRESS_LIMIT_REACHED: {
    status: 422,
    title: 'Account-based blockchains allow exactly one address per wallet',
  },
  // 429, 431
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  HEADERS_TOO_LARGE: { status: 431, title: 'The request line and header fields are too large' },
  // 500, 503
  INTERNAL_ERROR: { status: 500, title: 'Internal server error' },
  /** The login code could not be handed to the mail transport (SMTP down or refusing); nothing was sent. */
  MAIL_UNAVAILABLE: { status: 503, title: 'Mail could not be sent; try again later' },
  SIGNERS_UNAVAILABLE: { status: 503, title: 'No signer control channel is configured or reachable' },
  CHAIN_UNAVAILABLE: { status: 503, title: 'No node is configured or reachable for this blockchain' },
  SHUTTING_DOWN: { status: 503, title: 'The coordinator is shutting down; retry shortly' },
} as const satisfies Record<string, ErrorSpec>;

/** A stable error code of {@link ERROR_CATALOGUE}. */
export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/**
 * Codes not tied to any route — emitted before routing, by the HTTP parser (malformed request,
 * header overflow, timeout), the router (no route, undecodable or overlong path) or during
 * shutdown. The OpenAPI document publishes them once under `components.responses`.
 */
export const ROUTELESS_ERRORS = [
  'ROUTE_NOT_FOUND',
  'BAD_REQUEST',
  'REQUEST_TIMEOUT',
  'URI_TOO_LONG',
  'HEADERS_TOO_LARGE',
  'SHUTTING_DOWN',
] as const satisfies readonly ErrorCode[];

/** One field-level validation failure: `field` is `body.x`, `query.page`, `params.wallet_id`, `header.x`. */
export interface FieldError {
  readonly field: string;
  readonly message: string;
}

/** RFC 9457 problem details body with the catalogue's extension members `code` and `errors`. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ErrorCode;
  detail?: string;
  instance?: string;
  errors?: FieldError[];
}

/** Base URI of problem types; `type` = base + kebab-case code (RFC 9457 §3.1.1). */
export const PROBLEM_TYPE_BASE = 'https://custodian.dev/problems/';

/** The problem `type` URI of a code. */
export function problemType(code: ErrorCode): string {
  return PROBLEM_TYPE_BASE + code.toLowerCase().replaceAll('_', '-');
}

/**
 * Base of the `coordinator` family of {@link CustodianError} (STYLE.md item 10): {@link ApiError}
 * (codes: the catalogue above), `CeremonyAbortedError` (ceremony.ts, `CEREMONY_ABORTED`), and the
 * transfer machine's `IllegalTransitionError` (`ILLEGAL_TRANSITION`) and `TransitionLostError`
 * (`TRANSITION_LOST`) of transfers/machine.ts (internal: the pipeline handles them, no client sees them),
 * and `WATCHER_CURSOR_MOVED` (transfers/watcher-store.ts: another deposit watcher of the chain
 * committed since this poll read the cursor; internal, the poll is dropped and re-reads).
 * Startup refusals (thrown by `createCoordinator`, never an API response): `CONFIG_INVALID`,
 * `COORDINATOR_IDENTITY_MISMATCH` (replicas/registry.ts: this replica's `coordinator-p2p.key` is not
 * the database's), `REPLICA_NEEDS_POSTGRES` (db/db.ts: another process holds the PGlite data folder)
 * and `WEBHOOK_KEK_MISMATCH` (webhooks/keys.ts: this replica's webhook KEK cannot open the database's
 * active webhook signing key — another replica's KEK, or a lost `webhook-kek.key`).
 */
export class CoordinatorError extends CustodianError {
  readonly family = 'coordinator' as const;
}

/**
 * The error every coordinator component throws for an expected failure. Route handlers let it
 * propagate; the error handler renders it as problem+json with the catalogue's status.
 */
export class ApiError extends CoordinatorError {
  declare readonly code: ErrorCode;
  readonly status: number;
  /**
   * @param code catalogue code
   * @param detail human explanation; must not contain secrets
   * @param errors optional field errors (validation)
   * @param headers optional extra response headers (e.g. `Retry-After`)
   */
  constructor(
    code: ErrorCode,
    readonly detail?: string,
    readonly errors?: FieldError[],
    readonly headers?: Record<string, string>,
  ) {
    super(code, `${code}: ${detail ?? ERROR_CATALOGUE[code].title}`);
    this.status = ERROR_CATALOGUE[code].status;
  }
}

/** Build the RFC 9457 body of an {@link ApiError} for a request path. */
export function toProblem(err: ApiError, instance?: string): Problem {
  const spec = ERROR_CATALOGUE[err.code];
  const p: Problem = { type: problemType(err.code), title: spec.title, status: spec.status, code: err.code };
  if (err.detail !== undefined) p.detail = err.detail;
  if (instance !== undefined) p.instance = instance;
  if (err.errors !== undefined && err.errors.length > 0) p.errors = err.errors;
  return p;
}

/** Shorthand for a 422 naming one field. */
export function validationError(field: string, message: string): ApiError {
  return new ApiError('VALIDATION_FAILED', `${field}: ${message}`, [{ field, message }]);
}
