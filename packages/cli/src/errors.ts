/**
 * Base of the `cli` family of {@link CustodianError} (STYLE.md item 10). Codes: a refused HTTP
 * call carries the problem+json `code` of the answer, or `HTTP_<status>` when it had none
 * (`custodian admin`: admin/http.ts `AdminCliError`, which also has `ADMIN_REQUEST_FAILED` for a
 * call without an HTTP answer; `custodian dev`'s helpers: dev/http.ts `HttpError`); `custodian dev
 * --replicas` (dev/replicas.ts): `DEV_REPLICAS_INVALID` (not an integer in [1, 16]),
 * `DEV_REPLICAS_NEED_POSTGRES` (2 or more replicas without a PostgreSQL `--database-url`).
 */
import { CustodianError } from '@custodian/crypto';

export class CliError extends CustodianError {
  readonly family = 'cli' as const;
}
