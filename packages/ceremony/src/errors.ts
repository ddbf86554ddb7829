/**
 * Base of the `signer` family of {@link CustodianError} (STYLE.md item 10), shared by
 * `@custodian/ceremony` and `@custodian/signer` as the `crypto` family is by the protocol packages
 * (the ceremony package runs the signer's logic, on a server or a phone). Codes:
 * `CONFIG_INVALID` (chains-config.ts ConfigError, naming the field; the server signer's config.ts
 * throws it too), `GENERATION_FILE_INVALID` (the server signer's generation.ts), `STORE_INTEGRITY`
 * (level-store/secretbox.ts: a stored value does not decrypt), `REQUEST_REFUSED`
 * (ceremonies/context.ts: a ceremony request invalid for this signer), and the transfer-evidence
 * refusals of enforce/ (`EvidenceRefused`, one code per `SignerRefusal` of enforce/refusals.ts).
 * What travels back to the coordinator is the refusal code of the wire catalogue
 * (`@custodian/wire` refusals.ts) as the CeremonyResult's typed `refusal`, with the message as its
 * human-readable `error`.
 */
import { CustodianError } from '@custodian/crypto';

export class SignerError extends CustodianError {
  readonly family = 'signer' as const;
}
