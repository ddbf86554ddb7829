/**
 * Base of the `cli` family of {@link CustodianError} (STYLE.md item 10). Codes: a refused HTTP
 * call of the local instance's helpers carries the problem+json `code` of the answer, or
 * `HTTP_<status>` when it had none (dev/http.ts `HttpError`).
 */
import { CustodianError } from '@custodian/crypto';

export class CliError extends CustodianError {
  readonly family = 'cli' as const;
}
