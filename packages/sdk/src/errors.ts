/**
 * Base of the SDK's errors: the same shape as `CustodianError` of `@custodian/crypto` (a stable
 * UPPER_SNAKE `code`, `family`, a message without secrets), declared here because integrators
 * install this package alone. Codes: the `WebhookVerificationCode`s (webhooks.ts), the API's
 * catalogue codes ({@link CustodianApiError}), `HTTP_<status>` for an error answer without problem
 * details (a proxy's page), and `NETWORK_ERROR` (client.ts: no answer after the last attempt).
 */
export class SdkError extends Error {
  readonly family = 'sdk' as const;
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** RFC 9457 problem details as the API answers them (`application/problem+json`). */
export interface Problem {
  type: string;
  title: string;
  status: number;
  /** Stable code from the API's error catalogue (OpenAPI `components.schemas.Problem.code`). */
  code: string;
  detail?: string;
  instance?: string;
  /** Validation errors (422): the failing fields, `body.x`, `query.x`, `params.x` or `header.x`. */
  errors?: { field: string; message: string }[];
}

function isProblem(body: unknown): body is Problem {
  const b = body as Partial<Problem> | null;
  return typeof b === 'object' && b !== null && typeof b.code === 'string' && typeof b.status === 'number';
}

/**
 * An error answer (status ≥ 400) of the Custodian API, thrown by the client of
 * `createCustodianClient` after its retries. `code` is the problem's catalogue code
 * (`VALIDATION_FAILED`, `RATE_LIMITED`, …), or `HTTP_<status>` when the body is not problem details.
 */
export class CustodianApiError extends SdkError {
  /** HTTP status. */
  readonly status: number;
  /** The problem details, when the answer carried them. */
  readonly problem: Problem | undefined;
  /** The `Retry-After` header of the answer (429, 503, 409), as sent. */
  readonly retryAfter: string | null;

  constructor(status: number, body: unknown, retryAfter: string | null) {
    const problem = isProblem(body) ? body : undefined;
    const code = problem?.code ?? `HTTP_${status}`;
    super(code, `${status} ${code}: ${problem?.detail ?? problem?.title ?? 'error answer without problem details'}`);
    this.status = status;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }

  /** The failing fields of a validation error (422); empty otherwise. */
  get fieldErrors(): { field: string; message: string }[] {
    return this.problem?.errors ?? [];
  }
}
