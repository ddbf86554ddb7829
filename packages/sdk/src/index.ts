/**
 * @custodian/sdk — client SDK of a Custodian instance: the typed REST client of the custody API
 * (generated from the OpenAPI document; API key, idempotency keys, retries) and webhook signature
 * verification (seed §6) for receivers.
 */

// Errors (the `sdk` family, same shape as the CustodianError families without the dependency)

export type { Problem } from './errors.js';
export { CustodianApiError, SdkError } from './errors.js';

// The REST client (openapi-fetch over the generated types) and its retry policy

export type {
  CustodianClient,
  CustodianClientOptions,
  CustodianMethod,
  CustodianPaths,
} from './client.js';
export { createCustodianClient } from './client.js';
export type { components, operations, paths, webhooks } from './generated/api.js';
export type { RetryOptions } from './retry.js';
export { retryAfterMs } from './retry.js';

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
