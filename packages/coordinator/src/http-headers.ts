/**
 * The security headers of every coordinator response (server.ts registers them first, before
 * every other hook; #26 item 11).
 */
import { isIP } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import helmetHeaders from 'helmet';
import ipaddr from 'ipaddr.js';

/**
 * Security headers of every response — successes, problem+json errors, 404s and 429s alike — set
 * in `onRequest` hooks registered before every other hook (#26 item 11):
 *
 * - by `@fastify/helmet`: `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`,
 *   `X-Frame-Options: DENY`, `Content-Security-Policy` below (a JSON API loads nothing and is never
 *   framed), `Cross-Origin-Opener-Policy` / `Cross-Origin-Resource-Policy: same-origin`,
 *   `Origin-Agent-Cluster`, `X-DNS-Prefetch-Control: off`, `X-Download-Options: noopen`,
 *   `X-Permitted-Cross-Domain-Policies: none`, `X-XSS-Protection: 0`;
 * - `Cache-Control: no-store`, which a route may replace only for a public document (the JWKS
 *   does: `public, max-age=…`): so every response that carries a session token, login challenge,
 *   TOTP secret or URI, API key, or any account data is never stored by a browser or proxy cache;
 * - `Strict-Transport-Security: max-age=31536000; includeSubDomains` whenever the request's host
 *   ({@link isLoopbackHostname}; `X-Forwarded-Host` only from a trusted proxy) is not loopback.
 *   The coordinator speaks plain HTTP behind a TLS-terminating proxy, which usually reaches it on
 *   loopback with the public Host, so the decision is by the requested host, not the bound
 *   address; browsers ignore HSTS received over plain HTTP (RFC 6797 §8.1), and it is never sent
 *   to `localhost`, `*.localhost`, 127.0.0.0/8 or ::1, so a developer's loopback origin is not
 *   pinned to HTTPS.
 */
export const SECURITY_HEADERS = {
  contentSecurityPolicy: "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  cacheControl: 'no-store',
  hsts: 'max-age=31536000; includeSubDomains',
} as const;

/**
 * Whether a request host (name or address, with or without `:port` and IPv6 brackets) is
 * loopback: `localhost`, a `*.localhost` name (RFC 6761 §6.3), 127.0.0.0/8, ::1 or an IPv4-mapped
 * loopback address.
 */
export function isLoopbackHostname(host: string | undefined): boolean {
  if (host === undefined) return false;
  let h = host.trim().toLowerCase();
  const v6 = /^\[([^\]]+)\](?::\d+)?$/.exec(h);
  if (v6?.[1] !== undefined) h = v6[1];
  else if (isIP(h) !== 6) h = h.replace(/:\d+$/, '');
  h = h.replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  return isIP(h) !== 0 && ipaddr.process(h).range() === 'loopback';
}

/** Options of helmet (through `@fastify/helmet`, and directly for `frameworkErrors` of http-errors.ts). */
export const HELMET_OPTIONS = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], baseUri: ["'none'"], formAction: ["'none'"], frameAncestors: ["'none'"] },
  },
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
  strictTransportSecurity: false,
} as const;
/** Helmet's headers written on a raw response (answers given before any hook runs). */
export const rawHelmet = helmetHeaders(HELMET_OPTIONS);

/** `Cache-Control: no-store` and, outside loopback, HSTS ({@link SECURITY_HEADERS}). */
export function cacheAndTransportHeaders(req: FastifyRequest, reply: FastifyReply): void {
  reply.header('cache-control', SECURITY_HEADERS.cacheControl);
  if (!isLoopbackHostname(req.host)) reply.header('strict-transport-security', SECURITY_HEADERS.hsts);
}
