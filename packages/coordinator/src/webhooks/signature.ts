/**
 * Webhook signature of seed §6 "Signature": a detached JWS (RFC 7515 appendix F / the A.5-style
 * compact form with the payload removed) with ES256 (RFC 7518 §3.4).
 *
 * - protected header: `{"alg":"ES256","kid":"<kid>"}`, base64url (RFC 7515 §2, no padding);
 * - JWS payload: the string `<X-Webhook-Timestamp>.<raw body>` (UTF-8 bytes of the timestamp, a
 *   dot, then the raw body bytes exactly as sent);
 * - signing input: `headerB64 + "." + base64url(payload)` (RFC 7515 §5.1 step 5);
 * - signature: ECDSA P-256 over SHA-256 of the signing input, R‖S as two 32-byte big-endian
 *   integers (64 bytes, RFC 7518 §3.4), base64url without padding; deterministic k (RFC 6979,
 *   via @noble/curves) so committed vectors are reproducible;
 * - `X-Webhook-Signature` = `headerB64 + ".." + signatureB64` (the payload part left empty).
 */
import { createHash } from 'node:crypto';
import { p256 } from '@noble/curves/nist.js';

/** The five delivery headers (seed §6 "Headers"). */
export interface WebhookHeaders {
  'Content-Type': 'application/json';
  'X-Webhook-Signature': string;
  'X-Webhook-Timestamp': string;
  'X-Webhook-Event-Type': string;
  'X-Webhook-Event-ID': string;
}

const enc = new TextEncoder();
const b64u = (b: Uint8Array | string) => Buffer.from(typeof b === 'string' ? enc.encode(b) : b).toString('base64url');

/**
 * The JWS payload bytes: UTF-8 `timestamp` + "." + `rawBody`.
 * @param timestamp decimal Unix seconds (the X-Webhook-Timestamp header value)
 */
export function webhookPayload(timestamp: string, rawBody: Uint8Array): Uint8Array {
  const t = enc.encode(`${timestamp}.`);
  const out = new Uint8Array(t.length + rawBody.length);
  out.set(t, 0);
  out.set(rawBody, t.length);
  return out;
}

/**
 * Sign a delivery.
 * @param secretKey 32-byte P-256 private scalar
 * @param kid key id published in the JWKS (RFC 7638 thumbprint)
 * @param timestamp decimal Unix seconds, e.g. `"1767225600"`
 * @param rawBody exact body bytes that will be sent
 * @returns the `X-Webhook-Signature` value `headerB64..signatureB64`
 * @throws RangeError when `timestamp` is not a decimal integer or the key is not 32 bytes
 */
export function signWebhook(secretKey: Uint8Array, kid: string, timestamp: string, rawBody: Uint8Array): string {
  if (!/^[0-9]{1,15}$/.test(timestamp)) throw new RangeError('timestamp must be decimal Unix seconds');
  if (!(secretKey instanceof Uint8Array) || secretKey.length !== 32) throw new RangeError('secretKey must be 32 bytes');
  const headerB64 = b64u(JSON.stringify({ alg: 'ES256', kid }));
  const signingInput = enc.encode(`${headerB64}.${b64u(webhookPayload(timestamp, rawBody))}`);
  const sig = p256.sign(signingInput, secretKey, { prehash: true, format: 'compact' });
  return `${headerB64}..${b64u(sig)}`;
}

/**
 * RFC 7638 JWK thumbprint of a P-256 public key (base64url SHA-256 of `{"crv","kty","x","y"}` in
 * lexicographic order, no whitespace) — the `kid` of our keys.
 */
export function p256Thumbprint(jwk: { x: string; y: string }): string {
  const canonical = `{"crv":"P-256","kty":"EC","x":"${jwk.x}","y":"${jwk.y}"}`;
  return createHash('sha256').update(canonical, 'utf8').digest('base64url');
}

/** Public JWK (RFC 7517/7518 §6.2) of a 32-byte P-256 private scalar. */
export function p256PublicJwk(secretKey: Uint8Array): { kty: 'EC'; crv: 'P-256'; x: string; y: string } {
  const pub = p256.getPublicKey(secretKey, false); // 0x04 ‖ X(32) ‖ Y(32)
  return { kty: 'EC', crv: 'P-256', x: b64u(pub.subarray(1, 33)), y: b64u(pub.subarray(33, 65)) };
}
