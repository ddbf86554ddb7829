/**
 * @custodian/sdk — client SDK of a Custodian instance. Today: webhook signature verification
 * (seed §6) for receivers; the typed REST client follows.
 */
export { SdkError } from './errors.js';
export {
  type FetchLike,
  type HeaderBag,
  JwksCache,
  type JwksCacheOptions,
  maxAgeMs,
  type VerifiedWebhook,
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookVerificationCode,
  WebhookVerificationError,
} from './webhooks.js';
