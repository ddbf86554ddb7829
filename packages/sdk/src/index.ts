/**
 * @custodian/sdk — client SDK of a Custodian instance. Today: webhook signature verification
 * (seed §6) for receivers; the typed REST client follows.
 */

// Errors (the `sdk` family, same shape as the CustodianError families without the dependency)

export { SdkError } from './errors.js';

// Webhook signature verification (detached JWS ES256) and the JWKS cache it reads keys from

export type {
  FetchLike,
  HeaderBag,
  JwksCacheOptions,
  VerifiedWebhook,
  VerifyWebhookOptions,
  WebhookVerificationCode,
} from './webhooks.js';
export { JwksCache, maxAgeMs, verifyWebhook, WebhookVerificationError } from './webhooks.js';
