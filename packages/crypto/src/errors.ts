/**
 * The one error base of Custodian (STYLE.md item 10). Every error a Custodian package throws on
 * purpose is a {@link CustodianError}: it has a stable machine-readable `code` (UPPER_SNAKE, never
 * reworded once released) and a `family` naming the package family it comes from. Messages never
 * carry secrets. Each family has its own base class with its codes listed in its docstring:
 *
 * | family        | base class (package)                         |
 * |---------------|----------------------------------------------|
 * | `crypto`      | {@link CryptoError} (crypto, paillier, cggmp, frost) |
 * | `chains`      | `ChainError` (@custodian/chains)             |
 * | `wire`        | `WireError` (@custodian/wire)                |
 * | `signer`      | `SignerError` (@custodian/ceremony; ceremony, signer) |
 * | `coordinator` | `CoordinatorError` (@custodian/coordinator; its `ApiError` is the problem+json catalogue) |
 * | `mobile`      | `MobileError` (@custodian/mobile)            |
 * | `cli`         | `CliError` (@custodian/cli)                  |
 *
 * `@custodian/sdk` (installed by integrators, depending on `jose` only) has its own `SdkError`
 * with the same shape rather than a dependency on this package.
 *
 * Plain `TypeError` / `RangeError` remain what a function throws for a caller bug (an argument
 * of the wrong type or range, see bytes.ts); they are not part of any family.
 */
export type ErrorFamily = 'crypto' | 'chains' | 'wire' | 'signer' | 'coordinator' | 'mobile' | 'cli';

/** Base of every Custodian error. */
export abstract class CustodianError extends Error {
  /** The package family (see the module comment). */
  abstract readonly family: ErrorFamily;
  /**
   * @param code stable UPPER_SNAKE code
   * @param message human explanation (no secrets)
   */
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Errors of the protocol packages (crypto, paillier, cggmp, frost). Codes: `PROTOCOL_ABORTED`
 * (runtime ProtocolAbort), `BIP32_INVALID_CHILD`, `SIGNATURE_SHARE_INVALID`,
 * `PRESIGNATURE_SPENT` / `PRESIGNATURE_SEALED` / `PRESIGNATURE_HELD`, `KEY_SHARE_INVALID`.
 */
export class CryptoError extends CustodianError {
  readonly family = 'crypto' as const;
}
