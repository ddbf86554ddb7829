/**
 * Resharing a FROST key (Ed25519, secp256k1, and secp256k1-tr — whose share is the plain
 * secp256k1 share of the INTERNAL key) to a new party set with a new threshold, same group public
 * key and chain code: the generic protocol of `@custodian/crypto` (`reshareSpec`, Desmedt–Jajodia
 * 1997 redistribution with Feldman VSS; see its module docs and docs/protocols.md "Resharing").
 *
 * Rounds (tag `custodian.frost.reshare`, wire types in proto/custodian/v1/frost.proto):
 * - 0: dealers broadcast `ReshareRound0Broadcast` { context, old, commitment } and send
 *   `ReshareRound0Direct` { share } to every other party (32-byte scalar to a new party — always
 *   AEAD-encrypted on the wire; empty to a party that only deals);
 * - 1: new parties broadcast `ReshareRound1Broadcast` { confirm }; then the runtime's echo round.
 *
 * Output: every party gets the new public package; a new party also gets its new {@link KeyShare}
 * with the new identifiers (ascending), threshold t', and epoch = the dealers' epoch + 1 (the
 * dealers' epoch is carried in their broadcast old package, so a party that is new learns it).
 */
import {
  type ProtocolSpec,
  type ResharePartyRole,
  type ReshareResult,
  type ReshareState,
  reshareSpec,
} from '@custodian/crypto';
import { type KeyShare, validateKeyShare } from './keyshare.js';
import { type AnyPoint, getSuite, type SuiteName } from './suites.js';

/** Protocol tag of the FROST reshare. */
export const FROST_RESHARE_TAG = 'custodian.frost.reshare';

/** Reshare parameters of one party. */
export interface FrostReshareOptions {
  readonly suite: SuiteName;
  /** This party's current key share: present iff this party deals. SECRET. */
  readonly keyShare?: KeyShare;
  /**
   * Role of every runtime index: `oldIdentifier` iff it deals (its identifier in the old key),
   * `newIdentifier` iff it receives a new share. Identical at every party.
   */
  readonly parties: readonly { readonly oldIdentifier?: bigint; readonly newIdentifier?: bigint }[];
  /** t' (2 ≤ t' ≤ number of new parties). */
  readonly newThreshold: number;
  /** The group public key expected (suite encoding; for secp256k1-tr the internal key, 33 bytes). */
  readonly expectedPublicKey: Uint8Array;
  /** The 32-byte chain code expected. */
  readonly expectedChainCode: Uint8Array;
  /** 32-byte caller context bound into every digest, e.g. the key change's `keyChangeDigest`. */
  readonly context: Uint8Array;
}

/** Output of the FROST reshare for one party. */
export interface FrostReshareOutput {
  /** New parties only: the new key share (validated). SECRET. */
  readonly keyShare?: KeyShare;
  /** The new public package: t' commitment points ([0] = group key), n' verifying shares, n' identifiers (ascending). */
  readonly publicPackage: {
    readonly vssCommitment: Uint8Array[];
    readonly verifyingShares: Uint8Array[];
    readonly identifiers: bigint[];
  };
}

/**
 * The FROST reshare protocol for the runtime.
 * @throws RangeError / TypeError (at construction or from `start`) for inconsistent roles, a
 *   threshold out of range, a key share of another suite or not matching its role, or fewer
 *   dealers than the old threshold
 */
export function reshareProtocol(opts: FrostReshareOptions): ProtocolSpec<ReshareState<AnyPoint>, FrostReshareOutput> {
  const suite = getSuite(opts.suite);
  const G = suite.group;
  if (!Number.isSafeInteger(opts.newThreshold) || opts.newThreshold < 2) {
    throw new RangeError('reshare: FROST needs a new threshold ≥ 2');
  }
  const share = opts.keyShare ? validateKeyShare(opts.keyShare) : undefined;
  if (share && share.suite !== opts.suite) throw new RangeError('reshare: key share of another suite');
  const expectedPk = G.decodePoint(opts.expectedPublicKey, 'expectedPublicKey');
  return reshareSpec<AnyPoint, FrostReshareOutput>(
    {
      tag: FROST_RESHARE_TAG,
      group: G,
      ...(share
        ? {
            dealer: {
              share: share.signingShare,
              identifier: share.identifier,
              old: {
                threshold: share.threshold,
                identifiers: share.identifiers,
                verifyingShares: share.verifyingShares.map((y, k) => G.decodePoint(y, `verifyingShares[${k}]`)),
                publicKey: G.decodePoint(share.groupPublicKey, 'groupPublicKey'),
                chainCode: share.chainCode,
                epoch: share.epoch,
              },
            },
          }
        : {}),
      parties: opts.parties as readonly ResharePartyRole[],
      newThreshold: opts.newThreshold,
      expectedPublicKey: expectedPk,
      expectedChainCode: opts.expectedChainCode,
      context: opts.context,
    },
    (r: ReshareResult<AnyPoint>): FrostReshareOutput => {
      const vssCommitment = r.commitments.map((c) => G.encodePoint(c));
      const verifyingShares = r.verifyingShares.map((y) => G.encodePoint(y));
      const publicPackage = { vssCommitment, verifyingShares, identifiers: [...r.identifiers] };
      if (r.share === undefined) return { publicPackage };
      const keyShare = validateKeyShare({
        version: 1,
        suite: opts.suite,
        threshold: r.threshold,
        identifiers: [...r.identifiers],
        identifier: r.identifier as bigint,
        signingShare: r.share,
        groupPublicKey: vssCommitment[0] as Uint8Array,
        vssCommitment,
        verifyingShares,
        chainCode: r.old.chainCode,
        epoch: r.old.epoch + 1,
      });
      return { keyShare, publicPackage };
    },
  );
}
