/**
 * Base of the `mobile` family of {@link CustodianError} (STYLE.md item 10). Codes: the
 * coordinator's problem+json `code` for a refused admin or enrollment request (`AdminApiError`,
 * `EnrollmentError`; `HTTP_<status>` when the body had none), `WRONG_PIN` (vault.ts),
 * `POLICY_SIGN_CANCELLED` (policy.ts: the person cancelled at the summary).
 */
import { CustodianError } from '@custodian/crypto';

export class MobileError extends CustodianError {
  readonly family = 'mobile' as const;
}

/** A refused HTTP request to the coordinator: its status and problem+json code. */
export abstract class CoordinatorRequestError extends MobileError {
  /**
   * @param status HTTP status
   * @param problemCode the problem+json `code`, when the body had one
   */
  constructor(
    message: string,
    readonly status: number,
    problemCode: string | undefined,
  ) {
    super(problemCode || `HTTP_${status}`, message);
  }
}
