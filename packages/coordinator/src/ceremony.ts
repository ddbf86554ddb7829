/**
 * Master key ceremonies, as seen by the coordinator: the coordinator sequences, signers execute
 * (DESIGN.md §4). The signer control protocol implements {@link CeremonyClient}; the coordinator
 * only stores the ceremony record, its progress, and the PUBLIC outcome.
 */

import { CoordinatorError } from './errors.js';
import type { BlameRecord } from './signing/blame.js';

/** A signer selected for a ceremony: a server signer (by id) or an approved mobile device. */
export interface CeremonyParty {
  kind: 'server' | 'device';
  /** `signer_id` of a server signer or `device_id` of a device. */
  id: string;
  /** libp2p peer id (servers) or device public key fingerprint (devices). */
  peer: string;
  /** Dial address (servers' multiaddr); null for devices, which connect to the coordinator. */
  address: string | null;
}

/** Progress states reported by a running ceremony, in order. */
export type CeremonyPhase = 'CONNECTING' | 'KEYGEN' | 'AUX_INFO' | 'CONFIRMING';

/** One progress report. */
export interface CeremonyProgress {
  phase: CeremonyPhase;
  /** Parties that reported for this phase so far. */
  parties_ready: number;
  parties_total: number;
  /** Free text for operators; never contains secret material. */
  message?: string;
}

/** Request to run a distributed key generation among exactly `parties` with threshold `threshold`. */
export interface DkgRequest {
  ceremonyId: string;
  /** k of the k-of-n scheme (signatures need k parties). */
  threshold: number;
  parties: CeremonyParty[];
  /** Absolute deadline: 5 minutes after start (seed §1, §8). */
  deadline: Date;
  /** Aborted at the deadline; the client must then abort the ceremony on every signer. */
  signal: AbortSignal;
  onProgress(p: CeremonyProgress): void;
}

/**
 * Public outcome of the DKG: a secp256k1 master key (ECDSA, Taproot) and an Ed25519 master key,
 * each with a 32-byte chain code (jointly random), plus the transcript hash every party confirmed.
 */
export interface DkgOutcome {
  /** 33-byte SEC1-compressed public key and 32-byte chain code. */
  secp256k1: { publicKey: Uint8Array; chainCode: Uint8Array };
  /** 32-byte RFC 8032 public key and 32-byte chain code. */
  ed25519: { publicKey: Uint8Array; chainCode: Uint8Array };
  /**
   * The FROST/Taproot (BIP340) master key as the signers hold it: 33-byte SEC1-compressed public key
   * of either Y parity (the FROST group key is not normalised to even Y) and 32-byte chain code;
   * P2TR addresses derive from exactly this point (BIP32 CKDpub hashes the parity byte). Absent
   * when the signers did not create one.
   */
  taproot?: { publicKey: Uint8Array; chainCode: Uint8Array };
  /** Hex hash binding the ceremony transcript (for the audit record). */
  transcriptHash: string;
}

/**
 * Raised by a client when a party reported misbehaviour (identifiable abort). `culprits` are only
 * the parties the coordinator PROVED misbehaved (verified evidence, signing/blame.ts); `blames`
 * every blame as checked (recorded in `ceremony_blames`; an unverified one names its accuser).
 */
export class CeremonyAbortedError extends CoordinatorError {
  constructor(
    message: string,
    /** Ids (as in {@link CeremonyParty.id}) of the parties proven to misbehave (verified blame only). */
    readonly culprits: string[],
    /** Every blame the parties reported, as the coordinator checked it. */
    readonly blames: readonly BlameRecord[] = [],
  ) {
    super('CEREMONY_ABORTED', message);
  }
}

/** The coordinator's view of the signer control protocol. */
export interface CeremonyClient {
  /**
   * Run a DKG. Resolves with the public outcome once all parties confirmed it; rejects (with
   * {@link CeremonyAbortedError} naming culprits when identifiable) otherwise; must stop and
   * reject promptly when `signal` aborts.
   */
  runDkg(req: DkgRequest): Promise<DkgOutcome>;
}

/** DKG deadline: 5 minutes (seed §1 item 4, §8). */
export const DKG_TIMEOUT_MS = 5 * 60 * 1000;
