/**
 * Resharing a CGGMP21 core key share (secp256k1) to a new party set with a new threshold, same
 * public key Y and chain code: the generic protocol of `@custodian/crypto` (`reshareSpec`,
 * Desmedt–Jajodia 1997 redistribution with Feldman VSS; see its module docs and docs/protocols.md
 * "Resharing"). Identifiers are I(j) = j + 1 for key index j, old and new.
 *
 * Rounds (tag `custodian.cggmp.reshare.v1`, wire types in proto/custodian/v1/cggmp.proto):
 * - 0: dealers broadcast `ReshareRound0Broadcast` { context, old, commitment } and send
 *   `ReshareRound0Direct` { share } to every other party (32-byte scalar to a new party — always
 *   AEAD-encrypted on the wire; empty to a party that only deals);
 * - 1: new parties broadcast `ReshareRound1Broadcast` { confirm }; then the runtime's echo round.
 *
 * The output core share has no auxiliary info: the caller then runs {@link auxInfoProtocol} among
 * the new set (new Paillier keys — old and new material never mix) and combines with
 * `validateKeyShare({ core, aux })`. The new rid is SHA-256("custodian.cggmp.reshare.rid/v1" ‖
 * confirm), where `confirm` is the 32-byte digest every new party confirmed (it binds the session
 * id, the caller context, the roles, t' and the new commitments), so it is fresh per session and
 * equal at every new party.
 */
import {
  canonicalEncode,
  secp256k1Group as G,
  type ProtocolSpec,
  type ReshareResult,
  type ReshareState,
  reshareSpec,
  type Secp256k1Point,
} from '@custodian/crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { type CoreKeyShare, validateCoreKeyShare } from './key-share.js';

/** Protocol tag of the CGGMP21 reshare. */
export const RESHARE_TAG = 'custodian.cggmp.reshare.v1';

/** Reshare parameters of one party. */
export interface EcdsaReshareOptions {
  /** This party's current core key share: present iff this party deals. SECRET. */
  readonly core?: CoreKeyShare;
  /**
   * Role of every runtime index: `oldIndex` (0-based index in the old key) iff it deals,
   * `newIndex` (0-based index in the new key, 0…newN−1, each exactly once) iff it receives a new
   * share. Identical at every party.
   */
  readonly parties: readonly { readonly oldIndex?: number; readonly newIndex?: number }[];
  /** n' (number of new parties). */
  readonly newN: number;
  /** t' (1 ≤ t' ≤ n'). */
  readonly newThreshold: number;
  /** The public key expected (own record, or an Admin-signed key change). */
  readonly expectedPublicKey: Secp256k1Point;
  /** The 32-byte chain code expected. */
  readonly expectedChainCode: Uint8Array;
  /** 32-byte caller context bound into every digest, e.g. the key change's `keyChangeDigest`. */
  readonly context: Uint8Array;
}

/** Output of the CGGMP21 reshare for one party. */
export interface EcdsaReshareOutput {
  /** New parties only: the new core share (i = newIndex, n = newN, t = t', new rid). SECRET. */
  readonly core?: CoreKeyShare;
  /** X'_j = x'_j·G for j = 0…n'−1. */
  readonly publicShares: Secp256k1Point[];
}

const index = (v: number | undefined, field: string, max: number): bigint | undefined => {
  if (v === undefined) return undefined;
  if (!Number.isSafeInteger(v) || v < 0 || v >= max) throw new RangeError(`reshare: ${field} ${v} not in [0, ${max})`);
  return BigInt(v + 1);
};

/**
 * The CGGMP21 core-share reshare protocol for the runtime.
 * @throws RangeError / TypeError (at construction or from `start`) for inconsistent roles (new
 *   indices not exactly 0…n'−1), a threshold out of range, a share not matching its role, or
 *   fewer dealers than the old threshold
 */
export function reshareProtocol(
  opts: EcdsaReshareOptions,
): ProtocolSpec<ReshareState<Secp256k1Point>, EcdsaReshareOutput> {
  const newN = opts.newN;
  if (!Number.isSafeInteger(newN) || newN < 1 || newN > 1024) throw new RangeError('reshare: newN out of range');
  const core = opts.core ? validateCoreKeyShare(opts.core) : undefined;
  const parties = opts.parties.map((p, k) => {
    const oldIdentifier = index(p.oldIndex, `parties[${k}].oldIndex`, core?.n ?? 1024);
    const newIdentifier = index(p.newIndex, `parties[${k}].newIndex`, newN);
    return {
      ...(oldIdentifier !== undefined ? { oldIdentifier } : {}),
      ...(newIdentifier !== undefined ? { newIdentifier } : {}),
    };
  });
  if (parties.filter((p) => p.newIdentifier !== undefined).length !== newN) {
    throw new RangeError(`reshare: exactly ${newN} parties must have a newIndex`);
  }
  return reshareSpec<Secp256k1Point, EcdsaReshareOutput>(
    {
      tag: RESHARE_TAG,
      group: G,
      ...(core
        ? {
            dealer: {
              share: core.x,
              identifier: BigInt(core.i + 1),
              old: {
                threshold: core.t,
                identifiers: core.publicShares.map((_, j) => BigInt(j + 1)),
                verifyingShares: core.publicShares,
                publicKey: core.publicKey,
                chainCode: core.chainCode,
                epoch: 0,
              },
            },
          }
        : {}),
      parties,
      newThreshold: opts.newThreshold,
      expectedPublicKey: opts.expectedPublicKey,
      expectedChainCode: opts.expectedChainCode,
      context: opts.context,
    },
    (r: ReshareResult<Secp256k1Point>): EcdsaReshareOutput => {
      // new identifiers are exactly 1…n' (ascending), so position j holds I(j) = j + 1
      const publicShares = [...r.verifyingShares];
      if (r.share === undefined || r.identifier === undefined) return { publicShares };
      const rid = sha256(canonicalEncode(['custodian.cggmp.reshare.rid/v1', r.confirm]));
      const out = validateCoreKeyShare({
        curve: 'secp256k1',
        i: Number(r.identifier) - 1,
        n: newN,
        t: r.threshold,
        publicKey: r.commitments[0] as Secp256k1Point,
        publicShares,
        x: r.share,
        chainCode: r.old.chainCode,
        rid,
      });
      return { core: out, publicShares };
    },
  );
}
