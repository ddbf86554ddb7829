/**
 * The refusal codes of a signer's transfer checks (enforce.ts) and the error that carries one; the
 * code travels back to the coordinator as the CeremonyResult's typed `refusal` (control.proto
 * RefusalCode), the message as its human-readable `error`.
 */
import type { RefusalCode } from '@custodian/wire';
import { SignerError } from '../errors.js';

/**
 * Why a signer refuses: a code of the refusal catalogue of `@custodian/wire` (refusals.ts: every
 * code with its meaning and whether it is transient — the evidence codes, the ledger's own, and
 * those of the ceremony request), the one list the coordinator reads them by.
 */
export type SignerRefusal = RefusalCode;

/**
 * A refusal raised by {@link enforceTransferEvidence}; `code` travels back as the CeremonyResult's
 * `refusal` (control.proto RefusalCode), the message (`<code>: <detail>`) as its `error` text.
 */
export class EvidenceRefused extends SignerError {
  declare readonly code: SignerRefusal;
  constructor(code: SignerRefusal, detail: string) {
    super(code, `${code}: ${detail}`);
  }
}
