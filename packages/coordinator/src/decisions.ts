/**
 * The API decisions where the seed says "not shown", as published in the OpenAPI document's
 * `info.description` (Markdown). Kept in one place so the README and the document agree.
 */
import { ERROR_CATALOGUE } from './errors.js';

const catalogue = Object.entries(ERROR_CATALOGUE)
  .map(([code, e]) => `| \`${code}\` | ${e.status} | ${e.title} |`)
  .join('\n');

/** Markdown of every "not shown" decision plus the error catalogue. */
export const API_DECISIONS = `Custody REST API of a Custodian instance (client interface specification, seed §4), plus the admin API
(the seed's dashboard-only functions) under \`/admin/v1\` and the mobile enrollment endpoint under \`/devices/v1\`.

## Decisions where the specification says "not shown"

- **Authentication.** \`X-API-Key\` on every \`/api/v1\` route. Missing → 401 \`API_KEY_MISSING\`; unknown or revoked → 401
  \`API_KEY_INVALID\` (not distinguished); a key for another profile → 403 \`PROFILE_FORBIDDEN\`, decided before any
  validation or lookup, so it reveals nothing about the other profile. Keys are 256-bit random tokens (\`cst_…\`) stored as SHA-256.
- **Errors.** Every error is \`application/problem+json\` (RFC 9457) with a stable \`code\` from the catalogue below;
  validation errors (422) carry \`errors: [{field, message}]\` naming the field (\`body.blockchain_ids[0]\`, \`query.page\`).
  Malformed JSON → 400 \`MALFORMED_JSON\`. Unknown JSON fields and unknown query parameters are rejected (422).
  Bodies are limited to 64 KiB (413). JSON types are not coerced (\`"name": 5\` is a 422).
- **Idempotency.** \`Idempotency-Key\` or its alias \`Idempotency_key\` (the seed's spelling; nginx drops underscore headers
  by default), a UUID, on POST wallets and POST addresses. Missing → 400 \`IDEMPOTENCY_KEY_MISSING\`, not a UUID → 400
  \`IDEMPOTENCY_KEY_INVALID\`; same key + same body (canonical JSON) + same path → the first response replayed with the same
  status and body and header \`Idempotent-Replayed: true\`; same key + different body or path → 422
  \`IDEMPOTENCY_KEY_REUSED\`; same key while the first request is still running → 409 \`IDEMPOTENCY_REQUEST_IN_PROGRESS\`
  (with \`Retry-After\`). Keys are scoped to the profile; only successful (2xx) responses are stored — after an error the key is
  released and may be retried. Retention: 24 hours by default (configurable). A unique key in the store makes the claim atomic.
- **Pagination.** \`page\` from 1 (default 1), \`page_size\` default 50, maximum 200; out-of-range or non-integer values → 422.
  Every list returns \`{ data, page, page_size, total }\`; a page past the end has empty \`data\`. Lists are ordered oldest
  first (wallets), directory order (assets, blockchains), or blockchain then address index (addresses).
- **Wallets.** Listing returns \`{ wallet_id }\` items only. Creation returns 201 with \`wallet_id, profile_id, name,
  blockchain_ids, created_at, addresses\` — one deposit address per blockchain, derived immediately (no ceremony).
- **Derivation.** Address keys are BIP32 CKDpub children of the master secp256k1 public key and chain code at
  \`m/44/{coin_type}/{wallet_index}/0/{address_index}\` — every level non-hardened (unlike BIP44), because the coordinator
  only has public keys; signers apply the additive tweak. \`coin_type\` per SLIP-0044 (60 Ethereum, 0 Bitcoin, 2 Litecoin,
  195 TRON, 1 on every Bitcoin-family and TRON test network: a TRON transaction has no chain id, so a test-network
  key must not be a mainnet key). Wallet indices are allocated sequentially per master key.
- **Addresses.** Object fields: \`address_id, wallet_id, blockchain_id, address, address_type, address_index,
  derivation_path, public_key, created_at\`. POST body \`{ blockchain_id, address_type? }\` → 201. UTXO chains (Bitcoin,
  Litecoin) allow several addresses (types \`p2wpkh\` default, \`p2tr\`); account-based chains (Ethereum, TRON) exactly one:
  a second → 422 \`ADDRESS_LIMIT_REACHED\`. A blockchain not chosen at wallet creation → 422 \`BLOCKCHAIN_NOT_IN_WALLET\`.
- **Balances.** One entry per wallet blockchain × asset enabled for the profile, including zero balances:
  \`wallet_id, blockchain_id, asset_id, symbol, decimals, amount\` (decimal string in asset units),
  \`amount_base_units\` (integer string), \`updated_at\` (null if never observed). Amounts are never floats.
- **Directory.** \`symbol\` is a string, \`decimals\` an integer, \`blockchain\` the blockchain's string key. Identifiers are
  UUIDv5 of stable names, identical on every instance. Local development networks (anvil 31337, regtest) are enabled by
  default only in development mode; admins enable or disable entries per profile.
- **Transfers.** \`POST …/transfers\` (idempotent, UUID key) → 201 with the transfer after the policy step (the policy is
  evaluated in the creating transaction): \`PENDING_APPROVAL\`, or terminal \`REJECTED_BY_POLICY\` / \`NO_POLICY_FOUND\`
  with \`sub_status\`. \`amount\` with more decimals than the asset, zero, negative, not a plain decimal, or more than the
  wallet's available balance (confirmed balance minus its transfers not yet sent) → 422 naming \`body.amount\`, never
  rounded; an invalid destination → 422 naming \`body.destination_address\`. \`GET …/transfers\` filters: \`wallet_id\`,
  \`status\`; newest first. \`GET …/transfers/{transfer_id}\` is our addition. \`POST …/transfers/dry-run\` (our extension,
  no idempotency key, creates nothing) returns the matching policy, the decision, the status and the approvals needed.
  \`POST …/fee-estimate\` takes a UUID idempotency key like creation. Transitions and sub-statuses: see the \`Transfer\` schema
  and docs/transfers.md. The daily limit counts every transfer of the wallet and asset on the UTC day of its creation
  whose status is not REJECTED, REJECTED_BY_POLICY, NO_POLICY_FOUND, EXPIRED or FAILED. Approving, cancelling, fee bumps and
  policies are not in this API (seed §4 rules 3, 4): devices approve through the device hub, the rest is the admin API.
- **Fee cap.** Every transfer carries \`max_fee\`: the fee cap its approvers sign with the amount (part of the transfer
  intent), a decimal string in units of the blockchain's NATIVE asset \`fee_currency\` (ETH, BTC, LTC, TRX, also for token
  transfers), with \`max_fee_base_units\` the integer in base units — the same convention as \`amount\` /
  \`amount_base_units\`. It is the operator's cap for the blockchain at creation (config \`transfers.feeCaps\`, default
  0.01 ETH, 0.001 BTC, 0.01 LTC, 50 TRX). The coordinator never builds a transaction that can pay more; when none fits the
  transfer ends \`FAILED\` / \`FEE_CAP_EXCEEDED\` before any signer is asked. A fee bump above the cap is approved as a new
  intent with the raised cap (admin API, \`fee_bump.cap_raised\`).
- **Rate limits.** Per verified credential (API key; admin session user) or, for a request without one or with one
  that does not verify, per client address: 600 requests per minute by default (configurable). The unauthenticated
  admin routes (init, login, login verify, device enrollment) are limited per client address only (10 per minute by
  default), and failed logins are also counted per account across login challenges (lockout with \`Retry-After\`).
  The client address is the socket peer, or the forwarded address behind a configured trusted proxy. Over a limit →
  429 \`RATE_LIMITED\` with \`Retry-After\` (seconds) and, for the request limits, \`x-ratelimit-*\` headers. Request
  counters are per coordinator process; the per-account counts are in the database.
- **Admin passwords.** Every password set (init, user creation, an Admin's reset, \`POST /admin/v1/me/password\`) needs
  at least 12 characters and a zxcvbn-ts strength score of at least 3 of 4 (the user's e-mail address and name count as
  known words); otherwise 422 \`VALIDATION_FAILED\` naming the field with the estimator's advice, never the password.
  \`POST /admin/v1/me/password\` re-authenticates with \`current_password\` (wrong → 401 \`INVALID_CREDENTIALS\`, counted
  toward the per-account lockout); success → 204, the user's other sessions revoked, audited, e-mail notice.
- **Security headers.** Every response — errors, 404s and 429s included — carries \`X-Content-Type-Options: nosniff\`,
  \`Referrer-Policy: no-referrer\`, \`X-Frame-Options: DENY\`, \`Content-Security-Policy: default-src 'none'; base-uri
  'none'; form-action 'none'; frame-ancestors 'none'\` and \`Cache-Control: no-store\` (so no session token, login
  challenge, TOTP secret, API key or account data is kept by a browser or proxy cache); only the public JWKS sets its
  own \`Cache-Control: public, max-age=…\`. \`Strict-Transport-Security: max-age=31536000; includeSubDomains\` is sent
  whenever the requested host is not loopback (\`localhost\`, \`*.localhost\`, 127.0.0.0/8, ::1); serve the coordinator
  over HTTPS (a TLS-terminating proxy) outside development. A path that cannot be decoded or has an over-long segment is
  a 404 \`ROUTE_NOT_FOUND\` problem.
- **Versioning.** The major version is the path prefix \`/v1\`; additive changes (new fields, new optional parameters, new
  error codes, new webhook event types) happen without a version change; clients must ignore unknown fields.

## Error catalogue

| code | status | title |
|---|---|---|
${catalogue}
`;
