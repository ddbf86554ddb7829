/**
 * Base of the `signer` family of {@link CustodianError} (STYLE.md item 10). Codes:
 * `CONFIG_INVALID` (config.ts ConfigError, naming the field), `GENERATION_FILE_INVALID`
 * (generation.ts), `STORE_INTEGRITY` (secretbox.ts: a stored value does not decrypt),
 * `REQUEST_REFUSED` (ceremonies.ts: a ceremony request invalid for this signer), and the
 * transfer-evidence refusals of enforce.ts (`EvidenceRefused`, one code per {@link SignerRefusal}).
 * What travels back to the coordinator is the refusal code of the wire catalogue
 * (`@custodian/wire` refusals.ts) as the CeremonyResult's typed `refusal`, with the message as its
 * human-readable `error`.
 */
import { CustodianError } from '@custodian/crypto';

export class SignerError extends CustodianError {
  readonly family = 'signer' as const;
}
