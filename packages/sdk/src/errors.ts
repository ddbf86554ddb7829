/**
 * Base of the SDK's errors: the same shape as `CustodianError` of `@custodian/crypto` (a stable
 * UPPER_SNAKE `code`, `family`, a message without secrets), declared here because integrators
 * install this package alone (it depends on `jose` only). Codes: the `WebhookVerificationCode`s (webhooks.ts).
 */
export class SdkError extends Error {
  readonly family = 'sdk' as const;
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}
