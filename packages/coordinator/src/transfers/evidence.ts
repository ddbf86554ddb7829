/**
 * The transfer evidence as it travels to the signers: control.proto `SignRequest.evidence`
 * (field 16, `TransferEvidence`), JSON texts of the shapes of packages/wire/src/evidence.ts. Plug
 * {@link evidenceSignFields} into the signer gateway (`SignerGatewayInit.evidenceFields`).
 */
import type { SignRequest } from '@custodian/wire';
import type { SignEvidence } from '../signing/gateway.js';

/** SignRequest fields carrying `e` (intent, signed policy, approvals, chain context). */
export function evidenceSignFields(e: SignEvidence): Partial<SignRequest> {
  return {
    evidence: {
      intentJson: JSON.stringify(e.intent),
      policyJson: e.policy === null ? '' : JSON.stringify(e.policy),
      approvalsJson: e.approvals.map((a) => JSON.stringify(a)),
      chainContextJson: e.chainContext,
    },
  };
}
