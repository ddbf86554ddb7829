/**
 * The refusal codes of a signer's transfer checks (enforce.ts) and the error that carries one; the
 * code travels back to the coordinator as the start of the CeremonyResult's `error`.
 */
import type { EvidenceRefusal } from '@custodian/wire';
import { SignerError } from '../errors.js';

/** Why a signer refuses a transfer signature: the evidence codes plus the ledger's own. */
export type SignerRefusal =
  | EvidenceRefusal
  /** The request carries no transfer evidence (every signature is for a transfer). */
  | 'EVIDENCE_MISSING'
  /**
   * The signer has no trusted Admin device configured and does not opt out of enforcement
   * (`allowUnenforcedSigning`): it cannot check any evidence, so it signs nothing.
   */
  | 'ENFORCEMENT_NOT_CONFIGURED'
  /** The transfer was already signed as another transaction that is not a fee replacement of it. */
  | 'TRANSFER_ALREADY_SIGNED'
  /**
   * Another ceremony of this signer is signing the transfer right now (its in-memory reservation:
   * one signature of a transfer at a time). Transient: the request may be sent again once that
   * ceremony has ended (at its result, its abort, the close of the control stream that started it,
   * or its deadline); nothing was checked against the ledger or written.
   */
  | 'SIGNING_IN_PROGRESS'
  /**
   * The policy version is older than one this signer already signed under or learned from a push
   * (a superseded version replayed).
   */
  | 'POLICY_VERSION_SUPERSEDED'
  /** The intent's blockchain is not in this signer's `chains` configuration. */
  | 'CHAIN_NOT_CONFIGURED'
  /** The context's chain id / network (or the configured family) is not the one configured for the intent's blockchain. */
  | 'CHAIN_MISMATCH'
  /** The transaction's maximum fee exceeds the intent's `max_fee` (the cap the approvers signed). */
  | 'FEE_ABOVE_CAP'
  /** The transaction's maximum fee exceeds this signer's own ceiling for the blockchain (`chains.<key>.maxFee`). */
  | 'FEE_ABOVE_CEILING'
  /**
   * The sender (context `from` / `fromPublicKey`, intent `source_address`) is not the key the signer
   * derives for (key_id, derivation_path), or the path is not a wallet path of the chain's coin type.
   */
  | 'SENDER_MISMATCH'
  /** A Bitcoin-family input's path is not a path of the intent's wallet, or its key/address is not the derived one. */
  | 'INPUT_KEY_MISMATCH'
  /** The change output's path is not a path of the intent's wallet, or its key/address is not the derived one. */
  | 'CHANGE_MISMATCH'
  /**
   * The intent's asset is not one this signer knows for the blockchain: a native transfer whose
   * symbol/decimals are not the chain's, a token absent from `chains.<key>.assets` or with another
   * contract/decimals, or an `asset_id` that is not the directory id of (blockchain, symbol).
   */
  | 'ASSET_MISMATCH'
  /** The intent's `wallet_id` is not `walletIdOf(key_id, derivation_path[2])`: the label of another wallet. */
  | 'WALLET_MISMATCH'
  /** The intent's `created_at` is not an ISO 8601 time, or is later than the signer's clock + {@link CREATED_AT_SKEW_MS}. */
  | 'INTENT_TIME_INVALID';

/** A refusal raised by {@link enforceTransferEvidence}; `code` travels back as the CeremonyResult's error. */
export class EvidenceRefused extends SignerError {
  declare readonly code: SignerRefusal;
  constructor(code: SignerRefusal, detail: string) {
    super(code, `${code}: ${detail}`);
  }
}
