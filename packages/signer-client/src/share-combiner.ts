/**
 * The coordinator's side of the ECDSA fast path: combine the signature shares the signers send as
 * interim frames of a SIGN exchange (control.proto `SignatureShares`) into signatures the
 * coordinator verifies itself, so it need not wait for the signers to exchange their shares,
 * combine them and answer (one network hop and a verification fewer on every signature).
 *
 * Trust: none is placed in the shares. Each signature is verified (SEC 1 v2 §4.1.4, strict form)
 * under the child key the coordinator derives itself from the master key and chain code it
 * recorded at the master key ceremony (BIP32 CKDpub, non-hardened); a signature that verifies
 * there is valid whatever produced it. Shares that do not combine into a valid signature (a bad
 * share, a mismatched R', another key) only turn the fast path off: the signers' own results,
 * which name a culprit (identifiable abort), are then the answer. A signer sends its share only
 * after its release gate is durable (pending record, ledger entry, presignature deletion): the
 * coordinator learns what every co-signer receives anyway (CGGMP21 §4.4 broadcast).
 */

import { type CombinationContext, combinationContext, type EcdsaSignature, finishCombination } from '@custodian/cggmp';
import { bytesToHex, derivedChild, type Secp256k1Point, secp256k1Group } from '@custodian/crypto';
import type { SignatureSharesWire } from '@custodian/wire';

/** Master keys decoded once per process (public data; point decoding costs a square root). */
const masterPoints = new Map<string, Secp256k1Point>();
const MASTER_CACHE_LIMIT = 64;

function masterPoint(publicKey: Uint8Array): Secp256k1Point {
  const hex = bytesToHex(publicKey);
  let point = masterPoints.get(hex);
  if (!point) {
    point = secp256k1Group.decodePoint(publicKey, 'publicKey');
    if (masterPoints.size >= MASTER_CACHE_LIMIT) masterPoints.delete(masterPoints.keys().next().value as string);
    masterPoints.set(hex, point);
  }
  return point;
}

/** What the coordinator knows of one ECDSA SIGN ceremony. */
export interface EcdsaShareCombinerInit {
  /** The master ECDSA key Y, 33 bytes SEC1-compressed, as recorded at the master key ceremony. */
  readonly publicKey: Uint8Array;
  /** Its BIP32 chain code, 32 bytes. */
  readonly chainCode: Uint8Array;
  /** The request's non-hardened derivation path (indices < 2^31). */
  readonly derivationPath: readonly number[];
  /** The request's 32-byte digests, in order. */
  readonly digests: readonly Uint8Array[];
  /** Number of signers of the ceremony (a signature needs a share from each). */
  readonly signers: number;
}

/**
 * Combines one SIGN ceremony's interim shares. Feed it every interim `SignatureShares` with the
 * sender's position ({@link add}); {@link done} resolves with one verified signature per digest once
 * every signer's shares have arrived and combine, or with undefined as soon as they cannot (then use
 * the signers' results). It stays pending while shares are missing: race it with the results.
 */
export class EcdsaShareCombiner {
  /** Resolves with the signatures in digest order, or undefined when the fast path failed. Never rejects. */
  readonly done: Promise<EcdsaSignature[] | undefined>;
  private readonly resolve: (v: EcdsaSignature[] | undefined) => void;
  private readonly Y: Secp256k1Point;
  /** Y' (derived at the first share, while the other signers' shares are on their way). */
  private child: ReturnType<typeof derivedChild> | undefined;
  /** Per digest index: each signer's share by position, and the context fixed at the first share. */
  private readonly received: Map<
    number,
    { shares: Map<number, { Rp: Uint8Array; s: bigint }>; ctx?: CombinationContext }
  >;
  private readonly signatures: (EcdsaSignature | undefined)[];
  private remaining: number;
  private finished = false;

  /**
   * @throws RangeError for a master key that is not a valid point, a chain code that is not 32
   *   bytes, a hardened or negative index, no digest or a digest that is not 32 bytes (caller errors)
   */
  constructor(private readonly init: EcdsaShareCombinerInit) {
    if (init.chainCode.length !== 32) throw new RangeError('chainCode: 32 bytes');
    if (init.digests.length === 0 || init.digests.some((d) => d.length !== 32))
      throw new RangeError('digests: at least one, 32 bytes each');
    if (!Number.isSafeInteger(init.signers) || init.signers < 1) throw new RangeError('signers: a positive count');
    if (init.derivationPath.some((i) => !Number.isSafeInteger(i) || i < 0 || i >= 0x8000_0000))
      throw new RangeError('derivationPath: non-hardened indices (0 ≤ i < 2^31)');
    this.Y = masterPoint(init.publicKey);
    this.received = new Map(init.digests.map((_, i) => [i, { shares: new Map() }]));
    this.signatures = init.digests.map(() => undefined);
    this.remaining = init.digests.length;
    let resolve!: (v: EcdsaSignature[] | undefined) => void;
    this.done = new Promise((r) => {
      resolve = r;
    });
    this.resolve = resolve;
  }

  /** The child key the signatures must verify under, 33 bytes SEC1-compressed. */
  get publicKey(): Uint8Array {
    return this.derive()?.publicKey ?? secp256k1Group.encodePoint(this.Y);
  }

  /**
   * Derive Y' now instead of at the first share. Call it once the requests are on their way (e.g.
   * `setImmediate(() => combiner.prepare())` after starting the exchanges): the derivation (a
   * multiplication and an HMAC-SHA512 per path level, ≈ 0.2 ms each) then runs while the signers
   * work instead of between their shares' arrivals. Never throws: a path that does not derive
   * ends the fast path at the first share ({@link add}), as without it.
   */
  prepare(): void {
    if (this.finished) return;
    try {
      this.derive();
    } catch {
      // met again by add()
    }
  }

  /** Y' of a non-empty path (memoised; derivation costs a multiplication and an HMAC per level). */
  private derive(): ReturnType<typeof derivedChild> | undefined {
    if (this.init.derivationPath.length === 0) return undefined;
    this.child ??= derivedChild(this.Y, this.init.chainCode, this.init.derivationPath);
    return this.child;
  }

  /**
   * Take one signer's interim shares. A second share from the same signer for the same digest, a
   * digest index out of range or a malformed share ends the fast path (undefined).
   * @param signer the sender's position in the ceremony's party list (0-based)
   */
  add(signer: number, message: SignatureSharesWire): void {
    if (this.finished) return;
    if (!Number.isSafeInteger(signer) || signer < 0 || signer >= this.init.signers) {
      this.fail();
      return;
    }
    let child: ReturnType<typeof derivedChild> | undefined;
    try {
      child = this.derive();
    } catch {
      // an invalid child (probability ≈ 2^-127): the signers refuse the path too
      this.fail();
      return;
    }
    for (const x of message.shares ?? []) {
      const got = this.received.get(x.digestIndex);
      if (!got || got.shares.has(signer) || x.s.length !== 32 || x.rPoint.length !== secp256k1Group.pointLength) {
        this.fail();
        return;
      }
      let s: bigint;
      try {
        s = secp256k1Group.decodeScalar(Uint8Array.from(x.s), 's', { allowZero: true });
      } catch {
        this.fail();
        return;
      }
      const Rp = Uint8Array.from(x.rPoint);
      // R' decoded, r and Y' fixed at the first share: the last one only sums and verifies
      got.ctx ??= combinationContext(this.Y, this.init.digests[x.digestIndex] as Uint8Array, Rp, {
        tweak: child?.tweak ?? 0n,
        ...(child ? { derived: child } : {}),
      });
      if (!got.ctx) {
        this.fail();
        return;
      }
      got.shares.set(signer, { Rp, s });
      if (got.shares.size === this.init.signers) {
        const signature = finishCombination(got.ctx, [...got.shares.values()]);
        if (!signature) {
          this.fail();
          return;
        }
        this.signatures[x.digestIndex] = signature;
        if (--this.remaining === 0) {
          this.finished = true;
          this.resolve(this.signatures as EcdsaSignature[]);
        }
      }
    }
  }

  private fail(): void {
    this.finished = true;
    this.resolve(undefined);
  }
}
