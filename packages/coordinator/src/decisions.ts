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
  A key may carry \`allowed_cidrs\` (IPv4/IPv6 ranges, set at creation): from a client address outside them (the socket
  peer, or the forwarded client behind a trusted proxy) → 403 \`API_KEY_ADDRESS_NOT_ALLOWED\`, checked before the profile.
- **Admin sessions.** Bearer tokens from login (password + second factor), valid 8 hours and ended after 30 minutes
  unused (both configurable) → 401 \`SESSION_REQUIRED\`. Sensitive admin actions (TOTP enrollment, API key create and
  revoke, profile and instance webhook create/update/delete, webhook signing key rotation, user create, delete and block, role
  or password change, wallet-group membership changes and group deletion, device approval, server signer registration and removal) need a fresh step-up of the session —
  \`POST /admin/v1/session/step-up\` with the current TOTP code, or the password when the user has no TOTP; fresh for
  5 minutes by default — else 403 \`STEP_UP_REQUIRED\` (a dashboard prompts and retries). Wrong step-up proofs count
  towards the per-account lockout. A second-factor change signs the user's other sessions out.
- **Errors.** Every error is \`application/problem+json\` (RFC 9457) with a stable \`code\` from the catalogue below;
  validation errors (422) carry \`errors: [{field, message}]\` naming the field (\`body.blockchain_ids[0]\`, \`query.page\`).
  Malformed JSON → 400 \`MALFORMED_JSON\`. Unknown JSON fields and unknown query parameters are rejected (422).
  Bodies are limited to 64 KiB (413). JSON types are not coerced (\`"name": 5\` is a 422). Errors raised before any route
  runs are problem+json too: a request that is not well-formed HTTP/1.1 (request line, header syntax, lengths, no \`Host\`,
  \`CONNECT\`) or whose path does not percent-decode → 400 \`BAD_REQUEST\`; a path parameter over 200 characters → 414
  \`URI_TOO_LONG\`; request line and headers over 16 KiB → 431 \`HEADERS_TOO_LARGE\`; a request not received in time → 408
  \`REQUEST_TIMEOUT\`; a request arriving during shutdown → 503 \`SHUTTING_DOWN\` (with \`Retry-After\`). After a parser error
  the connection closes. An \`Expect\` other than \`100-continue\` is ignored.
- **Idempotency.** \`Idempotency-Key\` or its alias \`Idempotency_key\` (the seed's spelling; nginx drops underscore headers
  by default), a UUID, on POST wallets and POST addresses. Missing → 400 \`IDEMPOTENCY_KEY_MISSING\`, not a UUID → 400
  \`IDEMPOTENCY_KEY_INVALID\`; same key + same body (canonical JSON) + same path → the first response replayed with the same
  status and body and header \`Idempotent-Replayed: true\`; same key + different body or path → 422
  \`IDEMPOTENCY_KEY_REUSED\`; same key while the first request is still running → the request waits for it (up to 5 s,
  configurable) and replays its response, else 409 \`IDEMPOTENCY_REQUEST_IN_PROGRESS\` (with \`Retry-After\`). Keys are scoped
  to the profile; only successful (2xx) responses are stored — after an error the key is free and may be retried. The key is
  claimed, the resource created and the response recorded in one database transaction, so a crash at any point either
  leaves nothing (a retry creates the resource once) or the stored response (a retry replays it). Retention: 24 hours by
  default (configurable). A unique key in the store makes the claim atomic.
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
- **Policy deletion (admin API).** \`DELETE /admin/v1/profiles/{profile_id}/policies/{policy_id}\` → 202 with the policy
  and a new version in \`PENDING_SIGNATURE\`: a tombstone (\`document.deleted: true\`, bound by the version's \`digest\`).
  Like any version it takes effect only when an Admin device signs it (\`POST …/versions/{version}/signature\`): then its
  status is \`DELETED\`, the policy's \`deleted_at\` is set and the policy matches no transfer; until then the active
  version keeps governing. Every policy create, update, signature and deletion is in the audit log. Signed versions and
  tombstones are pushed to the signers, which then refuse older versions (\`POLICY_VERSION_SUPERSEDED\`) and every
  version of a deleted policy (\`POLICY_DELETED\`) as transfer sub-statuses.
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
- **Devices.** \`POST /devices/v1/enrollments\` (unauthenticated) takes the P-256 device key and the device's MPC peer id
  (\`mpc_peer_id\`, an Ed25519 libp2p peer id) with \`mpc_peer_proof\`, the peer key's Ed25519 signature over
  \`deviceEnrollmentDigest(public_key, mpc_peer_id)\` (@custodian/wire); a bad proof → 422, a peer id of a server signer
  (registered now or ever) or of another PENDING / APPROVED device → 409. The peer id is pinned: the device hub refuses a
  hello naming any other, and a server signer cannot be registered with a peer id a device was given (409). The device
  \`name\` is 1–64 characters of printable text (no control, format or bidi override characters, no line separators, no
  leading or trailing white space), else 422 naming \`body.name\`. Approval (\`POST /admin/v1/devices/{id}/approve\`) takes
  the fingerprint and the \`user_id\` of the user who holds the phone (existing, not blocked, else 422); device views show
  \`user_id\` and \`mpc_peer_id\`. A policy version is signed only with an APPROVED device bound to the session's own
  user, whose role is Admin, and — when \`transfers.trustedAdminKeys\` is configured — whose key is listed; anything else
  (including devices enrolled before this binding existed) → 422 naming \`body.device_id\`. The device WebSocket accepts
  one frame of at most 4 KiB before the hello, and at most 16 sockets per client address (1024 in all) waiting for their
  hello at once; a further upgrade gets HTTP 429 (503 over the total).
- **Webhook scope.** A profile's webhooks receive only that profile's events (transfers, balances and transactions,
  wallets, policies, addresses, wallet and address groups). The instance and security events — servers and keys
  (\`SERVER_*\`, \`REFRESH_KEY_SHARES\`), devices (\`DEVICE_*\`, \`CERTIFICATE_READY\`), users (\`USER_*\`) and security
  (\`POLICY_SIGNATURE_VERIFICATION_FAILED\`, \`ROLE_SCOPE_LOGIN\`, \`GEO_ANOMALY_DETECTED\`) — go only to instance-level
  webhooks, which an Admin registers at \`/admin/v1/webhooks\` (\`profile_id\` null); a profile webhook subscribing to one
  → 422 naming \`body.event_types[i]\`. Their delivery body's \`profile_id\` is the nil UUID
  \`00000000-0000-0000-0000-000000000000\` unless the event concerns one profile. \`ROLE_SCOPE_LOGIN\` fires only when a
  dashboard login comes from a client address outside the admin networks — the scope of every role (config
  \`adminNetworks\`, env \`CUSTODIAN_ADMIN_NETWORKS\`; default loopback, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
  fc00::/7) — with \`data.ip\`, the client address.
- **Wallet-group scoping (admin API).** A Finance Manager or Viewer assigned to one or more wallet groups sees and acts
  on only the wallets of those groups under \`/admin/v1/profiles/{profile_id}\`: wallet, transfer and wallet-group lists
  are filtered, and a wallet outside them, its balances, a transfer of it (read, cancel, fee bump) or another wallet
  group answer exactly like a nonexistent one (404 \`WALLET_NOT_FOUND\` / \`TRANSFER_NOT_FOUND\` /
  \`RESOURCE_NOT_FOUND\`). Policies: they see those naming no wallet outside their groups (profile-wide ones included;
  others 404 \`POLICY_NOT_FOUND\`), and may create, change or delete only policies scoped to wallets of their groups
  (profile-wide → 403 \`ROLE_FORBIDDEN\`; a foreign wallet in \`scope.wallet_ids\` → the 422 of an unknown wallet).
  In a profile where none of their groups lies they see no wallet. Unassigned Finance Managers
  and Viewers see the whole profile; Admins always see the whole instance, assigned or not. API keys are not users and
  are not scoped by groups.
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
